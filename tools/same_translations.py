"""Translate fixed sets with the shipped models and write every output, to compare two versions
of the code byte for byte (issue 50's check: a refactoring changes no translation).

    python tools/same_translations.py --out /tmp/before [--limit N]
    (change the code)
    python tools/same_translations.py --out /tmp/after [--limit N]
    diff -r /tmp/before /tmp/after && echo same

Each model reads its own direction of FLORES-101 dev and of Tatoeba dev (``--tatoeba``: the
held-out split of a run, ``runs/iten/run/data/dev.tsv``, Italian<TAB>English). Four ways per
set: the default decoding (beam 4, ranking terms, text steps), greedy, a 3-best list and inline
tags placed by attention (``<b>`` around the second word). Nothing here is timed.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from attenzione.config import search_config
from attenzione.translator import Translator

ROOT = Path(__file__).resolve().parents[1]
FLORES = ROOT.parent / "shared/data/dev/flores101-dev.eng-ita.tsv"


def _columns(path: Path) -> tuple[list[str], list[str]]:
    rows = [line.rstrip("\n").split("\t") for line in path.open(encoding="utf-8")]
    return [r[0] for r in rows], [r[1] for r in rows]


def _tagged(text: str) -> str:
    words = text.split(" ")
    if len(words) > 2:
        words[1] = f"<b>{words[1]}</b>"
    return " ".join(words)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--limit", type=int, default=0, help="the first N sentences of each set")
    ap.add_argument("--tatoeba", type=Path, default=ROOT / "runs/iten/run/data/dev.tsv")
    ap.add_argument("--models", default="en-it,it-en")
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    f_en, f_it = _columns(FLORES)
    t_it, t_en = _columns(args.tatoeba)
    sources = {
        "en-it": {"flores": f_en, "tatoeba": t_en},
        "it-en": {"flores": f_it, "tatoeba": t_it},
    }
    for pair in args.models.split(","):
        tr = Translator.from_pretrained(ROOT / "src/attenzione/pretrained" / pair)
        for name, texts in sources[pair].items():
            texts = texts[: args.limit] if args.limit else texts
            short = texts[: max(1, len(texts) // 5)]
            runs = {
                "beam4": [t.text for t in tr.translate(texts)],
                "greedy": [t.text for t in tr.translate(short, search=search_config(beam=1))],
                "nbest3": [
                    [(c.text, round(c.score, 6)) for c in t.candidates]
                    for t in tr.translate(short, search=search_config(beam=4, n_best=3))
                ],
                "tags": [t.text for t in tr.translate([_tagged(x) for x in short])],
            }
            for way, out in runs.items():
                path = args.out / f"{pair}.{name}.{way}.jsonl"
                with path.open("w", encoding="utf-8") as fh:
                    for item in out:
                        fh.write(json.dumps(item, ensure_ascii=False) + "\n")
            print(pair, name, len(texts), "written", flush=True)


if __name__ == "__main__":
    main()
