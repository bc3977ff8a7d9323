"""Decoding for inference: the decoder layer and the Transformer on a
:class:`~attenzione.model.fast.cache.FastKVCache`, behind the plain classes' interfaces.

:func:`fast_decoding` makes a :class:`FastTransformer` of a
:class:`~attenzione.model.transformer.Transformer`'s modules by replacing modules, never a
class (the same weights, the same numbers up to the order of float sums): its attention
modules stack Q/K/V into one weight (:class:`~attenzione.model.fast.attention.
InferenceAttention`), its :meth:`~FastTransformer.init_cache` gives a
:class:`~attenzione.model.fast.cache.FastKVCache`, and its decoder layers are
:class:`FastDecoderLayer` s, whose cross-attention takes a sentence's beams together against
the sentence's one copy of the memory's K/V. :func:`attenzione.model.fast.precision.for_inference`
calls it for every precision, so every model loaded to translate decodes this way.
"""

from __future__ import annotations

from typing import TypeVar

from torch import Tensor, nn

from attenzione.model.attention import AttentionRecord
from attenzione.model.cache import KVCache, LayerCache
from attenzione.model.fast.attention import InferenceAttention, install, rebuilt
from attenzione.model.fast.cache import FastKVCache
from attenzione.model.layers import DecoderLayer
from attenzione.model.transformer import Transformer

M = TypeVar("M", bound=nn.Module)


class FastDecoderLayer(DecoderLayer):
    """A :class:`DecoderLayer` whose cross-attention reads a :class:`FastKVCache`'s groups.

    With ``group`` rows a sentence, the cache holds the memory's K/V (n,H,S,Dh) once for the
    n sentences; the (n·group,H,T,Dh) queries are regrouped to (n,H,group·T,Dh), so a
    sentence's rows are one batch entry of the attention, and the output (and weights) are
    regrouped back to one row a hypothesis.
    """

    def cross_attend(
        self,
        h: Tensor,
        memory: Tensor | None,
        memory_mask: Tensor | None,
        cache: KVCache | None,
        layer_index: int,
        need_weights: bool,
    ) -> tuple[Tensor, AttentionRecord | None]:
        """(B,T,D) states → (B,T,D) and, with ``need_weights``, the record (weights
        (B,H,T,S); its K/V one row a sentence). One row a sentence is the plain layer's."""
        group = cache.group if isinstance(cache, FastKVCache) else 1
        if cache is None or group == 1:
            return super().cross_attend(h, memory, memory_mask, cache, layer_index, need_weights)
        # a sentence's `group` rows (its beams) query its one copy of the memory together
        cross = self.cross_attn
        q = cross.project_q(h)  # (B,H,T,Dh)
        ck, cv = cache.layers[layer_index].cross_k, cache.layers[layer_index].cross_v
        n, (rows, heads, t, dh) = ck.shape[0], q.shape
        q_grouped = q.view(n, group, heads, t, dh).transpose(1, 2).reshape(n, heads, -1, dh)
        a, cross_w = cross.attend(q_grouped, ck, cv, memory_mask, need_weights=need_weights)
        a = a.reshape(rows, t, -1)  # (n, group·T, D) -> (n·group, T, D)
        if cross_w is None:
            return a, None
        # (n, H, group·T, S) -> (n·group, H, T, S)
        cross_w = cross_w.view(n, heads, group, t, -1).transpose(1, 2).reshape(rows, heads, t, -1)
        return a, AttentionRecord(cross_w, q, ck, cv, memory_mask)


class FastTransformer(Transformer):
    """A :class:`Transformer` that decodes on a :class:`FastKVCache` with
    :class:`FastDecoderLayer` s and :class:`~attenzione.model.fast.attention.InferenceAttention`
    (made by :func:`fast_decoding` from a plain one, sharing its modules)."""

    def init_cache(self, memory: Tensor, memory_mask: Tensor, capacity: int = 64) -> KVCache:
        """A cache holding every decoder layer's cross-attention K/V of ``memory`` (B,S,D),
        with room for ``capacity`` positions of self K/V."""
        layers = []
        for layer in self.decoder_layers:
            assert isinstance(layer, DecoderLayer)
            k, v = layer.cross_attn.project_kv(memory)  # 2 × (B,H,S,Dh), computed once
            # each made one block once: as projected they are strided views of one product,
            # which the attention would otherwise copy at every step
            layers.append(LayerCache(cross_k=k.contiguous(), cross_v=v.contiguous()))
        return FastKVCache(layers=layers, memory_mask=memory_mask, capacity=capacity)


def _inference_copy(module: nn.Module) -> nn.Module:
    """``module`` for inference: a shell of its own (:func:`rebuilt`) wherever a dropout lies
    below it, each ``nn.Dropout`` an ``nn.Identity`` (at inference it drops nothing, and its
    call is not free); a module with no dropout below is ``module`` itself."""
    if isinstance(module, nn.Dropout):
        return nn.Identity()
    if not any(isinstance(m, nn.Dropout) for m in module.modules()):
        return module
    return _shell(type(module), module)


def _shell(cls: type[M], module: nn.Module) -> M:
    """``module`` rebuilt as ``cls``, its children as :func:`_inference_copy` makes them."""
    new = rebuilt(cls, module)
    for name, child in module.named_children():
        new._modules[name] = _inference_copy(child)
    return new


def fast_decoding(model: Transformer) -> FastTransformer:
    """A :class:`FastTransformer` made of ``model``'s modules (see the module docstring): its
    layers rebuilt around :class:`InferenceAttention` modules (Q/K/V stacked at load), the
    decoder's as :class:`FastDecoderLayer` s, its dropouts left out (an inference model never
    drops). Every module with weights is shared with ``model``, which is left as it was. A
    :class:`FastTransformer` is returned as it is."""
    if isinstance(model, FastTransformer):
        return model
    fast = _shell(FastTransformer, model)
    for i, layer in enumerate(model.decoder_layers):
        assert isinstance(layer, DecoderLayer)
        fast.decoder_layers[i] = _shell(FastDecoderLayer, layer)
    install(fast, lambda name, ref: (
        InferenceAttention.of_self(ref) if name == "self_attn" else InferenceAttention.of_cross(ref)
    ))  # fmt: skip
    return fast
