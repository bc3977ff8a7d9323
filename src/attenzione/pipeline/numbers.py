"""Step ``numbers``: source numbers the model garbled are put back, and dropped currency
symbols.

A translation should carry its source's numbers over unchanged; the model sometimes writes
"20177" for "2017", glues a number to a word, or drops the "$" of "$19.99". The repair
(:func:`attenzione.data.numbers.repair_numbers`) matches the translation's numbers to the
source's and rewrites those that are near misses; :func:`~attenzione.data.currency.
restore_currency` puts a dropped currency symbol back on its amount. Beam search's number
coverage (a ranking term) makes the model write the numbers in the first place; this step
mends what is left.
"""

from __future__ import annotations

from collections.abc import Sequence

from attenzione.data.currency import restore_currency
from attenzione.data.numbers import repair_numbers
from attenzione.pipeline.base import Context, Segment, Step

NAME = "numbers"


class Numbers(Step):
    name = NAME

    def prepare(self, segments: list[Segment], ctx: Context) -> list[Segment]:
        for seg in segments:
            seg.source = seg.text  # the source as read, before names are folded
        return segments

    def restore(self, segment: Segment, text: str, ctx: Context, tokens: Sequence[int]) -> str:
        source = segment.text if segment.source is None else segment.source
        words = ctx.pair_words
        return restore_currency(source, repair_numbers(source, text, words), words)
