"""Encoder and decoder layers: attention, feed-forward, residual + LayerNorm.

Each sub-layer is wrapped as the paper does (post-norm, the default)::

    x = LayerNorm(x + Dropout(sublayer(x)))

or, with ``norm="pre"``, as most modern code does::

    x = x + Dropout(sublayer(LayerNorm(x)))

Pre-norm trains more stably without warm-up tricks; post-norm matches the paper. The stacks
in :mod:`attenzione.model.transformer` add a final LayerNorm in the pre-norm case.

Dropout sits where the paper puts it: on each sub-layer's output (and, in the model, on the
embeddings + positions). The FFN's inner activation has none by default (``FeedForward``'s
``dropout`` argument adds it): at this size it costs ~5% of a training step for no measured
gain. The FFN's nonlinearity is the paper's ReLU unless the config names another
(``activation``: GELU, or swish = SiLU, x·σ(x), which OPUS-MT's Marian models use), and
LayerNorm's ε is the config's ``layer_norm_eps`` (1e-5, torch's and transformers' default).

Attention weights, when requested, are returned upward — never stored on ``self`` — as an
:class:`~attenzione.model.attention.AttentionRecord` holding the weights, the q/k/v they came from
and the mask that was applied. The layers call the projections explicitly (rather than through
``MultiHeadAttention.forward``) so these tensors are at hand to return, and so the decoder can
append its new keys and values to the cache between projecting and attending.
"""

from __future__ import annotations

from collections.abc import Callable

import torch.nn.functional as F
from torch import Tensor, nn

from attenzione.config import ModelConfig
from attenzione.model.attention import AttentionRecord, MultiHeadAttention
from attenzione.model.cache import KVCache

# the FFN's nonlinearity by its ModelConfig.activation name
ACTIVATIONS: dict[str, Callable[[Tensor], Tensor]] = {
    "relu": F.relu,
    "gelu": F.gelu,
    "swish": F.silu,
}


class FeedForward(nn.Module):
    """Position-wise FFN: max(0, x W1 + b1) W2 + b2 (or another ``activation`` than max(0, ·)).
    (B,L,D) → (B,L,F) → (B,L,D)."""

    def __init__(
        self, d_model: int, d_ff: int, dropout: float = 0.0, activation: str = "relu"
    ) -> None:
        super().__init__()
        self.linear1 = nn.Linear(d_model, d_ff)
        self.linear2 = nn.Linear(d_ff, d_model)
        self.dropout = nn.Dropout(dropout)
        self.activation = activation
        self.act = ACTIVATIONS[activation]

    def forward(self, x: Tensor) -> Tensor:
        h = self.dropout(self.act(self.linear1(x)))  # (B,L,F)
        out: Tensor = self.linear2(h)
        return out


class _Residual(nn.Module):
    """Residual connection + LayerNorm, post- or pre-norm (see the module docstring)."""

    def __init__(self, d_model: int, dropout: float, pre_norm: bool, eps: float = 1e-5) -> None:
        super().__init__()
        self.norm = nn.LayerNorm(d_model, eps=eps)
        self.dropout = nn.Dropout(dropout)
        self.pre_norm = pre_norm

    def inner(self, x: Tensor) -> Tensor:
        """What the sub-layer sees: LN(x) for pre-norm, x itself for post-norm."""
        out: Tensor = self.norm(x) if self.pre_norm else x
        return out

    def outer(self, x: Tensor, sub: Tensor) -> Tensor:
        """Combine the input with the sub-layer's output ``sub``."""
        y = x + self.dropout(sub)
        out: Tensor = y if self.pre_norm else self.norm(y)
        return out


class EncoderLayer(nn.Module):
    """Self-attention over the source, then the feed-forward network."""

    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__()
        pre, eps = cfg.norm == "pre", cfg.layer_norm_eps
        self.self_attn = MultiHeadAttention(cfg.d_model, cfg.n_heads, cfg.d_head, cfg.attn_dropout)
        self.ffn = FeedForward(cfg.d_model, cfg.d_ff, activation=cfg.activation)
        self.res_attn = _Residual(cfg.d_model, cfg.dropout, pre, eps)
        self.res_ffn = _Residual(cfg.d_model, cfg.dropout, pre, eps)

    def forward(
        self, x: Tensor, mask: Tensor | None, *, need_weights: bool = False
    ) -> tuple[Tensor, AttentionRecord | None]:
        """x: (B,S,D); mask: (B,1,1,S) or (B,1,S,S).

        Returns (B,S,D) and, with ``need_weights``, the record (weights (B,H,S,S), q/k/v).
        """
        h = self.res_attn.inner(x)
        attn = self.self_attn
        q, k, v = attn.project_qkv(h)  # 3 × (B,H,S,Dh)
        a, weights = attn.attend(q, k, v, mask, need_weights=need_weights)
        x = self.res_attn.outer(x, a)
        x = self.res_ffn.outer(x, self.ffn(self.res_ffn.inner(x)))
        record = None if weights is None else AttentionRecord(weights, q, k, v, mask)
        return x, record


class DecoderLayer(nn.Module):
    """Causal self-attention, cross-attention over the encoder memory, feed-forward."""

    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__()
        pre, eps = cfg.norm == "pre", cfg.layer_norm_eps
        d, h, dh = cfg.d_model, cfg.n_heads, cfg.d_head
        self.self_attn = MultiHeadAttention(d, h, dh, cfg.attn_dropout)
        self.cross_attn = MultiHeadAttention(d, h, dh, cfg.attn_dropout)
        self.ffn = FeedForward(d, cfg.d_ff, activation=cfg.activation)
        self.res_self = _Residual(d, cfg.dropout, pre, eps)
        self.res_cross = _Residual(d, cfg.dropout, pre, eps)
        self.res_ffn = _Residual(d, cfg.dropout, pre, eps)

    def forward(
        self,
        x: Tensor,
        memory: Tensor | None,
        self_mask: Tensor | None,
        memory_mask: Tensor | None,
        *,
        cache: KVCache | None = None,
        layer_index: int = 0,
        need_weights: bool = False,
    ) -> tuple[Tensor, AttentionRecord | None, AttentionRecord | None]:
        """One decoder layer.

        Args:
            x: (B,T,D) target states (T new positions when a cache is given).
            memory: (B,S,D) encoder output; unused when ``cache`` holds the cross K/V.
            self_mask: bool mask for self-attention, broadcastable to (B,1,T,T_total): the
                causal one of :mod:`attenzione.model.masks` (right-padded targets need no more:
                a real query never reaches a padded key that comes after it); None: none (one
                new position on a cache may attend to every key).
            memory_mask: (B,1,1,S) or (B,1,T,S) bool for cross-attention.
            cache: K/V cache; when given, new K/V are appended and cached ones reused.

        Returns:
            (B,T,D) states and, with ``need_weights``, the self-attention record (weights
            (B,H,T,T_total)) and the cross-attention record (weights (B,H,T,S)); else None.
        """
        # 1) masked self-attention
        h = self.res_self.inner(x)
        attn = self.self_attn
        q, k, v = attn.project_qkv(h)  # 3 × (B,H,T,Dh)
        if cache is not None:
            k, v = cache.append(layer_index, k, v)  # (B,H,T_total,Dh)
        a, self_w = attn.attend(q, k, v, self_mask, need_weights=need_weights)
        x = self.res_self.outer(x, a)

        # 2) cross-attention: queries from the target, keys/values from the encoder memory
        h = self.res_cross.inner(x)
        a, cross_rec = self.cross_attend(h, memory, memory_mask, cache, layer_index, need_weights)
        x = self.res_cross.outer(x, a)

        # 3) feed-forward
        x = self.res_ffn.outer(x, self.ffn(self.res_ffn.inner(x)))
        if self_w is None or cross_rec is None:
            return x, None, None
        return x, AttentionRecord(self_w, q, k, v, self_mask), cross_rec

    def cross_attend(
        self,
        h: Tensor,
        memory: Tensor | None,
        memory_mask: Tensor | None,
        cache: KVCache | None,
        layer_index: int,
        need_weights: bool,
    ) -> tuple[Tensor, AttentionRecord | None]:
        """Cross-attention of the (B,T,D) states ``h`` over the memory: (B,T,D) and, with
        ``need_weights``, its record (weights (B,H,T,S)). The memory's K/V come from the
        cache when there is one (projected once per source batch), else from ``memory``."""
        cross = self.cross_attn
        q = cross.project_q(h)  # (B,H,T,Dh)
        if cache is not None:
            k, v = cache.layers[layer_index].cross_k, cache.layers[layer_index].cross_v
        elif memory is not None:
            k, v = cross.project_kv(memory)  # 2 × (B,H,S,Dh)
        else:
            raise ValueError("decoding without a cache needs the encoder memory")
        a, weights = cross.attend(q, k, v, memory_mask, need_weights=need_weights)
        record = None if weights is None else AttentionRecord(weights, q, k, v, memory_mask)
        return a, record
