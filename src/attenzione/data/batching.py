"""Batches: padding to the batch maximum, and a length-bucketed token-budget sampler.

A batch of sentences is a rectangle: every row is padded to the longest one. With random
batches of a corpus whose lengths run from 1 to 100 words most of the rectangle is padding,
which costs time and memory for nothing. :class:`TokenBudgetSampler` groups sentences of
similar length and sizes each batch by a token budget (rows × longest row ≤ ``max_tokens``),
so short sentences come in large batches and long ones in small batches, and padding stays low.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field

import torch
from torch import Tensor


@dataclass
class Batch:
    """src_ids (B,S) [+ <eos>], tgt_in (B,T) = <bos>+target, tgt_out (B,T) = target+<eos>."""

    src_ids: Tensor
    tgt_in: Tensor
    tgt_out: Tensor
    n_src_tokens: int
    n_tgt_tokens: int
    indices: list[int] = field(default_factory=list)

    def to(self, device: torch.device | str) -> Batch:
        return Batch(
            self.src_ids.to(device),
            self.tgt_in.to(device),
            self.tgt_out.to(device),
            self.n_src_tokens,
            self.n_tgt_tokens,
            self.indices,
        )


def collate(
    examples: Sequence[tuple[Sequence[int], Sequence[int]]],
    *,
    pad_id: int = 0,
    bos_id: int = 1,
    eos_id: int = 2,
    src_eos: bool = True,
    indices: list[int] | None = None,
) -> Batch:
    """Pad (source ids, target ids) pairs into a :class:`Batch`.

    The source gets a final ``<eos>`` (``src_eos``) so the encoder sees where the sentence
    ends; the target is shifted: the decoder reads ``<bos> y1 … yn`` and predicts
    ``y1 … yn <eos>``.
    """
    b = len(examples)
    srcs = [list(s) + ([eos_id] if src_eos else []) for s, _ in examples]
    s_len = max((len(s) for s in srcs), default=1) or 1
    t_len = max((len(t) for _, t in examples), default=0) + 1
    src = torch.full((b, s_len), pad_id, dtype=torch.long)
    tgt_in = torch.full((b, t_len), pad_id, dtype=torch.long)
    tgt_out = torch.full((b, t_len), pad_id, dtype=torch.long)
    for row, (s, (_, t)) in enumerate(zip(srcs, examples, strict=True)):
        src[row, : len(s)] = torch.tensor(s, dtype=torch.long)
        tgt_in[row, : len(t) + 1] = torch.tensor([bos_id, *t], dtype=torch.long)
        tgt_out[row, : len(t) + 1] = torch.tensor([*t, eos_id], dtype=torch.long)
    n_src = int((src != pad_id).sum())
    n_tgt = int((tgt_out != pad_id).sum())
    return Batch(src, tgt_in, tgt_out, n_src, n_tgt, list(indices or range(b)))


class TokenBudgetSampler:
    """Yields lists of example indices; each batch's padded rectangle fits ``max_tokens``.

    Per epoch: shuffle by (seed, epoch), cut into pools of ~100 batches, sort each pool by
    length, cut it into batches under the budget, shuffle the batch order. With
    ``num_replicas`` > 1 every rank gets the same number of batches (the list is trimmed to a
    multiple of the replica count) and rank r takes batches r, r+R, r+2R, …
    An example longer than the budget still gets a batch of its own: nothing is dropped.
    """

    def __init__(
        self,
        lengths: Sequence[tuple[int, int]],
        *,
        max_tokens: int,
        shuffle: bool = True,
        seed: int = 0,
        num_replicas: int = 1,
        rank: int = 0,
        max_sentences: int | None = None,
        pool_batches: int = 100,
    ) -> None:
        if max_tokens < 1:
            raise ValueError(f"max_tokens must be >= 1, got {max_tokens}")
        if not 0 <= rank < num_replicas:
            raise ValueError(f"rank must be in [0, {num_replicas}), got {rank}")
        self.sizes = [max(s, t) for s, t in lengths]
        self.max_tokens = max_tokens
        self.shuffle = shuffle
        self.seed = seed
        self.num_replicas = num_replicas
        self.rank = rank
        self.max_sentences = max_sentences
        self.pool_batches = pool_batches
        self.epoch = 0

    def set_epoch(self, epoch: int) -> None:
        self.epoch = epoch

    def _all_batches(self) -> list[list[int]]:
        rng = random.Random(self.seed * 1_000_003 + self.epoch)
        order = list(range(len(self.sizes)))
        if self.shuffle:
            rng.shuffle(order)
        mean = sum(self.sizes) / max(len(self.sizes), 1)
        pool = max(1, int(self.pool_batches * self.max_tokens / max(mean, 1)))
        batches: list[list[int]] = []
        for start in range(0, len(order), pool):
            chunk = sorted(order[start : start + pool], key=lambda i: self.sizes[i])
            current: list[int] = []
            longest = 0
            for i in chunk:
                width = max(longest, self.sizes[i])
                full = width * (len(current) + 1) > self.max_tokens or (
                    self.max_sentences is not None and len(current) >= self.max_sentences
                )
                if current and full:
                    batches.append(current)
                    current, width = [], self.sizes[i]
                current.append(i)
                longest = width
            if current:
                batches.append(current)
        if self.shuffle:
            rng.shuffle(batches)
        if self.num_replicas > 1:
            batches = batches[: len(batches) - len(batches) % self.num_replicas]
        return batches

    def __iter__(self) -> Iterator[list[int]]:
        return iter(self._all_batches()[self.rank :: self.num_replicas])

    def __len__(self) -> int:
        return len(self._all_batches()) // self.num_replicas


def padding_ratio(batches: Iterable[Sequence[int]], lengths: Sequence[tuple[int, int]]) -> float:
    """Share of padded slots in the source and target rectangles of ``batches``."""
    padded = total = 0
    for batch in batches:
        for side in (0, 1):
            sizes = [lengths[i][side] for i in batch]
            total += max(sizes) * len(sizes)
            padded += max(sizes) * len(sizes) - sum(sizes)
    return padded / total if total else 0.0


def naive_batches(n: int, batch_size: int, seed: int = 0) -> list[list[int]]:
    """Fixed-size batches in shuffled order: the baseline padding is compared against."""
    order = list(range(n))
    random.Random(seed).shuffle(order)
    return [order[i : i + batch_size] for i in range(0, n, batch_size)]
