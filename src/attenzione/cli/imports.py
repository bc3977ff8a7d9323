"""``attenzione import``: a Hugging Face Marian model (any OPUS-MT pair) as a model directory.

The directory it writes is an ordinary attenzione model directory — config, weights,
tokenizers, ``info.json`` with where the model came from, its pair and its licence — so
``translate``, ``evaluate``, ``attention``, ``--explain`` and ``serve`` take it as they take a
model trained here. The conversion (:mod:`attenzione.translator.marian`) reads the weights
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
        from attenzione.data.marian_tokenizer import MarianVocabTokenizer
        from attenzione.translator import marian
        from attenzione.translator.model_dir import write_model_dir

        if path.is_dir():
            directory, origin = path, str(path.resolve())
        elif path.exists():
            fail(f"{source} is a file: give the model's directory")
        elif not marian.HUB_ID.fullmatch(source):
            fail(f"{source}: no such directory (nor a hub id such as Helsinki-NLP/opus-mt-en-de)")
        else:
            typer.echo(f"downloading {source} from the Hugging Face hub …", err=True)
            directory, origin = marian.download(source), source
        src_tok = MarianVocabTokenizer.from_hf_dir(directory, side="source")
        tgt_tok = MarianVocabTokenizer.from_hf_dir(directory, side="target")
        model = marian.load_marian(directory, unk_id=src_tok.unk_id)
        cfg = model.config
        for side, tok in (("source", src_tok), ("target", tgt_tok)):
            theirs = (tok.pad_id, tok.eos_id, tok.unk_id)
            if theirs != (cfg.pad_id, cfg.eos_id, cfg.unk_id):
                fail(
                    f"{directory}: the {side} vocabulary numbers <pad>, </s>, <unk> {theirs} "
                    f"but config.json says {(cfg.pad_id, cfg.eos_id, cfg.unk_id)}"
                )
        if src_lang is not None and tgt_lang is not None:
            pair = (src_lang, tgt_lang)
        else:
            found = marian.language_pair(directory, origin)
            if found is None:
                fail(f"cannot tell which pair {source} translates: give --src-lang and --tgt-lang")
            pair = found
        licence = marian.licence(directory)
        info = marian.import_info(model, origin, pair, licence)
        write_model_dir(out, model, src_tok, tgt_tok, info=info)
    typer.echo(
        f"imported {origin} ({pair[0]}→{pair[1]}, {info['parameters']:,} parameters, licence: "
        f"{licence}) into {out}"
    )
