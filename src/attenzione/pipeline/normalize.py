"""Step ``normalize``: read the input as the training data was read.

Every corpus is normalised before training (:func:`attenzione.data.corpus.normalize`: NFC,
the typographic apostrophe ’ written ', byte-order marks dropped, runs of whitespace made one
space). The model has never seen a "’": "I don’t know" came out as nonsense, and a Windows
file's byte-order mark turned "Hello." into "La barra degli strumenti disprezzo.". Reading
the input the same way costs nothing and undoes nothing.
"""

from __future__ import annotations

from attenzione.data.corpus import normalize
from attenzione.pipeline.base import Context, Segment, Step


class Normalize(Step):
    name = "normalize"

    def prepare(self, segments: list[Segment], ctx: Context) -> list[Segment]:
        for seg in segments:
            if seg.translate:
                seg.text = normalize(seg.text)
        return segments
