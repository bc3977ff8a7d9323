"""Language profiles: what the text steps, the ranking terms and the cleaning filters know of a
language, as data, one JSON file a language in ``profiles/`` (``en.json``, ``it.json``, …).

A new language is a new profile file; nothing in the code names a language. A profile says:

==========================  =====================================================================
``case``                    how the script uses capitals: ``"sentence"`` (a sentence's first
                            word and names: English, Italian), ``"nouns"`` (every noun too:
                            German), ``"none"`` (a script without case)
``title_case_minor_words``  the short words a headline in title case leaves lower-case (empty:
                            the language writes no title case)
``commas``                  ``"pause"`` (commas where a speaker pauses) or ``"clause"`` (one
                            before every subordinate clause, as German writes "Ich weiß, dass")
``compounds``               whether words are joined into compounds a word list cannot hold
``numbers``                 the words that make a number a label, not a quantity ("Figure 1.1",
                            "version 2.3", "2.30 pm"), month names, the words that join a list of
                            numbers, numeral suffixes written on the digits ("un 18enne")
``currency_words``          the words a currency is named with ("dollar*": a prefix)
``function_words``          frequent words that tell the language's text from another's (the
                            ``untranslated`` cleaning filter)
==========================  =====================================================================

Steps and ranking terms declare what they need of a pair's profiles by the names of
:data:`REQUIREMENTS` (``Step.needs``, ``register(…, needs=…)``); the pipeline a pair gets by
default (:func:`attenzione.pipeline.pairs.default_pipeline`) is every step and term whose needs
its profiles meet. A step that reads language words reads those of both languages of the pair
(:class:`PairWords`): a translation carries words of its source (names, quotations), and a
number or a currency is named on both sides.

A user's own profiles live outside the package, so that an upgrade never loses them: in the
folders :data:`ENV` names (separated by ``:``, ``;`` on Windows; the first that has a language
wins), else in ``$XDG_CONFIG_HOME/attenzione/languages/`` (``~/.config/attenzione/languages/``).
A profile there replaces the package's profile of its language whole. Profiles are read once
and kept (:func:`clear_cache` forgets them); a broken one is a ValueError of one line that names
its file.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Any

#: The environment variable naming the folders of a user's own language profiles.
ENV = "ATTENZIONE_LANGUAGES"
CASES = ("sentence", "nouns", "none")
COMMAS = ("pause", "clause")
_NUMBER_LISTS = (
    "labels",
    "capitalised_labels",
    "labels_after",
    "time_suffixes",
    "months",
    "list_words",
    "numeral_suffixes",
)


@dataclass(frozen=True)
class Profile:
    """One language's profile (see the module docstring for each field)."""

    code: str
    name: str
    case: str
    commas: str
    compounds: bool
    title_case_minor_words: frozenset[str] = frozenset()
    numbers: dict[str, frozenset[str]] = field(default_factory=dict)
    currency_words: tuple[str, ...] = ()
    function_words: frozenset[str] = frozenset()

    @classmethod
    def from_dict(cls, data: dict[str, Any], where: str) -> Profile:
        """The profile ``data`` describes; a ValueError naming ``where`` and the field if a
        field is missing or of the wrong kind."""

        def bad(name: str, what: str) -> ValueError:
            return ValueError(f"{where}: {name!r} must be {what}")

        def words(value: Any, name: str) -> frozenset[str]:
            if not isinstance(value, list) or not all(isinstance(w, str) and w for w in value):
                raise bad(name, "a list of words")
            return frozenset(w.lower() for w in value)

        if not isinstance(data, dict):
            raise ValueError(f"{where}: a profile is a JSON object")
        for name, kind in (("code", str), ("name", str), ("compounds", bool)):
            if not isinstance(data.get(name), kind):
                raise bad(name, f"a {kind.__name__}")
        for name, allowed in (("case", CASES), ("commas", COMMAS)):
            if data.get(name) not in allowed:
                raise bad(name, " or ".join(map(repr, allowed)))
        numbers = data.get("numbers", {})
        if not isinstance(numbers, dict) or set(numbers) - set(_NUMBER_LISTS):
            raise bad("numbers", f"an object of the lists {', '.join(_NUMBER_LISTS)}")
        currency = data.get("currency_words", [])
        return cls(
            code=data["code"],
            name=data["name"],
            case=data["case"],
            commas=data["commas"],
            compounds=data["compounds"],
            title_case_minor_words=words(
                data.get("title_case_minor_words", []), "title_case_minor_words"
            ),
            numbers={k: words(numbers.get(k, []), f"numbers.{k}") for k in _NUMBER_LISTS},
            currency_words=tuple(sorted(words(currency, "currency_words"))),
            function_words=words(data.get("function_words", []), "function_words"),
        )


def user_folders() -> list[Path]:
    """The folders of the user's own profiles, first first: those :data:`ENV` names, else
    ``$XDG_CONFIG_HOME/attenzione/languages`` (``~/.config`` when it is unset or relative)."""
    named = [Path(p).expanduser() for p in os.environ.get(ENV, "").split(os.pathsep) if p.strip()]
    if named:
        return named
    config = os.environ.get("XDG_CONFIG_HOME", "").strip()
    if config and Path(config).is_absolute():
        base = Path(config)
    else:
        try:
            base = Path.home() / ".config"
        except RuntimeError:  # no home directory to be found: no user profiles
            return []
    return [base / "attenzione" / "languages"]


def _files() -> dict[str, tuple[Traversable, bool]]:
    """Each language's profile file by code, and whether it is the user's: the user's folders
    first (the first that has a language wins), then the package's own."""
    found: dict[str, tuple[Traversable, bool]] = {}
    for folder in user_folders():
        if not folder.is_dir():
            continue
        try:
            paths = sorted(folder.iterdir())
        except OSError as exc:
            raise ValueError(
                f"language profiles folder {folder}: cannot be read ({exc.strerror or exc})"
            ) from None
        for path in paths:
            if path.name.lower().endswith(".json") and path.is_file():
                found.setdefault(path.name[:-5].lower(), (path, True))
    shipped = resources.files(__package__) / "profiles"
    for item in shipped.iterdir():
        if item.name.endswith(".json"):
            found.setdefault(item.name[:-5], (item, False))
    return found


def known_languages() -> tuple[str, ...]:
    """The codes of the languages with a profile (the package's and the user's), sorted."""
    return tuple(sorted(_files()))


def profile(code: str | None) -> Profile | None:
    """The profile of the language ``code`` (``"en"``, ``"de"``; case and a region are
    ignored: ``"en-GB"`` → ``en``), or None for a language without one."""
    if not code:
        return None
    return _load(code.strip().lower().replace("_", "-").split("-")[0])


def clear_cache() -> None:
    """Forget the profiles read so far (and the pair words made of them): the next lookup
    reads the folders again, after a user's profile was added or changed."""
    _load.cache_clear()
    pair_words.cache_clear()


@cache
def _load(base: str) -> Profile | None:
    entry = _files().get(base)
    if entry is None:
        return None
    path, users = entry
    where = f"language profile {path}" if users else f"language profile {path.name}"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError:
        raise ValueError(f"{where}: not UTF-8 text (a profile is JSON in UTF-8)") from None
    except json.JSONDecodeError as exc:
        raise ValueError(
            f"{where}: not valid JSON: {exc.msg} at line {exc.lineno}, column {exc.colno}"
        ) from None
    except RecursionError:
        raise ValueError(f"{where}: not a profile: its JSON is nested too deeply") from None
    except OSError as exc:
        raise ValueError(f"{where}: cannot be read ({exc.strerror or exc})") from None
    loaded = Profile.from_dict(data, where)
    if loaded.code != base:
        raise ValueError(f"{where}: its code is {loaded.code!r}")
    return loaded


# ------------------------------------------------------------------ what steps and terms need
Requirement = Callable[[Profile | None, Profile | None], bool]

REQUIREMENTS: dict[str, Requirement] = {
    # capitals only at a sentence's start and on names, on both sides: a line can be read in
    # sentence case and written back (German capitalises every noun)
    "sentence-case": lambda s, t: bool(s and t and s.case == t.case == "sentence"),
    # the target writes a sentence's continuation lower-case
    "target-sentence-case": lambda s, t: bool(t and t.case == "sentence"),
    # the source writes headlines in title case, with these minor words
    "source-title-case": lambda s, t: bool(s and s.title_case_minor_words),
    # the source's label words tell a section number or a version from a quantity
    "source-number-labels": lambda s, t: bool(s and s.numbers.get("labels")),
    # both sides put commas by the same rule, so a source comma asks for one in the translation
    "same-comma-rules": lambda s, t: bool(s and t and s.commas == t.commas),
    # the target's words are whole words a word list can hold (no compounds)
    "target-word-list": lambda s, t: bool(t and not t.compounds and t.case != "none"),
}


def meets(needs: Iterable[str], source: str | None, target: str | None) -> bool:
    """Whether the pair's profiles meet every one of ``needs`` (names of
    :data:`REQUIREMENTS`; an unknown name is a KeyError, a bug in the step's declaration)."""
    s, t = profile(source), profile(target)
    return all(REQUIREMENTS[name](s, t) for name in needs)


# ------------------------------------------------------------------ the words of a pair
@dataclass(frozen=True)
class PairWords:
    """The words the number and currency steps look for, of both languages of a pair (the
    union of their profiles; a language without a profile adds none)."""

    labels: frozenset[str]
    capitalised_labels: frozenset[str]
    months: frozenset[str]
    label_after: re.Pattern[str]  # after a number: "the 1.1 version", "2.30 pm"
    list_gap: re.Pattern[str]  # between two numbers of one list: ", ", " and ", " to "
    numeral_suffix: re.Pattern[str]  # a suffix written on the digits: "18enne"
    currency_word: re.Pattern[str]  # a currency named in words: "dollars", "euro"


_NEVER = r"(?!)"  # a pattern that matches nothing


def _alternatives(words: Iterable[str]) -> str:
    """A regex alternation of ``words`` (longest first; "dollar*" → a prefix), or one that
    matches nothing."""
    parts = [
        re.escape(w[:-1]) + r"\w*" if w.endswith("*") else re.escape(w)
        for w in sorted(set(words), key=lambda w: (-len(w), w))
    ]
    return "|".join(parts) or _NEVER


def _profiles(source: str | None, target: str | None) -> list[Profile]:
    """The profiles of the pair's languages that have one."""
    return [p for p in (profile(source), profile(target)) if p is not None]


@cache
def pair_words(source: str | None, target: str | None) -> PairWords:
    """The :class:`PairWords` of the pair ``source`` → ``target`` (either may be unknown)."""
    found = _profiles(source, target)

    def union(key: str) -> frozenset[str]:
        return frozenset().union(*(p.numbers.get(key, frozenset()) for p in found))

    after, suffixes = union("labels_after"), union("time_suffixes")
    label_after = "|".join(
        ([rf"\s+(?:{_alternatives(after)})\b"] if after else [])
        + ([rf"\s*(?:{_alternatives(suffixes)})\b"] if suffixes else [])
    )
    list_words = _alternatives(union("list_words"))
    currency = {w for p in found for w in p.currency_words}
    return PairWords(
        labels=union("labels"),
        capitalised_labels=union("capitalised_labels"),
        months=union("months"),
        label_after=re.compile(label_after or _NEVER, re.IGNORECASE),
        list_gap=re.compile(rf"\s*(?:,|/|{list_words}|-|–)\s*"),
        numeral_suffix=re.compile(f"(?:{_alternatives(union('numeral_suffixes'))})", re.I),
        currency_word=re.compile(
            rf"(?<!\w)(?:{_alternatives(currency | CURRENCY_CODES)})(?!\w)", re.IGNORECASE
        ),
    )


# ISO 4217 codes a text names a currency with, in any language
CURRENCY_CODES = frozenset({"usd", "eur", "gbp"})
# codes that are written capitalised and are no names ("EUR 2.5 million")
CURRENCY_CODE_NAMES = frozenset(
    {"eur", "usd", "gbp", "us", "chf", "jpy", "cad", "aud", "cny", "inr"}
)


def minor_words(source: str | None, target: str | None) -> frozenset[str]:
    """The title-case minor words of the pair's languages (their union)."""
    found = _profiles(source, target)
    return frozenset().union(*(p.title_case_minor_words for p in found))


def languages_of(info: dict[str, Any]) -> dict[str, str | None]:
    """``source_language`` and ``target_language`` of a model's ``info.json`` (None where it
    names none), as :class:`attenzione.pipeline.base.Context` takes them."""
    return {
        key: value if isinstance(value := info.get(key), str) and value else None
        for key in ("source_language", "target_language")
    }


def function_words(code: str | None) -> frozenset[str] | None:
    """The language's function words (None: no profile, or a profile without them)."""
    p = profile(code)
    return p.function_words if p is not None and p.function_words else None
