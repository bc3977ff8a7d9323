"""The service under pressure: a full queue, keys and limits, and SIGTERM while busy."""

from __future__ import annotations

import asyncio
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from attenzione.serve import Batcher, Languages, Service, Settings, create_app
from attenzione.translator.translator import Translator
from serve_helpers import Server, post, running_server


@pytest.fixture(scope="module")
def translator() -> Translator:
    return Translator.from_pretrained()


def _service(translator: Translator, *, queue: int = 512, **settings: Any) -> Service:
    return Service(
        Batcher(translator, max_queue=queue), Languages(("en", "it")), Settings(**settings)
    )


def test_a_full_queue_answers_503_at_once_and_recovers(translator: Translator) -> None:
    """The worker is held back (not started) so the queue fills deterministically."""
    service = _service(translator, queue=4)
    app = create_app(service)  # no lifespan here: the worker starts when the test says so
    body = {"q": "I am hungry. You are tired. We are late.", "source": "en", "target": "it"}

    async def run() -> tuple[httpx.Response, httpx.Response, dict[str, Any]]:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
            first = asyncio.create_task(client.post("/translate", json=body))  # 3 of 4 places
            while service.batcher.snapshot()["queued_sentences"] < 3:
                await asyncio.sleep(0.01)
            second = await client.post("/translate", json=body)  # 3 more do not fit
            stats = (await client.get("/health")).json()
            service.batcher.start()
            return await first, second, stats

    try:
        first, second, stats = asyncio.run(run())
    finally:
        service.batcher.stop()
    assert second.status_code == 503 and second.headers["retry-after"] == "1"
    assert "queue is full" in second.json()["error"]
    assert stats["worker"]["rejected_requests"] == 1 and stats["in_flight_requests"] == 1
    assert first.status_code == 200 and len(first.json()["translatedText"]) > 10


def test_request_limit_per_client(translator: Translator) -> None:
    service = _service(translator, req_limit=2)
    app = create_app(service)

    async def run() -> tuple[list[httpx.Response], httpx.Response]:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
            got = [
                await client.post("/detect", data={"q": "Where is the station?"}) for _ in range(3)
            ]
            return got, await client.get("/languages")

    got, languages = asyncio.run(run())
    assert [r.status_code for r in got] == [200, 200, 429]
    assert got[2].json() == {"error": "Slowdown: 2 per 1 minute"}
    assert got[2].headers["retry-after"] == "60"
    assert languages.status_code == 200  # exempt, as in LibreTranslate


@pytest.fixture(scope="module")
def keyed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    tmp = tmp_path_factory.mktemp("keys")
    keys = tmp / "keys.txt"
    keys.write_text("# operators' keys\ngood-key\nlimited-key 2   # a small client\n")
    with running_server(tmp, "--api-keys", str(keys), "--beam", "1") as s:
        yield s


def test_api_keys_are_required_checked_and_limited(keyed: Server) -> None:
    from deep_translator import LibreTranslator
    from deep_translator.exceptions import AuthorizationException
    from libretranslate_aio import ForbiddenError, LibreTranslate, RateLimitError

    url = keyed.url + "/translate"
    base = {"q": "I am hungry.", "source": "en", "target": "it"}
    status, body = post(url, base)
    assert status == 400 and "API key" in body["error"]
    status, body = post(url, {**base, "api_key": "good-kez"})
    assert status == 403 and body == {"error": "Invalid API key"}
    status, body = post(url, {**base, "api_key": "good-key"})
    assert status == 200 and body["translatedText"]
    status, body = post(url, {**base, "apiKey": "good-key"})  # the npm client's spelling
    assert status == 200

    good = LibreTranslator(source="en", target="it", custom_url=keyed.url + "/", api_key="good-key")
    assert good.translate("I am hungry.")
    bad = LibreTranslator(source="en", target="it", custom_url=keyed.url + "/", api_key="nope")
    with pytest.raises(AuthorizationException):
        bad.translate("I am hungry.")
    with LibreTranslate(keyed.url, api_key="nope") as lt, pytest.raises(ForbiddenError):
        lt.translate("I am hungry.", "en", "it")
    with LibreTranslate(keyed.url, api_key="limited-key") as lt:
        lt.translate("I am hungry.", "en", "it")
        lt.translate("I am hungry.", "en", "it")
        with pytest.raises(RateLimitError, match="2 per 1 minute"):
            lt.translate("I am hungry.", "en", "it")
        settings = lt.frontend_settings()
        assert settings.api_keys and settings.key_required
        assert [x.code for x in lt.languages()] == ["en", "it"]  # no key needed here


def test_sigterm_finishes_requests_in_flight(tmp_path: Path) -> None:
    text = " ".join(
        f"The {a} {n} is sleeping on the sofa of my {b} friend."
        for a in ("old", "small", "black", "happy")
        for n, b in (("cat", "best"), ("dog", "new"), ("bird", "old"))
    )  # 12 sentences a request
    with running_server(tmp_path, "--beam", "4") as server:
        results: list[tuple[int, Any]] = []
        lock = threading.Lock()

        def call() -> None:
            got = post(server.url + "/translate", {"q": text, "source": "en", "target": "it"})
            with lock:
                results.append(got)

        threads = [threading.Thread(target=call) for _ in range(4)]
        for t in threads:
            t.start()
        deadline = time.monotonic() + 120
        while server.health()["in_flight_requests"] < 4:
            assert time.monotonic() < deadline, "the requests never arrived"
            time.sleep(0.05)
        server.proc.send_signal(signal.SIGTERM)
        for t in threads:
            t.join(300)
        assert server.proc.wait(120) == 0  # a clean stop, after every answer went out
        log = server.output()
    assert "finishing 4 request(s) in flight" in log, log
    assert len(results) == 4 and all(status == 200 for status, _ in results), results
    assert all(body["translatedText"].count(".") >= 12 for _, body in results)
