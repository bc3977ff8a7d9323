"""Warm starts (``train --init-from``): the body is copied, the vocabulary carried over."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from typer.testing import CliRunner

from attenzione import model_dir
from attenzione.cli import app
from attenzione.config import TrainConfig
from attenzione.data import SentencePieceTokenizer
from attenzione.training.dev_eval import dev_loss
from attenzione.training.trainer import Trainer, train
from attenzione.training.warm_start import WORD_START, transfer_embeddings
from attenzione.translator import Translator
from toy_corpus import write_toy_corpus

QUIET = dict(log=lambda *_: None)


def _cfg(corpus: Path, out: Path, **kw: object) -> TrainConfig:
    base: dict[str, object] = dict(
        data=str(corpus),
        out=str(out),
        preset="tiny",
        vocab_size=40,
        max_tokens=400,
        lr=3e-3,
        warmup_steps=30,
        dev_size=8,
        test_size=8,
        dev_bleu_sentences=8,
        eval_every=10_000,
        progress=False,
        seed=3,
        num_threads=1,
    )
    base.update(kw)
    return TrainConfig(**base)  # type: ignore[arg-type]


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_toy_corpus(tmp_path_factory.mktemp("corpus") / "toy.tsv")


@pytest.fixture(scope="module")
def teacher(corpus: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny model trained on the toy language (vocabulary 40)."""
    out = tmp_path_factory.mktemp("run") / "teacher"
    train(_cfg(corpus, out, max_steps=300), **QUIET)
    return out / "last"


def _loss(trainer: Trainer) -> float:
    trainer.model.eval()
    d = trainer.data
    return float(
        dev_loss(trainer.model, d.dev, d.src_tok, d.tgt_tok, limit=100, smoothing=0.0)["dev_loss"]
    )


def test_same_vocabulary_copies_the_model_exactly(
    corpus: Path, teacher: Path, tmp_path: Path
) -> None:
    # same seed and corpus: the same tokenizer, so every row is copied and nothing changes
    trainer = Trainer(_cfg(corpus, tmp_path / "same", init_from=str(teacher)), **QUIET)
    old = model_dir.load_model(teacher)
    new_state = trainer.model.state_dict()
    for name, tensor in old.state_dict().items():
        assert torch.equal(new_state[name], tensor), name
    trainer.model.eval()
    src, tgt = trainer.data.src_tok, trainer.data.tgt_tok
    ours = Translator(trainer.model, src, tgt).translate(["The red cat is here."], beam=2)
    assert ours == Translator.from_pretrained(teacher).translate(["The red cat is here."], beam=2)


def test_new_vocabulary_starts_far_ahead_of_a_cold_start(
    corpus: Path, teacher: Path, tmp_path: Path
) -> None:
    cold = Trainer(_cfg(corpus, tmp_path / "cold", vocab_size=52), **QUIET)
    warm = Trainer(_cfg(corpus, tmp_path / "warm", vocab_size=52, init_from=str(teacher)), **QUIET)
    assert warm.data.src_tok.vocab_size == 52
    assert any("initialised from" in note and "composed" in note for note in warm.data.notes)
    assert _loss(warm) < 0.6 * _loss(cold)


def _spm(texts: list[str], size: int, byte_fallback: bool) -> SentencePieceTokenizer:
    return SentencePieceTokenizer.train(texts, vocab_size=size, seed=0, byte_fallback=byte_fallback)


def test_rows_are_copied_composed_or_left_new(corpus: Path) -> None:
    texts = corpus.read_text(encoding="utf-8").replace("\t", "\n").splitlines()
    old_tok, new_tok = _spm(texts, 40, False), _spm(texts, 300, True)
    torch.manual_seed(0)
    old_table = torch.randn(old_tok.vocab_size, 8)
    new_table = torch.randn(new_tok.vocab_size, 8)
    before = new_table.clone()
    counts = transfer_embeddings(new_table, new_tok, old_table, old_tok)
    old_ids = {old_tok.id_to_token(j): j for j in range(old_tok.vocab_size)}
    seen = {"copied": 0, "composed": 0, "fresh": 0}
    for i in range(new_tok.vocab_size):
        piece = new_tok.id_to_token(i)
        if piece in old_ids:
            assert torch.equal(new_table[i], old_table[old_ids[piece]]), piece
            seen["copied"] += 1
        elif piece.startswith("<0x"):  # byte pieces: nothing to spell them with
            assert torch.equal(new_table[i], before[i]), piece
            seen["fresh"] += 1
        elif piece.startswith(WORD_START) and len(piece) > 1:
            # a whole word the old vocabulary lacked: the mean of its old spelling
            ids = old_tok.encode(piece[1:])
            ids = [j for j in ids if old_tok.id_to_token(j) != WORD_START]
            assert torch.allclose(new_table[i], old_table[ids].mean(0), atol=1e-6), piece
            seen["composed"] += 1
    assert seen["copied"] == counts.copied > 30
    assert seen["composed"] >= 1 and counts.composed >= seen["composed"]
    assert seen["fresh"] <= counts.fresh


def test_cli_refuses_a_model_of_another_shape(corpus: Path, teacher: Path, tmp_path: Path) -> None:
    res = CliRunner().invoke(
        app,
        ["train", "--data", str(corpus), "--out", str(tmp_path / "r"), "--preset", "small"]
        + ["--init-from", str(teacher), "--max-steps", "1", "--dev-size", "8"]
        + ["--test-size", "8", "--vocab-size", "52", "--no-progress"],
    )
    assert res.exit_code == 2, res.output
    last = res.output.strip().splitlines()[-1]
    assert "--init-from" in last and "d_model 32 (this run: 256)" in last, res.output
    missing = CliRunner().invoke(
        app,
        ["train", "--data", str(corpus), "--out", str(tmp_path / "m"), "--preset", "tiny"]
        + ["--init-from", str(tmp_path / "nowhere"), "--max-steps", "1", "--no-progress"],
    )
    assert missing.exit_code == 2 and "no model directory" in missing.output
