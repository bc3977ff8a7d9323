"""The translator's attention: where inline tags go, and a sentence's maps as it reads it.

An :class:`AttentionAligner` places a segment's inline tags in its translation by the model's
cross-attention. It is what the text pipeline is handed as ``place_tags`` (the
``inline-tags`` step asks it): it teacher-forces the translation through the model, reads one
decoder layer's cross-attention (averaged over heads) and lets
:func:`attenzione.pipeline.markup.place` put each tag by the source pieces it wrapped.
:func:`sentence_attention` gives every attention map of a sentence as the translator reads and
translates it (:meth:`Translator.attention`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from attenzione.config import search_config
from attenzione.data.corpus import normalize, without_controls
from attenzione.data.tokenizers import Tokenizer
from attenzione.model.transformer import Transformer
from attenzione.pipeline import Segment
from attenzione.pipeline.markup import Tag, place
from attenzione.translator.explain import cross_attention, replay

if TYPE_CHECKING:
    from attenzione.translator.translator import Translator
    from attenzione.viz.maps import AttentionMaps

# The decoder layer whose cross-attention places inline tags (negative counts from the last),
# and whether a target piece is read at the step that feeds it back (True) or at the one that
# predicts it.
ALIGN_LAYER = 0
ALIGN_SHIFT = True


class AttentionAligner:
    """Tag placement for ``model`` reading ``src_tokenizer``'s pieces and writing
    ``tgt_tokenizer``'s, by the cross-attention of decoder layer :attr:`layer`."""

    def __init__(
        self, model: Transformer, src_tokenizer: Tokenizer, tgt_tokenizer: Tokenizer
    ) -> None:
        self.model, self.src_tokenizer, self.tgt_tokenizer = model, src_tokenizer, tgt_tokenizer
        self.layer = ALIGN_LAYER % model.config.n_dec_layers
        self.n_tags = len(getattr(src_tokenizer, "tags", ()))

    def __call__(self, segment: Segment, tokens: Sequence[int]) -> list[tuple[int, Tag]]:
        """[(character offset in the translation ``tokens``, tag)] for ``segment``'s tags."""
        assert segment.ids is not None
        att = cross_attention(self.model, segment.ids, tokens, self.layer)  # (T+2,S)
        # row j + 1 is the step that reads target piece j (ALIGN_SHIFT; row j predicts it)
        shift = 1 if ALIGN_SHIFT else 0
        # the text's own pieces: a corpus tag's token before them and <eos> after left out
        tagged = self.n_tags and segment.ids[0] >= self.src_tokenizer.vocab_size - self.n_tags
        first = 1 if tagged else 0
        weights = att[shift : shift + len(tokens), first : len(segment.ids) - 1]
        src_pieces = [self.src_tokenizer.id_to_token(i) for i in segment.ids[first:-1]]
        tgt_pieces = [self.tgt_tokenizer.id_to_token(i) for i in tokens]
        return place(list(segment.tags), src_pieces, tgt_pieces, weights)


def sentence_attention(
    translator: Translator,
    src: str,
    tgt: str | None = None,
    *,
    beam: int = 4,
    tgt_ids: Sequence[int] | None = None,
    tag: str | None = None,
) -> AttentionMaps:
    """Every attention map of every layer and head for ``src`` → ``tgt``.

    With ``tgt`` None the sentence is read through the text pipeline as
    :meth:`Translator.translate` reads it (it must make one segment), translated (beam search), and
    the translation is teacher-forced through the model with the reference kernel, which
    returns the maps; given a ``tgt`` (a reference translation) that one is teacher-forced
    instead. Given ``tgt_ids`` (the model's own output, e.g. :attr:`Candidate.ids`, with
    ``src`` its :attr:`Candidate.read`), exactly those are replayed on exactly that
    source: no second search, no re-tokenization. ``tag``: as in :meth:`Translator.translate` (the
    tag's token is the first source token of the maps).
    """
    src = without_controls(src)
    if not src.strip():
        raise ValueError("the sentence to show attention for is empty")
    translation, read = tgt, src.strip()
    reader, ctx, pipeline = translator.reader, translator.ctx, translator.pipeline
    first = reader.tag_ids(tag, translator.default_tag)  # a corpus tag's token, if any
    if tgt_ids is not None:
        src_ids = first + reader.read_at_once(ctx, read, "the sentence")
        tgt_ids = list(tgt_ids)
        translation = translator.tgt_tokenizer.decode(tgt_ids)
    else:
        segs = [s for s in pipeline.prepare(src, ctx) if s.translate]
        if len(segs) == 1:
            seg = segs[0]
        else:  # a line the pipeline cuts: shown as the model reads it whole
            seg = Segment(normalize(src) if "normalize" in pipeline.names else src)
        seg.ids = src_ids = first + reader.read_at_once(ctx, seg.text, "the sentence", pipeline)
        read = seg.text  # what the model reads: its maps show its tokens
        if tgt is None:
            cfg = search_config(beam)
            tgt_ids = translator.translate_ids([src_ids], cfg)[0][0].tokens
            decoded = translator.tgt_tokenizer.decode(tgt_ids)
            translation = pipeline.restore(seg, decoded, ctx, tgt_ids)
        else:
            tgt_ids = translator.tgt_tokenizer.encode(normalize(tgt))
    return replay(
        translator.model,
        (translator.src_tokenizer, translator.tgt_tokenizer),
        src_ids,
        tgt_ids,
        source=read,
        translation=translation or "",
        teacher_forced=tgt is not None,
    )
