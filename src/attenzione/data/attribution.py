"""Who to credit for a corpus: read from the corpus itself, never assumed.

A model's ``info.json`` says which data it was trained on and whom that data's licence asks
to credit. The only honest sources are the user (``--attribution``) and the corpus: the
Tatoeba/Anki TSV format carries a third column per line ("CC-BY 2.0 (France) Attribution:
tatoeba.org #1234 (alice) & #5678 (bob)"), which names the project and the licence. A corpus
without such a column gets no attribution rather than somebody else's.
"""

from __future__ import annotations

import gzip
from pathlib import Path

TATOEBA = (
    "English–Italian sentence pairs from the Tatoeba Project (https://tatoeba.org), contributed "
    "by its members and licensed under CC-BY 2.0 FR; pair selection by ManyThings.org "
    "(https://www.manythings.org/anki/)."
)
# Distinct third-column values listed verbatim at most (beyond that they are per-sentence
# credits that only the corpus itself can carry).
MAX_LISTED = 3
# Lines read: a corpus states its licence on every line, so its head is enough, and a
# multi-gigabyte corpus is not read twice for it.
MAX_LINES = 100_000


def corpus_attribution(path: str | Path) -> str | None:
    """The attribution a TSV corpus gives in its third column, or None.

    Tatoeba's per-sentence credits become the project's licence notice; a few distinct other
    values are quoted as they are. Files that are not TSVs (a Moses prefix) give None.
    """
    path = Path(path)
    if not path.is_file():
        return None
    values: set[str] = set()
    tatoeba = False
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8", errors="replace") as f:
        for no, line in enumerate(f):
            if no >= MAX_LINES:
                break
            cols = line.rstrip("\r\n").split("\t")
            if len(cols) < 3 or not cols[2].strip():
                continue
            if "tatoeba.org" in cols[2].lower():
                tatoeba = True
            elif len(values) <= MAX_LISTED:
                values.add(cols[2].strip())
    credits = [TATOEBA] if tatoeba else []
    if 0 < len(values) <= MAX_LISTED:
        credits += sorted(values)
    elif values:
        credits.append(f"per-sentence credits in the third column of {path.name}")
    return " ".join(credits) if credits else None


def run_attribution(
    corpora: list[str], given: str | None = None, inherited: str | None = None
) -> str | None:
    """The attribution of a run: ``given`` (from ``--attribution``) or what its corpora say,
    then ``inherited``, the credit of the model a warm start began from (its data is still in
    the weights): each of its paragraphs the run's own text does not already give."""
    own = _own_attribution(corpora, given)
    # one paragraph per corpus: add only the paragraphs this run's own text does not give
    # (compared whole: a credit that merely contains another is a different credit)
    have = {c.strip() for c in (own or "").split("\n")}
    extra = [c for c in (inherited or "").split("\n") if c.strip() and c.strip() not in have]
    return "\n".join([own, *extra] if own else extra) or None


def _own_attribution(corpora: list[str], given: str | None) -> str | None:
    """``given`` as the user wrote it, or one paragraph per corpus that names its credit."""
    if given:
        return given
    found = [a for a in (corpus_attribution(c) for c in corpora) if a]
    unique = list(dict.fromkeys(found))
    return "\n".join(unique) if unique else None
