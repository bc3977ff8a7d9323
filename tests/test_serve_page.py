"""The page at ``/`` in headless Chromium: type English, read Italian, explore the attention.

The page translates the text without attention and asks for the attention of the one
sentence the viewer shows; what it asks is seen by wrapping ``window.fetch`` (``SPY``), which
can also hold requests back, to see the page while it waits and to make answers arrive late.

A document goes through the page's "Translate a file" section as a user would send it:
chosen in the file input, translated, fetched back by its download link and opened.

Set ``ATTENZIONE_SCREENSHOTS=docs`` to save ``page-desktop.png`` (1280×800),
``page-phone.png`` (390×844) and ``page-file.png`` (1280×800) into that folder
(docs/service.md shows them).
"""

from __future__ import annotations

import io
import os
import urllib.request
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
# While window.__holdFiles is true, holds the page's uploads back until window.__releaseFiles();
# window.__files counts the uploads made and those settled (answered, failed or aborted).
FILE_HOLD = """
window.__holdFiles = false; window.__fileHeld = []; window.__files = {made: 0, settled: 0};
const fileFetch = window.fetch;
window.fetch = async function (url, init) {
  if (!String(url).includes("translate_file")) return fileFetch.call(this, url, init);
  window.__files.made++;
  try {
    if (window.__holdFiles) await new Promise((go) => window.__fileHeld.push(go));
    return await fileFetch.call(this, url, init);
  } finally { window.__files.settled++; }
};
window.__releaseFiles = () => { window.__fileHeld.forEach((go) => go()); window.__fileHeld = []; };
"""


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
        # the lines view fits its box: the English side is on the screen (issue 53)
        view = driver.find_element(By.ID, "view")
        assert view.value_of_css_property("overflow-x") == "auto"
        right = view.rect["x"] + view.rect["width"]
        assert right <= 390
        svg = driver.find_element(By.CSS_SELECTOR, "svg.lines")
        assert svg.rect["x"] + svg.rect["width"] <= right + 0.5
        keys = driver.find_elements(By.CSS_SELECTOR, "svg.lines text.ktok")
        assert keys and all(k.rect["x"] + k.rect["width"] <= right + 0.5 for k in keys)
        # and an ordinary text, as docs/page-phone.png shows it
        select_all_and_delete(driver.find_element(By.ID, "input"))
        driver.find_element(By.ID, "input").send_keys(SENTENCE + " I am hungry.")
        wait.until(lambda d: len(d.find_elements(By.CSS_SELECTOR, "#sentences tr")) == 2)
        wait.until(lambda d: body.get_attribute("data-attention") == "done")
        assert overflow(driver) == (390, 390, 390), "two sentences"
        # the file section: shown, and every part of it within the screen
        for part in ("file-translation", "file-input", "file-translate", "file-status"):
            rect = driver.find_element(By.ID, part).rect
            assert rect["x"] >= 0 and rect["x"] + rect["width"] <= 390, part
        assert driver.find_element(By.ID, "file-input").is_displayed()
        screenshot(driver, "page-phone.png", 390, 844, mobile=True)
    finally:
        driver.quit()


def download(url: str) -> tuple[str, bytes]:
    """GET a translated file: (its Content-Disposition, its bytes)."""
    with urllib.request.urlopen(url, timeout=60) as r:
        return r.headers.get("Content-Disposition", ""), r.read()


def bold_docx() -> bytes:
    """ "The **old** house has a big garden." as a .docx (python-docx)."""
    import docx

    d = docx.Document()
    p = d.add_paragraph("The ")
    p.add_run("old").bold = True
    p.add_run(" house has a big garden.")
    out = io.BytesIO()
    d.save(out)
    return out.getvalue()


@pytest.mark.timeout(300)
def test_a_file_is_translated_and_downloaded_from_the_page(server: Server, tmp_path: Path) -> None:
    import docx
    import httpx
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    notes = tmp_path / "notes.txt"
    lines = ["The cat is sleeping on the sofa.", "I am hungry.", "The house has a big garden."]
    notes.write_text("\n".join(lines) + "\n", "utf-8")
    report = tmp_path / "report.docx"
    report.write_bytes(bold_docx())
    pdf = tmp_path / "notes.pdf"
    pdf.write_bytes(b"%PDF-1.4 not translatable here")
    with httpx.Client(timeout=60) as http:
        settings = http.get(server.url + "/frontend/settings").json()
        refusal = http.post(
            server.url + "/translate_file",
            files={"file": ("notes.pdf", pdf.read_bytes())},
            data={"source": "en", "target": "it"},
        )
    assert settings["filesTranslation"] and refusal.status_code == 400

    driver = chrome()
    wait = WebDriverWait(driver, 180)
    try:
        driver.get(server.url + "/")
        driver.execute_script(FILE_HOLD)
        section = driver.find_element(By.ID, "file-translation")
        chooser = driver.find_element(By.ID, "file-input")
        button = driver.find_element(By.ID, "file-translate")
        status = driver.find_element(By.ID, "file-status")

        def state() -> str:
            return str(section.get_attribute("data-state"))

        def links() -> list[Any]:
            return list(driver.find_elements(By.CSS_SELECTOR, "#file-translation a"))

        # the section: a labelled chooser of the server's formats, a button, a status line
        assert section.is_displayed() and state() == "idle"
        assert section.find_element(By.TAG_NAME, "h2").text == "Translate a file"
        assert driver.find_element(By.CSS_SELECTOR, "label[for=file-input]").text
        assert chooser.get_attribute("accept") == ",".join(settings["supportedFilesFormat"])
        assert status.get_attribute("role") == "status" and status.text == ""
        assert not button.is_enabled() and not links()
        # a .txt: busy while it is on its way, then a link to the translation
        chooser.send_keys(str(notes))
        assert state() == "ready" and button.is_enabled()
        driver.execute_script("window.__holdFiles = true")
        button.click()
        wait.until(lambda d: d.execute_script("return window.__fileHeld.length") == 1)
        assert state() == "busy" and section.get_attribute("aria-busy") == "true"
        assert status.text == "Translating notes.txt…" and not button.is_enabled()
        driver.execute_script("window.__holdFiles = false; window.__releaseFiles()")
        wait.until(lambda d: state() == "done")
        assert section.get_attribute("aria-busy") == "false" and button.is_enabled()
        (link,) = links()
        assert link.get_attribute("download") == "notes.txt" and "notes.txt" in link.text
        href = str(link.get_attribute("href"))
        assert href.startswith(server.url + "/download_file/") and href.endswith(".notes.txt")
        disposition, data = download(href)
        assert "attachment" in disposition and "notes.txt" in disposition
        got = data.decode("utf-8").splitlines()
        assert len(got) == len(lines) and all(g and g != s for g, s in zip(got, lines, strict=True))
        words = set(" ".join(got).lower().replace(".", " ").split())
        assert words & {"gatto", "fame", "casa", "giardino"}, got
        # another file: the old link goes at once; a .docx comes back with its bold
        chooser.send_keys(str(report))
        assert state() == "ready" and status.text == "" and not links()
        button.click()
        wait.until(lambda d: state() == "done")
        (link,) = links()
        assert link.get_attribute("download") == "report.docx"
        _, data = download(str(link.get_attribute("href")))
        (par,) = docx.Document(io.BytesIO(data)).paragraphs
        assert par.text != "The old house has a big garden." and "casa" in par.text, par.text
        (bold,) = [r.text for r in par.runs if r.bold]
        assert bold.strip() and bold.strip() != "old", par.text
        screenshot(driver, "page-file.png", 1280, 800, mobile=False)
        # an unsupported file: the server's own message, and no link
        chooser.send_keys(str(pdf))
        assert not links() and status.text == ""
        button.click()
        wait.until(lambda d: state() == "error")
        assert status.text == refusal.json()["error"] and ".docx" in status.text
        assert status.is_displayed() and not links()
        # a file chosen while the last one is on its way: the old answer is never shown
        chooser.send_keys(str(notes))
        driver.execute_script("window.__holdFiles = true")
        button.click()
        wait.until(lambda d: d.execute_script("return window.__fileHeld.length") == 1)
        chooser.send_keys(str(report))
        assert state() == "ready" and status.text == ""
        driver.execute_script("window.__holdFiles = false; window.__releaseFiles()")
        files = "return window.__files.made === window.__files.settled"
        wait.until(lambda d: d.execute_script(files))
        assert state() == "ready" and status.text == "" and not links()
        errors = [e for e in driver.get_log("browser") if e["level"] == "SEVERE"]
        assert [e for e in errors if "translate_file" not in e["message"]] == [], errors
    finally:
        driver.quit()


@pytest.mark.timeout(300)
def test_a_file_upload_sends_the_key_field(strict_server: Server, tmp_path: Path) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.support.ui import WebDriverWait

    notes = tmp_path / "hungry.txt"
    notes.write_text("I am hungry.\n", "utf-8")
    driver = chrome()
    wait = WebDriverWait(driver, 180)
    try:
        driver.get(strict_server.url + "/")
        section = driver.find_element(By.ID, "file-translation")
        status = driver.find_element(By.ID, "file-status")
        driver.find_element(By.ID, "file-input").send_keys(str(notes))
        # no key: the server asks for one
        driver.find_element(By.ID, "file-translate").click()
        wait.until(lambda d: section.get_attribute("data-state") == "error")
        assert "API key" in status.text
        # the key field's key goes with the upload
        driver.find_element(By.ID, "api-key").send_keys("right-key", Keys.TAB)
        driver.find_element(By.ID, "file-translate").click()
        wait.until(lambda d: section.get_attribute("data-state") == "done")
        (link,) = driver.find_elements(By.CSS_SELECTOR, "#file-translation a")
        _, data = download(str(link.get_attribute("href")))
        assert data.decode("utf-8").strip() not in ("", "I am hungry.")
    finally:
        driver.quit()


def test_the_file_section_is_shown_only_when_the_server_translates_files(
    server: Server, tmp_path: Path
) -> None:
    """The page as a server with ``--no-files`` would send it (its settings say so)."""
    import json

    from selenium.webdriver.common.by import By

    from attenzione.serve.page import page_html

    with urllib.request.urlopen(server.url + "/frontend/settings", timeout=30) as r:
        settings = json.loads(r.read())
    driver = chrome()
    try:
        for files in (True, False):
            formats = settings["supportedFilesFormat"] if files else []
            page = tmp_path / f"page-{files}.html"
            page_settings = {**settings, "filesTranslation": files, "supportedFilesFormat": formats}
            page.write_text(page_html(page_settings), "utf-8")
            driver.get(page.as_uri())
            section = driver.find_element(By.ID, "file-translation")
            assert section.is_displayed() == files
            assert driver.find_element(By.ID, "input").is_displayed()  # the rest is there
    finally:
        driver.quit()


def test_page_and_docs_load_nothing_from_the_network(server: Server) -> None:
    import re

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
