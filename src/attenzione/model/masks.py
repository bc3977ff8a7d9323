"""Attention masks, in one convention: ``torch.bool``, **True = this query may attend to this key**.

Shape legend (used in every docstring of the package): B batch, S source length, T target
length, D d_model, H n_heads, Dh d_head, F d_ff, V vocabulary.

Every mask is built here and nowhere else, with a head axis of size 1 so it broadcasts over
heads: (B,1,1,S) for key padding, (1,1,T,T) for causality, (B,1,T,S) for a full pairwise mask.
This is the polarity of ``torch.nn.functional.scaled_dot_product_attention`` (a pairwise
mask is True only if both tokens are not padding). ``nn.MultiheadAttention``'s ``key_padding_mask``
means the opposite; a tensor with that meaning is called ``*_is_pad`` and never reaches
attention.

The three full masks of an encoder–decoder Transformer, all provided:

* encoder self-attention: (i, j) allowed when both token i and token j are real
  (:func:`pairwise_padding_mask`);
* decoder self-attention: causal AND padding (:func:`decoder_self_mask`);
* cross-attention: target query real AND source key real (:func:`cross_mask`).

The model itself mostly uses the cheaper key-only masks (:func:`padding_mask`, or causality
alone with right-padded targets): a padded *query* row produces an output that no loss and no
real token ever reads, so masking it changes nothing real. The full masks are what the viewer
and the tests use to show and check the exact definitions. A row in which every key is
masked yields zeros in :mod:`attenzione.model.attention`, never NaN.
"""

from __future__ import annotations

import torch
from torch import Tensor


def is_real(ids: Tensor, pad_id: int) -> Tensor:
    """(B,L) bool, True where the token is not padding."""
    return ids != pad_id


def target_is_real(tgt_ids: Tensor, pad_id: int) -> Tensor:
    """(B,T) bool, True where a decoder's input token is not padding. The first column is the
    start token, which a prefix always begins with: real whatever its id (a decoder may start
    from its padding token, as Marian's do)."""
    real = is_real(tgt_ids, pad_id)
    real[:, :1] = True
    return real


def padding_mask(ids: Tensor, pad_id: int) -> Tensor:
    """Key padding mask: (B,L) ids → (B,1,1,L) bool, True where the *key* is a real token.

    Broadcasts over heads and queries, so any query may look at every real key.
    """
    return is_real(ids, pad_id)[:, None, None, :]  # (B,L) -> (B,1,1,L)


def pairwise_padding_mask(ids: Tensor, pad_id: int) -> Tensor:
    """The encoder mask: (B,S) ids → (B,1,S,S), (i, j) True only when both are real.

    Rows of padded queries are entirely False: attention returns zeros for them.
    """
    return _pairwise(is_real(ids, pad_id))


def _pairwise(real: Tensor) -> Tensor:
    return (real[:, :, None] & real[:, None, :])[:, None]  # (B,L,1)&(B,1,L) -> (B,1,L,L)


def causal_mask(size: int, *, offset: int = 0, device: torch.device | str | None = None) -> Tensor:
    """(1,1,size,offset+size) bool, lower-triangular: query i may attend to keys j <= i.

    ``offset`` is the number of keys already in a K/V cache before these ``size`` queries, so
    query i (absolute position offset+i) sees every cached key plus the new ones up to itself.
    """
    q_pos = torch.arange(size, device=device)[:, None] + offset  # (size,1)
    k_pos = torch.arange(offset + size, device=device)[None, :]  # (1,offset+size)
    return (k_pos <= q_pos)[None, None]  # (size,offset+size) -> (1,1,size,offset+size)


def decoder_self_mask(tgt_ids: Tensor, pad_id: int) -> Tensor:
    """The decoder mask: causal AND both tokens real (:func:`target_is_real`).
    (B,T) → (B,1,T,T)."""
    t = tgt_ids.shape[1]
    real = _pairwise(target_is_real(tgt_ids, pad_id))
    return causal_mask(t, device=tgt_ids.device) & real


def with_real_queries(key_mask: Tensor, query_ids: Tensor, pad_id: int) -> Tensor:
    """A (B,1,1,S) key mask restricted to real queries: (B,1,T,S), False on padded rows.

    This is how the decoder builds the full cross-attention mask from the encoder's key
    mask when the source ids are no longer at hand (only the memory and its mask are).
    The queries are a decoder's input (:func:`target_is_real`).
    """
    real = target_is_real(query_ids, pad_id)  # (B,T)
    return key_mask & real[:, None, :, None]  # (B,1,1,S)&(B,1,T,1)


def cross_mask(tgt_ids: Tensor, src_ids: Tensor, pad_id: int) -> Tensor:
    """The cross-attention mask: target query real AND source key real. → (B,1,T,S)."""
    return with_real_queries(padding_mask(src_ids, pad_id), tgt_ids, pad_id)


def key_padding_to_is_pad(mask: Tensor) -> Tensor:
    """Convert a (B,1,1,S) may-attend mask to ``nn.MultiheadAttention``'s (B,S) ``*_is_pad``.

    Only for interoperating with torch's own modules (tests, benchmarks): the returned tensor
    has the opposite meaning and must never be passed to our attention.
    """
    return ~mask[:, 0, 0, :]  # (B,1,1,S) -> (B,S), True = padding
