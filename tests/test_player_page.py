"""The step-through decoding player in headless Chromium: the saved page and the live one.

The saved ``attention.html`` is made from the shipped model's trace of one sentence (greedy,
and beam 4); the page's numbers are checked against the trace (the bars are softmax(logit/T)
over the pieces the trace gives, renormalised). The live page (``attenzione serve``) is
driven as a user would: step through, pick another word, switch a head off, explain a head.
Both must fit a 390 px phone and a 1366 px screen without the page scrolling sideways.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from serve_helpers import Server, chrome, post, running_server

SENTENCE = "The transformer architecture was introduced in 2017."

# document.documentElement.scrollWidth, and the elements sticking out of the viewport that
# are not inside a box scrolling on its own (overflow-x auto or scroll)
OVERFLOW = """
const vw = document.documentElement.clientWidth, bad = [];
const scrolls = (e) => {
  for (let p = e.parentElement; p; p = p.parentElement) {
    const o = getComputedStyle(p).overflowX;
    if (o === 'auto' || o === 'scroll') return true;
  }
  return false;
};
for (const e of document.querySelectorAll('body *')) {
  const r = e.getBoundingClientRect();
  if (r.width === 0 || r.height === 0) continue;
  if ((r.right > vw + 0.5 || r.left < -0.5) && !scrolls(e)) {
    bad.push(`${e.tagName}#${e.id} ${Math.round(r.left)}..${Math.round(r.right)}`);
  }
}
return [document.documentElement.scrollWidth, bad];
"""
# Records the JSON bodies the page sends to /trace.
TRACE_SPY = """
window.__traces = [];
const realFetch = window.fetch;
window.fetch = function (url, init) {
  if (String(url).endsWith("trace")) window.__traces.push(JSON.parse(init.body));
  return realFetch.call(this, url, init);
};
"""


def decode(pieces: list[str]) -> str:
    return "".join(p for p in pieces if not p.startswith("<")).replace("\u2581", " ").strip()


@pytest.fixture(scope="module")
def pages(tmp_path_factory: pytest.TempPathFactory) -> dict[int, tuple[Path, dict[str, Any]]]:
    """The saved page of the shipped model's trace, greedy (1) and beam 4: (path, trace)."""
    from attenzione.config import search_config
    from attenzione.translator.translator import Translator
    from attenzione.viz import save_html

    tmp = tmp_path_factory.mktemp("player")
    translator = Translator.from_pretrained()
    out = {}
    for beam in (1, 4):
        trace = translator.trace(SENTENCE, search=search_config(beam))
        data = trace.to_dict()
        out[beam] = (save_html(trace.maps, tmp / f"beam{beam}.html", trace=data), data)
    return out


@pytest.fixture(scope="module")
def driver() -> Iterator[Any]:
    d = chrome(1366, 1000)
    try:
        yield d
    finally:
        d.quit()


def emulate(driver: Any, width: int, height: int, mobile: bool) -> None:
    metrics = {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": mobile}
    driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", metrics)
    driver.execute_cdp_cmd("Emulation.setTouchEmulationEnabled", {"enabled": mobile})


def set_range(driver: Any, label: str, value: float) -> None:
    """Move the range input named ``label`` to ``value``, as dragging it would."""
    driver.execute_script(
        "const e = document.querySelector(`input[aria-label='${arguments[0]}']`);"
        "e.value = String(arguments[1]); e.dispatchEvent(new Event('input', {bubbles: true}));",
        label,
        value,
    )


def bars(driver: Any) -> list[tuple[str, float, bool]]:
    """The bars shown: (piece, probability, inside the sampling cut), top first."""
    from selenium.webdriver.common.by import By

    return [
        (
            str(b.get_attribute("data-piece")),
            float(b.get_attribute("data-p")),
            "in-cut" in str(b.get_attribute("class")),
        )
        for b in driver.find_elements(By.CSS_SELECTOR, "#pl-bars .pl-bar")
    ]


def softmax(logits: list[float], t: float) -> list[float]:
    z = [x / t for x in logits]
    m = max(z)
    e = [math.exp(v - m) for v in z]
    return [v / sum(e) for v in e]


def severe(driver: Any) -> list[Any]:
    return [e for e in driver.get_log("browser") if e["level"] == "SEVERE"]


def test_the_page_embeds_the_trace_without_its_maps_and_stays_small(
    pages: dict[int, tuple[Path, dict[str, Any]]],
) -> None:
    path, trace = pages[4]
    page = path.read_text("utf-8")
    found = re.search(
        r'<script type="application/json" id="attention-data">(.*?)</script>', page, re.S
    )
    assert found is not None
    payload = json.loads(found.group(1))
    assert "attention" not in payload["trace"]
    assert payload["trace"] == json.loads(
        json.dumps({k: v for k, v in trace.items() if k != "attention"})
    )
    assert payload["trace"]["beams"] and payload["trace"]["path"]
    # the page itself (HTML, JS, CSS), without its data, under 150 KB; so is the live page
    # (the panels inside the model fetch their code when first shown: /assets/inside.js)
    assert len(page.encode()) - len(found.group(1).encode()) < 150_000
    from attenzione.serve.page import page_html

    assert len(page_html({"charLimit": 5000}).encode()) < 150_000
    assert "fetch(" not in page  # the saved file asks nothing of anyone


@pytest.mark.timeout(300)
def test_static_player_steps_and_its_bars_are_the_traces(
    driver: Any, pages: dict[int, tuple[Path, dict[str, Any]]]
) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    path, trace = pages[1]
    emulate(driver, 1366, 1000, mobile=False)
    driver.get(path.as_uri())
    player = driver.find_element(By.ID, "player")
    assert player.is_displayed() and player.get_attribute("data-method") == "greedy"
    slider = driver.find_element(By.CSS_SELECTOR, "input[type=range][aria-label='Step']")
    steps = trace["steps"]
    assert slider.get_attribute("max") == str(len(steps) - 1)
    assert player.get_attribute("data-step") == "0"
    # the slider, the buttons and the arrow keys move the step; the prefix follows
    slider.send_keys(Keys.ARROW_RIGHT)
    assert player.get_attribute("data-step") == "1"
    prefix = driver.find_element(By.ID, "pl-prefix").text
    assert steps[0]["chosen"].replace("\u2581", "") in prefix
    driver.find_element(By.CSS_SELECTOR, "button[aria-label='Next step']").click()
    assert player.get_attribute("data-step") == "2"
    driver.find_element(By.TAG_NAME, "body").send_keys(Keys.ARROW_LEFT)
    assert player.get_attribute("data-step") == "1"
    driver.find_element(By.CSS_SELECTOR, "button[aria-label='Previous step']").click()
    assert player.get_attribute("data-step") == "0"
    assert driver.find_element(By.CSS_SELECTOR, "button[aria-label='Previous step']").get_attribute(
        "disabled"
    )
    # at every step of a greedy decoding, the top bar is the piece written; every bar is
    # softmax(logit) over the pieces given; the causal triangle has one more row a step
    for i, step in enumerate(steps):
        set_range(driver, "Step", i)
        assert player.get_attribute("data-step") == str(i)
        shown = bars(driver)
        assert shown[0][0] == step["chosen"], i
        want = softmax([t["logit"] for t in step["top"]], 1.0)
        assert [s[0] for s in shown] == [t["piece"] for t in step["top"]]
        assert all(abs(s[1] - w) < 1e-5 for s, w in zip(shown, want, strict=True)), i
        cells = driver.find_elements(By.CSS_SELECTOR, "svg.pl-mask rect.cell")
        assert len(cells) == (i + 1) * (i + 2) // 2
        n = len(steps)
        assert len(driver.find_elements(By.CSS_SELECTOR, "svg.pl-mask rect.masked")) == (
            n * (n - 1) // 2
        )
        # the step's cross-attention, on the source tokens, is the trace's (last layer)
        weights = [
            float(c.get_attribute("data-w"))
            for c in driver.find_elements(By.CSS_SELECTOR, "#pl-src .piece")
        ]
        assert weights == pytest.approx(step["cross_attention"][-1], abs=1e-4)
    # a caution where the step's strongest cross-attention link is punctuation or <eos>
    script = "return JSON.parse(document.getElementById('attention-data').textContent)"
    src = driver.execute_script(script + ".src_tokens")
    for i, step in enumerate(steps):
        row = step["cross_attention"][-1]
        best = src[max(range(len(row)), key=row.__getitem__)]
        set_range(driver, "Step", i)
        caution = driver.find_element(By.ID, "pl-caution").text
        core = best.replace("\u2581", "").replace("\u00b7", "")  # a bare "▁" is no punctuation
        odd = best == "<eos>" or (core != "" and not any(ch.isalnum() for ch in core))
        assert caution.startswith("Caution") if odd else caution == "", (i, best, caution)
    # one line says what each kind and view shows
    what = driver.find_element(By.ID, "what")
    assert what.text.startswith("What am I looking at: Cross-attention")
    driver.find_element(By.ID, "kind-decoder").click()
    driver.find_element(By.ID, "view-matrix").click()
    assert "Decoder self-attention" in what.text and "Matrix" in what.text
    assert "starts a word" in driver.find_element(By.CSS_SELECTOR, ".legend-pieces").text
    # the bars show the logits as the trace gives them
    set_range(driver, "Step", 0)
    logit = driver.find_element(By.CSS_SELECTOR, "#pl-bars .pl-bar .pl-logit").text
    assert logit.replace("\u2212", "-") == f"logit {steps[0]['top'][0]['logit']}"
    errors = severe(driver)
    assert errors == [], errors


@pytest.mark.timeout(300)
def test_temperature_top_k_and_top_p_recompute_the_bars_in_the_page(
    driver: Any, pages: dict[int, tuple[Path, dict[str, Any]]]
) -> None:
    from selenium.webdriver.common.by import By

    path, trace = pages[1]
    emulate(driver, 1366, 1000, mobile=False)
    driver.get(path.as_uri())
    for name in ("Temperature", "Top-k", "Top-p"):
        assert driver.find_element(By.CSS_SELECTOR, f"input[aria-label='{name}']")
    # the step where the model was least sure: the clearest change
    step = min(range(len(trace["steps"])), key=lambda i: trace["steps"][i]["top"][0]["logprob"])
    set_range(driver, "Step", step)
    top_at_1 = bars(driver)[0][1]
    assert top_at_1 < 0.95
    n = len(trace["steps"][step]["top"])
    assert f"over the {n} most likely pieces" in driver.find_element(By.ID, "pl-bars-what").text
    set_range(driver, "Temperature", 0.1)
    assert bars(driver)[0][1] > 0.95
    set_range(driver, "Temperature", 2.0)
    shown = bars(driver)
    assert shown[0][1] < top_at_1
    want = softmax([t["logit"] for t in trace["steps"][step]["top"]], 2.0)
    assert [s[1] for s in shown] == pytest.approx(want, abs=1e-5)
    # greedy still picks the top piece; sampling could pick any piece inside the cut
    assert "greedy" in driver.find_element(By.CSS_SELECTOR, "#pl-bars .pl-bar").text
    assert all(s[2] for s in shown)
    set_range(driver, "Top-k", 3)
    assert [s[2] for s in bars(driver)] == [True] * 3 + [False] * (n - 3)
    assert "could pick 3" in driver.find_element(By.ID, "pl-sample").text
    set_range(driver, "Top-k", n)
    set_range(driver, "Temperature", 1.0)
    set_range(driver, "Top-p", 0.5)
    shown = bars(driver)
    cut = [s for s in shown if s[2]]
    assert sum(s[1] for s in cut[:-1]) < 0.5 <= sum(s[1] for s in cut) + 1e-9
    # no request: the saved file asks no one
    assert driver.execute_script("return performance.getEntriesByType('resource').length") == 0


@pytest.mark.timeout(300)
def test_the_beam_is_drawn_as_a_tree(
    driver: Any, pages: dict[int, tuple[Path, dict[str, Any]]]
) -> None:
    from selenium.webdriver.common.by import By

    path, trace = pages[4]
    emulate(driver, 1366, 1000, mobile=False)
    driver.get(path.as_uri())
    nodes = driver.find_elements(By.CSS_SELECTOR, "svg.pl-tree g.node")
    assert len(nodes) == len(trace["beams"])
    by_status: dict[str, list[Any]] = {}
    for node in nodes:
        by_status.setdefault(str(node.get_attribute("data-status")), []).append(node)
    assert by_status.keys() == {b["status"] for b in trace["beams"]}
    assert {"kept", "pruned", "finished"} <= by_status.keys()
    # pruned hypotheses fade; the others do not
    assert all(float(n.value_of_css_property("opacity")) < 0.6 for n in by_status["pruned"])
    assert all(float(n.value_of_css_property("opacity")) == 1 for n in by_status["kept"])
    # the winner's path is highlighted, one node a step
    win = driver.find_elements(By.CSS_SELECTOR, "svg.pl-tree g.node.win")
    assert sorted(int(str(n.get_attribute("data-id"))) for n in win) == sorted(trace["path"])
    # a node tells its numbers on hover (title) and on tap (the status line)
    finished = next(b for b in trace["beams"] if b["status"] == "finished")
    node = driver.find_element(By.CSS_SELECTOR, f"svg.pl-tree g.node[data-id='{finished['id']}']")
    title = node.find_element(By.TAG_NAME, "title").get_attribute("textContent")
    assert str(abs(finished["log_prob"])) in title and str(abs(finished["score"])) in title
    driver.execute_script("arguments[0].dispatchEvent(new MouseEvent('click'))", node)
    status = driver.find_element(By.ID, "pl-beam-status").text
    assert str(abs(finished["log_prob"])) in status and "score" in status
    # a target token tapped in the attention viewer opens its step's alternatives too
    driver.find_elements(By.CSS_SELECTOR, "#tgt-tokens .tok")[2].click()
    assert driver.find_element(By.ID, "player").get_attribute("data-alts") == "2"
    assert driver.find_element(By.ID, "player").get_attribute("data-step") == "2"
    # in a saved file another word or a head switched off needs the server: it says so
    driver.find_elements(By.CSS_SELECTOR, "#pl-out button")[1].click()
    alts = driver.find_elements(By.CSS_SELECTOR, "#pl-alts button.pl-alt")
    assert [a.get_attribute("data-piece") for a in alts] == [
        t["piece"] for t in trace["steps"][1]["top"]
    ]
    assert "needs the server" in driver.find_element(By.ID, "pl-alts-note").text
    assert "needs the server" in driver.find_element(By.ID, "pl-ablate-note").text
    errors = severe(driver)
    assert errors == [], errors


@pytest.mark.timeout(300)
@pytest.mark.parametrize("beam", [1, 4])
def test_saved_page_fits_a_phone_and_a_laptop(
    driver: Any, pages: dict[int, tuple[Path, dict[str, Any]]], beam: int
) -> None:
    from selenium.webdriver.common.by import By

    path, _ = pages[beam]
    for width, mobile in ((390, True), (1366, False)):
        emulate(driver, width, 900, mobile)
        driver.get(path.as_uri())
        for view in ("lines", "matrix"):
            driver.find_element(By.ID, f"view-{view}").click()
            scroll_width, sticking_out = driver.execute_script(OVERFLOW)
            assert scroll_width <= width, (width, view, sticking_out)
            assert sticking_out == [], (width, view)
        # a touch screen is told to tap, a mouse to hover
        hint = driver.find_element(By.ID, "focus").text
        assert hint.startswith("Tap") if mobile else hint.startswith("Hover"), hint
    emulate(driver, 1366, 900, mobile=False)


# ---------------------------------------------------------------- the live page


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    tmp = tmp_path_factory.mktemp("live-player")
    with running_server(tmp, "--beam", "4", "--frontend-timeout", "200") as s:
        yield s


def open_player(driver: Any, server: Server) -> Any:
    """The live page with SENTENCE translated and its decoding loaded in the player."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    driver.get(server.url + "/")
    driver.execute_script(TRACE_SPY)
    body = driver.find_element(By.TAG_NAME, "body")
    driver.find_element(By.ID, "input").send_keys(SENTENCE)
    wait = WebDriverWait(driver, 180)
    wait.until(lambda d: body.get_attribute("data-attention") == "done")
    driver.find_element(By.ID, "trace-load").click()
    wait.until(lambda d: body.get_attribute("data-trace") in ("done", "error"))
    assert body.get_attribute("data-trace") == "done", driver.find_element(By.ID, "trace-note").text
    return wait


@pytest.mark.timeout(600)
def test_live_player_re_translates_from_another_word(driver: Any, server: Server) -> None:
    from selenium.webdriver.common.by import By

    emulate(driver, 1366, 1000, mobile=False)
    wait = open_player(driver, server)
    body = driver.find_element(By.TAG_NAME, "body")
    player = driver.find_element(By.ID, "player")
    first = str(player.get_attribute("data-translation"))
    assert first == driver.find_element(By.ID, "output").text  # the server's beam, as shown
    # another word at step 0, picked from the alternatives
    driver.find_elements(By.CSS_SELECTOR, "#pl-out button")[0].click()
    alts = driver.find_elements(By.CSS_SELECTOR, "#pl-alts button.pl-alt:not(.chosen)")
    piece = str(alts[0].get_attribute("data-piece"))
    alts[0].click()
    wait.until(lambda d: d.find_elements(By.ID, "pl-after"))
    wait.until(lambda d: body.get_attribute("data-trace") == "done")
    word = decode([piece])
    sent = driver.execute_script("return window.__traces")
    assert sent[-1]["prefix"] == word and sent[-1]["q"] == SENTENCE
    new = str(player.get_attribute("data-translation"))
    assert new.startswith(word) and new != first
    assert driver.find_element(By.ID, "pl-before").text == first
    assert driver.find_element(By.ID, "pl-after").text == new
    _, direct = post(
        server.url + "/trace", {"q": SENTENCE, "source": "en", "target": "it", "prefix": word}
    )
    assert direct["translation"] == new
    # a typed word at a later step: the pieces before it, then the word
    trace = direct
    k = 3
    driver.find_elements(By.CSS_SELECTOR, "#pl-out button")[k].click()
    driver.find_element(By.CSS_SELECTOR, "input[aria-label='Your word']").send_keys("moderna")
    driver.find_element(By.ID, "pl-word-go").click()
    want = decode(trace["steps"][k]["prefix"]) + " moderna"
    wait.until(lambda d: d.execute_script("return window.__traces.length") == len(sent) + 1)
    wait.until(lambda d: body.get_attribute("data-trace") == "done")
    assert driver.execute_script("return window.__traces")[-1]["prefix"] == want
    assert str(player.get_attribute("data-translation")).startswith(want)
    errors = severe(driver)
    assert errors == [], errors


@pytest.mark.timeout(600)
def test_live_page_a_target_token_opens_its_alternatives(driver: Any, server: Server) -> None:
    """Clicking a token of the translation before the decoding is loaded loads it, then
    shows that step's alternatives."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    emulate(driver, 1366, 1000, mobile=False)
    driver.get(server.url + "/")
    driver.execute_script(TRACE_SPY)
    body = driver.find_element(By.TAG_NAME, "body")
    driver.find_element(By.ID, "input").send_keys(SENTENCE)
    wait = WebDriverWait(driver, 180)
    wait.until(lambda d: body.get_attribute("data-attention") == "done")
    assert driver.execute_script("return window.__traces") == []  # asked only when wanted
    driver.find_elements(By.CSS_SELECTOR, "#tgt-tokens .tok")[1].click()
    wait.until(lambda d: d.find_element(By.ID, "player").get_attribute("data-alts") == "1")
    assert len(driver.execute_script("return window.__traces")) == 1
    assert driver.find_elements(By.CSS_SELECTOR, "#pl-alts button.pl-alt")


@pytest.mark.timeout(600)
def test_live_player_switches_a_head_off_and_explains_a_head(driver: Any, server: Server) -> None:
    from selenium.webdriver.common.by import By

    emulate(driver, 1366, 1000, mobile=False)
    wait = open_player(driver, server)
    body = driver.find_element(By.TAG_NAME, "body")
    driver.find_element(By.CSS_SELECTOR, "input[aria-label='cross layer 2 head 1']").click()
    driver.find_element(By.ID, "pl-ablate-go").click()
    wait.until(lambda d: d.find_elements(By.ID, "pl-after"))
    wait.until(lambda d: body.get_attribute("data-trace") == "done")
    assert driver.execute_script("return window.__traces")[-1]["ablate"] == "cross:2.1"
    player = driver.find_element(By.ID, "player")
    _, direct = post(
        server.url + "/trace",
        {"q": SENTENCE, "source": "en", "target": "it", "ablate": "cross:2.1"},
    )
    assert player.get_attribute("data-translation") == direct["translation"]
    assert "cross:2.1" in driver.find_element(By.ID, "pl-what").text
    # the box stays unticked in the new trace's grid
    box = driver.find_element(By.CSS_SELECTOR, "input[aria-label='cross layer 2 head 1']")
    assert not box.is_selected()
    # one head's arithmetic, for the head chosen in the viewer
    from selenium.webdriver.support.ui import Select

    Select(driver.find_element(By.ID, "head")).select_by_value("3")
    driver.find_element(By.ID, "explain-load").click()
    wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, "#explain-table td.alpha"))
    sent = driver.execute_script("return window.__traces")[-1]
    assert sent["explain"] is True and sent["explain_head"] == 3
    assert sent["explain_kind"] == "cross" and sent["explain_layer"] == 2
    assert body.get_attribute("data-selection") == "cross/2/3/lines"
    errors = severe(driver)
    assert errors == [], errors


@pytest.mark.timeout(600)
def test_live_page_with_the_player_fits_a_phone(driver: Any, server: Server) -> None:
    from selenium.webdriver.common.by import By

    emulate(driver, 390, 844, mobile=True)
    try:
        open_player(driver, server)
        assert driver.find_element(By.ID, "player").is_displayed()
        driver.find_elements(By.CSS_SELECTOR, "#pl-out button")[2].click()
        for view in ("lines", "matrix"):
            driver.find_element(By.ID, f"view-{view}").click()
            scroll_width, sticking_out = driver.execute_script(OVERFLOW)
            assert scroll_width <= 390 and sticking_out == [], (view, sticking_out)
        assert "Tap" in driver.find_element(By.ID, "pl-out-hint").text
    finally:
        emulate(driver, 1366, 1000, mobile=False)
