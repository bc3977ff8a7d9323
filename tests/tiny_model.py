"""A tiny untrained translator (word-level tokenizers, d_model 16) for I/O and CLI tests."""

from __future__ import annotations

import torch

from attenzione.config import ModelConfig
from attenzione.data import WordTokenizer
from attenzione.model import Transformer
from attenzione.translator import Translator

WORDS = ["the", "cat", "dog", "is", "here", "there", "red", "old", "."]
PAROLE = ["il", "gatto", "cane", "è", "qui", "lì", "rosso", "vecchio", "."]


def tiny_translator(seed: int = 0) -> Translator:
    torch.manual_seed(seed)
    src = WordTokenizer.train([" ".join(WORDS)])
    tgt = WordTokenizer.train([" ".join(PAROLE)])
    cfg = ModelConfig(
        src_vocab_size=src.vocab_size,
        tgt_vocab_size=tgt.vocab_size,
        d_model=16,
        n_heads=2,
        d_head=8,
        d_ff=32,
        n_enc_layers=1,
        n_dec_layers=1,
        dropout=0.0,
        max_len=32,
    )
    return Translator(Transformer(cfg), src, tgt, info={"max_src_tokens": 20})
