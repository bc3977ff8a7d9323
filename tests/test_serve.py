"""``attenzione serve`` as its clients see it: a real server on 127.0.0.1, the real clients.

One server with the shipped model serves the whole module (started once: ~5 s). The
clients are used as published — nothing patched — and each asserts what a user of that
client would rely on. Bad input is sent every way we could think of, then schemathesis
generates more from the server's own OpenAPI document; none of it may produce a 5xx.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from serve_helpers import Server, post, running_server

SENTENCES = [
    "Where is the train station?",
    "I am hungry.",
    "The cat is sleeping on the sofa.",
    "We will leave tomorrow morning.",
    "She reads a book every week.",
    "My brother lives in Rome.",
]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    with running_server(tmp_path_factory.mktemp("serve"), "--beam", "2") as s:
        yield s


def _raw(url: str, data: bytes | None, ctype: str | None, method: str = "POST") -> tuple[int, Any]:
    headers = {"Content-Type": ctype} if ctype else {}
    req = urllib.request.Request(url, data=data, headers=headers, method=method)
    try:
        with urllib.request.urlopen(req, timeout=120) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"null")


# ---------------------------------------------------------------------- the real clients
def test_libretranslatepy(server: Server) -> None:
    from libretranslatepy import LibreTranslateAPI

    lt = LibreTranslateAPI(server.url)
    out = lt.translate("Where is the train station?", "en", "it")
    assert "stazione" in out
    assert lt.detect("Dove si trova la stazione dei treni?")[0]["language"] == "it"
    codes = {lang["code"]: lang["targets"] for lang in lt.languages()}
    # only the pairs of the installed models (attenzione serve loads them all)
    from attenzione.translator.registry import installed

    pairs = [(m.source, m.target) for m in installed()]
    assert codes == {c: [t for s, t in pairs if s == c] for c in dict.fromkeys(sum(pairs, ()))}
    # the shipped Italian→English model: the other direction, same server and client
    assert ("it", "en") in pairs
    assert "station" in lt.translate("Dov'è la stazione dei treni?", "it", "en").lower()


def test_deep_translator(server: Server) -> None:
    from deep_translator import LibreTranslator

    # deep-translator insists on a key even when the server needs none, and a trailing "/".
    tr = LibreTranslator(source="en", target="it", custom_url=server.url + "/", api_key="x")
    assert "stazione" in tr.translate("Where is the train station?")
    batch = tr.translate_batch(["I am hungry.", "The cat is sleeping on the sofa."])
    assert len(batch) == 2 and "gatto" in batch[1]


def test_libretranslate_aio_sync_and_async(server: Server) -> None:
    from libretranslate_aio import AsyncLibreTranslate, BadRequestError, LibreTranslate

    with LibreTranslate(server.url) as lt:
        one = lt.translate("The cat is sleeping on the sofa.", "en", "it", alternatives=2)
        assert isinstance(one.translated_text, str) and "gatto" in one.translated_text
        assert one.alternatives and len(one.alternatives) <= 2
        assert one.translated_text not in one.alternatives
        # a list goes out as repeated q fields and comes back as a list, in order
        many = lt.translate(SENTENCES[:3], "en", "it")
        assert isinstance(many.translated_text, list) and len(many.translated_text) == 3
        assert "stazione" in many.translated_text[0] and "gatto" in many.translated_text[2]
        auto = lt.translate("My brother lives in Rome.", "auto", "it")
        assert auto.detected_language is not None
        assert auto.detected_language.language == "en"  # type: ignore[union-attr]
        assert lt.detect("Il gatto dorme sul divano.")[0].language == "it"
        assert [x.code for x in lt.languages()] == ["en", "it"]
        settings = lt.frontend_settings()
        assert settings.language.source.code == "en" and settings.language.target.code == "it"
        assert settings.char_limit == 5000 and not settings.key_required
        assert lt.health()
        with pytest.raises(BadRequestError, match="fr is not supported"):
            lt.translate("Bonjour", "fr", "it")

    async def run() -> list[str]:
        async with AsyncLibreTranslate(server.url) as alt:
            got = await asyncio.gather(*(alt.translate(s, "en", "it") for s in SENTENCES[:3]))
        return [str(g.translated_text) for g in got]

    got = asyncio.run(run())
    assert "stazione" in got[0] and "gatto" in got[2]


NPM_CLIENT = """
const { translate } = require("libretranslate");
(async () => {
  const url = process.argv[2];
  const one = await translate({ query: "Where is the train station?", source: "en",
                                target: "it", apiurl: url });
  const auto = await translate({ query: "The cat is sleeping on the sofa.", target: "it",
                                 apiurl: url });  // no source: the client sends "auto"
  console.log(JSON.stringify([one, auto]));
})().catch((e) => { console.error(String(e)); process.exit(1); });
"""


def test_npm_libretranslate_client(server: Server, tmp_path: Path) -> None:
    node, npm = shutil.which("node"), shutil.which("npm")
    if node is None or npm is None:
        pytest.skip("Node.js is not installed")
    install = subprocess.run(
        [npm, "install", "--no-audit", "--no-fund", "--silent", "libretranslate@1.0.1"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=240,
    )
    if install.returncode != 0:
        pytest.skip(f"npm could not install the libretranslate client: {install.stderr[-300:]}")
    (tmp_path / "client.js").write_text(NPM_CLIENT)
    run = subprocess.run(
        [node, "client.js", server.url], cwd=tmp_path, capture_output=True, text=True, timeout=120
    )
    assert run.returncode == 0, run.stderr
    one, auto = json.loads(run.stdout)
    assert "stazione" in one and "gatto" in auto


# ---------------------------------------------------------------------- body shapes
def test_every_body_shape_gives_the_same_answer(server: Server) -> None:
    url = server.url + "/translate"
    q = "I am hungry."
    answers = [
        _raw(
            url, json.dumps({"q": q, "source": "en", "target": "it"}).encode(), "application/json"
        ),
        _raw(url, b"q=I+am+hungry.&source=en&target=it", "application/x-www-form-urlencoded"),
        _raw(url + "?q=I%20am%20hungry.&source=en&target=it", None, None),
        _raw(url + "?source=en&target=it", b"q=I+am+hungry.", "application/x-www-form-urlencoded"),
    ]
    boundary = "xyzzy"
    multipart = (
        "".join(
            f'--{boundary}\r\nContent-Disposition: form-data; name="{k}"\r\n\r\n{v}\r\n'
            for k, v in (("q", q), ("source", "en"), ("target", "it"))
        )
        + f"--{boundary}--\r\n"
    )
    answers.append(_raw(url, multipart.encode(), f"multipart/form-data; boundary={boundary}"))
    assert all(status == 200 for status, _ in answers), answers
    texts = {body["translatedText"] for _, body in answers}
    assert len(texts) == 1 and next(iter(texts))
    status, body = _raw(
        url,
        json.dumps({"q": [q, "", q], "source": "EN", "target": "it"}).encode(),
        "application/json",
    )
    assert status == 200 and body["translatedText"] == [next(iter(texts)), "", *texts]


def test_line_breaks_and_sentences_survive(server: Server) -> None:
    status, body = post(
        server.url + "/translate",
        {
            "q": "Dr. Ur lives in the U.S. He is a doctor.\n\nI am hungry.",
            "source": "en",
            "target": "it",
            "scores": True,
        },
    )
    assert status == 200
    sources = [s["source"] for s in body["scores"]["sentences"]]
    assert sources == ["Dr. Ur lives in the U.S.", "He is a doctor.", "I am hungry."]
    assert body["translatedText"].count("\n\n") == 1


# ---------------------------------------------------------------------- extensions
def test_scores_and_alternatives(server: Server) -> None:
    status, body = post(
        server.url + "/translate",
        {
            "q": "The cat is sleeping on the sofa. I am hungry.",
            "source": "en",
            "target": "it",
            "alternatives": 2,
            "scores": True,
        },
    )
    assert status == 200
    sc = body["scores"]
    assert len(sc["sentences"]) == 2 and sc["confidence"] <= 0
    assert len(sc["alternatives"]) == len(body["alternatives"])
    for s in sc["sentences"]:
        assert s["confidence"] <= 0 and len(s["alternatives"]) <= 2
        # beam candidates come best first by length-normalised score = mean log-prob here
        assert all(a["confidence"] <= s["confidence"] + 1e-6 for a in s["alternatives"])
    assert " ".join(s["translation"] for s in sc["sentences"]) == body["translatedText"]


def test_attention_matrix_and_alignment(server: Server) -> None:
    base = {"q": "The cat is sleeping on the sofa.", "source": "en", "target": "it"}
    status, body = post(server.url + "/translate", {**base, "attention": True})
    assert status == 200
    (att,) = body["attention"]
    w = att["weights"]
    assert len(w) == len(att["target_tokens"]) and all(
        len(r) == len(att["source_tokens"]) for r in w
    )
    assert all(abs(sum(r) - 1) < 2e-3 for r in w)  # each target row is a distribution
    assert att["source_tokens"][-1] == "<eos>" and att["layer"] == 2 and att["head"] is None
    al = att["alignment"]
    assert len(al["pairs"]) == len(al["target_words"])
    assert "cat" in al["source_words"] and any(
        al["source_words"][s] == "cat" and "gatt" in al["target_words"][t] for s, t in al["pairs"]
    )
    status, one_head = post(
        server.url + "/translate",
        {**base, "attention": True, "attention_layer": 0, "attention_head": 1},
    )
    assert status == 200 and one_head["attention"][0]["head"] == 1
    assert one_head["attention"][0]["weights"] != w
    status, full = post(server.url + "/translate", {**base, "attention_all": True})
    maps = full["attention"][0]["maps"]
    assert set(maps["kinds"]) == {"encoder", "decoder", "cross"}
    assert maps["kinds"]["cross"]["weights"][2][1] != maps["kinds"]["cross"]["weights"][2][0]
    status, bad = post(server.url + "/translate", {**base, "attention": True, "attention_head": 9})
    assert status == 400 and "head 9 is out of range" in bad["error"]
    # with an emoji and in capitals: the map shows what the model read (no emoji bytes, in
    # sentence case), the translation has the emoji back and is in capitals
    shout = {**base, "q": "THE CAT IS SLEEPING ON THE SOFA. 😊", "attention": True}
    status, body = post(server.url + "/translate", shout)
    assert status == 200 and body["translatedText"].endswith(" 😊")
    assert body["translatedText"] == body["translatedText"].upper()
    att, emoji = body["attention"]  # the service's segmenter makes "😊" a sentence of its own
    assert "cat" in att["alignment"]["source_words"] and "The" in att["source_tokens"]
    assert not any("THE" in t or "CAT" in t for t in att["source_tokens"])
    assert emoji is None  # nothing was translated there


def test_html_keeps_markup(server: Server) -> None:
    html = (
        '<p class="x">The cat is sleeping on the sofa.</p>\n<ul><li>I am hungry.</li></ul>'
        '<code>rm -rf /</code><p translate="no">Keep me.</p><br/>'
    )
    status, body = post(
        server.url + "/translate",
        {"q": html, "source": "en", "target": "it", "format": "html", "alternatives": 2},
    )
    assert status == 200 and body["alternatives"] == []  # as LibreTranslate: none for html
    out = body["translatedText"]
    for tag in ('<p class="x">', "</p>\n<ul><li>", "</li></ul>", "<br/>"):
        assert tag in out
    assert "<code>rm -rf /</code>" in out and '<p translate="no">Keep me.</p>' in out
    assert "gatto" in out and "sofa" not in out
    # a sentence with inline tags is translated whole, its tags placed in it
    status, body = post(
        server.url + "/translate",
        {
            "q": "<p>Click <b>Save</b> to keep your changes.</p>",
            "source": "en",
            "target": "it",
            "format": "html",
            "scores": True,
        },
    )
    out = body["translatedText"]
    assert status == 200 and out.startswith("<p>Fa") and out.endswith("</p>"), out
    assert "<b>Salva</b>" in out and out.count("<b>") == out.count("</b>") == 1, out
    (sentence,) = body["scores"]["sentences"]  # one sentence, not three pieces
    assert sentence["source"] == "Click <b>Save</b> to keep your changes.", sentence


# ---------------------------------------------------------------------- load
def test_fifty_concurrent_requests_are_batched(server: Server) -> None:
    before = server.health()["worker"]
    results: list[tuple[int, Any]] = [(0, None)] * 50
    texts = [f"{SENTENCES[i % len(SENTENCES)][:-1]}, number {i}." for i in range(50)]

    def call(i: int) -> None:
        results[i] = post(
            server.url + "/translate", {"q": texts[i], "source": "en", "target": "it"}
        )

    threads = [threading.Thread(target=call, args=(i,)) for i in range(50)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert all(status == 200 and body["translatedText"] for status, body in results), results
    after = server.health()["worker"]
    assert after["sentences"] - before["sentences"] == 50
    assert after["batches"] - before["batches"] < 50  # sentences of different requests shared
    assert after["max_batch_sentences"] > 1
    assert after["failed_batches"] == 0 and after["queued_sentences"] == 0


# ---------------------------------------------------------------------- bad input
BAD = [
    ("json", {"source": "en", "target": "it"}, 400, "missing q"),
    ("json", {"q": "", "source": "en", "target": "it"}, 400, "missing q"),
    ("json", {"q": [], "source": "en", "target": "it"}, 400, "missing q"),
    ("json", {"q": "x", "target": "it"}, 400, "missing source"),
    ("json", {"q": "x", "source": "en"}, 400, "missing target"),
    ("json", {"q": "x", "source": "xx", "target": "it"}, 400, "xx is not supported"),
    ("json", {"q": "x", "source": "en", "target": "de"}, 400, "de is not supported"),
    ("json", {"q": "x", "source": "it", "target": "it"}, 400, "not available"),
    ("json", {"q": 5, "source": "en", "target": "it"}, 400, "q must be"),
    ("json", {"q": ["a", 3], "source": "en", "target": "it"}, 400, "q must be"),
    ("json", {"q": {"a": 1}, "source": "en", "target": "it"}, 400, "q must be"),
    ("json", {"q": "x", "source": ["en"], "target": "it"}, 400, "source must be a string"),
    ("json", {"q": "x", "source": "en", "target": "it", "format": "pdf"}, 400, "pdf format"),
    ("json", {"q": "x", "source": "en", "target": "it", "alternatives": "x"}, 400, "number"),
    ("json", {"q": "x", "source": "en", "target": "it", "alternatives": 10**6}, 400, "<= 8"),
    ("json", {"q": "x", "source": "en", "target": "it", "alternatives": "2.5"}, 400, "number"),
    ("json", {"q": "x", "source": "en", "target": "it", "scores": "maybe"}, 400, "true or"),
    ("json", {"q": "x", "source": "en", "target": "it", "api_key": 7}, 400, "api_key"),
    ("json", {"q": "\ud800", "source": "en", "target": "it"}, 400, "Unicode"),
    ("json", {"q": "x" * 5001, "source": "en", "target": "it"}, 400, "exceeds text limit"),
    ("json", {"q": ["x"] * 101, "source": "en", "target": "it"}, 400, "exceeds text limit"),
    ("raw-json", b"[1, 2]", 400, "Invalid JSON format"),
    ("raw-json", b'{"q": "x", "source":', 400, "Invalid JSON format"),
    ("raw-json", b"\xff\xfe\x00binary", 400, "Invalid JSON format"),
    ("raw-json", b"[" * 100000, 400, "Invalid JSON format"),
    ("raw-form", b"q=%FF%FE&source=en&target=it", 400, ""),
    ("raw-form", b"\x00\x01\x02\xff", 400, "missing q"),
    ("huge", b"q=" + b"a" * (3 * 1024 * 1024), 413, "exceeds"),
]


@pytest.mark.parametrize(("kind", "payload", "status", "message"), BAD)
def test_bad_input_is_a_clear_4xx(
    server: Server, kind: str, payload: Any, status: int, message: str
) -> None:
    url = server.url + "/translate"
    if kind == "json":
        got = _raw(url, json.dumps(payload).encode(), "application/json")
    elif kind == "raw-json":
        got = _raw(url, payload, "application/json")
    else:
        got = _raw(url, payload, "application/x-www-form-urlencoded")
    if kind == "raw-form" and got[0] == 200:  # invalid UTF-8 may decode to U+FFFD: fine
        assert isinstance(got[1]["translatedText"], str)
        return
    assert got[0] == status, got
    assert isinstance(got[1], dict) and message in got[1]["error"], got


def test_a_file_where_text_belongs_and_unknown_routes(server: Server) -> None:
    boundary = "b0undary"
    body = (
        f'--{boundary}\r\nContent-Disposition: form-data; name="q"; filename="a.bin"\r\n'
        f"Content-Type: application/octet-stream\r\n\r\n\x00\x01binary\r\n--{boundary}--\r\n"
    ).encode()
    status, got = _raw(server.url + "/translate", body, f"multipart/form-data; boundary={boundary}")
    assert status == 400 and "not a file" in got["error"]
    status, got = _raw(server.url + "/nowhere", None, None, method="GET")
    assert status == 404 and got == {"error": "Not Found"}
    status, got = _raw(server.url + "/translate", None, None, method="GET")
    assert status == 405 and "error" in got
    assert server.health()["status"] == "ok"


# ---------------------------------------------------------------------- docs and spec
def test_docs_are_self_contained_and_spec_is_openapi_3(server: Server) -> None:
    with urllib.request.urlopen(server.url + "/docs", timeout=30) as r:
        page = r.read().decode()
    assert "SwaggerUIBundle" in page and "http://" not in page and "https://" not in page
    for asset in ("swagger-ui-bundle.js", "swagger-ui.css"):
        with urllib.request.urlopen(f"{server.url}/docs/assets/{asset}", timeout=30) as r:
            assert r.status == 200 and len(r.read()) > 10_000
    with urllib.request.urlopen(server.url + "/spec", timeout=30) as r:
        spec = json.loads(r.read())
    assert spec["openapi"].startswith("3.0")
    props = spec["paths"]["/translate"]["post"]["requestBody"]["content"]["application/json"]
    for ext in ("scores", "attention", "attention_layer", "attention_head", "attention_all"):
        assert ext in props["schema"]["properties"]


# ---------------------------------------------------------------------- fuzzing
@pytest.fixture(scope="module")
def api_schema(server: Server) -> Any:
    schemathesis = pytest.importorskip("schemathesis")
    return schemathesis.openapi.from_url(server.url + "/spec")


def _fuzz_schema() -> Any:
    try:
        import schemathesis
    except ImportError:  # pragma: no cover - schemathesis is in the test extra
        return None
    return schemathesis.pytest.from_fixture("api_schema")


_schema = _fuzz_schema()

if _schema is not None:
    from hypothesis import HealthCheck, settings
    from schemathesis.checks import not_a_server_error
    from schemathesis.specs.openapi.checks import (
        content_type_conformance,
        response_schema_conformance,
        status_code_conformance,
    )

    @_schema.parametrize()
    @settings(
        max_examples=25,
        deadline=None,
        suppress_health_check=list(HealthCheck),
        derandomize=True,
    )
    def test_fuzz_from_the_openapi_document(case: Any) -> None:
        """No 5xx, and every answer as the document declares it (bounded, reproducible)."""
        case.call_and_validate(
            timeout=120,
            checks=[
                not_a_server_error,
                status_code_conformance,
                content_type_conformance,
                response_schema_conformance,
            ],
        )
