"""Make the pictures of the attention viewer (README, docs/attention.md) from the shipped model.

    python tools/readme_figures.py [--out docs]

Writes ``docs/cross-attention.png`` (the large cross-attention heatmap) and, when headless
Chromium is installed, ``docs/viewer.png`` (a screenshot of the interactive page).
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
from pathlib import Path

SENTENCE = "The cat is sleeping on the sofa."


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=Path("docs"))
    ap.add_argument("--sentence", default=SENTENCE)
    ap.add_argument("--model", type=Path, default=None, help="default: the shipped model")
    args = ap.parse_args()

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from attenzione.translator.explain import explanation_data
    from attenzione.translator.translator import Translator
    from attenzione.viz import plot_attention, save_html

    args.out.mkdir(parents=True, exist_ok=True)
    maps = Translator.from_pretrained(args.model).attention(args.sentence)
    print("translation:", maps.translation)
    last = maps.layers("cross") - 1
    fig = plot_attention(maps, "cross", layer=last)
    fig.savefig(args.out / "cross-attention.png", dpi=110)
    plt.close(fig)
    print("wrote", args.out / "cross-attention.png")

    browser, driver_path = shutil.which("chromium"), shutil.which("chromedriver")
    if browser is None or driver_path is None:
        print("no headless Chromium: skipping the viewer screenshot")
        return
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.by import By

    with tempfile.TemporaryDirectory() as tmp:
        page = save_html(
            maps,
            Path(tmp) / "attention.html",
            explain=explanation_data(maps, "cross", last, 0, 1),
        )
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
            "--window-size=1100,900",
        ):
            opts.add_argument(flag)
        driver = webdriver.Chrome(service=Service(driver_path), options=opts)
        try:
            driver.get(page.as_uri())
            tokens = driver.find_elements(By.CSS_SELECTOR, "svg.lines text.qtok")
            ActionChains(driver).move_to_element(tokens[min(1, len(tokens) - 1)]).perform()
            driver.save_screenshot(str(args.out / "viewer.png"))
        finally:
            driver.quit()
    print("wrote", args.out / "viewer.png")


if __name__ == "__main__":
    main()
