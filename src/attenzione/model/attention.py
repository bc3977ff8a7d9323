"""Scaled dot-product attention and multi-head attention, written out from the formula.

For one query vector q_i and keys k_j, values v_j:

    α_ij = exp(q_i·k_j / √d_k) / Σ_l exp(q_i·k_l / √d_k)        z_i = Σ_j α_ij v_j

and in matrix form ``Attention(Q, K, V) = softmax(QKᵀ / √d_k) V`` (:func:`attention`).
Multi-head attention projects the input with W^Q, W^K, W^V into H heads of d_head each,
attends in every head at once and projects the heads' outputs, side by side, with W^O
(:class:`MultiHeadAttention`: ``q_proj``, ``k_proj``, ``v_proj``, ``out_proj``).

Masks come from :mod:`attenzione.model.masks` (bool, True = may attend, broadcastable to
(B,H,Tq,Tk)), the causal one too. A query row with no allowed key has an undefined softmax
(0/0); :func:`attention` returns zeros for it — output and weights — and keeps gradients
finite, instead of the NaN a naive −inf fill produces.

This is the reference: it computes α for every call and returns it. Faster kernels that give
the same numbers without α (torch's fused SDPA, a memory-saving chunked one) and fused Q/K/V
weights live in :mod:`attenzione.model.fast`, which a model loaded to translate runs on.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import Tensor, nn


@dataclass
class AttentionRecord:
    """What one attention layer computed in one pass, returned only when weights are requested.

    The viewer draws ``weights`` and ``mask``; the explanation of one head re-does the formula's
    arithmetic from ``q``, ``k`` and ``v``. They are the very tensors the layer used (returned
    by the layer, not read off by patching it at run time), so an explanation can only ever
    describe what the model computed.

    Shapes: weights (B,H,Tq,Tk); q (B,H,Tq,Dh); k, v (B,H,Tk,Dh); mask bool broadcastable to
    (B,1,Tq,Tk), True = may attend, or None (no constraint).
    """

    weights: Tensor
    q: Tensor
    k: Tensor
    v: Tensor
    mask: Tensor | None


def safe_mask(mask: Tensor | None) -> tuple[Tensor | None, Tensor | None]:
    """Split ``mask`` into one with no empty row, plus the (…,Tq,1) "row has a key" flags.

    Rows with no allowed key are opened to every key (any finite softmax will do) and zeroed
    afterwards with the flags. This keeps the softmax away from 0/0, in both directions.
    Returns (mask, None) when no row is empty, so the common case costs one ``all()``.
    """
    if mask is None:
        return None, None
    has_key = mask.any(dim=-1, keepdim=True)  # (…,Tq,1)
    if bool(has_key.all()):
        return mask, None
    return mask | ~has_key, has_key


def check_attention_inputs(q: Tensor, k: Tensor, v: Tensor, mask: Tensor | None) -> None:
    """One-line errors for inputs no attention can take (shared with model/fast's kernels)."""
    if q.shape[-1] != k.shape[-1]:
        raise ValueError(f"queries and keys need the same d_k, got {q.shape[-1]} and {k.shape[-1]}")
    if k.shape[-2] != v.shape[-2]:
        raise ValueError(f"keys and values need the same length, got {k.shape[-2]}, {v.shape[-2]}")
    if mask is not None and mask.dtype != torch.bool:
        raise ValueError(f"mask must be torch.bool (True = may attend), got {mask.dtype}")


def attention(
    q: Tensor, k: Tensor, v: Tensor, mask: Tensor | None = None, dropout: nn.Module | None = None
) -> tuple[Tensor, Tensor]:
    """softmax(QKᵀ/√d_k) V, step by step. Returns (out (B,H,Tq,Dv), weights α (B,H,Tq,Tk)).

    q: (B,H,Tq,Dk) queries; k: (B,H,Tk,Dk) keys; v: (B,H,Tk,Dv) values (Tq ≠ Tk and Dv ≠ Dk
    allowed: queries from one sequence, keys from another). ``mask``: bool, broadcastable to
    (B,H,Tq,Tk), True = may attend; None = all allowed. ``dropout``: applied to α before it
    weighs the values (training); the weights returned are α itself.
    """
    check_attention_inputs(q, k, v, mask)
    scale = 1.0 / math.sqrt(q.shape[-1])
    scores = torch.matmul(q, k.transpose(-2, -1)) * scale  # (B,H,Tq,Dk)@(B,H,Dk,Tk) -> (B,H,Tq,Tk)
    mask, has_key = safe_mask(mask)
    if mask is not None:
        # finfo.min, not -inf: exp(min - max) underflows to exactly 0 without any inf - inf.
        scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
    weights = torch.softmax(scores, dim=-1)  # α_ij, each row sums to 1 over allowed keys
    if has_key is not None:
        weights = weights * has_key  # empty rows: all zeros
    attn = weights if dropout is None else dropout(weights)
    return torch.matmul(attn, v), weights  # (B,H,Tq,Tk)@(B,H,Tk,Dv) -> (B,H,Tq,Dv)


class MultiHeadAttention(nn.Module):
    """Multi-head attention with d_model decoupled from n_heads × d_head.

    W^Q, W^K, W^V ∈ R^{d_model × n_heads·d_head} are ``q_proj``, ``k_proj``, ``v_proj``; W^O ∈
    R^{n_heads·d_head × d_model} is ``out_proj``. The layers call the steps one by one
    (:meth:`project_q`, :meth:`project_kv`, :meth:`attend`) because a decoder appends the new
    keys and values to its cache between projecting and attending; :meth:`forward` is the
    whole of it for one call.
    """

    def __init__(
        self,
        d_model: int,
        n_heads: int,
        d_head: int,
        dropout: float = 0.0,
        bias: bool = True,
    ) -> None:
        super().__init__()
        self.d_model, self.n_heads, self.d_head = d_model, n_heads, d_head
        self.inner = n_heads * d_head
        self.q_proj = nn.Linear(d_model, self.inner, bias=bias)
        self.k_proj = nn.Linear(d_model, self.inner, bias=bias)
        self.v_proj = nn.Linear(d_model, self.inner, bias=bias)
        self.out_proj = nn.Linear(self.inner, d_model, bias=bias)
        self.dropout = nn.Dropout(dropout)  # on the weights α, in training
        # Glorot initialisation over the three projections as one (3·inner × d_model) matrix,
        # as nn.MultiheadAttention initialises its in_proj_weight
        bound = math.sqrt(6.0 / (d_model + 3 * self.inner))
        for proj in (self.q_proj, self.k_proj, self.v_proj):
            nn.init.uniform_(proj.weight, -bound, bound)
        nn.init.xavier_uniform_(self.out_proj.weight)
        if bias:
            for proj in (self.q_proj, self.k_proj, self.v_proj, self.out_proj):
                nn.init.zeros_(proj.bias)

    def heads(self, x: Tensor) -> Tensor:
        """(B,L,H·Dh) → (B,H,L,Dh): the projection cut into its heads."""
        b, length, _ = x.shape
        return x.view(b, length, self.n_heads, self.d_head).transpose(1, 2)

    def merge_heads(self, z: Tensor) -> Tensor:
        """(B,H,L,Dh) → (B,L,H·Dh): the heads' outputs side by side, ready for W^O."""
        b, _, length, _ = z.shape
        return z.transpose(1, 2).reshape(b, length, self.inner)  # (B,L,H,Dh) -> (B,L,H·Dh)

    def project_q(self, x: Tensor) -> Tensor:
        """(B,L,D) → (B,H,L,Dh): q = x W^Q, cut into heads."""
        return self.heads(self.q_proj(x))

    def project_kv(self, x: Tensor) -> tuple[Tensor, Tensor]:
        """(B,L,D) → two (B,H,L,Dh): k = x W^K, v = x W^V."""
        return self.heads(self.k_proj(x)), self.heads(self.v_proj(x))

    def project_qkv(self, x: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        """(B,L,D) → three (B,H,L,Dh): q, k and v of one input (self-attention)."""
        return (self.project_q(x), *self.project_kv(x))

    def attend(
        self, q: Tensor, k: Tensor, v: Tensor, mask: Tensor | None, *, need_weights: bool = False
    ) -> tuple[Tensor, Tensor | None]:
        """Attention on already-projected heads, then W^O. Returns ((B,Tq,D), the weights α
        (B,H,Tq,Tk) when ``need_weights``, else None)."""
        z, weights = attention(q, k, v, mask, self.dropout)
        return self.out_proj(self.merge_heads(z)), (weights if need_weights else None)

    def forward(
        self,
        query: Tensor,
        memory: Tensor | None = None,
        mask: Tensor | None = None,
        *,
        need_weights: bool = False,
    ) -> tuple[Tensor, Tensor | None]:
        """Self-attention over ``query`` (B,Tq,D) when ``memory`` is None; cross-attention
        from it over ``memory`` (B,Tk,D) otherwise. ``mask``: bool broadcastable to
        (B,H,Tq,Tk), True = may attend (the causal one from :mod:`attenzione.model.masks`).
        Returns ((B,Tq,D), weights (B,H,Tq,Tk) or None)."""
        if memory is None:
            q, k, v = self.project_qkv(query)
        else:
            q, (k, v) = self.project_q(query), self.project_kv(memory)
        return self.attend(q, k, v, mask, need_weights=need_weights)
