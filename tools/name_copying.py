"""How often a name whose letters the vocabulary spells in bytes comes out exactly.

    python tools/name_copying.py [--model DIR] [--show]

59 names of places and people with letters outside the source vocabulary ("Gdańsk",
"Erdoğan", "Müller", "Timișoara"), each in 3 short sentences (177 in all), translated with
beam 4: read as the model's bytes (the text pipeline without its ``names`` step), and read
with base letters ("Gdansk", written back as "Gdańsk" in the translation: the ``names`` step,
``attenzione.pipeline.names.fold``) for the words with such a letter from U+0080 on, and
from U+0100 on (past Latin-1: the shipped setting, ``attenzione.pipeline.words.FOLD_FROM``).
``--show`` prints each sentence whose translation the shipped setting changes.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import attenzione.pipeline.names as names_step
import attenzione.pipeline.words as words
from attenzione.pipeline import Pipeline
from attenzione.translator.translator import Translator

NAMES = """Gdańsk Kraków Łódź Wrocław Poznań Erdoğan Dvořák Škoda Zürich München Málaga Córdoba
Bogotá Medellín Juárez Nürnberg Düsseldorf Göteborg Malmö Århus Tromsø Reykjavík Plzeň Čapek
Žižek Sánchez Muñoz Peña Gaudí Dalí Schrödinger Gödel Poincaré Ångström Hernández Núñez
República Müller Björk Håkon Señora Curaçao Besançon Bratislavă Timișoara Brașov Gürses
Özil Çelik İzmir Kıvanç Sokołów Mikuláš Kovačić Đoković Jokić Dončić Lukašenka Wałęsa"""
NAMES = NAMES.split()  # type: ignore[assignment]
TEMPLATES = ["{} is a beautiful place.", "I met {} yesterday.", "The report from {} was late."]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", type=Path, default=None, help="default: the shipped model")
    ap.add_argument("--show", action="store_true")
    args = ap.parse_args()
    tr = Translator.from_pretrained(args.model)
    sentences = [t.format(n) for n in NAMES for t in TEMPLATES]
    names = [n for n in NAMES for _ in TEMPLATES]
    shipped = words.FOLD_FROM
    # the model's own text pipeline, without the names step and with it
    in_bytes = Pipeline.build(n for n in tr.pipeline.names if n != names_step.NAME)
    folding = Pipeline.build([*tr.pipeline.names, names_step.NAME])

    def kept(outputs: list[str]) -> int:
        return sum(n in o for n, o in zip(names, outputs, strict=True))

    plain = [r.text for r in tr.translate(sentences, steps=in_bytes)]
    print(f"{len(sentences)} sentences; the name came out exactly, read in bytes: {kept(plain)}")
    try:
        for start in (0x80, 0x100):
            words.FOLD_FROM = start  # read by names.foldable at each call
            out = [r.text for r in tr.translate(sentences, steps=folding)]
            label = f"words with such a letter from U+{start:04X} on read with base letters"
            print(f"  {label}: {kept(out)}")
            if args.show and start == shipped:
                for s, a, b in zip(sentences, plain, out, strict=True):
                    if a != b:
                        print(f"    {s}\n      bytes:  {a}\n      folded: {b}")
    finally:
        words.FOLD_FROM = shipped


if __name__ == "__main__":
    main()
