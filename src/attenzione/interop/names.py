"""The one table of tensor names between our Transformer and Marian's (transformers'
``MarianMTModel``, which CTranslate2's writer reads too), and the one residual-stream order.

Each row says where a tensor of ours lives in Marian's layout and how it meets the residual
stream (the d_model dimensions every sub-layer reads and writes):

* ``reads``: its columns are the stream (Q/K/V, the first feed-forward layer, the token tables
  and the output layer: they take a d_model vector in);
* ``writes``: its rows are the stream (the attention output and the second feed-forward
  layer, their biases, every LayerNorm's γ and β: they give a d_model vector out);
* ``none``: neither (the Q/K/V biases, the first feed-forward bias, the output bias).

Import and export read the same rows, in opposite directions (:func:`to_theirs`,
:func:`to_ours`): a rename in one place renames both. What is not a rename stays code of its
own: which token tables a checkpoint shares and ties, the output bias's shape, the position
table. A layer's sub-layer index is ``{i}`` in a row's names.

**One stream order.** Our sinusoids interleave sines and cosines (dimension 2i sin, 2i+1
cos); Marian's put every sine first. The values are the same (to the bit: both are computed
in float64), in another order, so one permutation of the d_model dimensions, applied to every
tensor by its row's kind, is an exact reparametrisation of the network (each LayerNorm's mean
and variance do not see the order; heads and feed-forward units keep theirs). The import
applies it, so the core has one sinusoid layout; the export applies its inverse.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import torch
from torch import Tensor

from attenzione.config import ModelConfig

Stream = Literal["reads", "writes", "none"]


@dataclass(frozen=True)
class Name:
    """One tensor: our name, Marian's, and how it meets the residual stream."""

    ours: str
    theirs: str
    stream: Stream


def _attention(ours: str, theirs: str) -> list[Name]:
    rows = []
    for part in "qkv":
        rows.append(Name(f"{ours}.{part}_proj.weight", f"{theirs}.{part}_proj.weight", "reads"))
        rows.append(Name(f"{ours}.{part}_proj.bias", f"{theirs}.{part}_proj.bias", "none"))
    rows.append(Name(f"{ours}.out_proj.weight", f"{theirs}.out_proj.weight", "writes"))
    rows.append(Name(f"{ours}.out_proj.bias", f"{theirs}.out_proj.bias", "writes"))
    return rows


def _norm(ours: str, theirs: str) -> list[Name]:
    return [Name(f"{ours}.{k}", f"{theirs}.{k}", "writes") for k in ("weight", "bias")]


def _ffn(ours: str, theirs: str) -> list[Name]:
    return [
        Name(f"{ours}.linear1.weight", f"{theirs}.fc1.weight", "reads"),  # (F, D)
        Name(f"{ours}.linear1.bias", f"{theirs}.fc1.bias", "none"),
        Name(f"{ours}.linear2.weight", f"{theirs}.fc2.weight", "writes"),  # (D, F)
        Name(f"{ours}.linear2.bias", f"{theirs}.fc2.bias", "writes"),
    ]


_E, _D = "encoder_layers.{i}", "model.encoder.layers.{i}"
ENCODER_LAYER = (
    *_attention(f"{_E}.self_attn", f"{_D}.self_attn"),
    *_norm(f"{_E}.res_attn.norm", f"{_D}.self_attn_layer_norm"),
    *_ffn(f"{_E}.ffn", _D),
    *_norm(f"{_E}.res_ffn.norm", f"{_D}.final_layer_norm"),
)
_E, _D = "decoder_layers.{i}", "model.decoder.layers.{i}"
DECODER_LAYER = (
    *_attention(f"{_E}.self_attn", f"{_D}.self_attn"),
    *_norm(f"{_E}.res_self.norm", f"{_D}.self_attn_layer_norm"),
    *_attention(f"{_E}.cross_attn", f"{_D}.encoder_attn"),
    *_norm(f"{_E}.res_cross.norm", f"{_D}.encoder_attn_layer_norm"),
    *_ffn(f"{_E}.ffn", _D),
    *_norm(f"{_E}.res_ffn.norm", f"{_D}.final_layer_norm"),
)
# the stacks' final LayerNorms of a pre-norm network (BART's names: Marian has none)
PRE_NORM = (
    *_norm("encoder_norm", "model.encoder.layer_norm"),
    *_norm("decoder_norm", "model.decoder.layer_norm"),
)
# the token tables, the output layer and the positions (each side's own names; a shared or
# tied matrix is the importer's and the exporter's to place)
TABLES = (
    Name("src_embed.embedding.weight", "model.encoder.embed_tokens.weight", "reads"),
    Name("tgt_embed.embedding.weight", "model.decoder.embed_tokens.weight", "reads"),
    Name("generator.weight", "lm_head.weight", "reads"),
    Name("generator.bias", "final_logits_bias", "none"),
    Name("positions.embedding.weight", "model.encoder.embed_positions.weight", "reads"),
)


def table(cfg: ModelConfig) -> list[Name]:
    """Every row of a network of ``cfg``'s shape, layer indices filled in."""
    rows = [
        Name(r.ours.format(i=i), r.theirs.format(i=i), r.stream)
        for layers, n in ((ENCODER_LAYER, cfg.n_enc_layers), (DECODER_LAYER, cfg.n_dec_layers))
        for i in range(n)
        for r in layers
    ]
    return rows + list(PRE_NORM if cfg.norm == "pre" else ()) + list(TABLES)


def marian_order(d_model: int) -> Tensor:
    """(D,) the permutation P between the stream orders: Marian's dimension j is our
    dimension P[j]. Sines first (ours at the even dimensions), then cosines (the odd ones)."""
    return torch.cat([torch.arange(0, d_model, 2), torch.arange(1, d_model, 2)])


def permute(t: Tensor, stream: Stream, order: Tensor) -> Tensor:
    """``t`` with its stream axis taken in ``order`` (a tensor that does not meet the stream
    is returned as it is)."""
    if stream == "reads":
        return t[..., order].contiguous()
    if stream == "writes":
        return t[order].contiguous()
    return t


def to_theirs(
    state: dict[str, Tensor], rows: list[Name], order: Tensor | None
) -> dict[str, Tensor]:
    """The tensors of ``state`` that ``rows`` name, under Marian's names, their stream in
    Marian's order (``order``: :func:`marian_order`; None keeps ours)."""
    return {
        r.theirs: t if order is None else permute(t, r.stream, order)
        for r in rows
        if (t := state.get(r.ours)) is not None
    }


def to_ours(state: dict[str, Tensor], rows: list[Name], order: Tensor | None) -> dict[str, Tensor]:
    """The inverse of :func:`to_theirs`: each tensor ``rows`` name that ``state`` holds (taken
    out of it), under our name, in our stream order."""
    inverse = None if order is None else torch.argsort(order)
    out = {}
    for r in rows:
        t = state.pop(r.theirs, None)
        if t is not None:
            out[r.ours] = t if inverse is None else permute(t, r.stream, inverse)
    return out


def reorder(state: dict[str, Tensor], cfg: ModelConfig, order: Tensor) -> dict[str, Tensor]:
    """``state`` (our names) with its stream in ``order``: our dimension j becomes ``order[j]``
    of the old one (a model saved in Marian's order, as an older import wrote it, comes back
    in ours with ``argsort(marian_order)``). A tensor no row names is kept as it is."""
    kinds = {r.ours: r.stream for r in table(cfg)}
    return {k: permute(v, kinds.get(k, "none"), order) for k, v in state.items()}
