"""Step ``title-case``: a headline in title case is read with its ordinary words in lower case.

"Scientists Discover New Species in the Amazon": the model took "Doors" for a name and left
it untranslated. A line in title case — every word after the first capitalised but the short
ones title case leaves alone (the minor words of the pair's language profiles), at least two
of them of four letters or more — is read with each capitalised word lower-cased where it is
an ordinary word (see :func:`truecase`). A sentence with a lower-case verb ("Mother Teresa
won the Nobel Peace Prize") is not in title case; neither is a line in capitals (the
``capitals`` step's).
"""

from __future__ import annotations

import re

from attenzione.pipeline.base import Context, Segment, Step
from attenzione.pipeline.words import WORD, ends_sentence, in_capitals

NAME = "title-case"


def title_case(text: str, minor: frozenset[str]) -> bool:
    """Whether ``text`` is written in title case with the ``minor`` words (the short words it
    leaves in lower case, "Species in the Amazon": the language profiles')."""
    words = WORD.findall(text)[1:]
    if any(not w[:1].isupper() and w not in minor for w in words):
        return False
    return sum(len(w) >= 4 and w[:1].isupper() for w in words) >= 2


def truecase(text: str, ctx: Context, *, starts: bool) -> str:
    """``text`` in title case with each capitalised word lower-cased where it is an
    ordinary word: the source vocabulary spells the lower-case form in fewer pieces, or
    both forms in one (a subword vocabulary gives the forms it saw often few pieces:
    "Doors" → "doors", "The" → "the"; "Tom" and "Massachusetts" stay), or the training
    data always translates it (``ctx.not_free``) and the capitalised form is not the shorter
    ("Governor" → "governor"; "Italy" stays). A word that starts a sentence, "I" and words
    with other capitals ("NASA") are kept. Measured on Tatoeba dev in title case, with the
    other rules tried: docs/broad-training.md."""
    first = starts

    def one(m: re.Match[str]) -> str:
        nonlocal first
        word, begins = m.group(0), first
        first = False
        rest = word[1:]
        if (
            begins
            or not word[:1].isupper()
            or rest != rest.lower()
            or re.split("['\u2019]", word)[0] == "I"
        ):
            return word
        lower = word[:1].lower() + rest
        n_lower, n_word = ctx.n_pieces(lower), ctx.n_pieces(word)
        ordinary = (
            n_lower < n_word
            or n_lower == n_word == 1
            # a word the data always translates, unless the capitalised form is the one the
            # vocabulary knows better (a name: "Italy", "Christmas")
            or (lower.lower() in ctx.not_free and n_word >= n_lower)
        )
        return lower if ordinary else word

    out = []
    for piece in re.split(r"(?<=[.!?])(\s+)", text):  # a sentence's first word is kept
        out.append(WORD.sub(one, piece))
        first = True
    return "".join(out)


class TitleCase(Step):
    name = NAME
    needs = ("source-title-case",)

    def prepare(self, segments: list[Segment], ctx: Context) -> list[Segment]:
        words = " ".join(s.text for s in segments if s.translate)
        # a line in capitals (read in sentence case by the capitals step, or not) is left alone
        capitals = any(s.capitals for s in segments)
        if capitals or in_capitals(words) or not title_case(words, ctx.minor_words):
            return segments
        starts = True
        for seg in segments:
            if seg.translate:
                original = seg.text
                seg.text = truecase(original, ctx, starts=starts)
                starts = ends_sentence(original)
        return segments
