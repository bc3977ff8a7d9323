"""Step ``names``: a name with letters the vocabulary spells in bytes is read with base letters.

The source vocabulary spells a letter it lacks ("ń", "ğ", "ł") in bytes, and the model
copied such bytes badly: "Gdańsk", "Erdoğan", "Łódź" came out as "Gda sbottoNato",
"L'Argento", "ottetód". Read with base letters ("Gdansk") the name is one the model copies
whole, and the translation gets the original written back. On 177 sentences with 59 such names
(``python tools/name_copying.py``) the name comes out exactly in 171 (128 read in bytes).

Only a word of ``FOLD_MIN_LETTERS`` letters or more with a letter from ``FOLD_FROM`` on (past
Latin-1: the training data has "é", "ü", "ñ" in many names the model learned to copy), every
letter with a base letter, and a reading that is neither a known target word nor a word the
training data always translates ("Sąd" would read "Sad"): :func:`attenzione.pipeline.words.
foldable`, which the ``capitals`` step asks too ("łódź" → "Łódź"). A word is kept as it is
when the text has its reading already, in any case ("lodz.pl"), or when two words read alike.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence

from attenzione.pipeline.base import Context, Segment, Step
from attenzione.pipeline.words import foldable

NAME = "names"

# A word: a run of letters (a name such as "Gdańsk" or "Erdoğan" is one)
_LETTERS = re.compile(r"[^\W\d_]+")


def whole_words(words: Sequence[str], flags: int = 0) -> re.Pattern[str]:
    """A pattern for any of ``words`` standing as a whole word (no letter either side), the
    longest tried first."""
    pattern = "|".join(re.escape(w) for w in sorted(words, key=lambda w: -len(w)))
    return re.compile(rf"(?<![^\W\d_])(?:{pattern})(?![^\W\d_])", flags)


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
                    seg.folded = swaps
        return segments

    def restore(self, segment: Segment, text: str, ctx: Context, tokens: Sequence[int]) -> str:
        return unfold(text, segment.folded)
