"""``attenzione translate``: English in, Italian out, with the shipped model by default."""

from __future__ import annotations

import sys
from pathlib import Path

import typer

from attenzione.cli.common import fail, user_errors


def translate(
    text: list[str] = typer.Argument(None, help="Sentences to translate (or use --input / stdin)."),
    input: Path | None = typer.Option(
        None, "--input", "-i", help="File with one sentence per line ('-' = stdin)."
    ),
    output: Path | None = typer.Option(
        None, "--output", "-o", help="Write translations here, one per line."
    ),
    model: Path | None = typer.Option(
        None, "--model", "-m", help="Model directory (default: the shipped en→it model)."
    ),
    precision: str = typer.Option(
        "fp32", "--precision", "-p", help="fp32 (reference), bf16 or int8 (faster, approximate)."
    ),
    beam: int = typer.Option(4, "--beam", "-b", help="Beam size (1 = greedy)."),
    sample: bool = typer.Option(False, "--sample", help="Sample instead of searching."),
    temperature: float = typer.Option(1.0, help="Sampling temperature."),
    top_k: int = typer.Option(0, help="Sample only among the k most likely tokens (0 = off)."),
    top_p: float = typer.Option(1.0, help="Nucleus sampling threshold."),
    seed: int | None = typer.Option(None, help="Seed for reproducible sampling."),
    length_penalty: float = typer.Option(
        1.0, help="Beam length penalty α: score = log p / length^α."
    ),
    n_best: int = typer.Option(
        1, help="Print the n best beam hypotheses with scores (one sentence)."
    ),
    batch_size: int = typer.Option(64, help="Sentences per decoding batch."),
) -> None:
    """Translate sentences with a trained model."""
    with user_errors():
        if text and input is not None:
            fail("give sentences as arguments or --input, not both")
        if text:
            lines = list(text)
        elif input is not None and str(input) != "-":
            if not input.is_file():
                fail(f"input file {input} does not exist")
            lines = input.read_text(encoding="utf-8").splitlines()
        elif input is not None or not sys.stdin.isatty():
            lines = sys.stdin.read().splitlines()
        else:
            fail("nothing to translate: give a sentence, --input FILE, or pipe text in")
        from attenzione.translator import Translator

        translator = Translator.from_pretrained(model, precision=precision)
        if n_best > 1:
            if len(lines) != 1:
                fail("--n-best works on one sentence at a time")
            for hyp, score in translator.translate_n_best(
                lines[0], beam=max(beam, n_best), n_best=n_best, length_penalty=length_penalty
            ):
                typer.echo(f"{score:8.4f}\t{hyp}")
            return
        results = translator.translate(
            lines,
            beam=beam,
            sample=sample,
            temperature=temperature,
            top_k=top_k,
            top_p=top_p,
            seed=seed,
            length_penalty=length_penalty,
            batch_size=batch_size,
        )
        if output is not None:
            output.write_text("".join(r + "\n" for r in results), encoding="utf-8")
            typer.echo(f"wrote {len(results)} translations to {output}", err=True)
        else:
            for r in results:
                typer.echo(r)
