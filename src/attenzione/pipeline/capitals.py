"""Step ``capitals``: a line written all in capitals is read in sentence case.

The training data is hardly ever in capitals, and the model left such text untranslated
("WARNING: DO NOT OPEN"). A line in capitals is read in sentence case, with the words the
source vocabulary knows as names capitalised again ("italy" → "Italy"), and its translation
is put back in capitals. A line with a code ("ID: AB12CD") and no word of three letters is
read as it is. Capitals are judged on the whole line's text, not on its tags.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from attenzione.pipeline.base import Context, Segment, Step
from attenzione.pipeline.names import foldable

NAME = "capitals"

# A word (an apostrophe inside it keeps it one: "don't")
WORD = re.compile(r"[^\W\d_]+(?:['\u2019][^\W\d_]+)?")
_CODE = re.compile(r"\b(?=\w*[^\W\d_])(?=\w*\d)\w+\b")  # letters and digits: "AB12CD"


def shouting(text: str) -> bool:
    """Whether ``text`` is written in capitals: at least two cased letters, none lower-case."""
    cased = [c for c in text if c.isupper() or c.islower()]
    return len(cased) >= 2 and not any(c.islower() for c in cased)


def in_capitals(words: str) -> bool:
    """Whether a line whose text is ``words`` is read as a line in capitals: written in
    capitals, and not a code with no word of three letters ("ID: AB12CD")."""
    return shouting(words) and (
        not _CODE.search(words) or any(len(w) >= 3 for w in WORD.findall(words))
    )


def ends_sentence(text: str) -> bool:
    """Whether ``text`` ends a sentence (the next stretch starts one)."""
    return text.rstrip("\"')»”")[-1:] in (".", "!", "?")


def sentence_case(text: str, *, starts: bool) -> str:
    """``text`` in lower case, its first letter a capital if it ``starts`` a sentence and the
    first letter after each ". ", "! " or "? " too; a one-letter word ("I") keeps its case."""
    words = [w if len(w) == 1 else w.lower() for w in text.split(" ")]
    out = list(" ".join(words))
    capital = starts
    for i, c in enumerate(out):
        if c.isalpha():
            out[i] = c.upper() if capital else c
            capital = False
        elif c in ".!?":
            capital = True
        elif not c.isspace() and c not in "\"'«“(":
            capital = False
    return "".join(out)


def with_names(text: str, ctx: Context) -> str:
    """``text`` (in sentence case) with the words the source vocabulary knows as names
    capitalised again: spelled in fewer pieces capitalised ("italy" → "Italy", "tom" →
    "Tom"), or read with base letters by the ``names`` step ("łódź" → "Łódź")."""

    def one(m: re.Match[str]) -> str:
        word = m.group(0)
        if not word.islower():
            return word
        name = word[:1].upper() + word[1:]
        if foldable(name, ctx) is not None:  # "łódź": no English word has such letters
            return name
        return name if ctx.n_pieces(name) < ctx.n_pieces(word) else word

    return WORD.sub(one, text)


class Capitals(Step):
    name = NAME

    def prepare(self, segments: list[Segment], ctx: Context) -> list[Segment]:
        words = " ".join(s.text for s in segments if s.translate)
        if not in_capitals(words):
            return segments
        starts = True  # the next stretch starts a sentence
        for seg in segments:
            if seg.translate:
                original = seg.text
                seg.text = with_names(sentence_case(original, starts=starts), ctx)
                seg.notes[NAME] = True
                starts = ends_sentence(original)
        return segments

    def restore(self, segment: Segment, text: str, ctx: Context, tokens: Sequence[int]) -> str:
        return text.upper() if segment.notes.get(NAME) else text
