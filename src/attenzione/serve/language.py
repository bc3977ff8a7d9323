"""Which pairs the loaded models translate, and which language a text is in.

A model directory knows its pair from ``info.json`` (``source_language`` /
``target_language``, ISO 639-1 codes; :mod:`attenzione.translator.registry`). ``/languages`` lists
exactly the loaded pairs, each source with its targets — never a language no model can
translate.

Detection uses py3langid (langid.py's model, shipped inside the package: offline, 140-odd
languages, a naive-Bayes over byte n-grams) over **every** language it knows, so that it can
say "this is Chinese, not English": ``source: "auto"`` on text the identifier is sure is in a
language the server does not translate from is refused with a message naming it. Varieties
the identifier tells apart but that share one written standard (Wu and Cantonese Chinese,
Egyptian and Moroccan Arabic, the two Norwegians) are summed into their macrolanguage.

Short texts ("Hello!", "OK") are a toss-up for any n-gram identifier: the top language of
"Hello!" is Breton at 5 %. ``/detect`` still lists what the identifier says, most likely
first (a client reads the first entry), with the probabilities that tell how unsure it is.
For ``source: "auto"`` (:meth:`Languages.detect_source`) a choice must be made, in this order:

1. text that is **already in the target language** comes back as it is (as LibreTranslate
   does when source and target are the same): the identifier is sure of the target, or the
   target is at least :data:`SAME_FLOOR` likely and :data:`SAME_RATIO` times likelier than
   every source that translates into it. "Buonasera, come stai?" into Italian is Italian
   (40 %) far more than English (2 %): translating it "from English" gives garbage;
2. the identifier's answer when it is sure (:data:`SURE`);
3. otherwise what the server's traffic mostly is: the most likely of the languages that
   translate into the target.

A model may translate from a language the identifier does not know (an imported OPUS-MT
model of one of the hundreds of pairs it has; a code of one's own): the identifier cannot
say a text is not in it, so where such a language translates into the target, a sure answer
of another language that does not is not a refusal — the text is read as that language,
with the identifier's confidence in it (0).

The confidence reported is always the identifier's probability (×100), never inflated.
"""

from __future__ import annotations

import threading
from typing import Any

NAMES = {
    "ar": "Arabic", "bg": "Bulgarian", "ca": "Catalan", "cs": "Czech", "da": "Danish",
    "de": "German", "el": "Greek", "en": "English", "eo": "Esperanto", "es": "Spanish",
    "et": "Estonian", "fa": "Persian", "fi": "Finnish", "fr": "French", "ga": "Irish",
    "he": "Hebrew", "hi": "Hindi", "hu": "Hungarian", "id": "Indonesian", "it": "Italian",
    "ja": "Japanese", "ka": "Georgian", "hr": "Croatian", "sr": "Serbian", "bs": "Bosnian",
    "is": "Icelandic", "la": "Latin", "gl": "Galician", "eu": "Basque", "cy": "Welsh",
    "mk": "Macedonian", "bn": "Bengali", "ta": "Tamil", "no": "Norwegian", "af": "Afrikaans",
    "sw": "Swahili", "tl": "Tagalog", "lb": "Luxembourgish", "mt": "Maltese", "hy": "Armenian",
    "ko": "Korean", "lt": "Lithuanian", "lv": "Latvian", "ms": "Malay",
    "nb": "Norwegian", "nl": "Dutch", "pl": "Polish", "pt": "Portuguese", "ro": "Romanian",
    "ru": "Russian", "sk": "Slovak", "sl": "Slovenian", "sq": "Albanian", "sv": "Swedish",
    "th": "Thai", "tr": "Turkish", "uk": "Ukrainian", "ur": "Urdu", "vi": "Vietnamese",
    "zh": "Chinese",
}  # fmt: skip


#: Varieties the identifier separates, summed into the language a translator would name.
MACRO = {"wuu": "zh", "yue": "zh", "arz": "ar", "ary": "ar", "nn": "no", "nb": "no", "uzs": "uz"}

#: Probability over all languages from which the identifier's top answer is taken as known.
SURE = 0.5
#: A text is taken as already in the target language when the target is at least this likely
#: and :data:`SAME_RATIO` times likelier than any source that translates into it. Measured on
#: short texts: Italian greetings score 0.2–0.4 for Italian and 0.01–0.02 for English, while a
#: toss-up ("Hello!", "Ciao!", "OK") leaves every language under 0.05.
SAME_FLOOR = 0.1
SAME_RATIO = 5.0


def language_name(code: str) -> str:
    return NAMES.get(code, code)


class Languages:
    """The pairs the server translates, and detection ranked over their languages.

    ``Languages(("en", "it"), ("it", "en"))``: one pair per model. A pair no model translates
    but two do, one after the other (it → en → de), is reachable through that language, as
    LibreTranslate and Argos pivot through English (``pivot=False``: direct pairs only)."""

    def __init__(self, *pairs: tuple[str, str], pivot: bool = True) -> None:
        if not pairs:
            raise ValueError("a server translates at least one pair")
        from attenzione.translator.registry import pivot_language

        self.pairs = [(s.lower(), t.lower()) for s, t in pairs]
        # (a, c) → b for each pair reached through one other language b
        self.pivots: dict[tuple[str, str], str] = {}
        if pivot:
            codes = dict.fromkeys(c for pair in self.pairs for c in pair)
            for a in codes:
                for c in codes:
                    b = pivot_language(a, c, self.pairs)
                    if b is not None:
                        self.pivots[(a, c)] = b
        # every language named, sources first, in the order given (no repeats)
        self.codes = list(dict.fromkeys([s for s, _ in self.pairs] + [t for _, t in self.pairs]))
        self._identifier: Any = None
        self._lock = threading.Lock()

    @property
    def source(self) -> str:
        """The first pair's source: the page's and /frontend/settings' default."""
        return self.pairs[0][0]

    @property
    def target(self) -> str:
        return self.pairs[0][1]

    def targets(self, source: str) -> list[str]:
        """The languages ``source`` is translated into: by a model of their own, then
        through another language."""
        direct = [t for s, t in self.pairs if s == source]
        return direct + [c for (a, c) in self.pivots if a == source and c not in direct]

    def via(self, source: str, target: str) -> str | None:
        """The language ``source`` → ``target`` goes through (None: a model of its own)."""
        return self.pivots.get((source, target))

    def listing(self) -> list[dict[str, Any]]:
        """``GET /languages``: each language the server knows, with its real targets."""
        return [
            {"code": c, "name": language_name(c), "targets": self.targets(c)} for c in self.codes
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

    def sources(self) -> list[str]:
        """The languages this server translates from."""
        return list(dict.fromkeys(s for s, _ in self.pairs))

    def pair(self) -> str:
        """What the server translates, for messages: ``English (en) → Italian (it)`` (and
        each further pair after a comma)."""
        return ", ".join(
            f"{language_name(s)} ({s}) → {language_name(t)} ({t})" for s, t in self.pairs
        )

    def identify(self, text: str) -> list[tuple[str, float]]:
        """Every language the identifier knows with its probability, most likely first."""
        ident = self._ident()
        with self._lock:  # the identifier is plain numpy; one call at a time is enough
            ranked = ident.rank(text)
        # a group is named by the server's own code when it has one of its members ("nb")
        alias = {MACRO[c]: c for c in self.codes if c in MACRO}
        merged: dict[str, float] = {}
        for code, prob in ranked:
            key = MACRO.get(code, code)
            key = alias.get(key, key)
            merged[key] = merged.get(key, 0.0) + float(prob)
        return sorted(merged.items(), key=lambda kv: kv[1], reverse=True)

    def detect(self, text: str, top: int = 3) -> list[dict[str, Any]]:
        """``POST /detect``: ``[{"confidence": 0–100, "language"}]``, most likely first.

        The server's languages are always listed; other languages only among the ``top``
        most likely. Equal confidences list the server's sources, then its targets, first.
        """
        ranked = self.identify(text)
        shown = [kv for i, kv in enumerate(ranked) if i < top or kv[0] in self.codes]
        found = [(c, round(100.0 * p, 2)) for c, p in shown]
        sources = self.sources()
        found.sort(key=lambda cp: (-cp[1], cp[0] not in sources, cp[0] not in self.codes))
        return [{"confidence": p, "language": c} for c, p in found]

    def detect_source(self, text: str, target: str | None = None) -> dict[str, Any]:
        """The language of a text sent with ``source: "auto"`` into ``target`` (the module's
        docstring says in which order): ``target`` itself when the text is already in it,
        the identifier's answer when it is sure, else the likeliest source into ``target``
        ("Ciao!" to English is read as Italian on a server with both directions)."""
        ranked = self.identify(text)
        prob = dict(ranked)
        prefer = [s for s in self.sources() if target in self.targets(s)] or self.sources()
        best_source = max((prob.get(s, 0.0) for s in prefer), default=0.0)
        top, top_p = ranked[0] if ranked else (prefer[0], 0.0)
        if target is not None:
            p = prob.get(target, 0.0)
            if (top == target and top_p >= SURE) or (
                p >= SAME_FLOOR and p >= SAME_RATIO * best_source
            ):
                return {"confidence": round(100.0 * p, 2), "language": target}
        unknown = [s for s in prefer if s not in prob]  # languages the identifier lacks
        if top_p >= SURE and (top in prefer or not unknown):
            return {"confidence": round(100.0 * top_p, 2), "language": top}
        if top_p >= SURE:  # sure of a language that does not translate into the target
            return {"confidence": 0.0, "language": unknown[0]}
        # unsure: the likeliest of the sources into the target (the first on a tie)
        lang = max(prefer, key=lambda s: (prob.get(s, 0.0), -prefer.index(s)))
        return {"confidence": round(100.0 * prob.get(lang, 0.0), 2), "language": lang}
