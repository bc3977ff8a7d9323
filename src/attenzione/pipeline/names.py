"""Step ``names``: a name with letters the vocabulary spells in bytes is read with base letters.

The source vocabulary spells a letter it lacks ("ń", "ğ", "ł") in bytes, and the model
copied such bytes badly: "Gdańsk", "Erdoğan", "Łódź" came out as "Gda sbottoNato",
"L'Argento", "ottetód". Read with base letters ("Gdansk") the name is one the model copies
whole, and the translation gets the original written back. On 177 sentences with 59 such names
(``python tools/name_copying.py``) the name comes out exactly in 171 (128 read in bytes).

Only a word of :data:`FOLD_MIN_LETTERS` letters or more with a letter from :data:`FOLD_FROM`
on (past Latin-1: the training data has "é", "ü", "ñ" in many names the model learned to
copy), every letter with a base letter, and a reading that is neither a known target word nor
a word the training data always translates ("Sąd" would read "Sad"). A word is kept as it is
when the text has its reading already, in any case ("lodz.pl"), or when two words read alike.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence

from attenzione.pipeline.base import Context, Segment, Step
from attenzione.search.lexicon import holds

NAME = "names"

# A word: a run of letters (a name such as "Gdańsk" or "Erdoğan" is one)
_LETTERS = re.compile(r"[^\W\d_]+")
# Letters with no decomposition into a base letter and marks, and the base letter each reads as
_BASE_LETTER = {"ł": "l", "Ł": "L", "ø": "o", "Ø": "O", "đ": "d", "Đ": "D", "ı": "i", "ħ": "h",
                "Ħ": "H", "ŧ": "t", "Ŧ": "T"}  # fmt: skip
# A word is read with its letters' base letters only from this many letters on: a shorter one
# ("õ", "Ýr") could come back as an ordinary word of the translation ("o")
FOLD_MIN_LETTERS = 3
# Only a word with a letter from this code point on that the vocabulary spells in bytes is read
# with base letters: past Latin-1 (on the 177 sentences, 166 came out exactly with every such
# word folded, 171 with the words past Latin-1 folded).
FOLD_FROM = 0x100


def base_letter(ch: str) -> str | None:
    """The one ASCII letter ``ch`` is written on ("ń" → "n", "ğ" → "g", "ł" → "l"), or None."""
    if ch in _BASE_LETTER:
        return _BASE_LETTER[ch]
    base = "".join(c for c in unicodedata.normalize("NFKD", ch) if not unicodedata.combining(c))
    return base if len(base) == 1 and base.isascii() and base.isalpha() else None


def whole_words(words: Sequence[str], flags: int = 0) -> re.Pattern[str]:
    """A pattern for any of ``words`` standing as a whole word (no letter either side), the
    longest tried first."""
    pattern = "|".join(re.escape(w) for w in sorted(words, key=lambda w: -len(w)))
    return re.compile(rf"(?<![^\W\d_])(?:{pattern})(?![^\W\d_])", flags)


def foldable(word: str, ctx: Context) -> str | None:
    """The reading of ``word`` with base letters when it may be read so (see the module
    docstring), else None."""
    if len(word) < FOLD_MIN_LETTERS or word.isascii():
        return None
    if not any(ord(c) >= FOLD_FROM and ctx.spelled_in_bytes(c) for c in word):
        return None
    letters = [c if c.isascii() else base_letter(c) for c in word]
    if any(b is None for b in letters):
        return None
    read = "".join(b for b in letters if b is not None)
    lower = read.lower()
    known = ctx.known_words
    if (known is not None and holds(known, lower, whole=True)) or lower in ctx.not_free:
        return None
    return read


def fold(text: str, ctx: Context) -> tuple[str, tuple[tuple[str, str], ...]]:
    """``text`` with each foldable word read with base letters, and the (read, original)
    pairs to write back (:func:`unfold`). The text is read in NFC; each letter becomes one
    letter, so an NFC text keeps its offsets (inline tags are placed by them)."""
    if not any(ord(c) > 0x7F for c in text):
        return text, ()
    text = unicodedata.normalize("NFC", text)
    folded = text.casefold()
    found: dict[str, str] = {}
    clash: set[str] = set()
    for word in sorted(set(_LETTERS.findall(text))):
        read = foldable(word, ctx)
        if read is None or read.casefold() in folded:
            continue
        if read in found:  # another word reads alike
            clash.add(read)
        found[read] = word
    swaps = tuple((r, w) for r, w in sorted(found.items()) if r not in clash)
    if swaps:
        reads = {w: r for r, w in swaps}
        text = whole_words(list(reads)).sub(lambda m: reads[m.group(0)], text)
    return text, swaps


def unfold(text: str, swaps: Sequence[tuple[str, str]]) -> str:
    """``text`` with each whole word that is a ``read`` of ``swaps`` written back as its
    ``original``: the one read exactly so, else (the translation changed its case: "gdansk")
    the first read so in any case."""
    if not swaps:
        return text
    exact = dict(swaps)
    loose: dict[str, str] = {}
    for read, original in swaps:
        loose.setdefault(read.casefold(), original)
    word = whole_words([r for r, _ in swaps], re.IGNORECASE)
    return word.sub(lambda m: exact.get(m.group(0)) or loose[m.group(0).casefold()], text)


class Names(Step):
    name = NAME

    def prepare(self, segments: list[Segment], ctx: Context) -> list[Segment]:
        for seg in segments:
            if seg.translate:
                seg.text, swaps = fold(seg.text, ctx)
                if swaps:
                    seg.notes[NAME] = swaps
        return segments

    def restore(self, segment: Segment, text: str, ctx: Context, tokens: Sequence[int]) -> str:
        return unfold(text, segment.notes.get(NAME, ()))
