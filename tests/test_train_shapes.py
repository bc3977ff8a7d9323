"""The seeds' shapes from the command line: ``attenzione train --d-model/--heads/--d-head`` and
``--glove FILE``, with no Python. The seeds' own example — GloVe-300 vectors, 7 heads of 64
(7 · 64 = 448 ≠ 300) — trains, translates and explains its computation."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from typer.testing import CliRunner, Result

from attenzione.cli import app
from toy_corpus import write_toy_corpus

WORDS = ["the", "cat", "dog", "red", "big", "is", "here", ".", "a", "small"]
SHORT = ["--vocab-size", "40", "--dev-size", "8", "--test-size", "8", "--no-progress"]


def run(args: list[str]) -> Result:
    return CliRunner().invoke(app, args)


def glove_file(path: Path, dim: int) -> tuple[Path, torch.Tensor]:
    """A GloVe text file of WORDS in ``dim`` dimensions (random vectors, seeded)."""
    vectors = torch.randn(len(WORDS), dim, generator=torch.Generator().manual_seed(dim))
    lines = (
        f"{w} {' '.join(f'{x:.5f}' for x in v.tolist())}\n"
        for w, v in zip(WORDS, vectors, strict=True)
    )
    path.write_text("".join(lines), encoding="utf-8")
    return path, vectors


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_toy_corpus(tmp_path_factory.mktemp("corpus") / "toy.tsv")


@pytest.mark.timeout(600)
def test_the_seeds_glove_300_model_with_7_heads_of_64_trains_translates_and_explains(
    corpus: Path, tmp_path: Path
) -> None:
    glove, vectors = glove_file(tmp_path / "glove.toy.300d.txt", 300)
    out = tmp_path / "seeds"
    args = ["train", "--data", str(corpus), "--out", str(out), "--glove", str(glove)]
    args += ["--heads", "7", "--d-head", "64", "--enc-layers", "1", "--dec-layers", "1"]
    res = run([*args, "--d-ff", "64", "--max-steps", "2", "--freeze-embeddings", *SHORT])
    assert res.exit_code == 0, res.output
    info = json.loads((out / "last" / "info.json").read_text())
    config = info.get("config") or json.loads((out / "last" / "config.json").read_text())
    assert (config["d_model"], config["n_heads"], config["d_head"]) == (300, 7, 64)
    # the source embedding starts from (and, frozen, keeps) the GloVe rows
    from attenzione.translator.translator import Translator

    tr = Translator.from_pretrained(out / "last")
    cat = tr.src_tokenizer.encode("cat")[0]
    torch.testing.assert_close(
        tr.model.src_embed.weight[cat], vectors[WORDS.index("cat")], atol=1e-4, rtol=0
    )
    # it translates, and its journey says 300 → 7 × 64 and matches the model at every step
    res = run(["translate", "--model", str(out / "last"), "the cat is here ."])
    assert res.exit_code == 0, res.output
    res = run(["attention", "--model", str(out / "last"), "the cat is here .", "--journey"])
    assert res.exit_code == 0, res.output
    res = run(
        ["attention", "--model", str(out / "last"), "the cat is here .", "--journey", "--json"]
    )
    assert res.exit_code == 0, res.output
    journey = json.loads(res.output)
    query = next(s for s in journey["steps"] if s["name"] == "query")
    assert "300" in query["shape"] and "7" in query["shape"] and "64" in query["shape"]
    assert journey["largest_check"] < 1e-5


@pytest.mark.timeout(300)
@pytest.mark.parametrize("dim", [50, 100])
def test_glove_sets_d_model_from_the_file_unless_d_model_is_given(
    corpus: Path, tmp_path: Path, dim: int
) -> None:
    glove, _ = glove_file(tmp_path / f"glove.toy.{dim}d.txt", dim)
    args = ["train", "--data", str(corpus), "--glove", str(glove), "--heads", "2", "--d-head"]
    args += ["8", "--enc-layers", "1", "--dec-layers", "1", "--d-ff", "32", "--max-steps", "1"]
    out = tmp_path / "g"
    res = run([*args, "--out", str(out), *SHORT])
    assert res.exit_code == 0, res.output
    from attenzione.translator.translator import Translator

    cfg = Translator.from_pretrained(out / "last").model.config
    assert (cfg.d_model, cfg.n_heads, cfg.d_head, cfg.src_embed_dim) == (dim, 2, 8, None)
    # a d_model of its own: the GloVe vectors enter through a projection to it
    out = tmp_path / "projected"
    res = run([*args, "--out", str(out), "--d-model", "24", *SHORT])
    assert res.exit_code == 0, res.output
    cfg = Translator.from_pretrained(out / "last").model.config
    assert (cfg.d_model, cfg.src_embed_dim) == (24, dim)


def test_model_widths_from_the_command_line(corpus: Path, tmp_path: Path) -> None:
    out = tmp_path / "w"
    res = run(
        ["train", "--data", str(corpus), "--out", str(out), "--preset", "tiny", "--d-model", "20"]
        + ["--heads", "3", "--d-head", "8", "--max-steps", "1", *SHORT]
    )
    assert res.exit_code == 0, res.output
    from attenzione.translator.translator import Translator

    cfg = Translator.from_pretrained(out / "last").model.config
    assert (cfg.d_model, cfg.n_heads, cfg.d_head) == (20, 3, 8)


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--heads", "0"], "--heads must be >= 1"),
        (["--d-model", "-3"], "--d-model must be >= 1"),
        (["--d-head", "0"], "--d-head must be >= 1"),
        (["--preset", "small", "--glove", "GLOVE"], "--preset glove50"),
    ],
)
def test_bad_shapes_are_one_line(
    corpus: Path, tmp_path: Path, args: list[str], needle: str
) -> None:
    glove, _ = glove_file(tmp_path / "glove.toy.50d.txt", 50)
    args = [str(glove) if a == "GLOVE" else a for a in args]
    res = run(["train", "--data", str(corpus), "--out", str(tmp_path / "r"), *args, *SHORT])
    assert res.exit_code == 2, res.output
    assert "Traceback" not in res.output
    lines = [line for line in res.output.splitlines() if line.strip()]
    assert len(lines) == 1 and needle in lines[0], res.output
    assert not (tmp_path / "r").exists()
