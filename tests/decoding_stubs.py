"""Models for the decoding tests (test_decoding, test_constraints, test_terms): a scripted
stub whose next-token distribution is a table keyed by the prefix, the same with scripted
cross-attention, and a real tiny Transformer with a batch for it."""

from __future__ import annotations

import math
from dataclasses import dataclass
from types import SimpleNamespace

import torch

from attenzione.config import ModelConfig
from attenzione.model.transformer import Transformer

PAD, BOS, EOS, A, B, C = 0, 1, 2, 3, 4, 5
V = 6


@dataclass
class StubCache:
    """Remembers each row's prefix so the stub can script p(next | prefix)."""

    prefixes: list[list[int]]
    length: int = 0

    def reorder(self, indices: torch.Tensor) -> StubCache:
        self.prefixes = [list(self.prefixes[i]) for i in indices.tolist()]
        return self


class ScriptedModel:
    """A 'model' whose next-token distribution is a table keyed by the prefix (bos excluded).

    The table is the textbook case where greedy search is not optimal:
    greedy takes A (0.6) and then must end with p(eos | A) = 0.5 → 0.30 in total, while
    B (0.4) followed by eos (0.9) → 0.36 is better, and beam search (K = 2) finds it.
    """

    TABLE: dict[tuple[int, ...], dict[int, float]] = {
        (): {A: 0.6, B: 0.4},
        (A,): {EOS: 0.5, C: 0.4, B: 0.1},
        (B,): {EOS: 0.9, C: 0.1},
        (A, C): {EOS: 1.0},
        (B, C): {EOS: 1.0},
    }

    def __init__(self) -> None:
        self.config = SimpleNamespace(
            pad_id=PAD, bos_id=BOS, eos_id=EOS, max_len=50, tgt_vocab_size=V
        )

    def encode(self, src_ids: torch.Tensor) -> SimpleNamespace:
        b = src_ids.shape[0]
        return SimpleNamespace(memory=torch.zeros(b, 1, 1), memory_mask=torch.ones(b, 1, 1, 1))

    def init_cache(
        self, memory: torch.Tensor, memory_mask: torch.Tensor, capacity: int
    ) -> StubCache:
        return StubCache([[] for _ in range(memory.shape[0])])

    def next_dist(self, prefix: list[int]) -> dict[int, float]:
        """p(next token | prefix): the table's row (unlisted prefixes end)."""
        return self.TABLE.get(tuple(prefix), {EOS: 1.0})

    def decode(self, tgt_ids: torch.Tensor, cache: StubCache) -> SimpleNamespace:
        rows = []
        for r, tok in enumerate(tgt_ids[:, -1].tolist()):
            if tok != BOS:
                cache.prefixes[r].append(tok)
            dist = self.next_dist(cache.prefixes[r])
            logp = torch.full((V,), -1e9)
            for t, p in dist.items():
                logp[t] = math.log(p)
            rows.append(logp)
        cache.length += 1
        return SimpleNamespace(logits=torch.stack(rows)[:, None, :])


class Attending(ScriptedModel):
    """ScriptedModel's table, with the cross-attention of its newest position scripted too
    (returned only with ``need_weights=True``, which it counts in ``asked``).

    The source is [A, A, <eos>]. Layer 1 attends as ATTN says; layer 0 spreads evenly, so
    reading the wrong layer gives other scores. B·<eos>, the likeliest, only ever looks at the
    first token; A·<eos> half-covers the second; A·C·<eos> covers both.
    """

    ATTN: dict[tuple[int, ...], list[float]] = {
        (): [1.0, 0.0, 0.0],
        (A,): [0.0, 0.5, 0.5],
        (B,): [1.0, 0.0, 0.0],
        (A, C): [0.0, 0.5, 0.5],
    }

    def __init__(self) -> None:
        super().__init__()
        self.config.n_dec_layers = 2
        self.asked = 0  # decode calls that asked for the attention weights

    def decode(
        self, tgt_ids: torch.Tensor, cache: StubCache, need_weights: bool = False
    ) -> SimpleNamespace:
        out = super().decode(tgt_ids, cache)
        if need_weights:
            self.asked += 1
            rows = [self.ATTN.get(tuple(p), [1 / 3] * 3) for p in cache.prefixes]
            layer1 = torch.tensor(rows)[:, None, None, :].expand(-1, 2, 1, 3)  # (N,H,1,S)
            out.cross_attentions = [torch.full_like(layer1, 1 / 3), layer1]
        return out


def src(batch: int = 1) -> torch.Tensor:
    """A (batch, 3) source of real tokens (the stubs ignore what it says)."""
    return torch.full((batch, 3), A, dtype=torch.long)


TINY_TGT_VOCAB = 29


def tiny_model(**kw: object) -> Transformer:
    """A real, untrained Transformer (seeded), in eval mode."""
    torch.manual_seed(0)
    cfg = ModelConfig(
        src_vocab_size=23,
        tgt_vocab_size=TINY_TGT_VOCAB,
        d_model=24,
        n_heads=3,
        d_head=8,
        d_ff=32,
        n_enc_layers=2,
        n_dec_layers=2,
        dropout=0.0,
        max_len=64,
        **kw,  # type: ignore[arg-type]
    )
    return Transformer(cfg).eval()


def tiny_batch() -> torch.Tensor:
    """Five sources for :func:`tiny_model`, two of them padded."""
    g = torch.Generator().manual_seed(1)
    ids = torch.randint(4, 23, (5, 9), generator=g)
    ids[1, 6:] = PAD
    ids[3, 3:] = PAD
    return ids
