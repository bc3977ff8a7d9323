"""``attenzione evaluate``: BLEU and chrF (sacreBLEU) of a model on a test set."""

from __future__ import annotations

import json
import time
from pathlib import Path

import typer

from attenzione.cli.common import (
    at_least,
    attention_coverage_option,
    check_number_flags,
    check_writable,
    number_coverage_option,
    number_format_option,
    punctuation_coverage_option,
    set_number_format,
    user_errors,
    word_penalty_option,
)


def evaluate(
    data: Path = typer.Option(
        ..., "--data", help="Test pairs: TSV English<TAB>Italian (or a Moses prefix)."
    ),
    model: Path | None = typer.Option(
        None, "--model", "-m", help="Model directory (default: the shipped model)."
    ),
    precision: str = typer.Option(
        "fp32", "--precision", "-p", help="fp32 (reference), bf16 or int8 (faster, approximate)."
    ),
    beam: int = typer.Option(
        4, "--beam", "-b", "--beam-size", help="Beam size (1 = greedy).", callback=at_least(1)
    ),
    hypotheses: Path | None = typer.Option(
        None,
        "--hypotheses",
        help="Where to write the translations (default: DATA.hyp.txt beside the data).",
    ),
    limit: int | None = typer.Option(
        None, help="Score only the first N pairs.", callback=at_least(1)
    ),
    as_json: bool = typer.Option(False, "--json", help="Print the scores as JSON."),
    fix_numbers: bool = typer.Option(
        True,
        "--fix-numbers/--no-fix-numbers",
        help="Put back source numbers the model garbled and currency symbols it dropped "
        "(default), or score the output unrepaired.",
    ),
    number_coverage: float = number_coverage_option(),
    punctuation_coverage: float = punctuation_coverage_option(),
    attention_coverage: float = attention_coverage_option(),
    word_penalty: float = word_penalty_option(),
    number_format: str = number_format_option(),
    all_references: bool = typer.Option(
        False,
        "--all-references",
        help="Translate each distinct source once and score it against every reference it "
        "has in the data (multi-reference BLEU; the hypotheses file then has one line per "
        "distinct source).",
    ),
) -> None:
    """Translate a test set and score it with sacreBLEU."""
    with user_errors():
        from attenzione.data import load_corpus
        from attenzione.evaluation import copy_fidelity, corpus_scores, group_references
        from attenzione.translator import Translator

        check_number_flags(number_format, fix_numbers)
        pairs = load_corpus(data)[:limit]
        out = hypotheses or data.with_name(data.name + ".hyp.txt")
        check_writable(out, "--hypotheses")  # before the work, not after it
        translator = Translator.from_pretrained(model, precision=precision)
        set_number_format(translator, number_format)
        sources: list[str]
        references: list[str] | list[list[str]]
        if all_references:
            sources, references = group_references(pairs)
        else:
            sources, references = [s for s, _ in pairs], [t for _, t in pairs]
        started = time.perf_counter()
        hyps = translator.translate(
            sources,
            beam=beam,
            number_coverage=number_coverage,
            word_penalty=word_penalty,
            punctuation_coverage=punctuation_coverage,
            attention_coverage=attention_coverage,
            fix_numbers=fix_numbers,
        )
        seconds = time.perf_counter() - started
        scores = corpus_scores(hyps, references)
        fidelity = copy_fidelity(sources, hyps)
        out.write_text("".join(h + "\n" for h in hyps), encoding="utf-8")
        if as_json:
            typer.echo(
                json.dumps(
                    {
                        **scores.to_dict(),
                        "beam": beam,
                        "precision": precision,
                        "pairs": len(pairs),
                        "all_references": all_references,
                        "seconds": round(seconds, 2),
                        "hypotheses": str(out),
                        "fix_numbers": fix_numbers,
                        "number_format": translator.number_format if fix_numbers else None,
                        # greedy decoding has no search for coverage to rank
                        "number_coverage": number_coverage if beam > 1 else None,
                        "punctuation_coverage": punctuation_coverage if beam > 1 else None,
                        "attention_coverage": attention_coverage if beam > 1 else None,
                        # likewise, and a model without a word list has nothing to check
                        "word_penalty": word_penalty
                        if beam > 1 and translator.known_words is not None
                        else None,
                        "copied": {
                            k: {"kept": f.kept, "total": f.total, "share": round(f.share, 4)}
                            for k, f in fidelity.items()
                        },
                    },
                    indent=2,
                )
            )
        else:
            typer.echo(str(scores))
            kept = ", ".join(f"{k} {f}" for k, f in fidelity.items() if f.total)
            typer.echo(
                "copied unchanged: "
                + (kept or "nothing to copy (no numbers, names, URLs or code in the sources)")
                + ("" if fix_numbers else " (raw output: --no-fix-numbers)")
            )
            typer.echo(f"{len(sources)} sentences translated in {seconds:.1f} s ({precision})")
            typer.echo(f"hypotheses written to {out}")
