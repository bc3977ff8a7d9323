"""Inference precisions: fp32 (the reference), bf16 weights, int8 dynamic quantization.

:func:`for_inference` prepares a loaded model for translating, whatever the precision: it also
installs the fast decoding of :mod:`attenzione.model.fast.layers` (the same numbers as the
plain decoder, up to the order of float sums).

* ``"fp32"`` — the model's own numbers. On a CPU with oneDNN its large linear layers are
  packed once into the layout the matrix multiply reads (:mod:`attenzione.model.fast.packing`):
  the same products summed in another order; at the shipped shape greedy decoding ran 1.65×
  as fast in batches of 64 and 1.40× for one sentence (``python -m bench --preset shipped
  --only decode``); ``pack=False`` keeps the plain linear layers.

* ``"bf16"`` — the whole model cast to bfloat16 once (not autocast, which would re-cast the
  fp32 weights at every call): half the weight traffic, AVX-512 BF16 matrix multiplies
  where the CPU has them (elsewhere bf16 is emulated and slow: ``native_bf16()`` tells).
  Attention then takes the ``math`` kernel (the fused CPU kernel is slow in bf16).
* ``"int8"`` — every linear layer replaced by PyTorch's dynamically quantized int8 linear
  (weights int8 per tensor, activations quantized on the fly; fbgemm uses AVX-512 VNNI, or AVX2).
  Self-attention has its Q/K/V weights stacked into one (one multiply per step);
  cross-attention, which projects queries and keys/values from different inputs, has a Q
  weight and a stacked K/V one (:class:`~attenzione.model.fast.attention.InferenceAttention`)
  — each weight stored once (the shipped model in int8 holds 15.8 MB, against 30.3 MB in fp32;
  most of what remains is the fp32 embedding matrix, which dynamic quantization leaves alone).

Both are approximations of the fp32 model; the test suite bounds how far their logits move
and docs/benchmarks.md reports their BLEU cost on the dev set (``attenzione evaluate --precision``).
"""

from __future__ import annotations

import copy
import warnings
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from attenzione.model.fast import packing
from attenzione.model.fast.attention import stacked
from attenzione.model.fast.layers import fast_decoding
from attenzione.model.transformer import Transformer

PRECISIONS: tuple[str, ...] = ("fp32", "bf16", "int8")


def quantize_int8(model: Transformer) -> Transformer:
    """An int8 copy of ``model`` for CPU inference, decoding the fast way (the original is left
    untouched). Its attention is :class:`~attenzione.model.fast.attention.InferenceAttention`
    before it is quantized, so each projection weight is quantized once, in its stacked
    layout."""
    m = fast_decoding(copy.deepcopy(model).float().eval())
    if m.config.tie_embeddings:  # the output layer gets its own (quantized) copy
        m.generator = stacked(m.generator)  # a copy of one: its own weight (and bias)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch.ao's deprecation notice about torchao
        from torch.ao.quantization import quantize_dynamic

        q: Transformer = quantize_dynamic(m, {nn.Linear}, dtype=torch.qint8)
    return q


def plain_weight(linear: nn.Module) -> Tensor:
    """A linear layer's (out, in) weight as a plain tensor whatever its precision: an int8
    layer's dequantized, a packed layer's unpacked; detached, in the layer's own dtype."""
    w: Any = linear.weight
    if callable(w):  # torch.ao's quantized Linear exposes its weight through a method
        w = w()
    if w.is_quantized:
        w = w.dequantize()
    out: Tensor = w.detach()
    return out


def native_bf16() -> bool:
    """Whether this CPU multiplies bf16 matrices natively (AVX-512 BF16 / AMX, as oneDNN sees it).

    Without it (e.g. an AVX2-only CPU) bf16 is emulated and many times *slower* than fp32.
    """
    try:
        return bool(torch.ops.mkldnn._is_mkldnn_bf16_supported())
    except (AttributeError, RuntimeError):  # a torch build without oneDNN
        return False


BF16_EMULATED = (
    "this CPU has no native bf16 (torch sees {cap}, no AVX-512 BF16/AMX): bf16 runs emulated "
    "and is much slower than fp32 here"
)


def bf16_warning() -> str | None:
    """A note for the user when bf16 is asked for on a CPU that would emulate it, else None."""
    if native_bf16():
        return None
    return BF16_EMULATED.format(cap=torch.backends.cpu.get_cpu_capability())


def for_inference(model: Transformer, precision: str = "fp32", *, pack: bool = True) -> Transformer:
    """The model to decode with at ``precision``, decoding the fast way at every precision
    (:func:`~attenzione.model.fast.layers.fast_decoding`: a reused-buffer K/V cache, beams
    grouped in cross-attention, Q/K/V stacked). fp32: a copy with packed linear layers on a CPU
    with oneDNN (``pack=False``, or elsewhere: a model sharing ``model``'s weights, in eval
    mode); bf16, int8: a copy. ``model``'s own modules stay as they were (it is put in
    eval mode)."""
    if precision not in PRECISIONS:
        raise ValueError(f"precision must be one of {', '.join(PRECISIONS)}, not {precision!r}")
    if precision == "bf16" and (note := bf16_warning()) is not None:
        warnings.warn(note, RuntimeWarning, stacklevel=2)
    if precision == "fp32":
        on_cpu = all(p.device.type == "cpu" for p in model.parameters())
        if pack and on_cpu and packing.available():
            try:
                packed: Transformer = packing.pack_model(fast_decoding(model))
                return packed
            except (RuntimeError, TypeError):  # a torch whose oneDNN ops differ: the plain
                pass  # layout computes the same numbers, only slower
        return fast_decoding(model.float().eval())
    if precision == "bf16":
        return fast_decoding(copy.deepcopy(model).to(torch.bfloat16).eval())
    return quantize_int8(model)


def logits_difference(a: Transformer, b: Transformer, src: Tensor, tgt: Tensor) -> float:
    """Largest |log-softmax(a) − log-softmax(b)| over real target positions (a test helper)."""
    with torch.inference_mode():
        la = F.log_softmax(a(src, tgt).logits.float(), dim=-1)
        lb = F.log_softmax(b(src, tgt).logits.float(), dim=-1)
    real = tgt != a.config.pad_id
    return float((la - lb).abs()[real].max())
