"""From a request's text to the sentences the worker translates, and back.

A text is cut by the shared segmenter (:func:`attenzione.data.sentences.split_sentences`)
into segments that join back to it exactly; each segment's sentence is translated and put
back between the whitespace that surrounded it, so line breaks and paragraphs survive.

For ``format=html`` (what Mastodon sends) the markup is kept as it was and only the text
between tags is translated, each text node on its own; the contents of ``script``, ``style``,
``code``, ``pre`` and ``textarea``, and of any element marked ``translate="no"`` or
``class="notranslate"``, are left untouched. Inline markup therefore splits a sentence in
two ("Hello <b>world</b>" is translated as "Hello" and "world") — the price of never moving
a tag. ``format=text`` does better: tags in plain text reach the translator, which translates
a sentence with inline tags whole and places them by attention (:mod:`attenzione.markup`);
doing the same here needs the parsed text nodes joined back with their tags, still to do.
"""

from __future__ import annotations

import html
from dataclasses import dataclass
from html.parser import HTMLParser

from attenzione.data.sentences import split_sentences

_RAW = {"script", "style", "code", "pre", "textarea"}
_VOID = {
    "area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source",
    "track", "wbr",
}  # fmt: skip


@dataclass
class Piece:
    """A run of the output: kept as it is (``sentence`` False) or a sentence to translate."""

    text: str
    sentence: bool = False


def plan_text(text: str, language: str = "en") -> list[Piece]:
    """Plain text as kept whitespace and sentences to translate."""
    pieces: list[Piece] = []
    for seg in split_sentences(text, language):
        core = seg.strip()
        if not core:
            pieces.append(Piece(seg))
            continue
        start = seg.find(core)
        if start:
            pieces.append(Piece(seg[:start]))
        pieces.append(Piece(core, sentence=True))
        if seg[start + len(core) :]:
            pieces.append(Piece(seg[start + len(core) :]))
    return pieces


class _Splitter(HTMLParser):
    """Tags verbatim, text nodes planned into sentences (escaped again on output)."""

    def __init__(self, language: str) -> None:
        super().__init__(convert_charrefs=True)
        self.language = language
        self.pieces: list[Piece] = []
        self.stack: list[tuple[str, bool]] = []  # (tag, translatable inside)

    def _translatable(self) -> bool:
        return not self.stack or self.stack[-1][1]

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.pieces.append(Piece(self.get_starttag_text() or ""))
        if tag in _VOID:
            return
        values = dict(attrs)
        off = (
            tag in _RAW
            or (values.get("translate") or "").lower() == "no"
            or "notranslate" in (values.get("class") or "").split()
        )
        self.stack.append((tag, self._translatable() and not off))

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.pieces.append(Piece(self.get_starttag_text() or ""))

    def handle_endtag(self, tag: str) -> None:
        self.pieces.append(Piece(f"</{tag}>"))
        for i in range(len(self.stack) - 1, -1, -1):  # tolerate unclosed inner tags
            if self.stack[i][0] == tag:
                del self.stack[i:]
                break

    def handle_data(self, data: str) -> None:
        if not self._translatable() or (self.stack and self.stack[-1][0] in _RAW):
            raw = self.stack and self.stack[-1][0] in ("script", "style")
            self.pieces.append(Piece(data if raw else html.escape(data, quote=False)))
            return
        for p in plan_text(data, self.language):
            self.pieces.append(p if p.sentence else Piece(html.escape(p.text, quote=False)))

    def handle_comment(self, data: str) -> None:
        self.pieces.append(Piece(f"<!--{data}-->"))

    def handle_decl(self, decl: str) -> None:
        self.pieces.append(Piece(f"<!{decl}>"))

    def handle_pi(self, data: str) -> None:
        self.pieces.append(Piece(f"<?{data}>"))

    def unknown_decl(self, data: str) -> None:
        self.pieces.append(Piece(f"<![{data}]>"))


def plan_html(markup: str, language: str = "en") -> list[Piece]:
    """HTML as kept markup and sentences to translate (translations are escaped back)."""
    parser = _Splitter(language)
    parser.feed(markup)
    parser.close()
    return parser.pieces


def assemble(pieces: list[Piece], translations: list[str], *, escape: bool = False) -> str:
    """Put the translations (one per sentence piece, in order) back into the kept text."""
    out: list[str] = []
    it = iter(translations)
    for p in pieces:
        if p.sentence:
            t = next(it)
            out.append(html.escape(t, quote=False) if escape else t)
        else:
            out.append(p.text)
    return "".join(out)
