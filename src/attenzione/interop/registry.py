"""The formats other toolkits write, each registered by name: an importer reads one into our
Transformer, an exporter writes ours as one.

An importer is a function ``load(directory, *, origin=None, pair=None) → Imported`` — the
model, its two tokenizers and the ``info.json`` an imported model directory gets — with a
``detect(directory)`` that says whether a directory is of its format. An exporter is a function
``write(tmp, model, src_tokenizer, tgt_tokenizer, info)`` that fills an empty directory, with
the names it may write (a re-export replaces those and keeps what a user added). A new format
is one module that registers both (:mod:`attenzione.interop.marian`,
:mod:`attenzione.interop.huggingface`, :mod:`attenzione.interop.ctranslate2`); nothing else
changes.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from attenzione.data.tokenizers import Tokenizer
from attenzione.model.transformer import Transformer


@dataclass(frozen=True)
class Imported:
    """What an importer gives: a model of ours, its tokenizers and its ``info.json``."""

    model: Transformer
    src_tokenizer: Tokenizer
    tgt_tokenizer: Tokenizer
    info: dict[str, Any]


class Load(Protocol):
    def __call__(
        self, directory: Path, *, origin: str | None = None, pair: tuple[str, str] | None = None
    ) -> Imported: ...


Write = Callable[[Path, Transformer, Tokenizer, Tokenizer, dict[str, Any]], None]


@dataclass(frozen=True)
class Importer:
    name: str
    load: Load
    detect: Callable[[Path], bool]
    describes: str  # what a directory of the format is, for an error naming the formats


@dataclass(frozen=True)
class Exporter:
    name: str
    write: Write
    writes: frozenset[str]  # every name an export may write
    needs: tuple[str, ...]  # the files a whole export has (besides its README, written last)


IMPORTERS: dict[str, Importer] = {}
EXPORTERS: dict[str, Exporter] = {}


def register_importer(
    name: str, *, detect: Callable[[Path], bool], describes: str
) -> Callable[[Load], Load]:
    """Register the decorated function as the importer of format ``name``."""

    def add(load: Load) -> Load:
        if name in IMPORTERS:
            raise ValueError(f"an importer named {name!r} is registered already")
        IMPORTERS[name] = Importer(name, load, detect, describes)
        return load

    return add


def register_exporter(
    name: str, *, writes: frozenset[str], needs: tuple[str, ...]
) -> Callable[[Write], Write]:
    """Register the decorated function as the exporter of format ``name``."""

    def add(write: Write) -> Write:
        if name in EXPORTERS:
            raise ValueError(f"an exporter named {name!r} is registered already")
        EXPORTERS[name] = Exporter(name, write, writes, needs)
        return write

    return add


def importer_for(directory: Path, fmt: str | None = None) -> Importer:
    """The importer of format ``fmt``, or of the first format ``directory`` is; a directory of
    no registered format is a one-line ValueError naming what each would need."""
    if fmt is not None:
        if fmt not in IMPORTERS:
            raise ValueError(f"no importer for {fmt!r}: there are {', '.join(IMPORTERS)}")
        return IMPORTERS[fmt]
    for importer in IMPORTERS.values():
        if importer.detect(directory):
            return importer
    kinds = "; ".join(i.describes for i in IMPORTERS.values())
    raise ValueError(f"{directory} is no format this package imports ({kinds})")


def exporter(fmt: str) -> Exporter:
    if fmt not in EXPORTERS:
        raise ValueError(f"format must be one of {', '.join(EXPORTERS)}, not {fmt!r}")
    return EXPORTERS[fmt]
