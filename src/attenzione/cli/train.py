"""``attenzione train``: train or resume a model (also under ``torchrun`` for several processes)."""

from __future__ import annotations

import os
from pathlib import Path

import typer

from attenzione.cli.common import at_least, given, in_range, user_errors

# CLI parameters that set several TrainConfig fields; the others set the field of their name.
FIELDS_OF = {"data": {"data", "data_weight", "extra_data"}}


def train(
    ctx: typer.Context,
    data: list[str] = typer.Option(
        ...,
        "--data",
        help="Corpus: TSV (English<TAB>Italian[<TAB>…]), optionally .gz, or a Moses prefix; "
        "PATH:WEIGHT repeats it WEIGHT times an epoch (0.5 keeps half). Repeat --data for "
        "several corpora: dev/test are split from the first.",
    ),
    exclude: list[Path] = typer.Option(
        [],
        "--exclude",
        help="A test set (TSV or one sentence a line) whose sentences must never be trained "
        "on; repeatable.",
    ),
    extra_dev: list[str] = typer.Option(
        [],
        "--extra-dev",
        help="Another dev set [NAME=]PATH scored at every evaluation (and excluded from "
        "training); repeatable.",
    ),
    clean_max_words: int = typer.Option(100, help="Drop pairs with a side longer (0 = off)."),
    clean_max_ratio: float = typer.Option(
        3.0, help="Drop pairs one side of which is this many times longer (0 = off)."
    ),
    clean_placeholders: bool = typer.Option(
        True, help="Drop pairs whose placeholders/tags (%s, {name}, <b>) differ between sides."
    ),
    clean_identical_min_words: int = typer.Option(
        3, help="Drop pairs with identical sides of at least this many words (0 = off)."
    ),
    clean_untranslated: bool = typer.Option(
        True, help="Drop pairs whose target reads as the source language."
    ),
    strip_accelerators: bool = typer.Option(
        True, help="Remove keyboard accelerators (_File, &Apri) found on both sides."
    ),
    no_clean: bool = typer.Option(
        False, "--no-clean", help="Switch every cleaning filter off (duplicates still go)."
    ),
    number_augment: float | None = typer.Option(
        None, help="Share of number-bearing pairs added again with random numbers (0–1)."
    ),
    split_digits: bool | None = typer.Option(
        None, "--split-digits/--no-split-digits", help="SentencePiece: one piece per digit."
    ),
    byte_fallback: bool | None = typer.Option(
        None, "--byte-fallback/--no-byte-fallback", help="SentencePiece: bytes instead of <unk>."
    ),
    out: Path = typer.Option(
        ..., "--out", help="Run directory (splits, tokenizers, last/, best/, metrics)."
    ),
    preset: str = typer.Option("small", help="Model preset: tiny, glove50, small, broad or base."),
    epochs: int | None = typer.Option(
        None, help="Stop after this many epochs in total.", callback=at_least(1)
    ),
    max_steps: int | None = typer.Option(
        None,
        help="Stop at this optimizer step (counted from the run's start).",
        callback=at_least(1),
    ),
    max_minutes: float | None = typer.Option(
        None,
        help="Stop after this many minutes of this invocation.",
        callback=in_range(0, float("inf"), low_open=True),
    ),
    resume: bool = typer.Option(
        False, "--resume", help="Continue the run in --out exactly where it stopped."
    ),
    seed: int = typer.Option(
        1, help="Seed for the split, the batch order and the initial weights."
    ),
    max_tokens: int = typer.Option(
        3000,
        help="Token budget per batch (padded source or target rectangle).",
        callback=at_least(16),
    ),
    lr: float | None = typer.Option(
        None,
        help="Peak learning rate (default: the preset's).",
        callback=in_range(0, float("inf"), low_open=True),
    ),
    warmup_steps: int | None = typer.Option(
        None, help="Warm-up steps (default: the preset's).", callback=at_least(1)
    ),
    bf16: bool = typer.Option(
        False,
        "--bf16",
        help="bf16 autocast on CPU: several times faster on CPUs with AVX-512 BF16 or AMX, "
        "emulated and slower on others (the run notes which).",
    ),
    eval_every: int = typer.Option(
        1000, help="Evaluate dev loss/BLEU and save every N steps.", callback=at_least(1)
    ),
    patience: int = typer.Option(
        0,
        help="Stop after N evaluations without a dev BLEU gain (0 = never).",
        callback=at_least(0),
    ),
    dev_size: int = typer.Option(
        2000, help="Held-out dev pairs (disjoint by sentence).", callback=at_least(1)
    ),
    test_size: int = typer.Option(
        2000, help="Held-out test pairs (disjoint by sentence).", callback=at_least(0)
    ),
    skip_bad_lines: bool = typer.Option(
        False,
        "--skip-bad-lines",
        help="Skip malformed corpus lines and report how many (default: stop at the first, "
        "naming file and line).",
    ),
    vocab_size: int | None = typer.Option(
        None, help="SentencePiece vocabulary size (default: the preset's).", callback=at_least(16)
    ),
    glove: Path | None = typer.Option(
        None, help="GloVe text file for the glove50 preset (default: the packaged 6B 50d)."
    ),
    freeze_embeddings: bool = typer.Option(False, help="Keep the GloVe source embeddings fixed."),
    num_threads: int | None = typer.Option(
        None,
        "--threads",
        "--num-threads",
        help="torch threads (default: torch's choice).",
        callback=at_least(1),
    ),
    device: str = typer.Option(
        "auto", help="auto (a GPU if there is one), cpu or cuda: where model and batches live."
    ),
    attribution: str | None = typer.Option(
        None,
        help="Whom info.json credits for the data (default: what the corpora say, e.g. "
        "Tatoeba's third column; none if they say nothing).",
    ),
    progress: bool = typer.Option(True, "--progress/--no-progress", help="A progress bar."),
) -> None:
    """Train an English→Italian (or any pair) model on a parallel corpus."""
    with user_errors():
        from attenzione.config import TrainConfig
        from attenzione.data.mixing import CorpusSpec
        from attenzione.training.presets import get_preset
        from attenzione.training.trainer import train as run_training

        p = get_preset(preset)
        defaults = p.train
        primary = CorpusSpec.parse(data[0])
        off = no_clean
        cfg = TrainConfig(
            data=primary.path,
            data_weight=primary.weight,
            extra_data=tuple(str(CorpusSpec.parse(d)) for d in data[1:]),
            exclude=tuple(str(e) for e in exclude),
            extra_dev=tuple(extra_dev),
            clean_max_words=None if off or clean_max_words <= 0 else clean_max_words,
            clean_max_ratio=None if off or clean_max_ratio <= 0 else clean_max_ratio,
            clean_placeholders=clean_placeholders and not off,
            clean_identical_min_words=None
            if off or clean_identical_min_words <= 0
            else clean_identical_min_words,
            clean_untranslated=clean_untranslated and not off,
            strip_accelerators=strip_accelerators and not off,
            number_augment=number_augment
            if number_augment is not None
            else defaults.number_augment,
            split_digits=split_digits if split_digits is not None else defaults.split_digits,
            byte_fallback=byte_fallback if byte_fallback is not None else defaults.byte_fallback,
            tokenizer_sample=defaults.tokenizer_sample,
            out=str(out),
            preset=preset,
            epochs=epochs,
            max_steps=max_steps,
            max_minutes=max_minutes,
            seed=seed,
            max_tokens=max_tokens,
            lr=lr if lr is not None else defaults.lr,
            warmup_steps=warmup_steps if warmup_steps is not None else defaults.warmup_steps,
            bf16=bf16,
            eval_every=eval_every,
            patience=patience,
            dev_size=dev_size,
            test_size=test_size,
            skip_bad_lines=skip_bad_lines,
            vocab_size=vocab_size if vocab_size is not None else defaults.vocab_size,
            glove=str(glove) if glove else None,
            freeze_embeddings=freeze_embeddings,
            num_threads=num_threads,
            device=device,
            attribution=attribution,
            progress=progress,
        )
        # what the user really set: --resume reports the ones the run keeps instead
        explicit = set().union(
            *(FIELDS_OF.get(name, {name}) for name in ctx.params if given(ctx, name))
        )
        summary = run_training(
            cfg, resume=resume, log=lambda m: typer.echo(m, err=True), explicit=explicit
        )
        if int(os.environ.get("RANK", "0")) != 0:
            return  # under torchrun only rank 0 reports
        typer.echo(f"run: {out}  best: {out / 'best'}  last: {out / 'last'}")
        if "dev_bleu" in summary:
            typer.echo(
                f"dev BLEU (greedy) {summary['dev_bleu']:.2f}  chrF {summary['dev_chrf']:.2f}"
            )
