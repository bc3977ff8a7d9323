"""Score a model on a dev set made to look like real input: capitals, emoji, curly apostrophes.

    python tools/robustness.py DEV.tsv [--model DIR] [--beam 4] [--json OUT] [--only NAME…]

Each variant changes every pair of DEV.tsv (English<TAB>Italian) the same way on both sides,
so that a translator that handles it keeps its plain score:

* ``capitals``: both sides in upper case ("WHERE IS THE STATION?");
* ``emoji after`` / ``emoji before``: " 😊" appended to both, "👍 " put before both;
* ``emoji inside``: "🍕" after the first word of both ("I 🍕 haven't checked…");
* ``address inside``: "(https://www.example.com/help)" after the first word of both;
* ``curly apostrophes``: the English ' written ’ (the reference kept as it is);
* ``title case``: the English in title case ("I Haven't Checked the Doors Yet."), the
  reference as it is;
* ``in a paragraph tag``: "<p>…</p>" around both;
* ``Tom in bold``: "Tom" written "<b>Tom</b>" on both sides (where both sides have him).

Printed per variant: corpus BLEU and chrF (sacreBLEU's defaults), seconds, and what was
carried over (translations wholly in capitals; translations with the emoji once, in its
place). To score an older version of the code, run this file with ``PYTHONPATH`` pointing at
that version's ``src`` (e.g. a ``git worktree``). Run it with nothing else on the machine.
"""

from __future__ import annotations

import argparse
import json
import re
import time
from collections.abc import Callable

import sacrebleu

from attenzione.data import read_pairs
from attenzione.translator.translator import Translator

Change = Callable[[str, str], tuple[str, str]]
_TOM = re.compile(r"\bTom\b")
_TAG = re.compile(r"</?[a-z]+>")
_URL = "(https://www.example.com/help)"
_MINOR = {"a", "an", "the", "and", "but", "or", "for", "as", "at", "by", "in", "of", "on", "to"}


def _title(text: str) -> str:
    """``text`` in English title case: every word capitalised but the short minor ones."""
    words = text.split(" ")
    return " ".join(w if k and w in _MINOR else w[:1].upper() + w[1:] for k, w in enumerate(words))


def _after_first(text: str, emoji: str) -> str:
    """``text`` with ``emoji`` after its first word ("I 🍕 haven't…"); a one-word text as it is."""
    first, _, rest = text.partition(" ")
    return f"{first} {emoji} {rest}" if rest else text


VARIANTS: dict[str, Change] = {
    "plain": lambda en, it: (en, it),
    "capitals": lambda en, it: (en.upper(), it.upper()),
    "emoji after": lambda en, it: (en + " 😊", it + " 😊"),
    "emoji before": lambda en, it: ("👍 " + en, "👍 " + it),
    "emoji inside": lambda en, it: (_after_first(en, "🍕"), _after_first(it, "🍕")),
    "address inside": lambda en, it: (_after_first(en, _URL), _after_first(it, _URL)),
    "curly apostrophes": lambda en, it: (en.replace("'", "\u2019"), it),
    "title case": lambda en, it: (_title(en), it),
    "in a paragraph tag": lambda en, it: (f"<p>{en}</p>", f"<p>{it}</p>"),
    "Tom in bold": lambda en, it: (
        (_TOM.sub("<b>Tom</b>", en), _TOM.sub("<b>Tom</b>", it))
        if _TOM.search(en) and _TOM.search(it)
        else (en, it)
    ),
}


def carried(variant: str, hyps: list[str], sources: list[str]) -> dict[str, int]:
    """How many translations carried the variant's change over (capitals, the emoji, the
    tags: the same tags as the source, in the same order)."""
    if "tag" in variant or "bold" in variant:
        tagged = [(s, h) for s, h in zip(sources, hyps, strict=True) if _TAG.search(s)]
        return {
            "sources with tags": len(tagged),
            "tags kept": sum(_TAG.findall(s) == _TAG.findall(h) for s, h in tagged),
        }
    if variant == "capitals":
        return {"all in capitals": sum(h == h.upper() for h in hyps)}
    if variant == "emoji after":
        return {"emoji kept in place": sum(h.count("😊") == 1 and h.endswith("😊") for h in hyps)}
    if variant == "address inside":
        return {"address kept once": sum(h.count(_URL) == 1 for h in hyps)}
    if variant == "emoji inside":
        return {"emoji kept once": sum(h.count("🍕") == 1 for h in hyps)}
    if variant == "emoji before":
        return {"emoji kept in place": sum(h.count("👍") == 1 and h.startswith("👍") for h in hyps)}
    return {}


def _translate(tr: Translator, texts: list[str], beam: int) -> list[str]:
    """The translations of ``texts`` with beam ``beam``, as strings: with this version's
    ``translate(search=...)`` (Translation objects), or an older version's ``beam=`` (strings)."""
    try:
        from attenzione.config import search_config
    except ImportError:  # a version from before the text pipeline
        return list(tr.translate(texts, beam=beam))  # type: ignore[call-arg]
    return [r.text for r in tr.translate(texts, search=search_config(beam))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("data", help="English<TAB>Italian pairs")
    parser.add_argument("--model", default=None, help="default: the shipped model")
    parser.add_argument("--beam", type=int, default=4)
    parser.add_argument("--json", default=None, help="also write the figures here")
    parser.add_argument("--only", nargs="*", default=None, help="these variants only")
    args = parser.parse_args()
    tr = Translator.from_pretrained(args.model)
    pairs = read_pairs(args.data)
    results = {}
    for name, change in VARIANTS.items():
        if args.only is not None and name not in args.only:
            continue
        changed = [change(en, it) for en, it in pairs]
        start = time.perf_counter()
        hyps = _translate(tr, [en for en, _ in changed], args.beam)
        refs = [it for _, it in changed]
        results[name] = {
            "bleu": round(sacrebleu.corpus_bleu(hyps, [refs]).score, 2),
            "chrf": round(sacrebleu.corpus_chrf(hyps, [refs]).score, 2),
            "seconds": round(time.perf_counter() - start, 1),
            "pairs": len(pairs),
            **carried(name, hyps, [en for en, _ in changed]),
        }
        print(name, results[name], flush=True)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(results, f, indent=1, ensure_ascii=False)


if __name__ == "__main__":
    main()
