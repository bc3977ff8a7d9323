"""The shipped model with its pipeline: properties that any good model must keep, not strings.

One small fixed set of sentences is translated once (one batch, one Translator for the
module), and each test checks a property of what came back: numbers kept, tags balanced and
as many as the source has, emoji carried exactly once, capitals kept, a name with rare
letters written exactly, no word left untranslated that the model translates in the same
sentence written the ordinary way, no stray byte. No test pins a translation, and none
asserts what the model alone (``steps=()``) gets wrong: a better model may get it right.
"""

from __future__ import annotations

import re
import unicodedata

import pytest

from attenzione.config import search_config
from attenzione.data.tokenizers import is_byte_piece
from attenzione.evaluation import number_fidelity
from attenzione.pipeline.carry import MARKUP_TAG
from attenzione.pipeline.markup import inline_pairs
from attenzione.translator.translator import PRETRAINED_DIR, Translation, Translator

pytestmark = pytest.mark.skipif(
    not (PRETRAINED_DIR / "model.safetensors").is_file(), reason="no shipped model in this checkout"
)

NUMBERS = [
    "Tom has 37 cats and 12 dogs.",
    "I was born in 1990.",
    "The meeting starts at 9:30 and ends at 11:45.",
    "Call me at 555-1234.",
    "The transformer architecture was introduced in 2017.",
    "The city has 55,000 people and 2.5 km of walls.",
    "Tom didn't come back until after 2:30.",
]
CURRENCY = ["It costs $19.99.", "A ticket costs £5."]
# a sentence with inline tags, and the same sentence without them
INLINE = {
    "Click <b>Save</b> to keep your changes.": "Click Save to keep your changes.",
    'The <a href="https://example.com">new version</a> is available now.': (
        "The new version is available now."
    ),
    "Press <kbd>Ctrl</kbd>+<kbd>S</kbd> to save the file.": "Press Ctrl+S to save the file.",
}
TAGS = [*INLINE, "<p>The cat is sleeping.</p>", "<b>Tom</b> is photogenic, but Mary isn't."]
# a line and what is carried at its end, with the space before it
EMOJI = {
    "I love pizza 🍕!": " 🍕!",
    "Thanks! 😊": " 😊",
    "I love 🐱 and pasta.": "",
    "THANK YOU 😊": " 😊",
}
# a line in capitals or title case, and the same sentence written the ordinary way
CASED = {
    "WARNING: DO NOT OPEN THE DOOR.": "Warning: do not open the door.",
    "SHIPS RETURN TO ITALY": "Ships return to Italy",
    "SAVE THE FILE BEFORE YOU CLOSE IT.": "Save the file before you close it.",
    "I Haven't Checked The Doors Yet.": "I haven't checked the doors yet.",
    "Scientists Discover New Species in the Amazon": (
        "Scientists discover new species in the Amazon"
    ),
}
# a line with names whose letters the vocabulary spells in bytes, and the names as written
NAMES = {
    "I visited Gdańsk last year.": ["Gdańsk"],
    "Erdoğan spoke in Ankara.": ["Erdoğan"],
    "I live in Łódź.": ["Łódź"],
    "I LIVE IN ŁÓDŹ.": ["ŁÓDŹ"],  # a capitals line reads the name as a name
    "Gdańsk and GDAŃSK are the same city.": ["Gdańsk", "GDAŃSK"],  # each as written
    unicodedata.normalize("NFD", "I live in Gdańsk and Łódź."): ["Gdańsk", "Łódź"],
}
# a line with web or mail addresses, and the addresses
ADDRESSES = {
    "Visit https://www.example.com/museum/tickets for details.": [
        "https://www.example.com/museum/tickets"
    ],
    "Write to info@example.org if you have questions.": ["info@example.org"],
    "The project (www.example.org) is new, see www.example.org/news.": [
        "(www.example.org)",
        "www.example.org/news",
    ],
    # bare host names, no scheme (issue 53: "Esempio di visita.com", "negozio.com")
    "Visit example.com today.": ["example.com"],
    "Go to shop.example.com now.": ["shop.example.com"],
}
# Europarl-like sentences: the kind of text the lower-cased Europarl (corpus tag "lc") taught
# the model; untagged, they must come back in ordinary case. The names must keep capitals.
PROSE = {
    "The European Parliament adopted the resolution on Tuesday.": [],
    "Mr President, the Commission must act now.": [],
    "The Council met in Brussels to discuss the budget.": [],
    "I would like to thank the rapporteur, Mrs Schmidt, for her work.": ["Schmidt"],
    "The Member States agreed on a common position with Mr Barroso.": ["Barroso"],
}
APOSTROPHES = ["I don\u2019t know what it\u2019s about.", "I don't know what it's about."]
BYTES = ["Invoice № 42 is paid."]

LINES = list(
    dict.fromkeys(
        [
            *NUMBERS,
            *CURRENCY,
            *TAGS,
            *INLINE.values(),
            *EMOJI,
            *CASED,
            *CASED.values(),
            *NAMES,
            *ADDRESSES,
            *APOSTROPHES,
            *BYTES,
            *PROSE,
        ]
    )
)


@pytest.fixture(scope="module")
def tr() -> Translator:
    return Translator.from_pretrained()


@pytest.fixture(scope="module")
def out(tr: Translator) -> dict[str, Translation]:
    """Every line of the set, translated once, in one batch, with the model's pipeline."""
    return dict(zip(LINES, tr.translate(LINES), strict=True))


def _words(text: str) -> set[str]:
    return set(re.findall(r"[^\W\d_]+", text.lower()))


def test_every_line_gets_a_translation(out: dict[str, Translation]) -> None:
    for line, result in out.items():
        assert result.source == line
        assert result.text.strip() and result.candidates[0].ids, (line, result.text)
        assert "\ufffd" not in result.text, (line, result.text)


def test_the_numbers_of_a_sentence_are_kept(out: dict[str, Translation]) -> None:
    texts = [out[s].text for s in NUMBERS + CURRENCY]
    fid = number_fidelity(NUMBERS + CURRENCY, texts)
    assert fid.kept == fid.total, texts
    # a currency symbol the model drops is put back (or the currency is named in words)
    dollars, pounds = (out[s].text for s in CURRENCY)
    assert "$" in dollars or "dollar" in dollars.lower(), dollars
    assert "£" in pounds or "sterlin" in pounds.lower(), pounds


def test_the_number_steps_touch_only_numbers_and_the_model_alone_is_the_model(
    tr: Translator, out: dict[str, Translation]
) -> None:
    """The same pipeline less ``numbers`` and ``number-format`` reads the same text and
    writes the same words; the full pipeline keeps every number, the model alone is
    whatever the model wrote (how many it kept is not this test's business)."""
    fewer = [n for n in tr.pipeline.names if n not in ("numbers", "number-format")]
    unrepaired = tr.translate(NUMBERS, steps=fewer)
    raw = tr.translate(NUMBERS, steps=())

    def words(text: str) -> str:
        return re.sub(r"[\d\s.,:/-]", "", text)

    for line, plain in zip(NUMBERS, unrepaired, strict=True):
        assert words(out[line].text) == words(plain.text), (out[line].text, plain.text)
    kept = number_fidelity(NUMBERS, [out[s].text for s in NUMBERS])
    assert kept.kept == kept.total
    assert number_fidelity(NUMBERS, [r.text for r in raw]).kept <= kept.kept
    for result in raw:
        cand = result.candidates[0]
        assert cand.text == tr.tgt_tokenizer.decode(list(cand.ids))  # no step touched it
        assert cand.read == result.source and cand.pieces == 1


def test_tags_come_back_balanced_and_as_many_as_the_source_has(
    out: dict[str, Translation],
) -> None:
    for line in TAGS:
        text = out[line].text
        tags, got = MARKUP_TAG.findall(line), MARKUP_TAG.findall(text)
        assert sorted(got) == sorted(tags), (line, text)  # each once, as written
        assert len(inline_pairs(list(enumerate(got)))) == len(inline_pairs(list(enumerate(tags))))
        assert "-t>" not in text and "</" not in MARKUP_TAG.sub("", text), text
    # a pair around the whole line stays around it
    para = out["<p>The cat is sleeping.</p>"].text
    assert para.startswith("<p>") and para.endswith("</p>"), para


def test_a_sentence_with_inline_tags_is_translated_whole(out: dict[str, Translation]) -> None:
    """Its text is the translation of the same sentence without its tags."""
    for line, plain in INLINE.items():
        tagged = " ".join(MARKUP_TAG.sub("", out[line].text).split())
        assert tagged == " ".join(out[plain].text.split()), (out[line].text, out[plain].text)
        assert out[line].candidates[0].pieces == 1


def test_emoji_are_carried_exactly_once_where_they_stood(out: dict[str, Translation]) -> None:
    for line, tail in EMOJI.items():
        text = out[line].text
        for ch in {c for c in line if ord(c) > 0x2190 and not c.isalnum()}:
            assert text.count(ch) == line.count(ch) == 1, (line, text)
        assert text.endswith(tail), (line, text)
        read = out[line].candidates[0].read  # what the model read: not the emoji
        assert not any(ch in read for ch in "🍕😊🐱"), (line, read)
    # the cat stands between the two stretches it cut
    pasta = out["I love 🐱 and pasta."].text
    assert not pasta.startswith("🐱") and not pasta.endswith("🐱"), pasta


def test_web_and_mail_addresses_are_written_exactly(out: dict[str, Translation]) -> None:
    for line, addresses in ADDRESSES.items():
        text = out[line].text
        for address in addresses:
            assert text.count(address) == line.count(address), (line, text)
        # carried inside the sentence, which was read whole
        assert out[line].candidates[0].pieces == 1, (line, text)


def test_a_line_too_long_to_read_whole_keeps_its_tags_in_their_sentences(tr: Translator) -> None:
    """Split into sentences, each sentence's tags and emoji are placed in its translation
    as they would be in the sentence alone (they no longer cut it)."""
    first = "Click <b>Save</b> to keep your changes."
    last = "I had bread 🍞 and the coffee in the <i>morning</i>."
    middle = [f"The house number {i} has a big garden with many old trees." for i in range(8)]
    (line,) = tr.translate(" ".join([first, *middle, last]))
    alone_first, alone_last = tr.translate([first, last])
    assert line.candidates[0].pieces == 10
    assert line.text.startswith(alone_first.text + " ")
    assert line.text.endswith(" " + alone_last.text)
    assert alone_first.candidates[0].pieces == alone_last.candidates[0].pieces == 1


def test_a_line_in_capitals_comes_back_in_capitals(out: dict[str, Translation]) -> None:
    for line in [*CASED, *EMOJI, *NAMES]:
        if line.upper() == line:
            text = out[line].text
            assert text == text.upper() and any(c.isalpha() for c in text), (line, text)


def test_ordinary_sentences_are_never_written_in_lower_case(out: dict[str, Translation]) -> None:
    for line, names in PROSE.items():
        text = out[line].text
        first = next(c for c in text if c.isalpha())
        assert first.isupper(), (line, text)
        for name in names:
            assert name.lower() not in text.lower() or name in text, (line, text)


def test_a_corpus_tag_is_read_but_never_written(tr: Translator) -> None:
    assert "lc" in tr.tags
    for result in tr.translate(list(PROSE), tag="lc"):
        assert "<tag" not in result.text and "tag:" not in result.text, result.text
        assert result.text.strip()


def test_no_word_is_left_untranslated_that_the_ordinary_sentence_translates(
    out: dict[str, Translation],
) -> None:
    """A line in capitals or title case: every English word that the translation of the same
    sentence written the ordinary way leaves out is left out of its translation too (the model
    left "DOOR" and "Doors" as they were)."""
    for line, plain in CASED.items():
        # the words written in lower case (or first): not names such as "Italy"
        found = re.findall(r"[^\W\d_]+", plain)
        lowered = {
            w.lower() for k, w in enumerate(found) if len(w) >= 3 and (k == 0 or w.islower())
        }
        translated = lowered - _words(out[plain].text)
        left = translated & _words(out[line].text)
        assert not left, (line, out[line].text, out[plain].text)


def test_names_with_letters_spelled_in_bytes_are_written_exactly(
    tr: Translator, out: dict[str, Translation]
) -> None:
    for line, names in NAMES.items():
        text = out[line].text
        for name in names:
            assert re.search(rf"(?<!\w){name}(?!\w)", text), (line, text)
    # the attention viewer reads a line as translate() does
    line = "I visited Gdańsk last year."
    assert tr.attention(line).translation == out[line].text


def test_curly_apostrophes_are_read_as_plain_ones(out: dict[str, Translation]) -> None:
    curly, plain = (out[s].text for s in APOSTROPHES)
    assert curly == plain and "\u2019" not in curly


def test_characters_spelled_in_bytes_come_only_from_the_source(
    tr: Translator, out: dict[str, Translation]
) -> None:
    """What the model writes in byte pieces spells whole characters of its source ("№" is
    E2 84 96: the model once wrote "℄", E2 84 84); no stray byte decodes as "�"."""
    tok = tr.tgt_tokenizer
    for line, result in out.items():
        source = unicodedata.normalize("NFC", line)
        allowed = set(source) | set(source.lower()) | set(source.upper())
        run: list[int] = []
        spelled = []
        for i in [*result.candidates[0].ids, -1]:
            piece = tok.id_to_token(i) if i >= 0 else ""
            if is_byte_piece(piece):
                run.append(int(piece[3:5], 16))
            elif run:
                spelled.append(bytes(run).decode("utf-8", errors="replace"))
                run = []
        for chars in spelled:
            assert "\ufffd" not in chars and set(chars) <= allowed, (line, chars, result.text)


def test_an_n_best_list_keeps_what_the_pipeline_carried(tr: Translator) -> None:
    (result,) = tr.translate("THANK YOU 😊", search=search_config(4, 3))
    assert 1 <= len(result.candidates) <= 3
    scores = [c.score for c in result.candidates]
    assert scores == sorted(scores, reverse=True)
    for cand in result.candidates:
        assert cand.text.endswith(" 😊") and cand.text == cand.text.upper(), cand.text
        assert cand.read == "Thank you" and cand.pieces == 1
        assert cand.confidence == pytest.approx(cand.log_prob / (len(cand.ids) + 1))
    maps = tr.attention("I love pizza 🍕!")
    assert not any(is_byte_piece(p) for p in maps.src_tokens)  # the emoji is not read


def test_the_shipped_source_vocabulary_spells_anything_without_unk(tr: Translator) -> None:
    from test_tokenizers import ROUND_TRIP

    tok = tr.src_tokenizer
    for text in ROUND_TRIP:
        ids = tok.encode(text)
        assert tok.unk_id not in ids, text
        assert tok.decode(ids) == text
    pieces = [tok.id_to_token(i) for i in tok.encode("Hello. Ciao! 2017")]
    # digits one by one: a number is copied digit by digit (and the coverage counts digits)
    assert [p for p in pieces if p.strip("▁").isdigit()] == list("2017")
