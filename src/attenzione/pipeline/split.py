"""Step ``split``: a line longer than the model reads at once is translated in pieces.

The model reads at most ``max_src_tokens`` source tokens (what it was trained on, by default
100). A longer line is split into sentences by the shared segmenter
(:func:`attenzione.data.sentences.split_sentences`: "Dr. Ur" and "U.S." do not end a
sentence), each translated on its own and joined with a space; a single sentence that is
still too long is cut at word boundaries into pieces that fit, and a single word that alone is
longer than the model reads (a long URL, a hash) is copied unchanged. Nothing is silently
dropped. Without this step a line too long for the model is refused.

A line that fits is read whole, even of several sentences: the 103 FLORES dev lines of two
sentences score 17.21 BLEU read whole and 16.93 a sentence at a time (the sentences of a
paragraph help each other), though four unrelated Tatoeba sentences read whole lose 2.7.

The inline tags (and points) the ``carry`` step took out of the line go with the piece that
holds them, each piece's positions counted from its own start, so that ``inline-tags``
places them in that piece's translation; a pair that spans two pieces makes the line be
prepared again with its tags cutting it, as before.
"""

from __future__ import annotations

from collections.abc import Sequence

from attenzione.data.sentences import split_sentences
from attenzione.pipeline.base import Context, Segment, Step
from attenzione.pipeline.markup import Tag, nonspace

NAME = "split"


def spread(tags: Sequence[Tag], parts: Sequence[str]) -> list[list[Tag]] | None:
    """``tags`` (positions in non-space characters of the whole text) shared out among the
    ``parts`` it was cut into, each renumbered and counted from its part's start; None when
    a pair spans two parts."""
    bounds: list[tuple[int, int]] = []
    at = 0
    for part in parts:
        bounds.append((at, at + nonspace(part)))
        at += nonspace(part)
    opening = {t.pair: t for t in tags if t.opens}
    closing = {t.pair: t for t in tags if not t.opens}
    home: dict[int, int] = {}
    for pair, t in opening.items():
        k = next((k for k, (a, b) in enumerate(bounds) if a <= t.at < b), None)
        if k is None or closing[pair].at > bounds[k][1]:
            return None
        home[pair] = k
    out: list[list[Tag]] = [[] for _ in parts]
    number: list[dict[int, int]] = [{} for _ in parts]
    for t in tags:
        k = home[t.pair]
        n = number[k].setdefault(t.pair, len(number[k]))
        out[k].append(Tag(t.text, t.at - bounds[k][0], n, t.opens))
    return out


def pieces(text: str, ctx: Context) -> list[str]:
    """``text`` cut into parts whose source ids fit what the model reads (see the module
    docstring)."""
    if ctx.fits(text):
        return [text]
    parts: list[str] = []
    for sentence in (s.strip() for s in split_sentences(text, ctx.source_language)):
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
            shared = spread(seg.tags, cut) if seg.tags else None
            if seg.tags and sum(map(nonspace, cut)) != seg.tags_length:
                shared = None  # the pieces do not spell the text: inline-tags recuts
            for k, piece in enumerate(cut):
                part = seg.but(text=piece, glue=seg.glue if k == 0 else " ", piece=(k, len(cut)))
                if shared is not None:  # else each part keeps them all: inline-tags recuts
                    part.tags = tuple(shared[k])
                    part.tags_length = nonspace(piece) if shared[k] else 0
                if not ctx.fits(piece):  # one word longer than the model reads: copied
                    part.translate = False
                    if part.capitals:  # as it was written
                        part.text = piece.upper()
                out.append(part)
        return out
