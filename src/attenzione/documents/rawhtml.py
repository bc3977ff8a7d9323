"""HTML cut into tokens that keep their source text: what is not translated goes back as written.

:class:`html.parser.HTMLParser` reads a tag's name in lower case, a comment's body, a
declaration's text, but it writes nothing back: a caller that rebuilds markup from what its
handlers get rewrites it (``</P >`` as ``</p>``, ``<!x>`` as ``<!--x-->``, a CDATA section
without its last ``]``). :func:`tokens` gives every construct with its **source text**
(``raw``), so that joining the ``raw`` of all tokens gives the input back exactly, character for
character — unknown or broken markup included:

* a doctype's internal subset (``<!DOCTYPE html [ <!ENTITY x "y"> ]>``) is part of the
  doctype, not text after a doctype that ended at the subset's first ``>``;
* a marked section of a kind the parser does not know (``<![foo[ … ]]>``, ``<![ x``), on which
  :mod:`html.parser` raises an ``AssertionError``, is read as HTML reads it: a bogus comment up
  to the next ``>``;
* ``</>``, which the parser drops, is a token of kind ``"other"``;
* the content of an element left open at the end (``<script>var x``), which the parser keeps
  waiting for, is the last token (``"data"``).

Nothing is resolved: an entity reference is read as HTML's named references only
(``convert_charrefs``: ``&amp;`` is ``&``, ``&x;`` stays ``&x;``), and a doctype's entities are
never defined, let alone expanded (no file or URL is ever read).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from html.parser import HTMLParser

_SUBSET_END = re.compile(r"\]\s*>")


@dataclass
class Token:
    """One construct of the source. ``kind``: ``start`` (``tag``, ``attrs``), ``startend``
    (``<br/>``), ``end`` (``tag``), ``data`` (``data``: the text with character references
    read), ``comment`` (``data``: its body; a bogus comment such as ``<!x>`` too), ``decl``
    (a doctype), ``pi``, ``marked`` (``<![CDATA[…]]>``, ``<![if …]>``) or ``other``; ``raw``:
    its text in the source."""

    kind: str
    raw: str = ""
    tag: str = ""
    attrs: list[tuple[str, str | None]] = field(default_factory=list)
    data: str = ""


def doctype_end(text: str, i: int) -> int:
    """Where the doctype at ``text[i]`` ends when it has an internal subset (the index after
    its ``]>``), skipping quoted literals and comments in the subset; -1 when it has none or
    the subset is not closed."""
    gt = text.find(">", i)
    bracket = text.find("[", i, gt if gt >= 0 else len(text))
    if bracket < 0:
        return -1
    j, quote = bracket + 1, ""
    while j < len(text):
        c = text[j]
        if quote:
            if c == quote:
                quote = ""
        elif c in "\"'":
            quote = c
        elif text.startswith("<!--", j):
            close = text.find("-->", j + 4)
            if close < 0:
                return -1
            j = close + 3
            continue
        elif c == "]" and (m := _SUBSET_END.match(text, j)):
            return m.end()
        j += 1
    return -1


class _Tokenizer(HTMLParser):
    """The handlers note what they read; :meth:`updatepos`, which the parser calls right after
    each construct with its span in the source, gives the noted token its source text."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tokens: list[Token] = []
        self._noted: list[Token] = []
        self._trying = 0  # inside a parse that may fail: the spans it reports are not tokens

    def _note(self, token: Token) -> None:
        self._noted.append(token)

    def updatepos(self, i: int, j: int) -> int:
        if i < j and not self._trying:
            raw = self.rawdata[i:j]
            if not self._noted:
                self.tokens.append(Token("other", raw))
            for k, token in enumerate(self._noted):
                token.raw = raw if k == 0 else ""
                self.tokens.append(token)
            self._noted = []
        return super().updatepos(i, j)

    def parse_html_declaration(self, i: int) -> int:
        raw = self.rawdata
        if raw[i : i + 9].lower() == "<!doctype":
            end = doctype_end(raw, i)
            if end > 0:
                self.handle_decl(raw[i + 2 : end - 1])
                return end
        if raw.startswith("<![", i):
            self._trying += 1
            try:
                return self.parse_marked_section(i)
            except AssertionError:  # a keyword it does not know, no keyword: a bogus comment
                self._noted = []
            finally:
                self._trying -= 1
            return self.parse_bogus_comment(i)
        return super().parse_html_declaration(i)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self._note(Token("start", tag=tag, attrs=attrs))

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self._note(Token("startend", tag=tag, attrs=attrs))

    def handle_endtag(self, tag: str) -> None:
        self._note(Token("end", tag=tag))

    def handle_data(self, data: str) -> None:
        self._note(Token("data", data=data))

    def handle_comment(self, data: str) -> None:
        self._note(Token("comment", data=data))

    def handle_decl(self, decl: str) -> None:
        self._note(Token("decl", data=decl))

    def handle_pi(self, data: str) -> None:
        self._note(Token("pi", data=data))

    def unknown_decl(self, data: str) -> None:
        self._note(Token("marked", data=data))


def tokens(markup: str) -> list[Token]:
    """``markup`` as tokens whose ``raw`` texts join back to it exactly."""
    parser = _Tokenizer()
    parser.feed(markup)
    parser.close()
    out = parser.tokens
    if parser.rawdata:  # an element left open (<script>…) the parser still waits to close
        out.append(Token("data", parser.rawdata, data=parser.rawdata))
    return out
