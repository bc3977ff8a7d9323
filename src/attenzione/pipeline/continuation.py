"""Step ``continuation``: a stretch that goes on with a sentence begun before it starts
lower-case.

When something carried cuts a sentence ("I love 🐱 sleeping on the sofa"), the model
translates the stretch after it as a sentence of its own and writes it with a capital ("Sta
dormendo"). A stretch whose first letter is lower-case and that comes after another part of
the line gets its translation's first letter lower-cased (unless the first word is all in
capitals, an acronym).
"""

from __future__ import annotations

from collections.abc import Sequence

from attenzione.pipeline import marks
from attenzione.pipeline.base import Context, Segment, Step

NAME = "continuation"


class Continuation(Step):
    name = NAME
    needs = ("target-sentence-case",)  # a German continuation may start with a noun

    def prepare(self, segments: list[Segment], ctx: Context) -> list[Segment]:
        for i, seg in enumerate(segments):
            if not (seg.translate and seg.piece[0] == 0 and i > 0):
                continue  # the first of the line, or a piece of one cut to fit
            first = next((c for c in seg.text if c.isalpha()), "")
            if first.islower():
                seg.continues = True
        return segments

    def restore(self, segment: Segment, text: str, ctx: Context, tokens: Sequence[int]) -> str:
        if not segment.continues:
            return text
        k = next((i for i, c in enumerate(text) if not marks.is_mark(c)), len(text))
        if text[k : k + 1].isupper() and not text[k + 1 : k + 2].isupper():
            text = text[:k] + text[k].lower() + text[k + 1 :]  # "Sta dormendo" after "🐱"
        return text
