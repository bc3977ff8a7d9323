"""Which model translates each text of a request, and what ``source: "auto"`` found.

A request names its ``source`` (or ``auto``) and its ``target``. With ``auto`` every text of
a list is read on its own (LibreTranslate answers one detection per item too, and a list
may mix languages): each gets its own detection and the model of its own pair. A text
already in the target language (:meth:`~attenzione.serve.language.Languages.detect_source`)
has no model: it comes back as it is, as LibreTranslate does when source and target are the
same, rather than "translated" from a language it is not in. Every check is a 400 naming
what the server does translate.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from attenzione.serve.batcher import Batcher
from attenzione.serve.fields import ApiError, get_str
from attenzione.serve.language import Languages, language_name


@dataclass(frozen=True)
class Reading:
    """How one text is read: its detection as reported (``{"confidence", "language"}``;
    100 for a named source) and the batcher's model for it (None: already in the target
    language, not translated)."""

    detected: dict[str, Any]
    route: str | None

    @property
    def language(self) -> str:
        return str(self.detected["language"])


def read_sources(
    languages: Languages, batcher: Batcher, fields: dict[str, Any], texts: list[str]
) -> tuple[str, list[Reading]]:
    """The ``source`` as sent and how each of ``texts`` is read."""
    source = (get_str(fields, "source") or "").strip().lower()
    target = (get_str(fields, "target") or "").strip().lower()
    if not source:
        raise ApiError(400, "Invalid request: missing source parameter")
    if not target:
        raise ApiError(400, "Invalid request: missing target parameter")
    langs = languages
    if source != "auto":
        named: dict[str, Any] = {"confidence": 100.0, "language": source}
        reading = Reading(named, _route(langs, batcher, source, target))
        return source, [reading] * len(texts)
    if target not in langs.codes:
        raise ApiError(400, f"{target} is not supported: this server translates {langs.pair()}")
    readings = []
    for text in texts:
        detected = langs.detect_source(text, target)
        found = detected["language"]
        if found == target:
            readings.append(Reading(detected, None))
            continue
        if found not in langs.sources():
            raise ApiError(
                400,
                f"The text looks {language_name(found)} ({found}, confidence "
                f"{detected['confidence']:g}), which this server cannot translate: "
                f"it translates {langs.pair()}",
            )
        readings.append(Reading(detected, _route(langs, batcher, found, target)))
    return source, readings


def _route(langs: Languages, batcher: Batcher, source: str, target: str) -> str:
    """The batcher's key for a pair (its one model, or the model named ``source-target``, or
    two such keys joined by :data:`PIVOT` through another language), or a 400 when no model
    translates it."""
    if source not in langs.codes:
        raise ApiError(400, f"{source} is not supported: this server translates {langs.pair()}")
    if target not in langs.codes:
        raise ApiError(400, f"{target} is not supported: this server translates {langs.pair()}")
    if target not in langs.targets(source):
        raise ApiError(
            400,
            f"{language_name(target)} ({target}) is not available as a target language "
            f"from {language_name(source)} ({source}): this server translates {langs.pair()}",
        )
    via = langs.via(source, target)
    if via is not None:  # two models, one after the other: PIVOT joins their keys
        return f"{source}-{via}{PIVOT}{via}-{target}"
    return batcher.default if len(batcher.routes) == 1 else f"{source}-{target}"


#: What joins the two models' keys in the route of a pair reached through another language.
PIVOT = "|"


def legs(route: str) -> list[str]:
    """The batcher's keys a route goes through: one, or two for a pivot."""
    return route.split(PIVOT)
