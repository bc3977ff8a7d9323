"""A model's pair decides its default pipeline (attenzione.pipeline.pairs), training records
it in info.json, and ``attenzione info`` reports it."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from attenzione.cli import app
from attenzione.pipeline import STEP_NAMES
from attenzione.pipeline.pairs import default_pipeline, pipeline_of
from attenzione.search.registry import switches
from attenzione.training.trainer import train
from attenzione.translator.registry import PRETRAINED_ROOT
from attenzione.translator.translator import Translator
from toy_corpus import toy_train_config, write_toy_corpus

QUIET = {"log": lambda *a, **k: None}
# the steps that need a language profile
LANGUAGE_STEPS = {"capitals", "title-case", "continuation", "number-format"}


def _shipped(pair: str) -> dict:
    return json.loads((PRETRAINED_ROOT / pair / "info.json").read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def made_up_pair(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny model of a made-up pair xx→yy, trained a few steps."""
    root = tmp_path_factory.mktemp("xxyy")
    corpus = write_toy_corpus(root / "toy.tsv")
    out = root / "run"
    train(toy_train_config(corpus, out, max_steps=5, src_lang="xx", tgt_lang="yy"), **QUIET)
    return out


def _same_terms(chosen: dict, recorded: dict) -> None:
    """Terms as a model applies them: a term not recorded is on at its default weight."""
    for name, term in switches().items():
        want = recorded["terms"].get(name, term.default)
        assert chosen["terms"].get(name, term.default) == want, name


def test_english_to_italian_defaults_to_what_the_shipped_model_records() -> None:
    info = _shipped("en-it")
    for pair in (("en", "it"), ("EN", "it"), ("en-GB", "it_IT")):
        chosen = default_pipeline(*pair)
        assert chosen["steps"] == info["pipeline"]["steps"] == list(STEP_NAMES)
        _same_terms(chosen, info["pipeline"])


def test_italian_to_english_defaults_to_every_step_but_the_english_title_case() -> None:
    """The shipped it→en model records its pair's default: an Italian source gets no
    title-case step (Italian headlines are not in title case)."""
    info = _shipped("it-en")
    chosen = default_pipeline("it", "en")
    assert chosen["steps"] == info["pipeline"]["steps"]
    assert chosen["steps"] == [s for s in STEP_NAMES if s != "title-case"]
    _same_terms(chosen, info["pipeline"])


GENERIC = ["normalize", "carry", "split", "numbers", "inline-tags", "names"]


@pytest.mark.parametrize(
    ("pair", "more_steps", "word_check"),
    [
        (("xx", "yy"), [], False),
        (("", ""), [], False),
        # an English source: its headlines' minor words and its number labels are known
        (("en", "xx"), ["title-case", "number-format"], False),
        # an Italian target: its continuations start lower-case, its words fit a word list
        (("xx", "it"), ["continuation"], True),
    ],
)
def test_a_language_without_a_profile_brings_no_rules(
    pair: tuple[str, str], more_steps: list[str], word_check: bool
) -> None:
    chosen = default_pipeline(*pair)
    assert chosen["steps"] == [s for s in STEP_NAMES if s in GENERIC or s in more_steps]
    assert "capitals" not in chosen["steps"]  # needs both sides' case
    assert chosen["terms"]["punctuation-coverage"] == 0  # needs both sides' comma rules
    assert (chosen["terms"]["word-check"] > 0) is word_check
    assert chosen["terms"]["number-coverage"] > 0 and chosen["terms"]["attention-coverage"] > 0
    assert set(chosen["terms"]) == set(switches())


def test_german_gets_what_its_profile_allows() -> None:
    """German capitalises nouns and puts a comma before every clause: no recapitalising, no
    lower-cased continuation into German, no comma coverage, no word check on its compounds;
    an English source keeps its title-case and number-label steps."""
    en_de, de_en = default_pipeline("en", "de"), default_pipeline("de", "en")
    for chosen in (en_de, de_en):
        assert "capitals" not in chosen["steps"]
        assert chosen["terms"]["punctuation-coverage"] == 0
    assert {"title-case", "number-format"} <= set(en_de["steps"])
    assert "continuation" not in en_de["steps"] and en_de["terms"]["word-check"] == 0
    assert "continuation" in de_en["steps"] and de_en["terms"]["word-check"] > 0
    assert "title-case" not in de_en["steps"]  # German headlines are not in title case


def test_every_name_is_a_step_or_term_there_is() -> None:
    for pair in (("en", "it"), ("xx", "yy")):
        chosen = default_pipeline(*pair)
        assert set(chosen["steps"]) <= set(STEP_NAMES)
        assert set(chosen["terms"]) <= set(switches())


def test_pipeline_of_an_info() -> None:
    recorded = {"steps": ["carry"], "terms": {}}
    assert pipeline_of({"pipeline": recorded, "source_language": "xx"}) is recorded
    assert pipeline_of({"source_language": "de", "target_language": "fr"}) == default_pipeline(
        "de", "fr"
    )
    # no pair named: every step and term, as before pairs had defaults
    assert pipeline_of({}) == {} and pipeline_of({"source_language": "en"}) == {}
    with pytest.raises(ValueError, match="JSON object"):
        pipeline_of({"pipeline": ["carry"]})


def test_a_run_records_its_pair_and_pipeline(made_up_pair: Path) -> None:
    for ckpt in ("last", "best"):
        info = json.loads((made_up_pair / ckpt / "info.json").read_text(encoding="utf-8"))
        assert (info["source_language"], info["target_language"]) == ("xx", "yy")
        assert info["pipeline"] == default_pipeline("xx", "yy")
    translator = Translator.from_pretrained(made_up_pair / "last")
    assert not LANGUAGE_STEPS & set(translator.pipeline.names)
    assert translator.terms["punctuation-coverage"] == 0 and translator.terms["word-check"] == 0


def test_a_model_of_a_made_up_pair_without_a_recorded_pipeline(
    made_up_pair: Path, tmp_path: Path
) -> None:
    model = shutil.copytree(made_up_pair / "last", tmp_path / "m")
    info = json.loads((model / "info.json").read_text(encoding="utf-8"))
    del info["pipeline"]
    (model / "info.json").write_text(json.dumps(info), encoding="utf-8")
    translator = Translator.from_pretrained(model)
    assert list(translator.pipeline.names) == default_pipeline("xx", "yy")["steps"]
    res = CliRunner().invoke(app, ["info", str(model), "--json"])
    assert res.exit_code == 0, res.output
    facts = json.loads(res.output)
    assert facts["steps"] == default_pipeline("xx", "yy")["steps"]
    assert facts["pipeline_recorded"] is False


def test_info_json_of_a_made_up_pair(made_up_pair: Path) -> None:
    res = CliRunner().invoke(app, ["info", str(made_up_pair / "best"), "--json"])
    assert res.exit_code == 0, res.output
    facts = json.loads(res.output)
    assert (facts["source_language"], facts["target_language"]) == ("xx", "yy")
    assert facts["profiles"] == {"xx": None, "yy": None}
    assert not LANGUAGE_STEPS & set(facts["steps"])
    assert {"carry", "split", "inline-tags"} <= set(facts["steps"])
    assert set(facts["terms"]) == {"number-coverage", "attention-coverage", "doubled-marks"}
    assert isinstance(facts["parameters"], int) and facts["parameters"] > 0
    assert facts["data"] and facts["d_model"] > 0 and facts["tgt_vocab_size"] > 0
    # the text form says the same
    res = CliRunner().invoke(app, ["info", str(made_up_pair / "best")])
    assert res.exit_code == 0, res.output
    assert "xx → yy" in res.output and "title-case" not in res.output


@pytest.mark.parametrize("name", ["en-it", "it-en"])
def test_info_of_a_shipped_model_reports_its_own_pipeline(name: str) -> None:
    recorded = _shipped(name)["pipeline"]
    for model in (name, str(PRETRAINED_ROOT / name)):
        res = CliRunner().invoke(app, ["info", model, "--json"])
        assert res.exit_code == 0, res.output
        facts = json.loads(res.output)
        assert [facts["source_language"], facts["target_language"]] == name.split("-")
        assert set(facts["profiles"]) == set(name.split("-")) and all(facts["profiles"].values())
        assert facts["steps"] == recorded["steps"]
        assert {k: v for k, v in facts["terms"].items() if k in recorded["terms"]} == {
            k: v for k, v in recorded["terms"].items() if v > 0
        }
        assert facts["pipeline_recorded"] is True


def test_info_errors_are_one_line(made_up_pair: Path, tmp_path: Path) -> None:
    runner = CliRunner()
    cases = {
        "does not exist": str(tmp_path / "nowhere"),
        "training run": str(made_up_pair),
        "not a model directory": str(tmp_path),
        "zz": "zz-qq",  # no installed model of the pair: the message names those there are
    }
    for expected, model in cases.items():
        res = runner.invoke(app, ["info", model, "--json"])
        assert res.exit_code == 2, (model, res.output)
        assert res.output.startswith("error: ") and res.output.count("\n") == 1, res.output
        assert expected in res.output, res.output
    damaged = shutil.copytree(made_up_pair / "last", tmp_path / "damaged")
    (damaged / "info.json").write_text("{", encoding="utf-8")
    res = runner.invoke(app, ["info", str(damaged)])
    assert res.exit_code == 2 and "info.json is not valid JSON" in res.output, res.output
    (damaged / "config.json").write_text("[]", encoding="utf-8")
    res = runner.invoke(app, ["info", str(damaged)])
    assert res.exit_code == 2 and "config.json" in res.output, res.output


@pytest.mark.parametrize("reverse", [False, True])
def test_a_moses_prefix_is_read_by_the_pairs_languages(tmp_path: Path, reverse: bool) -> None:
    """``--data P --src-lang xx --tgt-lang yy`` trains on P.xx → P.yy, with or without
    --reverse (files named by their language need no turning round)."""
    pairs = [line.split("\t") for line in write_toy_corpus(tmp_path / "toy.tsv").read_text(
        encoding="utf-8").splitlines()]  # fmt: skip
    first, second = ("yy", "xx") if reverse else ("xx", "yy")
    for col, lang in ((0, first), (1, second)):
        (tmp_path / f"corpus.{lang}").write_text(
            "".join(p[col] + "\n" for p in pairs), encoding="utf-8"
        )
    out = tmp_path / "run"
    cfg = toy_train_config(
        tmp_path / "corpus", out, max_steps=1, src_lang="xx", tgt_lang="yy", reverse=reverse
    )
    train(cfg, **QUIET)
    held_out = (out / "data" / "dev.tsv").read_text(encoding="utf-8").splitlines()
    src, tgt = held_out[0].split("\t")[:2]
    expected = {(p[1], p[0]) if reverse else (p[0], p[1]) for p in pairs}
    assert (src, tgt) in expected
