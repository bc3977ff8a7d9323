"""Scaled dot-product attention and multi-head attention, written out from the formula.

For one query vector q_i and keys k_j, values v_j:

    α_ij = exp(q_i·k_j / √d_k) / Σ_l exp(q_i·k_l / √d_k)        z_i = Σ_j α_ij v_j

and in matrix form ``Attention(Q, K, V) = softmax(QKᵀ / √d_k) V``. Three backends compute it:

``"math"``
    The formula, step by step, in plain tensor ops. The only backend that returns the weights
    α, so it is the reference every other backend is tested against and the one the viewer
    reads from.
``"fused"``
    ``torch.nn.functional.scaled_dot_product_attention``: the same numbers from one kernel,
    without materialising α for the caller. The default when weights are not requested.
``"chunked"``
    Memory-efficient attention: keys are visited in blocks while a running maximum
    and a running denominator keep the softmax exact ("online softmax"), so the full Tq×Tk
    score matrix never exists; peak memory grows linearly in the key length.

Masks follow :mod:`attenzione.model.masks`: bool, True = may attend, broadcastable to (B,H,Tq,Tk).
A query row with no allowed key has an undefined softmax (0/0); every backend returns zeros
for it — output and weights — and keeps gradients finite, instead of the NaN a naive −inf fill
produces.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from attenzione.model.dropout import dropout

BACKENDS = ("auto", "math", "fused", "chunked")
DEFAULT_CHUNK = 256


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


def _safe_mask(mask: Tensor | None) -> tuple[Tensor | None, Tensor | None]:
    """Split ``mask`` into one with no empty row, plus the (…,Tq,1) "row has a key" flags.

    Rows with no allowed key are opened to every key (any finite softmax will do) and zeroed
    afterwards with the flags. This keeps every kernel away from 0/0, in both directions.
    Returns (None, None) when no row is empty, so the common case costs one ``all()``.
    """
    if mask is None:
        return None, None
    has_key = mask.any(dim=-1, keepdim=True)  # (…,Tq,1)
    if bool(has_key.all()):
        return mask, None
    return mask | ~has_key, has_key


def _math(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    mask: Tensor | None,
    is_causal: bool,
    dropout_p: float,
    scale: float,
) -> tuple[Tensor, Tensor]:
    """softmax(QKᵀ·scale + mask) V, returning (out (B,H,Tq,Dv), weights (B,H,Tq,Tk))."""
    scores = torch.matmul(q, k.transpose(-2, -1)) * scale  # (B,H,Tq,Dk)@(B,H,Dk,Tk) -> (B,H,Tq,Tk)
    if is_causal and q.shape[-2] > 1:  # a single (last) query sees every key
        tq, tk = scores.shape[-2:]
        causal = torch.ones(tq, tk, dtype=torch.bool, device=q.device).tril(diagonal=tk - tq)
        mask = causal if mask is None else mask & causal
    mask, has_key = _safe_mask(mask)
    if mask is not None:
        # finfo.min, not -inf: exp(min - max) underflows to exactly 0 without any inf - inf.
        scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
    weights = torch.softmax(scores, dim=-1)  # α_ij, each row sums to 1 over allowed keys
    if has_key is not None:
        weights = weights * has_key  # empty rows: all zeros
    attn = dropout(weights, dropout_p)
    return torch.matmul(attn, v), weights  # (B,H,Tq,Tk)@(B,H,Tk,Dv) -> (B,H,Tq,Dv)


def _fused(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    mask: Tensor | None,
    is_causal: bool,
    dropout_p: float,
    scale: float,
) -> Tensor:
    """torch's SDPA kernel, with empty rows handled as in :func:`_math`."""
    tq, tk = q.shape[-2], k.shape[-2]
    if is_causal and tq == 1:
        is_causal = False  # one query at the last position sees every key: nothing to mask
    if is_causal and (mask is not None or tq != tk):
        # SDPA's is_causal cannot be combined with a mask and aligns its triangle top-left;
        # a query block after cached keys needs it bottom-right, so build it explicitly.
        causal = torch.ones(tq, tk, dtype=torch.bool, device=q.device).tril(tk - tq)
        mask = causal if mask is None else mask & causal
        is_causal = False
    mask, has_key = _safe_mask(mask)
    out = F.scaled_dot_product_attention(
        q, k, v, attn_mask=mask, dropout_p=dropout_p, is_causal=is_causal, scale=scale
    )
    return out if has_key is None else out * has_key


def _chunked(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    mask: Tensor | None,
    is_causal: bool,
    scale: float,
    chunk_size: int,
) -> Tensor:
    """Exact attention over key blocks of ``chunk_size`` with an online softmax.

    For each block b the scores s_b = q·k_bᵀ·scale are the only (Tq × chunk) matrix alive.
    Running per-row state: m (max score so far), l (Σ exp(s - m)), acc (Σ exp(s - m) v). When a
    block raises the maximum from m to m', the old sums are rescaled by exp(m - m'), so at the
    end acc / l equals softmax(s) v over all keys, to rounding.
    """
    *batch, tq, _ = q.shape
    tk, dv = k.shape[-2], v.shape[-1]
    if is_causal:
        causal = torch.ones(tq, tk, dtype=torch.bool, device=q.device).tril(tk - tq)
        mask = causal if mask is None else mask & causal
    has_key = None if mask is None else mask.any(dim=-1, keepdim=True)  # (…,Tq,1)
    if mask is not None:
        mask = mask.expand(*batch, tq, tk)  # a view; sliced per block below
    neg = torch.finfo(q.dtype).min
    m = torch.full((*batch, tq, 1), neg, dtype=q.dtype, device=q.device)  # running max
    l = torch.zeros((*batch, tq, 1), dtype=q.dtype, device=q.device)  # running denominator
    acc = torch.zeros((*batch, tq, dv), dtype=q.dtype, device=q.device)  # running numerator
    for start in range(0, tk, chunk_size):
        stop = min(start + chunk_size, tk)
        s = torch.matmul(q, k[..., start:stop, :].transpose(-2, -1)) * scale  # (…,Tq,c)
        if mask is not None:
            s = s.masked_fill(~mask[..., start:stop], neg)
        m_new = torch.maximum(m, s.amax(dim=-1, keepdim=True))
        p = torch.exp(s - m_new)  # (…,Tq,c); masked entries underflow to 0 once a real key exists
        if mask is not None:
            # A masked entry seen before any real key would count as exp(0) = 1: zero it.
            p = p * mask[..., start:stop]
        rescale = torch.exp(m - m_new)
        l = l * rescale + p.sum(dim=-1, keepdim=True)
        acc = acc * rescale + torch.matmul(p, v[..., start:stop, :])  # (…,Tq,c)@(…,c,Dv)
        m = m_new
    out = acc / l.clamp_min(torch.finfo(q.dtype).tiny)  # empty rows: 0 / tiny = 0
    return out if has_key is None else out * has_key


def scaled_dot_product_attention(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    mask: Tensor | None = None,
    *,
    need_weights: bool = False,
    backend: str = "auto",
    is_causal: bool = False,
    dropout_p: float = 0.0,
    chunk_size: int = DEFAULT_CHUNK,
) -> tuple[Tensor, Tensor | None]:
    """softmax(QKᵀ/√d_k) V with a choice of backend.

    Args:
        q: (B,H,Tq,Dk) queries. k: (B,H,Tk,Dk) keys. v: (B,H,Tk,Dv) values. Tq ≠ Tk and
            Dv ≠ Dk are allowed (queries from one sequence, keys from another).
        mask: bool, broadcastable to (B,H,Tq,Tk), True = may attend. None = all allowed.
        need_weights: also return α (B,H,Tq,Tk); only the ``"math"`` backend can.
        backend: ``"auto"`` (fused; math when weights are needed or for bf16/fp16 on CPU),
            ``"math"``, ``"fused"`` or ``"chunked"``.
        is_causal: add a causal constraint (aligned bottom-right, so a query block that comes
            after cached keys sees all of them).
        dropout_p: dropout on the weights (training only; not available with "chunked").
        chunk_size: key block size of the chunked backend.

    Returns:
        (out (B,H,Tq,Dv), weights (B,H,Tq,Tk) or None).
    """
    if backend not in BACKENDS:
        raise ValueError(f"backend must be one of {BACKENDS}, got {backend!r}")
    if q.shape[-1] != k.shape[-1]:
        raise ValueError(f"queries and keys need the same d_k, got {q.shape[-1]} and {k.shape[-1]}")
    if k.shape[-2] != v.shape[-2]:
        raise ValueError(f"keys and values need the same length, got {k.shape[-2]}, {v.shape[-2]}")
    if mask is not None and mask.dtype != torch.bool:
        raise ValueError(f"mask must be torch.bool (True = may attend), got {mask.dtype}")
    scale = 1.0 / math.sqrt(q.shape[-1])
    if backend == "auto":
        # torch's CPU SDPA kernel is several times slower than two bf16 matmuls at the short
        # lengths of sentence translation (measured: bench/), so reduced precision on CPU
        # takes the math path; fp32 and GPUs take the fused kernel.
        low_precision_cpu = q.device.type == "cpu" and q.dtype in (torch.bfloat16, torch.float16)
        backend = "math" if need_weights or low_precision_cpu else "fused"
    if need_weights and backend != "math":
        raise ValueError(f"need_weights=True needs backend 'math' or 'auto', got {backend!r}")
    if backend == "math":
        out, weights = _math(q, k, v, mask, is_causal, dropout_p, scale)
        return out, (weights if need_weights else None)
    if backend == "fused":
        return _fused(q, k, v, mask, is_causal, dropout_p, scale), None
    if dropout_p > 0:
        raise ValueError("the chunked backend does not implement attention dropout")
    return _chunked(q, k, v, mask, is_causal, scale, chunk_size), None


class MultiHeadAttention(nn.Module):
    """Multi-head attention with d_model decoupled from n_heads × d_head.

    W^Q, W^K, W^V ∈ R^{d_model × n_heads·d_head} are stored stacked in one ``qkv_proj`` linear
    layer so self-attention needs a single matrix multiply; cross-attention uses the W^Q slice
    on the target and the W^K/W^V slice on the encoder memory (one multiply each). W^O ∈
    R^{n_heads·d_head × d_model} is ``out_proj``. The layout (rows [Q; K; V]) is the one of
    ``nn.MultiheadAttention.in_proj_weight``, which makes weight copying for tests trivial.
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
        self.dropout = dropout
        self.qkv_proj = nn.Linear(d_model, 3 * self.inner, bias=bias)
        self.out_proj = nn.Linear(self.inner, d_model, bias=bias)
        nn.init.xavier_uniform_(self.qkv_proj.weight)
        nn.init.xavier_uniform_(self.out_proj.weight)
        if bias:
            nn.init.zeros_(self.qkv_proj.bias)
            nn.init.zeros_(self.out_proj.bias)

    # --- the three projections, as views (no copies) -------------------------------------
    def _slice(self, part: int) -> tuple[Tensor, Tensor | None]:
        rows = slice(part * self.inner, (part + 1) * self.inner)
        b = self.qkv_proj.bias
        return self.qkv_proj.weight[rows], (None if b is None else b[rows])

    def project_q(self, x: Tensor) -> Tensor:
        """(B,L,D) → (B,H,L,Dh): q = x W^Q, split into heads."""
        w, b = self._slice(0)
        return self._heads(F.linear(x, w, b))

    def project_kv(self, x: Tensor) -> tuple[Tensor, Tensor]:
        """(B,L,D) → two (B,H,L,Dh): k = x W^K, v = x W^V with one matrix multiply."""
        w = self.qkv_proj.weight[self.inner :]
        b = None if self.qkv_proj.bias is None else self.qkv_proj.bias[self.inner :]
        k, v = F.linear(x, w, b).chunk(2, dim=-1)  # (B,L,2·H·Dh) -> 2 × (B,L,H·Dh)
        return self._heads(k), self._heads(v)

    def project_qkv(self, x: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        """(B,L,D) → three (B,H,L,Dh) with one matrix multiply (self-attention)."""
        q, k, v = self.qkv_proj(x).chunk(3, dim=-1)  # (B,L,3·H·Dh) -> 3 × (B,L,H·Dh)
        return self._heads(q), self._heads(k), self._heads(v)

    def _heads(self, x: Tensor) -> Tensor:
        b, length, _ = x.shape
        return x.view(b, length, self.n_heads, self.d_head).transpose(1, 2)  # -> (B,H,L,Dh)

    def merge_heads(self, z: Tensor) -> Tensor:
        """(B,H,L,Dh) → (B,L,H·Dh): the heads' outputs side by side, ready for W^O."""
        b, _, length, _ = z.shape
        return z.transpose(1, 2).reshape(b, length, self.inner)  # (B,L,H,Dh) -> (B,L,H·Dh)

    def attend(
        self,
        q: Tensor,
        k: Tensor,
        v: Tensor,
        mask: Tensor | None,
        *,
        need_weights: bool = False,
        is_causal: bool = False,
        backend: str = "auto",
    ) -> tuple[Tensor, Tensor | None]:
        """Attention on already-projected heads, then W^O. Returns ((B,Tq,D), weights)."""
        z, weights = scaled_dot_product_attention(
            q,
            k,
            v,
            mask,
            need_weights=need_weights,
            backend=backend,
            is_causal=is_causal,
            dropout_p=self.dropout if self.training else 0.0,
        )
        return self.out_proj(self.merge_heads(z)), weights

    def forward(
        self,
        query: Tensor,
        key: Tensor | None = None,
        value: Tensor | None = None,
        mask: Tensor | None = None,
        *,
        need_weights: bool = False,
        is_causal: bool = False,
        backend: str = "auto",
    ) -> tuple[Tensor, Tensor | None]:
        """Self-attention when ``key`` is None (or ``query``); cross-attention otherwise.

        Args:
            query: (B,Tq,D). key, value: (B,Tk,D); cross-attention needs key is value (the
                encoder memory) — separate key/value tensors are also accepted.
            mask: bool broadcastable to (B,H,Tq,Tk), True = may attend.

        Returns:
            (output (B,Tq,D), weights (B,H,Tq,Tk) or None).
        """
        if key is None or key is query:
            if value is not None and value is not query:
                raise ValueError("self-attention takes value=None (or the query itself)")
            q, k, v = self.project_qkv(query)
        else:
            q = self.project_q(query)
            if value is None or value is key:
                k, v = self.project_kv(key)
            else:  # distinct key and value tensors: project each with its own slice
                wk, bk = self._slice(1)
                wv, bv = self._slice(2)
                k, v = self._heads(F.linear(key, wk, bk)), self._heads(F.linear(value, wv, bv))
        return self.attend(
            q, k, v, mask, need_weights=need_weights, is_causal=is_causal, backend=backend
        )
