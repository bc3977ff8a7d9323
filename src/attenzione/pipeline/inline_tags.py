"""Step ``inline-tags``: a pair of inline tags is placed in the translation by attention.

"Click <b>Save</b> to keep your changes." used to be cut at its tags and translated in three
pieces, which keeps each tag where it stood but spoils the sentence: a piece has no verb, no
agreement, no word order of its own. With this step the ``carry`` step leaves inline pairs in
their stretch (taken out of the text the model reads), the stretch is translated whole, and
each pair is put around the words of the translation that attend to the words it enclosed
(:func:`attenzione.pipeline.markup.place`, on the cross-attention of one decoder layer). Off, every
tag cuts the text where it stands.

The placement counts characters, so a stretch whose text the other steps changed in length
(a case change: "İ".lower() is two characters), that was split with a pair across two of its
pieces (the ``split`` step gives each piece the tags it holds), or whose source pieces do not
spell it ("…" read as "...") is prepared again with its tags cutting it (:class:`Recut`).
"""

from __future__ import annotations

from collections.abc import Sequence

from attenzione.pipeline import marks
from attenzione.pipeline.base import Context, Recut, Segment, Step
from attenzione.pipeline.markup import insert, nonspace

NAME = "inline-tags"


class InlineTags(Step):
    name = NAME
    places_tags = True  # with it in the pipeline, carry leaves inline pairs in their stretch

    def prepare(self, segments: list[Segment], ctx: Context) -> list[Segment]:
        for seg in segments:
            if not seg.tags:
                continue
            if (
                not seg.translate  # copied whole: too long to read
                or marks.has_marks(seg.text)  # the input has the marks' characters
                or nonspace(seg.text) != seg.tags_length  # a step changed its length
                or not ctx.spells(seg.text)
            ):
                raise Recut
        return segments

    def restore(self, segment: Segment, text: str, ctx: Context, tokens: Sequence[int]) -> str:
        tags = segment.tags
        if not tags or ctx.place_tags is None:
            return text
        placed = ctx.place_tags(segment, tokens)
        return insert(text, [(at, marks.mark(tags.index(t))) for at, t in placed])
