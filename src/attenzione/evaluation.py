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


def corpus_scores(hypotheses: Sequence[str], references: Sequence[str]) -> Scores:
    """Corpus-level BLEU and chrF of ``hypotheses`` against one reference each."""
    import sacrebleu

    if len(hypotheses) != len(references):
        raise ValueError(
            f"{len(hypotheses)} hypotheses but {len(references)} references: they must pair up"
        )
    if not hypotheses:
        raise ValueError("nothing to score: the test set is empty")
    bleu = sacrebleu.metrics.BLEU()
    chrf = sacrebleu.metrics.CHRF()
    refs = [list(references)]
    b = bleu.corpus_score(list(hypotheses), refs)
    c = chrf.corpus_score(list(hypotheses), refs)
    return Scores(
        bleu=float(b.score),
        chrf=float(c.score),
        bleu_signature=str(bleu.get_signature()),
        chrf_signature=str(chrf.get_signature()),
        n_sentences=len(hypotheses),
    )
