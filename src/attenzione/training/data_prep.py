"""Preparing a run's data once: splits, tokenizers and encoded ids.

The first time a run starts, the corpus is read, cleaned, split into train/dev/test disjoint
by sentence (``attenzione.data.split_by_sentence``) and the splits are written into the run
directory (``data/train.tsv`` …) together with the trained tokenizers. A resumed run reads
those files back instead of redoing the work, so it sees exactly the same data and ids —
even if the original corpus file has changed or moved since.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from attenzione.config import TrainConfig
from attenzione.data import (
    SentencePieceTokenizer,
    Tokenizer,
    WordTokenizer,
    clean_pairs,
    load_corpus,
    load_tokenizer,
    read_pairs,
    split_by_sentence,
    write_pairs,
)
from attenzione.training.presets import Preset

Pairs = list[tuple[str, str]]


@dataclass
class PreparedData:
    train: Pairs
    dev: Pairs
    test: Pairs
    src_tok: Tokenizer
    tgt_tok: Tokenizer
    train_ids: list[tuple[list[int], list[int]]]
    dropped_long: int
    notes: list[str]


def prepare(cfg: TrainConfig, preset: Preset, run_dir: Path, *, write: bool) -> PreparedData:
    """Load (or, on a new run, create) the splits and tokenizers of ``run_dir``.

    ``write`` is False on non-zero ranks of a distributed run: they wait for rank 0 to have
    written the files, then read them.
    """
    data_dir = run_dir / "data"
    notes: list[str] = []
    if not (data_dir / "train.tsv").is_file():
        if not write:
            raise RuntimeError(f"{data_dir} was not prepared by rank 0")
        stats: dict[str, object] = {}
        # a malformed line stops the run with file:line, unless the user asked to skip them
        pairs = load_corpus(cfg.data, skip_bad=cfg.skip_bad_lines, stats=stats)
        if stats.get("skipped"):
            notes.append(f"skipped {stats['skipped']} malformed lines of {cfg.data}")
        pairs = clean_pairs(pairs)
        splits = split_by_sentence(
            pairs, dev_size=cfg.dev_size, test_size=cfg.test_size, seed=cfg.seed
        )
        if not splits.train or not splits.dev:
            raise ValueError(
                f"{cfg.data}: {len(pairs)} usable pairs leave {len(splits.train)} for training "
                f"and {len(splits.dev)} for dev after holding out --dev-size {cfg.dev_size} and "
                f"--test-size {cfg.test_size}: use a larger corpus or smaller held-out sets"
            )
        data_dir.mkdir(parents=True, exist_ok=True)
        write_pairs(splits.dev, data_dir / "dev.tsv")
        write_pairs(splits.test, data_dir / "test.tsv")
        src_tok, tgt_tok = _train_tokenizers(cfg, preset, splits.train)
        src_tok.save(run_dir / "src_tokenizer")
        tgt_tok.save(run_dir / "tgt_tokenizer")
        write_pairs(splits.train, data_dir / "train.tsv")  # last: its presence means "prepared"
        train, dev, test = splits.train, splits.dev, splits.test
    else:
        train = read_pairs(data_dir / "train.tsv")
        dev = read_pairs(data_dir / "dev.tsv")
        test_path = data_dir / "test.tsv"
        test = read_pairs(test_path) if test_path.stat().st_size else []
        src_tok = load_tokenizer(run_dir / "src_tokenizer")
        tgt_tok = load_tokenizer(run_dir / "tgt_tokenizer")
    src_ids = src_tok.encode_batch([s for s, _ in train])
    tgt_ids = tgt_tok.encode_batch([t for _, t in train])
    limit = cfg.max_src_tokens
    train_ids = [
        (s, t) for s, t in zip(src_ids, tgt_ids, strict=True) if len(s) < limit and len(t) < limit
    ]
    dropped = len(train) - len(train_ids)
    if dropped:
        notes.append(f"left out {dropped} training pairs longer than {limit} tokens")
    return PreparedData(train, dev, test, src_tok, tgt_tok, train_ids, dropped, notes)


def _train_tokenizers(
    cfg: TrainConfig, preset: Preset, train: Pairs
) -> tuple[Tokenizer, Tokenizer]:
    """The preset's tokenizer recipe, trained on the training split only (never dev/test)."""
    src_texts = [s for s, _ in train]
    tgt_texts = [t for _, t in train]
    if preset.tokenizer == "joint-spm":
        joint = SentencePieceTokenizer.train(
            src_texts + tgt_texts, vocab_size=cfg.vocab_size, seed=cfg.seed
        )
        return joint, joint
    if preset.tokenizer == "glove-word":
        src = WordTokenizer.train(src_texts, min_count=2, max_size=30000, lowercase=True)
        tgt = SentencePieceTokenizer.train(tgt_texts, vocab_size=cfg.vocab_size, seed=cfg.seed)
        return src, tgt
    raise ValueError(f"unknown tokenizer recipe {preset.tokenizer!r}")
