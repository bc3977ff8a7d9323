"""Cleaning real parallel corpora: named filters a user can see, change and account for.

Software translations (gettext catalogues, help files) are noisy in recurring ways: keyboard
accelerators (``_File`` / ``&Apri``), placeholders (``%s``, ``%1``, ``{ $name }``, ``<b>``)
that a translator dropped or changed, Italian sides that are still English, one pair
repeated by many programs, whole paragraphs beside two-word strings. Each problem has one
filter here, applied in a fixed order; :func:`clean_corpus` returns the kept pairs *and* how
many each filter removed, so a run can report it per corpus and a user can decide whether a
filter is too strict for their data.

The filters (``CleaningConfig`` fields; each can be switched off):

* ``empty`` — a side empty after normalisation (and after stripping accelerators).
* ``long`` — a side with more than ``max_words`` words.
* ``ratio`` — one side more than ``max_ratio`` times longer than the other (in characters,
  when both are longer than ``ratio_min_chars``: "OK"/"Va bene" is not misaligned).
* ``placeholders`` — the two sides carry different placeholders or tags (a translator
  dropped ``%s``); pairs whose placeholders agree are kept, they teach copying. Character
  entities (``&apos;``, ``&quot;``, ``&amp;``) are escaped text, not placeholders.
* ``identical`` — source equals target (case-folded) with at least ``identical_min_words``
  words: almost always an untranslated string. Shorter ones ("Firefox", "OK") are names.
* ``untranslated`` — the target reads as the source language (its function words are the
  source language's, not the target's); only for a pair whose languages both have profiles
  with function words (attenzione.languages).
* ``excluded`` — either side is a sentence of an ``exclude`` set (test sets that must never
  be trained on), compared after normalisation and case-folding.
* ``duplicate`` — the same normalised pair again (across every corpus of the run).

Accelerators are not a filter but a repair: when both sides carry exactly one accelerator
marker, the markers are removed ("Save _As" / "Salva _come" → "Save As" / "Salva come").
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from attenzione.data.corpus import normalize
from attenzione.languages import function_words

Pair = tuple[str, str]

FILTERS = (
    "empty",
    "long",
    "ratio",
    "placeholders",
    "identical",
    "untranslated",
    "excluded",
    "duplicate",
)

# printf (%s, %1$d, %%), Qt/KDE (%1), Python/Fluent/ICU braces ({name}, { $n }) and XML-ish tags
# (<b>, </filename>, <nl/>). Character entities (&amp; &apos; &quot; &#39;) are NOT
# placeholders: they are an escaped character, which a translation may well not need ("a man
# &apos;s hand" / "die hand eines mannes": Moses-tokenized corpora such as Multi30k escape every
# apostrophe and quote, and counting them dropped 540 of its 29,000 training pairs).
_PLACEHOLDER = re.compile(
    r"%(?:\d+\$)?[-+#0]*\d*(?:\.\d+)?(?:hh|h|ll|l|L|z|j|t)?[diouxXeEfgGcsp%]"
    r"|%\d+"
    r"|\{[^{}\s][^{}]{0,40}\}|\{ ?\$[\w-]+ ?\}"
    r"|</?[A-Za-z][\w:-]*(?:\s[^<>]{0,200})?/?>"
)
# an accelerator marker: "_" or "&" right before a letter ("_File", "Sa_ve", "&Apri"), not an
# entity ("&amp;") and not a doubled "&&" (a literal ampersand in Qt strings).
_ACCEL = re.compile(r"(?<!&)[_&](?=[^\W\d_])(?![A-Za-z]+;)")


@dataclass(frozen=True)
class CleaningConfig:
    """The filters and their thresholds (see the module docstring); ``None`` switches one off."""

    max_words: int | None = 100
    max_ratio: float | None = 3.0
    ratio_min_chars: int = 20
    placeholders: bool = True
    identical_min_words: int | None = 3
    untranslated: bool = True
    strip_accelerators: bool = True
    dedup: bool = True
    src_lang: str = "en"
    tgt_lang: str = "it"

    def __post_init__(self) -> None:
        if self.max_words is not None and self.max_words < 1:
            raise ValueError(f"max_words must be >= 1, got {self.max_words}")
        if self.max_ratio is not None and self.max_ratio < 1:
            raise ValueError(f"max_ratio must be >= 1, got {self.max_ratio}")
        if self.identical_min_words is not None and self.identical_min_words < 1:
            raise ValueError(f"identical_min_words must be >= 1, got {self.identical_min_words}")


@dataclass
class CleaningReport:
    """How many pairs came in, went out, and what each filter removed."""

    read: int = 0
    kept: int = 0
    accelerators_stripped: int = 0
    removed: Counter[str] = field(default_factory=Counter)

    def to_dict(self) -> dict[str, Any]:
        return {
            "read": self.read,
            "kept": self.kept,
            "accelerators_stripped": self.accelerators_stripped,
            "removed": {name: self.removed.get(name, 0) for name in FILTERS},
        }

    def summary(self) -> str:
        parts = [f"{name} {n}" for name in FILTERS if (n := self.removed.get(name, 0))]
        removed = ", ".join(parts) if parts else "nothing"
        return f"{self.read} read, {self.kept} kept; removed: {removed}"


def placeholders(text: str) -> Counter[str]:
    """The placeholders and tags of ``text``, as a multiset (their order may differ)."""
    return Counter(m.group(0).replace(" ", "") for m in _PLACEHOLDER.finditer(text))


def strip_accelerator_pair(src: str, tgt: str) -> tuple[str, str] | None:
    """Both sides without their accelerator marker, when each side has exactly one; else None."""
    ms, mt = list(_ACCEL.finditer(src)), list(_ACCEL.finditer(tgt))
    if len(ms) != 1 or len(mt) != 1:
        return None
    # an identifier copied verbatim ("file_name" on both sides) is not an accelerator: a
    # marker inside a word that the translator left unchanged is taken for part of a name
    i = ms[0].start()
    inside = i > 0 and (src[i - 1].isalnum() or src[i - 1] in "_&")
    if inside and _word_at(src, i) == _word_at(tgt, mt[0].start()):
        return None
    return _ACCEL.sub("", src, count=1), _ACCEL.sub("", tgt, count=1)


def _word_at(text: str, i: int) -> str:
    start = text.rfind(" ", 0, i) + 1
    end = text.find(" ", i)
    return text[start : len(text) if end < 0 else end]


def reads_as(text: str, lang: str, other: str) -> bool:
    """True when ``text`` has more function words of ``lang`` than of ``other`` (at least 2;
    each language's from its profile, attenzione.languages: False if either has none)."""
    own, theirs = function_words(lang), function_words(other)
    if own is None or theirs is None:
        return False
    words = re.findall(r"[^\W\d_]+", text.casefold())
    a = sum(w in own for w in words)
    b = sum(w in theirs for w in words)
    return a >= 2 and a > b


def sentence_key(text: str) -> str:
    """How sentences are compared for exclusion and splits: normalised and case-folded."""
    return normalize(text).casefold()


def clean_corpus(
    pairs: Iterable[Pair],
    config: CleaningConfig,
    *,
    exclude: set[str] | None = None,
    seen: set[Pair] | None = None,
) -> tuple[list[Pair], CleaningReport]:
    """Normalise, repair accelerators and apply the filters in ``FILTERS`` order.

    ``exclude`` holds :func:`sentence_key` s that must not appear on either side. ``seen`` is
    shared between the corpora of one run, so a pair found in two corpora is kept once (in
    the first).
    """
    report = CleaningReport()
    seen = set() if seen is None else seen
    out: list[Pair] = []
    c = config
    for raw_src, raw_tgt in pairs:
        report.read += 1
        src, tgt = normalize(raw_src), normalize(raw_tgt)
        if c.strip_accelerators and (fixed := strip_accelerator_pair(src, tgt)) is not None:
            src, tgt = normalize(fixed[0]), normalize(fixed[1])
            report.accelerators_stripped += 1
        reason = _first_failing(src, tgt, c, exclude, seen)
        if reason:
            report.removed[reason] += 1
            continue
        if c.dedup:
            seen.add((src, tgt))
        out.append((src, tgt))
    report.kept = len(out)
    return out, report


def _first_failing(
    src: str, tgt: str, c: CleaningConfig, exclude: set[str] | None, seen: set[Pair]
) -> str:
    if not src or not tgt:
        return "empty"
    ns, nt = len(src.split()), len(tgt.split())
    if c.max_words is not None and max(ns, nt) > c.max_words:
        return "long"
    if (
        c.max_ratio is not None
        and min(len(src), len(tgt)) > c.ratio_min_chars
        and max(len(src), len(tgt)) > c.max_ratio * min(len(src), len(tgt))
    ):
        return "ratio"
    if c.placeholders and placeholders(src) != placeholders(tgt):
        return "placeholders"
    if (
        c.identical_min_words is not None
        and ns >= c.identical_min_words
        and src.casefold() == tgt.casefold()
    ):
        return "identical"
    if c.untranslated and reads_as(tgt, c.src_lang, c.tgt_lang):
        return "untranslated"
    if exclude and (sentence_key(src) in exclude or sentence_key(tgt) in exclude):
        return "excluded"
    if c.dedup and (src, tgt) in seen:
        return "duplicate"
    return ""
