"""What each text step and ranking term is worth: the table of docs/pipeline.md.

    python tools/step_table.py --data NAME=FILE.tsv [--data NAME=FILE.tsv …] --out DIR
        [--model DIR] [--beam 4] [--only=CONFIG,…] [--combined NAME,NAME]

Translates each data set (English<TAB>Italian) with the raw model (no text step, no ranking
term), the full pipeline (the model's own, from its info.json), and the full pipeline less
each step and each term in turn; writes each configuration's hypotheses and scores to
``DIR/CONFIG.NAME.hyp`` and ``DIR/CONFIG.NAME.json`` (a configuration already scored is not
run again), and prints the table as Markdown. BLEU and chrF are sacreBLEU's; "numbers" is
the share of the sources' numbers found unchanged in the translations. The scores do not
depend on the load of the machine; ``--speed N`` instead times the raw model and the full
pipeline on the first N sentences of each set (twice each, the better kept), which needs an
otherwise idle machine.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from attenzione.config import DecodeConfig, search_config
from attenzione.data import read_pairs
from attenzione.evaluation import copy_fidelity, corpus_scores
from attenzione.pipeline import Pipeline
from attenzione.search.decoding import Hypothesis
from attenzione.search.registry import Terms, switches
from attenzione.translator.translator import Translator


def configurations(
    tr: Translator,
    combined: list[str] = (),  # type: ignore[assignment]
) -> dict[str, tuple[Pipeline, Terms]]:
    """raw, full, and full less each step and each term (in the pipeline's order), and less
    each ``combined`` set of them ("a,b": the steps and terms a and b off together)."""
    full = tr.pipeline
    out = {"raw": (Pipeline.build(()), Terms.none()), "full": (full, tr.terms)}
    for name in full.names:
        out[f"-{name}"] = (Pipeline.build(full.names, off=[name]), tr.terms)
    for name in switches():
        if tr.terms[name]:
            out[f"-{name}"] = (full, tr.terms.without([name]))
    for combo in combined:
        names = combo.split(",")
        steps = [n for n in names if n not in switches()]
        terms = [n for n in names if n in switches()]
        out["-" + "-".join(names)] = (
            Pipeline.build(full.names, off=steps),
            tr.terms.without(terms),
        )
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", action="append", required=True, help="NAME=FILE.tsv")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--model", type=Path, default=None)
    parser.add_argument("--beam", type=int, default=4)
    parser.add_argument(
        "--only", default=None, help="configurations to run, comma-separated (--only=full,-names)"
    )
    parser.add_argument(
        "--combined", action="append", default=[], help="NAME,NAME…: these off together, one row"
    )
    parser.add_argument("--speed", type=int, default=0, help="time raw and full on N sentences")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    tr = Translator.from_pretrained(args.model)
    sets = {}
    for spec in args.data:
        name, _, path = spec.partition("=")
        sets[name] = read_pairs(Path(path))
    search = search_config(args.beam)
    configs = configurations(tr, args.combined)
    if args.speed:
        speed(tr, sets, configs, search, args.speed, args.combined)
        return
    decoded: dict[tuple[str, tuple[tuple[int, ...], ...]], list[list[Hypothesis]]] = {}
    for config, (steps, terms) in configs.items():
        if args.only is not None and config not in args.only.split(","):
            continue
        for name, pairs in sets.items():
            target = args.out / f"{config}.{name}.json"
            if target.exists():
                continue
            sources = [s for s, _ in pairs]
            started = time.perf_counter()
            hyps = run(tr, sources, search, steps, terms, decoded, name)
            seconds = time.perf_counter() - started
            scores = corpus_scores(hyps, [t for _, t in pairs])
            numbers = copy_fidelity(sources, hyps)["numbers"]
            (args.out / f"{config}.{name}.hyp").write_text("".join(h + "\n" for h in hyps))
            record = {
                "bleu": round(scores.bleu, 2),
                "chrf": round(scores.chrf, 2),
                "numbers": [numbers.kept, numbers.total],
                "seconds": round(seconds, 1),
                "steps": list(steps.names),
                "terms": dict(terms),
            }
            target.write_text(json.dumps(record, indent=2) + "\n")
            print(config, name, json.dumps(record), flush=True)
    print(table(args.out, list(configs), list(sets)))


def run(
    tr: Translator,
    sources: list[str],
    search: DecodeConfig,
    steps: Pipeline,
    terms: Terms,
    decoded: dict[tuple[str, tuple[tuple[int, ...], ...]], list[list[Hypothesis]]],
    name: str,
) -> list[str]:
    """The best translation of each source with ``steps`` and ``terms`` — what
    ``tr.translate`` gives, done by hand so that the model's work is shared: a configuration
    whose model inputs are those of one already decoded with the same terms (a step that
    changes nothing these sources have, or acts only on the output) reuses its hypotheses,
    decoded in the same batches, and differs only in what the steps restore."""
    lines = [steps.prepare(text, tr.ctx) for text in sources]
    inputs = [tr.encode_source(seg.text) for segs in lines for seg in segs if seg.translate]
    key = (f"{name}|{json.dumps(dict(terms))}", tuple(map(tuple, inputs)))
    if key not in decoded:
        decoded[key] = tr.translate_ids(inputs, search=search, terms=terms)
    hyps = iter(decoded[key])
    ids = iter(inputs)
    out = []
    for segs in lines:
        texts = []
        for seg in segs:
            if not seg.translate:
                texts.append(seg.text)
                continue
            best = next(hyps)[0]
            seg.ids = next(ids)
            decoded_text = tr.tgt_tokenizer.decode(best.tokens)
            texts.append(steps.restore(seg, decoded_text, tr.ctx, best.tokens))
        out.append(steps.join(segs, texts))
    return out


def speed(
    tr: Translator,
    sets: dict[str, list[tuple[str, str]]],
    configs: dict[str, tuple[Pipeline, Terms]],
    search: DecodeConfig,
    n: int,
    combined: list[str],
) -> None:
    """Sentences per second of the raw model and the full pipeline (and the full pipeline
    less each ranking term, and less each ``combined`` set), the better of two runs, on the
    first ``n`` sentences."""
    tr.translate(["Warm up."], search=search)
    for name, pairs in sets.items():
        sources = [s for s, _ in pairs[:n]]
        timed = [f"-{t}" for t in switches() if f"-{t}" in configs]
        timed += ["-" + "-".join(c.split(",")) for c in combined]
        for config in ("raw", "full", *timed):
            steps, terms = configs[config]
            best = float("inf")
            for _ in range(2):
                started = time.perf_counter()
                tr.translate(sources, search=search, terms=terms, steps=steps)
                best = min(best, time.perf_counter() - started)
            rate = len(sources) / best
            print(f"{name} {config}: {len(sources)} sentences in {best:.1f} s, {rate:.1f}/s")


def table(out: Path, configs: list[str], names: list[str]) -> str:
    """The Markdown table of what was scored: one row per configuration, BLEU / chrF per set,
    and the change in BLEU from the full pipeline."""
    head = "| | " + " | ".join(f"{n} BLEU / chrF | Δ BLEU" for n in names) + " | numbers kept |"
    rows = [head, "|---|" + "---:|---:|" * len(names) + "---:|"]
    full = {n: json.loads((out / f"full.{n}.json").read_text()) for n in names
            if (out / f"full.{n}.json").exists()}  # fmt: skip
    for config in configs:
        cells, kept = [], ""
        for n in names:
            path = out / f"{config}.{n}.json"
            if not path.exists():
                cells.append("– | –")
                continue
            r = json.loads(path.read_text())
            delta = r["bleu"] - full[n]["bleu"] if n in full else 0.0
            cells.append(f"{r['bleu']:.2f} / {r['chrf']:.2f} | {delta:+.2f}")
            if not kept:
                kept = f"{r['numbers'][0]}/{r['numbers'][1]}"
        rows.append(f"| {config} | " + " | ".join(cells) + f" | {kept} |")
    return "\n".join(rows)


if __name__ == "__main__":
    main()
