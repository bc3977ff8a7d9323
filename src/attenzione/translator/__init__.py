"""The product: a model directory in memory that turns texts into translations.

``from attenzione.translator import Translator`` is the entry point; the names below are
imported on first use, so that reading the registry does not load torch's modules.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from attenzione.translator.candidates import Candidate, Translation
    from attenzione.translator.translator import Translator

__all__ = ["Candidate", "Translation", "Translator"]


def __getattr__(name: str) -> Any:
    if name == "Translator":
        from attenzione.translator.translator import Translator

        return Translator
    if name in ("Candidate", "Translation"):
        from attenzione.translator import candidates

        return getattr(candidates, name)
    raise AttributeError(f"module 'attenzione.translator' has no attribute {name!r}")
