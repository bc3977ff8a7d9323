"""Work nobody waits for is dropped (issue 64, item 16).

A document request (``/translate_file``) whose client had gone kept the one batching worker
busy to its last paragraph — a 60,000-cue .srt for over six minutes — and a SIGTERM waited
for it. Now the hang-up cancels the request: what it still had queued is dropped unread
(``/health`` counts it), the rest is never queued, the worker is free for the next request,
and a shutdown has nothing of it to wait for. The same holds for a long ``/translate``.

Each test sends a request far longer than the test may take, hangs up once the worker has
started on it, and waits (bounded) for the worker to be free again.
"""

from __future__ import annotations

import signal
import socket
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from attenzione.serve import Batcher, Languages, Service, Settings
from attenzione.serve.files import FileStore
from serve_helpers import running_server, upload, uvicorn_server
from tiny_model import tiny_translator


def _document(lines: int) -> bytes:
    return "".join(f"the cat is here {i}.\n" for i in range(lines)).encode()


def _hang_up_after_it_starts(
    base: str, path: str, request: dict[str, Any], worker: Callable[[], dict[str, Any]]
) -> None:
    """Send the request ``httpx.Request("POST", base + path, **request)`` on a socket of its
    own, wait (bounded) until the worker has decoded a batch of it, then close the socket."""
    req = httpx.Request("POST", base + path, **request)
    body = req.read()
    host = base.split("//", 1)[1]
    head = f"POST {path} HTTP/1.1\r\n" + "".join(
        f"{k}: {v}\r\n" for k, v in req.headers.items()
    )  # host, content-type (with the boundary), content-length
    address, port = host.rsplit(":", 1)
    sock = socket.create_connection((address, int(port)), timeout=30)
    try:
        sock.sendall(head.encode() + b"\r\n" + body)
        deadline = time.monotonic() + 120
        while worker()["batches"] < 1:
            assert time.monotonic() < deadline, "the worker never started on the request"
            time.sleep(0.05)
    finally:
        sock.close()


def _free_again(worker: Callable[[], dict[str, Any]], within: float = 30) -> dict[str, Any]:
    """The worker's counters once it has dropped the hung-up request's work and is idle."""
    deadline = time.monotonic() + within
    while True:
        now = worker()
        # the request is cancelled (what it had queued may be none: it can hang up between
        # two paragraphs) and what it had queued is gone
        if now["cancelled_requests"] and not (now["queued_sentences"] or now["running_sentences"]):
            return now
        assert time.monotonic() < deadline, f"the worker is still busy: {now}"
        time.sleep(0.05)


@pytest.fixture
def service(tmp_path: Path) -> Service:
    return Service(
        Batcher(tiny_translator(), max_queue=256),
        Languages(("en", "it")),
        Settings(file_chars=-1),
        None,
        FileStore(tmp_path / "files", ttl=600),
    )


@pytest.mark.parametrize("route", ["/translate_file", "/translate"])
def test_a_request_whose_client_hung_up_is_dropped_and_the_worker_moves_on(
    service: Service, route: str
) -> None:
    lines = 20_000  # hundreds of batches: far longer than this test waits
    if route == "/translate_file":
        request = upload("long.txt", _document(lines))
    else:  # 100 texts of 200 sentences: one request larger than the whole queue
        text = " ".join(f"The cat is here {i}." for i in range(200))
        request = {"json": {"q": [text] * 100, "source": "en", "target": "it"}}
    with (
        uvicorn_server(service) as address,
        httpx.Client(base_url=f"http://{address}", timeout=60) as client,
    ):

        def worker() -> dict[str, Any]:
            answer: dict[str, Any] = client.get("/health").json()["worker"]
            return answer

        _hang_up_after_it_starts(f"http://{address}", route, request, worker)
        after = _free_again(worker)
        assert after["sentences"] < lines // 4  # the rest was never decoded
        # the next client is answered, and the worker decodes its one sentence only
        r = client.post(
            "/translate", json={"q": "the cat is here.", "source": "en", "target": "it"}
        )
        assert r.status_code == 200, r.text
        assert worker()["sentences"] == after["sentences"] + 1
        assert worker()["failed_batches"] == 0


@pytest.mark.timeout(300)
def test_sigterm_does_not_wait_for_a_document_nobody_waits_for(tmp_path: Path) -> None:
    model = tmp_path / "tiny"
    tiny_translator().save_pretrained(model)
    lines = 150_000  # minutes of decoding
    with running_server(tmp_path, "--model", str(model), "--file-chars", "-1") as server:

        def worker() -> dict[str, Any]:
            answer: dict[str, Any] = server.health()["worker"]
            return answer

        _hang_up_after_it_starts(
            server.url, "/translate_file", upload("subs.txt", _document(lines)), worker
        )
        _free_again(worker)
        server.proc.send_signal(signal.SIGTERM)
        try:
            code = server.proc.wait(30)  # nothing left to finish: it exits at once
        except subprocess.TimeoutExpired:
            pytest.fail(f"SIGTERM waited for the dropped document:\n{server.output()}")
    assert code == 0, server.output()
    assert "finishing 0 request(s) in flight" in server.output()
