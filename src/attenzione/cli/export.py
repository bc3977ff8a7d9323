"""``attenzione export``: a model for transformers (``MarianMTModel``) or CTranslate2."""

from __future__ import annotations

import re
from pathlib import Path

import typer

from attenzione.cli.common import check_output_dir, fail, model_path, user_errors
from attenzione.cli.threads import apply_threads, threads_option

# the exporters attenzione.interop registers, spelled out: --help must not import torch
FORMATS = ("huggingface", "ctranslate2")
PAIR = re.compile(r"([a-z]{2,3})-([a-z]{2,3})")


def _model_dir(model: str) -> Path:
    """The model directory ``model`` names: a directory, or an installed pair (``en-it``)."""
    path = Path(model)
    if path.exists():
        return model_path(path, None, None)  # a training run: which of its models to give
    pair = PAIR.fullmatch(model.lower())
    if pair is None:
        fail(f"{model} is neither a model directory nor a language pair such as en-it")
    from attenzione.translator.registry import find

    return find(pair.group(1), pair.group(2)).path


def export(
    model: str = typer.Argument(
        ...,
        help="Model directory, or an installed pair such as en-it (`attenzione models`).",
        metavar="MODEL",
    ),
    fmt: str = typer.Option(
        ..., "--format", "-f", help="huggingface (MarianMTModel) or ctranslate2.", metavar="FORMAT"
    ),
    out: Path = typer.Option(..., "--out", "-o", help="Directory to write (new or empty)."),
    threads: int | None = threads_option(),
) -> None:
    """Write a model for the toolkits people deploy translation with.

    --format huggingface writes a directory that transformers loads with MarianMTModel and
    MarianTokenizer (writing it needs no transformers); --format ctranslate2 one that
    ctranslate2.Translator loads (needs pip install ctranslate2). Greedy decoding there gives
    the translations of `attenzione translate --raw --beam 1`; what a format cannot hold is
    refused in one line.
    """
    if fmt not in FORMATS:
        fail(f"--format must be one of {', '.join(FORMATS)}, got {fmt!r}")
    check_output_dir(out, "--out")
    with user_errors():
        apply_threads(threads)  # before torch is imported: it sets the wait policy
        directory = _model_dir(model)
        from attenzione.translator.export import export as write

        written = write(directory, fmt, out)
    typer.echo(f"exported {directory} for {fmt} into {written}")
