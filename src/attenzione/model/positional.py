"""Positional information: sinusoidal (the paper's) and learned.

Attention is permutation-invariant: without positions "dog bites man" and "man bites dog"
encode to the same set of vectors. The paper adds to each token embedding

    PE(pos, 2i)   = sin(pos / 10000^(2i / d_model))
    PE(pos, 2i+1) = cos(pos / 10000^(2i / d_model))

so each pair of dimensions is a clock of its own frequency. With d_model = 4 and pos = 1 the
formula gives [sin 1, cos 1, sin 0.01, cos 0.01] = [0.8415, 0.5403, 0.0100, 0.9999]. An odd
d_model (GloVe sizes are even, but a user may choose 51) simply drops the last cosine column.

Marian (OPUS-MT) writes the same values in another order, every sine first; an import
brings such a model into this order (:mod:`attenzione.interop.names`), so this is the one
layout the network knows.

Both modules take an ``offset`` so the decoder, fed one new token at a time from a K/V cache,
gets position ``offset`` rather than 0.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor, nn


def sinusoidal_table(max_len: int, d_model: int) -> Tensor:
    """(max_len, D) table of the paper's sinusoids, float32, sin/cos pairs side by side."""
    pos = torch.arange(max_len, dtype=torch.float64)[:, None]  # (L,1)
    two_i = torch.arange(0, d_model, 2, dtype=torch.float64)  # (ceil(D/2),)
    # 1 / 10000^(2i/d_model), computed in float64 so the table is exact to fp32 precision.
    inv_freq = torch.exp(-math.log(10000.0) * two_i / d_model)  # (ceil(D/2),)
    angles = pos * inv_freq  # (L, ceil(D/2))
    table = torch.zeros(max_len, d_model, dtype=torch.float64)
    table[:, 0::2] = torch.sin(angles)
    table[:, 1::2] = torch.cos(angles)[:, : d_model // 2]  # odd D: no cosine for the last sine
    return table.float()


class SinusoidalPositions(nn.Module):
    """Adds nothing learnable: a fixed buffer, not saved in checkpoints (it is recomputed)."""

    def __init__(self, d_model: int, max_len: int) -> None:
        super().__init__()
        self.d_model = d_model
        self.max_len = max_len
        table = sinusoidal_table(max_len, d_model)
        self.register_buffer("table", table, persistent=False)

    def forward(self, length: int, offset: int = 0) -> Tensor:
        """(length, D) positions offset .. offset+length-1."""
        end = offset + length
        table: Tensor = self.table  # type: ignore[assignment]
        if end > self.max_len:
            # Grow instead of failing: sinusoids are defined for any position.
            table = sinusoidal_table(end, self.d_model).to(table.device)
        return table[offset:end]


class LearnedPositions(nn.Module):
    """One trained vector per position, as BERT and GPT do; limited to ``max_len``."""

    def __init__(self, d_model: int, max_len: int) -> None:
        super().__init__()
        self.max_len = max_len
        self.embedding = nn.Embedding(max_len, d_model)
        nn.init.normal_(self.embedding.weight, std=0.02)

    def forward(self, length: int, offset: int = 0) -> Tensor:
        """(length, D) learned vectors for positions offset .. offset+length-1."""
        end = offset + length
        if end > self.max_len:
            raise ValueError(
                f"position {end - 1} is beyond the learned positions (max_len={self.max_len})"
            )
        idx = torch.arange(offset, end, device=self.embedding.weight.device)
        out: Tensor = self.embedding(idx)
        return out


def make_positions(kind: str, d_model: int, max_len: int) -> nn.Module:
    """Build the position module named by ``ModelConfig.positions``."""
    if kind == "sinusoidal":
        return SinusoidalPositions(d_model, max_len)
    if kind == "learned":
        return LearnedPositions(d_model, max_len)
    raise ValueError(f"positions must be 'sinusoidal' or 'learned', got {kind!r}")
