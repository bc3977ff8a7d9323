"""The decoder's key/value cache for incremental decoding.

Generating token t with a plain forward pass re-runs the decoder over the whole prefix
0..t, so T tokens cost O(T²) decoder work. But keys and values of earlier positions never
change (causal masking means position j never sees what comes after it), so we keep them:

* **self-attention**: per decoder layer, K and V of every position generated so far. Each step
  projects only the new token and appends its K/V (``torch.cat`` along the positions).
* **cross-attention**: per decoder layer, K and V of the encoder memory, computed once per
  source batch, since the memory does not change while decoding.

The cache is an explicit object, passed into :meth:`Transformer.decode` and returned by it —
never hidden state on a module — so two translations can never see each other's keys.
:meth:`KVCache.reorder` selects (and repeats) batch rows: beam search uses it to follow the
surviving hypotheses, and greedy decoding to drop finished sentences from the batch.

This is the cache as the paper's decoder needs it. A model prepared for inference
(``model/fast/``) decodes on a cache with the same interface that preallocates its buffers and
keeps the memory's K/V once per sentence rather than once per beam.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor


@dataclass
class LayerCache:
    """One decoder layer's tensors: self K/V (B,H,length,Dh), None before the first step;
    cross K/V (B,H,S,Dh)."""

    cross_k: Tensor
    cross_v: Tensor
    self_k: Tensor | None = None
    self_v: Tensor | None = None


@dataclass
class KVCache:
    """K/V of every decoder layer, plus the source mask the cross-attention needs.

    Attributes:
        layers: one :class:`LayerCache` per decoder layer.
        memory_mask: (B,1,1,S) bool, True where the source token is real.
        length: number of target positions already cached (the next token's position).
    """

    layers: list[LayerCache]
    memory_mask: Tensor
    length: int = 0

    @property
    def cross_mask(self) -> Tensor | None:
        """The mask cross-attention applies while decoding on this cache: (B,1,1,S)."""
        return self.memory_mask

    def append(self, layer: int, k: Tensor, v: Tensor) -> tuple[Tensor, Tensor]:
        """Store the new (B,H,t,Dh) keys/values of ``layer``; return all keys/values so far,
        (B,H,length+t,Dh).

        Every layer appends the same t new positions during one decode call; ``length``
        advances once all of them did (see :meth:`advance`).
        """
        lc = self.layers[layer]
        if lc.self_k is None or lc.self_v is None:
            lc.self_k, lc.self_v = k, v
        else:
            lc.self_k = torch.cat([lc.self_k, k], dim=2)
            lc.self_v = torch.cat([lc.self_v, v], dim=2)
        return lc.self_k, lc.self_v

    def advance(self, t: int) -> None:
        """Mark the ``t`` positions appended during this decode call as cached."""
        self.length += t

    def reorder(self, indices: Tensor) -> KVCache:
        """Keep rows ``indices`` (a 1-D long tensor; may repeat or drop rows). In place.

        Beam search calls it with the parent of each surviving hypothesis; greedy decoding
        calls it with the rows of unfinished sentences to shrink the batch.
        """
        for lc in self.layers:
            lc.cross_k = lc.cross_k.index_select(0, indices)
            lc.cross_v = lc.cross_v.index_select(0, indices)
            if lc.self_k is not None and lc.self_v is not None:
                lc.self_k = lc.self_k.index_select(0, indices)
                lc.self_v = lc.self_v.index_select(0, indices)
        self.memory_mask = self.memory_mask.index_select(0, indices)
        return self
