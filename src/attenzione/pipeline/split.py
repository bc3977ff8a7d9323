"""Step ``split``: a line longer than the model reads at once is translated in pieces.

The model reads at most ``max_src_tokens`` source tokens (what it was trained on, by default
100). A longer line is split into sentences by the shared segmenter
(:func:`attenzione.data.sentences.split_sentences`: "Dr. Ur" and "U.S." do not end a
sentence), each translated on its own and joined with a space; a single sentence that is
still too long is cut at word boundaries into pieces that fit, and a single word that alone is
longer than the model reads (a long URL, a hash) is copied unchanged. Nothing is silently
dropped. Without this step a line too long for the model is refused.
"""

from __future__ import annotations

from attenzione.data.sentences import split_sentences
from attenzione.pipeline.base import Context, Segment, Step

NAME = "split"


def pieces(text: str, ctx: Context) -> list[str]:
    """``text`` cut into parts whose source ids fit what the model reads (see the module
    docstring)."""
    if ctx.fits(text):
        return [text]
    parts: list[str] = []
    for sentence in (s.strip() for s in split_sentences(text)):
        if not sentence:
            continue
        if ctx.fits(sentence):
            parts.append(sentence)
            continue
        chunk: list[str] = []
        for word in sentence.split():
            if chunk and not ctx.fits(" ".join([*chunk, word])):
                parts.append(" ".join(chunk))
                chunk = []
            chunk.append(word)
        if chunk:
            parts.append(" ".join(chunk))
    return parts


class Split(Step):
    name = NAME

    def prepare(self, segments: list[Segment], ctx: Context) -> list[Segment]:
        out: list[Segment] = []
        for seg in segments:
            cut = pieces(seg.text, ctx) if seg.translate else [seg.text]
            if len(cut) == 1 and (not seg.translate or ctx.fits(cut[0])):
                out.append(seg)
                continue
            for k, piece in enumerate(cut):
                part = seg.but(text=piece, glue=seg.glue if k == 0 else " ")
                part.notes[NAME] = (k, len(cut))
                if not ctx.fits(piece):  # one word longer than the model reads: copied
                    part.translate = False
                    if part.notes.get("capitals"):  # as it was written
                        part.text = piece.upper()
                out.append(part)
        return out
