"""Writing a model in another toolkit's format, into a directory, without losing a user's file.

The writer is the format's registered exporter (:mod:`attenzione.interop.registry`); this
module owns the directory: the whole export or what was there before (atomic), an earlier
export of the same format replaced file by file of ours (what the user added stays), and
anything else — a file, a model directory, a folder of the user's — refused in one line.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from attenzione import atomic
from attenzione.data.tokenizers import Tokenizer
from attenzione.interop.common import ExportRefused, unknown_settings
from attenzione.interop.registry import EXPORTERS, exporter
from attenzione.model.transformer import Transformer


def formats() -> tuple[str, ...]:
    """The names of the registered exporters."""
    return tuple(EXPORTERS)


def complete(fmt: str) -> Callable[[Path], bool]:
    """Whether a directory is a whole export of ``fmt``: its files, and the README written
    last that names the format (a model directory, or anything else, is never taken for one
    and replaced)."""
    need = exporter(fmt).needs

    def check(path: Path) -> bool:
        card = path / "README.md"
        if not card.is_file() or not all((path / name).is_file() for name in need):
            return False
        with card.open(encoding="utf-8", errors="replace") as f:
            return f.readline().endswith(f"exported for {fmt}\n")

    return check


def check_target(fmt: str, out: str | Path, source: str | Path | None = None) -> Path:
    """``out`` if an export of ``fmt`` may be written there (new, empty, or an earlier export
    of the format; not the model ``source`` nor inside it), else a one-line error."""
    exporter(fmt)  # an unknown format first
    target = Path(out)
    if target.exists() and not target.is_dir():
        raise NotADirectoryError(f"{target} is a file, not a directory")
    if target.is_dir() and any(target.iterdir()) and not complete(fmt)(target):
        raise FileExistsError(
            f"{target} exists and is not a {fmt} export: give a new or empty directory"
        )
    if source is not None and Path(source).exists() and target.exists():
        model, there = Path(source).resolve(), target.resolve()
        if model == there or there in model.parents:
            raise ValueError(f"{target} holds the model {source}: give another directory to write")
    atomic.check_replaceable(target, complete(fmt))  # the current directory, a twin in the way
    return target


def write(
    fmt: str,
    out: str | Path,
    model: Transformer,
    src_tokenizer: Tokenizer,
    tgt_tokenizer: Tokenizer,
    info: dict[str, Any],
    *,
    source: str | Path | None = None,
) -> Path:
    """Write ``model`` and its tokenizers to ``out`` in format ``fmt``, atomically: ``out``
    holds the whole export or what it held before (:func:`check_target`)."""
    target = check_target(fmt, out, source)
    unknown = unknown_settings(model.config)
    if unknown:
        raise ExportRefused(f"{fmt}: this export does not know {unknown[0]}")
    found = exporter(fmt)

    def fill(tmp: Path) -> None:
        found.write(tmp, model.eval(), src_tokenizer, tgt_tokenizer, info)

    # an earlier export is replaced file by file of ours: what the user added there stays
    return atomic.replace_directory(
        target, fill, complete=complete(fmt), owned=found.writes.__contains__
    )
