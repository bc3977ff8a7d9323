"""Named model presets: the sizes we recommend, each a starting point for ``attenzione train``.

A preset fixes the model's shape and the tokenizer recipe; the vocabulary sizes are filled in
once the tokenizers are trained. Sizes were chosen for quality per CPU-hour on this kind of
machine (2 cores), not copied from GPU papers:

* ``glove50`` — the original GloVe design: the source side is a word-level vocabulary whose vectors
  start from GloVe 6B 50d, so d_model = 50, with 4 heads of 16 (heads × d_head = 64 ≠ 50:
  d_head decoupled from d_model). The target side uses SentencePiece.
* ``small`` — the shipped model: d_model 256, 4 heads of 64, d_ff 1024, 3 + 3 layers, one
  joint SentencePiece vocabulary with shared source/target embeddings tied to the output
  projection (fewer parameters, English and Italian share names and numbers).
* ``broad`` — for real text on a CPU (issue 11): a deep encoder and a shallow decoder
  (d_model 256, 4 heads of 64, d_ff 1024, 6 + 2 layers), as Firefox Translations' CPU models
  do: the encoder runs once per sentence, the decoder once per output token, so decoder
  layers are where translation time goes. A 24k joint SentencePiece vocabulary with digits
  split (numbers are copied digit by digit) and byte fallback (nothing is ever ``<unk>``),
  and number augmentation in the training mix. ~13M parameters. 24k rather than 16k keeps
  everyday words whole ("Hello", "Ciao", "Buongiorno") at the same cost per sentence
  (docs/tokenizer-study.md).
* ``base`` — wider and deeper (d_model 384, 6 heads, 5 + 5 layers) for users with more time.
* ``compact`` — for a small corpus (tens of thousands of pairs) on a laptop: the shape of
  Transformer-Tiny (Wu et al., ACL 2021, the published Multi30k reference point): d_model 128,
  4 heads of 32, d_ff 256, 4 + 4 layers, dropout 0.3 (a small corpus is learnt by heart
  without it), one joint SentencePiece vocabulary, shared and tied embeddings; ~2.6M
  parameters at an 8k vocabulary. It trains several times faster per token than ``small``,
  so a CPU budget buys the updates such a corpus needs (examples/multi30k).
* ``tiny`` — a few thousand parameters, for tests and smoke runs.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any, Literal

from attenzione.config import TrainConfig

TokenizerRecipe = Literal["joint-spm", "glove-word"]
_TRAIN_DEFAULTS: dict[str, Any] = {f.name: f.default for f in fields(TrainConfig)}


@dataclass(frozen=True)
class TrainDefaults:
    """The training settings a preset recommends. Each is the :class:`TrainConfig` field of
    the same name (and the ``attenzione train`` flag of that name); a command-line value wins.
    Unset ones are TrainConfig's own defaults, stated once, there."""

    lr: float = _TRAIN_DEFAULTS["lr"]
    warmup_steps: int = _TRAIN_DEFAULTS["warmup_steps"]
    vocab_size: int = _TRAIN_DEFAULTS["vocab_size"]
    split_digits: bool = _TRAIN_DEFAULTS["split_digits"]
    byte_fallback: bool = _TRAIN_DEFAULTS["byte_fallback"]
    number_augment: float = _TRAIN_DEFAULTS["number_augment"]
    tokenizer_sample: int = _TRAIN_DEFAULTS["tokenizer_sample"]


@dataclass(frozen=True)
class Preset:
    """A named model shape (ModelConfig fields; vocabulary sizes come from the tokenizers),
    its tokenizer recipe and its recommended training settings."""

    name: str
    description: str
    model: dict[str, Any]
    tokenizer: TokenizerRecipe
    train: TrainDefaults = field(default_factory=TrainDefaults)


PRESETS: dict[str, Preset] = {
    "tiny": Preset(
        "tiny",
        "smoke tests: d_model 32, 2 heads of 16, 1+1 layers, joint SentencePiece",
        dict(
            d_model=32,
            n_heads=2,
            d_head=16,
            d_ff=64,
            n_enc_layers=1,
            n_dec_layers=1,
            dropout=0.1,
            share_src_tgt_embeddings=True,
            tie_embeddings=True,
            max_len=128,
        ),
        "joint-spm",
        TrainDefaults(lr=3e-3, warmup_steps=50, vocab_size=200),
    ),
    "compact": Preset(
        "compact",
        "small corpora: d_model 128, 4 heads of 32, d_ff 256, 4+4 layers, dropout 0.3, "
        "joint SentencePiece 8k, tied",
        dict(
            d_model=128,
            n_heads=4,
            d_head=32,
            d_ff=256,
            n_enc_layers=4,
            n_dec_layers=4,
            dropout=0.3,
            share_src_tgt_embeddings=True,
            tie_embeddings=True,
            max_len=256,
        ),
        "joint-spm",
        TrainDefaults(lr=5e-3, warmup_steps=2000, vocab_size=8000),
    ),
    "glove50": Preset(
        "glove50",
        "GloVe 50d word-level source, d_model 50, 4 heads of 16, 3+3 layers",
        dict(
            d_model=50,
            n_heads=4,
            d_head=16,
            d_ff=256,
            n_enc_layers=3,
            n_dec_layers=3,
            dropout=0.1,
            tie_embeddings=True,
            max_len=256,
        ),
        "glove-word",
        TrainDefaults(lr=2e-3, warmup_steps=2000, vocab_size=8000),
    ),
    "small": Preset(
        "small",
        "d_model 256, 4 heads of 64, d_ff 1024, 3+3 layers, joint SentencePiece 8k, tied",
        dict(
            d_model=256,
            n_heads=4,
            d_head=64,
            d_ff=1024,
            n_enc_layers=3,
            n_dec_layers=3,
            dropout=0.1,
            share_src_tgt_embeddings=True,
            tie_embeddings=True,
            max_len=256,
        ),
        "joint-spm",
        TrainDefaults(lr=1e-3, warmup_steps=2000, vocab_size=8000),
    ),
    "broad": Preset(
        "broad",
        "real text: d_model 256, 4 heads of 64, d_ff 1024, 6+2 layers, joint SentencePiece 24k "
        "(digits split, byte fallback), tied",
        dict(
            d_model=256,
            n_heads=4,
            d_head=64,
            d_ff=1024,
            n_enc_layers=6,
            n_dec_layers=2,
            dropout=0.1,
            share_src_tgt_embeddings=True,
            tie_embeddings=True,
            max_len=256,
        ),
        "joint-spm",
        TrainDefaults(
            lr=1e-3,
            warmup_steps=2000,
            vocab_size=24000,
            split_digits=True,
            byte_fallback=True,
            number_augment=0.3,
            tokenizer_sample=1_000_000,
        ),
    ),
    "base": Preset(
        "base",
        "d_model 384, 6 heads of 64, d_ff 1536, 5+5 layers, joint SentencePiece 16k, tied",
        dict(
            d_model=384,
            n_heads=6,
            d_head=64,
            d_ff=1536,
            n_enc_layers=5,
            n_dec_layers=5,
            dropout=0.1,
            share_src_tgt_embeddings=True,
            tie_embeddings=True,
            max_len=256,
        ),
        "joint-spm",
        TrainDefaults(lr=7e-4, warmup_steps=4000, vocab_size=16000),
    ),
}


def get_preset(name: str) -> Preset:
    try:
        return PRESETS[name]
    except KeyError:
        raise ValueError(f"unknown preset {name!r}; choose one of {sorted(PRESETS)}") from None
