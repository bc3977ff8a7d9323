"""Every user mistake is one line on stderr and exit status 2 — no traceback, no silent result.

One test per family of mistakes (issue 12's list), each with the command a user would type.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner, Result

from attenzione.cli import app
from tiny_model import tiny_translator
from toy_corpus import write_toy_corpus


@pytest.fixture(scope="module")
def model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("cli") / "tiny"
    tiny_translator().save_pretrained(path)
    return path


def _run(args: list[str], input: bytes | str | None = None) -> Result:
    return CliRunner().invoke(app, args, input=input)


def _one_line_error(res: Result, *needles: str) -> None:
    assert res.exit_code == 2, res.output
    assert "Traceback" not in res.output
    assert res.exception is None or isinstance(res.exception, SystemExit), res.exception
    lines = [line for line in res.output.splitlines() if line.strip()]
    errors = [line for line in lines if line.startswith("error: ")]
    assert len(errors) == 1, res.output
    for needle in needles:
        assert needle in errors[0], (needle, errors[0])


# ---------------------------------------------------------------- broken promise 1: batch size
@pytest.mark.parametrize("size", ["-1", "0"])
def test_a_bad_batch_size_is_refused_before_anything_is_written(
    model: Path, tmp_path: Path, size: str
) -> None:
    src = tmp_path / "english.txt"
    src.write_text("the cat is here\n" * 5)
    out = tmp_path / "out.txt"
    res = _run(["translate", "--model", str(model), "--batch-size", size, "-i", str(src)]
               + ["-o", str(out)])  # fmt: skip
    _one_line_error(res, "--batch-size must be >= 1", size)
    assert not out.exists()


@pytest.mark.parametrize(
    ("option", "value", "message"),
    [
        ("--beam", "0", "--beam must be >= 1"),
        ("--n-best", "-3", "--n-best must be >= 1"),
        ("--top-k", "-1", "--top-k must be >= 0"),
        ("--length-penalty", "-1", "--length-penalty must be >= 0"),
    ],
)
def test_every_numeric_translate_option_is_checked_where_it_is_parsed(
    model: Path, option: str, value: str, message: str
) -> None:
    _one_line_error(_run(["translate", "--model", str(model), option, value, "x"]), message)


# ---------------------------------------------------------------- --no-step and --raw
def test_the_clis_step_names_are_the_pipelines_and_the_registrys() -> None:
    # the CLI keeps its own copy of the steps (so that --help does not import torch): it must
    # not drift; the search's switches it reads from the registry, which imports no torch
    import attenzione.pipeline
    from attenzione.cli import common
    from attenzione.search.registry import switches

    assert attenzione.pipeline.STEP_NAMES == common.STEP_NAMES
    assert common.term_names() == list(switches())
    code = "import sys; import attenzione.search.registry; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def _commands(tmp_path: Path) -> dict[str, list[str]]:
    """Each command that takes --no-step, with a model directory that does not exist: the
    step options are checked before the model is loaded (and serve never starts)."""
    model = str(tmp_path / "no-model")
    data = tmp_path / "dev.tsv"
    data.write_text("the cat\til gatto\n")
    return {
        "translate": ["translate", "--model", model, "the cat"],
        "evaluate": ["evaluate", "--model", model, "--data", str(data)],
        "serve": ["serve", "--model", model, "--port", "5999"],
    }


@pytest.mark.parametrize("command", ["translate", "evaluate", "serve"])
def test_an_unknown_step_is_one_line_naming_the_steps(tmp_path: Path, command: str) -> None:
    from attenzione.cli.common import STEP_NAMES, term_names

    args = _commands(tmp_path)[command]
    res = _run([*args, "--no-step", "bogus"])
    _one_line_error(res, "--no-step bogus", *STEP_NAMES, *term_names())


@pytest.mark.parametrize("command", ["translate", "evaluate", "serve"])
def test_raw_with_no_step_is_an_error(tmp_path: Path, command: str) -> None:
    args = _commands(tmp_path)[command]
    _one_line_error(_run([*args, "--raw", "--no-step", "numbers"]), "--raw", "--no-step")


@pytest.mark.parametrize("command", ["translate", "evaluate", "serve"])
@pytest.mark.parametrize("off", [["--no-step", "number-format"], ["--raw"]])
def test_a_number_format_with_its_step_off_is_an_error(
    tmp_path: Path, command: str, off: list[str]
) -> None:
    args = _commands(tmp_path)[command]
    res = _run([*args, "--number-format", "comma", *off])
    _one_line_error(res, "--number-format", "number-format step")


def test_evaluate_compare_raw_with_raw_is_an_error(tmp_path: Path) -> None:
    args = _commands(tmp_path)["evaluate"]
    _one_line_error(_run([*args, "--compare-raw", "--raw"]), "--compare-raw", "--raw")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--sample", "--temperature", "0"], "--temperature must be in (0, inf]"),
        (["--sample", "--top-p", "1.5"], "--top-p must be in (0, 1]"),
        (["--temperature", "-2"], "--temperature must be in (0, inf]"),  # bad even without sample
        (["--temperature", "0.7"], "--temperature only applies with --sample"),  # would be ignored
        (["--top-p", "0.9", "--top-k", "5"], "--top-k, --top-p only apply with --sample"),
    ],
)
def test_sampling_options_are_never_silently_ignored(
    model: Path, args: list[str], message: str
) -> None:
    _one_line_error(_run(["translate", "--model", str(model), *args, "the cat"]), message)


# ---------------------------------------------------------------- text that is not UTF-8
def test_non_utf8_text_is_named_wherever_it_comes_from(model: Path, tmp_path: Path) -> None:
    base = ["translate", "--model", str(model)]
    _one_line_error(_run([*base], input=b"the cat\n\xff\xfe dog\n"), "stdin:2", "0xff")
    bad = tmp_path / "bad.txt"
    bad.write_bytes(b"the cat\nthe dog\ncaf\xe9 here\n")
    _one_line_error(_run([*base, "-i", str(bad)]), f"{bad}:3", "0xe9", "column 4")
    # an argument that was not UTF-8 reaches Python with a lone surrogate
    _one_line_error(_run([*base, "the cat", "caf\udce9"]), "argument 2 is not valid UTF-8")
    _one_line_error(_run(["attention", "--model", str(model), "caf\udce9"]), "not valid UTF-8")


# ---------------------------------------------------------------- damaged model directories
@pytest.mark.parametrize("damage", ["weights", "shapes", "tokenizer", "config", "absurd"])
def test_a_damaged_model_directory_is_one_line(model: Path, tmp_path: Path, damage: str) -> None:
    d = tmp_path / "m"
    shutil.copytree(model, d)
    cfg = json.loads((d / "config.json").read_text())
    if damage == "weights":
        data = (d / "model.safetensors").read_bytes()
        (d / "model.safetensors").write_bytes(data[: len(data) // 3])
        expected = "model.safetensors"
    elif damage == "shapes":
        cfg["d_model"] = 24
        (d / "config.json").write_text(json.dumps(cfg))
        expected = "does not match config.json"
    elif damage == "tokenizer":
        (d / "tgt_tokenizer" / "tokenizer.json").write_bytes(os.urandom(64))
        expected = "tokenizer.json"
    elif damage == "config":
        (d / "config.json").write_text('{"d_model": 16')
        expected = "config.json"
    else:
        cfg["d_model"], cfg["d_ff"] = 1_000_000_000, 1_000_000_000
        (d / "config.json").write_text(json.dumps(cfg))
        expected = "this machine has"
    _one_line_error(_run(["translate", "--model", str(d), "the cat"]), expected)


def test_a_tokenizer_file_naming_a_path_outside_is_refused(model: Path, tmp_path: Path) -> None:
    d = tmp_path / "m"
    shutil.copytree(model, d)
    (d / "src_tokenizer" / "tokenizer.json").write_text(
        json.dumps({"type": "sentencepiece", "model": "../../../../../../etc/passwd"})
    )
    _one_line_error(_run(["translate", "--model", str(d), "the cat"]), "'model' must be a file")


# ---------------------------------------------------------------- outputs checked before work
def test_outputs_that_cannot_be_written_are_refused_before_the_work(
    model: Path, tmp_path: Path
) -> None:
    src = tmp_path / "in.txt"
    src.write_text("the cat\n")
    base = ["translate", "--model", str(model), "-i", str(src)]
    _one_line_error(_run([*base, "-o", str(tmp_path / "nope" / "out.txt")]), "does not exist")
    _one_line_error(_run([*base, "-o", str(tmp_path)]), "is a directory")
    tsv = tmp_path / "test.tsv"
    tsv.write_text("the cat\til gatto\n")
    res = _run(["evaluate", "--model", str(model), "--data", str(tsv)]
               + ["--hypotheses", str(tmp_path / "missing" / "h.txt")])  # fmt: skip
    _one_line_error(res, "--hypotheses", "does not exist")
    a_file = tmp_path / "a_file"
    a_file.write_text("")
    _one_line_error(
        _run(["attention", "--model", str(model), "--out", str(a_file), "the cat"]), "is a file"
    )


def test_evaluate_says_when_there_was_nothing_to_copy(model: Path, tmp_path: Path) -> None:
    tsv = tmp_path / "test.tsv"
    tsv.write_text("the cat\til gatto\n")
    res = _run(["evaluate", "--model", str(model), "--data", str(tsv), "--beam", "1"])
    assert res.exit_code == 0, res.output
    lines = [line.strip() for line in res.output.splitlines()]
    copied = [line for line in lines if line.startswith("copied unchanged:")]
    assert copied == [
        "copied unchanged: nothing to copy (no numbers, names, URLs or code in the sources)"
    ]


@pytest.mark.skipif(os.geteuid() == 0, reason="root may write into a read-only directory")
def test_a_read_only_output_directory_is_refused_before_the_work(
    model: Path, tmp_path: Path
) -> None:
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o555)
    try:
        res = _run(["translate", "--model", str(model), "-o", str(ro / "o.txt"), "the cat"])
        _one_line_error(res, "permission denied")
    finally:
        ro.chmod(0o755)


# ---------------------------------------------------------------- train options
@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_toy_corpus(tmp_path_factory.mktemp("corpus") / "toy.tsv")


TRAIN = ["--preset", "tiny", "--vocab-size", "48", "--dev-size", "8", "--test-size", "8"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--threads", "-2"], "--threads must be >= 1"),
        (["--threads", "0"], "--threads must be >= 1"),
        (["--max-steps", "0"], "--max-steps must be >= 1"),
        (["--lr", "0"], "--lr must be in (0, inf]"),
        (["--max-tokens", "3"], "--max-tokens must be >= 16"),
        (["--clean-max-words", "-5"], "--clean-max-words must be >= 0"),
        (["--number-augment", "1.5"], "--number-augment must be in [0, 1]"),
        (["--device", "tpu"], "device must be 'auto', 'cpu' or 'cuda', got 'tpu'"),
    ],
)
def test_bad_train_options_are_one_line(
    corpus: Path, tmp_path: Path, args: list[str], message: str
) -> None:
    res = _run(["train", "--data", str(corpus), "--out", str(tmp_path / "r"), *TRAIN, *args])
    _one_line_error(res, message)
    assert not (tmp_path / "r" / "data").exists()


def test_train_out_pointing_at_a_file_is_one_line(corpus: Path, tmp_path: Path) -> None:
    a_file = tmp_path / "run.txt"
    a_file.write_text("mine")
    res = _run(["train", "--data", str(corpus), "--out", str(a_file), *TRAIN, "--max-steps", "1"])
    _one_line_error(res, "is a file")
    assert a_file.read_text() == "mine"


def test_a_train_that_cannot_start_leaves_no_new_directory(tmp_path: Path) -> None:
    fresh = tmp_path / "new" / "run"
    res = _run(["train", "--data", str(tmp_path / "nope.tsv"), "--out", str(fresh), *TRAIN])
    _one_line_error(res, "nope.tsv does not exist")
    assert not (tmp_path / "new").exists()  # made by this call: removed again
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("keep")
    res = _run(["train", "--data", str(tmp_path / "nope.tsv"), "--out", str(mine), *TRAIN])
    _one_line_error(res, "nope.tsv does not exist")
    assert (mine / "notes.txt").read_text() == "keep"  # the user's own directory is kept


def test_device_cuda_without_a_gpu_is_one_line(corpus: Path, tmp_path: Path) -> None:
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    res = _run(["train", "--data", str(corpus), "--out", str(tmp_path / "r"), *TRAIN]
               + ["--max-steps", "1", "--device", "cuda"])  # fmt: skip
    _one_line_error(res, "no CUDA GPU")


def test_embeddings_k_is_checked_where_it_is_parsed() -> None:
    _one_line_error(_run(["embeddings", "nearest", "king", "-k", "0"]), "-k must be >= 1")


def test_help_option_errors_and_models_do_not_import_torch() -> None:
    """``--help``, an option error, an unknown pair and ``attenzione models`` answer without
    loading torch (seconds of start-up): checked in a fresh interpreter."""
    import subprocess
    import sys

    script = """
import sys
from typer.testing import CliRunner
from attenzione.cli import app
calls = [["--help"], ["translate", "--help"], ["serve", "--help"], ["train", "--help"],
         ["translate", "--beam", "0", "x"], ["translate", "--from", "de", "Hallo"], ["models"]]
codes = [CliRunner().invoke(app, args).exit_code for args in calls]
print(codes, "torch" in sys.modules)
"""
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=120
    )
    assert out.stdout.strip() == "[0, 0, 0, 0, 2, 2, 0] False", out.stdout + out.stderr


def test_evaluate_searches_with_the_length_penalty_translate_uses(
    model: Path, tmp_path: Path
) -> None:
    """``evaluate --length-penalty`` scores the translations ``translate --length-penalty``
    writes (the Multi30k recipe chooses the penalty on val, then scores with it)."""
    sources = ["the cat", "the dog is here", "the cat is not here"]
    tsv = tmp_path / "test.tsv"
    tsv.write_text("".join(f"{s}\til gatto\n" for s in sources))
    (tmp_path / "src.txt").write_text("".join(s + "\n" for s in sources))
    for penalty in ("0", "2.5"):
        hyp, out = tmp_path / f"hyp{penalty}.txt", tmp_path / f"out{penalty}.txt"
        common = ["--model", str(model), "--beam", "3", "--length-penalty", penalty, "--raw"]
        res = _run(["evaluate", *common, "--data", str(tsv), "--hypotheses", str(hyp)])
        assert res.exit_code == 0, res.output
        res = _run(["translate", *common, "-i", str(tmp_path / "src.txt"), "-o", str(out)])
        assert res.exit_code == 0, res.output
        assert hyp.read_text().splitlines() == out.read_text().splitlines()
    _one_line_error(
        _run(["evaluate", "--model", str(model), "--data", str(tsv), "--length-penalty", "-1"]),
        "length-penalty",
    )
