"""Copy a trained checkpoint into the package as the shipped model, with its measured scores.

    python tools/ship_model.py RUN_DIR [--beam 4] [--dry-run]

Loads ``RUN_DIR/best``, scores it with beam search on the run's own held-out dev and test
splits and on every extra dev set of the run (``data/dev-NAME.tsv``, e.g. FLORES), with
sacreBLEU BLEU and chrF and the share of numbers (URLs, code, names) copied unchanged, and
writes ``src/attenzione/pretrained/SRC-TGT`` (the pair of the model's info.json) with fp16
weights, the tokenizers and an
``info.json`` carrying the scores, the training facts and the attribution of every corpus
the run trained on (and, for a warm-started run, what it started from). The figures in
docs/model.md come from this script's output.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

import torch

from attenzione.config import search_config
from attenzione.data import read_pairs
from attenzione.data.mixing import CorpusSpec
from attenzione.data.numbers import number_format_of
from attenzione.evaluation import copy_fidelity, corpus_scores, group_references
from attenzione.pipeline.pairs import built_pipeline, default_pipeline
from attenzione.search.lexicon import translated_words, word_list
from attenzione.search.registry import Terms
from attenzione.translator.registry import PRETRAINED_ROOT
from attenzione.translator.translator import Translator


def score(
    tr: Translator, pairs: list[tuple[str, str]], beam: int, pipeline: dict[str, Any]
) -> dict[str, object]:
    """Line-by-line BLEU/chrF (the standard figure) and, beside it, multi-reference scores,
    with ``pipeline`` (the pair's default, which the shipped info.json records and a
    Translator then applies); the ``_raw`` figures are the model's alone, as ``--raw`` gives
    them (no text step, no ranking term)."""
    search = search_config(beam)
    sources = [s for s, _ in pairs]
    steps, terms = built_pipeline({"pipeline": pipeline})
    start = time.perf_counter()
    hyps = [r.text for r in tr.translate(sources, search=search, terms=terms, steps=steps)]
    seconds = time.perf_counter() - start
    s = corpus_scores(hyps, [t for _, t in pairs])
    # each distinct source once, against all its references (reusing the hypotheses above:
    # decoding is deterministic, so a repeated source has the same translation every time)
    first: dict[str, str] = {}
    for (src, _), hyp in zip(pairs, hyps, strict=True):
        first.setdefault(src, hyp)
    distinct, refs = group_references(pairs)
    m = corpus_scores([first[src] for src in distinct], refs)
    raw = [r.text for r in tr.translate(sources, search=search, terms=Terms.none(), steps=())]
    copied = copy_fidelity(sources, hyps)
    return {
        "bleu": round(s.bleu, 2),
        "chrf": round(s.chrf, 2),
        "sentences": s.n_sentences,
        "beam": beam,
        "seconds": round(seconds, 1),
        "signature": s.bleu_signature,
        "multi_ref": {
            "bleu": round(m.bleu, 2),
            "chrf": round(m.chrf, 2),
            "sources": m.n_sentences,
            "signature": m.bleu_signature,
        },
        "copied": {k: round(f.share, 4) for k, f in copied.items() if f.total},
        "numbers": {
            "kept": copied["numbers"].kept,
            "total": copied["numbers"].total,
            "kept_raw": copy_fidelity(sources, raw)["numbers"].kept,
        },
        "bleu_raw": round(corpus_scores(raw, [t for _, t in pairs]).bleu, 2),
    }


PROSE = (
    "Prose from the Italian gettext catalogues of Debian 12 packages (a part of the program "
    "messages credited here), by those programs' translators; under each program's licence."
)
QT = (
    "GCompris 3.1 (GPL-3+) and Stellarium 0.22 (GPL-2+) Italian translations, by their "
    "translators (Debian 12 packages gcompris-qt-data and stellarium-data)."
)

# What each corpus of the shared data asks to be credited with (../shared/data/README.md);
# a corpus not named here is listed by path only.
ATTRIBUTIONS = {
    "en-it.train": "English–Italian sentence pairs from the Tatoeba Project "
    "(https://tatoeba.org), contributed by its members and licensed under CC-BY 2.0 FR; pair "
    "selection by ManyThings.org (https://www.manythings.org/anki/).",
    "debian-package-descriptions.en-it": "Debian package descriptions and their Italian "
    "translations (Debian Description Translation Project, Debian 12); under the packages' "
    "own free licences.",
    "debian-program-messages.en-it": "The Italian gettext catalogues of 1,607 Debian 12 "
    "packages, by those programs' translators; under each program's licence (GPL, LGPL, MPL, "
    "…: see the package's copyright file).",
    "libreoffice-help.en-it": "LibreOffice 7.4 help, English and Italian (MPL-2.0).",
    "kde-manuals.en-it": "KDE application manuals and their Italian translations (mostly GFDL).",
    "gimp-help.en-it": "GIMP 2.10 help, English and Italian (GFDL-1.2+).",
    "debian-manuals.en-it": "Debian Reference, the Debian Administrator's Handbook, "
    "aptitude's manual, the Developer's Reference and the New Maintainers' Guide (GPL-2+; the "
    "Handbook GPL-2+ or CC BY-SA 3.0).",
    "firefox.en-it": "Firefox ESR's English and Italian strings (MPL-2.0).",
    "games-0ad-freecol.en-it": "0 A.D. (CC BY-SA 3.0 / GPL-2+) and FreeCol (GPL-2+) game texts.",
    "gnome-help.en-it": "GNOME user documentation (see gnome-user-docs' copyright file).",
    # the twentieth session's fine-tune (runs/pm): the prose among the program messages,
    # split by tools/prose_pairs.py, and two Qt catalogues read by tools/qm_pairs.py
    "top10k": PROSE,
    "rest": PROSE,
    "qt-long": QT,
    "qt-short": QT,
    # the prose of ../shared/data/prose (issue 38), as its README credits each corpus
    "europarl-lowercased.en-it": "European Parliament proceedings, Europarl v7 Italian–English "
    "(https://www.statmt.org/europarl/; no copyright restrictions, reused with "
    "acknowledgement), a lower-cased sample as published in GitHub "
    "riccardotella/English-Italian-Machine-Translation-.",
    "debian-website.en-it": "Debian's press releases, Project News and about pages "
    "(debian-webwml; MIT (Expat) or GPL-2+, pages before 2012 Open Publication License 1.0).",
    "lilypond-doc.en-it": "The LilyPond 2.24 manuals, English and Italian (GFDL-1.3+).",
    "mt-geneval-wikipedia.en-it": "Wikipedia biographies as translated by professionals for "
    "MT-GenEval (Amazon Science, machine-translation-gender-eval; CC BY-SA 3.0).",
    "manpages-it.en-it": "The Italian man pages of manpages-it 4.18 (GPL-3+) and the English "
    "pages they translate (under their own licences).",
    "wesnoth.en-it": "The Battle for Wesnoth 1.16: unit lore and help (GPL-2+).",
    "debian-install-guide.en-it": "The Debian installation guide (GPL-2).",
    "debian-developers-reference.en-it": "The Debian Developer's Reference 12.18 (GPL-2).",
    "kicad-doc.en-it": "The KiCad 6.0 manuals (GPL-2+/3+ or CC BY 3.0).",
    "debian-edu-manual.en-it": "The Debian Edu manuals (GPL-2+).",
    "debian-faq.en-it": "The Debian FAQ 11.1 (under the Debian FAQ's permission notice).",
    "gnucash-docs.en-it": "The GnuCash guide and help (GFDL-NIV-1.1+).",
    "debian-maint-guide.en-it": "The Debian New Maintainers' Guide 1.2.53 (GPL-2+).",
    "debian-history.en-it": "A Brief History of Debian 2.28 (GPL-2+).",
    "tuxpaint-stamps.en-it": "Tux Paint's stamp descriptions (GPL-2).",
    "udhr.en-it": "The Universal Declaration of Human Rights (OHCHR; freely reproducible), "
    "from nltk_data's udhr2.",
}


def _portable(init: dict[str, Any]) -> dict[str, Any]:
    """The chain of models a run started from, with paths inside this checkout made relative
    (the shipped info.json should not name the directory it was built in)."""
    here = Path.cwd().resolve()
    out = dict(init)
    path = Path(str(out.get("model", "")))
    if path.is_absolute() and path.is_relative_to(here):
        out["model"] = str(path.relative_to(here))
    if isinstance(out.get("initialised_from"), dict):
        out["initialised_from"] = _portable(out["initialised_from"])
    return out


def corpora_along_chain(info: dict[str, Any]) -> list[CorpusSpec]:
    """The corpora of a run and of every model in its ``initialised_from`` chain, in order."""
    found: list[CorpusSpec] = []
    node: Any = info
    while isinstance(node, dict):
        found += [CorpusSpec.parse(c) for c in node.get("corpora", [node.get("data", "")]) if c]
        node = node.get("initialised_from")
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run", type=Path)
    parser.add_argument("--beam", type=int, default=4)
    parser.add_argument("--checkpoint", default="best")
    parser.add_argument("--dry-run", action="store_true", help="score only, write nothing")
    args = parser.parse_args()
    tr = Translator.from_pretrained(args.run / args.checkpoint)
    # a checkpoint saved before the trainer recorded its number format or its word list:
    # both come from the run's training pairs, read once
    train = None
    if "number_format" not in tr.info or tr.known_words is None or tr.translated_words is None:
        train = read_pairs(args.run / "data" / "train.tsv")
    info = dict(tr.info)  # what the shipped info.json says (the translator's is fixed)
    found: dict[str, Any] = {}
    if "number_format" not in info and train is not None:
        info["number_format"] = found["number_format"] = number_format_of(train)
    if tr.known_words is None and train is not None:
        found["known_words"] = word_list(t for _, t in train)
    if tr.translated_words is None and train is not None:
        found["translated_words"] = translated_words(train)
    if found:  # the same network, with what the training pairs say
        tr = tr.replace(info=info, **found)
    print("number format", tr.number_format)
    print("known words", len(tr.known_words or ()))
    print("translated source words", len(tr.translated_words or ()))
    # the pipeline of the model's pair (an Italian source gets no English title-case step)
    pipeline = default_pipeline(
        tr.info.get("source_language", "en"), tr.info.get("target_language", "it")
    )
    print("pipeline", json.dumps(pipeline))
    results = {}
    extra = sorted(p.name[4:-4] for p in (args.run / "data").glob("dev-*.tsv"))
    for split in ("dev", "test", *(f"dev-{name}" for name in extra)):
        pairs = read_pairs(args.run / "data" / f"{split}.tsv")
        results[split] = score(tr, pairs, args.beam, pipeline)
        print(split, json.dumps(results[split]))
    if args.dry_run:
        return
    info.update(
        {
            "dev_beam": results["dev"],
            "test_beam": results["test"],
            **{f"dev_{name}_beam": results[f"dev-{name}"] for name in extra},
            "source_run": str(args.run),
            "weights_dtype": "float16",
            "pipeline": pipeline,
        }
    )
    # a warm-started run: info.json names what it started from; RUN/init.json, written when
    # the run began, is the record (a trainer may have written only the path in info.json)
    init_file = args.run / "init.json"
    if init_file.is_file():
        init = _portable(json.loads(init_file.read_text(encoding="utf-8")))
        info["initialised_from"] = init
        info["train_hours_with_init"] = round(
            info["train_hours"] + (init.get("train_hours") or 0.0), 3
        )
    # every corpus the weights have seen: this run's and, for a warm start, those of each
    # model it started from (a corpus an ancestor trained on is still in the weights)
    names: dict[str, CorpusSpec] = {}
    for spec in corpora_along_chain(info):
        names.setdefault(spec.name, spec)
    # one string, as the trainer writes it: one paragraph per corpus
    credits = [ATTRIBUTIONS.get(c.name, f"corpus {c.path}") for c in names.values() if c.path]
    info["attribution"] = "\n".join(dict.fromkeys(credits))  # two parts of one source: once
    # the package keeps one directory per pair (attenzione.translator.registry)
    pair = f"{info.get('source_language', 'en')}-{info.get('target_language', 'it')}"
    destination = PRETRAINED_ROOT / pair
    tr.save_pretrained(destination, dtype=torch.float16, info=info)
    shipped = Translator.from_pretrained(destination)
    check = score(shipped, read_pairs(args.run / "data" / "dev.tsv"), args.beam, pipeline)
    print("shipped (fp16 weights) dev", json.dumps(check))
    size = sum(p.stat().st_size for p in destination.rglob("*") if p.is_file())
    print(f"wrote {destination} ({size / 1e6:.1f} MB)")


if __name__ == "__main__":
    main()
