"""The live page's panels "inside the model" in headless Chromium, at 390 px and 1366 px.

Driven as a user would: translate seed 000's sentence, tap a piece of the translation (its
journey through the model), teacher-force a reference (the training view and the masks of a
padded batch), remove each word (occlusion beside the cross-attention), ask the model's own
embedding space for a word's nearest pieces and for A − B + C. What the page shows
is compared with what the service answers for the same request: the page draws the model's
numbers, it does not make its own.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from serve_helpers import Server, chrome, post, running_server
from test_player_page import OVERFLOW, emulate, severe

SENTENCE = "The transformer architecture was introduced in 2017."
REFERENCE = "L'architettura del Transformer è stata introdotta nel 2017."
PAIR = {"q": SENTENCE, "source": "en", "target": "it"}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    tmp = tmp_path_factory.mktemp("inside-page")
    with running_server(tmp, "--frontend-timeout", "200") as s:
        yield s


@pytest.fixture(scope="module")
def driver() -> Iterator[Any]:
    d = chrome(1366, 1000)
    try:
        yield d
    finally:
        d.quit()


def body(driver: Any, name: str) -> str:
    return str(driver.find_element("tag name", "body").get_attribute(name))


def translated(driver: Any, server: Server, width: int, mobile: bool) -> Any:
    from selenium.webdriver.support.ui import WebDriverWait

    emulate(driver, width, 900, mobile)
    driver.get(server.url + "/")
    driver.find_element("id", "input").send_keys(SENTENCE)
    wait = WebDriverWait(driver, 180)
    wait.until(lambda d: body(d, "data-attention") == "done")
    return wait


def no_overflow(driver: Any, width: int, where: str) -> None:
    scroll_width, sticking_out = driver.execute_script(OVERFLOW)
    assert scroll_width <= width, (width, where, sticking_out)
    assert sticking_out == [], (width, where)


def tap(driver: Any, element: Any) -> None:
    driver.execute_script("arguments[0].scrollIntoView({block: 'center'})", element)
    element.click()


@pytest.mark.timeout(600)
@pytest.mark.parametrize(("width", "mobile"), [(1366, False), (390, True)])
def test_tapping_a_piece_shows_its_journey_as_the_service_computes_it(
    driver: Any, server: Server, width: int, mobile: bool
) -> None:
    from selenium.webdriver.common.by import By

    wait = translated(driver, server, width, mobile)
    assert driver.find_element(By.ID, "inside").is_displayed()
    tap(driver, driver.find_elements(By.CSS_SELECTOR, "#tgt-tokens .tok")[5])
    wait.until(lambda d: body(d, "data-journey") in ("done", "error"))
    assert body(driver, "data-journey") == "done", driver.find_element(By.ID, "journey-error").text
    status, want = post(server.url + "/journey", {**PAIR, "token": 5})
    assert status == 200, want
    root = driver.find_element(By.ID, "journey")
    assert root.get_attribute("data-token") == "5"
    assert float(str(root.get_attribute("data-largest"))) == pytest.approx(want["largest_check"])
    assert want["largest_check"] < 1e-5
    steps = root.find_elements(By.CSS_SELECTOR, ".in-step")
    assert [s.get_attribute("data-name") for s in steps] == [s["name"] for s in want["steps"]]
    checks = [s.get_attribute("data-check") for s in steps]
    for got, step in zip(checks, want["steps"], strict=True):
        if step["check"] is None:
            assert got == ""
        else:
            assert float(str(got)) == pytest.approx(step["check"], rel=1e-9, abs=0)
    names = {s["name"] for s in want["steps"]}
    for name in ("embedding", "positional encoding", "query", "key", "value", "softmax"):
        assert name in names
    for name in ("concatenated heads", "W^O", "residual", "layer norm", "feed-forward", "logits"):
        assert name in names
    # the title names the piece the model predicts at this position
    assert want["predicted_piece"].lstrip("\u2581") in driver.find_element(By.ID, "jy-title").text
    # a vector is folded to a few values; "show all" shows every one of them
    first = root.find_element(By.CSS_SELECTOR, ".in-step[data-name='embedding']")
    more = first.find_element(By.XPATH, ".//button[starts-with(normalize-space(.), 'show all')]")
    n = len(want["steps"][0]["values"])
    assert len(first.find_elements(By.CSS_SELECTOR, ".in-vec .in-v")) < n
    tap(driver, more)
    shown = first.find_elements(By.CSS_SELECTOR, ".in-vec .in-v")
    assert len(shown) == n
    # the head switch shows the chosen head's steps only, or every head
    per_head = root.find_elements(By.CSS_SELECTOR, ".in-step[data-head]")
    assert per_head and all(
        s.get_attribute("data-head") == "0" for s in per_head if s.get_attribute("hidden") is None
    )
    driver.execute_script(
        "const s = document.getElementById('jy-head'); s.value = '2';"
        "s.dispatchEvent(new Event('change', {bubbles: true}));"
    )
    visible = [s for s in per_head if s.get_attribute("hidden") is None]
    assert visible and {s.get_attribute("data-head") for s in visible} == {"2"}
    # every group opened, at this width nothing sticks out
    tap(driver, driver.find_element(By.ID, "jy-open-all"))
    no_overflow(driver, width, "journey")
    # another piece followed from the journey itself
    tap(driver, root.find_element(By.CSS_SELECTOR, ".in-pieces button[data-i='2']"))
    wait.until(lambda d: d.find_element(By.ID, "journey").get_attribute("data-token") == "2")
    assert body(driver, "data-journey") == "done"
    assert severe(driver) == []


@pytest.mark.timeout(600)
@pytest.mark.parametrize(("width", "mobile"), [(1366, False), (390, True)])
def test_a_reference_is_teacher_forced_and_its_batch_masks_drawn(
    driver: Any, server: Server, width: int, mobile: bool
) -> None:
    from selenium.webdriver.common.by import By

    wait = translated(driver, server, width, mobile)
    driver.find_element(By.ID, "reference").send_keys(REFERENCE)
    tap(driver, driver.find_element(By.ID, "training-go"))
    wait.until(lambda d: body(d, "data-training") in ("done", "error"))
    assert body(driver, "data-training") == "done", driver.find_element(
        By.ID, "training-error"
    ).text
    status, want = post(server.url + "/training", {**PAIR, "reference": REFERENCE})
    assert status == 200, want
    rows = driver.find_elements(By.CSS_SELECTOR, "#train-table tbody tr.in-pos")
    assert len(rows) == len(want["positions"]) == want["tokens"]
    for row, p in zip(rows, want["positions"], strict=True):
        assert float(str(row.get_attribute("data-loss"))) == pytest.approx(p["loss"])
        assert float(str(row.get_attribute("data-p"))) == pytest.approx(p["probability"])
        assert row.get_attribute("data-differs") == str(p["differs"]).lower()
    marks = driver.find_elements(By.CSS_SELECTOR, "#train-table .in-greedy-mark")
    assert len(marks) == want["greedy_differs"]
    total = driver.find_element(By.ID, "train-total").text
    assert f"{want['loss']:.4f}"[:5] in total and f"of the {want['tokens']} positions" in total
    # the three masks of each sentence of the padded batch, cell for cell the model's
    masks = want["masks"]
    assert len(masks["sentences"]) == 2
    for b in range(2):
        for kind in ("encoder", "decoder", "cross"):
            svg = driver.find_element(
                By.CSS_SELECTOR, f"#masks svg.in-mask[data-kind='{kind}'][data-sentence='{b}']"
            )
            allowed = driver.execute_script(
                "return [...arguments[0].querySelectorAll('rect.cell')].map("
                "(c) => [Number(c.dataset.i), Number(c.dataset.j), c.dataset.allowed]);",
                svg,
            )
            grid = masks[kind][b]
            assert len(allowed) == sum(len(row) for row in grid)
            for i, j, ok in allowed:
                assert (ok == "1") == bool(grid[i][j]), (kind, b, i, j)
    # the second sentence is padded: some of its cells are masked in every kind
    assert driver.find_elements(
        By.CSS_SELECTOR, "#masks svg.in-mask[data-sentence='1'] rect.cell[data-allowed='0']"
    )
    no_overflow(driver, width, "training view and masks")
    assert severe(driver) == []


@pytest.mark.timeout(600)
def test_occlusion_is_shown_beside_each_heads_cross_attention(driver: Any, server: Server) -> None:
    from selenium.webdriver.common.by import By

    for width, mobile in ((1366, False), (390, True)):
        wait = translated(driver, server, width, mobile)
        tap(driver, driver.find_element(By.ID, "occlusion-go"))
        wait.until(lambda d: body(d, "data-occlusion") in ("done", "error"))
        assert body(driver, "data-occlusion") == "done", driver.find_element(
            By.ID, "occlusion-error"
        ).text
        status, want = post(server.url + "/occlusion", PAIR)
        assert status == 200, want
        grid = driver.find_element(
            By.CSS_SELECTOR, "#occlusion table.in-grid[data-kind='importance']"
        )
        cells = grid.find_elements(By.CSS_SELECTOR, "td.in-cell")
        assert len(cells) == len(want["targets"]) * len(want["words"])
        for c in cells:
            i, j = int(str(c.get_attribute("data-i"))), int(str(c.get_attribute("data-j")))
            assert float(str(c.get_attribute("data-v"))) == pytest.approx(want["importance"][i][j])
        # every head's agreement, as the service computed it
        heads = driver.find_elements(By.CSS_SELECTOR, "#occ-heads tbody tr[data-head]")
        assert len(heads) == len(want["heads"])
        got = {
            str(h.get_attribute("data-head")): float(str(h.get_attribute("data-top1")))
            for h in heads
        }
        for h in want["heads"]:
            assert got[f"{h['layer']}.{h['head']}"] == pytest.approx(h["top1"])
        no_overflow(driver, width, "occlusion")
    assert severe(driver) == []


def _rows(driver: Any, box: str) -> list[tuple[str, int, float]]:
    from selenium.webdriver.common.by import By

    return [
        (
            str(r.get_attribute("data-piece")),
            int(str(r.get_attribute("data-id"))),
            float(str(r.get_attribute("data-cosine"))),
        )
        for r in driver.find_elements(By.CSS_SELECTOR, f"#{box} li.in-emb-row")
    ]


def _asked_for(driver: Any, text: str) -> bool:
    """The nearest pieces of ``text`` are shown."""
    from selenium.webdriver.common.by import By

    if body(driver, "data-emb-nearest") != "done":
        return False
    query = driver.find_elements(By.CSS_SELECTOR, "#emb-nearest .in-emb-query")
    return bool(query) and query[0].get_attribute("data-text") == text


def _shown_as_served(driver: Any, box: str, want: dict[str, Any]) -> None:
    from selenium.webdriver.common.by import By

    served = [(n["piece"], n["id"], n["cosine"]) for n in want["neighbours"]]
    shown = _rows(driver, box)
    assert [(p, i) for p, i, _ in shown] == [(p, i) for p, i, _ in served]
    for (_, _, got), (_, _, cos) in zip(shown, served, strict=True):
        assert got == pytest.approx(cos, rel=1e-12, abs=0)
    queries = driver.find_elements(By.CSS_SELECTOR, f"#{box} .in-emb-query")
    assert [q.get_attribute("data-text") for q in queries] == [q["text"] for q in want["queries"]]
    for q, w in zip(queries, want["queries"], strict=True):
        pieces = [p.text for p in q.find_elements(By.CSS_SELECTOR, ".piece")]
        assert pieces == [p["piece"] for p in w["pieces"]]
    # a bar is as long as its cosine (of the whole track), the number the answer's
    first = driver.find_element(By.CSS_SELECTOR, f"#{box} li.in-emb-row")
    fill = first.find_element(By.CSS_SELECTOR, ".pl-fill").get_attribute("style")
    assert f"{100 * max(0.0, served[0][2]):.1f}%" in str(fill)
    assert f"{served[0][2]:.4f}" in first.text


@pytest.mark.timeout(600)
def test_the_embedding_space_panel_shows_the_services_answer(driver: Any, server: Server) -> None:
    from selenium.webdriver.common.by import By

    pair = {"source": "en", "target": "it"}
    for width, mobile in ((1366, False), (390, True)):
        wait = translated(driver, server, width, mobile)
        assert driver.find_element(By.ID, "embeddings-section").is_displayed()
        for name in ("emb-side", "emb-word", "emb-a", "emb-b", "emb-c"):  # accessible names
            (label,) = driver.find_elements(By.CSS_SELECTOR, f"label[for='{name}']")
            assert label.text.strip(), name
        # a word's nearest pieces, in the source table
        word = driver.find_element(By.ID, "emb-word")
        tap(driver, word)
        word.send_keys("kingdoms")
        tap(driver, driver.find_element(By.ID, "emb-nearest-go"))
        wait.until(lambda d: body(d, "data-emb-nearest") in ("done", "error"))
        assert body(driver, "data-emb-nearest") == "done", driver.find_element(
            By.ID, "emb-nearest-error"
        ).text
        status, want = post(server.url + "/embeddings", {**pair, "word": "kingdoms", "k": 10})
        assert status == 200, want
        _shown_as_served(driver, "emb-nearest", want)
        # A − B + C in the target table
        driver.execute_script(
            "const s = document.getElementById('emb-side'); s.value = 'target';"
            "s.dispatchEvent(new Event('change', {bubbles: true}));"
        )
        for name, text in zip(("emb-a", "emb-b", "emb-c"), ("walked", "walk", "run"), strict=True):
            field = driver.find_element(By.ID, name)
            tap(driver, field)
            field.send_keys(text)
        tap(driver, driver.find_element(By.ID, "emb-analogy-go"))
        wait.until(lambda d: body(d, "data-emb-analogy") in ("done", "error"))
        assert body(driver, "data-emb-analogy") == "done", driver.find_element(
            By.ID, "emb-analogy-error"
        ).text
        status, want = post(
            server.url + "/embeddings",
            {**pair, "analogy": ["walked", "walk", "run"], "k": 10, "side": "target"},
        )
        assert status == 200, want
        _shown_as_served(driver, "emb-analogy", want)
        no_overflow(driver, width, "embedding space")
        # a word-start piece of the answer asks for its own neighbours
        button = driver.find_element(By.CSS_SELECTOR, "#emb-analogy li.in-emb-row button.piece")
        piece = str(button.find_element(By.XPATH, "./ancestor::li").get_attribute("data-piece"))
        tap(driver, button)
        wait.until(lambda d, piece=piece: _asked_for(d, piece))
        status, want = post(
            server.url + "/embeddings", {**pair, "word": piece, "k": 10, "side": "target"}
        )
        assert status == 200, want
        _shown_as_served(driver, "emb-nearest", want)
        assert severe(driver) == []
        # what the model cannot place: the service's one line (the browser logs the 400)
        word.clear()
        word.send_keys("<eos>")
        tap(driver, driver.find_element(By.ID, "emb-nearest-go"))
        wait.until(lambda d: body(d, "data-emb-nearest") == "error")
        status, refused = post(server.url + "/embeddings", {**pair, "word": "<eos>"})
        assert status == 400
        assert driver.find_element(By.ID, "emb-nearest-error").text == refused["error"]
        no_overflow(driver, width, "embedding space, with an error")
        logged = severe(driver)
        assert all("/embeddings" in e["message"] and "400" in e["message"] for e in logged), logged
