"""The models a user can name by language pair: those shipped in the package, and their own.

A model directory says which pair it translates in its ``info.json`` (``source_language`` /
``target_language``, ISO 639-1 codes, written by ``attenzione train``); one that does not say
is read from its directory's name (``en-it``). The package ships one directory per pair
under ``attenzione/pretrained/``. A user's own models are found the same way in the user
model folder — ``$XDG_DATA_HOME/attenzione/models`` (``~/.local/share/attenzione/models``),
where ``attenzione models install`` puts them — or, when it is set, in the folders listed in
the environment variable :data:`ENV` instead (separated by ``:``, ``;`` on Windows; installs
go to the first), each holding one model directory per pair; a pair found there is taken
before the shipped one, so
that a model trained at home replaces the shipped one without a ``--model`` on every call. A
model directory there whose pair neither its ``info.json`` nor its name tells is refused in
one line (:class:`UnknownPair`): it was once taken for English→Italian, the pair a directory
given with ``--model`` is read as, and replaced the shipped model with, say, a German one.

This module reads JSON only (no torch): ``attenzione models`` and the option checks that use
it answer at once.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

PRETRAINED_ROOT = Path(__file__).resolve().parents[1] / "pretrained"
#: The environment variable naming folders of one's own model directories.
ENV = "ATTENZIONE_MODELS"
#: The pair a call that names none translates.
DEFAULT_PAIR = ("en", "it")


class UnknownPair(ValueError):
    """No installed model translates the pair asked for (the message names those there are)."""


@dataclass(frozen=True)
class InstalledModel:
    """One model directory found by :func:`installed`."""

    source: str
    target: str
    path: Path
    shipped: bool
    info: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)

    @property
    def pair(self) -> str:
        return f"{self.source}-{self.target}"

    def size_bytes(self) -> int:
        return sum(p.stat().st_size for p in self.path.rglob("*") if p.is_file())


def _read_info(path: Path) -> dict[str, Any]:
    """``info.json`` of the model directory ``path`` ({} if absent, damaged, or a link that
    leads out of the directory, which loading the model refuses)."""
    file = path / "info.json"
    try:
        if not file.resolve().is_relative_to(path.resolve()):
            return {}
        info = json.loads(file.read_text(encoding="utf-8"))
    # ValueError: damaged, or a number of thousands of digits; RuntimeError: a loop of links,
    # or nested past the parser's limit (loading the model says which, in one line)
    except (OSError, ValueError, RuntimeError):
        return {}
    return info if isinstance(info, dict) else {}


def pair_of(path: Path, info: Mapping[str, Any] | None = None) -> tuple[str, str]:
    """The pair a model directory translates, lower-case: its ``info.json``'s, else its
    directory's name (``it-en``), else English→Italian (what this project trained first)."""
    return told_pair(path, info) or DEFAULT_PAIR


def told_pair(path: Path, info: Mapping[str, Any] | None = None) -> tuple[str, str] | None:
    """The pair a model directory says it translates, lower-case: its ``info.json``'s, else
    its directory's name (``it-en``); None when neither tells."""
    info = _read_info(path) if info is None else info
    source, target = info.get("source_language"), info.get("target_language")
    if isinstance(source, str) and isinstance(target, str) and source and target:
        return source.lower(), target.lower()
    source, sep, target = Path(path).name.partition("-")
    if sep and source.isalpha() and target.isalpha() and 2 <= len(source) <= 3 >= len(target) >= 2:
        return source.lower(), target.lower()
    return None


def _model_at(path: Path, shipped: bool) -> InstalledModel | None:
    """The model directory at ``path``, or None when it is not one (no config.json);
    :class:`UnknownPair` when its pair cannot be told: a registry lists models by pair, and
    guessing one would let the model take the place of another."""
    if not (path / "config.json").is_file():
        return None
    info = _read_info(path)
    pair = told_pair(path, info)
    if pair is None:
        raise UnknownPair(
            f"{path} (a model directory in {ENV if not shipped else 'the package'}) does not "
            "say which pair it translates: record source_language and target_language in its "
            "info.json, or name its directory after the pair (fr-en)"
        )
    return InstalledModel(pair[0], pair[1], path, shipped, info)


def default_user_dir() -> Path:
    """``$XDG_DATA_HOME/attenzione/models`` (``~/.local/share/attenzione/models``)."""
    base = os.environ.get("XDG_DATA_HOME", "").strip() or str(Path.home() / ".local" / "share")
    return Path(base).expanduser() / "attenzione" / "models"


def user_dirs() -> list[Path]:
    """The user's model folders: those :data:`ENV` names, else :func:`default_user_dir`."""
    named = [Path(p).expanduser() for p in os.environ.get(ENV, "").split(os.pathsep) if p.strip()]
    return named or [default_user_dir()]


def install_dir() -> Path:
    """Where ``attenzione models install`` writes: the first of :func:`user_dirs`."""
    return user_dirs()[0]


def search_path() -> list[tuple[Path, bool]]:
    """The folders searched, in order: the user's (:func:`user_dirs`), then the package's."""
    return [*((p, False) for p in user_dirs()), (PRETRAINED_ROOT, True)]


def installed() -> list[InstalledModel]:
    """Every model directory found, one per pair (the first found wins), by pair."""
    found: dict[str, InstalledModel] = {}
    for root, shipped in search_path():
        if not root.is_dir():
            continue
        for path in sorted(root.iterdir()):
            model = _model_at(path, shipped) if path.is_dir() else None
            if model is not None:
                found.setdefault(model.pair, model)
    return sorted(found.values(), key=lambda m: m.pair)


def pairs_text(models: list[InstalledModel]) -> str:
    return ", ".join(m.pair for m in models) or "none"


def find(source: str | None = None, target: str | None = None) -> InstalledModel:
    """The installed model from ``source`` to ``target``; either may be None when the other
    leaves one model (``--from it``), both None give English→Italian.

    :class:`UnknownPair` (one line, naming the installed pairs) when there is none, or when
    several fit and the call must say which.
    """
    source = source.strip().lower() if source else None
    target = target.strip().lower() if target else None
    if source is None and target is None:
        source, target = DEFAULT_PAIR
    models = installed()
    fits = [
        m
        for m in models
        if (source is None or m.source == source) and (target is None or m.target == target)
    ]
    if len(fits) == 1:
        return fits[0]
    asked = (
        f"{source}→{target}"
        if source and target
        else f"from {source}"
        if source
        else f"into {target}"
    )
    if not fits:
        raise UnknownPair(
            f"no installed model translates {asked}: the installed pairs are {pairs_text(models)}"
        )
    raise UnknownPair(
        f"several installed models fit {asked} ({pairs_text(fits)}): give both --from and --to"
    )


#: the language a pivot goes through first, when several would do (as Argos and LibreTranslate)
PIVOT_FIRST = "en"


def pivot_language(source: str, target: str, pairs: Iterable[tuple[str, str]]) -> str | None:
    """The language b through which ``source`` → b → ``target`` goes with two of ``pairs``
    (English first, then the others in order), or None: when the pair is itself one of them
    (a direct model always wins) or no two of them join up."""
    direct = set(pairs)
    if (source, target) in direct or source == target:
        return None
    middles = sorted({b for a, b in direct if a == source} - {source, target})
    middles.sort(key=lambda b: b != PIVOT_FIRST)  # English first, the rest in order
    return next((b for b in middles if (b, target) in direct), None)


def route(source: str, target: str, models: list[InstalledModel] | None = None
          ) -> list[InstalledModel]:  # fmt: skip
    """The models that translate ``source`` → ``target``: the direct one when installed (it
    always wins), else two through a pivot language b (``source`` → b → ``target``; English
    first, then the others in order). :class:`UnknownPair` (one line) when neither exists."""
    source, target = source.strip().lower(), target.strip().lower()
    models = installed() if models is None else models
    by_pair = {m.pair: m for m in models}
    direct = by_pair.get(f"{source}-{target}")
    if direct is not None:
        return [direct]
    b = pivot_language(source, target, [(m.source, m.target) for m in models])
    if b is not None:
        return [by_pair[f"{source}-{b}"], by_pair[f"{b}-{target}"]]
    raise UnknownPair(
        f"no installed model translates {source}→{target}, directly or through another "
        f"language: the installed pairs are {pairs_text(models)} (attenzione models install "
        f"{source} {target})"
    )


def reachable(models: list[InstalledModel] | None = None) -> dict[str, list[str]]:
    """Each source language and the targets it reaches, directly or through one pivot."""
    models = installed() if models is None else models
    out: dict[str, set[str]] = {}
    direct = {(m.source, m.target) for m in models}
    for a, b in direct:
        out.setdefault(a, set()).add(b)
        for b2, c in direct:
            if b2 == b and c != a:
                out[a].add(c)
    return {a: sorted(ts) for a, ts in sorted(out.items())}
