"""The pipeline a language pair gets by default: its text steps and ranking-term weights.

A model directory's ``info.json`` records the pipeline it applies (``"pipeline": {"steps":
[...], "terms": {name: weight}}``); ``attenzione train`` writes :func:`default_pipeline` of its
``--src-lang``/``--tgt-lang`` there, and a model that records none is given the default of its
pair (:func:`pipeline_of`). English↔Italian, the pairs this project was built and measured on,
get every step and the four ranking terms at their measured weights — exactly what the shipped
``en-it`` and ``it-en`` models record, so their translations do not change. Any other pair, or
an unknown language, gets only what knows no language:

==========================  ========  ===========================================================
``normalize``               generic   NFC, ’ → ', spaces: what every corpus was read with
``carry``                   generic   tags, addresses, pictographs, bare punctuation carried over
``capitals``                no        recapitalises from an English/Italian view of case (German
                                      nouns would lose theirs)
``title-case``              no        a list of English minor words
``split``                   generic   sentence splitting and word cuts (pieces joined by a space)
``continuation``            no        lower-cases a continuation's first letter (German nouns)
``number-format``           no        assumes the target writes numbers the en/it ways
``numbers``                 generic   digit repair against the source's digits; its currency
                                      words are en/it and simply match nothing in other text
``inline-tags``             generic   tag pairs placed by cross-attention
``names``                   generic   letters spelled in bytes read with base letters, checked
                                      against the model's own word lists
``number-coverage``         generic   per source digit not written
``punctuation-coverage``    off       clause commas are language-specific ("Ich weiß, dass …")
``attention-coverage``      generic   GNMT's coverage penalty
``word-check``              off       needs a word list and assumes letters-only words
``doubled-marks``           generic   no mark twice in a row unless the source has it so
==========================  ========  ===========================================================

A model whose ``info.json`` does not name both languages (older directories) keeps the
behaviour it always had: every step and every term at its default weight (:func:`pipeline_of` gives
``{}``).
"""

from __future__ import annotations

from typing import Any

from attenzione.pipeline import STEP_NAMES, Pipeline
from attenzione.search.ranking import RANKING_TERMS, TERM_NAMES, Terms

# the pairs whose language rules the steps hold (English and Italian, both ways)
KNOWN_PAIRS = frozenset({("en", "it"), ("it", "en")})
# the steps and ranking terms that know no language (see the table above)
GENERIC_STEPS = frozenset({"normalize", "carry", "split", "numbers", "inline-tags", "names"})
GENERIC_TERMS = frozenset({"number-coverage", "attention-coverage", "doubled-marks"})
# the terms the en↔it models record (doubled-marks, unrecorded, is on at its default)
_KNOWN_PAIR_TERMS = ("number-coverage", "punctuation-coverage", "attention-coverage", "word-check")


def default_pipeline(source_language: str, target_language: str) -> dict[str, Any]:
    """The ``{"steps": [...], "terms": {name: weight}}`` a model of this pair applies unless
    its ``info.json`` says otherwise: every step for English↔Italian, the generic ones (in the
    default order) for any other pair; the terms a pair does not use are recorded at 0 (off)."""
    pair = (source_language.strip().lower(), target_language.strip().lower())
    if pair in KNOWN_PAIRS:
        return {
            "steps": list(STEP_NAMES),
            "terms": {name: RANKING_TERMS[name].default for name in _KNOWN_PAIR_TERMS},
        }
    return {
        "steps": [name for name in STEP_NAMES if name in GENERIC_STEPS],
        "terms": {
            name: term.default if name in GENERIC_TERMS else 0.0
            for name, term in RANKING_TERMS.items()
        },
    }


def pipeline_of(info: dict[str, Any]) -> dict[str, Any]:
    """The pipeline a model with this ``info.json`` applies: the one it records, else its
    pair's default; ``{}`` (every step, every term at its default, as before pairs had
    defaults) for a model that does not name both its languages."""
    recorded = info.get("pipeline")
    if recorded:
        if not isinstance(recorded, dict):
            raise ValueError("it should be a JSON object")
        return recorded
    source, target = info.get("source_language"), info.get("target_language")
    if not (isinstance(source, str) and isinstance(target, str)):
        return {}
    return default_pipeline(source, target)


def built_pipeline(info: dict[str, Any]) -> tuple[Pipeline, Terms]:
    """The text steps and ranking-term weights a model with this ``info.json`` applies
    (:func:`pipeline_of`), built; a bad record is one ValueError ("a bad pipeline: …")."""
    try:
        recorded = pipeline_of(info)
        weights = {TERM_NAMES[k]: v for k, v in (recorded.get("terms") or {}).items()}
        return Pipeline.build(recorded.get("steps")), Terms(**weights)
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise ValueError(f"a bad pipeline: {exc}") from None
