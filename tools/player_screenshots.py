"""Screenshots of the step-through decoding player, from the shipped model.

    python tools/player_screenshots.py [--out docs] [--sentence "..."]

Writes, with headless Chromium (chromium + chromedriver, selenium):

- ``player-desktop.png``: the saved page (``attenzione attention SENTENCE --trace``, beam 4)
  at 1366 px, a few steps in;
- ``player-phone.png``: the same page at 390 px (touch);
- ``player-live.png``: the live page of ``attenzione serve`` at 1366 px, after picking
  another first word (the new translation beside the old);
- ``player-live-phone.png``: the live page at 390 px (touch), the player loaded;
- ``tour-introdotta.png`` and ``tour-il.png``: docs/attention.md's tour — greedy decoding of
  the sentence at the step that writes the participle's ending, as the model translates it and
  with the prefix "Il" forced.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

SENTENCE = "The transformer architecture was introduced in 2017."
SRC = Path(__file__).resolve().parents[1] / "src"


def chrome() -> Any:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    driver = shutil.which("chromedriver")
    if browser is None or driver is None:
        sys.exit(
            "headless Chromium and chromedriver are needed (Debian: chromium, chromium-driver)"
        )
    opts = webdriver.ChromeOptions()
    opts.binary_location = browser
    for flag in ("--headless", "--no-sandbox", "--disable-gpu", "--window-size=1366,1000"):
        opts.add_argument(flag)
    return webdriver.Chrome(service=Service(driver), options=opts)


def emulate(driver: Any, width: int, height: int, mobile: bool) -> None:
    metrics = {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": mobile}
    driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", metrics)
    driver.execute_cdp_cmd("Emulation.setTouchEmulationEnabled", {"enabled": mobile})


def shoot(driver: Any, path: Path, width: int, mobile: bool, top: str, bottom: str) -> None:
    """A screenshot ``width`` wide from element ``top`` down to the end of ``bottom``."""
    emulate(driver, width, 1000, mobile)
    time.sleep(0.3)
    y0, y1 = driver.execute_script(
        "const a = document.querySelector(arguments[0]).getBoundingClientRect();"
        "const b = document.querySelector(arguments[1]).getBoundingClientRect();"
        "return [a.top + scrollY, b.bottom + scrollY]",
        top,
        bottom,
    )
    height = int(min(4000, y1 - y0 + 24))
    emulate(driver, width, height, mobile)
    driver.execute_script("window.scrollTo(0, arguments[0])", max(0, y0 - 12))
    time.sleep(0.3)
    driver.save_screenshot(str(path))
    print("wrote", path)


def saved_pages(out: Path, sentence: str, tmp: Path, driver: Any) -> None:
    from attenzione.config import search_config
    from attenzione.translator.explain import explanation_data
    from attenzione.translator.translator import Translator
    from attenzione.viz import save_html

    translator = Translator.from_pretrained()
    trace = translator.trace(sentence, search=search_config(4))
    last = trace.maps.layers("cross") - 1
    explain = explanation_data(trace.maps, "cross", last, 0, 0)
    page = save_html(trace.maps, tmp / "attention.html", explain=explain, trace=trace.to_dict())
    print("translation:", trace.translation)
    for width, mobile, name in (
        (1366, False, "player-desktop.png"),
        (390, True, "player-phone.png"),
    ):
        emulate(driver, width, 1000, mobile)
        driver.get(page.as_uri())
        for _ in range(4):
            driver.find_element("id", "pl-next").click()
        shoot(driver, out / name, width, mobile, "h1", "#pl-beam-panel")


def tour_pages(out: Path, sentence: str, tmp: Path, driver: Any) -> None:
    from attenzione.config import search_config
    from attenzione.translator.translator import Translator
    from attenzione.viz import save_html

    translator = Translator.from_pretrained()
    for prefix, name in (("", "tour-introdotta.png"), ("Il", "tour-il.png")):
        trace = translator.trace(sentence, search=search_config(1), prefix=prefix)
        data = trace.to_dict()
        at = next(i for i, s in enumerate(data["steps"]) if s["prefix"][-1:] == ["\u2581introdott"])
        page = save_html(trace.maps, tmp / f"tour-{len(prefix)}.html", trace=data)
        print(f"prefix {prefix!r}: {trace.translation} (step {at})")
        emulate(driver, 1366, 1000, False)
        driver.get(page.as_uri())
        for _ in range(at):
            driver.find_element("id", "pl-next").click()
        shoot(driver, out / name, 1366, False, "#player", ".pl-grid")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def served_page(tmp: Path, *args: str) -> Iterator[str]:
    """``attenzione serve`` (the shipped models, ``args``) on a free port of 127.0.0.1, its
    download area under ``tmp``, once it answers ``/health``: its URL; stopped afterwards."""
    port = free_port()
    env = dict(os.environ, PYTHONPATH=f"{SRC}{os.pathsep}{os.environ.get('PYTHONPATH', '')}")
    env["XDG_CACHE_HOME"] = str(tmp / "cache")
    cmd = [sys.executable, "-m", "attenzione", "serve", "--port", str(port), *args]
    cmd += ["--log-level", "warning", "--frontend-timeout", "200"]
    proc = subprocess.Popen(cmd, env=env)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 180
        while True:
            try:
                with urllib.request.urlopen(url + "/health", timeout=10) as r:
                    json.loads(r.read())
                break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    sys.exit("attenzione serve did not start")
                time.sleep(0.3)
        yield url
    finally:
        proc.terminate()
        proc.wait(60)


def live_page(out: Path, sentence: str, tmp: Path, driver: Any) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    with served_page(tmp, "--beam", "4") as url:
        for width, mobile, name in (
            (1366, False, "player-live.png"),
            (390, True, "player-live-phone.png"),
        ):
            emulate(driver, width, 1000, mobile)
            driver.get(url + "/")

            def body_is(name: str, value: str) -> Any:
                return lambda d: d.find_element(By.TAG_NAME, "body").get_attribute(name) == value

            driver.find_element(By.ID, "input").send_keys(sentence)
            wait = WebDriverWait(driver, 180)
            wait.until(body_is("data-attention", "done"))
            driver.find_element(By.ID, "trace-load").click()
            wait.until(body_is("data-trace", "done"))
            if not mobile:  # another first word: the new translation beside the old
                driver.find_elements(By.CSS_SELECTOR, "#pl-out button")[0].click()
                driver.find_elements(By.CSS_SELECTOR, "#pl-alts button.pl-alt:not(.chosen)")[
                    0
                ].click()
                wait.until(lambda d: d.find_elements(By.ID, "pl-after"))
                wait.until(body_is("data-trace", "done"))
            for _ in range(3):
                driver.find_element(By.ID, "pl-next").click()
            driver.find_elements(By.CSS_SELECTOR, "#pl-out button")[3].click()
            shoot(
                driver,
                out / name,
                width,
                mobile,
                "#player",
                ".pl-grid" if mobile else "#pl-beam-panel",
            )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=Path("docs"))
    ap.add_argument("--sentence", default=SENTENCE)
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    sys.path.insert(0, str(SRC))
    driver = chrome()
    try:
        with tempfile.TemporaryDirectory() as tmp:
            saved_pages(args.out, args.sentence, Path(tmp), driver)
            tour_pages(args.out, SENTENCE, Path(tmp), driver)
            live_page(args.out, args.sentence, Path(tmp), driver)
    finally:
        driver.quit()


if __name__ == "__main__":
    main()
