"""``attenzione import``: a Hugging Face Marian model (any OPUS-MT pair) as a model directory.

The directory it writes is an ordinary attenzione model directory — config, weights,
tokenizers, ``info.json`` with where the model came from, its pair and its licence — so
``translate``, ``evaluate``, ``attention``, ``--explain`` and ``serve`` take it as they take a
model trained here. The conversion (:mod:`attenzione.interop.marian`) reads the weights
without transformers and never runs code from the files.
"""

from __future__ import annotations

from pathlib import Path

import typer

from attenzione.cli.common import check_model_out, fail, language_code, user_errors
from attenzione.cli.threads import apply_threads, threads_option


def import_model(
    source: str = typer.Argument(
        ...,
        metavar="PATH_OR_HUB_ID",
        help="A Hugging Face Marian model directory (config.json, weights, source.spm, "
        "target.spm, vocab.json), or a Hugging Face hub id such as "
        "Helsinki-NLP/opus-mt-en-de to download (needs huggingface_hub and the internet).",
    ),
    out: Path = typer.Option(..., "--out", "-o", help="Model directory to write."),
    src_lang: str | None = typer.Option(
        None,
        "--src-lang",
        help="The source language, when the model does not say (its tokenizer_config.json "
        "or an opus-mt-SRC-TGT name).",
        callback=language_code,
    ),
    tgt_lang: str | None = typer.Option(
        None, "--tgt-lang", help="The target language, as --src-lang.", callback=language_code
    ),
    force: bool = typer.Option(False, "--force", help="Replace --out if it holds a model."),
    threads: int | None = threads_option(),
) -> None:
    """Import a Hugging Face MarianMTModel (OPUS-MT) as an attenzione model directory.

    The model computes what transformers computes (to float rounding); the directory then
    works with every command: `attenzione translate --model OUT`, `attenzione attention`,
    `attenzione serve` (put OUT in a folder of ATTENZIONE_MODELS to use it by its pair). No
    text step runs around an imported model (they are written for English and Italian), and
    beam search ranks by the model's length-normalised log-probability, as transformers does.
    """
    if (src_lang is None) != (tgt_lang is None):
        fail("give both --src-lang and --tgt-lang, or neither")
    path = Path(source).expanduser()
    with user_errors():
        apply_threads(threads)  # before torch is imported: it sets the wait policy
        check_model_out(out, force=force, keep={"the directory being imported": path})
        from attenzione import interop
        from attenzione.interop import hub
        from attenzione.translator.model_dir import write_model_dir

        if path.is_dir():
            directory, origin = path, str(path.resolve())
        elif path.exists():
            fail(f"{source} is a file: give the model's directory")
        elif not hub.HUB_ID.fullmatch(source):
            fail(f"{source}: no such directory (nor a hub id such as Helsinki-NLP/opus-mt-en-de)")
        else:
            typer.echo(f"downloading {source} from the Hugging Face hub …", err=True)
            directory, origin = hub.download(source), source
        given = (src_lang, tgt_lang) if src_lang is not None and tgt_lang is not None else None
        found = interop.load(directory, origin=origin, pair=given)
        info = found.info
        pair, licence = (info["source_language"], info["target_language"]), info["licence"]
        model = found.model
        write_model_dir(out, model, found.src_tokenizer, found.tgt_tokenizer, info=info)
    typer.echo(
        f"imported {origin} ({pair[0]}→{pair[1]}, {info['parameters']:,} parameters, licence: "
        f"{licence}) into {out}"
    )
