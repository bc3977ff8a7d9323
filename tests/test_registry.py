"""The installed models by pair: the registry, ``attenzione models`` and ``--from/--to``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from attenzione.cli import app
from attenzione.translator.registry import ENV, UnknownPair, find, installed
from tiny_model import tiny_translator


def _save(directory: Path, source: str, target: str, seed: int = 0) -> Path:
    tr = tiny_translator(seed)
    pair = {"source_language": source, "target_language": target}
    info = {**tr.info, **pair, "dev_beam": {"bleu": 12.5, "chrf": 40.0}}
    return tr.save_pretrained(directory, info=info)


@pytest.fixture
def own_models(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A user's folder with an Italian→English and a French→English tiny model."""
    root = tmp_path / "models"
    _save(root / "it-en", "it", "en", seed=1)
    _save(root / "anything", "fr", "en", seed=2)
    (root / "notes").mkdir()  # not a model directory: ignored
    monkeypatch.setenv(ENV, str(root))
    return root


def test_the_shipped_english_italian_model_is_found_by_default() -> None:
    model = find()
    assert (model.source, model.target, model.shipped) == ("en", "it", True)
    assert find("en", "it") == model and find(target="it") == model
    assert "en-it" in [m.pair for m in installed()]


def test_a_user_folder_adds_pairs_read_from_info_json(own_models: Path) -> None:
    pairs = {m.pair: m for m in installed()}
    assert {"en-it", "it-en", "fr-en"} <= set(pairs)
    assert pairs["fr-en"].path == own_models / "anything" and not pairs["fr-en"].shipped
    assert find("it", "en").path == own_models / "it-en"
    assert find("fr").pair == "fr-en"


def test_an_unknown_or_ambiguous_pair_is_one_line_naming_the_pairs(own_models: Path) -> None:
    with pytest.raises(UnknownPair, match=r"de→en: the installed pairs are en-it, fr-en, it-en"):
        find("de", "en")
    with pytest.raises(UnknownPair, match=r"several installed models fit into en"):
        find(target="en")


def test_a_user_model_of_a_shipped_pair_is_taken_first(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _save(tmp_path / "mine", "en", "it")
    monkeypatch.setenv(ENV, str(tmp_path))
    assert find("en", "it").path == tmp_path / "mine"


def test_translate_picks_the_model_of_the_pair(own_models: Path) -> None:
    runner = CliRunner()
    res = runner.invoke(app, ["translate", "--from", "it", "--to", "en", "--beam", "1", "the cat"])
    assert res.exit_code == 0, res.output
    # the untrained tiny models write different words: the output tells which one ran
    outputs = {
        name: runner.invoke(
            app, ["translate", "--model", str(own_models / name), "--beam", "1", "the cat"]
        ).output
        for name in ("it-en", "anything")
    }
    assert outputs["it-en"] != outputs["anything"]
    assert res.output == outputs["it-en"]
    res = runner.invoke(app, ["translate", "--from", "de", "Hallo"])
    assert res.exit_code == 2
    assert res.output.strip() == (
        "error: no installed model translates from de: the installed pairs are en-it, fr-en, it-en"
    )
    res = runner.invoke(
        app, ["translate", "--model", str(own_models / "it-en"), "--from", "en", "cat"]
    )
    assert res.exit_code == 2 and "translates it→en" in res.output and "Traceback" not in res.output


def test_models_lists_each_pair_with_its_figures(own_models: Path) -> None:
    res = CliRunner().invoke(app, ["models", "--json"])
    assert res.exit_code == 0, res.output
    rows = {r["pair"]: r for r in json.loads(res.output)}
    assert rows["it-en"]["tatoeba_dev"] == "12.50 / 40.00" and rows["it-en"]["bytes"] > 0
    assert rows["en-it"]["shipped"] and not rows["it-en"]["shipped"]
    table = CliRunner().invoke(app, ["models"]).output.splitlines()
    assert table[0].split()[0] == "pair" and any(line.startswith("fr-en") for line in table)


def test_attention_and_evaluate_take_the_pair_too(own_models: Path, tmp_path: Path) -> None:
    runner = CliRunner()
    out = tmp_path / "attn"
    res = runner.invoke(
        app,
        [
            "attention",
            "--from",
            "it",
            "--to",
            "en",
            "il gatto è qui",
            "--out",
            str(out),
            "--no-png",
        ],
    )
    assert res.exit_code == 0, res.output
    assert (out / "attention.html").is_file()
    # an en-it test file scored Italian→English: --reverse reads its second column as the source
    data = tmp_path / "test.tsv"
    data.write_text("the cat is here .\til gatto è qui .\nthe dog .\til cane .\n", encoding="utf-8")
    res = runner.invoke(
        app,
        ["evaluate", "--from", "it", "--to", "en", "--reverse", "--data", str(data), "--beam", "1"]
        + ["--json", "--raw", "--hypotheses", str(tmp_path / "hyp.txt")],
    )
    assert res.exit_code == 0, res.output
    scores = json.loads(res.output)
    assert scores["pairs"] == 2
    direct = runner.invoke(
        app,
        ["translate", "--from", "it", "--to", "en", "--raw", "--beam", "1"]
        + ["il gatto è qui .", "il cane ."],
    )
    assert (tmp_path / "hyp.txt").read_text(encoding="utf-8") == direct.output


def test_a_pair_is_read_from_info_json_in_any_case_else_from_the_directory_name(
    tmp_path: Path,
) -> None:
    from attenzione.translator.registry import DEFAULT_PAIR, pair_of

    upper = _save(tmp_path / "mine", "IT", "En")
    assert pair_of(upper) == ("it", "en")
    bare = tiny_translator().save_pretrained(tmp_path / "de-en")  # no languages in info.json
    assert pair_of(bare) == ("de", "en")
    assert pair_of(tiny_translator().save_pretrained(tmp_path / "best")) == DEFAULT_PAIR
    res = CliRunner().invoke(app, ["translate", "--model", str(upper), "--from", "it", "the cat"])
    assert res.exit_code == 0, res.output  # "IT" in info.json is it
