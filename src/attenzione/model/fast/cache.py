"""The K/V cache for inference: :class:`~attenzione.model.cache.KVCache`'s interface, with
buffers reused and the memory's K/V kept once per sentence.

* **self-attention**: the buffers are preallocated for ``capacity`` positions (doubling if
  exceeded), so a step does not copy the whole history as ``torch.cat`` would. A reorder copies
  the rows anyway, so it writes them packed, with room for exactly one more position: after it,
  the next step's keys and values are one contiguous block, which the attention's matrix
  products read faster than the rows of a larger buffer (bmm of one query against 30 cached
  keys, 256 rows × 4 heads: 0.12 against 0.20 ms). A reorder writes into the memory the one
  before it freed (two blocks a tensor, swapped, instead of a fresh allocation every step).
* **cross-attention**: the K/V of the encoder memory are kept once per *sentence*, not per row:
  beam search's K rows of a sentence attend to the same keys, so its rows come in runs of
  ``group`` consecutive rows per sentence, and cross-attention takes a run's K queries
  together against the one copy (:class:`~attenzione.model.fast.layers.FastDecoderLayer` does).
  Following the surviving hypotheses then copies nothing for the cross K/V; only a sentence
  that finishes makes them shrink.
* **no padding**: when no source position is padding, :attr:`FastKVCache.cross_mask` is None
  and cross-attention runs without a mask.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch
from torch import Tensor

from attenzione.model.cache import KVCache


@dataclass
class Buffers:
    """The flat memory one layer's self K/V are views of, and the memory they were in before
    the last reorder: the next reorder writes into that."""

    store_k: Tensor | None = None
    store_v: Tensor | None = None
    spare_k: Tensor | None = None
    spare_v: Tensor | None = None


@dataclass
class FastKVCache(KVCache):
    """A :class:`KVCache` whose self K/V live in reused buffers and whose cross K/V and
    ``memory_mask`` hold one row a sentence.

    Attributes (beyond :class:`KVCache`'s; ``layers[i].self_k`` is (B,H,room,Dh), the first
    ``length`` positions filled; ``memory_mask`` is (B/group,1,1,S)):
        capacity: preallocated self-attention positions.
        group: rows per sentence: rows ``i·group … i·group+group−1`` belong to sentence ``i``
            of the cross K/V and ``memory_mask``.
        buffers: one :class:`Buffers` per decoder layer.
    """

    capacity: int = 64
    group: int = 1
    # True when no source position is padding: cross-attention then needs no mask at all.
    no_padding: bool = field(default=False, repr=False)
    buffers: list[Buffers] = field(default_factory=list, repr=False)

    def __post_init__(self) -> None:
        self.no_padding = bool(self.memory_mask.all())
        self.buffers = [Buffers() for _ in self.layers]

    @property
    def cross_mask(self) -> Tensor | None:
        """The mask cross-attention needs during incremental decoding (None: all real)."""
        return None if self.no_padding else self.memory_mask

    @property
    def batch_size(self) -> int:
        """Rows (hypotheses) in the cache: sentences × group."""
        return int(self.memory_mask.shape[0]) * self.group

    def append(self, layer: int, k: Tensor, v: Tensor) -> tuple[Tensor, Tensor]:
        """Store the new (B,H,t,Dh) keys/values of ``layer``; return all keys/values so far,
        views (B,H,length+t,Dh) of the buffers."""
        lc, buf = self.layers[layer], self.buffers[layer]
        t = k.shape[2]
        end = self.length + t
        if lc.self_k is None or lc.self_v is None:
            room = max(self.capacity, end)
            lc.self_k, buf.store_k = _grow(k, room, 0)
            lc.self_v, buf.store_v = _grow(v, room, 0)
        elif end > lc.self_k.shape[2]:
            room = max(2 * lc.self_k.shape[2], end)
            lc.self_k, buf.store_k = _grow(lc.self_k, room, self.length)
            lc.self_v, buf.store_v = _grow(lc.self_v, room, self.length)
        lc.self_k[:, :, self.length : end] = k
        lc.self_v[:, :, self.length : end] = v
        return lc.self_k[:, :, :end], lc.self_v[:, :, :end]

    def reorder(self, indices: Tensor) -> FastKVCache:
        """Keep rows ``indices`` (a 1-D long tensor; may repeat or drop rows). In place.

        The self K/V follow the rows; the cross K/V and the mask follow the sentences (see
        the module docstring): copied only when the sentences change.
        """
        room = max(self.capacity, self.length + 1)
        for lc, buf in zip(self.layers, self.buffers, strict=True):
            if lc.self_k is not None and lc.self_v is not None:
                # only the filled part is copied, packed, with room for the next position; the
                # memory the rows were in becomes the next reorder's spare
                new, store = _select_prefix(lc.self_k, buf.spare_k, indices, self.length, room)
                lc.self_k, buf.store_k, buf.spare_k = new, store, buf.store_k
                new, store = _select_prefix(lc.self_v, buf.spare_v, indices, self.length, room)
                lc.self_v, buf.store_v, buf.spare_v = new, store, buf.store_v
        sentence = indices // self.group  # (N',) the sentence of each new row
        runs = torch.unique_consecutive(sentence)
        group = indices.shape[0] // runs.shape[0]
        grouped = indices.shape[0] == group * runs.shape[0] and bool(
            (sentence.view(-1, group) == runs[:, None]).all()
        )
        if grouped:  # runs of `group` rows per sentence: keep one copy a sentence
            keep = runs
        else:  # rows of one sentence apart (never in this package's strategies): one a row
            keep, group = sentence, 1
        self.group = group
        n = self.memory_mask.shape[0]
        if keep.shape[0] == n and bool((keep == torch.arange(n, device=keep.device)).all()):
            return self  # the same sentences in the same order: nothing to copy
        for lc in self.layers:
            lc.cross_k = lc.cross_k.index_select(0, keep)
            lc.cross_v = lc.cross_v.index_select(0, keep)
        self.memory_mask = self.memory_mask.index_select(0, keep)
        self.no_padding = self.no_padding or bool(self.memory_mask.all())
        return self


def _grow(buf: Tensor, room: int, filled: int) -> tuple[Tensor, Tensor]:
    """A (B,H,room,Dh) buffer holding the first ``filled`` positions of ``buf``, and the flat
    memory it is a view of."""
    b, h, _, dh = buf.shape
    store = buf.new_empty(b * h * room * dh)
    new = store.view(b, h, room, dh)
    new[:, :, :filled] = buf[:, :, :filled]
    return new, store


def _select_prefix(
    buf: Tensor, spare: Tensor | None, indices: Tensor, filled: int, room: int
) -> tuple[Tensor, Tensor]:
    """Rows ``indices`` of the first ``filled`` positions of ``buf``, packed in a contiguous
    (N,H,filled+1,Dh) buffer: a view of ``spare``'s flat memory when it is large enough,
    else of a new block for max(N, ``buf``'s rows) rows of max(``room``, filled+1) positions.
    Returns the new buffer and the flat memory it is a view of.

    The room is one position: the next append fills it. Beam search reorders every step, so
    that is all it needs; greedy decoding reorders only when a sentence finishes, and its next
    step but one grows the buffer again (one more copy of the cache per finished sentence;
    FLORES greedy measured the same speed as before, docs/benchmarks.md)."""
    b, h, _, dh = buf.shape
    n = indices.shape[0]
    need = n * h * (filled + 1) * dh
    if buf.requires_grad:  # outside inference: autograd cannot follow a copy into a buffer
        fresh = buf.new_empty(n, h, filled + 1, dh)
        fresh[:, :, :filled] = buf[:, :, :filled].index_select(0, indices)
        return fresh, fresh.view(-1)
    if spare is None or spare.numel() < need:
        spare = buf.new_empty(max(n, b) * h * max(room, filled + 1) * dh)
    new = spare[:need].view(n, h, filled + 1, dh)
    torch.index_select(buf[:, :, :filled], 0, indices, out=new[:, :, :filled])
    return new, spare
