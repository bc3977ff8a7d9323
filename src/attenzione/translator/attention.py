"""Where inline tags go in a translation, by the model's cross-attention.

An :class:`AttentionAligner` places a segment's inline tags in its translation. It is what the
text pipeline is handed as ``place_tags`` (the ``inline-tags`` step asks it): it teacher-forces
the translation through the model, reads one decoder layer's cross-attention (averaged over
heads) and lets :func:`attenzione.pipeline.markup.place` put each tag by the source pieces it
wrapped. (A sentence's every map, as the translator reads it, is
:meth:`Translator.attention <attenzione.translator.translator.Translator.attention>`.)
"""

from __future__ import annotations

from collections.abc import Sequence

from attenzione.data.tokenizers import Tokenizer
from attenzione.model.transformer import Transformer
from attenzione.pipeline import Segment
from attenzione.pipeline.markup import Tag, place
from attenzione.translator.explain import cross_attention

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
