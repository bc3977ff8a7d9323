"""Token embeddings: learned, or initialised from pretrained vectors such as GloVe.

A token id becomes a vector by a table lookup. The GloVe design takes the source table from
GloVe, so its width is a GloVe size (50/100/200/300) and d_model follows it. When the vectors
have another width than d_model, a learned linear projection maps them in — the only way to use,
say, 300-d GloVe in a 256-d model without throwing information away at random.

As in the paper, the output is multiplied by √d_model: the sinusoidal positions have unit
amplitude and the scaling keeps the token signal from being drowned by them. (A model trained
without it — a Marian model with ``scale_embedding`` off — is built with ``scale=False``.)
"""

from __future__ import annotations

import math

import numpy as np
import torch
from torch import Tensor, nn


class TokenEmbedding(nn.Module):
    """(B,L) ids → (B,L,D) vectors, scaled by √d_model.

    Args:
        vocab_size: V.
        d_model: D, the model width.
        pad_id: its row is initialised to zero and receives no gradient.
        embed_dim: width of the table; defaults to D. When it differs, ``proj`` maps it to D.
        scale: False leaves the vectors unscaled (× 1).
    """

    def __init__(
        self,
        vocab_size: int,
        d_model: int,
        pad_id: int,
        embed_dim: int | None = None,
        *,
        scale: bool = True,
    ) -> None:
        super().__init__()
        self.d_model = d_model
        self.embed_dim = embed_dim or d_model
        self.embedding = nn.Embedding(vocab_size, self.embed_dim, padding_idx=pad_id)
        nn.init.normal_(self.embedding.weight, std=self.embed_dim**-0.5)
        with torch.no_grad():
            self.embedding.weight[pad_id].zero_()
        self.proj: nn.Module = (
            nn.Linear(self.embed_dim, d_model, bias=False)
            if self.embed_dim != d_model
            else nn.Identity()
        )
        self.scale = math.sqrt(d_model) if scale else 1.0

    @property
    def weight(self) -> Tensor:
        return self.embedding.weight

    def forward(self, ids: Tensor) -> Tensor:
        out: Tensor = self.proj(self.embedding(ids)) * self.scale  # (B,L,E) -> (B,L,D)
        return out

    @torch.no_grad()
    def load_pretrained(self, matrix: np.ndarray | Tensor, *, freeze: bool = False) -> None:
        """Copy a (V, embed_dim) matrix into the table; ``freeze`` stops it from training.

        The vectors are copied unchanged, so their geometry (cosine neighbours, analogies)
        is what the model starts from; the √d_model scale of :meth:`forward` applies as usual.
        """
        t = torch.as_tensor(np.asarray(matrix), dtype=self.embedding.weight.dtype)
        if tuple(t.shape) != tuple(self.embedding.weight.shape):
            raise ValueError(
                f"pretrained matrix has shape {tuple(t.shape)}, the embedding table needs "
                f"{tuple(self.embedding.weight.shape)} (vocabulary × embedding width)"
            )
        self.embedding.weight.copy_(t)
        self.embedding.weight.requires_grad_(not freeze)
