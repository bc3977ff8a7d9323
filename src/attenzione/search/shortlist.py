"""A vocabulary shortlist: the output layer scores only the target pieces a source can produce.

The output layer multiplies every decoder state by the whole 24,001 × 256 target embedding,
although one sentence's translation draws on a few hundred pieces. A shortlist (Marian's
"lexical shortlist", CTranslate2's "vocabulary map") names, for a batch of sources, the pieces
worth scoring:

    the F most frequent target pieces  ∪  for every source piece, its K best translations
    ∪  the special pieces (<eos>, <unk>)

"Best translations" come from counting over the training pairs: a target piece t is a likely
translation of a source piece s when they occur in the same pairs more often than their own
frequencies explain. The measure is the Dice coefficient over sentence pairs,

    Dice(s, t) = 2·c(s, t) / (c(s) + c(t))

(c(s): pairs whose source has s; c(s, t): pairs with s in the source and t in the target),
which, unlike p(t | s), does not rank the most common target pieces first for every source
piece (those are in the F frequent ones anyway). No aligner, no new dependency: one pass of
counting (:func:`count` → :func:`build`).

In the search the shortlist is an output head (:class:`ShortlistHead`, made by
:func:`output_head`): the decoder's output layer scores the listed pieces only, and the head
spreads those logits over the whole vocabulary.

What it changes, exactly: the logits of the listed pieces are the model's own; the others are
never computed and count as −inf. So softmax is taken over the list: a listed piece's log-prob
is the model's plus −log(probability mass of the list) ≥ 0, and a greedy translation whose every
token is in the list is the same translation, token for token (tests/test_shortlist.py).
Where the model's choice is outside the list, the translation changes: BLEU measures how often
(docs/benchmarks.md, "The vocabulary shortlist").

The model directory keeps it in one file (its name is
:data:`attenzione.translator.model_dir.SHORTLIST_NAME`; read and written by
:mod:`attenzione.translator.model_dir`):
``frequent`` (F,) and ``table`` (V_src, K), int32, −1 = none.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor

from attenzione.model.fast import packing
from attenzione.model.fast.precision import plain_weight


@dataclass
class Shortlist:
    """``frequent`` (F,) target ids always scored; ``table`` (V_src, K) the K best target ids
    of each source id (−1 pads a row with fewer)."""

    frequent: Tensor
    table: Tensor

    def check(self, src_vocab: int, tgt_vocab: int, where: str = "the shortlist") -> None:
        """A ValueError naming ``where`` unless the tables fit these vocabularies."""
        if self.table.dim() != 2 or self.table.shape[0] != src_vocab:
            raise ValueError(
                f"{where}: table has shape {tuple(self.table.shape)}, the model's source "
                f"vocabulary needs ({src_vocab}, K)"
            )
        if self.frequent.dim() != 1:
            raise ValueError(f"{where}: frequent must be a list of ids")
        for name, t in (("frequent", self.frequent), ("table", self.table)):
            if t.dtype not in (torch.int16, torch.int32, torch.int64):
                raise ValueError(f"{where}: {name} must hold integer ids, not {t.dtype}")
        for name, t in (("frequent", self.frequent), ("table", self.table)):
            if t.numel() and (int(t.max()) >= tgt_vocab or int(t.min()) < -1):
                raise ValueError(f"{where}: {name} has ids outside the target vocabulary")

    @property
    def k(self) -> int:
        return int(self.table.shape[1])

    def ids_for(
        self, src_ids: Tensor, always: Sequence[int] = (), *, copy_source: bool = False
    ) -> Tensor:
        """The sorted target ids to score for a (B,S) batch of source ids, plus ``always``.
        ``copy_source``: the source ids themselves too (one vocabulary for both sides: a name
        or a number is copied piece for piece, however rare)."""
        flat = src_ids.reshape(-1).long()
        found = self.table[flat].reshape(-1).long()
        parts = [self.frequent.long(), found[found >= 0], torch.tensor(list(always)).long()]
        if copy_source:
            parts.append(flat)
        ids: Tensor = torch.unique(torch.cat(parts))  # sorted
        return ids


class Counts:
    """Co-occurrence counts over sentence pairs of token ids (each piece once per side)."""

    def __init__(self, src_vocab: int, tgt_vocab: int) -> None:
        self.src_vocab, self.tgt_vocab = src_vocab, tgt_vocab
        self.pair = torch.zeros(src_vocab * tgt_vocab, dtype=torch.int32)  # c(s, t), flat
        self.src = torch.zeros(src_vocab, dtype=torch.int64)  # c(s)
        self.tgt = torch.zeros(tgt_vocab, dtype=torch.int64)  # c(t)
        self.tokens = torch.zeros(tgt_vocab, dtype=torch.int64)  # target piece frequency
        self.pairs = 0

    def add(self, pairs: Iterable[tuple[Sequence[int], Sequence[int]]]) -> None:
        keys: list[np.ndarray] = []
        for src, tgt in pairs:
            s = np.unique(np.asarray(src, dtype=np.int64))
            t = np.unique(np.asarray(tgt, dtype=np.int64))
            if not len(s) or not len(t):
                continue
            keys.append(np.add.outer(s * self.tgt_vocab, t).ravel())
            self.src[torch.from_numpy(s)] += 1
            self.tgt[torch.from_numpy(t)] += 1
            self.tokens.index_add_(
                0,
                torch.as_tensor(np.asarray(tgt, dtype=np.int64)),
                torch.ones(len(tgt), dtype=torch.int64),
            )
            self.pairs += 1
        if keys:
            flat = torch.from_numpy(np.concatenate(keys))
            self.pair.index_add_(0, flat, torch.ones(len(flat), dtype=torch.int32))


def build(
    counts: Counts,
    *,
    k: int = 50,
    n_frequent: int = 200,
    min_count: int = 2,
    skip: Sequence[int] = (),
) -> Shortlist:
    """The shortlist of ``counts``: the ``n_frequent`` most frequent target pieces, and per
    source piece the ``k`` target pieces of highest Dice coefficient seen with it at least
    ``min_count`` times. ``skip``: target ids never listed by count (padding, <bos>)."""
    sv, tv = counts.src_vocab, counts.tgt_vocab
    tokens = counts.tokens.clone()
    tokens[list(skip)] = -1
    frequent = tokens.topk(min(n_frequent, tv)).indices
    frequent = frequent[tokens[frequent] > 0].sort().values.to(torch.int32)
    table = torch.full((sv, k), -1, dtype=torch.int32)
    pair = counts.pair.view(sv, tv)
    tgt = counts.tgt.double()
    skip_t = torch.tensor(list(skip), dtype=torch.long)
    for start in range(0, sv, 512):  # rows in blocks: the Dice matrix is never whole
        block = pair[start : start + 512].double()  # (b, V_tgt)
        dice = 2 * block / (counts.src[start : start + 512, None].double() + tgt[None, :])
        dice[block < min_count] = 0
        if len(skip_t):
            dice[:, skip_t] = 0
        best = dice.topk(k, dim=1)
        ids = best.indices.to(torch.int32)
        ids[best.values <= 0] = -1
        table[start : start + 512] = ids
    return Shortlist(frequent=frequent, table=table)


def output_layer(model: Any, ids: Tensor) -> Callable[[Tensor], Tensor]:
    """The output layer of ``model`` (a :class:`~attenzione.model.transformer.Transformer`)
    restricted to the target ``ids``: (…, D) → (…, len(ids)), the same logits as the full layer's at
    those ids. Made once per batch; packed where the full layer is
    (:mod:`attenzione.model.fast.packing`)."""
    gen = model.generator
    bias = getattr(gen, "bias", None)
    bias = bias() if callable(bias) else bias  # an int8 layer gives its bias by a call
    w = plain_weight(gen).index_select(0, ids)  # in the model's own dtype: no cast a step
    b = None if bias is None else bias.detach().index_select(0, ids)
    if isinstance(gen, packing.PackedLinear):
        return packing.PackedLinear(w, b)
    return lambda x: F.linear(x, w.to(x.dtype), None if b is None else b.to(x.dtype))


class ShortlistHead:
    """The search's output head for a shortlist
    (:class:`attenzione.search.hooks.OutputHead`): ``layer`` scores the sorted target ``ids``
    only ((…, D) → (…, len(ids)), :func:`output_layer`), and every other piece of the
    ``vocab_size`` counts as −inf."""

    def __init__(self, ids: Tensor, layer: Callable[[Tensor], Tensor], vocab_size: int) -> None:
        self.ids, self.layer, self.vocab_size = ids, layer, vocab_size

    def __call__(self, logits: Tensor) -> Tensor:
        """(N,len(ids)) logits of the listed pieces → (N,V), −inf outside the list."""
        full = logits.new_full((logits.shape[0], self.vocab_size), float("-inf"))
        return full.index_copy_(1, self.ids, logits)


def output_head(model: Any, ids: Tensor) -> ShortlistHead:
    """The output head of ``model`` restricted to the sorted target ``ids``, for
    :func:`attenzione.search.decoding.generate`'s ``head``."""
    return ShortlistHead(ids, output_layer(model, ids), model.config.tgt_vocab_size)
