"""Training made visible and attention read against evidence (issue 67 items 2–4): the training
view's loss is the trainer's on the same batch, decoding on the K/V cache reproduces the full
pass, a padded batch's masks are model/masks.py's, and occlusion of a word the sentence does
not contain changes nothing."""

from __future__ import annotations

import pytest
import torch

from attenzione.data.batching import collate
from attenzione.data.corpus import normalize
from attenzione.model import masks as M
from attenzione.training.step import train_step
from attenzione.training.view import padded_batch_masks, teacher_forced
from attenzione.translator.journey import reference_model
from attenzione.translator.translator import PRETRAINED_DIR, Translator

pytestmark = pytest.mark.skipif(
    not (PRETRAINED_DIR / "model.safetensors").is_file(), reason="no shipped model in this checkout"
)

SENTENCE = "The transformer architecture was introduced in 2017."
REFERENCE = "L'architettura del Transformer è stata introdotta nel 2017."


@pytest.fixture(scope="module")
def shipped() -> Translator:
    return Translator.from_pretrained()


def _trainers_batch(tr: Translator, text: str, reference: str):  # type: ignore[no-untyped-def]
    """The batch the trainer would make of the pair: the data pipeline's ids, collated."""
    cfg = tr.model.config
    src = tr.src_tokenizer.encode(normalize(text))
    tgt = tr.tgt_tokenizer.encode(normalize(reference))
    return collate([(src, tgt)], pad_id=cfg.pad_id, bos_id=cfg.start_id, eos_id=cfg.eos_id)


@pytest.mark.parametrize("smoothing", [0.1, 0.0])
def test_the_views_loss_is_the_trainers_on_the_same_batch(
    shipped: Translator, smoothing: float
) -> None:
    view = teacher_forced(shipped, SENTENCE, REFERENCE, smoothing=smoothing)
    model = reference_model(shipped.model)  # a plain model, as the trainer holds it
    optimizer = torch.optim.SGD(model.parameters(), lr=0.0)
    step = train_step(
        model,
        _trainers_batch(shipped, SENTENCE, REFERENCE),
        optimizer,
        lr=0.0,
        pad_id=model.config.pad_id,
        smoothing=smoothing,
        clip_norm=0.0,
        bf16=False,
        params=list(model.parameters()),
    )
    assert view["loss"] == pytest.approx(step.loss, abs=1e-5)
    assert step.tokens == view["tokens"] == len(view["positions"])
    # each position's loss is the same function on its row: they add up to the total
    per = [p["loss"] for p in view["positions"]]
    assert sum(per) / len(per) == pytest.approx(view["loss"], abs=1e-5)
    for p in view["positions"]:
        assert 0.0 < p["probability"] <= 1.0
        assert p["nll"] == pytest.approx(-p["logprob"])
        if smoothing == 0.0:
            assert p["loss"] == pytest.approx(p["nll"], abs=1e-5)
        assert p["differs"] == (p["greedy_id"] != p["reference_id"])
        assert p["greedy_probability"] >= p["probability"] - 1e-9
    assert view["positions"][-1]["reference"] == "<eos>"
    assert view["greedy_differs"] == sum(p["differs"] for p in view["positions"])


def test_decoding_on_the_cache_reproduces_the_full_pass(shipped: Translator) -> None:
    view = teacher_forced(shipped, SENTENCE, REFERENCE)
    assert view["cached_check"] < 1e-4
    # the model's own translation teacher-forced: greedy's choice is the reference everywhere
    [own] = shipped.translate(SENTENCE, search=_greedy())
    mine = teacher_forced(shipped, SENTENCE, own.text)
    assert mine["greedy_differs"] == 0


def test_an_empty_reference_or_a_bad_smoothing_is_one_line(shipped: Translator) -> None:
    with pytest.raises(ValueError, match="reference translation is empty"):
        teacher_forced(shipped, SENTENCE, "  ")
    with pytest.raises(ValueError, match=r"label smoothing must be in \[0, 1\)"):
        teacher_forced(shipped, SENTENCE, REFERENCE, smoothing=1.0)


def test_the_masks_drawn_are_the_masks_the_model_defines(shipped: Translator) -> None:
    drawn = padded_batch_masks(shipped, SENTENCE, "The cat sleeps.")
    cfg = shipped.model.config
    src = torch.tensor(drawn["src_ids"])
    tgt = torch.tensor(drawn["tgt_in"])
    assert (src == cfg.pad_id).any() and (tgt == cfg.pad_id).any()  # the batch is padded
    assert drawn["encoder"] == M.pairwise_padding_mask(src, cfg.pad_id)[:, 0].tolist()
    assert drawn["decoder"] == M.decoder_self_mask(tgt, cfg.pad_id)[:, 0].tolist()
    assert drawn["cross"] == M.cross_mask(tgt, src, cfg.pad_id)[:, 0].tolist()
    # seed 000's definitions, read off the drawing itself: the short sentence's padded keys
    # are never attended; a padded query attends to nothing; the decoder never looks ahead
    short = 1
    real_src = [i != cfg.pad_id for i in drawn["src_ids"][short]]
    for i, row in enumerate(drawn["encoder"][short]):
        assert row == [real_src[i] and r for r in real_src]
    for b in (0, 1):
        for i, row in enumerate(drawn["decoder"][b]):
            assert not any(row[i + 1 :])
    assert drawn["src_tokens"][short][-1] == "<pad>"


def test_occlusion_of_a_word_the_sentence_lacks_changes_nothing(shipped: Translator) -> None:
    found = shipped.occlusion(SENTENCE, words=["cat", "architecture", "transform"])
    absent, present, part = ([row[j] for row in found["importance"]] for j in range(3))
    assert all(x == 0.0 for x in absent)  # "cat" is not in the sentence
    assert all(x == 0.0 for x in part)  # nor is the word "transform" (only "transformer")
    assert max(abs(x) for x in present) > 0.1
    # removing "architecture" costs its translation most
    worst = max(range(len(present)), key=present.__getitem__)
    assert "architettura" in found["targets"][worst]


def test_occlusion_beside_every_heads_cross_attention(shipped: Translator) -> None:
    found = shipped.occlusion(SENTENCE)
    cfg = shipped.model.config
    assert found["words"] == ["The", "transformer", "architecture", "was", "introduced", "in",
                              "2017."]  # fmt: skip
    n_out = len(found["targets"])
    assert len(found["importance"]) == n_out and found["targets"][-1] == "<eos>"
    heads = found["heads"]
    assert len(heads) == cfg.n_dec_layers * cfg.n_heads
    for h in heads:
        assert 0.0 <= h["top1"] <= 1.0
        assert h["correlation"] is None or -1.0 - 1e-9 <= h["correlation"] <= 1.0 + 1e-9
        for row in h["attention"]:  # a word's share of the row: at most the whole row
            assert all(0.0 <= x <= 1.0 + 1e-4 for x in row)


def _greedy():  # type: ignore[no-untyped-def]
    from attenzione.config import search_config

    return search_config(1)
