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
a doctype) is written back as a page with its doctype; anything else is a fragment and is
written back as one, without the ``<html><body>`` lxml would wrap it in.
"""

from __future__ import annotations

import codecs
import html as html_escape
import re

import lxml.etree
import lxml.html

from attenzione.documents.base import DocumentError, Parsed, one_line
from attenzione.documents.tree import Element, Rules, chunks, rewrite

INLINE = frozenset({
    "a", "abbr", "b", "bdi", "bdo", "big", "cite", "data", "del", "dfn", "em", "font", "i",
    "ins", "kbd", "label", "mark", "q", "s", "samp", "small", "span", "strike", "strong",
    "sub", "sup", "time", "tt", "u", "var",
})  # fmt: skip
SKIP = frozenset({"script", "style", "code", "pre", "textarea", "svg", "math", "template"})

_CHARSET = re.compile(rb"""<meta[^>]*?charset\s*=\s*["']?\s*([\w.:-]+)""", re.I)
_PAGE = re.compile(r"<!doctype|<html[\s>]", re.I)
_DOCTYPE = re.compile(r"<!doctype", re.I)
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
    try:
        if page:
            root = lxml.html.document_fromstring(text)
        else:
            root = lxml.html.fragment_fromstring(text, create_parent="div")
    except lxml.etree.ParserError as exc:
        if "empty" not in str(exc):
            raise DocumentError(f"not a valid .html file: {one_line(exc)}") from None
        return Parsed([], lambda translations: data)  # a doctype, comments, nothing else
    except Exception as exc:  # lxml's other errors, ValueError
        raise DocumentError(f"not a valid .html file: {one_line(exc)}") from None
    found = chunks(root, RULES)

    def write(translations: list[str]) -> bytes:
        for (chunk, tagged), tr in zip(found, translations, strict=True):
            rewrite(chunk, tagged, tr)
        if page:
            tree = root.getroottree()
            if _DOCTYPE.search(text[:4096]):
                out = lxml.html.tostring(tree, encoding="unicode", doctype=tree.docinfo.doctype)
            else:  # lxml would add HTML 4.0's
                out = lxml.html.tostring(root, encoding="unicode")
        else:
            out = html_escape.escape(root.text or "", quote=False) + "".join(
                lxml.html.tostring(child, encoding="unicode") for child in root
            )
        end = text[len(text.rstrip()) :] if page else ""  # the newline after </html>
        return data[:bom] + (prefix + out + end).encode(codec, "xmlcharrefreplace")

    return Parsed([tagged.text for _, tagged in found], write)
