"""The text pipeline: each step through its public interface, on inputs made here.

A step prepares segments (``Step.prepare(segments, ctx)``) and restores one segment's
translation (``Step.restore(segment, text, ctx, tokens)``); a :class:`Context` is built from a
tokenizer. Most tests use a tiny SentencePiece vocabulary with byte fallback, as the shipped
model's is (a pictograph, "ń" or "ł" is spelled in bytes); a few read facts of the shipped
model's source vocabulary ("Italy" is one piece). No model is run: where a translation is
needed the test writes one.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Sequence

import pytest

from attenzione.data import EOS_ID, SentencePieceTokenizer, Tokenizer, WordTokenizer
from attenzione.languages import minor_words
from attenzione.pipeline import STEPS, Context, Pipeline, Segment, marks
from attenzione.pipeline.base import Recut
from attenzione.pipeline.capitals import Capitals, sentence_case, with_names
from attenzione.pipeline.carry import MARKUP_TAG, Carry, stretches
from attenzione.pipeline.continuation import Continuation
from attenzione.pipeline.inline_tags import InlineTags
from attenzione.pipeline.markup import Tag, inline_pairs
from attenzione.pipeline.names import fold, unfold
from attenzione.pipeline.normalize import Normalize
from attenzione.pipeline.number_format import NumberFormat
from attenzione.pipeline.numbers import Numbers
from attenzione.pipeline.split import Split, pieces
from attenzione.pipeline.title_case import TitleCase, title_case, truecase
from attenzione.pipeline.words import FOLD_MIN_LETTERS, base_letter, foldable, in_capitals
from attenzione.translator import model_dir
from attenzione.translator.translator import PRETRAINED_DIR

SENTENCES = [
    f"the {a} {n} is {v} today"
    for a in ("red", "old", "big")
    for n in ("cat", "dog", "house")
    for v in ("here", "there")
]
ALL_STEPS = (
    "normalize", "carry", "capitals", "title-case", "split", "continuation", "number-format",
    "numbers", "inline-tags", "names",
)  # fmt: skip

# the title-case minor words of the English profile
MINOR = minor_words("en", "it")


@pytest.fixture(scope="module")
def tok() -> Tokenizer:
    """A vocabulary of a few lower-case English words, with byte fallback: capitalised words,
    digits but 2 and 0, pictographs and letters such as "ń" are spelled in pieces or bytes."""
    return SentencePieceTokenizer.train(
        [s + " 20°C" for s in SENTENCES] * 3, vocab_size=285, byte_fallback=True
    )


@pytest.fixture(scope="module")
def ctx(tok: Tokenizer) -> Context:
    return Context(tok, 63, EOS_ID)


@pytest.fixture(scope="module")
def shipped_ctx() -> Context:
    """A Context on the shipped model's source vocabulary and word lists (no model loaded)."""
    src, _ = model_dir.load_tokenizers(PRETRAINED_DIR)
    translated = model_dir.read_words(PRETRAINED_DIR, model_dir.TRANSLATED_NAME)
    return Context(
        src,
        100,
        EOS_ID,
        known_words=model_dir.read_words(PRETRAINED_DIR),
        not_free=frozenset(translated or ()),
    )


def _cut(text: str, ctx: Context, *, inline: bool = True) -> list[tuple[str, str, bool]]:
    """A line's stretches as (glue, text, translated?), for lines without inline tags."""
    out = stretches(text, ctx, inline=inline)
    assert not any(s.tags for s in out), out
    return [(s.glue, s.text, s.readable) for s in out]


def _prepared(steps: Sequence[str], line: str, ctx: Context) -> list[tuple[str, bool]]:
    """The (text, translated?) of each segment the named steps make of ``line``."""
    return [(s.text, s.translate) for s in Pipeline.build(steps).prepare(line, ctx)]


def echo_aligner(segment: Segment, tokens: Sequence[int]) -> list[tuple[int, Tag]]:
    """A stand-in for the attention aligner when the "translation" is the segment's own text:
    each inline tag goes where it stood (before its non-space character ``at``; a closing tag
    right after the character before it)."""
    text = segment.text
    offsets = [i for i, c in enumerate(text) if not c.isspace()]
    placed = []
    for t in segment.tags:
        if not t.opens and 0 < t.at <= len(offsets):
            at = offsets[t.at - 1] + 1
        elif t.at < len(offsets):
            at = offsets[t.at]
        else:
            at = len(text)
        placed.append((at, t))
    return sorted(placed, key=lambda p: p[0])


def _echo(pipeline: Pipeline, line: str, ctx: Context) -> str:
    """``line`` prepared, "translated" by a model that writes what it reads, and restored."""
    segments = pipeline.prepare(line, ctx)
    texts = [pipeline.restore(s, s.text, ctx, []) for s in segments]
    return pipeline.join(segments, texts)


# ---------------------------------------------------------------- Pipeline.build


def test_the_steps_are_the_documented_ten_in_their_default_order() -> None:
    assert tuple(s.name for s in STEPS) == ALL_STEPS
    assert Pipeline.build().names == ALL_STEPS
    assert Pipeline.build(None).names == ALL_STEPS


def test_build_keeps_the_default_order_whatever_order_the_names_come_in() -> None:
    assert Pipeline.build(["names", "normalize", "carry"]).names == ("normalize", "carry", "names")
    assert Pipeline.build(off=["split", "names"]).names == tuple(
        n for n in ALL_STEPS if n not in ("split", "names")
    )
    assert Pipeline.build(["carry", "split"], off=["split"]).names == ("carry",)
    raw = Pipeline.build(())
    assert raw.names == () and repr(raw) == "Pipeline(raw)"
    assert repr(Pipeline.build(["carry", "normalize"])) == "Pipeline(normalize, carry)"


@pytest.mark.parametrize(
    "steps, off", [(["normalize", "shout"], ()), (None, ["shout"]), (["title_case"], ())]
)
def test_an_unknown_step_name_is_a_value_error_naming_the_steps(
    steps: list[str] | None, off: Sequence[str]
) -> None:
    with pytest.raises(ValueError, match="unknown text step") as exc:
        Pipeline.build(steps, off=off)
    message = str(exc.value)
    assert "\n" not in message
    assert all(name in message for name in ALL_STEPS), message


def test_the_raw_pipeline_strips_the_line_and_reads_it_as_it_is(ctx: Context) -> None:
    raw = Pipeline.build(())
    (seg,) = raw.prepare("  THE cat\u2019s 🍕 <b>here</b>  ", ctx)
    assert (seg.text, seg.glue, seg.translate) == ("THE cat\u2019s 🍕 <b>here</b>", "", True)
    assert raw.restore(seg, "whatever it wrote", ctx, [1, 2]) == "whatever it wrote"
    for blank in ("", "   ", "\t\n"):
        assert raw.prepare(blank, ctx) == []
        assert Pipeline.build().prepare(blank, ctx) == []


def test_join_puts_each_text_after_its_glue_and_leaves_no_edge() -> None:
    segs = [Segment("a"), Segment("🍕", " ", translate=False), Segment("b", " ")]
    assert Pipeline.join(segs, ["A", "🍕", "B"]) == "A 🍕 B"
    assert Pipeline.join(segs, ["", "🍕", "B"]) == "🍕 B"  # an empty translation: no edge
    assert Pipeline.join([], []) == ""


# ---------------------------------------------------------------- normalize


def test_normalize_reads_the_text_as_the_training_data_was_read(ctx: Context) -> None:
    step = Normalize()
    assert step.name == "normalize"
    (seg,) = step.prepare([Segment("\ufeffthe cat\u2019s  house\tis cafe\u0301 ")], ctx)
    assert seg.text == "the cat's house is café"
    (seg,) = step.prepare([Segment("the cat\u02bcs house")], ctx)
    assert seg.text == "the cat's house"
    # a segment carried over as it is is written as it was
    (carried,) = step.prepare([Segment("\u2019 \ufeff", translate=False)], ctx)
    assert carried.text == "\u2019 \ufeff"
    # it undoes nothing
    assert step.restore(seg, "l\u2019 casa", ctx, []) == "l\u2019 casa"
    # in a pipeline: a Windows file's byte-order mark is not read
    assert _prepared(["normalize"], "\ufeffHello.", ctx) == [("Hello.", True)]


# ---------------------------------------------------------------- carry


def test_pictographs_are_carried_and_letters_units_and_currencies_are_not(ctx: Context) -> None:
    assert all(ctx.carries(c) for c in "🍕😊★✓")
    assert not any(ctx.carries(c) for c in "a°€£!.-≤№")


def test_carry_cuts_a_line_around_pictographs_with_their_spacing(ctx: Context) -> None:
    # runs of pictographs with their joiners are carried whole, with the spacing they had
    family = "👨\u200d👩\u200d👧🇮🇹"
    # (with the inline-tags step off: on, a pictograph inside a sentence does not cut it)
    assert _cut(f"the cat 🍕 is here! 😊👍 {family}", ctx, inline=False) == [
        ("", "the cat", True),
        (" ", "🍕", False),
        (" ", "is here!", True),
        (" ", "😊👍", False),
        (" ", family, False),
    ]
    assert _cut("the cat😊!", ctx) == [("", "the cat", True), ("", "😊", False), ("", "!", False)]
    assert _cut("😊 😊", ctx) == [("", "😊", False), (" ", "😊", False)]
    # a character shown as an emoji (the keycap "1️⃣", "©️") is carried whole; "≤" and "№"
    # stay in their sentence
    assert _cut("press 1\ufe0f\u20e3 now", ctx, inline=False) == [
        ("", "press", True),
        (" ", "1\ufe0f\u20e3", False),
        (" ", "now", True),
    ]
    assert _cut("x ≤ 5 in room № 2", ctx) == [("", "x ≤ 5 in room № 2", True)]


def test_a_pictograph_inside_a_sentence_is_a_point_after_the_word_before_it(
    ctx: Context,
) -> None:
    # after a word (or a comma) and before a lower-case letter: the stretch stays whole, the
    # pictograph held as a pair around the word before it (empty opening, itself closing)
    (s,) = stretches("I had bread 🍞 and the coffee.", ctx)
    assert s.readable and s.text == "I had bread and the coffee."
    opening, closing = s.tags
    assert (opening.text, opening.at, opening.opens) == ("", 4, True)  # "Ihad|bread"
    assert (closing.text, closing.at, closing.opens) == (" 🍞", 9, False)
    assert opening.pair == closing.pair == 0
    (glued,) = stretches("yes,👋 world", ctx)
    assert glued.text == "yes, world" and glued.tags[1].text == "👋"
    # before a capital, after a sentence's end, or next to a tag it still cuts
    assert _cut("Thanks! 😊 see you", ctx)[1] == (" ", "😊", False)
    assert _cut("the cat 😊 The dog", ctx)[1] == (" ", "😊", False)
    assert len(stretches("see <b>this</b> 😊 now", ctx)) == 3


def test_web_and_mail_addresses_are_carried_whole(ctx: Context) -> None:
    url = "https://www.example.com/museum/tickets?id=1&x=y"
    # at a sentence's end: cut, the sentence's full stop after it carried too
    assert _cut(f"See {url}.", ctx) == [("", "See", True), (" ", url, False), ("", ".", False)]
    assert _cut("Write to info@example.org, please", ctx, inline=False)[1] == (
        " ",
        "info@example.org",
        False,
    )
    # inside a sentence it is a point: the sentence stays whole
    (s,) = stretches(f"Visit {url} for details.", ctx)
    assert s.text == "Visit for details." and s.tags[1].text == f" {url}"
    # brackets around an address go with it; an address inside a word is no address
    (s,) = stretches("The project (www.example.org) is new.", ctx)
    assert s.tags[1].text == " (www.example.org)"
    assert _cut("xhttps://example.com", ctx) == [("", "xhttps://example.com", True)]


def test_bare_host_names_are_carried_and_abbreviations_are_not(ctx: Context) -> None:
    for host in ("example.com", "shop.example.com", "Amazon.com", "identi.ca", "a.b.org:8080/x"):
        assert _cut(f"See {host}.", ctx) == [
            ("", "See", True),
            (" ", host, False),
            ("", ".", False),
        ]
    # a capitalised word, a dot and a few letters is an abbreviation or a typo, not a host;
    # so are file names, "e.g." and numbers
    for text in ("Sig.ra Rossi", "Tom.si lavò", "e.g. this", "open file.txt now", "it is 3.5 m"):
        assert all(readable for _, _, readable in _cut(text, ctx)), text


def test_split_gives_each_piece_the_tags_it_holds() -> None:
    from attenzione.pipeline.markup import Tag
    from attenzione.pipeline.split import spread

    parts = ["Click Save now.", "The old house."]  # 13 and 12 non-space characters
    tags = [
        Tag("<b>", 5, 0, True),
        Tag("</b>", 9, 0, False),  # around "Save"
        Tag("<i>", 16, 1, True),
        Tag("</i>", 19, 1, False),  # around "old", in the second part
    ]
    first, second = spread(tags, parts)  # type: ignore[misc]
    assert [(t.text, t.at, t.pair) for t in first] == [("<b>", 5, 0), ("</b>", 9, 0)]
    assert [(t.text, t.at, t.pair) for t in second] == [("<i>", 3, 0), ("</i>", 6, 0)]
    across = [Tag("<b>", 10, 0, True), Tag("</b>", 16, 0, False)]  # "now. The"
    assert spread(across, parts) is None


def test_carry_cuts_a_line_around_tags_that_are_not_inline_pairs(ctx: Context) -> None:
    # a lone tag, a block tag and a pair with a cut inside are carried; "a < b" is no tag
    assert _cut('see <a href="x.html">the cat.<br/>the dog', ctx) == [
        ("", "see", True),
        (" ", '<a href="x.html">', False),
        ("", "the cat.", True),
        ("", "<br/>", False),
        ("", "the dog", True),
    ]
    assert _cut("<b>the cat! 🍕 is</b> here", ctx) == [
        ("", "<b>", False),
        ("", "the cat!", True),
        (" ", "🍕", False),
        (" ", "is", True),
        ("", "</b>", False),
        (" ", "here", True),
    ]
    # a pair around no letter or digit (the model would drop "…"), and one next to a digit
    # (the number repair would read "1" and ",000" as two numbers)
    assert _cut("he said <b>…</b> nothing", ctx)[1:3] == [(" ", "<b>", False), ("", "…", False)]
    assert _cut("<b>1</b>,000 cats", ctx)[:2] == [("", "<b>", False), ("", "1", True)]
    # and one between two letters: taken out, "<a>Home</a><a>About</a>" would read "HomeAbout"
    assert [s.text for s in stretches("<a>the cat</a><a>the dog</a> is here", ctx)] == [
        "<a>", "the cat", "</a>", "<a>", "the dog", "</a>", "is here"
    ]  # fmt: skip
    assert _cut("if a < b and c > d", ctx) == [("", "if a < b and c > d", True)]
    # with inline pairs off (the inline-tags step off), every tag cuts
    assert [s.text for s in stretches("the <b>cat</b> is here", ctx, inline=False)] == [
        "the", "<b>", "cat", "</b>", "is here"
    ]  # fmt: skip


def test_an_inline_pair_is_kept_in_the_segment_and_one_around_the_stretch_carried_around_it(
    ctx: Context,
) -> None:
    inline, br = stretches('see <a href="x.html">the cat</a>.<br/>', ctx)
    assert (inline.glue, inline.text, inline.readable) == ("", "see the cat.", True)
    assert inline.tags == (Tag('<a href="x.html">', 3, 0, True), Tag("</a>", 9, 0, False))
    assert (br.text, br.readable, br.tags) == ("<br/>", False, ())
    # the step keeps them in the segment, with the length they were counted on
    line = 'see <a href="x.html">the cat</a>.<br/>'
    seg, carried = Carry().prepare([Segment(line, keep_inline=True)], ctx)
    assert seg.text == "see the cat." and seg.translate
    assert (seg.tags, seg.tags_length) == (inline.tags, 10)
    assert (carried.text, carried.translate, carried.tags) == ("<br/>", False, ())
    # a pair around the whole stretch is carried around it; a pair around no text cuts
    assert _cut("<p><b>the cat</b></p> <i></i>now", ctx) == [
        ("", "<p>", False),
        ("", "<b>", False),
        ("", "the cat", True),
        ("", "</b>", False),
        ("", "</p>", False),
        (" ", "<i>", False),
        ("", "</i>", False),
        ("", "now", True),
    ]


def test_carry_writes_a_tag_and_an_emoji_back_unchanged(ctx: Context) -> None:
    pipeline = Pipeline.build(["carry"])
    segments = pipeline.prepare('<a href="x">🍕</a> the cat 😊', ctx)
    assert [(s.text, s.translate) for s in segments] == [
        ('<a href="x">', False),
        ("🍕", False),
        ("</a>", False),
        ("the cat", True),
        ("😊", False),
    ]
    # a carried segment is written as it is, whatever the model "wrote" for it
    texts = [pipeline.restore(s, "IL GATTO" if s.translate else "x", ctx, []) for s in segments]
    assert texts == ['<a href="x">', "🍕", "</a>", "IL GATTO", "😊"]
    assert pipeline.join(segments, texts) == '<a href="x">🍕</a> IL GATTO 😊'
    # the MARKUP_TAG pattern the service reads tags with
    assert [m.group(0) for m in MARKUP_TAG.finditer('a <b>c</b> <br/> <a href="x"> a < b')] == [
        "<b>", "</b>", "<br/>", '<a href="x">'
    ]  # fmt: skip


def test_carry_writes_the_inline_tags_back_from_their_marks_or_where_they_stood(
    ctx: Context,
) -> None:
    step = Carry()
    (seg,) = step.prepare([Segment("the <b>cat</b> is <i>here</i>", keep_inline=True)], ctx)
    assert seg.text == "the cat is here"
    tags = seg.tags  # the k-th tag stands as marks.mark(k)
    assert [t.text for t in tags] == ["<b>", "</b>", "<i>", "</i>"]
    m = [marks.mark(k) for k in range(4)]
    out = step.restore(seg, f"{m[2]}qui{m[3]} è il {m[0]}gatto{m[1]}", ctx, [])
    assert out == "<i>qui</i> è il <b>gatto</b>"
    # a mark lost on the way: every tag is still written once, where it stood in the source
    lost = step.restore(seg, f"il {m[0]}gatto è qui", ctx, [])
    assert sorted(MARKUP_TAG.findall(lost)) == sorted(t.text for t in tags), lost
    assert MARKUP_TAG.sub("", lost) == "il gatto è qui"
    assert all(marks.is_mark(c) for c in m) and not marks.is_mark("a")
    # a segment without inline tags is left as it is
    assert step.restore(Segment("x"), "y", ctx, []) == "y"


# ---------------------------------------------------------------- capitals


def test_capitals_detection_and_the_code_rule() -> None:
    assert in_capitals("WARNING: DO NOT OPEN") and in_capitals("OK 😊") and in_capitals("GO ON")
    assert not in_capitals("Open File") and not in_capitals("I")
    assert not in_capitals("USA is big")
    # a code of letters and digits and no word of three letters: read as it is
    assert not in_capitals("ID: AB12CD")
    assert in_capitals("YOUR ID: AB12CD")  # a word of three letters: capitals after all


def test_sentence_case() -> None:
    assert sentence_case("WARNING. DO NOT OPEN! WHAT DO I DO?", starts=True) == (
        "Warning. Do not open! What do I do?"
    )
    assert sentence_case("IS HERE", starts=False) == "is here"
    assert sentence_case('"HELLO," SHE SAID. (OK)', starts=True) == '"Hello," she said. (Ok)'


def test_capitals_read_names_as_names(shipped_ctx: Context) -> None:
    # the shipped vocabulary spells "Italy" and "Tom" in fewer pieces than "italy", "tom";
    # "łódź" has letters no English word has
    assert with_names("tom went to italy and łódź", shipped_ctx) == "Tom went to Italy and Łódź"
    assert with_names("the door is open", shipped_ctx) == "the door is open"


def test_capitals_step_reads_a_line_in_sentence_case_and_writes_it_back_in_capitals(
    ctx: Context,
) -> None:
    pipeline = Pipeline.build(["carry", "capitals"])
    segments = pipeline.prepare("THE CAT 🍕 IS HERE", ctx)
    assert [(s.text, s.capitals) for s in segments] == [
        ("The cat", True),
        ("🍕", False),
        ("is here", True),
    ]
    assert pipeline.restore(segments[0], "il gatto è qui", ctx, []) == "IL GATTO È QUI"
    assert pipeline.restore(segments[1], "x", ctx, []) == "🍕"
    # judged on the text, not on the tags around it; a code is not capitals
    assert [(s.text, s.capitals) for s in pipeline.prepare("<p>THE CAT</p>", ctx)] == [
        ("<p>", False),
        ("The cat", True),
        ("</p>", False),
    ]
    (code,) = pipeline.prepare("ID: AB12CD", ctx)
    assert code.text == "ID: AB12CD" and not code.capitals
    assert pipeline.restore(code, "Id: AB12CD", ctx, []) == "Id: AB12CD"
    assert _prepared(["capitals"], "GO ON", ctx) == [("Go on", True)]
    # a sentence after one that ends starts with a capital; one that goes on does not
    assert _prepared(["carry", "capitals"], "STOP. 🍕 THE CAT 😊 IS HERE", ctx) == [
        ("Stop.", True),
        ("🍕", False),
        ("The cat", True),
        ("😊", False),
        ("is here", True),
    ]
    # not capitals: nothing noted, nothing restored
    (plain,) = Capitals().prepare([Segment("The cat is here")], ctx)
    assert plain.text == "The cat is here" and not plain.capitals
    assert Capitals().restore(plain, "Il gatto", ctx, []) == "Il gatto"


# ---------------------------------------------------------------- title-case


def test_title_case_detection() -> None:
    assert title_case("Scientists Discover New Species in the Amazon", MINOR)
    assert title_case("I Haven't Checked The Doors Yet.", MINOR)
    assert not title_case("Tom and Mary visited New York", MINOR)  # a lower-case verb
    assert not title_case("Mother Teresa won the Nobel Peace Prize", MINOR)
    assert not title_case("Open File", MINOR)  # one word after the first


def test_truecase_lowers_ordinary_words_and_keeps_names(tok: Tokenizer, ctx: Context) -> None:
    # this vocabulary spells "red", "house", "here" and "today" in fewer pieces than "Red",
    # "House"…, and "is", "dog" in as many (several) as "Is", "Dog": those stay; a sentence's
    # first word is kept
    assert truecase("The Red House Is Here. The Dog", ctx, starts=True) == (
        "The red house Is here. The Dog"
    )
    assert truecase("Red House", ctx, starts=False) == "red house"
    # "I" and a word with other capitals are kept
    assert truecase("The Red NASA I Here", ctx, starts=True) == "The red NASA I here"
    # a word the data always translates is lower-cased even where the pieces do not tell
    always = Context(tok, 63, EOS_ID, not_free=frozenset({"is", "dog"}))
    assert truecase("The Red House Is Here. The Dog", always, starts=True) == (
        "The red house is here. The dog"
    )


def test_truecase_on_the_shipped_vocabulary_keeps_names(shipped_ctx: Context) -> None:
    assert truecase("Tom Visited Boston", shipped_ctx, starts=True) == "Tom visited Boston"
    # "italy" is a word the data always translates, but "Italy" is the form the vocabulary
    # knows: a name, kept
    assert "italy" in shipped_ctx.not_free
    assert truecase("Tourists Return To Italy", shipped_ctx, starts=True) == (
        "Tourists return to Italy"
    )
    curly = truecase("The World\u2019s Best Pizza Recipes", shipped_ctx, starts=True)
    straight = truecase("The World's Best Pizza Recipes", shipped_ctx, starts=True)
    assert curly == straight.replace("'", "\u2019")


def test_title_case_step(ctx: Context) -> None:
    assert _prepared(["title-case"], "The Red House Is Here Today", ctx) == [
        ("The red house Is here today", True)
    ]
    # not a headline, or a line in capitals: read as it is
    assert _prepared(["title-case"], "The Red house is here", ctx) == [
        ("The Red house is here", True)
    ]
    assert _prepared(["title-case"], "THE RED HOUSE IS HERE", ctx) == [
        ("THE RED HOUSE IS HERE", True)
    ]
    # nothing to undo
    (seg,) = TitleCase().prepare([Segment("The Red House Is Here")], ctx)
    assert TitleCase().restore(seg, "La Casa", ctx, []) == "La Casa"


# ---------------------------------------------------------------- split


def test_a_long_line_is_cut_into_pieces_that_fit_and_nothing_is_dropped(tok: Tokenizer) -> None:
    small = Context(tok, 16, EOS_ID)
    long = "the red cat is here. " * 6 + "the " + "old dog " * 20
    cut = pieces(long.strip(), small)
    assert len(cut) > 6
    assert all(small.fits(p) for p in cut)
    assert " ".join(cut).split() == long.split()  # every word once, in order
    assert pieces("the red cat", small) == ["the red cat"]
    # the step: one segment per piece, each after a space, numbered
    segments = Split().prepare([Segment(long.strip())], small)
    assert [s.text for s in segments] == cut
    assert [s.piece for s in segments] == [(k, len(cut)) for k in range(len(cut))]
    assert [s.glue for s in segments] == [""] + [" "] * (len(cut) - 1)
    assert all(s.translate for s in segments)
    # a line that fits is left alone
    (seg,) = Split().prepare([Segment("the red cat")], small)
    assert (seg.text, seg.piece) == ("the red cat", (0, 1))


def test_a_word_too_long_for_the_model_is_copied_as_it_was_written(tok: Tokenizer) -> None:
    small = Context(tok, 12, EOS_ID)
    word = "x" + "0123456789" * 3  # a hash, say: digits are a byte each
    assert not small.fits(word)
    assert pieces(f"the cat {word} the dog", small) == ["the cat", word, "the dog"]
    assert _prepared(["split"], f"the cat {word} the dog", small) == [
        ("the cat", True),
        (word, False),
        ("the dog", True),
    ]
    # in a line in capitals, the copy is in capitals as the line was
    loud = _prepared(["capitals", "split"], f"THE CAT {word.upper()} THE DOG", small)
    assert loud[1] == (word.upper(), False) and loud[0] == ("The cat", True)


# ---------------------------------------------------------------- continuation


def test_a_stretch_that_goes_on_with_a_sentence_starts_lower_case(ctx: Context) -> None:
    pipeline = Pipeline.build(["carry", "continuation"])
    before, cat, after = pipeline.prepare("I love 🐱 sleeping on the sofa", ctx)
    assert not before.continues and after.continues
    assert pipeline.restore(after, "Sta dormendo sul divano", ctx, []) == "sta dormendo sul divano"
    assert pipeline.restore(before, "Io amo", ctx, []) == "Io amo"
    # an acronym keeps its capitals; a mark before the first letter is skipped
    assert pipeline.restore(after, "NASA dorme", ctx, []) == "NASA dorme"
    b = marks.mark(0)
    assert Continuation().restore(after, f"{b}Sta qui", ctx, []) == f"{b}sta qui"
    # a stretch that starts with a capital starts a sentence of its own
    *_, new = pipeline.prepare("I love 🐱 Sleeping on the sofa", ctx)
    assert not new.continues
    assert pipeline.restore(new, "Sta dormendo", ctx, []) == "Sta dormendo"


def test_the_pieces_of_a_split_line_are_not_continuations(tok: Tokenizer) -> None:
    small = Context(tok, 16, EOS_ID)
    segments = Pipeline.build(["split", "continuation"]).prepare(
        "the red cat is here. the old dog is there.", small
    )
    assert [s.text for s in segments] == ["the red cat is here.", "the old dog is there."]
    assert not any(s.continues for s in segments)


# ---------------------------------------------------------------- number-format and numbers


def test_number_format_writes_the_sources_numbers_the_targets_way(tok: Tokenizer) -> None:
    source = "The city has 55,000 people and 2.5 km of walls."
    written = "La città ha 55,000 abitanti e 2.5 km di mura."
    for number_format, want in (
        ("comma", "La città ha 55.000 abitanti e 2,5 km di mura."),
        ("keep", written),
    ):
        ctx = Context(tok, 63, EOS_ID, number_format=number_format)
        pipeline = Pipeline.build(["number-format"])
        (seg,) = pipeline.prepare(source, ctx)
        assert seg.text == source  # the model reads the source as it is
        assert pipeline.restore(seg, written, ctx, []) == want
    assert NumberFormat.name == "number-format"


@pytest.mark.parametrize(
    "source, translation, repaired",
    [
        ("I was born in 2017.", "Sono nato nel 20177.", "Sono nato nel 2017."),
        ("It costs $19.99.", "Costa 19,99.", "Costa $19,99."),
        ("10 gunmen attacked.", "10uomini hanno attaccato.", "10 uomini hanno attaccato."),
        (
            "Tom has 37 cats and 12 dogs.",
            "Tom ha 37 gatti e 12 cani.",
            "Tom ha 37 gatti e 12 cani.",
        ),
        ("No numbers here.", "Nessun numero 7.", "Nessun numero 7."),
    ],
)
def test_numbers_puts_back_a_garbled_number_and_a_dropped_currency_symbol(
    ctx: Context, source: str, translation: str, repaired: str
) -> None:
    pipeline = Pipeline.build(["numbers"])
    (seg,) = pipeline.prepare(source, ctx)
    assert seg.text == source
    assert pipeline.restore(seg, translation, ctx, []) == repaired


def test_numbers_repairs_against_the_source_as_read_before_names_are_folded(ctx: Context) -> None:
    # "numbers" keeps the text before "names" reads Gdańsk as Gdansk; the repair reads digits
    pipeline = Pipeline.build(["numbers", "names"])
    (seg,) = pipeline.prepare("Gdańsk has 470907 people.", ctx)
    assert seg.text == "Gdansk has 470907 people."
    assert Numbers().restore(seg, "Gdańsk ha 4709077 abitanti.", ctx, []) == (
        "Gdańsk ha 470907 abitanti."
    )
    assert pipeline.restore(seg, "Gdansk ha 47090 abitanti.", ctx, []) == (
        "Gdańsk ha 470907 abitanti."
    )


# ---------------------------------------------------------------- inline-tags


def test_a_tagged_stretch_the_model_cannot_read_whole_is_cut_at_its_tags(tok: Tokenizer) -> None:
    small = Context(tok, 6, EOS_ID)
    # a pair inside one of the pieces the line is split into stays with that piece
    inside = Pipeline.build().prepare("the <b>cat</b> is here and the dog is there", small)
    assert [s.text for s in inside] == ["the cat", "is", "here", "and the", "dog", "is there"]
    assert [len(s.tags) for s in inside] == [2, 0, 0, 0, 0, 0]
    # a pair across two pieces cannot be placed in either: the line is cut at its tags
    line = "the cat is here <b>and the dog</b> is there"
    segments = Pipeline.build().prepare(line, small)
    assert "<b>" in [s.text for s in segments] and "</b>" in [s.text for s in segments]
    assert not any(s.tags for s in segments)
    # the step itself says so: a split segment whose pieces lost a pair is a Recut
    split = Split().prepare(Carry().prepare([Segment(line, keep_inline=True)], small), small)
    assert any(s.tags and s.piece[1] > 1 for s in split)
    with pytest.raises(Recut):
        InlineTags().prepare(split, small)


@pytest.mark.parametrize(
    "line",
    [
        "the <b>cat</b> is here…",  # the tokenizer reads "…" as "...": it does not spell it
        f"the <b>cat</b> is {marks.mark(0)} here",  # the text has a mark's character
        "THE <b>CAT</b> İS HERE",  # in sentence case "İS" is three characters
    ],
)
def test_a_tagged_stretch_whose_characters_cannot_be_counted_is_cut_at_its_tags(
    ctx: Context, line: str
) -> None:
    segments = Pipeline.build().prepare(line, ctx)
    assert [s.text for s in segments][1:4] == ["<b>", "cat", "</b>"]
    assert not any(s.tags for s in segments)


def test_inline_tags_are_placed_by_the_aligner_and_written_back(tok: Tokenizer) -> None:
    calls: list[tuple[str, list[int]]] = []

    def aligner(segment: Segment, tokens: Sequence[int]) -> list[tuple[int, Tag]]:
        calls.append((segment.text, list(tokens)))
        opening, closing = segment.tags
        return [(0, opening), (5, closing)]  # around "gatto" of "gatto rosso"

    ctx = Context(tok, 63, EOS_ID, place_tags=aligner)
    pipeline = Pipeline.build()
    (seg,) = pipeline.prepare("the <b>red</b> cat", ctx)
    assert seg.text == "the red cat" and seg.translate
    out = pipeline.restore(seg, "gatto rosso", ctx, [7, 8])
    assert out == "<b>gatto</b> rosso"
    assert calls == [("the red cat", [7, 8])]
    # with inline-tags off, the tags cut the line and are carried where they stand
    off = Pipeline.build(off=["inline-tags"])
    assert [(s.text, s.translate) for s in off.prepare("the <b>red</b> cat", ctx)] == [
        ("the", True),
        ("<b>", False),
        ("red", True),
        ("</b>", False),
        ("cat", True),
    ]
    # no aligner: the tags go where they stood in the source, each once
    bare = Context(tok, 63, EOS_ID)
    (seg,) = pipeline.prepare("the <b>red</b> cat", bare)
    assert pipeline.restore(seg, "il gatto rosso", bare, [7]).count("<b>") == 1


# ---------------------------------------------------------------- names


def test_base_letters() -> None:
    assert [base_letter(c) for c in "ńğłŁđıřș€"] == [*"nglLdirs", None]
    assert FOLD_MIN_LETTERS == 3


def test_a_name_is_folded_and_unfolded_whole(ctx: Context) -> None:
    read, swaps = fold("I visited Gdańsk.", ctx)
    assert (read, swaps) == ("I visited Gdansk.", (("Gdansk", "Gdańsk"),))
    assert unfold("Ho visitato Gdansk.", swaps) == "Ho visitato Gdańsk."
    # a whole word only; a reading whose case the translation changed is written back too
    assert unfold("Da Gdansk a Gdansky, gdansk.", swaps) == "Da Gdańsk a Gdansky, Gdańsk."
    both = (("GDANSK", "GDAŃSK"), ("Gdansk", "Gdańsk"))  # one name in two cases
    assert unfold("Gdansk e GDANSK, gdansk", both) == "Gdańsk e GDAŃSK, GDAŃSK"
    assert unfold("nothing to do", ()) == "nothing to do"
    # a decomposed name is read in NFC, as one
    nfd = unicodedata.normalize("NFD", "I live in Gdańsk and Łódź.")
    read, swaps = fold(nfd, ctx)
    assert read == "I live in Gdansk and Lodz."
    assert unfold(read, swaps) == "I live in Gdańsk and Łódź."


def test_which_words_are_folded(tok: Tokenizer, ctx: Context) -> None:
    # "Doncic" is a word of the text: "Dončić" keeps its bytes; "à", "ó" are Latin-1, which
    # the model learned to copy ("Kraków" is kept as it is)
    read, swaps = fold("Erdoğan met Dončić and Doncic in Kraków, Plzeň; à la carte, no.", ctx)
    assert read == "Erdogan met Dončić and Doncic in Kraków, Plzen; à la carte, no."
    assert dict(swaps) == {"Erdogan": "Erdoğan", "Plzen": "Plzeň"}
    # the user's own ASCII spelling anywhere in the text, in any case, keeps the bytes: the
    # write-back would rewrite it ("lodz.pl" → "Łódź.pl")
    for text in ("Visit lodz.pl about Łódź.", "Mail erdogan@x.org on Erdoğan.", "ŁÓDŹ (LODZ)"):
        assert fold(text, ctx) == (text, ()), text
    assert fold("Łodz and Lódź", ctx) == ("Łodz and Lódź", ())  # two words read alike
    assert fold("Łó and Łódź", ctx) == ("Łó and Lodz", (("Lodz", "Łódź"),))  # "Łó" is short
    # a reading that is a known target word would come back as that word, and one the
    # training data always translates would be translated ("Sąd" → "Sad")
    lists = Context(tok, 63, EOS_ID, known_words=["casa"], not_free=frozenset({"sad"}))
    assert fold("Căsa Blăsk", lists) == ("Căsa Blask", (("Blask", "Blăsk"),))
    assert fold("The Sąd ruled.", lists) == ("The Sąd ruled.", ())
    assert foldable("Sąd", lists) is None and foldable("Sąd", ctx) == "Sad"
    # a vocabulary without byte pieces spells nothing in bytes: nothing is folded
    words = Context(WordTokenizer.train(SENTENCES), 12, EOS_ID)
    assert fold("Gdańsk", words) == ("Gdańsk", ())


def test_names_step_with_capitals_reads_the_name_as_a_name(ctx: Context) -> None:
    pipeline = Pipeline.build(["normalize", "carry", "capitals", "names"])
    (seg,) = pipeline.prepare("I LIVE IN ŁÓDŹ.", ctx)
    assert seg.text == "I live in Lodz."
    assert pipeline.restore(seg, "Abito a Lodz.", ctx, []) == "ABITO A ŁÓDŹ."
    (seg,) = pipeline.prepare("Gdańsk and GDAŃSK are one city.", ctx)
    assert seg.text == "Gdansk and GDANSK are one city."
    assert pipeline.restore(seg, "Gdansk e GDANSK sono una città.", ctx, []) == (
        "Gdańsk e GDAŃSK sono una città."
    )


# ---------------------------------------------------------------- the whole pipeline


ECHO_LINES = [
    "the <b>cat</b> is here 😊",
    "<p>THE CAT 🍕 IS HERE</p>",
    "I visited Gdańsk 🎉 and <i>Łódź</i> today.",
    'see <a href="x.html">the <b>red</b> cat</a>.<br/>the dog',
    "press 1\ufe0f\u20e3 now 👨\u200d👩\u200d👧",
    "I LIVE IN ŁÓDŹ.",
    "WARNING: DO NOT OPEN <b>THE DOOR</b>!",
    "Tom has 37 cats, 12 dogs and $19.99.",
    "I love 🐱 sleeping on the sofa",
    "ID: AB12CD",
    "😊 👍 !",
]


@pytest.mark.parametrize("line", ECHO_LINES)
def test_a_model_that_writes_what_it_reads_gives_the_line_back(tok: Tokenizer, line: str) -> None:
    """prepare → the "model" → restore is the identity when the model writes its input."""
    ctx = Context(tok, 63, EOS_ID, place_tags=echo_aligner)
    assert _echo(Pipeline.build(), line, ctx) == line
    assert _echo(Pipeline.build(off=["inline-tags"]), line, ctx) == line
    assert _echo(Pipeline.build(()), line, ctx) == line


def test_an_echoed_long_line_is_given_back_whole(tok: Tokenizer) -> None:
    small = Context(tok, 16, EOS_ID, place_tags=echo_aligner)
    word = "x" + "0123456789" * 3
    line = f"THE RED CAT IS HERE. THE OLD DOG 🍕 IS THERE {word.upper()} TODAY."
    segments = Pipeline.build().prepare(line, small)
    assert len([s for s in segments if s.translate]) > 2  # it was split
    assert _echo(Pipeline.build(), line, small) == line


def test_every_tag_comes_back_once_whatever_the_model_writes(tok: Tokenizer) -> None:
    """A model that drops every mark: the inline tags still come back once, nested."""
    ctx = Context(tok, 63, EOS_ID, place_tags=echo_aligner)
    pipeline = Pipeline.build()
    for line in ("the <b>cat</b> is <i>here</i>", 'the <a href="x"><b>red</b> cat</a> is here'):
        segments = pipeline.prepare(line, ctx)
        texts = [pipeline.restore(s, "qualcosa di nuovo", ctx, []) for s in segments]
        out = pipeline.join(segments, texts)
        tags = MARKUP_TAG.findall(line)
        got = MARKUP_TAG.findall(out)
        assert sorted(got) == sorted(tags), out
        assert len(inline_pairs(list(enumerate(got)))) == len(tags) // 2, out
