"""Preparing a run's data once: splits, tokenizers and encoded ids.

The first time a run starts, the corpus is read, cleaned, split into train/dev/test disjoint
by sentence (``attenzione.data.split_by_sentence``) and the splits are written into the run
directory (``data/train.tsv`` …) together with the trained tokenizers. A resumed run reads
those files back instead of redoing the work, so it sees exactly the same data and ids —
even if the original corpus file has changed or moved since.
"""

from __future__ import annotations

import gzip
import json
import random
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

from attenzione.config import TrainConfig
from attenzione.data import (
    SentencePieceTokenizer,
    Tokenizer,
    WordTokenizer,
    clean_pairs,
    load_corpus,
    load_tokenizer,
    normalize,
    read_pairs,
    split_by_sentence,
    write_pairs,
)
from attenzione.data.cleaning import CleaningConfig, clean_corpus, sentence_key
from attenzione.data.mixing import CorpusSpec, apply_weight, augment_numbers, split_tag, tagged
from attenzione.data.numbers import number_format_of
from attenzione.search import lexicon
from attenzione.training.presets import Preset
from attenzione.translator import model_dir

Pairs = list[tuple[str, str]]

HELD_OUT_SHARE = 10
"""Held-out sets the user did not size take one pair in this many of the first corpus each
(at most the configured size, 2000 by default): 3,000 pairs keep 2,400 to train on."""
HELD_OUT = ("dev_size", "test_size")


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
    extra_dev: dict[str, Pairs] = field(default_factory=dict)
    # how the training targets write the sources' numbers (attenzione.data.numbers)
    number_format: str = "keep"
    # the source text of each pair of ``train_ids`` (subword sampling segments it afresh)
    train_src: list[str] = field(default_factory=list)
    # (dev, test) sizes the split was asked for, when this call made it (None: read back)
    held_out: tuple[int, int] | None = None

    @cached_property
    def target_words(self) -> list[str]:
        """The words of the training targets: the model directory's known words (the word
        check of beam search, :mod:`attenzione.search.lexicon`)."""
        return lexicon.word_list(tgt for _, tgt in self.train)

    @cached_property
    def translated_words(self) -> list[str]:
        """The source words the training pairs always translate: not free for beam
        search's word check to copy (:func:`attenzione.search.lexicon.translated_words`)."""
        return lexicon.translated_words([(split_tag(s)[1], t) for s, t in self.train])


def prepare(
    cfg: TrainConfig,
    preset: Preset,
    run_dir: Path,
    *,
    write: bool,
    scaled: frozenset[str] = frozenset(),
) -> PreparedData:
    """Load (or, on a new run, create) the splits and tokenizers of ``run_dir``.

    ``write`` is False on non-zero ranks of a distributed run: they wait for rank 0 to have
    written the files, then read them. ``scaled`` names the held-out sizes (``dev_size``,
    ``test_size``) the user left to the corpus (:func:`held_out_sizes`).
    """
    data_dir = run_dir / "data"
    notes: list[str] = []
    held_out = None
    if cfg.subword_sampling and preset.tokenizer != "joint-spm" and not cfg.tokenizers_from:
        raise ValueError(_NO_SAMPLING.format(preset.name))
    if not (data_dir / "train.tsv").is_file():
        if not write:
            raise RuntimeError(f"{data_dir} was not prepared by rank 0")
        train, dev, test, extra_dev, held_out = _build_splits(cfg, data_dir, notes, scaled)
        if cfg.tokenizers_from:  # fine-tuning keeps the vocabulary of the model it continues
            src_tok, tgt_tok = model_dir.load_tokenizers(cfg.tokenizers_from)
        else:
            src_tok, tgt_tok = _train_tokenizers(cfg, preset, train)
        src_tok, tgt_tok = _with_tags(src_tok, tgt_tok, corpus_tags(cfg))
        src_tok.save(run_dir / "src_tokenizer")
        tgt_tok.save(run_dir / "tgt_tokenizer")
        write_pairs(train, data_dir / "train.tsv")  # last: its presence means "prepared"
    else:
        train = read_pairs(data_dir / "train.tsv")
        dev = read_pairs(data_dir / "dev.tsv")
        test_path = data_dir / "test.tsv"
        test = read_pairs(test_path) if test_path.stat().st_size else []
        extra_dev = {
            name: read_pairs(data_dir / f"dev-{name}.tsv") for name in _extra_dev_names(cfg)
        }
        src_tok = load_tokenizer(run_dir / "src_tokenizer")
        tgt_tok = load_tokenizer(run_dir / "tgt_tokenizer")
    if cfg.subword_sampling:  # before the long work: a word or BPE vocabulary cannot sample
        if not isinstance(src_tok, SentencePieceTokenizer):
            raise ValueError(_NO_SAMPLING.format(preset.name))
        src_tok.sample_batch(["a b"], alpha=cfg.subword_sampling, seed=cfg.seed)
    src_ids = encode_sources(src_tok, [s for s, _ in train])
    tgt_ids = tgt_tok.encode_batch([t for _, t in train])
    limit = cfg.max_src_tokens
    kept = [
        i for i, (s, t) in enumerate(zip(src_ids, tgt_ids, strict=True))
        if len(s) < limit and len(t) < limit
    ]  # fmt: skip
    train_ids = [(src_ids[i], tgt_ids[i]) for i in kept]
    train_src = [train[i][0] for i in kept] if cfg.subword_sampling else []
    dropped = len(train) - len(train_ids)
    if dropped:
        notes.append(f"left out {dropped} training pairs longer than {limit} tokens")
    number_format = number_format_of(train)
    if number_format != "keep":
        example = "1.234,5" if number_format == "comma" else "1,234.5"
        notes.append(
            f"the training targets write the sources' numbers {number_format}-style "
            f"({example}): so will this model's translations (info.json number_format)"
        )
    return PreparedData(
        train,
        dev,
        test,
        src_tok,
        tgt_tok,
        train_ids,
        dropped,
        notes,
        extra_dev,
        number_format,
        train_src,
        held_out,
    )


_NO_SAMPLING = (
    "--subword-sampling needs a SentencePiece source vocabulary; "
    "this run's (preset {}) is a word list"
)


def _cleaning(cfg: TrainConfig) -> CleaningConfig:
    return CleaningConfig(
        max_words=cfg.clean_max_words,
        max_ratio=cfg.clean_max_ratio,
        placeholders=cfg.clean_placeholders,
        identical_min_words=cfg.clean_identical_min_words,
        untranslated=cfg.clean_untranslated,
        strip_accelerators=cfg.strip_accelerators,
        src_lang=cfg.src_lang,
        tgt_lang=cfg.tgt_lang,
    )


def corpus_tags(cfg: TrainConfig) -> list[str]:
    """The corpus tags of a run's corpora, in the order they are first given."""
    tags = (CorpusSpec.parse(text).tag for text in cfg.extra_data)
    return list(dict.fromkeys(t for t in tags if t is not None))


def _with_tags(src: Tokenizer, tgt: Tokenizer, tags: list[str]) -> tuple[Tokenizer, Tokenizer]:
    """The tokenizers with the run's corpus tags as reserved source tokens (a joint
    vocabulary has them on both sides: decoding never writes one)."""
    if not tags:
        return src, tgt
    if not isinstance(src, SentencePieceTokenizer):
        raise ValueError("corpus tags need a SentencePiece source vocabulary")
    tagged_src = src.with_tags(tags)
    # a joint vocabulary (the same object, or the same model loaded twice) stays one
    joint = tgt is src or (isinstance(tgt, SentencePieceTokenizer) and tgt.proto == src.proto)
    return tagged_src, tagged_src if joint else tgt


def encode_sources(tok: Tokenizer, texts: list[str]) -> list[list[int]]:
    """Source ids of a run's stored sources: a tagged one's tag token first."""
    parts = [split_tag(t) for t in texts]
    ids = tok.encode_batch([text for _, text in parts])
    if not any(tag for tag, _ in parts):
        return ids
    if not isinstance(tok, SentencePieceTokenizer):
        raise ValueError("corpus tags need a SentencePiece source vocabulary")
    return [
        ids[i] if tag is None else [tok.tag_id(tag), *ids[i]] for i, (tag, _) in enumerate(parts)
    ]


def _extra_dev_names(cfg: TrainConfig) -> list[str]:
    return [name for name, _ in map(parse_named_path, cfg.extra_dev)]


def parse_named_path(text: str) -> tuple[str, str]:
    """``NAME=PATH`` or ``PATH`` (the name is then the file's stem): an extra dev set."""
    name, sep, path = text.partition("=")
    if sep and name and "/" not in name:
        return name, path
    return CorpusSpec(text).name.split(".")[0], text


def held_out_sizes(
    usable: int, dev_size: int, test_size: int, scaled: frozenset[str]
) -> tuple[int, int]:
    """The (dev, test) pairs to hold out of ``usable`` pairs: a size named in ``scaled`` (one
    the user did not give) is a tenth of the corpus, at least one dev pair, at most the
    configured size — so a large corpus holds out what it always did; a given size stays."""
    share = usable // HELD_OUT_SHARE
    dev = min(dev_size, max(1, share)) if "dev_size" in scaled else dev_size
    test = min(test_size, share) if "test_size" in scaled else test_size
    return dev, test


def _build_splits(
    cfg: TrainConfig, data_dir: Path, notes: list[str], scaled: frozenset[str]
) -> tuple[Pairs, Pairs, Pairs, dict[str, Pairs], tuple[int, int]]:
    """Read, clean, split and mix every corpus; write dev/test and the cleaning report."""
    cleaning = _cleaning(cfg)
    # sentences that must never be trained on: --exclude sets and the extra dev sets
    exclude: set[str] = set()
    for path in cfg.exclude:
        exclude |= read_sentence_keys(path)
    extra_dev: dict[str, Pairs] = {}
    for name, path in map(parse_named_path, cfg.extra_dev):
        pairs = _read(cfg, path)
        extra_dev[name] = [(normalize(s), normalize(t)) for s, t in pairs]
        exclude |= {sentence_key(x) for pair in pairs for x in pair}
    report: dict[str, dict[str, object]] = {}
    seen: set[tuple[str, str]] = set()
    primary = CorpusSpec(cfg.data, cfg.data_weight)
    stats: dict[str, object] = {}
    # a malformed line stops the run with file:line, unless the user asked to skip them
    raw = _read(cfg, cfg.data, stats)
    if stats.get("skipped"):
        notes.append(f"skipped {stats['skipped']} malformed lines of {cfg.data}")
    if cfg.reverse:
        notes.append("every corpus read the other way round (--reverse): second column → first")
    # The held-out split is drawn before the filters, from the normalised, deduplicated
    # corpus, exactly as runs before the filters existed drew it: a model trained with the
    # filters is then scored on the same dev/test sentences as one trained without them.
    pairs = clean_pairs(raw)
    dev_size, test_size = held_out_sizes(len(pairs), cfg.dev_size, cfg.test_size, scaled)
    splits = split_by_sentence(pairs, dev_size=dev_size, test_size=test_size, seed=cfg.seed)
    if not splits.train or not splits.dev:
        fit = held_out_sizes(len(pairs), cfg.dev_size, cfg.test_size, frozenset(HELD_OUT))
        fix = (
            f"give smaller held-out sets (--dev-size {fit[0]} --test-size {fit[1]}, or leave "
            "both out: a tenth of the corpus each)"
            if fit != (dev_size, test_size) and len(pairs) >= 2 * HELD_OUT_SHARE
            else "give a larger corpus"
        )
        raise ValueError(
            f"{cfg.data}: {len(pairs)} usable pairs leave {len(splits.train)} for training "
            f"and {len(splits.dev)} for dev after holding out --dev-size {dev_size} and "
            f"--test-size {test_size}: {fix}"
        )
    seen |= set(splits.dev) | set(splits.test)
    primary_train, rep = clean_corpus(splits.train, cleaning, exclude=exclude, seen=seen)
    rep.read = len(raw)
    rep.removed["duplicate"] += len(raw) - len(pairs)
    report[primary.name] = {"path": cfg.data, "weight": primary.weight, **rep.to_dict()}
    smaller = (dev_size, test_size) != (cfg.dev_size, cfg.test_size)
    chosen = " (a tenth of the corpus; --dev-size/--test-size to choose)" if smaller else ""
    notes.append(
        f"{primary.name}: {rep.summary()}; held out {len(splits.dev)} dev + "
        f"{len(splits.test)} test pairs{chosen}"
    )
    # the other corpora must not contain the held-out sentences either
    exclude |= {sentence_key(x) for pair in splits.dev + splits.test for x in pair}
    rng = random.Random(cfg.seed)
    train = apply_weight(primary_train, primary.weight, rng)
    unique = list(primary_train)
    for text in cfg.extra_data:
        spec = CorpusSpec.parse(text)
        stats = {}
        raw = _read(cfg, spec.path, stats)
        if stats.get("skipped"):
            notes.append(f"skipped {stats['skipped']} malformed lines of {spec.path}")
        pairs, rep = clean_corpus(raw, cleaning, exclude=exclude, seen=seen)
        report[spec.name] = {"path": spec.path, "weight": spec.weight, **rep.to_dict()}
        notes.append(f"{spec.name} (weight {spec.weight:g}): {rep.summary()}")
        if spec.tag is not None:  # its sources carry the tag's token from here on
            pairs = [(tagged(s, spec.tag), t) for s, t in pairs]
        if pairs:
            train += apply_weight(pairs, spec.weight, rng)
            unique += pairs
    if cfg.number_augment > 0:
        added = augment_numbers(unique, cfg.number_augment, rng)
        train += added
        report["number-augmentation"] = {"added": len(added), "share": cfg.number_augment}
        notes.append(f"number augmentation: {len(added)} renumbered copies added")
    data_dir.mkdir(parents=True, exist_ok=True)
    write_pairs(splits.dev, data_dir / "dev.tsv")
    write_pairs(splits.test, data_dir / "test.tsv")
    for name, pairs in extra_dev.items():
        write_pairs(pairs, data_dir / f"dev-{name}.tsv")
    (data_dir / "cleaning.json").write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    notes.append(f"training mix: {len(train)} pairs ({len(unique)} distinct before weighting)")
    return train, splits.dev, splits.test, extra_dev, (dev_size, test_size)


def _read(cfg: TrainConfig, path: str | Path, stats: dict[str, Any] | None = None) -> Pairs:
    """A corpus as the run reads it: a TSV, or a Moses prefix whose files are named by the
    pair's languages (``P.de`` and ``P.en``), turned round with ``--reverse`` (whose files are
    the other way: the first column, and the first language, is the run's target)."""
    first, second = (cfg.tgt_lang, cfg.src_lang) if cfg.reverse else (cfg.src_lang, cfg.tgt_lang)
    pairs = load_corpus(
        path, src_lang=first, tgt_lang=second, skip_bad=cfg.skip_bad_lines, stats=stats
    )
    return [(t, s) for s, t in pairs] if cfg.reverse else pairs


def read_sentence_keys(path: str | Path) -> set[str]:
    """Every sentence of a test set to exclude: both columns of a TSV, or one per line."""
    p = Path(path)
    if not p.is_file():
        raise FileNotFoundError(f"--exclude: {p} does not exist")
    opener = gzip.open if p.suffix == ".gz" else open
    keys: set[str] = set()
    with opener(p, "rt", encoding="utf-8", errors="replace") as f:
        for line in f:
            for field_ in line.rstrip("\n").split("\t")[:2]:
                if field_.strip():
                    keys.add(sentence_key(field_))
    return keys


def _train_tokenizers(
    cfg: TrainConfig, preset: Preset, train: Pairs
) -> tuple[Tokenizer, Tokenizer]:
    """The preset's tokenizer recipe, trained on the training split only (never dev/test),
    without the corpus tags (reserved tokens, added after)."""
    src_texts = [split_tag(s)[1] for s, _ in train]
    tgt_texts = [t for _, t in train]
    if preset.tokenizer == "joint-spm":
        texts = src_texts + tgt_texts
        if cfg.tokenizer_sample and len(texts) > cfg.tokenizer_sample:
            # a seeded sample keeps SentencePiece's time and memory bounded on big mixes
            texts = random.Random(cfg.seed).sample(texts, cfg.tokenizer_sample)
        joint = SentencePieceTokenizer.train(
            texts,
            vocab_size=cfg.vocab_size,
            seed=cfg.seed,
            split_digits=cfg.split_digits,
            byte_fallback=cfg.byte_fallback,
            # with byte fallback the rarest characters can be left to bytes rather than each
            # take a vocabulary entry the model sees a handful of times
            character_coverage=0.9999 if cfg.byte_fallback else 1.0,
            # and nothing is rewritten: what comes in is what the model sees and gives back
            normalization="identity" if cfg.byte_fallback else "nmt_nfkc",
        )
        return joint, joint
    if preset.tokenizer == "glove-word":
        src = WordTokenizer.train(src_texts, min_count=2, max_size=30000, lowercase=True)
        tgt = SentencePieceTokenizer.train(tgt_texts, vocab_size=cfg.vocab_size, seed=cfg.seed)
        return src, tgt
    raise ValueError(f"unknown tokenizer recipe {preset.tokenizer!r}")
