"""Configs: validation names the values, JSON round-trips, unknown fields are refused."""

from __future__ import annotations

from pathlib import Path

import pytest

from attenzione.config import DecodeConfig, ModelConfig, TrainConfig, search_config


def test_model_config_round_trips_through_json(tmp_path: Path) -> None:
    cfg = ModelConfig(src_vocab_size=100, tgt_vocab_size=120, d_model=50, n_heads=4, d_head=16)
    assert cfg.inner_dim == 64
    assert ModelConfig.from_json(cfg.to_json()) == cfg
    cfg.save(tmp_path / "c.json")
    assert ModelConfig.load(tmp_path / "c.json") == cfg
    assert cfg.replace(d_model=100).d_model == 100


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        (dict(d_model=0), "d_model must be a positive int, got 0"),
        (dict(n_heads=-2), "n_heads"),
        (dict(dropout=1.5), r"dropout must be in \[0, 1\), got 1.5"),
        (dict(positions="rotary"), "positions must be 'sinusoidal' or 'learned', got 'rotary'"),
        (dict(norm="middle"), "norm must be 'post' or 'pre'"),
        (dict(pad_id=1), "must differ"),
        (dict(eos_id=500), "eos_id=500 is outside the vocabularies"),
        (dict(share_src_tgt_embeddings=True), "src_vocab_size == tgt_vocab_size"),
        (dict(n_enc_layers=0), "n_enc_layers must be >= 1, got 0"),
    ],
)
def test_model_config_rejects_bad_values_by_name(changes: dict[str, object], message: str) -> None:
    base: dict[str, object] = dict(src_vocab_size=100, tgt_vocab_size=120)
    with pytest.raises(ValueError, match=message):
        ModelConfig(**{**base, **changes})  # type: ignore[arg-type]


def test_unknown_fields_are_named() -> None:
    with pytest.raises(ValueError, match=r"unknown ModelConfig field\(s\) \['heads'\]"):
        ModelConfig.from_dict({"src_vocab_size": 10, "tgt_vocab_size": 10, "heads": 4})


def test_train_and_decode_configs_validate() -> None:
    with pytest.raises(ValueError, match="max_steps must be >= 1"):
        TrainConfig(data="x", out="y", max_steps=0)
    with pytest.raises(ValueError, match="label_smoothing"):
        TrainConfig(data="x", out="y", label_smoothing=1.0)
    cfg = TrainConfig(data="x", out="y", bf16=True)
    assert TrainConfig.from_json(cfg.to_json()) == cfg
    assert DecodeConfig.from_json(DecodeConfig(method="greedy").to_json()).method == "greedy"


def test_decode_config_is_the_search_alone() -> None:
    # the ranking terms' weights live in attenzione.search.scoring.Terms, not in the search
    with pytest.raises(ValueError, match=r"unknown DecodeConfig field\(s\) \['word_penalty'\]"):
        DecodeConfig.from_dict({"method": "beam", "word_penalty": 8.0})
    assert search_config(1).method == "greedy"
    widened = search_config(2, 5)
    assert (widened.method, widened.beam_size, widened.n_best) == ("beam", 5, 5)
    assert search_config(sample=True, seed=3).method == "sample"
    with pytest.raises(ValueError, match="top_p"):
        search_config(4, top_p=2.0)  # a bad sampling value is refused even when not sampling
