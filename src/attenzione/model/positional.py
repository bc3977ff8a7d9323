"""Positional information: sinusoidal (the paper's) and learned.

Attention is permutation-invariant: without positions "dog bites man" and "man bites dog"
encode to the same set of vectors. The paper adds to each token embedding

    PE(pos, 2i)   = sin(pos / 10000^(2i / d_model))
    PE(pos, 2i+1) = cos(pos / 10000^(2i / d_model))

so each pair of dimensions is a clock of its own frequency. With d_model = 4 and pos = 1 the
formula gives [sin 1, cos 1, sin 0.01, cos 0.01] = [0.8415, 0.5403, 0.0100, 0.9999]. An odd
d_model (GloVe sizes are even, but a user may choose 51) simply drops the last cosine column.

Marian (OPUS-MT, transformers' ``MarianSinusoidalPositionalEmbedding``) writes the same values
in another order: every sine first, then every cosine (``layout="halves"``: [sin 1, sin 0.01,
cos 1, cos 0.01] for the example). A model trained with one layout reads the other as noise,
so the layout is part of the config (``ModelConfig.sinusoid_layout``).

Both modules take an ``offset`` so the decoder, fed one new token at a time from a K/V cache,
gets position ``offset`` rather than 0.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor, nn


def sinusoidal_table(max_len: int, d_model: int, layout: str = "interleaved") -> Tensor:
    """(max_len, D) table of the paper's sinusoids, float32: sin/cos pairs side by side
    (``"interleaved"``), or all ceil(D/2) sines then the D//2 cosines (``"halves"``)."""
    pos = torch.arange(max_len, dtype=torch.float64)[:, None]  # (L,1)
    two_i = torch.arange(0, d_model, 2, dtype=torch.float64)  # (ceil(D/2),)
    if layout == "halves":
        # Marian's own arithmetic (pos / 10000^(2i/D), in float64), so the float32 table is
        # the one transformers builds, bit for bit
        angles = pos / torch.pow(10000.0, two_i / d_model)  # (L, ceil(D/2))
        cos = torch.cos(angles)[:, : d_model // 2]  # odd D: one cosine fewer
        return torch.cat([torch.sin(angles), cos], dim=1).float()  # (L, D)
    if layout != "interleaved":
        raise ValueError(f"sinusoid layout must be 'interleaved' or 'halves', got {layout!r}")
    # 1 / 10000^(2i/d_model), computed in float64 so the table is exact to fp32 precision.
    inv_freq = torch.exp(-math.log(10000.0) * two_i / d_model)  # (ceil(D/2),)
    angles = pos * inv_freq  # (L, ceil(D/2))
    table = torch.zeros(max_len, d_model, dtype=torch.float64)
    table[:, 0::2] = torch.sin(angles)
    table[:, 1::2] = torch.cos(angles)[:, : d_model // 2]  # odd D: no cosine for the last sine
    return table.float()


class SinusoidalPositions(nn.Module):
    """Adds nothing learnable: a fixed buffer, not saved in checkpoints (it is recomputed)."""

    def __init__(self, d_model: int, max_len: int, layout: str = "interleaved") -> None:
        super().__init__()
        self.d_model = d_model
        self.max_len = max_len
        self.layout = layout
        table = sinusoidal_table(max_len, d_model, layout)
        self.register_buffer("table", table, persistent=False)

    def forward(self, length: int, offset: int = 0) -> Tensor:
        """(length, D) positions offset .. offset+length-1."""
        end = offset + length
        table: Tensor = self.table  # type: ignore[assignment]
        if end > self.max_len:
            # Grow instead of failing: sinusoids are defined for any position.
            table = sinusoidal_table(end, self.d_model, self.layout).to(table.device)
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


def make_positions(kind: str, d_model: int, max_len: int, layout: str = "interleaved") -> nn.Module:
    """Build the position module named by ``ModelConfig.positions`` (``layout``: its
    ``sinusoid_layout``)."""
    if kind == "sinusoidal":
        return SinusoidalPositions(d_model, max_len, layout)
    if kind == "learned":
        return LearnedPositions(d_model, max_len)
    raise ValueError(f"positions must be 'sinusoidal' or 'learned', got {kind!r}")
