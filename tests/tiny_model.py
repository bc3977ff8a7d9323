"""A tiny untrained translator (word-level tokenizers, d_model 16) for I/O and CLI tests."""

from __future__ import annotations

import torch

from attenzione.config import ModelConfig
from attenzione.data import WordTokenizer
from attenzione.model.transformer import Transformer
from attenzione.translator.translator import Translator

WORDS = ["the", "cat", "dog", "is", "here", "there", "red", "old", "."]
PAROLE = ["il", "gatto", "cane", "è", "qui", "lì", "rosso", "vecchio", "."]


def tiny_config(src_vocab: int, tgt_vocab: int, *, max_len: int = 32, **kw: object) -> ModelConfig:
    """d_model 16, 2 heads, one layer each side: untrained, for I/O and policy tests."""
    return ModelConfig(
        src_vocab_size=src_vocab,
        tgt_vocab_size=tgt_vocab,
        d_model=16,
        n_heads=2,
        d_head=8,
        d_ff=32,
        n_enc_layers=1,
        n_dec_layers=1,
        dropout=0.0,
        max_len=max_len,
        **kw,  # type: ignore[arg-type]
    )


def small_model(vocab: int, *, tie: bool, seed: int = 0) -> Transformer:
    """d_model 64, 4 heads, two layers each side, one ``vocab`` for both sides (``tie``: shared
    and tied embeddings), untrained, in eval mode: for comparing two ways of computing."""
    torch.manual_seed(seed)
    cfg = ModelConfig(
        src_vocab_size=vocab,
        tgt_vocab_size=vocab,
        d_model=64,
        n_heads=4,
        d_head=16,
        d_ff=128,
        n_enc_layers=2,
        n_dec_layers=2,
        dropout=0.0,
        max_len=64,
        share_src_tgt_embeddings=tie,
        tie_embeddings=tie,
    )
    return Transformer(cfg).eval()


def toy_transformer(**kw: object) -> Transformer:
    """Vocabularies 31 → 37, d_model 24, 3 heads of 8, two layers each side, untrained, in eval
    mode (``kw`` overrides any of it): the model tests' Transformer."""
    torch.manual_seed(0)
    base: dict[str, object] = dict(
        src_vocab_size=31,
        tgt_vocab_size=37,
        d_model=24,
        n_heads=3,
        d_head=8,
        d_ff=40,
        n_enc_layers=2,
        n_dec_layers=2,
        dropout=0.0,
        max_len=64,
    )
    base.update(kw)
    return Transformer(ModelConfig(**base)).eval()  # type: ignore[arg-type]


def padded_sources(vocab: int = 80) -> torch.Tensor:
    """(7,10) source ids of ``vocab`` ending in <eos> (2), one row padded (0) after its end."""
    g = torch.Generator().manual_seed(5)
    src = torch.randint(4, vocab, (7, 10), generator=g)
    src[:, -1] = 2
    src[3, 6:] = 0
    src[3, 5] = 2
    return src


def tiny_translator(seed: int = 0) -> Translator:
    torch.manual_seed(seed)
    src = WordTokenizer.train([" ".join(WORDS)])
    tgt = WordTokenizer.train([" ".join(PAROLE)])
    cfg = tiny_config(src.vocab_size, tgt.vocab_size)
    return Translator(Transformer(cfg), src, tgt, info={"max_src_tokens": 20})
