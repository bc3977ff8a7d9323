"""Screenshots of the live page's panels "inside the model", from the shipped model.

    python tools/inside_screenshots.py [--out docs]

Starts ``attenzione serve`` on a free port of 127.0.0.1 and, with headless Chromium
(chromium + chromedriver, selenium), translates seed 000's sentence and writes:

- ``journey-desktop.png``: the journey of decoder position 5 (a tap on the sixth piece of the
  translation) at 1366 px, the input group, layer 0's self-attention (its causal mask) and
  the output group open;
- ``journey-phone.png``: the same journey at 390 px (touch), its first steps;
- ``training-view.png``: the reference teacher-forced, position by position, and the loss;
- ``masks.png``: the three masks of the padded batch of two sentences;
- ``occlusion.png``: each word removed beside the best-agreeing head's cross-attention, and
  every head's agreement.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from player_screenshots import chrome, emulate, served_page, shoot  # noqa: E402

SENTENCE = "The transformer architecture was introduced in 2017."
REFERENCE = "L'architettura del Transformer è stata introdotta nel 2017."
TOKEN = 5
SRC = Path(__file__).resolve().parents[1] / "src"


def body_is(name: str, value: str) -> Any:
    return lambda d: d.find_element("tag name", "body").get_attribute(name) == value


def translated(driver: Any, url: str, width: int, mobile: bool) -> Any:
    """The live page at ``width`` with SENTENCE translated and its attention shown."""
    from selenium.webdriver.support.ui import WebDriverWait

    emulate(driver, width, 1000, mobile)
    driver.get(url + "/")
    driver.find_element("id", "input").send_keys(SENTENCE)
    wait = WebDriverWait(driver, 180)
    wait.until(body_is("data-attention", "done"))
    return wait


def journey(driver: Any, wait: Any) -> None:
    driver.find_elements("css selector", "#tgt-tokens .tok")[TOKEN].click()
    wait.until(lambda d: d.find_element("tag name", "body").get_attribute("data-journey") == "done")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=Path("docs"))
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp, served_page(Path(tmp)) as url:
        driver = chrome()
        try:
            # the journey at 1366 px: layer 0's self-attention open too (the causal mask)
            wait = translated(driver, url, 1366, False)
            journey(driver, wait)
            driver.execute_script(
                'document.querySelector("details.in-group'
                "[data-group='layer 0 · self-attention']\").open = true"
            )
            print("journey of", driver.find_element("id", "jy-title").text)
            shoot(
                driver,
                args.out / "journey-desktop.png",
                1366,
                False,
                "#journey-section",
                "#journey",
            )
            # the training view and the masks (the same answer), then occlusion
            driver.find_element("id", "reference").send_keys(REFERENCE)
            driver.find_element("id", "training-go").click()
            wait.until(body_is("data-training", "done"))
            shoot(
                driver,
                args.out / "training-view.png",
                1366,
                False,
                "#training-heading",
                "#training-view",
            )
            shoot(driver, args.out / "masks.png", 1366, False, "#masks-heading", "#masks")
            driver.find_element("id", "occlusion-go").click()
            wait.until(body_is("data-occlusion", "done"))
            shoot(
                driver, args.out / "occlusion.png", 1366, False, "#occlusion-section", "#occlusion"
            )
            # the journey on a phone: its head and the input group
            wait = translated(driver, url, 390, True)
            journey(driver, wait)
            shoot(
                driver,
                args.out / "journey-phone.png",
                390,
                True,
                "#journey-section",
                "details.in-group[data-group='input']",
            )
        finally:
            driver.quit()


if __name__ == "__main__":
    main()
