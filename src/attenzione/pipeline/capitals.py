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
from attenzione.pipeline.words import WORD, ends_sentence, foldable, in_capitals

NAME = "capitals"


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
    needs = ("sentence-case",)  # a German line's nouns keep their capitals

    def prepare(self, segments: list[Segment], ctx: Context) -> list[Segment]:
        words = " ".join(s.text for s in segments if s.translate)
        if not in_capitals(words):
            return segments
        starts = True  # the next stretch starts a sentence
        for seg in segments:
            if seg.translate:
                original = seg.text
                seg.text = with_names(sentence_case(original, starts=starts), ctx)
                seg.capitals = True
                starts = ends_sentence(original)
        return segments

    def restore(self, segment: Segment, text: str, ctx: Context, tokens: Sequence[int]) -> str:
        return text.upper() if segment.capitals else text
