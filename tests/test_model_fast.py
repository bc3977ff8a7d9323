"""The fast decoding of ``model/fast/`` (reused-buffer cache, beams grouped in cross-attention)
against the plain decoder of ``model/``: cached decoding equals the full pass for both, and the
two give the same logits (within 1e-5: the grouped products sum in another order) and the same
greedy and beam search outputs."""

from __future__ import annotations

import contextlib
import copy

import pytest
import torch

from attenzione.config import DecodeConfig
from attenzione.model.cache import KVCache
from attenzione.model.fast.cache import FastKVCache
from attenzione.model.fast.layers import FastDecoderLayer, FastTransformer, fast_decoding
from attenzione.model.fast.precision import for_inference
from attenzione.model.layers import DecoderLayer
from attenzione.model.transformer import Transformer
from attenzione.search.decoding import generate
from tiny_model import padded_sources, small_model, toy_transformer

PAD = 0


def _close(a: torch.Tensor, b: torch.Tensor) -> None:
    torch.testing.assert_close(a, b, atol=1e-5, rtol=1e-5)


def _fast(model: Transformer) -> Transformer:
    return fast_decoding(copy.deepcopy(model))


def _batch() -> tuple[torch.Tensor, torch.Tensor]:
    """src (3,8) with two padded rows; tgt (3,7) with no padding (every position decoded)."""
    g = torch.Generator().manual_seed(2)
    src = torch.randint(4, 31, (3, 8), generator=g)
    src[1, 5:] = PAD
    src[2, 2:] = PAD
    tgt = torch.randint(4, 37, (3, 7), generator=g)
    tgt[:, 0] = 1
    return src, tgt


def test_fast_decoding_replaces_modules_and_changes_no_number() -> None:
    plain = toy_transformer()
    fast = _fast(plain)
    assert type(plain) is Transformer and isinstance(fast, FastTransformer)
    assert all(type(layer) is DecoderLayer for layer in plain.decoder_layers)
    assert all(type(layer) is FastDecoderLayer for layer in fast.decoder_layers)
    own, theirs = plain.state_dict(), fast.state_dict()
    assert own.keys() == theirs.keys() and all(torch.equal(own[k], theirs[k]) for k in own)
    enc = plain.encode(_batch()[0])
    assert type(plain.init_cache(enc.memory, enc.memory_mask)) is KVCache
    assert isinstance(fast.init_cache(enc.memory, enc.memory_mask), FastKVCache)
    assert fast_decoding(fast) is fast  # twice is once


@pytest.mark.parametrize("precision", ["fp32", "bf16", "int8"])
@pytest.mark.parametrize("pack", [True, False])
def test_every_model_prepared_for_inference_decodes_the_fast_way(
    precision: str, pack: bool
) -> None:
    m = for_inference(toy_transformer(), precision, pack=pack)
    assert isinstance(m, FastTransformer)
    assert all(isinstance(layer, FastDecoderLayer) for layer in m.decoder_layers)


@pytest.mark.parametrize("fast", [False, True])
@pytest.mark.parametrize("kw", [dict(), dict(norm="pre"), dict(tie_embeddings=True)])
def test_cached_decoding_equals_the_full_pass(fast: bool, kw: dict[str, object]) -> None:
    """Step by step (the fast buffers made to grow), in chunks, and, for an unpadded source
    batch (the fast cache's mask-free cross-attention), step by step again."""
    model = toy_transformer(**kw)
    if fast:
        model = _fast(model)
    src, tgt = _batch()
    full = model(src, tgt).logits
    enc = model.encode(src)
    cache = model.init_cache(enc.memory, enc.memory_mask, capacity=2)
    steps = [model.decode(tgt[:, t : t + 1], cache=cache).logits for t in range(tgt.shape[1])]
    _close(torch.cat(steps, 1), full)
    cache = model.init_cache(enc.memory, enc.memory_mask)
    chunks = [model.decode(tgt[:, a:b], cache=cache).logits for a, b in ((0, 3), (3, 4), (4, 7))]
    _close(torch.cat(chunks, 1), full)
    assert cache.length == 7
    src = src.clone()
    src[src == PAD] = 6
    full = model(src, tgt).logits
    enc = model.encode(src)
    cache = model.init_cache(enc.memory, enc.memory_mask)
    assert (cache.cross_mask is None) == fast
    steps = [model.decode(tgt[:, t : t + 1], cache=cache).logits for t in range(tgt.shape[1])]
    _close(torch.cat(steps, 1), full)


# expand to 2 rows a sentence, rows taken within their sentence, a sentence dropped, then rows
# of one sentence apart (the fast cache's fallback to a copy per row)
BEAM_LIKE = [torch.tensor([0, 0, 1, 1, 2, 2]), torch.tensor([1, 0, 5, 4]), torch.tensor([2, 0, 3])]


@pytest.mark.parametrize("inference", [False, True])  # True: fast reorders reuse spare buffers
def test_plain_and_fast_follow_beams_with_the_same_logits_and_weights(inference: bool) -> None:
    """Beam search's rows come K to a sentence: the fast cache keeps the cross K/V once a
    sentence and the K rows query them together. Both caches through the same reorders,
    against each other and against the full pass: logits and cross-attention weights."""
    plain = toy_transformer()
    fast = _fast(plain)
    src, tgt = _batch()
    mode = torch.inference_mode() if inference else contextlib.nullcontext()
    with mode:
        caches = []
        for model in (plain, fast):
            enc = model.encode(src)
            caches.append(model.init_cache(enc.memory, enc.memory_mask))
    rows = torch.arange(src.shape[0])
    for step, order in enumerate(BEAM_LIKE):
        rows = rows[order]
        outs = []
        with mode:
            for model, cache in zip((plain, fast), caches, strict=True):
                cache.reorder(order)
                outs.append(
                    model.decode(tgt[rows, step : step + 1], cache=cache, need_weights=True)
                )
            full = plain(src[rows], tgt[rows, : step + 1], need_weights=True)
        fast_cache = caches[1]
        assert isinstance(fast_cache, FastKVCache) and fast_cache.group == (2, 2, 1)[step]
        for out in outs:
            _close(out.logits[:, -1], full.logits[:, -1])
            for mine, theirs in zip(out.cross_attentions, full.cross_attentions, strict=True):
                _close(mine[:, :, -1], theirs[:, :, -1])
        _close(outs[0].logits, outs[1].logits)


def test_fast_rows_packed_then_grown_then_reordered_again_decode_as_the_full_pass() -> None:
    """In inference a reorder writes the rows packed, with room for one more position; steps
    without a reorder then grow the buffer, and the next reorder writes into the memory the
    one before freed. Each step's logits against the full pass over the same rows."""
    model = _fast(toy_transformer())
    src, tgt = _batch()
    rows = torch.arange(src.shape[0])
    with torch.inference_mode():
        enc = model.encode(src)
        cache = model.init_cache(enc.memory, enc.memory_mask, capacity=2)
        assert isinstance(cache, FastKVCache)
        plan = {1: torch.tensor([2, 0, 1]), 4: torch.tensor([1, 2]), 5: torch.tensor([0, 0, 1])}
        for step in range(tgt.shape[1]):
            if step in plan:
                cache.reorder(plan[step])
                rows = rows[plan[step]]
            out = model.decode(tgt[rows, step : step + 1], cache=cache)
            full = model(src[rows], tgt[rows, : step + 1])
            _close(out.logits[:, -1], full.logits[:, -1])
        layer, buffers = cache.layers[0], cache.buffers[0]
        assert layer.self_k is not None and buffers.spare_k is not None
        live, spare = layer.self_k.untyped_storage(), buffers.spare_k.untyped_storage()
        assert live.data_ptr() != spare.data_ptr()  # the next reorder writes elsewhere


@pytest.mark.parametrize("tie", [True, False])
def test_plain_and_fast_search_the_same_outputs(tie: bool) -> None:
    """Greedy, beam search and a 3-best list on a small model: the same tokens, the same scores
    (to 1e-5), the plain decoder against the fast one with the very same weights."""
    plain = small_model(80, tie=tie)
    fast = _fast(plain)
    src = padded_sources()
    for cfg in (
        DecodeConfig(method="greedy"),
        DecodeConfig(method="beam", beam_size=4),
        DecodeConfig(method="beam", beam_size=4, n_best=3),
    ):
        with torch.inference_mode():
            a, b = generate(plain, src, cfg), generate(fast, src, cfg)
        assert [[h.tokens for h in hs] for hs in a] == [[h.tokens for h in hs] for hs in b]
        for ha, hb in zip(a, b, strict=True):
            assert [h.score for h in ha] == pytest.approx([h.score for h in hb], abs=1e-5)
