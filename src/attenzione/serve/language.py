"""Which languages the loaded model speaks, and which language a text is in.

A model directory knows its pair from ``info.json`` (``source_language`` /
``target_language``, ISO 639-1 codes); a directory that does not say is taken to be what
this project ships, English→Italian, and ``attenzione serve --source-lang/--target-lang``
can say otherwise. ``/languages`` lists exactly that pair — never a language the model cannot
translate.

Detection uses py3langid (langid.py's model, shipped inside the package: offline, ~100
languages, a naive-Bayes over byte n-grams). Like LibreTranslate, ``/detect`` answers with
the server's own languages ranked; unlike it, the confidence of each is the identifier's
probability over *all* the languages it knows (×100), so French text is reported as, say,
"en 2" rather than "en 70" just because French is not on offer.
"""

from __future__ import annotations

import threading
from typing import Any

NAMES = {
    "ar": "Arabic", "bg": "Bulgarian", "ca": "Catalan", "cs": "Czech", "da": "Danish",
    "de": "German", "el": "Greek", "en": "English", "eo": "Esperanto", "es": "Spanish",
    "et": "Estonian", "fa": "Persian", "fi": "Finnish", "fr": "French", "ga": "Irish",
    "he": "Hebrew", "hi": "Hindi", "hu": "Hungarian", "id": "Indonesian", "it": "Italian",
    "ja": "Japanese", "ko": "Korean", "lt": "Lithuanian", "lv": "Latvian", "ms": "Malay",
    "nb": "Norwegian", "nl": "Dutch", "pl": "Polish", "pt": "Portuguese", "ro": "Romanian",
    "ru": "Russian", "sk": "Slovak", "sl": "Slovenian", "sq": "Albanian", "sv": "Swedish",
    "th": "Thai", "tr": "Turkish", "uk": "Ukrainian", "ur": "Urdu", "vi": "Vietnamese",
    "zh": "Chinese",
}  # fmt: skip


def language_name(code: str) -> str:
    return NAMES.get(code, code)


class Languages:
    """The model's pair, and detection restricted to (and ranked over) its languages."""

    def __init__(self, source: str, target: str) -> None:
        self.source = source.lower()
        self.target = target.lower()
        self.codes = [self.source] if self.source == self.target else [self.source, self.target]
        self._identifier: Any = None
        self._lock = threading.Lock()

    def listing(self) -> list[dict[str, Any]]:
        """``GET /languages``: each language the model knows, with its real targets."""
        return [
            {
                "code": c,
                "name": language_name(c),
                "targets": [self.target] if c == self.source else [],
            }
            for c in self.codes
        ]

    def _ident(self) -> Any:
        with self._lock:
            if self._identifier is None:
                from py3langid.langid import MODEL_FILE, LanguageIdentifier

                self._identifier = LanguageIdentifier.from_model_file(MODEL_FILE, norm_probs=True)
            return self._identifier

    def load(self) -> None:
        """Load the identifier now (0.5 s), so that the first request does not wait for it."""
        self._ident()

    def detect(self, text: str) -> list[dict[str, Any]]:
        """The model's languages, most likely first: ``[{"confidence": 0–100, "language"}]``."""
        ident = self._ident()
        with self._lock:  # the identifier is plain numpy; one call at a time is enough
            ranked = dict(ident.rank(text))
        scored = sorted(
            ((round(100.0 * float(ranked.get(c, 0.0)), 2), c) for c in self.codes),
            key=lambda pair: pair[0],
            reverse=True,
        )
        return [{"confidence": conf, "language": code} for conf, code in scored]
