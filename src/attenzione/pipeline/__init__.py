"""The text pipeline: named steps around the model, each switchable, in one default order.

The model reads a sentence and writes one. Real input is more than that: markup, emoji, lines
in capitals, names with rare letters, lines too long for it, numbers it garbles. Each such
problem is one :class:`~attenzione.pipeline.base.Step`, in its own module, with a docstring
saying what it solves; ``docs/pipeline.md`` says what each is worth on today's model.

A line goes through the pipeline like this::

    line ─ prepare (steps in order) ─▶ segments ─ the model ─▶ translations
         ◀─ join ◀─ restore (steps in reverse order, one segment at a time) ◀─

Preparing cuts the line into :class:`~attenzione.pipeline.base.Segment`\\ s (some carried
over as they are) and rewrites the text the model reads; each step notes what it must undo
in the segment's fields, and restoring undoes it on the translation. A step imports no other
step: what two steps share is in ``words``, ``markup`` and ``marks``, and what a step needs of
the pipeline it declares (``Step.places_tags``). The default order:

==================  =====================================================================
``normalize``       read the text as the training data was read (NFC, ’ → ', spaces)
``carry``           tags, pictographs and punctuation alone carried over where they stand
``capitals``        a line in capitals read in sentence case, written back in capitals
``title-case``      a headline's ordinary words read in lower case
``split``           a line too long for the model translated in pieces; a huge word copied
``continuation``    a stretch that goes on with a sentence starts lower-case
``number-format``   the source's numbers written the target's way (1,234.5 → 1.234,5)
``numbers``         numbers the model garbled, and dropped currency symbols, put back
``inline-tags``     inline tag pairs placed in the translation by attention
``names``           names with letters spelled in bytes read with base letters
==================  =====================================================================

With no steps (``Pipeline.build(())``, ``attenzione translate --raw``) the model reads the
line as it is, and what it writes is what you get.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from attenzione.pipeline.base import Context, Recut, Segment, Step
from attenzione.pipeline.capitals import Capitals
from attenzione.pipeline.carry import Carry
from attenzione.pipeline.continuation import Continuation
from attenzione.pipeline.inline_tags import InlineTags
from attenzione.pipeline.names import Names
from attenzione.pipeline.normalize import Normalize
from attenzione.pipeline.number_format import NumberFormat
from attenzione.pipeline.numbers import Numbers
from attenzione.pipeline.split import Split
from attenzione.pipeline.title_case import TitleCase

__all__ = ["STEPS", "Context", "Pipeline", "Segment", "Step"]

# every step, in the default order
STEPS: tuple[type[Step], ...] = (
    Normalize,
    Carry,
    Capitals,
    TitleCase,
    Split,
    Continuation,
    NumberFormat,
    Numbers,
    InlineTags,
    Names,
)
STEP_NAMES: tuple[str, ...] = tuple(s.name for s in STEPS)


class Pipeline:
    """Some of the steps, in the default order (build one with :meth:`build`)."""

    def __init__(self, steps: Sequence[Step]) -> None:
        self.steps = list(steps)
        self.names = tuple(s.name for s in self.steps)
        # with a step that places inline tags, a line's inline pairs first stay in their
        # stretch; a line whose tagged stretch the model cannot read whole is prepared again
        # with them cutting it (Recut)
        self.keep_inline = any(s.places_tags for s in self.steps)

    @classmethod
    def build(cls, steps: Iterable[str] | None = None, *, off: Iterable[str] = ()) -> Pipeline:
        """The named ``steps`` (None: all) less those ``off``, in the default order; an
        unknown name is a ``ValueError`` naming the steps there are."""
        chosen = set(STEP_NAMES if steps is None else steps)
        off = set(off)
        unknown = sorted((chosen | off) - set(STEP_NAMES))
        if unknown:
            raise ValueError(
                f"unknown text step {', '.join(unknown)}: the steps are {', '.join(STEP_NAMES)}"
            )
        return cls([s() for s in STEPS if s.name in chosen - off])

    def prepare(self, line: str, ctx: Context) -> list[Segment]:
        """The segments of one input ``line`` (none for a blank line)."""
        if not self.keep_inline:
            return self._prepare(line, ctx, keep_inline=False)
        try:
            return self._prepare(line, ctx, keep_inline=True)
        except Recut:
            return self._prepare(line, ctx, keep_inline=False)

    def _prepare(self, line: str, ctx: Context, *, keep_inline: bool) -> list[Segment]:
        segments = [Segment(line.strip(), keep_inline=keep_inline)] if line.strip() else []
        for step in self.steps:
            segments = step.prepare(segments, ctx)
        return segments

    def restore(self, segment: Segment, text: str, ctx: Context, tokens: Sequence[int]) -> str:
        """The translation ``text`` (of target ids ``tokens``) of one prepared ``segment``, as
        the user gets it (a carried segment: its text as it is)."""
        if not segment.translate:
            return segment.text
        for step in reversed(self.steps):
            text = step.restore(segment, text, ctx, tokens)
        return text

    @staticmethod
    def join(segments: Sequence[Segment], texts: Sequence[str]) -> str:
        """A line put back together: each text after the glue its segment had, stripped (a
        segment that came out empty leaves no edge)."""
        return "".join(s.glue + t for s, t in zip(segments, texts, strict=True)).strip()

    def __repr__(self) -> str:
        return f"Pipeline({', '.join(self.names) or 'raw'})"
