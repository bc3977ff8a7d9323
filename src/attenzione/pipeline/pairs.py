"""The pipeline a language pair gets by default: its text steps and ranking-term weights.

A model directory's ``info.json`` records the pipeline it applies (``"pipeline": {"steps":
[...], "terms": {name: weight}}``); ``attenzione train`` writes :func:`default_pipeline` of its
``--src-lang``/``--tgt-lang`` there, and a model that records none is given the default of its
pair (:func:`pipeline_of`).

Each step and ranking term declares what it needs of the pair's language profiles
(``Step.needs``; ``register(needs=…)``, :mod:`attenzione.search.registry`; the requirements
are :data:`attenzione.languages.REQUIREMENTS`, the profiles ``attenzione/languages/profiles/``):
a pair's default has those whose needs its profiles meet, and every other term at weight 0.
A language without a profile meets none, so it gets only what knows no language:

==========================  ===================================================================
``normalize``               NFC, ’ → ', spaces: what every corpus was read with
``carry``                   tags, addresses, pictographs, bare punctuation carried over
``capitals``                needs sentence case on both sides (German nouns keep capitals)
``title-case``              needs the source's title-case minor words
``split``                   sentence splitting (sentencex's rules for the source language)
``continuation``            needs a target in sentence case (a German noun starts upper-case)
``number-format``           needs the source's number labels ("Figure 1.1" is no quantity)
``numbers``                 digit repair against the source's digits (currency words and
                            numeral suffixes: the pair's profiles', if any)
``inline-tags``             tag pairs placed by cross-attention
``names``                   letters spelled in bytes read with base letters
``number-coverage``         per source digit not written
``punctuation-coverage``    needs the same comma rules on both sides ("Ich weiß, dass …")
``attention-coverage``      GNMT's coverage penalty
``word-check``              needs a target without compounds (a word list cannot hold them)
``doubled-marks``           no mark twice in a row unless the source has it so
==========================  ===================================================================

English→Italian gets every step and term, as the shipped model records; Italian→English every
one but ``title-case`` (Italian headlines are not in title case), as the shipped it→en model
records. A model whose ``info.json`` does not name both languages (older directories) keeps
the behaviour it always had: every step and every term at its default weight
(:func:`pipeline_of` gives ``{}``).
"""

from __future__ import annotations

from typing import Any

from attenzione.languages import meets
from attenzione.pipeline import STEPS, Pipeline
from attenzione.search.registry import Terms, switches


def default_pipeline(source_language: str, target_language: str) -> dict[str, Any]:
    """The ``{"steps": [...], "terms": {name: weight}}`` a model of this pair applies unless
    its ``info.json`` says otherwise: the steps (in the default order) and terms whose needs
    the pair's language profiles meet; every other term is recorded at 0 (off)."""
    source, target = source_language.strip().lower(), target_language.strip().lower()
    return {
        "steps": [step.name for step in STEPS if meets(step.needs, source, target)],
        "terms": {
            name: (term.default or 0.0) if meets(term.needs, source, target) else 0.0
            for name, term in switches().items()
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
        return Pipeline.build(recorded.get("steps")), Terms(recorded.get("terms") or {})
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise ValueError(f"a bad pipeline: {exc}") from None
