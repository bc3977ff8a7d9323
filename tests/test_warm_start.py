"""Warm starts (``train --init-from``): the body is copied, the vocabulary carried over."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
import torch
from torch import nn
from typer.testing import CliRunner

from attenzione.cli import app
from attenzione.config import ModelConfig, TrainConfig, search_config
from attenzione.data import SentencePieceTokenizer
from attenzione.data.tokenizers import WORD_START, is_byte_piece
from attenzione.model.transformer import Transformer
from attenzione.training.dev_eval import dev_loss
from attenzione.training.trainer import Trainer, train
from attenzione.training.warm_start import (
    check_init_dir,
    copy_body,
    layer_plan,
    transfer_embeddings,
)
from attenzione.translator import model_dir
from attenzione.translator.translator import Translator
from toy_corpus import toy_train_config, write_toy_corpus

QUIET = dict(log=lambda *_: None)


def _cfg(corpus: Path, out: Path, **kw: object) -> TrainConfig:
    """The toy run with a 40-piece vocabulary (the teacher's; new runs ask for 52)."""
    return toy_train_config(corpus, out, **{"vocab_size": 40, **kw})


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
    teacher_tr = Translator.from_pretrained(teacher)
    # the same known words too: the teacher's directory lists its training targets' words
    ours = Translator(
        trainer.model,
        src,
        tgt,
        known_words=trainer.data.target_words,
        translated_words=trainer.data.translated_words,
    )
    assert teacher_tr.known_words == trainer.data.target_words
    # and the source words its training pairs translate rather than copy
    assert (
        trainer.data.translated_words
        and teacher_tr.translated_words == trainer.data.translated_words
    )
    sentence = ["The red cat is here."]
    search = search_config(2)
    mine, theirs = (t.translate(sentence, search=search) for t in (ours, teacher_tr))
    assert [(c.text, c.ids) for r in mine for c in r.candidates] == [
        (c.text, c.ids) for r in theirs for c in r.candidates
    ]


def test_new_vocabulary_starts_far_ahead_of_a_cold_start(
    corpus: Path, teacher: Path, tmp_path: Path
) -> None:
    cold = Trainer(_cfg(corpus, tmp_path / "cold", vocab_size=52), **QUIET)
    warm = Trainer(_cfg(corpus, tmp_path / "warm", vocab_size=52, init_from=str(teacher)), **QUIET)
    assert warm.data.src_tok.vocab_size == 52
    assert any("initialised from" in note and "composed" in note for note in warm.data.notes)
    assert _loss(warm) < 0.6 * _loss(cold)
    assert not (tmp_path / "cold" / "init.json").exists()


def test_the_run_records_what_it_started_from(corpus: Path, teacher: Path, tmp_path: Path) -> None:
    out = tmp_path / "warm"
    train(_cfg(corpus, out, vocab_size=52, init_from=str(teacher), max_steps=20), **QUIET)
    teacher_info = json.loads((teacher / "info.json").read_text())
    init = json.loads((out / "init.json").read_text())
    assert init["model"] == str(teacher) and init["step"] == teacher_info["step"] == 300
    assert init["train_hours"] == teacher_info["train_hours"]
    info = json.loads((out / "last" / "info.json").read_text())
    assert info["initialised_from"] == init
    hours = info["train_hours"] + init["train_hours"]
    assert info["train_hours_with_init"] == pytest.approx(hours, abs=0.0011)
    # a resumed run still knows, and does not start from the teacher again
    train(
        _cfg(corpus, out, vocab_size=52, init_from=str(teacher), max_steps=30), resume=True, **QUIET
    )
    info = json.loads((out / "last" / "info.json").read_text())
    assert info["step"] == 30 and info["initialised_from"] == init
    # a run started from that run keeps the whole chain, and names its weighted corpus so
    out2 = tmp_path / "again"
    cfg = _cfg(corpus, out2, vocab_size=52, init_from=str(out / "last"), max_steps=5)
    train(dataclasses.replace(cfg, data_weight=2.0), **QUIET)
    again = json.loads((out2 / "last" / "info.json").read_text())
    assert again["initialised_from"]["step"] == 30
    assert again["initialised_from"]["initialised_from"] == init
    assert again["corpora"][0] == f"{corpus}:2"


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
    seen = {"copied": 0, "composed": 0, "continued": 0, "fresh": 0}
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
        else:  # a continuation piece: spelled as the continuation, not as a word start
            ids = [j for j in old_tok.encode(piece) if old_tok.id_to_token(j) != WORD_START]
            first = old_tok.id_to_token(ids[0])
            if first.startswith(WORD_START) and first[1:] in old_ids:
                ids[0] = old_ids[first[1:]]
            assert torch.allclose(new_table[i], old_table[ids].mean(0), atol=1e-6), piece
            seen["continued"] += 1
    assert seen["copied"] == counts.copied > 30
    assert seen["fresh"] == counts.fresh == 256 - sum(map(is_byte_piece, old_ids))
    assert counts.unknown == 0  # the toy text has no character the old vocabulary lacks
    assert seen["composed"] >= 1 and seen["continued"] >= 1
    assert counts.composed == seen["composed"] + seen["continued"]
    assert counts.copied + counts.composed + counts.unknown + counts.fresh == new_tok.vocab_size


def test_a_character_the_old_vocabulary_lacked_starts_from_its_unk(corpus: Path) -> None:
    texts = corpus.read_text(encoding="utf-8").replace("\t", "\n").splitlines()
    old_tok = _spm(texts, 40, False)
    new_tok = _spm([*texts, "{ } « »"] * 2, 56, False)
    old_table = torch.randn(old_tok.vocab_size, 8)
    new_table = torch.zeros(new_tok.vocab_size, 8)
    counts = transfer_embeddings(new_table, new_tok, old_table, old_tok)
    assert counts.unknown >= 1
    brace = new_tok.encode("{")
    assert old_tok.encode("{") == [old_tok.unk_id] or old_tok.unk_id in old_tok.encode("{")
    assert any(torch.equal(new_table[i], old_table[old_tok.unk_id]) for i in brace)


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
    assert not (tmp_path / "r" / "data").exists()  # refused before any data work
    missing = CliRunner().invoke(
        app,
        ["train", "--data", str(corpus), "--out", str(tmp_path / "m"), "--preset", "tiny"]
        + ["--init-from", str(tmp_path / "nowhere"), "--max-steps", "1", "--no-progress"],
    )
    assert missing.exit_code == 2 and "no model directory" in missing.output


def test_fine_tuning_can_keep_the_model_vocabulary(
    corpus: Path, teacher: Path, tmp_path: Path
) -> None:
    # another vocabulary size asked for, but the teacher's tokenizers are taken as they are
    cfg = _cfg(corpus, tmp_path / "ft", vocab_size=52, init_from=str(teacher))
    cfg = TrainConfig.from_dict({**cfg.to_dict(), "tokenizers_from": str(teacher)})
    trainer = Trainer(cfg, **QUIET)
    old = Translator.from_pretrained(teacher)
    assert trainer.data.src_tok.vocab_size == old.src_tokenizer.vocab_size == 40
    ids = [old.src_tokenizer.id_to_token(i) for i in range(40)]
    assert [trainer.data.src_tok.id_to_token(i) for i in range(40)] == ids
    new_state = trainer.model.state_dict()
    assert all(torch.equal(new_state[k], v) for k, v in old.model.state_dict().items())
    bad = TrainConfig.from_dict(
        {**cfg.to_dict(), "out": str(tmp_path / "x"), "tokenizers_from": str(tmp_path)}
    )
    with pytest.raises(FileNotFoundError, match="tokenizer"):
        Trainer(bad, **QUIET)
    assert not (tmp_path / "x" / "data").exists()


def test_new_layers_are_spread_among_the_old_ones() -> None:
    assert layer_plan(3, 3) == [0, 1, 2]
    assert layer_plan(3, 6) == [0, None, 1, None, 2, None]
    assert layer_plan(3, 4) == [0, 1, 2, None]
    assert layer_plan(3, 5) == [0, 1, None, 2, None]
    assert layer_plan(1, 3) == [0, None, None]
    assert layer_plan(2, 7) == [0, None, None, 1, None, None, None]
    with pytest.raises(ValueError, match="cannot grow 3 layers into 2"):
        layer_plan(3, 2)


@pytest.mark.parametrize("norm", ["post", "pre"])
def test_a_grown_model_computes_exactly_what_the_old_one_did(norm: str) -> None:
    torch.manual_seed(0)
    cfg = ModelConfig(
        src_vocab_size=30, tgt_vocab_size=30, d_model=32, n_heads=2, d_head=16, d_ff=64,
        n_enc_layers=2, n_dec_layers=2, norm=norm, max_len=64,
    )  # fmt: skip
    old = Transformer(cfg)
    with torch.no_grad():  # norms that are not (1, 0), so where the last one sits matters
        for module in old.modules():
            if isinstance(module, nn.LayerNorm):
                module.weight.uniform_(0.5, 1.5)
                module.bias.uniform_(-0.5, 0.5)
    new = Transformer(dataclasses.replace(cfg, n_enc_layers=5, n_dec_layers=3, d_ff=96))
    said = copy_body(new, old)
    assert "encoder grown from 2 to 5 layers" in said and "decoder grown from 2 to 3" in said
    assert "feed-forward widened from 64 to 96" in said
    # an old layer's hidden units keep their weights; the new ones read at random, write zero
    kept, grown = old.encoder_layers[1].ffn, new.encoder_layers[2].ffn
    assert torch.equal(grown.linear1.weight[:64], kept.linear1.weight)
    assert torch.equal(grown.linear2.weight[:, :64], kept.linear2.weight)
    assert grown.linear1.weight[64:].abs().sum() > 0
    assert grown.linear2.weight[:, 64:].abs().sum() == 0
    with torch.no_grad():  # the tables are the vocabulary's business (tested above)
        new.src_embed.weight.copy_(old.src_embed.weight)
        new.tgt_embed.weight.copy_(old.tgt_embed.weight)
        new.generator.weight.copy_(old.generator.weight)
    old.eval(), new.eval()
    src = torch.randint(4, 30, (3, 9))
    src[0, 6:] = cfg.pad_id
    tgt = torch.randint(4, 30, (3, 7))
    with torch.no_grad():
        expected, got = old(src, tgt).logits, new(src, tgt).logits
    torch.testing.assert_close(got, expected, atol=1e-5, rtol=1e-5)
    # a new layer learns through its zeroed output projections first: they get a gradient,
    # what feeds them none until they move
    new.train()
    new(src, tgt).logits.logsumexp(-1).mean().backward()
    layer = new.encoder_layers[1]
    for zeroed in (layer.self_attn.out_proj.weight, layer.ffn.linear2.weight):
        assert zeroed.grad is not None and zeroed.grad.abs().sum() > 0
    for fed in (
        layer.self_attn.q_proj.weight,
        layer.self_attn.v_proj.weight,
        layer.ffn.linear1.weight,
    ):
        assert fed.grad is not None and fed.grad.abs().sum() == 0
    # so do an old layer's new hidden units: their zero output weights move first
    widened = new.encoder_layers[0].ffn
    assert widened.linear2.weight.grad is not None
    assert widened.linear2.weight.grad[:, 64:].abs().sum() > 0
    assert widened.linear1.weight.grad is not None
    assert widened.linear1.weight.grad[64:].abs().sum() == 0
    assert widened.linear1.weight.grad[:64].abs().sum() > 0


def test_a_wider_feed_forward_alone_computes_what_the_old_one_did() -> None:
    torch.manual_seed(1)
    cfg = ModelConfig(
        src_vocab_size=30, tgt_vocab_size=30, d_model=32, n_heads=2, d_head=16, d_ff=48,
        n_enc_layers=2, n_dec_layers=1, max_len=64,
    )  # fmt: skip
    old = Transformer(cfg).eval()
    new = Transformer(dataclasses.replace(cfg, d_ff=128)).eval()
    copy_body(new, old)
    with torch.no_grad():
        for table in ("src_embed", "tgt_embed", "generator"):
            getattr(new, table).weight.copy_(getattr(old, table).weight)
        src, tgt = torch.randint(4, 30, (2, 8)), torch.randint(4, 30, (2, 5))
        torch.testing.assert_close(new(src, tgt).logits, old(src, tgt).logits)
    # a narrower one cannot take the old weights
    with pytest.raises(ValueError, match=r"cannot copy a \(48, 32\) weight into \(16, 32\)"):
        copy_body(Transformer(dataclasses.replace(cfg, d_ff=16)), old)


def test_train_can_grow_the_model_it_starts_from(
    corpus: Path, teacher: Path, tmp_path: Path
) -> None:
    out = tmp_path / "grown"
    args = ["train", "--data", str(corpus), "--out", str(out), "--preset", "tiny"]
    args += ["--vocab-size", "40", "--dev-size", "8", "--test-size", "8", "--seed", "3"]
    args += ["--max-tokens", "400", "--threads", "1", "--no-progress"]
    grown = args + ["--init-from", str(teacher), "--enc-layers", "3", "--dec-layers", "2"]
    grown += ["--d-ff", "96"]
    # before any step the grown model scores the dev set as the teacher does
    start = Trainer(
        _cfg(corpus, tmp_path / "g0", init_from=str(teacher), enc_layers=3, d_ff=96), **QUIET
    )
    same = Trainer(_cfg(corpus, tmp_path / "s0", init_from=str(teacher)), **QUIET)
    assert len(start.model.encoder_layers) == 3 and start.model.config.d_ff == 96
    assert _loss(start) == pytest.approx(_loss(same), abs=1e-4)
    res = CliRunner().invoke(app, [*grown, "--max-steps", "5"])
    assert res.exit_code == 0, res.output
    init = json.loads((out / "init.json").read_text())
    assert "encoder grown from 1 to 3 layers" in init["carried_over"]
    assert "decoder grown from 1 to 2 layers" in init["carried_over"]
    assert "feed-forward widened from 64 to 96" in init["carried_over"]
    # --resume rebuilds the grown shape without being told it again
    res = CliRunner().invoke(app, [*args, "--resume", "--max-steps", "8"])
    assert res.exit_code == 0, res.output
    config = model_dir.read_config(out / "last")
    assert (config.n_enc_layers, config.n_dec_layers, config.d_ff) == (3, 2, 96)
    info = json.loads((out / "last" / "info.json").read_text())
    assert info["step"] == 8 and info["preset"] == "tiny" and info["layers"] == "3+2"
    # layers can be added, not dropped: a one-line error before any data work
    shrink = [*args[:4], str(tmp_path / "shrunk"), *args[5:], "--init-from", str(out / "last")]
    shrink += ["--d-ff", "96"]
    res = CliRunner().invoke(app, [*shrink, "--enc-layers", "2", "--dec-layers", "2"])
    assert res.exit_code == 2, res.output
    last_line = res.output.strip().splitlines()[-1]
    assert "can add layers, not drop them: give --enc-layers 3 or more" in last_line
    assert not (tmp_path / "shrunk" / "data").exists()
    # nor a narrower feed-forward
    res = CliRunner().invoke(
        app, [*shrink, "--enc-layers", "3", "--dec-layers", "2", "--d-ff", "8"]
    )
    assert res.exit_code == 2, res.output
    last_line = res.output.strip().splitlines()[-1]
    assert "can widen the feed-forward, not narrow it: give --d-ff 96 or more" in last_line
    assert not (tmp_path / "shrunk" / "data").exists()


def test_a_model_grows_only_when_the_run_asks(teacher: Path) -> None:
    shape = dataclasses.asdict(model_dir.read_config(teacher))  # 1 + 1 layers
    deeper = {**shape, "n_enc_layers": 3}
    with pytest.raises(ValueError, match=r"n_enc_layers 1 \(this run: 3\)"):
        check_init_dir(teacher, deeper)  # a preset that merely has more layers
    assert check_init_dir(teacher, deeper, grow={"n_enc_layers"}) == teacher
    wider = {**shape, "d_ff": shape["d_ff"] * 2}
    with pytest.raises(ValueError, match=r"d_ff 64 \(this run: 128\)"):
        check_init_dir(teacher, wider)  # a preset that merely has a wider feed-forward
    assert check_init_dir(teacher, wider, grow={"d_ff"}) == teacher
    # a width not known yet (a GloVe preset's, read from the file later) is not compared
    assert check_init_dir(teacher, {**shape, "d_model": None}) == teacher
    with pytest.raises(ValueError, match=r"d_model 32 \(this run: 50\)"):
        check_init_dir(teacher, {**shape, "d_model": 50})
