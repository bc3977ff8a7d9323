"""Translation quality the way the field measures it: sacreBLEU's corpus BLEU and chrF.

sacreBLEU fixes the tokenization and the reference handling, so a score printed with its
signature (``nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp|version:…``) can be compared with
published figures. We always score detokenized text against untouched references.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any


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
    bleu = sacrebleu.metrics.BLEU()
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
