"""``attenzione train``: train or resume a model (also under ``torchrun`` for several processes)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import typer

from attenzione.cli.common import at_least, fail, given, in_range, language_code, user_errors
from attenzione.cli.threads import apply_threads

# CLI parameters that set several TrainConfig fields; the others set the field of their name.
FIELDS_OF = {"data": {"data", "data_weight", "extra_data"}}


def train(
    ctx: typer.Context,
    data: list[str] = typer.Option(
        [],
        "--data",
        help="Corpus: TSV (source<TAB>target[<TAB>…]), optionally .gz, or a Moses prefix P "
        "(P.SRC and P.TGT, named by --src-lang/--tgt-lang); "
        "PATH:WEIGHT repeats it WEIGHT times an epoch (0.5 keeps half). Repeat --data for "
        "several corpora: dev/test are split from the first. Not needed with --resume (the "
        "run keeps its prepared data).",
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
    clean_max_words: int = typer.Option(
        100, help="Drop pairs with a side longer (0 = off).", callback=at_least(0)
    ),
    clean_max_ratio: float = typer.Option(
        3.0,
        help="Drop pairs one side of which is this many times longer (0 = off).",
        callback=at_least(0),
    ),
    clean_placeholders: bool = typer.Option(
        True, help="Drop pairs whose placeholders/tags (%s, {name}, <b>) differ between sides."
    ),
    clean_identical_min_words: int = typer.Option(
        3,
        help="Drop pairs with identical sides of at least this many words (0 = off).",
        callback=at_least(0),
    ),
    clean_untranslated: bool = typer.Option(
        True, help="Drop pairs whose target reads as the source language."
    ),
    strip_accelerators: bool = typer.Option(
        True, help="Remove keyboard accelerators (_File, &Apri) found on both sides."
    ),
    src_lang: str = typer.Option(
        "en",
        help="The source language's code, for the untranslated filter (it knows en and it; "
        "with another code it keeps every pair).",
        callback=language_code,
    ),
    tgt_lang: str = typer.Option(
        "it", help="The target language's code, as --src-lang.", callback=language_code
    ),
    reverse: bool = typer.Option(
        False,
        "--reverse",
        help="Read every corpus the other way round: the second column is the source (with "
        "--src-lang it --tgt-lang en, an Italian→English model from en-it files). Dev and "
        "test hold the same pairs as a forward run's with the same --seed, turned round.",
    ),
    no_clean: bool = typer.Option(
        False, "--no-clean", help="Switch every cleaning filter off (duplicates still go)."
    ),
    number_augment: float | None = typer.Option(
        None,
        help="Share of number-bearing pairs added again with random numbers (0–1).",
        callback=in_range(0, 1),
    ),
    subword_sampling: float = typer.Option(
        0.0,
        help="Subword regularisation: segment each batch's sources afresh, drawn from "
        "their 64 best SentencePiece segmentations with this alpha (0–1; 0 = off, lower = "
        "more varied; a unigram vocabulary). Sampled sources are longer (0.3: about 11%), "
        "and so are batches: --max-tokens counts the best segmentation.",
        callback=in_range(0, 1),
    ),
    split_digits: bool | None = typer.Option(
        None, "--split-digits/--no-split-digits", help="SentencePiece: one piece per digit."
    ),
    byte_fallback: bool | None = typer.Option(
        None, "--byte-fallback/--no-byte-fallback", help="SentencePiece: bytes instead of <unk>."
    ),
    tokenizer_sample: int | None = typer.Option(
        None,
        help="Train SentencePiece on a seeded sample of this many sentences (0 = all; "
        "default: the preset's).",
        callback=at_least(0),
    ),
    init_from: Path | None = typer.Option(
        None,
        help="Start from this trained model directory's weights (same shape as the preset, "
        "or fewer layers; a different vocabulary is carried over piece by piece). Ignored "
        "with --resume.",
    ),
    tokenizers_from: Path | None = typer.Option(
        None,
        help="Use this model directory's tokenizers instead of training new ones (with "
        "--init-from the same directory, fine-tuning keeps the model's vocabulary).",
    ),
    out: Path = typer.Option(
        ..., "--out", help="Run directory (splits, tokenizers, last/, best/, metrics)."
    ),
    preset: str = typer.Option(
        "small", help="Model preset: tiny, compact, glove50, small, broad or base."
    ),
    enc_layers: int | None = typer.Option(
        None,
        help="Encoder layers (default: the preset's). With --init-from a model that has "
        "fewer, the new layers start as exact identities: the run starts from its translations.",
        callback=at_least(1),
    ),
    dec_layers: int | None = typer.Option(
        None,
        help="Decoder layers (default: the preset's; grows as --enc-layers does).",
        callback=at_least(1),
    ),
    d_ff: int | None = typer.Option(
        None,
        "--d-ff",
        help="Feed-forward width (default: the preset's). With --init-from a model that has a "
        "narrower one, the new units start with zero output weights: the run starts from its "
        "translations.",
        callback=at_least(1),
    ),
    d_model: int | None = typer.Option(
        None,
        "--d-model",
        help="Model width d_model (default: the preset's; with --glove, the file's width).",
        callback=at_least(1),
    ),
    heads: int | None = typer.Option(
        None,
        "--heads",
        help="Attention heads A (default: the preset's). A × d_head need not equal d_model: "
        "W^Q, W^K, W^V are d_model × (A·d_head) and W^O maps back.",
        callback=at_least(1),
    ),
    d_head: int | None = typer.Option(
        None, "--d-head", help="Each head's width (default: the preset's).", callback=at_least(1)
    ),
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
    cooldown: float = typer.Option(
        0.0,
        help="Bring the learning rate linearly down to 0 over this last fraction of the "
        "budget (--max-steps, else this invocation's --max-minutes); 0 = no cool-down.",
        callback=in_range(0, 1),
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
    save_every_minutes: float = typer.Option(
        10.0,
        help="Also save last/ every N minutes between evaluations.",
        callback=in_range(0, float("inf"), low_open=True),
    ),
    keep_snapshots: int = typer.Option(
        0,
        help="Keep the weights of the last K saves of last/ in RUN/snapshots/, for "
        "`attenzione average` (0 = none).",
        callback=at_least(0),
    ),
    dev_size: int = typer.Option(
        2000,
        help="Held-out dev pairs (disjoint by sentence). Default: a tenth of the first "
        "corpus, at most 2000.",
        callback=at_least(1),
        show_default=False,
    ),
    test_size: int = typer.Option(
        2000,
        help="Held-out test pairs (disjoint by sentence; 0 = none). Default: as --dev-size.",
        callback=at_least(0),
        show_default=False,
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
        None,
        help="A GloVe text file (glove.6B.300d.txt, any of 50, 100, 200 or 300 dimensions): the "
        "GloVe design (a word-level source vocabulary starting from these vectors, --preset "
        "glove50), d_model set from the file. Without it glove50 uses the packaged 6B 50d.",
    ),
    freeze_embeddings: bool = typer.Option(False, help="Keep the GloVe source embeddings fixed."),
    num_threads: int | None = typer.Option(
        None,
        "--threads",
        "--num-threads",
        help="torch threads (default: the cores other processes leave free, at least 1; "
        "OMP_NUM_THREADS if set, as torchrun sets it).",
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
        if not data and not resume:
            fail("give the corpus to train on with --data PATH (repeatable)")
        glove_design(ctx)
        apply_threads(num_threads)  # before torch is imported: it sets the wait policy
        from attenzione.training.trainer import train as run_training

        cfg = train_config(ctx.params)
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


def glove_design(ctx: typer.Context) -> None:
    """``--glove FILE`` is the GloVe design: without ``--preset`` it picks ``glove50``; with
    a preset whose source is not GloVe's words it is a mistake, said in one line."""
    from attenzione.training.presets import get_preset

    params = ctx.params
    if params["glove"] is None or get_preset(params["preset"]).tokenizer == "glove-word":
        return
    if given(ctx, "preset"):
        fail(
            f"--glove starts a word-level source vocabulary from GloVe's vectors: that is "
            f"--preset glove50, not {params['preset']!r} (leave --preset out, or drop --glove)"
        )
    params["preset"] = "glove50"


# Parameters that are not TrainConfig fields (or need translating into them).
NOT_FIELDS = {
    "resume", "no_clean", "data", "exclude", "glove", "out", "init_from", "tokenizers_from"
}  # fmt: skip
CLEANING = ("clean_max_words", "clean_max_ratio", "clean_identical_min_words")
SWITCHES = ("clean_placeholders", "clean_untranslated", "strip_accelerators")


def train_config(params: dict[str, Any]) -> Any:
    """The TrainConfig the parameters describe: each sets the field of its name; an option
    left unset (None) takes the preset's recommendation, then TrainConfig's own default."""
    from dataclasses import asdict, fields

    from attenzione.config import TrainConfig
    from attenzione.data.mixing import CorpusSpec
    from attenzione.training.presets import get_preset

    names = {f.name for f in fields(TrainConfig)}
    values = {k: v for k, v in params.items() if k in names and k not in NOT_FIELDS}
    for name, recommended in asdict(get_preset(params["preset"]).train).items():
        if values.get(name) is None:
            values[name] = recommended
    off = params["no_clean"]
    for name in CLEANING:  # 0 (or --no-clean) switches a threshold filter off
        values[name] = None if off or values[name] <= 0 else values[name]
    for name in SWITCHES:
        values[name] = values[name] and not off
    # --resume without --data: the run's own corpora are kept (the placeholder is replaced)
    corpora = params["data"] or ["(the run's corpus)"]
    primary = CorpusSpec.parse(corpora[0])
    if primary.tag is not None:
        raise ValueError(
            f"the first --data corpus ({primary.path}) is the one dev and test are drawn from "
            "and cannot carry a tag: tag the others"
        )
    values.update(
        data=primary.path,
        data_weight=primary.weight,
        extra_data=tuple(str(CorpusSpec.parse(d)) for d in corpora[1:]),
        exclude=tuple(str(e) for e in params["exclude"]),
        extra_dev=tuple(params["extra_dev"]),
        glove=str(params["glove"]) if params["glove"] else None,
        init_from=str(params["init_from"]) if params["init_from"] else None,
        tokenizers_from=str(params["tokenizers_from"]) if params["tokenizers_from"] else None,
        out=str(params["out"]),
    )
    return TrainConfig(**values)
