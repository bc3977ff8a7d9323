"""Corpus tags: a reserved source token per kind of text, trained on and asked for."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from typer.testing import CliRunner

from attenzione.cli import app
from attenzione.config import DecodeConfig
from attenzione.data import SentencePieceTokenizer, load_tokenizer
from attenzione.data.mixing import CorpusSpec, split_tag, tagged
from attenzione.model.transformer import Transformer
from attenzione.training.trainer import train
from attenzione.translator.translator import Translator
from tiny_model import tiny_config
from toy_corpus import toy_pairs, toy_train_config, write_toy_corpus

QUIET = {"log": lambda *a, **k: None}
GREEDY = DecodeConfig(method="greedy", max_len_a=0, max_len_b=8)


@pytest.fixture(scope="module")
def tok() -> SentencePieceTokenizer:
    texts = [t for pair in toy_pairs() for t in pair] * 2
    return SentencePieceTokenizer.train(texts, vocab_size=48, byte_fallback=False)


def test_a_corpus_spec_takes_a_tag_after_its_weight() -> None:
    spec = CorpusSpec.parse("europarl.tsv.gz:1:lc")
    assert (spec.path, spec.weight, spec.tag) == ("europarl.tsv.gz", 1.0, "lc")
    assert CorpusSpec.parse(str(spec)) == spec
    assert CorpusSpec.parse("debian.tsv:0.5").tag is None
    for bad in ("europarl.tsv:lc", "europarl.tsv:1:2x", "europarl.tsv:1:l c"):
        with pytest.raises(ValueError, match="tag"):
            CorpusSpec.parse(bad)


def test_a_stored_source_carries_its_tag_and_gives_it_back() -> None:
    assert split_tag(tagged("the cat is here", "lc")) == ("lc", "the cat is here")
    assert split_tag("<b>the cat</b>") == (None, "<b>the cat</b>")
    assert tagged("x", None) == "x"


def test_tags_are_reserved_tokens_after_the_pieces(
    tok: SentencePieceTokenizer, tmp_path: Path
) -> None:
    tagged_tok = tok.with_tags(["lc", "ui"])
    assert tagged_tok.vocab_size == tok.vocab_size + 2
    assert [tagged_tok.tag_id("lc"), tagged_tok.tag_id("ui")] == [
        tok.vocab_size,
        tok.vocab_size + 1,
    ]
    assert tagged_tok.id_to_token(tok.vocab_size) == "<tag:lc>"
    # the pieces keep their ids; no text encodes to a tag, and decoding writes none
    text = "The red cat is here."
    assert tagged_tok.encode(text) == tok.encode(text)
    assert tagged_tok.tag_id("lc") not in tagged_tok.encode("<tag:lc> " + text)
    ids = tok.encode(text)
    assert tagged_tok.decode([tagged_tok.tag_id("ui"), *ids]) == tok.decode(ids)
    # adding a tag it has is a no-op; a new one goes after
    assert tagged_tok.with_tags(["ui", "lc"]) is tagged_tok
    assert tagged_tok.with_tags(["doc"]).tag_id("doc") == tok.vocab_size + 2
    loaded = load_tokenizer(tagged_tok.save(tmp_path / "tok"))
    assert isinstance(loaded, SentencePieceTokenizer)
    assert loaded.tags == ("lc", "ui") and loaded.vocab_size == tagged_tok.vocab_size
    with pytest.raises(ValueError, match="this model's tags are lc, ui") as err:
        tagged_tok.tag_id("news")
    assert "\n" not in str(err.value)
    with pytest.raises(ValueError, match="corpus tags must be"):
        tok.with_tags(["not a name"])


def _tagged_translator(tok: SentencePieceTokenizer, *, biased: bool = True) -> Translator:
    """An untrained joint-vocabulary model whose output layer prefers the tag's token above
    all others: only the ban keeps it out of the translation."""
    both = tok.with_tags(["lc"])
    torch.manual_seed(0)
    cfg = tiny_config(both.vocab_size, both.vocab_size, share_src_tgt_embeddings=True)
    model = Transformer(cfg)
    if biased:
        generator = torch.nn.Linear(cfg.d_model, cfg.tgt_vocab_size)
        with torch.no_grad():
            generator.weight.copy_(model.generator.weight)
            generator.bias.zero_()
            generator.bias[both.tag_id("lc")] = 1e4
        model.generator = generator
    return Translator(model, both, both, info={"max_src_tokens": 20})


def test_a_tag_is_read_first_never_written_and_kept_in_a_model_directory(
    tok: SentencePieceTokenizer, tmp_path: Path
) -> None:
    tr = _tagged_translator(tok)
    tag = tr.src_tokenizer.tag_id("lc")  # type: ignore[attr-defined]
    assert tr.tags == ("lc",) and tr.default_tag is None
    text = "The red cat is here."
    plain = tr.attention(text, beam=1)
    read = tr.attention(text, beam=1, tag="lc")
    assert read.src_tokens[0] == "<tag:lc>" and read.src_tokens[1:] == plain.src_tokens
    for search in (GREEDY, DecodeConfig(method="beam", beam_size=3, n_best=3)):
        for result in tr.translate([text], search=search, tag="lc", steps=()):
            assert all(tag not in c.ids for c in result.candidates)
    with pytest.raises(ValueError, match="unknown corpus tag 'news': this model's tags are lc"):
        tr.translate([text], tag="news")
    # a model directory keeps its tags; info.json may name the one used by default
    plain_generator = torch.nn.Linear(16, tr.model.config.tgt_vocab_size, bias=False)
    tr.model.generator = plain_generator  # the biased one is the test's, not the format's
    tr = tr.replace(info={**tr.info, "default_tag": "lc"})
    loaded = Translator.from_pretrained(tr.save_pretrained(tmp_path / "m"))
    assert loaded.tags == ("lc",) and loaded.default_tag == "lc"
    assert loaded.attention(text, beam=1).src_tokens[0] == "<tag:lc>"
    assert loaded.attention(text, beam=1, tag="").src_tokens == plain.src_tokens
    # the translator's own default is the one read
    untagged = loaded.replace(info={**loaded.info, "default_tag": None})
    assert untagged.attention(text, beam=1).src_tokens == plain.src_tokens
    bad = tr.save_pretrained(tmp_path / "bad")  # then its info.json names another tag
    info = json.loads((bad / "info.json").read_text(encoding="utf-8"))
    (bad / "info.json").write_text(json.dumps({**info, "default_tag": "news"}), encoding="utf-8")
    with pytest.raises(ValueError, match="default_tag 'news'"):
        Translator.from_pretrained(bad)
    with pytest.raises(ValueError, match="default_tag 'news'"):
        tr.replace(info={**tr.info, "default_tag": "news"})


def test_the_cli_refuses_an_unknown_tag_in_one_line(
    tok: SentencePieceTokenizer, tmp_path: Path
) -> None:
    path = _tagged_translator(tok, biased=False).save_pretrained(tmp_path / "m")
    runner = CliRunner()
    res = runner.invoke(app, ["translate", "--model", str(path), "--tag", "news", "Hello."])
    assert res.exit_code == 2, res.output
    assert res.output.strip().splitlines() == [
        "error: unknown corpus tag 'news': this model's tags are lc"
    ]
    res = runner.invoke(app, ["translate", "--model", str(path), "--tag", "lc", "Hello."])
    assert res.exit_code == 0, res.output


def test_a_run_puts_a_tagged_corpus_s_tag_before_its_sources(tmp_path: Path) -> None:
    corpus = write_toy_corpus(tmp_path / "toy.tsv")
    lower = tmp_path / "lower.tsv"
    lower.write_text(
        "".join(f"{en.lower()}\t{it.lower()}\n" for en, it in toy_pairs(seed=1)[:40]),
        encoding="utf-8",
    )
    out = tmp_path / "run"
    cfg = toy_train_config(corpus, out, max_steps=3, extra_data=(f"{lower}:1:lc",))
    train(cfg, **QUIET)
    rows = [line.split("\t") for line in (out / "data/train.tsv").read_text().splitlines()]
    tagged_rows = [s for s, _ in rows if s.startswith("<tag:lc> ")]
    assert tagged_rows and all(s.removeprefix("<tag:lc> ").islower() for s in tagged_rows)
    assert all(not s.startswith("<tag:") for s in (out / "data/dev.tsv").read_text().split("\t"))
    tr = Translator.from_pretrained(out / "last")
    assert tr.tags == ("lc",) and tr.info["tags"] == ["lc"] and tr.default_tag is None
    assert tr.model.config.src_vocab_size == tr.src_tokenizer.vocab_size
    # the vocabulary was trained on the text without the tags: no piece spells one
    pieces = [tr.src_tokenizer.id_to_token(i) for i in range(tr.src_tokenizer.vocab_size - 1)]
    assert not any("tag:" in p for p in pieces)
    # the tag is the first source token of each tagged pair, and of no other
    from attenzione.training.data_prep import encode_sources

    ids = encode_sources(tr.src_tokenizer, [s for s, _ in rows])
    tag = tr.src_tokenizer.tag_id("lc")  # type: ignore[attr-defined]
    assert all(
        (i[0] == tag) == s.startswith("<tag:lc> ") for i, (s, _) in zip(ids, rows, strict=True)
    )
    assert all(tag not in i[1:] for i in ids)


def test_the_first_corpus_cannot_carry_a_tag(tmp_path: Path) -> None:
    corpus = write_toy_corpus(tmp_path / "toy.tsv")
    res = CliRunner().invoke(
        app, ["train", "--data", f"{corpus}:1:lc", "--out", str(tmp_path / "r"), "--preset", "tiny"]
    )
    assert res.exit_code == 2, res.output
    assert "cannot carry a tag" in res.output and "Traceback" not in res.output


def test_a_warm_start_on_the_old_vocabulary_adds_the_tags(tmp_path: Path) -> None:
    """Fine-tuning a model on its own vocabulary (--init-from, --tokenizers-from) with a
    tagged corpus: the tag is a new token after the old ones, every old piece keeps its id,
    and the run trains and loads."""
    corpus = write_toy_corpus(tmp_path / "toy.tsv")
    first = tmp_path / "first"
    train(toy_train_config(corpus, first, max_steps=2), **QUIET)
    old = Translator.from_pretrained(first / "last")
    lower = tmp_path / "lower.tsv"
    lower.write_text("".join(f"{en.lower()}\t{it.lower()}\n" for en, it in toy_pairs(1)[:30]))
    second = tmp_path / "second"
    cfg = toy_train_config(
        corpus,
        second,
        max_steps=2,
        extra_data=(f"{lower}:1:lc",),
        init_from=str(first / "last"),
        tokenizers_from=str(first / "last"),
    )
    train(cfg, **QUIET)
    new = Translator.from_pretrained(second / "last")
    assert new.tags == ("lc",)
    assert new.src_tokenizer.vocab_size == old.src_tokenizer.vocab_size + 1
    text = "The red cat is here."
    assert new.src_tokenizer.encode(text) == old.src_tokenizer.encode(text)
    assert new.translate([text], tag="lc", search=GREEDY)[0].text is not None
