"""The page at ``/`` in headless Chromium: type English, read Italian, explore the attention.

Set ``ATTENZIONE_SCREENSHOT=path.png`` to keep the screenshot the test takes (docs/service.md's
``docs/serve.png`` is made that way).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from serve_helpers import Server, chrome, post, running_server


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    tmp = tmp_path_factory.mktemp("page")
    with running_server(tmp, "--beam", "4", "--frontend-timeout", "200") as s:
        yield s


@pytest.mark.timeout(300)
def test_live_page_in_headless_chromium(server: Server, tmp_path: Path) -> None:
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select, WebDriverWait

    driver = chrome()
    try:
        driver.get(server.url + "/")
        body = driver.find_element(By.TAG_NAME, "body")
        assert body.get_attribute("data-state") == "idle"
        assert driver.find_element(By.ID, "lang-pair").text == "English → Italian"
        sentence = "The cat is sleeping on the sofa."
        driver.find_element(By.ID, "input").send_keys(sentence)
        wait = WebDriverWait(driver, 180)
        wait.until(lambda d: body.get_attribute("data-state") == "done")
        _, direct = post(server.url + "/translate", {"q": sentence, "source": "en", "target": "it"})
        assert driver.find_element(By.ID, "output").text == direct["translatedText"]
        assert len(driver.find_elements(By.CSS_SELECTOR, "#sentences tr")) == 1
        assert driver.find_elements(By.CSS_SELECTOR, "#alternatives li")
        assert driver.find_element(By.ID, "meta-conf").text.endswith("%")
        # the viewer shows the last layer's cross-attention, averaged over heads
        assert body.get_attribute("data-selection") == "cross/2/avg/lines"
        assert driver.find_element(By.ID, "source").text == sentence
        # hover an Italian token: the English tokens light up by their attention weight
        chips = driver.find_elements(By.CSS_SELECTOR, "#tgt-tokens .tok")
        ActionChains(driver).move_to_element(chips[1]).perform()
        assert body.get_attribute("data-lit") == "t1"
        weights = [
            float(c.get_attribute("data-w"))
            for c in driver.find_elements(By.CSS_SELECTOR, "#src-tokens .tok")
        ]
        assert abs(sum(weights) - 1) < 0.01 and max(weights) > 0.3
        # the lines view: hovering a query keeps only its lines
        qtok = driver.find_elements(By.CSS_SELECTOR, "svg.lines text.qtok")[1]
        ActionChains(driver).move_to_element(qtok).perform()
        assert body.get_attribute("data-focus") == "q1"
        shown = [
            ln
            for ln in driver.find_elements(By.CSS_SELECTOR, "svg.lines line")
            if ln.value_of_css_property("display") != "none"
        ]
        assert shown and all(ln.get_attribute("data-q") == "1" for ln in shown)
        # switch head
        Select(driver.find_element(By.ID, "head")).select_by_value("1")
        assert body.get_attribute("data-selection") == "cross/2/1/lines"
        assert "head 1" in driver.find_element(By.ID, "status").text
        # keep typing: a second sentence, its own row, its own attention
        driver.find_element(By.ID, "input").send_keys(" I am hungry.")
        wait.until(lambda d: len(d.find_elements(By.CSS_SELECTOR, "#sentences tr")) == 2)
        wait.until(lambda d: body.get_attribute("data-state") == "done")
        driver.find_elements(By.CSS_SELECTOR, "#sentences tr")[1].click()
        assert driver.find_element(By.ID, "source").text == "I am hungry."
        assert body.get_attribute("data-selection") == "cross/2/1/lines"  # choice kept
        driver.find_elements(By.CSS_SELECTOR, "#sentences tr")[0].click()
        ActionChains(driver).move_to_element(
            driver.find_elements(By.CSS_SELECTOR, "#tgt-tokens .tok")[1]
        ).perform()
        # nothing but this server was asked for anything
        urls = driver.execute_script(
            "return performance.getEntriesByType('resource').map(e => e.name)"
        )
        assert urls and all(u.startswith(server.url) for u in urls), urls
        shot = tmp_path / "serve.png"
        driver.save_screenshot(str(shot))
        if os.environ.get("ATTENZIONE_SCREENSHOT"):
            shutil.copy(shot, os.environ["ATTENZIONE_SCREENSHOT"])
        errors = [e for e in driver.get_log("browser") if e["level"] == "SEVERE"]
        assert errors == [], errors
    finally:
        driver.quit()


def test_page_and_docs_load_nothing_from_the_network(server: Server) -> None:
    import re
    import urllib.request

    for path in ("/", "/docs"):
        with urllib.request.urlopen(server.url + path, timeout=30) as r:
            page = r.read().decode()
        assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", page), path
        assert 'fetch("http' not in page


@pytest.mark.timeout(180)
def test_interactive_docs_render_the_spec_in_headless_chromium(server: Server) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    driver = chrome()
    try:
        driver.get(server.url + "/docs")
        WebDriverWait(driver, 60).until(
            lambda d: len(d.find_elements(By.CSS_SELECTOR, ".opblock")) == 5
        )
        paths = {e.text for e in driver.find_elements(By.CSS_SELECTOR, ".opblock-summary-path")}
        assert {"/translate", "/detect", "/languages", "/frontend/settings", "/health"} <= paths
        assert not driver.find_elements(By.CSS_SELECTOR, ".errors-wrapper")  # spec accepted
        errors = [e for e in driver.get_log("browser") if e["level"] == "SEVERE"]
        assert errors == [], errors
    finally:
        driver.quit()
