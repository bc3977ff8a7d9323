"""What an audit of the service found (issue 39, items 5–8), each held by a test.

Most tests talk to ``create_app`` in process (httpx's ASGI transport); the ones about what
uvicorn does on the wire — proxy headers, a client hanging up, a huge declared body, huge
headers, a slow body — run a real uvicorn server in a thread on 127.0.0.1, configured by the
same :func:`attenzione.cli.serve.server_config` the CLI uses, around the tiny untrained model.
"""

from __future__ import annotations

import asyncio
import logging
import socket
import time
from typing import Any

import httpx
import pytest
from starlette.requests import Request

from attenzione.serve import Batcher, Languages, Service, Settings, create_app
from attenzione.serve.fields import ApiError, get_int, read_fields
from attenzione.serve.limits import KEY_ATTEMPTS_PER_MINUTE, KeyRing
from attenzione.serve.spec import openapi_spec
from serve_helpers import uvicorn_server
from tiny_model import tiny_translator


def _service(**settings: Any) -> Service:
    keys = settings.pop("keys", None)
    return Service(
        Batcher(tiny_translator(), max_queue=64),
        Languages(("en", "it")),
        Settings(**settings),
        keys,
    )


def _asgi(service: Service, client: tuple[str, int] = ("127.0.0.1", 1234)) -> httpx.AsyncClient:
    transport = httpx.ASGITransport(app=create_app(service), client=client)
    return httpx.AsyncClient(transport=transport, base_url="http://test")


def _raw(address: str, data: bytes, *, timeout: float = 30) -> bytes:
    """Send ``data`` on a fresh connection and read what comes back until the server closes
    (or ``timeout`` passes with nothing more: then what came so far)."""
    host, port = address.split(":")
    with socket.create_connection((host, int(port)), timeout=timeout) as s:
        s.sendall(data)
        got = b""
        try:
            while chunk := s.recv(65536):
                got += chunk
        except (TimeoutError, ConnectionResetError):
            pass
        return got


# ---------------------------------------------------------------------- 5: access
def test_forwarded_for_is_ignored_unless_the_proxy_is_named() -> None:
    """By default X-Forwarded-For is not believed, even from 127.0.0.1: a client cannot get
    a fresh rate-limit bucket by naming another address."""

    def two_requests(address: str) -> list[int]:
        codes = []
        for fake in ("10.1.1.1", "10.2.2.2"):
            r = httpx.post(
                f"http://{address}/detect",
                data={"q": "Where is the station?"},
                headers={"X-Forwarded-For": fake},
                timeout=30,
            )
            codes.append(r.status_code)
        return codes

    with uvicorn_server(_service(req_limit=1), forwarded_allow_ips=None) as address:
        assert two_requests(address) == [200, 429]
    # An operator who names the proxy gets each forwarded client its own bucket.
    with uvicorn_server(_service(req_limit=1), forwarded_allow_ips="127.0.0.1") as address:
        assert two_requests(address) == [200, 200]


def test_wrong_api_keys_are_rate_limited_per_address() -> None:
    service = _service(keys=KeyRing({"right-key": None}))
    body = {"q": "Where is the station?"}

    async def run() -> tuple[list[int], int, int]:
        async with _asgi(service) as guesser, _asgi(service, ("10.0.0.9", 1)) as other:
            codes = [
                (await guesser.post("/detect", data={**body, "api_key": f"guess-{i}"})).status_code
                for i in range(KEY_ATTEMPTS_PER_MINUTE + 1)
            ]
            # Over the limit even the right key is refused from that address (else the
            # answer would tell a guesser when it found the key) …
            right = await guesser.post("/detect", data={**body, "api_key": "right-key"})
            # … and other addresses are not affected.
            elsewhere = await other.post("/detect", data={**body, "api_key": "right-key"})
            assert right.json()["error"].startswith("Too many wrong API keys")
            return codes, right.status_code, elsewhere.status_code

    codes, right, elsewhere = asyncio.run(run())
    assert codes == [403] * KEY_ATTEMPTS_PER_MINUTE + [429]
    assert right == 429 and elsewhere == 200


# ---------------------------------------------------------------------- 6: hang-ups
def test_a_client_that_hangs_up_mid_body_is_one_quiet_line(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    with uvicorn_server(_service()) as address:
        host, port = address.split(":")
        with socket.create_connection((host, int(port)), timeout=30) as s:
            s.sendall(
                b"POST /translate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                b"Content-Length: 1000\r\n\r\n" + b'{"q": "half a bo'
            )
            time.sleep(0.2)  # let the server start reading the body before the hang-up
        deadline = time.monotonic() + 30
        while not any("disconnected" in r.getMessage() for r in caplog.records):
            assert time.monotonic() < deadline, [r.getMessage() for r in caplog.records]
            time.sleep(0.05)
    quiet = [r for r in caplog.records if "disconnected" in r.getMessage()]
    assert len(quiet) == 1 and quiet[0].levelno <= logging.INFO and quiet[0].exc_info is None
    loud = [r for r in caplog.records if r.levelno >= logging.WARNING or r.exc_info]
    assert loud == [], [r.getMessage() for r in loud]


# ---------------------------------------------------------------------- 7: protocol
def test_405_names_the_allowed_methods_and_head_answers_get_routes() -> None:
    async def run() -> tuple[httpx.Response, httpx.Response, list[httpx.Response]]:
        async with _asgi(_service()) as client:
            get_on_post = await client.get("/translate")
            post_on_get = await client.post("/languages")
            heads = [
                await client.head(path)
                for path in ("/languages", "/health", "/frontend/settings", "/spec", "/")
            ]
            return get_on_post, post_on_get, heads

    get_on_post, post_on_get, heads = asyncio.run(run())
    assert get_on_post.status_code == 405 and get_on_post.headers["allow"] == "POST"
    assert get_on_post.json() == {"error": "Method Not Allowed"}
    assert post_on_get.status_code == 405
    assert set(post_on_get.headers["allow"].replace(" ", "").split(",")) == {"GET", "HEAD"}
    assert [r.status_code for r in heads] == [200] * len(heads)


def test_empty_q_is_refused_and_the_spec_says_so() -> None:
    """LibreTranslate refuses ``q=""`` (``if not q``: 400 missing q); so do we, and the
    OpenAPI document no longer declares an empty q valid."""
    service = _service()

    async def run() -> list[httpx.Response]:
        async with _asgi(service) as client:
            return [
                await client.post("/translate", json={"q": q, "source": "en", "target": "it"})
                for q in ("", [])
            ]

    for r in asyncio.run(run()):
        assert r.status_code == 400 and "missing q" in r.json()["error"]
    q = openapi_spec(service)["paths"]["/translate"]["post"]["requestBody"]["content"]
    schema = q["application/json"]["schema"]["properties"]["q"]["oneOf"]
    assert schema[0]["minLength"] == 1 and schema[1]["minItems"] == 1


def test_attention_layer_and_head_are_checked_before_decoding() -> None:
    service = _service()
    submitted: list[Any] = []

    def submit(*args: Any, **kw: Any) -> Any:
        submitted.append(args)
        raise AssertionError("submitted to the worker")

    service.batcher.submit = submit  # type: ignore[method-assign]
    base = {"q": "the cat", "source": "en", "target": "it", "attention": True}

    async def run() -> list[httpx.Response]:
        async with _asgi(service) as client:
            return [
                await client.post("/translate", json={**base, **extra})
                for extra in (
                    {"attention_layer": 1},
                    {"attention_layer": -2},
                    {"attention_head": 2},
                )
            ]

    layer, negative, head = asyncio.run(run())
    assert submitted == []
    assert layer.status_code == 400 and "attention_layer 1 is out of range: 0..0" in layer.text
    assert negative.status_code == 400 and "attention_layer -2" in negative.text
    assert head.status_code == 400 and "attention_head 2 is out of range: 0..1" in head.text


def test_a_huge_declared_body_is_refused_from_its_header() -> None:
    with uvicorn_server(_service()) as address:
        got = _raw(
            address,
            b"POST /translate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            b"Content-Length: 1000000000000\r\n\r\n" + b'{"q": "',
        )
    assert got.startswith(b"HTTP/1.1 413 "), got[:200]
    assert b"exceeds" in got


def test_huge_headers_get_431() -> None:
    with uvicorn_server(_service()) as address:
        headers = b"GET /health HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 1_000_000
        got = _raw(address, headers + b"\r\n\r\n")
    assert got.startswith(b"HTTP/1.1 431 "), got[:200]


def test_a_slow_body_is_cut_off_with_408() -> None:
    """Headers, then a body that never finishes: after ``read_timeout`` the server answers
    408 and closes the connection instead of holding it."""
    with uvicorn_server(_service(read_timeout=0.5)) as address:
        got = _raw(
            address,
            b"POST /translate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            b"Content-Length: 100\r\n\r\n" + b'{"q": ',
        )
    assert got.startswith(b"HTTP/1.1 408 "), got[:200]
    assert b"connection: close" in got.lower()


def test_slow_headers_are_cut_off_with_408() -> None:
    with uvicorn_server(_service(), read_timeout=0.5) as address:
        got = _raw(address, b"POST /translate HTTP/1.1\r\nHost: x\r\nX-Slow: ")
    assert got.startswith(b"HTTP/1.1 408 "), got[:200]
    assert b"connection: close" in got.lower()


# ---------------------------------------------------------------------- 8: LibreTranslate
async def _fields(body: bytes, ctype: str, query: bytes = b"") -> dict[str, Any]:
    sent = False

    async def receive() -> dict[str, Any]:
        nonlocal sent
        if sent:
            return {"type": "http.disconnect"}
        sent = True
        return {"type": "http.request", "body": body, "more_body": False}

    scope = {
        "type": "http",
        "method": "POST",
        "path": "/translate",
        "query_string": query,
        "headers": [(b"content-type", ctype.encode())],
    }
    return await read_fields(Request(scope, receive), 1 << 20)


def test_form_and_query_text_gets_unix_line_endings_json_keeps_its_own() -> None:
    form = asyncio.run(
        _fields(b"q=a%0D%0Ab%0Dc&q=d%0D%0A", "application/x-www-form-urlencoded", b"x=1")
    )
    assert form["q"] == ["a\nb\nc", "d\n"]
    query = asyncio.run(_fields(b"", "", b"q=one%0D%0Atwo"))
    assert query["q"] == "one\ntwo"
    data = asyncio.run(_fields(b'{"q": "a\\r\\nb"}', "application/json"))
    assert data["q"] == "a\r\nb"  # as LibreTranslate: JSON text is left as sent


@pytest.mark.parametrize(
    ("value", "expected"),
    [(2, 2), (2.5, 2), (2.9, 2), (True, 1), (False, 0), ("2", 2), (" 3 ", 3), ("+1", 1)],
)
def test_alternatives_is_read_as_pythons_int(value: Any, expected: int) -> None:
    assert get_int({"alternatives": value}, "alternatives", 0, loose=True) == expected


@pytest.mark.parametrize("value", ["2.5", "1e3", "two", [1], {"a": 1}, float("nan")])
def test_alternatives_pythons_int_refuses_are_400(value: Any) -> None:
    with pytest.raises(ApiError, match="alternatives parameter is not a number") as err:
        get_int({"alternatives": value}, "alternatives", 0, loose=True)
    assert err.value.status == 400


def test_suggest_answers_403_as_a_server_with_suggestions_off() -> None:
    service = _service()

    async def run() -> httpx.Response:
        async with _asgi(service) as client:
            return await client.post("/suggest", data={"q": "a", "s": "b", "source": "en"})

    r = asyncio.run(run())
    assert r.status_code == 403
    assert r.json() == {"error": "Suggestions are disabled on this server."}
    assert "403" in openapi_spec(service)["paths"]["/suggest"]["post"]["responses"]
