"""The service's parts on their own: sentences, html, alignment, keys, scores, the worker."""

from __future__ import annotations

import math
import time
from pathlib import Path
from typing import Any

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from attenzione.cli import app
from attenzione.config import search_config
from attenzione.data.sentences import split_sentences
from attenzione.pipeline.split import pieces
from attenzione.serve.alignment import word_alignment
from attenzione.serve.batcher import Batcher, Decoding, QueueFull
from attenzione.serve.limits import KeyRing, RateLimiter
from attenzione.serve.text import assemble, plan_html, plan_text
from attenzione.translator.translator import Translator


@pytest.fixture(scope="module")
def translator() -> Translator:
    return Translator.from_pretrained()


# ---------------------------------------------------------------------- sentences
def test_abbreviations_are_not_sentence_ends() -> None:
    got = split_sentences("Dr. Ur lives in the U.S. with his wife. She is nice! Is he? Yes.")
    assert [s.strip() for s in got] == [
        "Dr. Ur lives in the U.S. with his wife.",
        "She is nice!",
        "Is he?",
        "Yes.",
    ]
    assert [s.strip() for s in split_sentences("It costs 3.5 euros. See No. 5, e.g. here.")] == [
        "It costs 3.5 euros.",
        "See No. 5, e.g. here.",
    ]
    assert split_sentences("") == [] and split_sentences("one\ntwo") == ["one\n", "two"]


@settings(max_examples=300, deadline=None)
@given(
    st.text(
        alphabet=st.sampled_from(list("ab .!?\n\r\t.DrUS\u00a0\u2009\u3000é😀\x00")), max_size=80
    )
    | st.text(max_size=60)
)
def test_segments_join_back_to_the_text(text: str) -> None:
    assert "".join(split_sentences(text)) == text


def test_a_segmenter_panic_does_not_escape() -> None:
    text = "S\xa0. \nr\t Séa bar\xa0?\t\n"  # made sentencex 1.0.32 panic (Rust, byte offsets)
    assert "".join(split_sentences(text)) == text


def test_translate_splits_long_lines_with_the_same_segmenter(translator: Translator) -> None:
    # 16 tokens of text, and the place a model with corpus tags keeps for its tag
    limit = 16 + translator.ctx.reserved
    short = Translator(
        translator.model, translator.src_tokenizer, translator.tgt_tokenizer, max_src_tokens=limit
    )
    line = "Dr. Ur lives in the U.S. with his wife. She is nice."
    assert pieces(line, short.ctx) == ["Dr. Ur lives in the U.S. with his wife.", "She is nice."]


# ---------------------------------------------------------------------- text and html
def test_plain_text_keeps_its_whitespace() -> None:
    text = "  I am hungry.  You are tired.\n\nWe go.\n"
    plan = plan_text(text)
    assert [p.text for p in plan if p.sentence] == ["I am hungry.", "You are tired.", "We go."]
    assert assemble(plan, ["A.", "B.", "C."]) == "  A.  B.\n\nC.\n"


def test_html_translates_text_and_keeps_every_tag() -> None:
    markup = (
        '<div class="a"><p>Hello &amp; welcome. Sit down.</p><img src="x.png" alt="A cat">'
        "<script>var s = '<p>no</p>';</script><code>a < b</code>"
        '<span class="notranslate">Brand</span><p translate="no">Keep.</p><!-- note --></div>'
    )
    plan = plan_html(markup)
    assert [p.text for p in plan if p.sentence] == ["Hello & welcome.", "Sit down."]
    out = assemble(plan, ["Ciao & benvenuti.", "<Siediti>."], escape=True)
    assert out == (
        '<div class="a"><p>Ciao &amp; benvenuti. &lt;Siediti&gt;.</p><img src="x.png" alt="A cat">'
        "<script>var s = '<p>no</p>';</script><code>a < b</code>"  # untouched: as sent
        '<span class="notranslate">Brand</span><p translate="no">Keep.</p><!-- note --></div>'
    )


def test_html_sends_a_sentence_with_its_inline_tags_and_escapes_only_its_text() -> None:
    markup = (
        '<p>Click <b>Save</b> &amp; <a href="x.html?a=1&amp;b=2">go on</a>. Then <i>rest.</i>'
        "</p><p>5 &lt; 6 and <b>x</b> is <em>big</em></p>"
        '<p>See <a title="a > b">this</a> now.<br/>Done <u>here</u></p>'
    )
    plan = plan_html(markup)
    sentences = [p for p in plan if p.sentence]
    link = '<a href="x.html?a=1&amp;b=2">'
    assert [(p.text, p.tags) for p in sentences[:2]] == [
        (f"Click <b>Save</b> & {link}go on</a>.", ("<b>", "</b>", link, "</a>")),
        ("Then <i>rest.</i>", ("<i>", "</i>")),  # a tag's "." or "?" ends no sentence
    ]
    # text with a "<" goes node by node: no text is ever taken for a tag; so does a tag the
    # translator would not read as one (a ">" in an attribute); a <br/> cuts
    assert [p.text for p in sentences[2:]] == ["5 < 6 and", "x", "is", "big", "See", "this",
                                               "now.", "Done <u>here</u>"]  # fmt: skip
    assert sentences[-1].tags == ("<u>", "</u>")
    out = assemble(
        plan,
        [
            f"Fai clic su <b>Salva</b> & {link}continua</a>.",
            "Poi <i>riposa.</i>",
            "5 < 6 e",
            "x",
            "è",
            "grande",
            "Vedi",
            "questo",
            "ora.",
            "Fatto <u>qui</u> <b>",  # a "<b>" the model wrote itself is text
        ],
        escape=True,
    )
    assert out == (
        f"<p>Fai clic su <b>Salva</b> &amp; {link}continua</a>. Poi <i>riposa.</i></p>"
        "<p>5 &lt; 6 e <b>x</b> è <em>grande</em></p>"
        '<p>Vedi <a title="a > b">questo</a> ora.<br/>Fatto <u>qui</u> &lt;b&gt;</p>'
    )


def test_html_writes_each_input_tag_as_markup_only_as_often_as_it_came() -> None:
    plan = plan_html('<p>Hello <a href="x">world</a> now</p>')
    (sentence,) = [p for p in plan if p.sentence]
    out = assemble(plan, ['Ciao <a href="x">mondo</a> <a href="x">ora</a></a>'], escape=True)
    assert out == '<p>Ciao <a href="x">mondo</a> &lt;a href="x"&gt;ora&lt;/a&gt;&lt;/a&gt;</p>'
    assert sentence.tags == ('<a href="x">', "</a>")


def test_html_keeps_a_link_that_spells_its_address_as_it_is() -> None:
    # as Mastodon writes a URL, an @mention and a #hashtag; a link with words is translated
    url = (
        '<a href="https://example.com/some/long/path"><span class="invisible">https://</span>'
        '<span class="ellipsis">example.com/some/lo</span><span class="invisible">ng/path'
        "</span></a>"
    )
    mention = '<a href="https://m.social/@alice" class="u-url mention">@<span>alice</span></a>'
    tag = '<a href="https://mastodon.social/tags/ai" class="mention hashtag">#<span>AI</span></a>'
    markup = f"<p>Out now! {url} Thanks {mention}. {tag} Read <a href='/docs'>the docs</a>.</p>"
    plan = plan_html(markup)
    sentences = [p.text for p in plan if p.sentence]
    assert sentences == ["Out now!", "Thanks", ".", "Read <a href='/docs'>the docs</a>."]
    out = assemble(plan, ["Uscito!", "Grazie", ".", "Leggi <a href='/docs'>i documenti</a>."],
                   escape=True)  # fmt: skip
    assert out == (
        f"<p>Uscito! {url} Grazie {mention}. {tag} Leggi <a href='/docs'>i documenti</a>.</p>"
    )


# ---------------------------------------------------------------------- alignment
def test_word_alignment_groups_pieces_into_words() -> None:
    src = ["\u2581The", "\u2581cat", "\u2581sleep", "s", ".", "<eos>"]
    tgt = ["\u2581Il", "\u2581gatto", "\u2581dor", "me", ".", "<eos>"]
    w = torch.zeros(len(tgt), len(src))
    for t, s in [(0, 0), (1, 1), (2, 2), (3, 3), (4, 4), (5, 5)]:
        w[t, s] = 1.0
    al = word_alignment(w, src, tgt)
    assert al["source_words"] == ["The", "cat", "sleeps", "."]
    assert al["target_words"] == ["Il", "gatto", "dorme", "."]
    assert al["pairs"] == [[0, 0], [1, 1], [2, 2], [3, 3]] and al["pharaoh"] == "0-0 1-1 2-2 3-3"
    w[1] = 0.0
    w[1, 2] = 0.7  # "gatto" looks at "sleep" most
    w[1, 1] = 0.3
    assert word_alignment(w, src, tgt)["pairs"][1] == [2, 1]


# ---------------------------------------------------------------------- keys and limits
def test_keys_file_and_lookup(tmp_path: Path) -> None:
    path = tmp_path / "keys"
    path.write_text("# comment\n\nalpha\nbeta 30  # limited\n")
    ring = KeyRing.from_file(path)
    assert len(ring) == 2
    alpha, beta = ring.lookup("alpha"), ring.lookup("beta")
    assert alpha is not None and alpha.req_limit is None
    assert beta is not None and beta.req_limit == 30
    assert ring.lookup("alph") is None and ring.lookup("alpha ") is None and ring.lookup("") is None
    path.write_text("alpha lots\n")
    with pytest.raises(ValueError, match=r"keys:1: expected 'KEY \[REQUESTS_PER_MINUTE\]'"):
        KeyRing.from_file(path)


def test_rate_limiter_window(monkeypatch: pytest.MonkeyPatch) -> None:
    now = [1000.0]
    monkeypatch.setattr(time, "monotonic", lambda: now[0])
    lim = RateLimiter()
    assert [lim.allow("a", 2) for _ in range(3)] == [True, True, False]
    assert lim.allow("b", 2)  # per identity
    now[0] += 59.0
    assert not lim.allow("a", 2)
    now[0] += 1.5  # the first two hits have left the 60 s window
    assert lim.allow("a", 2) and lim.allow("a", 2) and not lim.allow("a", 2)


# ---------------------------------------------------------------------- scores
def _texts(translator: Translator, sentences: list[str], beam: int) -> list[str]:
    return [r.text for r in translator.translate(sentences, search=search_config(beam))]


def test_scored_translations_match_translate(translator: Translator) -> None:
    sentences = ["Where is the train station?", "I am hungry.", ""]
    scored = translator.translate(sentences, search=search_config(4, 3))
    assert [r.text for r in scored] == _texts(translator, sentences, 4)
    assert [r.source for r in scored] == sentences
    for result in scored[:2]:
        cands = result.candidates
        assert 1 <= len(cands) <= 3
        assert len({c.text for c in cands}) == len(cands)  # no two alike
        for c in cands:  # confidence is the log-prob per token, <eos> included
            assert c.confidence == pytest.approx(c.log_prob / (len(c.ids) + 1))
            assert c.confidence <= 0 and c.pieces == 1
            assert translator.tgt_tokenizer.decode(list(c.ids)) == c.text
        assert [c.score for c in cands] == sorted((c.score for c in cands), reverse=True)
    empty = scored[2].candidates
    assert empty[0].text == "" and math.isclose(empty[0].confidence, 0.0) and empty[0].pieces == 0
    (greedy,) = translator.translate(["I am hungry."], search=search_config(1))
    assert len(greedy.candidates) == 1 and greedy.text == _texts(translator, ["I am hungry."], 1)[0]


def test_attention_replays_the_models_own_tokens(translator: Translator) -> None:
    best = translator.translate(["The cat is sleeping on the sofa."])[0].candidates[0]
    assert best.read == "The cat is sleeping on the sofa."
    maps = translator.attention(best.read, tgt_ids=best.ids)
    assert not maps.teacher_forced and maps.translation == best.text
    assert len(maps.out_tokens) == len(best.ids) + 1  # and <eos>


# ---------------------------------------------------------------------- the worker
def test_worker_batches_waiting_sentences_and_bounds_the_queue(translator: Translator) -> None:
    batcher = Batcher(translator, max_queue=5, max_sentences=64)
    futures = batcher.submit(["I am hungry.", "You are tired.", "We go home."], Decoding(1, 1))
    with pytest.raises(QueueFull, match="3 of 5 sentences waiting, this request has 3"):
        batcher.submit(["a.", "b.", "c."], Decoding(1, 1))
    others = batcher.submit(["The dog runs."], Decoding(2, 2))  # another decoding: own batch
    batcher.start()  # everything was waiting: one batch per decoding setting
    try:
        texts = [f.result(120).candidates[0].text for f in futures]
        assert len(others[0].result(120).candidates) == 2
    finally:
        batcher.stop()
    assert texts == _texts(translator, ["I am hungry.", "You are tired.", "We go home."], 1)
    stats = batcher.snapshot()
    assert stats["batches"] == 2 and stats["sentences"] == 4 and stats["max_batch_sentences"] == 3
    assert stats["rejected_requests"] == 1


def test_a_request_larger_than_the_queue_runs_when_the_queue_is_empty(
    translator: Translator,
) -> None:
    batcher = Batcher(translator, max_queue=2, max_sentences=64)
    big = ["I am hungry.", "You are tired.", "We go home."]
    futures = batcher.submit(big, Decoding(1, 1))  # 3 sentences, queue of 2, nothing waiting
    with pytest.raises(QueueFull, match="has 3, it runs once the queue is empty"):
        batcher.submit(big, Decoding(1, 1))  # now something waits: refused, retry later
    with pytest.raises(QueueFull, match="3 of 2 sentences waiting, this request has 1\\)"):
        batcher.submit(["a."], Decoding(1, 1))
    batcher.start()
    try:
        texts = [f.result(120).candidates[0].text for f in futures]
    finally:
        batcher.stop()
    assert texts == _texts(translator, big, 1)
    assert batcher.snapshot()["rejected_requests"] == 2


def test_serve_options_are_checked_before_anything_loads(tmp_path: Path) -> None:
    bad = CliRunner().invoke(app, ["serve", "--char-limit", "0"])
    assert bad.exit_code == 2 and "--char-limit must be a positive number" in bad.output
    bad = CliRunner().invoke(app, ["serve", "--api-keys", str(tmp_path / "none")])
    assert bad.exit_code == 2 and "does not exist" in bad.output
    assert "Traceback" not in bad.output


def test_a_request_stops_counting_as_its_last_byte_is_sent() -> None:
    """The client may read its whole answer before the handler returns: by then the request
    must no longer count as in flight (the shutdown message and /health rely on it)."""
    import asyncio
    from types import SimpleNamespace

    from attenzione.serve.app import _CountInFlight

    state = SimpleNamespace(in_flight=0)
    seen: list[int] = []

    async def handler(scope: object, receive: object, send: Any) -> None:
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"a", "more_body": True})
        await send({"type": "http.response.body", "body": b"b"})
        seen.append(state.in_flight)  # after the last byte, before returning

    async def client_side(message: dict[str, Any]) -> None:
        seen.append(state.in_flight)

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b""}

    counted = _CountInFlight(handler, state)
    asyncio.run(counted({"type": "http"}, receive, client_side))
    # start and first chunk: counted; the last chunk arrives with the count already down
    assert seen == [1, 1, 0, 0] and state.in_flight == 0

    async def failing(scope: object, receive: object, send: Any) -> None:
        raise RuntimeError("boom")

    with pytest.raises(RuntimeError):
        asyncio.run(_CountInFlight(failing, state)({"type": "http"}, receive, client_side))
    assert state.in_flight == 0  # a failed request is not counted forever either
