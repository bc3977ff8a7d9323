"""``attenzione models install/list/remove`` and pivoting, offline: small Marian models built
here sit in a local Hugging Face hub cache and are installed through the code that downloads
(huggingface_hub with HF_HUB_OFFLINE=1), into the user's model folder, which every command
then reads with no other setting."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("transformers")
pytest.importorskip("sentencepiece")
pytest.importorskip("huggingface_hub")

from typer.testing import CliRunner, Result  # noqa: E402

from attenzione.cli import app  # noqa: E402
from hub_helpers import offline_hub, opus_cache  # noqa: E402

SENTENCES = ["the cat is big.", "a red house.", "the dog has a small house."]


def run(*args: str) -> Result:
    return CliRunner().invoke(app, list(args))


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("hub") / "hub"
    opus_cache(root, [("fr", "en"), ("en", "it"), ("de", "en")])
    return root


@pytest.fixture
def hub(cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """The offline hub and a user model folder of this test's own; the folder."""
    folder = tmp_path / "models"
    monkeypatch.setenv("ATTENZIONE_MODELS", str(folder))
    with offline_hub(cache, monkeypatch):
        yield folder


def tmp_path_of(folder: Path) -> Path:
    return folder.parent


def lines(res: Result) -> list[str]:
    assert res.exit_code == 0, res.output
    return res.output.splitlines()


def one_line_error(res: Result, *needles: str) -> str:
    assert res.exit_code == 2, res.output
    assert "Traceback" not in res.output
    said = [line for line in res.output.splitlines() if line.strip()]
    errors = [line for line in said if line.startswith("error: ")]
    assert len(errors) == 1 and len(said) <= 2, res.output  # (after "installing a→b …")
    for needle in needles:
        assert needle in errors[0], errors[0]
    return errors[0]


def test_install_list_translate_and_remove_a_pair_by_name(hub: Path) -> None:
    out = lines(run("models", "install", "fr", "en"))
    assert any("fr-en" in line for line in out)
    assert (hub / "fr-en" / "config.json").is_file()
    listing = json.loads(run("models", "list", "--json").output)
    mine = next(m for m in listing if m["pair"] == "fr-en")
    assert "Helsinki-NLP/opus-mt-fr-en" in json.dumps(mine)
    assert {"en-it", "it-en"} <= {m["pair"] for m in listing}  # the shipped ones too
    # translate reads the user folder with no other setting, and equals the model by path
    by_pair = lines(run("translate", "--from", "fr", "--to", "en", *SENTENCES))
    by_path = lines(run("translate", "--model", str(hub / "fr-en"), *SENTENCES))
    assert by_pair == by_path and len(by_pair) == len(SENTENCES)
    # installed twice: one line; --force replaces it
    one_line_error(run("models", "install", "fr", "en"), "installed already", "--force")
    assert run("models", "install", "fr", "en", "--force").exit_code == 0
    # remove deletes what install wrote, and only that
    assert run("models", "remove", "fr", "en").exit_code == 0
    assert not (hub / "fr-en").exists()
    one_line_error(run("models", "remove", "fr", "en"), "no model of fr→en")
    one_line_error(run("models", "remove", "en", "it"), "shipped")


def test_a_pair_the_hub_cache_lacks_is_one_line_naming_what_to_do(hub: Path) -> None:
    error = one_line_error(run("models", "install", "xx", "yy"), "Helsinki-NLP/opus-mt-xx-yy")
    assert "HF_HUB_OFFLINE" in error or "attenzione import" in error
    assert not (hub / "xx-yy").exists()


def test_a_users_own_folder_is_never_replaced_or_removed(hub: Path) -> None:
    (hub / "fr-en").mkdir(parents=True)
    (hub / "fr-en" / "notes.txt").write_text("mine")
    one_line_error(run("models", "install", "fr", "en", "--force"), "not installed by")
    assert (hub / "fr-en" / "notes.txt").read_text() == "mine"


def test_a_pair_without_a_model_pivots_through_english(hub: Path) -> None:
    for pair in (("fr", "en"), ("en", "it")):
        assert run("models", "install", *pair).exit_code == 0
    # fr → it: no model of its own; through English it is fr→en, then en→it on its output
    pivoted = lines(run("translate", "--from", "fr", "--to", "it", *SENTENCES))
    english = lines(run("translate", "--model", str(hub / "fr-en"), *SENTENCES))
    by_hand = lines(run("translate", "--model", str(hub / "en-it"), *english))
    assert pivoted == by_hand
    listing = run("models", "list").output
    assert "fr→it" in listing or "fr-it" in listing  # the pairs reached through English
    # the attention view shows both legs, each model's maps in a folder of its own
    out = tmp_path_of(hub) / "att"
    said = lines(run("attention", "--from", "fr", "--to", "it", SENTENCES[0], "--out", str(out),
                     "--no-png"))  # fmt: skip
    assert (out / "1-fr-en" / "attention.html").is_file()
    assert (out / "2-en-it" / "attention.html").is_file()
    assert any(line.startswith("leg 1 (fr-en): ") for line in said)
    one_line_error(
        run("attention", "--from", "fr", "--to", "it", SENTENCES[0], "--trace", "--json"),
        "fr-en then en-it",
    )
    # nothing joins de to it here (de-en is not installed): one line naming what is
    one_line_error(run("translate", "--from", "de", "--to", "it", "x"), "de→it")


def test_int8_keeps_greedy_outputs_of_an_installed_model(hub: Path) -> None:
    """int8 on an installed (imported) Marian model writes the same greedy output as fp32
    for at least 90% of the test sentences. (Its weights are drawn wide, so that its logits
    differ by units, as a real model's do; a tiny model trained for a few steps here has
    margins int8's rounding can flip, which says nothing of int8 on a real one.)"""
    from attenzione.config import search_config
    from attenzione.translator.translator import Translator
    from marian_helpers import WORDS

    assert run("models", "install", "fr", "en").exit_code == 0
    texts = [" ".join(WORDS[i : i + n]) for n in (2, 3, 5) for i in range(0, len(WORDS) - n)]
    greedy: dict[str, Any] = {"search": search_config(1), "steps": None}
    fp32 = Translator.from_pretrained(hub / "fr-en").translate(texts, **greedy)
    int8 = Translator.from_pretrained(hub / "fr-en", precision="int8").translate(texts, **greedy)
    same = sum(a.text == b.text for a, b in zip(fp32, int8, strict=True))
    assert same >= 0.9 * len(texts), (same, len(texts))
