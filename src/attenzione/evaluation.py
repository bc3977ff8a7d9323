"""Translation quality the way the field measures it: sacreBLEU's corpus BLEU and chrF.

sacreBLEU fixes the tokenization and the reference handling, so a score printed with its
signature (``nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp|version:…``) can be compared with
published figures. We always score detokenized text against untouched references.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

from attenzione.data.numbers import NUMBER, take


@dataclass
class Scores:
    bleu: float
    chrf: float
    bleu_signature: str
    chrf_signature: str
    n_sentences: int

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def __str__(self) -> str:
        return (
            f"BLEU {self.bleu:.2f}  chrF {self.chrf:.2f}  ({self.n_sentences} sentences)\n"
            f"  BLEU signature: {self.bleu_signature}\n  chrF signature: {self.chrf_signature}"
        )


def group_references(pairs: Sequence[tuple[str, str]]) -> tuple[list[str], list[list[str]]]:
    """Distinct sources (in order of first appearance) and every reference each one has.

    Tatoeba gives one English sentence several Italian translations (tu/Lei/voi, masculine and
    feminine), each on its own line. Scored line by line, a correct translation matching one
    variant is penalised against the others; grouped, each source is translated once and
    scored against all its references (sacreBLEU's multi-reference BLEU, ``nrefs:var``).
    """
    refs: dict[str, list[str]] = {}
    for src, tgt in pairs:
        refs.setdefault(src, []).append(tgt)
    return list(refs), list(refs.values())


def corpus_scores(
    hypotheses: Sequence[str], references: Sequence[str] | Sequence[Sequence[str]]
) -> Scores:
    """Corpus-level BLEU and chrF of ``hypotheses``.

    ``references`` holds one string per hypothesis, or one list of strings per hypothesis
    (several references; the lists may differ in length).
    """
    import sacrebleu

    if len(hypotheses) != len(references):
        raise ValueError(
            f"{len(hypotheses)} hypotheses but {len(references)} references: they must pair up"
        )
    if not hypotheses:
        raise ValueError("nothing to score: the test set is empty")
    per_hyp = [[r] if isinstance(r, str) else list(r) for r in references]
    if any(not r for r in per_hyp):
        raise ValueError("every hypothesis needs at least one reference")
    n_refs = max(len(r) for r in per_hyp)
    # sacreBLEU takes reference *streams*; a missing reference in a stream is None.
    streams: list[list[str | None]] = [
        [r[i] if i < len(r) else None for r in per_hyp] for i in range(n_refs)
    ]
    # force: no "you forgot to detokenize" warning at every evaluation of a corpus that is
    # tokenized on purpose (Multi30k's); the score is the same
    bleu = sacrebleu.metrics.BLEU(force=True)
    chrf = sacrebleu.metrics.CHRF()
    b = bleu.corpus_score(list(hypotheses), streams)  # type: ignore[arg-type]
    c = chrf.corpus_score(list(hypotheses), streams)  # type: ignore[arg-type]
    return Scores(
        bleu=float(b.score),
        chrf=float(c.score),
        bleu_signature=str(bleu.get_signature()),
        chrf_signature=str(chrf.get_signature()),
        n_sentences=len(hypotheses),
    )


# ---------------------------------------------------------------------------- copy fidelity
# What a translator must copy, not translate. A number is digits, optionally grouped or with
# a decimal part; URLs; code-like tokens (snake_case, dotted file names, paths, calls);
# capitalised words that do not start a sentence (names, mostly — "English" → "inglese" is a
# correct change, so that category is a signal, not a target).
_URL = re.compile(r"\b(?:https?://|www\.)[^\s<>\"]+[^\s<>\".,;:!?)]")
_CODE = re.compile(
    r"(?<![\w/])(?:[A-Za-z]+_[\w]+|[\w-]+\.(?:[a-z]{1,4})\b(?![.\w])|/[\w./-]+|\w+\(\))"
)
_NAME = re.compile(r"(?<=[^\s.!?]\s)[A-Z][a-z]+(?:[A-Z][a-z]+)*")


@dataclass
class Fidelity:
    """``kept`` of the ``total`` source items appear in the translation (``share``)."""

    kept: int
    total: int

    @property
    def share(self) -> float:
        return self.kept / self.total if self.total else 1.0

    def __str__(self) -> str:
        return f"{self.share:.2%} ({self.kept}/{self.total})"


def _kept(items: list[str], found: list[str], alternates: bool) -> int:
    """How many of ``items`` are among ``found``, each found item used once."""
    pool = Counter(found)
    return sum(take(pool, item, other_separators=alternates) for item in items)


def number_fidelity(sources: Sequence[str], hypotheses: Sequence[str]) -> Fidelity:
    """The share of the sources' numbers that appear unchanged in their translations.

    Each occurrence counts once ("7 of 7" needs two 7s). A number written with the target
    convention's separators (1,000 → 1.000, 3.5 → 3,5) counts as kept: the digits are exact.
    """
    return copy_fidelity(sources, hypotheses)["numbers"]


def copy_fidelity(sources: Sequence[str], hypotheses: Sequence[str]) -> dict[str, Fidelity]:
    """Fidelity of numbers, URLs, code-like tokens and capitalised names, by category."""
    if len(sources) != len(hypotheses):
        raise ValueError(f"{len(sources)} sources but {len(hypotheses)} translations")
    out = {name: Fidelity(0, 0) for name in ("numbers", "urls", "code", "names")}
    for src, hyp in zip(sources, hypotheses, strict=True):
        for name, pattern in (("numbers", NUMBER), ("urls", _URL), ("code", _CODE)):
            # code-like tokens are looked for outside URLs, which are counted as URLs
            s, h = (_URL.sub(" ", src), _URL.sub(" ", hyp)) if name == "code" else (src, hyp)
            items = pattern.findall(s)
            out[name].total += len(items)
            out[name].kept += _kept(items, pattern.findall(h), name == "numbers")
        names = _NAME.findall(src)
        out["names"].total += len(names)
        out["names"].kept += sum(1 for n in names if re.search(rf"\b{re.escape(n)}\b", hyp))
    return out
