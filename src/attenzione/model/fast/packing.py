"""Linear layers whose weights are laid out once for oneDNN's CPU matrix multiply.

A plain ``F.linear(x, W)`` hands the (out, in) weight to the BLAS library at every call, and
the library rearranges (packs) it into the blocked layout its kernel reads, every call again.
For the 24,001 × 256 output layer that rearranging costs more than the arithmetic: measured on
the shipped model's shape (2 threads, AVX-512), one decoding step's output layer took 3.2 ms
for one sentence and 10–13 ms for 64, against 0.7 ms and 4.5 ms with the weight packed once
(one layer timed alone; a whole step: ``python -m bench.profile --batch 1 [--no-pack]``).
This module packs the weights once, at load time, with the same oneDNN calls ``torch.compile``
uses when it freezes a model for CPU inference.

The numbers are the fp32 model's: the same weights and the same products, summed in another
order (the logits of the shipped model move by ~1e-5; the tests compare greedy tokens and
beam scores with the unpacked model). Packed layers are for inference only: they have no
gradient, and they exist only on CPUs where torch has oneDNN (:func:`available`).

Which layers: packing pays for large weights and for many rows at a time, and costs a fixed
~15 µs a call, which loses on a small weight multiplied by one row (a 256 × 256 projection
of one decoding row: 8 µs plain, 24 µs packed). :func:`pack_model` therefore packs every
linear layer of the encoder (it always multiplies a whole batch of source tokens), the
decoder's feed-forward layers and the output layer, and the decoder's attention projections
only from :data:`PACK_FROM` weights up. A weight that large no longer stays in the cache
between steps, and each step streams it from memory, which the packed layout reads faster: at
OPUS-MT's shape (d_model 512; AMD EPYC, AVX2, 2 threads; plain and packed models alternating
sentence by sentence in one process) one sentence a call took 863 ms instead of 1002 in beam
4 and 760 ms instead of 789 greedy, with the same ids (docs/benchmarks.md). The shipped
models' (d_model 256: 768 × 256 for the stacked Q/K/V) stay below it.
"""

from __future__ import annotations

import copy
from typing import Any

import torch
from torch import Tensor, nn

# Rows per multiply the packed layout is tuned for (oneDNN picks its blocking from it; any
# number of rows is computed correctly). 64: the batch the translator decodes.
BATCH_HINT = 64

# The decoder's attention projections are packed from this many weights up (512 × 512: one
# MB in fp32); smaller ones stay plain (see the module docstring).
PACK_FROM = 512 * 512


def available() -> bool:
    """Whether this torch has oneDNN's packed linear kernels (x86 and Arm builds do)."""
    try:
        ops = torch.ops.mkldnn
        return bool(torch.backends.mkldnn.is_available()) and all(
            hasattr(ops, name) for name in ("_linear_pointwise", "_reorder_linear_weight")
        )
    except (AttributeError, RuntimeError):
        return False


class PackedLinear(nn.Module):
    """``y = x Wᵀ + b`` with W held in oneDNN's blocked layout (an opaque tensor).

    Built from an ``nn.Linear`` (or a weight and bias); the state dict still reads as the plain
    layer's (``weight`` unpacked on demand), so a model with packed layers saves its weights
    and deep-copies like the original. It does not load a state dict or pickle (an opaque
    tensor has no storage): load the plain model, then pack it.
    """

    def __init__(
        self, weight: Tensor, bias: Tensor | None = None, *, tied: Tensor | None = None
    ) -> None:
        super().__init__()
        w = weight.detach().float().contiguous()
        self.out_features, self.in_features = w.shape
        self.packed = torch.ops.mkldnn._reorder_linear_weight(w, BATCH_HINT)
        self.bias = None if bias is None else bias.detach().float().clone()
        self.tied: Tensor | None
        # the plain matrix this layer's weight is tied to (the output layer's embedding):
        # `weight` is that very tensor, so a saved model stores it once, as the plain one does
        object.__setattr__(self, "tied", tied)  # a plain reference, not a parameter of ours

    @classmethod
    def of(cls, linear: nn.Linear) -> PackedLinear:
        return cls(linear.weight, linear.bias)

    @property
    def weight(self) -> Tensor:
        """The plain (out, in) weight: the tied tensor, or unpacked (a copy: for reading)."""
        if self.tied is not None:
            return self.tied
        dense: Tensor = self.packed.to_dense()
        return dense

    def forward(self, x: Tensor) -> Tensor:
        """(…, in) → (…, out)."""
        y: Tensor = torch.ops.mkldnn._linear_pointwise(x, self.packed, self.bias, "none", [], "")
        return y

    def _save_to_state_dict(self, destination: Any, prefix: str, keep_vars: bool) -> None:
        destination[prefix + "weight"] = self.weight
        if self.bias is not None:
            destination[prefix + "bias"] = self.bias

    def __deepcopy__(self, memo: dict[int, Any]) -> PackedLinear:
        # an opaque tensor has no storage to copy: pack the copy anew (tied to the copy of
        # the tied tensor, which `memo` holds when a whole model is copied)
        tied = None if self.tied is None else copy.deepcopy(self.tied, memo)
        return PackedLinear(self.weight, self.bias, tied=tied)

    def extra_repr(self) -> str:
        return f"in_features={self.in_features}, out_features={self.out_features}, packed"


def _pack_children(module: nn.Module, smallest: int = 0) -> None:
    """Replace every ``nn.Linear`` inside ``module`` (recursively) of at least ``smallest``
    weights by a packed one."""
    for name, child in list(module.named_children()):
        if isinstance(child, nn.Linear):
            if child.weight.numel() >= smallest:
                setattr(module, name, PackedLinear.of(child))
        else:
            _pack_children(child, smallest)


def pack_model(model: Any) -> Any:
    """A copy of the (CPU, fp32, eval) Transformer ``model`` with its large linear layers
    packed (see the module docstring for which). ``model`` itself is left untouched."""
    if not available():
        raise RuntimeError("this torch build has no oneDNN: linear layers cannot be packed")
    m = copy.deepcopy(model).float().eval()
    for layer in m.encoder_layers:
        _pack_children(layer)
    for layer in m.decoder_layers:
        _pack_children(layer.ffn)
        _pack_children(layer, PACK_FROM)  # its attention projections, when they are large
    gen = m.generator  # packed as its own copy; when tied, it still reads as the embedding
    tied = m.tgt_embed.embedding.weight if m.config.tie_embeddings else None
    m.generator = PackedLinear(gen.weight, gen.bias, tied=tied)
    return m
