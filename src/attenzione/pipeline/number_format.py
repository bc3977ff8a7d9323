"""Step ``number-format``: numbers written the target language's way.

English writes 1,234.5 and Italian 1.234,5. The model learned whichever its training targets
used, unevenly; the source's numbers are written in the model's ``number_format`` (what its
training targets did: ``"comma"`` for the shipped model, see
:func:`attenzione.data.numbers.localize_numbers`), "2.3 million" → "2,3 milioni", "55,000"
→ "55.000". A model whose format is ``"keep"`` leaves them as it wrote them.
"""

from __future__ import annotations

from collections.abc import Sequence

from attenzione.data.numbers import localize_numbers
from attenzione.pipeline.base import Context, Segment, Step

NAME = "number-format"


class NumberFormat(Step):
    name = NAME
    # a section number or a version ("Figure 1.1", "GNOME 3.8") is no quantity: the source
    # language's profile names its label words
    needs = ("source-number-labels",)

    def prepare(self, segments: list[Segment], ctx: Context) -> list[Segment]:
        for seg in segments:
            seg.source = seg.text  # the source as read, before names are folded
        return segments

    def restore(self, segment: Segment, text: str, ctx: Context, tokens: Sequence[int]) -> str:
        source = segment.text if segment.source is None else segment.source
        return localize_numbers(source, text, ctx.number_format, ctx.pair_words)
