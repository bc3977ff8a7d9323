"""Other toolkits' formats at the border: importers into our Transformer and exporters out of
it, one module a format, registered by name (:mod:`attenzione.interop.registry`), all reading
one table of tensor names (:mod:`attenzione.interop.names`).

* :mod:`~attenzione.interop.marian` imports a Hugging Face ``MarianMTModel`` (OPUS-MT);
  :mod:`~attenzione.interop.hub` downloads one by hub id and reads its card.
* :mod:`~attenzione.interop.huggingface` and :mod:`~attenzione.interop.ctranslate2` export,
  through :mod:`~attenzione.interop.export` (the directory's safety) and
  :mod:`~attenzione.interop.common` (what both writers share).
* :mod:`~attenzione.interop.legacy` reads the model directories older versions wrote in a
  layout the core no longer has.

The core (``model/``, ``search/``) knows none of these conventions: an import is an ordinary
model of ours once it is loaded.
"""

from __future__ import annotations

from pathlib import Path

from attenzione.interop import ctranslate2 as ctranslate2
from attenzione.interop import huggingface as huggingface
from attenzione.interop import marian as marian
from attenzione.interop.registry import EXPORTERS, IMPORTERS, Imported, importer_for

__all__ = ["EXPORTERS", "IMPORTERS", "Imported", "importer_for", "load"]


def load(
    directory: str | Path,
    fmt: str | None = None,
    *,
    origin: str | None = None,
    pair: tuple[str, str] | None = None,
) -> Imported:
    """The model a directory of another toolkit's format holds, with its tokenizers and
    ``info.json`` (``fmt``: the format's name; None: the first registered that detects it)."""
    path = Path(directory)
    return importer_for(path, fmt).load(path, origin=origin, pair=pair)
