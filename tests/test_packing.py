"""Packed linear layers (oneDNN's layout) compute the fp32 model's numbers."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import torch
from torch import nn

from attenzione.config import DecodeConfig
from attenzione.model.fast import packing
from attenzione.model.fast.precision import for_inference, logits_difference
from attenzione.model.transformer import Transformer
from attenzione.search.decoding import generate
from tiny_model import padded_sources, small_model

pytestmark = pytest.mark.skipif(not packing.available(), reason="torch built without oneDNN")


def _model(tie: bool = True) -> Transformer:
    return small_model(80, tie=tie)


@pytest.mark.parametrize("shape", [(1, 64), (3, 64), (2, 5, 64), (70, 64)])
def test_a_packed_linear_is_the_linear(shape: tuple[int, ...]) -> None:
    torch.manual_seed(1)
    plain = nn.Linear(64, 300)
    packed = packing.PackedLinear.of(plain)
    x = torch.randn(*shape)
    with torch.inference_mode():
        assert torch.allclose(packed(x), plain(x), atol=1e-5, rtol=1e-5)
    assert torch.equal(packed.weight, plain.weight.detach())
    assert packed(x).shape == (*shape[:-1], 300)


def test_fp32_inference_packs_a_copy_and_leaves_the_model_alone() -> None:
    ref = _model()
    fast = for_inference(ref, "fp32")
    assert fast is not ref
    assert isinstance(fast.generator, packing.PackedLinear)
    assert isinstance(fast.encoder_layers[0].self_attn.qkv_proj, packing.PackedLinear)
    assert isinstance(fast.decoder_layers[0].ffn.linear1, packing.PackedLinear)
    # the decoder's attention projections of a small model stay plain (one row per step:
    # packing loses there)
    assert type(fast.decoder_layers[0].self_attn.qkv_proj) is nn.Linear
    assert not any(isinstance(m, packing.PackedLinear) for m in ref.modules())
    plain = for_inference(ref, "fp32", pack=False)  # the same weights, decoding the fast way
    assert plain is not ref and plain.generator.weight is ref.generator.weight
    assert type(ref).__name__ == "Transformer"  # the model given is left as it was


@pytest.mark.parametrize("tie", [True, False])
def test_packed_log_probs_match_the_plain_model(tie: bool) -> None:
    ref = _model(tie)
    fast = for_inference(ref, "fp32")
    src = padded_sources()
    tgt = torch.randint(4, 80, (7, 8), generator=torch.Generator().manual_seed(2))
    tgt[:, 0] = 1
    assert logits_difference(ref, fast, src, tgt) < 1e-4


def _decodes_alike(ref: Transformer, fast: Transformer) -> None:
    """Greedy and beam 4 give the same tokens and (to 1e-4) the same scores."""
    src = padded_sources()
    for cfg in (DecodeConfig(method="greedy"), DecodeConfig(method="beam", beam_size=4)):
        a, b = generate(ref, src, cfg), generate(fast, src, cfg)
        assert [h[0].tokens for h in a] == [h[0].tokens for h in b]
        for ha, hb in zip(a, b, strict=True):
            assert ha[0].score == pytest.approx(hb[0].score, abs=1e-4)


def test_packed_decoding_gives_the_same_tokens_and_scores() -> None:
    ref = _model()
    fast = for_inference(ref, "fp32")
    _decodes_alike(ref, fast)


def test_large_decoder_projections_are_packed_and_decode_the_same(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """From PACK_FROM weights up the decoder's attention projections are packed too (here
    every one, the bound lowered below this model's): same tokens, scores and state dict."""
    ref = _model()
    small = ref.decoder_layers[0].self_attn.q_proj.weight.numel()
    monkeypatch.setattr(packing, "PACK_FROM", small)
    fast = for_inference(ref, "fp32")
    layer = fast.decoder_layers[0]
    packed = [layer.self_attn.qkv_proj, layer.self_attn.out_proj, layer.cross_attn.q_proj,
              layer.cross_attn.kv_proj, layer.cross_attn.out_proj]  # fmt: skip
    assert all(isinstance(m, packing.PackedLinear) for m in packed)
    _decodes_alike(ref, fast)
    mine, theirs = fast.state_dict(), ref.state_dict()
    assert mine.keys() == theirs.keys()
    assert all(torch.equal(mine[k], theirs[k]) for k in theirs)


def test_a_packed_model_saves_and_copies_like_the_plain_one() -> None:
    ref = _model()
    fast = for_inference(ref, "fp32")
    own, theirs = ref.state_dict(), fast.state_dict()
    assert own.keys() == theirs.keys()
    assert all(torch.equal(own[k], theirs[k]) for k in own)
    twin = copy.deepcopy(fast)
    src = padded_sources()
    cfg = DecodeConfig(method="greedy")
    assert [h[0].tokens for h in generate(twin, src, cfg)] == [
        h[0].tokens for h in generate(fast, src, cfg)
    ]


@pytest.mark.parametrize("tie", [True, False])
def test_a_packed_model_saves_each_tensor_once_and_loads_back(tie: bool, tmp_path: Path) -> None:
    from attenzione.translator.model_dir import load_model, save_weights, unshared_state

    ref = _model(tie)
    fast = for_inference(ref, "fp32")
    assert unshared_state(fast, None).keys() == unshared_state(ref, None).keys()
    save_weights(tmp_path / "m", fast)
    again = load_model(tmp_path / "m")
    src = padded_sources()
    tgt = torch.randint(4, 80, (7, 8), generator=torch.Generator().manual_seed(2))
    tgt[:, 0] = 1
    with torch.inference_mode():
        assert torch.equal(again(src, tgt).logits, ref(src, tgt).logits)


def test_a_torch_whose_packing_fails_falls_back_to_the_plain_layers(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def broken(model: Transformer) -> Transformer:
        raise RuntimeError("mkldnn::_linear_pointwise: no such signature")

    monkeypatch.setattr(packing, "pack_model", broken)
    ref = _model()
    fast = for_inference(ref, "fp32")  # the same numbers, unpacked: the model's own weights
    assert fast.generator.weight is ref.generator.weight
    assert not any(isinstance(m, packing.PackedLinear) for m in fast.modules())
