"""``attenzione evaluate``: BLEU and chrF (sacreBLEU) of a model on a test set."""

from __future__ import annotations

import json
import time
from pathlib import Path

import typer

from attenzione.cli.common import (
    at_least,
    check_number_flags,
    check_search,
    check_steps,
    check_writable,
    fail,
    from_option,
    model_option,
    model_path,
    no_step_option,
    number_format_of,
    number_format_option,
    pipeline_of,
    raw_option,
    shortlist_option,
    tag_option,
    to_option,
    user_errors,
)
from attenzione.cli.output import replaced_text
from attenzione.cli.threads import apply_threads, threads_option


def evaluate(
    data: Path = typer.Option(
        ...,
        "--data",
        help="Test pairs: TSV source<TAB>reference, or a Moses prefix P (P.SRC and P.TGT, "
        "named by the model's languages).",
    ),
    model: Path | None = model_option(),
    source: str | None = from_option(),
    reverse: bool = typer.Option(
        False,
        "--reverse",
        help="The file's second column is the source and its first the reference (an en-it "
        "test set scored Italian→English: the it-en model unless --model/--from/--to say).",
    ),
    target: str | None = to_option(),
    precision: str = typer.Option(
        "fp32", "--precision", "-p", help="fp32 (reference), bf16 or int8 (faster, approximate)."
    ),
    shortlist: bool = shortlist_option(),
    beam: int = typer.Option(
        4, "--beam", "-b", "--beam-size", help="Beam size (1 = greedy).", callback=at_least(1)
    ),
    length_penalty: float = typer.Option(
        1.0, help="Beam length penalty α: score = log p / length^α.", callback=at_least(0)
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
    no_step: list[str] = no_step_option(),
    raw: bool = raw_option(),
    tag: str | None = tag_option(),
    compare_raw: bool = typer.Option(
        False,
        "--compare-raw",
        help="Also score the model alone (--raw) on the same data, side by side (its "
        "hypotheses go to HYPOTHESES.raw.txt).",
    ),
    number_format: str = number_format_option(),
    all_references: bool = typer.Option(
        False,
        "--all-references",
        help="Translate each distinct source once and score it against every reference it "
        "has in the data (multi-reference BLEU; the hypotheses file then has one line per "
        "distinct source).",
    ),
    threads: int | None = threads_option(),
) -> None:
    """Translate a test set and score it with sacreBLEU."""
    with user_errors():
        names = check_steps(no_step, raw)
        check_number_flags(number_format, names, raw)
        if compare_raw and raw:
            fail("--compare-raw already scores the raw model beside the pipeline: drop --raw")
        if reverse and model is None and source is None and target is None:
            source, target = "it", "en"  # an en-it file read the other way: the it→en model
        directory = model_path(model, source, target)
        if data.is_dir():
            fail(f"--data {data} is a directory; give a file")
        apply_threads(threads)  # before torch is imported: it sets the wait policy
        from attenzione.config import search_config
        from attenzione.data import load_corpus
        from attenzione.evaluation import copy_fidelity, corpus_scores, group_references
        from attenzione.translator.translator import Translator

        search = search_config(beam, length_penalty=length_penalty)
        check_search(directory, search)  # a beam too wide: one line, before the work
        from attenzione.languages import languages_of
        from attenzione.translator.model_dir import read_info

        # a Moses prefix's files are named by the model's languages (the other way: --reverse)
        pair = languages_of(read_info(directory))
        first, second = pair["source_language"] or "en", pair["target_language"] or "it"
        if reverse:
            first, second = second, first
        pairs = load_corpus(data, src_lang=first, tgt_lang=second)[:limit]
        if reverse:
            pairs = [(t, s) for s, t in pairs]
        out = hypotheses or data.with_name(data.name + ".hyp.txt")
        check_writable(out, "--hypotheses")  # before the work, not after it
        translator = Translator.from_pretrained(
            directory,
            precision=precision,
            shortlist=shortlist,
            number_format=number_format_of(number_format),
        )
        sources: list[str]
        references: list[str] | list[list[str]]
        if all_references:
            sources, references = group_references(pairs)
        else:
            sources, references = [s for s, _ in pairs], [t for _, t in pairs]
        runs = {"pipeline": pipeline_of(translator, names, raw)}
        if compare_raw:
            runs["raw"] = pipeline_of(translator, [], True)
        report: dict[str, dict[str, object]] = {}
        for name, (steps, terms) in runs.items():
            started = time.perf_counter()
            results = translator.translate(
                sources, search=search, terms=terms, steps=steps, tag=tag
            )
            seconds = time.perf_counter() - started
            hyps = [r.text for r in results]
            scores = corpus_scores(hyps, references)
            fidelity = copy_fidelity(sources, hyps)
            path = (
                out
                if name == "pipeline"
                else out.with_name(out.name.removesuffix(".txt") + ".raw.txt")
            )
            with replaced_text(path, newline="\n") as f:  # whole, or as it was
                f.write("".join(h + "\n" for h in hyps))
            report[name] = {
                **scores.to_dict(),
                "steps": list(steps.names),
                "terms": {k: v for k, v in terms.items() if v} if beam > 1 else {},
                "number_format": translator.number_format
                if "number-format" in steps.names
                else None,
                "tag": translator.default_tag if tag is None else tag or None,
                "seconds": round(seconds, 2),
                "sentences_per_second": round(len(sources) / seconds, 2) if seconds else None,
                "hypotheses": str(path),
                "copied": {
                    k: {"kept": f.kept, "total": f.total, "share": round(f.share, 4)}
                    for k, f in fidelity.items()
                },
            }
            if not as_json:
                label = "the model alone (--raw)" if name == "raw" or raw else "with the pipeline"
                typer.echo(f"{label}: {scores}")
                kept = ", ".join(f"{k} {f}" for k, f in fidelity.items() if f.total)
                typer.echo(
                    "  copied unchanged: "
                    + (kept or "nothing to copy (no numbers, names, URLs or code in the sources)")
                )
                typer.echo(
                    f"  {len(sources)} sentences translated in {seconds:.1f} s ({precision}); "
                    f"hypotheses written to {path}"
                )
        if as_json:
            main = report["pipeline"]
            extra = {"raw": report["raw"]} if compare_raw else {}
            typer.echo(
                json.dumps(
                    {
                        **main,
                        "beam": beam,
                        "precision": precision,
                        "pairs": len(pairs),
                        "all_references": all_references,
                        **extra,
                    },
                    indent=2,
                )
            )
