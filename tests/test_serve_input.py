"""What reaches the service's translator: the language of ``source: "auto"`` text, control
characters, and a pictograph in mid-sentence (issue 39, items 1–3).

One server with the shipped model (started once); each test sends what a user sent and
checks what the user gets back.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from attenzione.cli import app
from attenzione.serve.language import Languages
from serve_helpers import Server, post, running_server


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    with running_server(tmp_path_factory.mktemp("serve"), "--beam", "2") as s:
        yield s


def _translate(server: Server, **body: object) -> tuple[int, dict]:
    return post(server.url + "/translate", {"target": "it", **body})


# ---------------------------------------------------------------------- 1. language identification
@pytest.mark.parametrize(
    ("text", "code", "name"),
    [
        ("我喜欢学习新的语言，也喜欢旅行。", "zh", "Chinese"),
        ("Bonjour, comment allez-vous aujourd'hui ?", "fr", "French"),
        ("¿Dónde está la estación de tren, por favor?", "es", "Spanish"),
    ],
)
def test_auto_text_in_a_language_the_server_cannot_read_is_a_400_naming_it(
    server: Server, text: str, code: str, name: str
) -> None:
    status, body = _translate(server, q=text, source="auto")
    assert status == 400, body
    message = body["error"]
    assert "\n" not in message
    assert f"{name} ({code}" in message
    assert "English (en) → Italian (it)" in message  # what the server does translate


def test_auto_text_already_in_the_target_language_comes_back_as_it_is(server: Server) -> None:
    """Italian into Italian is not "translated from English" (issue 53): it is returned
    unchanged, as LibreTranslate does when source and target are the same."""
    for text in ("Il gatto dorme sul divano del salotto.", "Buonasera, come stai?"):
        status, body = _translate(server, q=text, source="auto")
        assert status == 200, body
        assert body["translatedText"] == text
        assert body["detectedLanguage"]["language"] == "it"


def test_auto_english_is_translated_and_reported_with_its_confidence(server: Server) -> None:
    status, body = _translate(server, q="My brother lives in Rome.", source="auto")
    assert status == 200, body
    assert body["detectedLanguage"]["language"] == "en"
    assert body["detectedLanguage"]["confidence"] > 50
    # a short, ambiguous text is read as the server's source language, with a low confidence
    status, body = _translate(server, q="Hello!", source="auto")
    assert status == 200, body
    assert body["detectedLanguage"]["language"] == "en"
    assert body["detectedLanguage"]["confidence"] < 50


def test_detect_ranks_over_every_language_it_knows(server: Server) -> None:
    status, ranked = post(server.url + "/detect", {"q": "Hello!"})
    assert status == 200
    # unsure (every language under 5 %), and said so: most likely first, as always
    confidences = [r["confidence"] for r in ranked]
    assert confidences == sorted(confidences, reverse=True) and confidences[0] < 10
    assert {"en", "it"} <= {r["language"] for r in ranked}
    status, ranked = post(server.url + "/detect", {"q": "Guten Tag, wie geht es Ihnen heute?"})
    assert status == 200
    assert ranked[0]["language"] == "de" and ranked[0]["confidence"] > 90
    codes = [r["language"] for r in ranked]
    assert {"en", "it"} <= set(codes)  # the server's own languages are always listed
    assert all(r["confidence"] < 10 for r in ranked if r["language"] in ("en", "it"))


def test_identifier_merges_varieties_and_never_inflates_confidence() -> None:
    langs = Languages(("en", "it"))
    ranked = langs.identify("我喜欢学习新的语言，也喜欢旅行。")
    assert ranked[0][0] == "zh" and ranked[0][1] > 0.9  # Wu and Cantonese summed into Chinese
    assert abs(sum(p for _, p in ranked) - 1.0) < 1e-6
    assert langs.detect_source("OK")["language"] == "en"
    # a server whose language is one of a merged group answers with its own code
    bokmaal = Languages(("nb", "en"))
    found = bokmaal.detect_source("Jeg liker å lese bøker om kvelden og gå tur i skogen.")
    assert found["language"] == "nb" and found["confidence"] > 90


# ---------------------------------------------------------------------- 2. control characters
def test_control_characters_are_not_read(server: Server) -> None:
    _, clean = _translate(server, q="Hello world, how are you?", source="en")
    for dirty in ("Hello\x00 world, how are you?", "Hello \x1b world,\x07 how are you?\x7f"):
        status, body = _translate(server, q=dirty, source="en")
        assert status == 200, body
        assert body["translatedText"] == clean["translatedText"]
        assert not any(ord(c) < 32 or 0x7F <= ord(c) < 0xA0 for c in body["translatedText"])


def test_cli_reads_control_characters_as_spaces(tmp_path: Path) -> None:
    src = tmp_path / "in.txt"
    src.write_text("Hello world, how are you?\nHello\x00 world,\x1b how are you?\n", "utf-8")
    out = tmp_path / "out.txt"
    res = CliRunner().invoke(app, ["translate", "-i", str(src), "-o", str(out), "--beam", "2"])
    assert res.exit_code == 0, res.output
    first, second = out.read_text("utf-8").splitlines()
    assert first == second


# ---------------------------------------------------------------------- 3. a pictograph inside
def test_a_pictograph_in_mid_sentence_is_carried_through_one_translation(server: Server) -> None:
    status, body = _translate(
        server, q="I had bread 🍞 and the coffee.", source="en", attention=True
    )
    assert status == 200, body
    text = body["translatedText"]
    assert text.count("🍞") == 1
    assert text[0].isupper()  # one sentence, not two halves ("e il caffè")
    # the sentence was read once, whole: its attention is there, on every word but the 🍞
    (maps,) = body["attention"]
    assert maps is not None
    assert "🍞" not in "".join(maps["source_tokens"])
    assert any("coffee" in t for t in maps["source_tokens"])
    assert any("bread" in t for t in maps["source_tokens"])
    # between two sentences a pictograph still separates them
    status, body = _translate(server, q="Thanks a lot! 😊 See you tomorrow.", source="en")
    assert status == 200 and body["translatedText"].count("😊") == 1
