"""The page at ``/`` in headless Chromium: type English, read Italian, explore the attention.

The page translates the text without attention and asks for the attention of the one
sentence the viewer shows; what it asks is seen by wrapping ``window.fetch`` (``SPY``), which
can also hold requests back, to see the page while it waits and to make answers arrive late.

Set ``ATTENZIONE_SCREENSHOTS=docs`` to save ``page-desktop.png`` (1280×800) and
``page-phone.png`` (390×844) into that folder (docs/service.md shows them).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from serve_helpers import Server, chrome, post, running_server

# Records every request the page makes (its JSON body) and, while window.__hold.translate or
# window.__hold.attention is true, holds those requests back until window.__release(q).
SPY = """
window.__requests = []; window.__held = []; window.__hold = {translate: false, attention: false};
const realFetch = window.fetch;
window.fetch = async function (url, init) {
  const body = init && typeof init.body === "string" ? JSON.parse(init.body) : null;
  const rec = {url: String(url), body: body, done: false};
  window.__requests.push(rec);
  const kind = body && body.attention_all ? "attention" : "translate";
  if (window.__hold[kind]) await new Promise((go) => window.__held.push({q: body.q, go: go}));
  try { return await realFetch.call(this, url, init); } finally { rec.done = true; }
};
window.__release = (q) => {
  const keep = [];
  for (const h of window.__held) { if (q === undefined || h.q === q) h.go(); else keep.push(h); }
  window.__held = keep;
};
"""
SENTENCE = "The cat is sleeping on the sofa."


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    tmp = tmp_path_factory.mktemp("page")
    with running_server(tmp, "--beam", "4", "--frontend-timeout", "200") as s:
        yield s


@pytest.fixture(scope="module")
def strict_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """A key is required, and a text may have at most 60 characters."""
    tmp = tmp_path_factory.mktemp("strict")
    keys = tmp / "keys.txt"
    keys.write_text("right-key\n")
    args = ("--api-keys", str(keys), "--char-limit", "60", "--frontend-timeout", "200")
    with running_server(tmp, *args) as s:
        yield s


def bodies(driver: Any, kind: str) -> list[dict[str, Any]]:
    """The JSON bodies the page has sent: ``translate`` (the text) or ``attention``."""
    sent = driver.execute_script("return window.__requests.map(r => r.body)")
    return [b for b in sent if bool(b.get("attention_all")) == (kind == "attention")]


def screenshot(driver: Any, name: str, width: int, height: int, mobile: bool) -> None:
    """Save docs' screenshot ``name`` when ATTENZIONE_SCREENSHOTS names a folder."""
    folder = os.environ.get("ATTENZIONE_SCREENSHOTS")
    if not folder:
        return
    emulate(driver, width, height, mobile)
    driver.execute_script("window.scrollTo(0, 0)")
    driver.save_screenshot(str(Path(folder) / name))


def emulate(driver: Any, width: int, height: int, mobile: bool) -> None:
    metrics = {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": mobile}
    driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", metrics)


def select_all_and_delete(element: Any) -> None:
    from selenium.webdriver.common.keys import Keys

    element.send_keys(Keys.CONTROL, "a")
    element.send_keys(Keys.DELETE)


@pytest.mark.timeout(300)
def test_live_page_in_headless_chromium(server: Server) -> None:
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select, WebDriverWait

    driver = chrome()
    try:
        driver.get(server.url + "/")
        driver.execute_script(SPY)
        body = driver.find_element(By.TAG_NAME, "body")
        box = driver.find_element(By.ID, "input")
        assert body.get_attribute("data-state") == "idle"
        assert driver.find_element(By.ID, "lang-pair").text == "English → Italian"
        # the box holds /frontend/settings' charLimit characters, and counts them
        assert box.get_attribute("maxlength") == "5000"
        assert driver.find_element(By.ID, "counter").text == "0 / 5000"
        box.send_keys(SENTENCE)
        wait = WebDriverWait(driver, 180)
        wait.until(lambda d: body.get_attribute("data-state") == "done")
        assert driver.find_element(By.ID, "counter").text == f"{len(SENTENCE)} / 5000"
        _, direct = post(server.url + "/translate", {"q": SENTENCE, "source": "en", "target": "it"})
        assert driver.find_element(By.ID, "output").text == direct["translatedText"]
        assert len(driver.find_elements(By.CSS_SELECTOR, "#sentences tr")) == 1
        assert driver.find_elements(By.CSS_SELECTOR, "#alternatives li")
        assert driver.find_element(By.ID, "alternatives-label").is_displayed()
        assert driver.find_element(By.ID, "meta-conf").text.endswith("%")
        # the text is translated without attention; the viewer then asks for its sentence's
        wait.until(lambda d: body.get_attribute("data-attention") == "done")
        texts = bodies(driver, "translate")
        assert texts and all(not k.startswith("attention") for b in texts for k in b), texts
        assert [b["q"] for b in bodies(driver, "attention")] == [SENTENCE]
        # the viewer shows the last layer's cross-attention, averaged over heads
        assert body.get_attribute("data-selection") == "cross/2/avg/lines"
        assert driver.find_element(By.ID, "source").text == SENTENCE
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
        # keep typing: a second sentence, its own row; the first's maps are not asked again
        box.send_keys(" I am hungry.")
        wait.until(lambda d: len(d.find_elements(By.CSS_SELECTOR, "#sentences tr")) == 2)
        wait.until(lambda d: body.get_attribute("data-state") == "done")
        wait.until(lambda d: body.get_attribute("data-attention") == "done")
        assert [b["q"] for b in bodies(driver, "attention")] == [SENTENCE]
        # selecting the second sentence asks for its attention, and only its
        rows = driver.find_elements(By.CSS_SELECTOR, "#sentences tr")
        rows[1].click()
        wait.until(lambda d: d.find_element(By.ID, "source").text == "I am hungry.")
        wait.until(lambda d: body.get_attribute("data-attention") == "done")
        assert [b["q"] for b in bodies(driver, "attention")] == [SENTENCE, "I am hungry."]
        # translated alone, the sentence gets the translation it got inside the text
        row_translation = rows[1].find_elements(By.TAG_NAME, "td")[1].text
        assert driver.find_element(By.ID, "translation").text == row_translation
        assert body.get_attribute("data-selection") == "cross/2/1/lines"  # choice kept
        # back to the first: drawn from what the page kept, nothing asked
        rows[0].click()
        assert driver.find_element(By.ID, "source").text == SENTENCE
        assert len(bodies(driver, "attention")) == 2
        ActionChains(driver).move_to_element(
            driver.find_elements(By.CSS_SELECTOR, "#tgt-tokens .tok")[1]
        ).perform()
        # nothing but this server was asked for anything
        urls = driver.execute_script(
            "return performance.getEntriesByType('resource').map(e => e.name)"
        )
        assert urls and all(u.startswith(server.url) for u in urls), urls
        screenshot(driver, "page-desktop.png", 1280, 800, mobile=False)
        errors = [e for e in driver.get_log("browser") if e["level"] == "SEVERE"]
        assert errors == [], errors
        # an empty box: nothing of the last translation is left, the label included
        n_sent = len(driver.execute_script("return window.__requests"))
        select_all_and_delete(box)
        wait.until(lambda d: body.get_attribute("data-state") == "idle")
        assert driver.find_element(By.ID, "output").text == ""
        assert not driver.find_element(By.ID, "alternatives-label").is_displayed()
        assert not driver.find_elements(By.CSS_SELECTOR, "#alternatives li, #sentences tr")
        assert not driver.find_element(By.ID, "viewer-section").is_displayed()
        assert driver.find_element(By.ID, "counter").text == "0 / 5000"
        assert len(driver.execute_script("return window.__requests")) == n_sent
    finally:
        driver.quit()


@pytest.mark.timeout(300)
def test_busy_page_shows_only_answers_for_the_text_in_the_box(server: Server) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    def held(d: Any) -> list[str]:
        return list(d.execute_script("return window.__held.map(h => h.q)"))

    def finished(d: Any, q: str) -> bool:
        """Every request the page made for ``q`` has its answer (or was aborted)."""
        script = "return window.__requests.every(r => r.body.q !== arguments[0] || r.done)"
        return bool(d.execute_script(script, q))

    driver = chrome()
    wait = WebDriverWait(driver, 180)
    try:
        driver.get(server.url + "/")
        driver.execute_script(SPY + "window.__hold = {translate: true, attention: true};")
        body = driver.find_element(By.TAG_NAME, "body")
        box = driver.find_element(By.ID, "input")
        output = driver.find_element(By.ID, "output")
        busy = driver.find_element(By.ID, "busy")
        assert busy.get_attribute("role") == "status" and busy.text == ""
        # while the answer is on its way the page says so
        box.send_keys(SENTENCE)
        wait.until(lambda d: SENTENCE in held(d))
        assert body.get_attribute("data-state") == "translating"
        assert busy.is_displayed() and busy.text == "Translating…"
        assert output.get_attribute("aria-busy") == "true"
        driver.execute_script("window.__release()")
        wait.until(lambda d: body.get_attribute("data-state") == "done")
        assert output.text and busy.text == "" and output.get_attribute("aria-busy") == "false"
        assert driver.find_element(By.ID, "alternatives-label").is_displayed()
        # then the attention of the first sentence, with its own indicator
        wait.until(lambda d: SENTENCE in held(d))
        assert body.get_attribute("data-attention") == "loading"
        assert "Loading" in driver.find_element(By.ID, "attention-note").text
        assert driver.find_element(By.ID, "attention-note").is_displayed()
        # typing on: the translation of the old text goes at once, before the new one comes
        box.send_keys(" I am")
        assert output.text == ""
        assert not driver.find_element(By.ID, "alternatives-label").is_displayed()
        assert not driver.find_elements(By.CSS_SELECTOR, "#alternatives li, #sentences tr")
        assert not driver.find_element(By.ID, "viewer-section").is_displayed()
        assert busy.text == "Translating…"
        assert body.get_attribute("data-attention") == ""
        driver.execute_script("window.__release(arguments[0])", SENTENCE)  # was aborted
        wait.until(lambda d: finished(d, SENTENCE))
        first, text = SENTENCE + " I am", SENTENCE + " I am hungry."
        wait.until(lambda d: first in held(d))
        box.send_keys(" hungry.")
        wait.until(lambda d: text in held(d))
        # the answer for the old text, arriving after the new one, is never drawn
        driver.execute_script("window.__release(arguments[0])", text)
        wait.until(lambda d: body.get_attribute("data-state") == "done")
        _, direct = post(server.url + "/translate", {"q": text, "source": "en", "target": "it"})
        assert output.text == direct["translatedText"]
        driver.execute_script("window.__release(arguments[0])", first)
        wait.until(lambda d: finished(d, first))
        assert output.text == direct["translatedText"]
        assert body.get_attribute("data-state") == "done"
        assert driver.find_element(By.ID, "error").text == ""
        # the same for attention: the first sentence's is asked for and held; the second is
        # chosen; the first's answer, arriving last, is not drawn
        wait.until(lambda d: SENTENCE in held(d))
        assert body.get_attribute("data-attention") == "loading"
        driver.find_elements(By.CSS_SELECTOR, "#sentences tr")[1].click()
        wait.until(lambda d: "I am hungry." in held(d))
        driver.execute_script("window.__release(arguments[0])", "I am hungry.")
        wait.until(lambda d: body.get_attribute("data-attention") == "done")
        assert driver.find_element(By.ID, "source").text == "I am hungry."
        driver.execute_script("window.__release()")
        wait.until(lambda d: finished(d, SENTENCE))
        assert driver.find_element(By.ID, "source").text == "I am hungry."
        assert body.get_attribute("data-attention") == "done"
    finally:
        driver.quit()


@pytest.mark.timeout(300)
def test_errors_clear_the_old_translation_and_the_box_has_a_limit(strict_server: Server) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.support.ui import WebDriverWait

    driver = chrome()
    wait = WebDriverWait(driver, 180)
    try:
        driver.get(strict_server.url + "/")
        body = driver.find_element(By.TAG_NAME, "body")
        box = driver.find_element(By.ID, "input")
        key = driver.find_element(By.ID, "api-key")
        error = driver.find_element(By.ID, "error")
        assert key.is_displayed()
        assert box.get_attribute("maxlength") == "60"
        assert driver.find_element(By.ID, "counter").text == "0 / 60"
        key.send_keys("right-key")
        box.send_keys(SENTENCE)
        wait.until(lambda d: body.get_attribute("data-state") == "done")
        wait.until(lambda d: body.get_attribute("data-attention") == "done")
        assert driver.find_element(By.ID, "output").text
        assert driver.find_element(By.ID, "viewer-section").is_displayed()
        # a wrong key: the server's message, and nothing left of the translation before
        select_all_and_delete(key)
        key.send_keys("wrong-key", Keys.TAB)
        wait.until(lambda d: "Invalid API key" in error.text)
        assert error.is_displayed() and body.get_attribute("data-state") == "error"
        assert driver.find_element(By.ID, "output").text == ""
        assert not driver.find_element(By.ID, "alternatives-label").is_displayed()
        assert not driver.find_elements(By.CSS_SELECTOR, "#alternatives li, #sentences tr")
        assert not driver.find_element(By.ID, "viewer-section").is_displayed()
        assert driver.find_element(By.ID, "meta-conf").text == ""
        # the right key again; then the box takes no more than 60 characters
        select_all_and_delete(key)
        key.send_keys("right-key", Keys.TAB)
        wait.until(lambda d: body.get_attribute("data-state") == "done")
        assert error.text == ""
        box.send_keys(" It has been sleeping there all afternoon long.")
        assert len(box.get_attribute("value")) == 60
        assert driver.find_element(By.ID, "counter").text == "60 / 60"
        wait.until(lambda d: body.get_attribute("data-state") == "done")
        assert error.text == ""
        # an empty box empties the page, an error included
        key.send_keys(Keys.CONTROL, "a")
        key.send_keys("wrong-key", Keys.TAB)
        wait.until(lambda d: "Invalid API key" in error.text)
        select_all_and_delete(box)
        wait.until(lambda d: body.get_attribute("data-state") == "idle")
        assert error.text == "" and driver.find_element(By.ID, "output").text == ""
        assert driver.find_element(By.ID, "counter").text == "0 / 60"
    finally:
        driver.quit()


@pytest.mark.timeout(300)
def test_page_fits_a_phone(server: Server) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    def overflow(d: Any) -> tuple[int, int, int]:
        return tuple(  # type: ignore[return-value]
            d.execute_script(
                "const e = document.documentElement;"
                "return [innerWidth, e.clientWidth, e.scrollWidth]"
            )
        )

    driver = chrome()
    wait = WebDriverWait(driver, 180)
    try:
        # a phone: the page's viewport meta tag is honoured, and a page wider than the
        # screen would be zoomed out (innerWidth grows) rather than scroll
        emulate(driver, 390, 844, mobile=True)
        driver.get(server.url + "/")
        body = driver.find_element(By.TAG_NAME, "body")
        text = (
            "The museum opens at nine. Tickets are sold at "
            "https://www.example.com/museum/tickets/online-booking-for-the-permanent-collection"
        )
        driver.find_element(By.ID, "input").send_keys(text)
        wait.until(lambda d: body.get_attribute("data-state") == "done")
        wait.until(lambda d: body.get_attribute("data-attention") == "done")
        assert overflow(driver) == (390, 390, 390), "lines view"
        driver.find_element(By.ID, "view-matrix").click()
        assert overflow(driver) == (390, 390, 390), "matrix view"
        driver.find_element(By.ID, "view-lines").click()
        # the lines view keeps its size and scrolls inside its own box
        view = driver.find_element(By.ID, "view")
        assert view.value_of_css_property("overflow-x") == "auto"
        assert view.rect["x"] + view.rect["width"] <= 390
        # and an ordinary text, as docs/page-phone.png shows it
        select_all_and_delete(driver.find_element(By.ID, "input"))
        driver.find_element(By.ID, "input").send_keys(SENTENCE + " I am hungry.")
        wait.until(lambda d: len(d.find_elements(By.CSS_SELECTOR, "#sentences tr")) == 2)
        wait.until(lambda d: body.get_attribute("data-attention") == "done")
        assert overflow(driver) == (390, 390, 390), "two sentences"
        screenshot(driver, "page-phone.png", 390, 844, mobile=True)
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
            lambda d: len(d.find_elements(By.CSS_SELECTOR, ".opblock")) >= 5
        )
        paths = {e.text for e in driver.find_elements(By.CSS_SELECTOR, ".opblock-summary-path")}
        assert {"/translate", "/detect", "/languages", "/frontend/settings", "/health"} <= paths
        assert not driver.find_elements(By.CSS_SELECTOR, ".errors-wrapper")  # spec accepted
        errors = [e for e in driver.get_log("browser") if e["level"] == "SEVERE"]
        assert errors == [], errors
    finally:
        driver.quit()
