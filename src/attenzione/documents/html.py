"""HTML (``.html``, ``.htm``): each block's text, inline formatting as tags, with lxml.html.

Blocks and inline elements are HTML's (:data:`INLINE`); the contents of ``script``,
``style``, ``code``, ``pre``, ``textarea``, ``svg``, ``math`` and ``template``, and of any
element marked ``translate="no"`` or ``class="notranslate"``, are neither translated nor
touched. Attributes are kept on every element (a link's ``href``, a span's ``class``); the
attributes meant for people (``alt``, ``title``, ``placeholder``) are not translated yet.

Encoding: a byte-order mark, else the ``<meta charset>`` (or ``http-equiv`` content type)
within the first 4 KB, else UTF-8. The bytes must decode with it (a :class:`DocumentError`
says where they do not), and the translation is written in the same encoding, a character it
lacks written as a character reference (``&#8217;``). A whole page (one with ``<html>`` or
a doctype) is written back as a page; anything else is a fragment and is written back as one,
without the ``<html><body>`` lxml would wrap it in.

What lxml would rewrite is never given to it: a page's prolog (its doctype, internal subset
and all, and the comments around it) and what follows ``</html>`` are written back as they
came, and each comment, CDATA section, processing instruction or other declaration inside is
read as a comment that stands in for it, its source text put back on writing
(:mod:`attenzione.documents.rawhtml` finds them). Entities are never defined nor expanded. A
page the parser gives up on (nested more than 256 elements deep) is a :class:`DocumentError`,
not a page cut short.
"""

from __future__ import annotations

import codecs
import html as html_escape
import re
import secrets
from dataclasses import dataclass, field

import lxml.etree
import lxml.html

from attenzione.documents.base import DocumentError, Parsed, one_line, xml_problem
from attenzione.documents.rawhtml import Token, tokens
from attenzione.documents.tree import Element, Rules, chunks, rewrite

INLINE = frozenset({
    "a", "abbr", "b", "bdi", "bdo", "big", "cite", "data", "del", "dfn", "em", "font", "i",
    "ins", "kbd", "label", "mark", "q", "s", "samp", "small", "span", "strike", "strong",
    "sub", "sup", "time", "tt", "u", "var",
})  # fmt: skip
SKIP = frozenset({"script", "style", "code", "pre", "textarea", "svg", "math", "template"})

_CHARSET = re.compile(rb"""<meta[^>]*?charset\s*=\s*["']?\s*([\w.:-]+)""", re.I)
_PAGE = re.compile(r"<!doctype|<html[\s>]", re.I)
_XML_DECL = re.compile(r"\s*<\?xml[^>]*\?>\s*")


def _tag(el: Element) -> str:
    return el.tag.lower() if isinstance(el.tag, str) else ""


def _skip(el: Element) -> bool:
    return (
        _tag(el) in SKIP
        or el.get("translate", "").lower() == "no"
        or "notranslate" in el.get("class", "").split()
    )


RULES = Rules(
    root=lambda el: True,
    inline=lambda el: _tag(el) in INLINE,
    skip=_skip,
    spaces=lambda el: None,
    name=_tag,
)


def encoding_of(data: bytes) -> tuple[str, int]:
    """The codec to read ``data`` with and the length of its byte-order mark."""
    for bom, name in ((codecs.BOM_UTF8, "utf-8"), (codecs.BOM_UTF16_LE, "utf-16-le"),
                      (codecs.BOM_UTF16_BE, "utf-16-be")):  # fmt: skip
        if data.startswith(bom):
            return name, len(bom)
    m = _CHARSET.search(data[:4096])
    if not m:
        return "utf-8", 0
    name = m.group(1).decode("ascii", "replace")
    try:
        codec = codecs.lookup(name).name
    except LookupError:
        raise DocumentError(f"not a valid .html file: unknown charset {name!r}") from None
    # as browsers do (the WHATWG Encoding standard), a page labelled Latin-1 or ASCII is read
    # as windows-1252, whose curly quotes and euro sign Latin-1 would read as controls
    return ("cp1252" if codec in ("latin-1", "iso8859-1", "ascii") else codec), 0


# What lxml would rewrite were it to read it (a doctype's internal subset dropped, a CDATA
# section or a processing instruction made a comment), so it never does: a comment standing
# in for it is read instead, and the source's text put back where that comment is written.
_KEPT = frozenset({"comment", "decl", "pi", "marked", "other"})
# elements whose content lxml reads as text: a stand-in there would be text, not a comment
_TEXT_ONLY = frozenset({"title", "textarea", "xmp", "iframe", "noembed", "noframes", "plaintext"})


def _markup_only(token: Token) -> bool:
    return token.kind in _KEPT or (token.kind == "data" and not token.raw.strip())


def _split_page(found: list[Token]) -> tuple[str, list[Token], str | None]:
    """A page's prolog (what comes before its first element or text: the doctype,
    comments, whitespace), its body, and its epilogue (what follows ``</html>``, when that is
    markup only; None otherwise): the prolog and the epilogue are written back as they came."""
    first = next((k for k, t in enumerate(found) if not _markup_only(t)), len(found))
    last = next(
        (k for k in range(len(found) - 1, first - 1, -1)
         if found[k].kind == "end" and found[k].tag == "html"),
        None,
    )  # fmt: skip
    if last is not None and not all(_markup_only(t) for t in found[last + 1 :]):
        last = None
    prolog = "".join(t.raw for t in found[:first])
    if last is None:
        return prolog, found[first:], None
    return prolog, found[first : last + 1], "".join(t.raw for t in found[last + 1 :])


@dataclass
class _Kept:
    """The source text of what comments of ``key`` stand in for, by their number."""

    key: str
    raws: list[str] = field(default_factory=list)

    def pattern(self) -> re.Pattern[str]:
        return re.compile(f"<!--{self.key}-([0-9]+)-->")

    def put_back(self, out: str) -> str:
        if not self.raws:
            return out
        return self.pattern().sub(lambda m: self.raws[int(m.group(1))], out)

    def all_there_once(self, out: str) -> bool:
        """Whether ``out`` holds each stand-in exactly once (as a comment)."""
        found = [int(n) for n in self.pattern().findall(out)]
        return len(found) == len(self.raws) and set(found) == set(range(len(self.raws)))


def _stand_ins(body: list[Token], text: str) -> tuple[str, _Kept]:
    """``body``'s text with each comment, declaration, CDATA section, processing instruction
    and stray ``</>`` replaced by a comment of a key of its own (a random one that ``text``
    does not hold), numbered; and what each stands in for."""
    key = "attenzione-kept-" + secrets.token_hex(8)
    while key in text:
        key = "attenzione-kept-" + secrets.token_hex(8)
    kept = _Kept(key)
    parts: list[str] = []
    inside = ""  # an element lxml reads as text only
    for token in body:
        if inside:
            inside = "" if token.kind == "end" and token.tag == inside else inside
        elif token.kind == "start" and token.tag in _TEXT_ONLY:
            inside = token.tag
        elif token.kind in _KEPT:
            parts.append(f"<!--{key}-{len(kept.raws)}-->")
            kept.raws.append(token.raw)
            continue
        parts.append(token.raw)
    return "".join(parts), kept


def _read(text: str, page: bool) -> Element:
    parser = lxml.html.HTMLParser()
    if page:
        root = lxml.html.document_fromstring(text, parser=parser)
    else:
        root = lxml.html.fragment_fromstring(text, create_parent="div", parser=parser)
    for entry in parser.error_log:
        if entry.level_name == "FATAL":  # the parser gave up there: what follows would be lost
            problem = xml_problem(f"{entry.message}, line {entry.line}")
            raise DocumentError(f"not a valid .html file: {problem}")
    return root


def _serialize(root: Element, page: bool) -> str:
    if page:  # the root with what lxml put beside it (comments), without a doctype
        before = list(root.itersiblings(preceding=True))[::-1]
        return "".join(
            lxml.html.tostring(el, encoding="unicode")
            for el in [*before, root, *root.itersiblings()]
        )
    return html_escape.escape(root.text or "", quote=False) + "".join(
        lxml.html.tostring(child, encoding="unicode") for child in root
    )


def parse(data: bytes) -> Parsed:
    codec, bom = encoding_of(data)
    try:
        text = data[bom:].decode(codec)
    except UnicodeDecodeError as exc:
        where = data[: bom + exc.start].count(b"\n") + 1
        raise DocumentError(
            f"not valid {codec} text: byte 0x{data[bom + exc.start]:02x} at line {where} "
            "(an .html file is read as UTF-8 unless it names its charset)"
        ) from None
    decl = _XML_DECL.match(text)
    prefix = decl.group(0) if decl else ""
    text = text[len(prefix) :]
    page = bool(_PAGE.search(text[:4096]))
    found = tokens(text)
    prolog, body, epilogue = _split_page(found) if page else ("", found, "")
    if page and not body:
        return Parsed([], lambda translations: data)  # a doctype, comments, nothing else
    if epilogue is None:  # the newline after </html> (lxml drops it)
        epilogue = text[len(text.rstrip()) :]
    try:
        shown, kept = _stand_ins(body, text)
        root = _read(shown, page)
        found_chunks = chunks(root, RULES)
        if kept.raws and (
            not kept.all_there_once(_serialize(root, page))
            or any(kept.key in tagged.text for _, tagged in found_chunks)
        ):  # a stand-in lxml read as text after all: read the page as it is
            kept = _Kept(kept.key)
            root = _read("".join(t.raw for t in body), page)
            found_chunks = chunks(root, RULES)
    except DocumentError:
        raise
    except lxml.etree.ParserError as exc:
        if "empty" not in str(exc):
            raise DocumentError(f"not a valid .html file: {one_line(exc)}") from None
        return Parsed([], lambda translations: data)  # comments, nothing else
    except Exception as exc:  # lxml's other errors, ValueError
        raise DocumentError(f"not a valid .html file: {one_line(exc)}") from None

    def write(translations: list[str]) -> bytes:
        for (chunk, tagged), tr in zip(found_chunks, translations, strict=True):
            rewrite(chunk, tagged, tr)
        out = prolog + kept.put_back(_serialize(root, page)) + epilogue
        return data[:bom] + (prefix + out).encode(codec, "xmlcharrefreplace")

    return Parsed([tagged.text for _, tagged in found_chunks], write)
