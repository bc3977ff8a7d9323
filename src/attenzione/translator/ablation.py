"""Switching parts of the model off: attention heads, whole attention layers, the positions.

An ablation is written as a list of parts, the way ``--ablate`` and the service take them::

    cross:2.1      decoder layer 2's cross-attention, head 1
    encoder:0.*    every head of encoder layer 0's self-attention (the layer's attention off)
    decoder:3      the same as decoder:3.*
    cross:*        the cross-attention of every decoder layer
    positions      the positional encoding (encoder and decoder)

A head switched off contributes nothing to its layer: its slice of the concatenated heads is
set to zero before W^O (as Michel et al. 2019 prune heads), so the layer's output is the other
heads' W^O·z plus W^O's bias. The positions switched off add zero to the embeddings. The
attention maps still show what an ablated head computed; it is its output that is dropped.

:func:`ablated` applies an ablation to a model for the length of a ``with`` block, by forward
hooks on the parts (nothing of the model is changed, and with nothing ablated there is no hook
at all: the model runs exactly as it does without this module).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor, nn

KINDS = {
    "encoder": ("encoder_layers", "self_attn", "n_enc_layers"),
    "decoder": ("decoder_layers", "self_attn", "n_dec_layers"),
    "cross": ("decoder_layers", "cross_attn", "n_dec_layers"),
}
_PART = re.compile(r"^(encoder|decoder|cross):(\*|\d+)(?:\.(\*|\d+))?$")


@dataclass(frozen=True)
class Ablation:
    """What is switched off: ``heads`` — (kind, layer, head) triples — and ``positions``."""

    heads: frozenset[tuple[str, int, int]] = frozenset()
    positions: bool = False

    def __bool__(self) -> bool:
        return bool(self.heads) or self.positions

    @property
    def parts(self) -> list[str]:
        """The ablation written back as parts (one per head; ``positions``)."""
        out = [f"{k}:{layer}.{head}" for k, layer, head in sorted(self.heads)]
        return out + (["positions"] if self.positions else [])


def parse_ablation(spec: str | Iterable[str] | None, config: Any) -> Ablation:
    """The :class:`Ablation` a list of parts (or one string of them, comma-separated) names,
    for a model of ``config`` (its ``n_heads``, ``n_enc_layers``, ``n_dec_layers``). A part
    that is malformed or names a layer or head the model does not have is one ValueError
    line naming what the model has."""
    if spec is None:
        return Ablation()
    items = [spec] if isinstance(spec, str) else list(spec)
    parts = [p.strip() for item in items for p in str(item).split(",") if p.strip()]
    heads: set[tuple[str, int, int]] = set()
    positions = False
    n_heads = int(config.n_heads)
    for part in parts:
        if part == "positions":
            positions = True
            continue
        m = _PART.match(part)
        if m is None:
            raise ValueError(
                f"cannot read the ablation {part!r}: write KIND:LAYER.HEAD (KIND encoder, "
                "decoder or cross; LAYER and HEAD a number or *, e.g. cross:2.1, encoder:0.*, "
                "cross:*) or positions"
            )
        kind, layer_s, head_s = m.group(1), m.group(2), m.group(3) or "*"
        n_layers = int(getattr(config, KINDS[kind][2]))
        layers = range(n_layers) if layer_s == "*" else [int(layer_s)]
        for layer in layers:
            if not 0 <= layer < n_layers:
                raise ValueError(
                    f"the model has no {kind} layer {layer}: its {kind} layers are "
                    f"0..{n_layers - 1}"
                )
        chosen = range(n_heads) if head_s == "*" else [int(head_s)]
        for head in chosen:
            if not 0 <= head < n_heads:
                raise ValueError(
                    f"the model has no head {head}: each attention layer has heads 0..{n_heads - 1}"
                )
        heads.update((kind, layer, head) for layer in layers for head in chosen)
    return Ablation(frozenset(heads), positions)


def _zero_heads(heads: list[int], d_head: int) -> Any:
    def hook(module: nn.Module, args: tuple[Tensor, ...]) -> tuple[Tensor, ...]:
        z = args[0].clone()  # (…, H·d_head): the heads concatenated, before W^O
        for h in heads:
            z[..., h * d_head : (h + 1) * d_head] = 0
        return (z, *args[1:])

    return hook


def _no_positions(module: nn.Module, args: Any, output: Tensor) -> Tensor:
    return torch.zeros_like(output)


@contextmanager
def ablated(model: nn.Module, ablation: Ablation) -> Iterator[None]:
    """``model`` with ``ablation``'s parts switched off inside the block (forward hooks,
    removed on the way out)."""
    handles = []
    try:
        by_module: dict[tuple[str, int], list[int]] = {}
        for kind, layer, head in sorted(ablation.heads):
            by_module.setdefault((kind, layer), []).append(head)
        for (kind, layer), heads in by_module.items():
            stack, name, _ = KINDS[kind]
            attn: Any = model.get_submodule(f"{stack}.{layer}.{name}")
            d_head = int(attn.d_head)
            handles.append(attn.out_proj.register_forward_pre_hook(_zero_heads(heads, d_head)))
        if ablation.positions:
            positions = model.get_submodule("positions")
            handles.append(positions.register_forward_hook(_no_positions))
        yield
    finally:
        for handle in handles:
            handle.remove()
