"""Attention for speed: kernels that give the formula's numbers without α, and the attention
modules a model runs on to translate, with Q/K/V fused into one weight.

Every kernel takes ``(q, k, v, mask)`` — (B,H,Tq,Dk), (B,H,Tk,Dk), (B,H,Tk,Dv), a bool mask
broadcastable to (B,H,Tq,Tk), True = may attend, from :mod:`attenzione.model.masks` — and
returns (B,H,Tq,Dv), with zeros for a query row that may attend to nothing, as the reference
:func:`attenzione.model.attention.attention` does:

``"math"``
    The reference formula itself (the only one that returns α, so the one the viewer and an
    explanation run on).
``"fused"``
    ``torch.nn.functional.scaled_dot_product_attention``: the same numbers from one kernel,
    without materialising α for the caller.
``"chunked"``
    Memory-efficient attention: keys are visited in blocks while a running maximum and a
    running denominator keep the softmax exact ("online softmax"), so the full Tq×Tk score
    matrix never exists; peak memory grows linearly in the key length.

:func:`choose_kernel` says which one a call takes, and why when it is not the fused one.
:class:`FusedAttention` is :class:`~attenzione.model.attention.MultiHeadAttention` on the
chosen kernel, with the same parameters (the trainer installs it: same weights, same names);
:class:`InferenceAttention` adds one fused weight for Q, K and V (K and V for
cross-attention), so a decoding step projects with one multiply. :func:`install` puts either
in place of a model's attention modules.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, TypeVar

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from attenzione.model.attention import (
    MultiHeadAttention,
    attention,
    check_attention_inputs,
    safe_mask,
)
from attenzione.model.fast.dropout import FastDropout
from attenzione.model.masks import causal_mask

M = TypeVar("M", bound=nn.Module)

KERNELS = ("auto", "math", "fused", "chunked")
DEFAULT_CHUNK = 256


def _is_plain_causal(mask: Tensor | None, tq: int, tk: int) -> bool:
    """Whether ``mask`` is exactly the (1,1,T,T) causal mask of :func:`masks.causal_mask`
    (the decoder's in training): SDPA then takes ``is_causal`` instead, its own faster path."""
    if mask is None or tq != tk or tq < 2 or tuple(mask.shape) != (1, 1, tq, tk):
        return False
    return bool(torch.equal(mask, causal_mask(tq, device=mask.device)))


def _fused(q: Tensor, k: Tensor, v: Tensor, mask: Tensor | None, dropout_p: float) -> Tensor:
    """torch's SDPA kernel, with empty rows handled as in the reference."""
    scale = 1.0 / math.sqrt(q.shape[-1])
    if _is_plain_causal(mask, q.shape[-2], k.shape[-2]):
        return F.scaled_dot_product_attention(
            q, k, v, dropout_p=dropout_p, is_causal=True, scale=scale
        )
    mask, has_key = safe_mask(mask)
    out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=dropout_p, scale=scale)
    return out if has_key is None else out * has_key


def _chunked(q: Tensor, k: Tensor, v: Tensor, mask: Tensor | None, chunk_size: int) -> Tensor:
    """Exact attention over key blocks of ``chunk_size`` with an online softmax.

    For each block b the scores s_b = q·k_bᵀ·scale are the only (Tq × chunk) matrix alive.
    Running per-row state: m (max score so far), l (Σ exp(s - m)), acc (Σ exp(s - m) v). When a
    block raises the maximum from m to m', the old sums are rescaled by exp(m - m'), so at the
    end acc / l equals softmax(s) v over all keys, to rounding.
    """
    *batch, tq, _ = q.shape
    tk, dv = k.shape[-2], v.shape[-1]
    scale = 1.0 / math.sqrt(q.shape[-1])
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


def choose_kernel(q: Tensor, need_weights: bool, asked: str = "auto") -> tuple[str, str]:
    """The kernel a call takes and, when it is not the fused one, why (one line).

    ``"auto"``: the fused kernel, except where the formula must run: the weights α were asked
    for (only the formula returns them), or bf16/fp16 on a CPU (torch's CPU SDPA kernel is
    several times slower than two reduced-precision matmuls at the short lengths of sentence
    translation; measured: ``python -m bench.attention``)."""
    if asked not in KERNELS:
        raise ValueError(f"kernel must be one of {KERNELS}, got {asked!r}")
    if need_weights:
        if asked not in ("auto", "math"):
            raise ValueError(f"need_weights=True needs kernel 'math' or 'auto', got {asked!r}")
        return "math", "the weights were asked for: only the formula returns them"
    if asked != "auto":
        return asked, "" if asked == "fused" else f"the {asked} kernel was asked for"
    if q.device.type == "cpu" and q.dtype in (torch.bfloat16, torch.float16):
        return "math", f"{q.dtype} on CPU: torch's fused kernel is slower than the formula here"
    return "fused", ""


def scaled_dot_product_attention(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    mask: Tensor | None = None,
    *,
    need_weights: bool = False,
    kernel: str = "auto",
    dropout_p: float = 0.0,
    chunk_size: int = DEFAULT_CHUNK,
    dropout: nn.Module | None = None,
) -> tuple[Tensor, Tensor | None]:
    """softmax(QKᵀ/√d_k) V on the kernel :func:`choose_kernel` picks. Returns (out
    (B,H,Tq,Dv), the weights α (B,H,Tq,Tk) when ``need_weights``, else None). ``dropout_p``
    (training) is not available with ``"chunked"``; ``dropout``: the module the formula drops
    α with (default: a :class:`FastDropout` of ``dropout_p``)."""
    check_attention_inputs(q, k, v, mask)
    name, _ = choose_kernel(q, need_weights, kernel)
    if name == "math":
        drop = None if dropout_p <= 0 else (dropout or FastDropout(dropout_p))
        out, weights = attention(q, k, v, mask, drop)
        return out, (weights if need_weights else None)
    if name == "fused":
        return _fused(q, k, v, mask, dropout_p), None
    if dropout_p > 0:
        raise ValueError("the chunked kernel does not implement attention dropout")
    return _chunked(q, k, v, mask, chunk_size), None


def rebuilt(cls: type[M], module: nn.Module) -> M:
    """An instance of ``cls`` (a subclass of ``module``'s class that adds only methods) holding
    ``module``'s own submodules, parameters and settings: the modules are shared, not copied,
    and ``module`` itself is left as it was."""
    new = cls.__new__(cls)
    nn.Module.__init__(new)
    for name, value in vars(module).items():
        if name in ("_modules", "_parameters", "_buffers"):
            getattr(new, name).update(value)
        elif not name.startswith("_"):
            object.__setattr__(new, name, value)
    new.train(module.training)
    return new


class FusedAttention(MultiHeadAttention):
    """:class:`MultiHeadAttention` whose :meth:`attend` runs the kernel :func:`choose_kernel`
    picks; the formula where the weights are asked for. Made from a reference module
    (:meth:`of`), sharing its projections: the same parameters under the same names."""

    kernel: str = "auto"

    @classmethod
    def of(cls, ref: MultiHeadAttention) -> FusedAttention:
        return rebuilt(cls, ref)

    def attend(
        self, q: Tensor, k: Tensor, v: Tensor, mask: Tensor | None, *, need_weights: bool = False
    ) -> tuple[Tensor, Tensor | None]:
        """As the reference's, on the chosen kernel (α only when ``need_weights``)."""
        if need_weights:
            return super().attend(q, k, v, mask, need_weights=True)
        p = self.dropout.p if self.training else 0.0
        z, _ = scaled_dot_product_attention(
            q, k, v, mask, kernel=self.kernel, dropout_p=p, dropout=self.dropout
        )
        return self.out_proj(self.merge_heads(z)), None


def stacked(*linears: nn.Linear) -> nn.Linear:
    """One linear layer whose rows are those of ``linears``, one after the other."""
    weight = torch.cat([lin.weight.detach() for lin in linears], dim=0)
    state = {"weight": weight}
    if linears[0].bias is not None:
        state["bias"] = torch.cat([lin.bias.detach() for lin in linears if lin.bias is not None])
    # built on the meta device and given the stacked tensors: no random init to throw away
    # (nor a draw from the RNG). Not torch.nn.utils.skip_init, whose first call imports
    # torch's symbolic shapes (~0.7 s of every process's start-up).
    with torch.device("meta"):
        out = nn.Linear(weight.shape[1], weight.shape[0], bias="bias" in state, dtype=weight.dtype)
    out.load_state_dict(state, assign=True)
    return out.requires_grad_(False)


class InferenceAttention(FusedAttention):
    """:class:`FusedAttention` for translating: self-attention projects Q, K and V of its one
    input with one stacked weight ``qkv_proj`` (rows [Q; K; V]); cross-attention keeps
    ``q_proj`` for the target and stacks K and V of the memory in ``kv_proj``. Each weight is
    kept once (the separate ones it was made from are dropped); the state dict still reads
    as the reference's (``q_proj``, ``k_proj``, ``v_proj``), so a translator saves its model
    as it was loaded."""

    qkv_proj: nn.Module | None
    kv_proj: nn.Module

    @classmethod
    def of_self(cls, ref: MultiHeadAttention) -> InferenceAttention:
        """Self-attention: one multiply for Q, K and V."""
        new = cls.of(ref)
        assert isinstance(new, InferenceAttention)
        new.qkv_proj = stacked(ref.q_proj, ref.k_proj, ref.v_proj)
        new.kv_proj = nn.Identity()  # unused: keys and values come with the queries
        del new.q_proj, new.k_proj, new.v_proj
        new._register_state_dict_hook(_as_reference)
        return new

    @classmethod
    def of_cross(cls, ref: MultiHeadAttention) -> InferenceAttention:
        """Cross-attention: Q of the target, one multiply for K and V of the memory."""
        new = cls.of(ref)
        assert isinstance(new, InferenceAttention)
        new.qkv_proj = None
        new.kv_proj = stacked(ref.k_proj, ref.v_proj)
        del new.k_proj, new.v_proj
        new._register_state_dict_hook(_as_reference)
        return new

    def project_q(self, x: Tensor) -> Tensor:
        if self.qkv_proj is not None:
            raise RuntimeError("a fused self-attention projects q, k and v together")
        return self.heads(self.q_proj(x))

    def project_kv(self, x: Tensor) -> tuple[Tensor, Tensor]:
        if self.qkv_proj is not None:
            raise RuntimeError("a fused self-attention projects q, k and v together")
        k, v = self.kv_proj(x).chunk(2, dim=-1)  # (B,L,2·H·Dh) -> 2 × (B,L,H·Dh)
        return self.heads(k), self.heads(v)

    def project_qkv(self, x: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        if self.qkv_proj is None:
            return (self.project_q(x), *self.project_kv(x))
        q, k, v = self.qkv_proj(x).chunk(3, dim=-1)  # (B,L,3·H·Dh) -> 3 × (B,L,H·Dh)
        return self.heads(q), self.heads(k), self.heads(v)


def _as_reference(module: nn.Module, state: dict[str, Any], prefix: str, meta: Any) -> None:
    """State-dict hook: a stacked weight written back as the reference's separate ones."""
    for stacked, parts in (("qkv_proj", "qkv"), ("kv_proj", "kv")):
        for kind in ("weight", "bias"):
            key = f"{prefix}{stacked}.{kind}"
            if key in state:
                tensor = state.pop(key)
                for part, piece in zip(parts, tensor.chunk(len(parts), dim=0), strict=True):
                    state[f"{prefix}{part}_proj.{kind}"] = piece


def install(model: nn.Module, make: Callable[[str, MultiHeadAttention], nn.Module]) -> None:
    """Replace every :class:`MultiHeadAttention` child of ``model``'s layers (``self_attn``,
    ``cross_attn``) by ``make(name, module)``: modules replaced, classes untouched."""
    for module in list(model.modules()):
        for name in ("self_attn", "cross_attn"):
            child = getattr(module, name, None)
            if isinstance(child, MultiHeadAttention):
                setattr(module, name, make(name, child))


def for_training(model: M) -> M:
    """``model`` with its attention on the fused kernel and its dropouts drawn the fast way
    (:class:`~attenzione.model.fast.dropout.FastDropout`), in place: modules replaced, the
    parameters untouched, so the optimizer, the checkpoints and the weights the model saves
    are the reference's."""
    install(model, lambda name, ref: FusedAttention.of(ref))
    for module in list(model.modules()):
        for name, child in list(module.named_children()):
            if type(child) is nn.Dropout:
                setattr(module, name, FastDropout(child.p))
    return model
