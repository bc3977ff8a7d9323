"""From a request's text to the sentences the worker translates, and back.

A text is cut by the shared segmenter (:func:`attenzione.data.sentences.split_sentences`)
into segments that join back to it exactly; each segment's sentence is translated and put
back between the whitespace that surrounded it, so line breaks and paragraphs survive.

For ``format=html`` (what Mastodon sends) the markup is kept as it was and only the text
between tags is translated, each text node on its own; the contents of ``script``, ``style``,
``code``, ``pre`` and ``textarea``, and of any element marked ``translate="no"`` or
``class="notranslate"``, are left untouched. Inline elements (``<b>``, ``<a href>``,
``<span>``: any but HTML's block and void ones, :data:`attenzione.pipeline.markup.CUTTING`, and
those left untouched) do not cut the text: the text nodes between block tags are joined back with
their inline tags, cut into sentences, and each sentence reaches the translator with its tags,
which it translates whole and places by attention (:mod:`attenzione.pipeline.markup`): "Hello
<b>world</b>!" is one sentence. Its translation is escaped again except for those tags. Text
holding a "<" (written ``&lt;``) keeps the old way, each text node on its own, so that no text
is ever taken for a tag. A link whose text spells its address (a URL, an @mention, a #hashtag,
as Mastodon writes them) is kept as it is.
"""

from __future__ import annotations

import html
import re
from collections import Counter
from dataclasses import dataclass

from attenzione.data.sentences import split_sentences
from attenzione.documents.rawhtml import Token, tokens
from attenzione.pipeline import marks
from attenzione.pipeline.carry import MARKUP_TAG
from attenzione.pipeline.markup import CUTTING

_RAW = {"script", "style", "code", "pre", "textarea"}
_VOID = {
    "area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source",
    "track", "wbr",
}  # fmt: skip


@dataclass
class Piece:
    """A run of the output: kept as it is (``sentence`` False) or a sentence to translate,
    with the inline ``tags`` written in it (kept unescaped in its translation)."""

    text: str
    sentence: bool = False
    tags: tuple[str, ...] = ()


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


class _Splitter:
    """Markup kept as the source wrote it (each token's ``raw``), text nodes planned into
    sentences (escaped again on output)."""

    def __init__(self, language: str) -> None:
        self.language = language
        self.pieces: list[Piece] = []
        self.stack: list[tuple[str, bool, bool]] = []  # (tag, translatable inside, inline)
        self.flow: list[tuple[str, bool]] = []  # text and inline tags (True) not yet planned
        self.raws: list[str] = []  # the source text of each entry of the flow
        self.hrefs: dict[int, str] = {}  # the address of each link opened in the flow, by index

    def feed(self, token: Token) -> None:
        if token.kind == "start":
            self.starttag(token)
        elif token.kind == "end":
            self.endtag(token)
        elif token.kind == "data":
            self.data(token)
        else:  # <br/>, comments, doctypes, CDATA, processing instructions, </>: as written
            self._cut(Piece(token.raw))

    def _translatable(self) -> bool:
        return not self.stack or self.stack[-1][1]

    def _cut(self, piece: Piece) -> None:
        """A piece that ends the text flowing before it."""
        self.flush()
        self.pieces.append(piece)

    def _flow(self, text: str, is_tag: bool, raw: str) -> None:
        self.flow.append((text, is_tag))
        self.raws.append(raw)

    def starttag(self, token: Token) -> None:
        tag, text = token.tag, token.raw
        values = dict(token.attrs)
        off = (
            tag in _RAW
            or (values.get("translate") or "").lower() == "no"
            or "notranslate" in (values.get("class") or "").split()
        )
        inline = (
            self._translatable()
            and not off
            and tag not in _VOID
            and tag not in CUTTING
            and MARKUP_TAG.fullmatch(text) is not None  # the translator must read it as a tag
        )
        if inline:
            if tag == "a" and values.get("href"):
                self.hrefs[len(self.flow)] = values["href"] or ""
            self._flow(text, True, text)
        else:
            self._cut(Piece(text))
        if tag not in _VOID:
            self.stack.append((tag, self._translatable() and not off, inline))

    def endtag(self, token: Token) -> None:
        tag, text = token.tag, token.raw
        inline = bool(self.stack) and self.stack[-1][0] == tag and self.stack[-1][2]
        if inline and MARKUP_TAG.fullmatch(text):
            self._flow(text, True, text)
        else:
            self._cut(Piece(text))
        for i in range(len(self.stack) - 1, -1, -1):  # tolerate unclosed inner tags
            if self.stack[i][0] == tag:
                del self.stack[i:]
                break

    def data(self, token: Token) -> None:
        if not self._translatable() or (self.stack and self.stack[-1][0] in _RAW):
            self._cut(Piece(token.raw))  # left untouched: as the source wrote it
            return
        self._flow(token.data, False, token.raw)

    def flush(self) -> None:
        """Plan the text flowed since the last cut, but for the links that spell their own
        address, kept as they are (:func:`_literal_links`)."""
        flow, raws, hrefs = self.flow, self.raws, self.hrefs
        self.flow, self.raws, self.hrefs = [], [], {}
        kept = _literal_links(flow, hrefs)
        start = 0
        for a, b in [*kept, (len(flow), len(flow))]:
            self._plan(flow[start:a], raws[start:a])
            self.pieces.extend(Piece(raw) for raw in raws[a:b])
            start = b

    def _plan(self, flow: list[tuple[str, bool]], raws: list[str]) -> None:
        """Plan a flow of text and inline tags: joined with its tags when it has some and no
        text of it could be taken for a tag, each text node alone otherwise."""
        tags = [t for t, is_tag in flow if is_tag]
        texts = [t for t, is_tag in flow if not is_tag]
        alone = not tags or any("<" in t or marks.has_marks(t) for t in texts)
        if alone:  # no tags in it, or text that could be read as one: node by node
            for (t, is_tag), raw in zip(flow, raws, strict=True):
                planned = [] if is_tag else plan_text(t, self.language)
                if not any(p.sentence for p in planned):  # nothing to translate: as written
                    self.pieces.append(Piece(raw))
                    continue
                for p in planned:
                    self.pieces.append(p if p.sentence else Piece(html.escape(p.text, quote=False)))
            return
        # each tag stands in the text as one mark (attenzione.pipeline.marks) while it is cut
        # into sentences, so that a tag's "." or "?" ends none (the same tag twice, "<b>", as
        # the same mark: it comes back as it was written)
        held = "".join(marks.mark(tags.index(t)) if is_tag else t for t, is_tag in flow)
        moved: list[Piece] = []
        for p in plan_text(held, self.language):  # closing tags right after a sentence go with it
            n = 0
            while (
                n < len(p.text)
                and marks.is_mark(p.text[n])
                and tags[marks.index(p.text[n])][1] == "/"
            ):
                n += 1
            if not (n and moved and moved[-1].sentence):
                moved.append(p)
                continue
            moved[-1] = Piece(moved[-1].text + p.text[:n], sentence=True)
            rest = p.text[n:]
            core = rest.lstrip()
            if len(core) < len(rest):
                moved.append(Piece(rest[: len(rest) - len(core)]))
            if core:
                moved.append(Piece(core, sentence=p.sentence))
        for p in moved:
            used = tuple(tags[marks.index(c)] for c in p.text if marks.is_mark(c))
            text = "".join(tags[marks.index(c)] if marks.is_mark(c) else c for c in p.text)
            if p.sentence:
                self.pieces.append(Piece(text, sentence=True, tags=used))
            else:
                self.pieces.append(Piece(_escaped(text, used)))


def _address(text: str) -> str:
    """A link's address or text as compared: lower case, without its scheme, "www." and the
    marks around it ("@alice", "#tag", "example.com/…")."""
    text = re.sub(r"^[a-z][a-z0-9+.-]*://", "", text.strip().lower())
    return text.removeprefix("www.").strip("@#/…. ")


def _literal_links(flow: list[tuple[str, bool]], hrefs: dict[int, str]) -> list[tuple[int, int]]:
    """The (start, end) flow indices of each link whose text spells its address: a URL, an
    @mention, a #hashtag, as Mastodon writes them ("<a href="https://example.com/a/long/path">
    <span class="invisible">https://</span><span class="ellipsis">example.com/a/lo</span>…").
    Translated, "example.com/some/lo" came back as "esempio.com/alcune/uno"."""
    out: list[tuple[int, int]] = []
    for start, href in sorted(hrefs.items()):
        end = next((k for k in range(start + 1, len(flow)) if _closes_a(*flow[k])), None)
        if end is None or (out and start < out[-1][1]):
            continue
        text = _address("".join(t for t, is_tag in flow[start:end] if not is_tag))
        if text and text in _address(href):
            out.append((start, end + 1))
    return out


def _closes_a(text: str, is_tag: bool) -> bool:
    return is_tag and re.fullmatch(r"</a\s*>", text, re.IGNORECASE) is not None


def _escaped(text: str, tags: tuple[str, ...]) -> str:
    """``text`` escaped for HTML but for the ``tags`` in it, written as they are: each as many
    times as the input had it (a copy the model wrote itself is escaped as text)."""
    if not tags:
        return html.escape(text, quote=False)
    left = Counter(tags)
    pattern = "(" + "|".join(re.escape(t) for t in sorted(left, key=len, reverse=True)) + ")"
    out = []
    for k, part in enumerate(re.split(pattern, text)):
        if k % 2 and left[part] > 0:
            left[part] -= 1
            out.append(part)
        else:
            out.append(html.escape(part, quote=False))
    return "".join(out)


def plan_html(markup: str, language: str = "en") -> list[Piece]:
    """HTML as kept markup and sentences to translate (translations are escaped back)."""
    splitter = _Splitter(language)
    for token in tokens(markup):
        splitter.feed(token)
    splitter.flush()
    return splitter.pieces


def assemble(pieces: list[Piece], translations: list[str], *, escape: bool = False) -> str:
    """Put the translations (one per sentence piece, in order) back into the kept text."""
    out: list[str] = []
    it = iter(translations)
    for p in pieces:
        if p.sentence:
            t = next(it)
            out.append(_escaped(t, p.tags) if escape else t)
        else:
            out.append(p.text)
    return "".join(out)
