"""A service for many languages, offline: ``serve --languages fr,en,it --install`` installs
what it lacks from a local Hugging Face hub cache (through huggingface_hub, HF_HUB_OFFLINE=1),
serves the pairs among the languages, direct or through English, loads each model when first
asked for and keeps at most ``--max-models 2`` — under concurrent requests for three models,
every answer is the right model's and none is a 5xx."""

from __future__ import annotations

import json
import urllib.request
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("transformers")
pytest.importorskip("sentencepiece")
pytest.importorskip("huggingface_hub")

from hub_helpers import offline_hub, opus_cache  # noqa: E402
from serve_helpers import Server, post, running_server  # noqa: E402

SENTENCES = ["the cat is big.", "a red house.", "the dog has a small house."]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    tmp = tmp_path_factory.mktemp("languages")
    opus_cache(tmp / "hub", [("fr", "en"), ("en", "fr")])
    with pytest.MonkeyPatch.context() as mp, offline_hub(tmp / "hub", mp):
        mp.setenv("ATTENZIONE_MODELS", str(tmp / "models"))
        args = ["--languages", "fr,en,it", "--install", "--max-models", "2", "--beam", "2"]
        with running_server(tmp, *args) as s:
            yield s


def translate(server: Server, text: str, source: str, target: str, **more: Any) -> Any:
    status, body = post(
        server.url + "/translate", {"q": text, "source": source, "target": target, **more}
    )
    assert status == 200, body
    return body


def test_the_missing_pairs_were_installed_and_the_pivoted_ones_are_listed(server: Server) -> None:
    out = server.output()
    assert "installed fr-en" in out and "installed en-fr" in out
    with urllib.request.urlopen(server.url + "/languages", timeout=30) as r:
        listing = {row["code"]: row["targets"] for row in json.loads(r.read())}
    assert listing["fr"] == ["en", "it"]  # fr→it only through English
    assert listing["it"] == ["en", "fr"]
    assert set(listing["en"]) == {"fr", "it"}
    models = server.health()["models"]
    assert models["through"] == {"fr-it": "en", "it-fr": "en"}
    assert set(models["known"]) == {"fr-en", "en-fr", "en-it", "it-en"}
    assert models["max_models"] == 2 and len(models["loaded"]) <= 2


def test_a_pivoted_pair_is_translating_twice_and_its_scores_say_so(server: Server) -> None:
    for text in SENTENCES:
        english = translate(server, text, "fr", "en")["translatedText"]
        by_hand = translate(server, english, "en", "it")["translatedText"]
        pivoted = translate(server, text, "fr", "it", scores=True, alternatives=1)
        assert pivoted["translatedText"] == by_hand
        assert pivoted["scores"]["models"] == ["fr-en", "en-it"]
        assert pivoted["scores"]["via"] == "en"
        assert pivoted["scores"]["confidence"] <= 0
    # the attention of a pivoted sentence shows both legs
    att = translate(server, SENTENCES[0], "fr", "it", attention=True)["attention"][0]
    assert att["models"] == ["fr-en", "en-it"] and "first_leg" in att
    # a view of one model refuses the pair in one line, naming the two
    status, body = post(server.url + "/trace", {"q": SENTENCES[0], "source": "fr", "target": "it"})
    assert status == 400 and "fr-en then en-it" in body["error"]


def test_a_document_goes_through_the_pivot_too(server: Server) -> None:
    import uuid

    text = "\n".join(SENTENCES) + "\n"
    boundary = uuid.uuid4().hex
    parts = [
        f'--{boundary}\r\nContent-Disposition: form-data; name="{k}"\r\n\r\n{v}\r\n'
        for k, v in (("source", "fr"), ("target", "it"))
    ]
    parts.append(
        f'--{boundary}\r\nContent-Disposition: form-data; name="file"; filename="a.txt"\r\n'
        f"Content-Type: text/plain\r\n\r\n{text}\r\n--{boundary}--\r\n"
    )
    req = urllib.request.Request(
        server.url + "/translate_file",
        data="".join(parts).encode(),
        headers={"Content-Type": f"multipart/form-data; boundary={boundary}"},
    )
    with urllib.request.urlopen(req, timeout=120) as r:
        url = json.loads(r.read())["translatedFileUrl"]
    with urllib.request.urlopen(url, timeout=60) as r:
        got = r.read().decode().splitlines()
    want = [translate(server, t, "fr", "it")["translatedText"] for t in SENTENCES]
    assert got == want


def test_three_models_under_max_models_2_answer_concurrent_requests_rightly(
    server: Server,
) -> None:
    pairs = [("fr", "en"), ("en", "fr"), ("it", "en")]
    texts = {("fr", "en"): SENTENCES[0], ("en", "fr"): SENTENCES[1], ("it", "en"): "Ciao!"}
    # each model's own answer, asked alone
    want = {p: translate(server, texts[p], *p)["translatedText"] for p in pairs}
    assert len(set(want.values())) == 3  # three models: three different answers
    before = server.health()["models"]

    def ask(i: int) -> tuple[tuple[str, str], int, Any]:
        pair = pairs[i % 3]
        status, body = post(
            server.url + "/translate", {"q": texts[pair], "source": pair[0], "target": pair[1]}
        )
        return pair, status, body

    with ThreadPoolExecutor(9) as ex:
        answers = list(ex.map(ask, range(27)))
    for pair, status, body in answers:
        assert status == 200, body
        assert body["translatedText"] == want[pair], pair
    after = server.health()["models"]
    assert len(after["loaded"]) <= 2
    assert after["loads"] > before["loads"] and after["unloads"] > before["unloads"]


def test_languages_the_hub_cannot_give_are_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from typer.testing import CliRunner

    from attenzione.cli import app

    monkeypatch.setenv("ATTENZIONE_MODELS", str(tmp_path / "models"))
    with offline_hub(tmp_path / "empty-hub", monkeypatch):
        res = CliRunner().invoke(app, ["serve", "--languages", "de,en", "--install"])
        errors = [line for line in res.output.splitlines() if line.startswith("error: ")]
        assert res.exit_code == 2 and len(errors) == 1, res.output
        assert "Helsinki-NLP/opus-mt-en-de" in errors[0] and "Traceback" not in res.output
        res = CliRunner().invoke(app, ["serve", "--languages", "de,fr"])
        assert res.exit_code == 2 and "--install" in res.output, res.output
        res = CliRunner().invoke(app, ["serve", "--install"])
        assert res.exit_code == 2 and "--languages" in res.output, res.output
