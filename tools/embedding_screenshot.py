"""A screenshot of the live page's panel "The model's own embedding space" (shipped model).

    python tools/embedding_screenshot.py [--out docs] [--width 1366]

Starts ``attenzione serve`` on a free port of 127.0.0.1 and, with headless Chromium
(chromium + chromedriver, selenium), translates seed 000's sentence (the panels "inside the
model" appear with a translation), asks for the nearest pieces of ``Monday`` and for
``uno − one + two`` in the source table, and writes ``embedding-space.png`` (quantised to 128
colours with Pillow, to keep it small). It prints what the panel shows.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from inside_screenshots import translated  # noqa: E402
from player_screenshots import chrome, served_page, shoot  # noqa: E402

SRC = Path(__file__).resolve().parents[1] / "src"
WORD = "Monday"
ANALOGY = ("uno", "one", "two")


def body_is(name: str, value: str) -> Any:
    return lambda d: d.find_element("tag name", "body").get_attribute(name) == value


def ask(driver: Any, wait: Any) -> None:
    """The nearest pieces of WORD and the answers of ANALOGY, as a user asks for them."""
    field = driver.find_element("id", "emb-word")
    field.send_keys(WORD)
    driver.find_element("id", "emb-nearest-go").click()
    wait.until(body_is("data-emb-nearest", "done"))
    for name, word in zip(("emb-a", "emb-b", "emb-c"), ANALOGY, strict=True):
        driver.find_element("id", name).send_keys(word)
    driver.find_element("id", "emb-analogy-go").click()
    wait.until(body_is("data-emb-analogy", "done"))
    for box in ("emb-nearest", "emb-analogy"):
        rows = driver.find_elements("css selector", f"#{box} li.in-emb-row")
        print(box, [(r.get_attribute("data-piece"), r.get_attribute("data-cosine")) for r in rows])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=Path("docs"))
    ap.add_argument("--width", type=int, default=1366)
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp, served_page(Path(tmp)) as url:
        driver = chrome()
        try:
            mobile = args.width < 600
            wait = translated(driver, url, args.width, mobile)
            ask(driver, wait)
            path = args.out / "embedding-space.png"
            shoot(driver, path, args.width, mobile, "#embeddings-section", "#emb-analogy")
        finally:
            driver.quit()
    from PIL import Image

    with Image.open(path) as image:
        small = image.convert("RGB").quantize(colors=128)
    small.save(path, optimize=True)
    print("quantised", path, path.stat().st_size, "bytes")


if __name__ == "__main__":
    main()
