"""Start ``attenzione serve`` as a real process on 127.0.0.1 for the tests, and stop it."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

SRC = str(Path(__file__).resolve().parents[1] / "src")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Server:
    url: str
    proc: subprocess.Popen[str]
    log: Path

    def health(self) -> dict[str, Any]:
        with urllib.request.urlopen(self.url + "/health", timeout=30) as r:
            data: dict[str, Any] = json.loads(r.read())
            return data

    def output(self) -> str:
        return self.log.read_text(encoding="utf-8", errors="replace")


@contextmanager
def running_server(tmp: Path, *args: str, threads: int = 1) -> Iterator[Server]:
    """A server with the shipped model (and ``args``), ready to answer; stopped afterwards
    (SIGTERM). Its download area is ``tmp/cache/attenzione/files``."""
    port = free_port()
    env = dict(os.environ)
    env["PYTHONPATH"] = SRC + os.pathsep + env.get("PYTHONPATH", "")
    env.setdefault("OMP_NUM_THREADS", str(threads))
    # translated files wait in the user's cache directory: the test's own, so that two
    # servers started on the same ``tmp`` share one download area (and nothing is left in ~)
    env["XDG_CACHE_HOME"] = str(tmp / "cache")
    log = tmp / f"serve-{port}.log"
    cmd = [sys.executable, "-m", "attenzione", "serve", "--port", str(port)]
    cmd += [
        "--threads",
        str(threads),
        "--log-level",
        os.environ.get("ATTENZIONE_TEST_LOG", "warning"),
        *args,
    ]
    with log.open("w") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=env, text=True)
    server = Server(f"http://127.0.0.1:{port}", proc, log)
    try:
        deadline = time.monotonic() + 180
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"attenzione serve exited early:\n{server.output()}")
            try:
                server.health()
                break
            except OSError:
                if time.monotonic() > deadline:
                    msg = f"attenzione serve did not start:\n{server.output()}"
                    raise RuntimeError(msg) from None
                time.sleep(0.2)
        yield server
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(60)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def post(url: str, body: Any, timeout: float = 120) -> tuple[int, Any]:
    """POST JSON; (status, decoded JSON body) whatever the status."""
    req = urllib.request.Request(
        url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"}
    )
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"null")


def chrome(width: int = 1280, height: int = 1500) -> Any:
    """Headless Chromium through selenium, or skip the test saying what is missing."""
    import shutil

    import pytest

    webdriver = pytest.importorskip("selenium.webdriver", reason="selenium is not installed")
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    driver_path = shutil.which("chromedriver")
    if browser is None or driver_path is None:
        pytest.skip(
            "headless Chromium (Debian packages chromium, chromium-driver) is not installed"
        )
    from selenium.webdriver.chrome.service import Service as DriverService

    opts = webdriver.ChromeOptions()
    opts.binary_location = browser
    for flag in (
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--disable-dev-shm-usage",
        f"--window-size={width},{height}",
    ):
        opts.add_argument(flag)
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    return webdriver.Chrome(service=DriverService(driver_path), options=opts)


@contextmanager
def uvicorn_server(service: Any, **options: Any) -> Iterator[str]:
    """A real uvicorn server around ``service`` (an :class:`attenzione.serve.Service`) in a
    thread, on a free port of 127.0.0.1, configured as the CLI configures it; its address
    (``host:port``); stopped on the way out."""
    import uvicorn

    from attenzione.cli.serve import server_config
    from attenzione.serve import create_app

    port = free_port()
    config = server_config(
        create_app(service), host="127.0.0.1", port=port, log_level="debug", **options
    )
    config.log_config = None  # leave the test's logging (caplog) alone
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 60
    while not server.started:
        assert thread.is_alive() and time.monotonic() < deadline, "uvicorn did not start"
        time.sleep(0.02)
    try:
        yield f"127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(30)


def with_worker(service: Any, coro: Any) -> Any:
    """Run one of ``service``'s coroutines to its answer, with its batcher's worker running."""
    import asyncio

    async def run() -> Any:
        service.batcher.start()
        try:
            return await coro
        finally:
            service.batcher.stop()

    return asyncio.run(run())


@contextmanager
def service_client(service: Any) -> Iterator[Any]:
    """A real server around ``service`` on 127.0.0.1 (:func:`uvicorn_server`), and an
    ``httpx.Client`` of it."""
    import httpx

    with (
        uvicorn_server(service) as address,
        httpx.Client(base_url=f"http://{address}", timeout=120) as client,
    ):
        yield client


def upload(name: str, data: bytes, **fields: str) -> dict[str, Any]:
    """``client.post("/translate_file", **upload(...))``'s keywords: the file, en→it."""
    return {"files": {"file": (name, data)}, "data": {"source": "en", "target": "it", **fields}}
