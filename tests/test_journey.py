"""One token's journey (issue 67 item 1): every step equals the model's own intermediate value,
on the shipped models, on the seeds' own shape (d_model 300 from GloVe-300, 7 heads of 64, so
d_model ≠ heads × d_head) and on a pre-norm model with learned positions, GELU and an output
bias; out-of-range tokens and other precisions are one line. (The imported Marian model's
journey is checked in tests/test_marian_everywhere.py.)"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from attenzione.config import ModelConfig
from attenzione.model.transformer import Transformer
from attenzione.translator.translator import PRETRAINED_DIR, Translator
from journey_checks import journey_is_the_model

pytestmark = pytest.mark.skipif(
    not (PRETRAINED_DIR / "model.safetensors").is_file(), reason="no shipped model in this checkout"
)

SENTENCE = "The transformer architecture was introduced in 2017."
REFERENCE = "L'architettura del Transformer è stata introdotta nel 2017."


@pytest.fixture(scope="module")
def shipped() -> Translator:
    return Translator.from_pretrained()


def _random(shipped: Translator, seed: int, **shape: object) -> Translator:
    """A model of ``shape`` with random weights and the shipped tokenizers (no training: the
    journey's arithmetic is checked, not what the model writes)."""
    torch.manual_seed(seed)
    src, tgt = shipped.src_tokenizer, shipped.tgt_tokenizer
    config = ModelConfig(
        src_vocab_size=src.vocab_size, tgt_vocab_size=tgt.vocab_size, dropout=0.0, **shape
    )  # type: ignore[arg-type]
    return Translator(Transformer(config), src, tgt)


def test_every_step_of_a_shipped_models_token_is_the_models_own(shipped: Translator) -> None:
    cfg = shipped.model.config
    for beam in (1, 4):
        last = None
        for token in (0, 5):
            journey = shipped.journey(SENTENCE, token, beam=beam)
            data = journey_is_the_model(journey, layers=cfg.n_dec_layers, heads=cfg.n_heads)
            assert data["tgt_tokens"][0] == "<bos>" and data["token"] == token
            [out] = shipped.translate(SENTENCE, search=_search(beam))
            assert journey.translation == out.text
            ids = [*out.candidates[0].ids, cfg.eos_id]
            chosen = data["steps"][-1]
            assert chosen["id"] == ids[token]
            if beam == 1:  # greedy writes the most likely piece
                assert chosen["rank"] == 1
            last = len(ids) - 1
        assert last is not None
        end = shipped.journey(SENTENCE, last, beam=beam).to_dict()["steps"][-1]
        assert end["id"] == cfg.eos_id  # the last position predicts the end
    shapes = {s["name"]: s["shape"] for s in journey.to_dict()["steps"]}
    assert shapes["query"] == "256 → 4 × 64"


def test_the_other_shipped_model_and_a_teacher_forced_reference() -> None:
    it_en = Translator.from_pretrained(PRETRAINED_DIR.parent / "it-en")
    cfg = it_en.model.config
    journey = it_en.journey("Il gatto dorme sul divano.", 2, "The cat sleeps on the sofa.")
    data = journey_is_the_model(journey, layers=cfg.n_dec_layers, heads=cfg.n_heads)
    assert data["translation"] == "The cat sleeps on the sofa."
    assert data["steps"][-1]["piece"] == data["tgt_tokens"][3]  # the reference's next piece


def test_the_seeds_shape_glove_300_with_7_heads_of_64(shipped: Translator) -> None:
    """d_model 300 (GloVe-300's width) and 7 heads of 64: W^Q is 300 × 448."""
    tr = _random(shipped, 0, d_model=300, n_heads=7, d_head=64, d_ff=128, n_enc_layers=1,
                 n_dec_layers=2)  # fmt: skip
    journey = tr.journey(SENTENCE, 3, REFERENCE)
    data = journey_is_the_model(journey, layers=2, heads=7)
    shapes = {s["name"]: s["shape"] for s in data["steps"]}
    assert shapes["query"] == "300 → 7 × 64 = 448"
    assert shapes["concatenated heads"] == "7 × 64 = 448" and shapes["W^O"] == "448 → 300"
    query = next(s for s in data["steps"] if s["name"] == "query")
    assert len(query["values"]) == 7 and len(query["values"][0]) == 64


def test_a_pre_norm_model_with_learned_positions_gelu_and_an_output_bias(
    shipped: Translator,
) -> None:
    tr = _random(shipped, 1, d_model=64, n_heads=2, d_head=16, d_ff=96, n_enc_layers=1,
                 n_dec_layers=2, norm="pre", positions="learned", activation="gelu",
                 output_bias=True, scale_embeddings=False)  # fmt: skip
    with torch.no_grad():  # a bias that is not zero, so the check would see it missing
        tr.model.generator.bias.normal_()
    data = journey_is_the_model(tr.journey(SENTENCE, 4, REFERENCE), layers=2, heads=2)
    names = [s["name"] for s in data["steps"]]
    # pre-norm: each block's LayerNorm comes before it, and the stack ends with one
    assert names[names.index("query") - 1] == "layer norm"
    assert names[names.index("logits") - 1] == "layer norm"
    formulas = {s["name"]: s["formula"] for s in data["steps"]}
    assert "learned" in formulas["positional encoding"] and "+ b" in formulas["logits"]


def test_a_token_out_of_range_and_another_precision_are_one_line(shipped: Translator) -> None:
    for token in (-1, 99):
        with pytest.raises(ValueError, match=r"out of range: .* positions are 0\.\.\d+") as e:
            shipped.journey(SENTENCE, token)
        assert "\n" not in str(e.value)
    int8 = Translator.from_pretrained(precision="int8")
    with pytest.raises(ValueError, match="fp32"):
        int8.journey(SENTENCE, 0)


def test_the_positional_encoding_is_the_papers_formula(shipped: Translator, tmp_path: Path) -> None:
    """PE(pos, 2i) = sin(pos / 10000^(2i/d)), PE(pos, 2i+1) = cos(…), written out here."""
    import math

    data = shipped.journey(SENTENCE, 3).to_dict()
    pe = next(s for s in data["steps"] if s["name"] == "positional encoding")
    d = shipped.model.config.d_model
    for i in (0, 1, 10, d // 2 - 1):
        angle = 3 / 10000 ** (2 * i / d)
        assert pe["values"][2 * i] == pytest.approx(math.sin(angle), abs=1e-4)
        assert pe["values"][2 * i + 1] == pytest.approx(math.cos(angle), abs=1e-4)
        assert pe["wavelengths"][i] == pytest.approx(2 * math.pi * 10000 ** (2 * i / d), rel=1e-3)


def _search(beam: int):  # type: ignore[no-untyped-def]
    from attenzione.config import search_config

    return search_config(beam)
