"""Inference precisions: bf16 and int8 stay close to the fp32 reference."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from attenzione.config import DecodeConfig
from attenzione.model.fast.precision import for_inference, logits_difference, quantize_int8
from attenzione.model.transformer import Transformer
from attenzione.search.decoding import generate
from tiny_model import small_model


def _model(tie: bool) -> Transformer:
    return small_model(60, tie=tie)


def _batch() -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(3)
    src = torch.randint(4, 60, (6, 11), generator=g)
    src[2, 7:] = 0
    tgt = torch.randint(4, 60, (6, 9), generator=g)
    tgt[:, 0] = 1
    tgt[4, 5:] = 0
    return src, tgt


# Stated tolerances on the log-probabilities of a random model (|Δ log p| over all tokens).
TOLERANCE = {"bf16": 0.1, "int8": 0.3}


@pytest.mark.parametrize("precision", ["bf16", "int8"])
@pytest.mark.parametrize("tie", [True, False])
def test_low_precision_log_probs_stay_within_tolerance(precision: str, tie: bool) -> None:
    ref = _model(tie)
    fast = for_inference(ref, precision)
    src, tgt = _batch()
    diff = logits_difference(ref, fast, src, tgt)
    assert 0 < diff < TOLERANCE[precision], diff  # > 0: it really is another computation


def test_int8_replaces_every_linear_and_leaves_the_original_alone() -> None:
    ref = _model(True)
    before = {k: v.clone() for k, v in ref.state_dict().items()}
    q = quantize_int8(ref)
    assert not any(type(m) is torch.nn.Linear for m in q.modules())
    for k, v in ref.state_dict().items():
        assert torch.equal(v, before[k]), k


@pytest.mark.parametrize("precision", ["bf16", "int8"])
def test_low_precision_decoding_runs_on_the_cache_and_mostly_agrees(precision: str) -> None:
    ref = _model(True)
    fast = for_inference(ref, precision)
    src, _ = _batch()
    for cfg in (DecodeConfig(method="greedy"), DecodeConfig(method="beam", beam_size=3)):
        a = [h[0].tokens for h in generate(ref, src, cfg)]
        b = [h[0].tokens for h in generate(fast, src, cfg)]
        assert len(b) == len(a) and all(len(t) > 0 for t in b)
        # the first tokens are the most certain; they must match on most sentences
        assert sum(x[:2] == y[:2] for x, y in zip(a, b, strict=True)) >= 4


def test_unknown_precision_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="precision must be one of fp32, bf16, int8"):
        for_inference(_model(True), "fp8")


@pytest.mark.parametrize("native", [True, False])
def test_bf16_warns_only_where_the_cpu_would_emulate_it(
    native: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    import warnings

    import attenzione.model.fast.precision as precision_mod

    assert isinstance(precision_mod.native_bf16(), bool)  # the real probe answers, whatever the CPU
    monkeypatch.setattr(precision_mod, "native_bf16", lambda: native)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for_inference(_model(True), "bf16")
    emulated = [w for w in caught if "emulated" in str(w.message)]
    assert len(emulated) == (0 if native else 1)
    assert (precision_mod.bf16_warning() is None) == native


def test_int8_keeps_each_projection_weight_once() -> None:
    """Self-attention keeps one stacked Q/K/V weight, cross-attention a Q weight and a stacked
    K/V one (model/fast/attention.py's InferenceAttention): no weight is kept twice (it used
    to be, in both layouts: 17.6 MB for the shipped model, now 15.8)."""
    q = quantize_int8(_model(True))
    for layer in [*q.encoder_layers, *q.decoder_layers]:
        names = {name for name, _ in layer.self_attn.named_children()}
        assert "qkv_proj" in names and not names & {"q_proj", "k_proj", "v_proj"}
    for layer in q.decoder_layers:
        names = {name for name, _ in layer.cross_attn.named_children()}
        assert {"q_proj", "kv_proj"} <= names and not names & {"k_proj", "v_proj"}
    assert not any(n.endswith("cross_attn.qkv_proj") for n, _ in q.named_modules())
