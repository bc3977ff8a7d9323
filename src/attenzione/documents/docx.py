"""Word documents (``.docx``): every paragraph — in the body, in tables, in text boxes, in
headers and footers — with its bold, italic and links, with python-docx.

A Word paragraph (``w:p``) is a row of runs (``w:r``: formatting ``w:rPr`` and text ``w:t``)
and hyperlinks (``w:hyperlink``, holding runs; its target is a relationship ``r:id`` or an
``w:anchor`` inside the document). Word cuts runs wherever it likes (spell checks, edit
sessions), so runs are read by their formatting, not one by one: within a chunk of a
paragraph, the formatting that covers most of its text is the plain text of the segment, and
every other formatting, and every link, becomes a tag (``<b id="2">``, ``<a id="0">``). Each
run written back copies the ``w:rPr`` of the run its tag came from, and each link the
attributes of its source ``w:hyperlink``, so the link target, styles, fonts and colours are
those of the source, whatever words they end up on.

What is not text is a barrier, kept where it stands, and the paragraph's text is translated
in chunks between barriers: a tab, a line break, an image, a field code, a footnote
reference, a bookmark, a tracked change, a content control. A run that mixes text and such
things is first cut into runs of one kind each (same formatting). Spell-check marks
(``w:proofErr``) and the layout's page-break hints (``w:lastRenderedPageBreak``) are dropped
from translated chunks; Word puts them back.
"""

from __future__ import annotations

import copy
import io
import re
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from lxml import etree

from attenzione.documents.base import DocumentError, Parsed, check_unpacked, one_line
from attenzione.documents.tags import Leaf, Tagged, tag, translatable, untag

W = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"
XML_SPACE = "{http://www.w3.org/XML/1998/namespace}space"
Element = Any  # an lxml element
# the parts whose paragraphs are translated
_PARTS = re.compile(r"^/word/(document|header\d*|footer\d*|footnotes|endnotes)\.xml$")
_OFF = {"0", "false", "off", "none"}


def _w(name: str) -> str:
    return f"{{{W}}}{name}"


_TEXTISH = {_w("rPr"), _w("t"), _w("lastRenderedPageBreak")}
_DROPPED = {_w("proofErr")}


@dataclass
class Chunk:
    """The members of one paragraph between two barriers (runs, links, spell marks) and
    the formatting its keys name: an ``("a", w:hyperlink)`` or a ``(name, w:rPr or None)``,
    with the formatting of the plain text and of each link's text."""

    parent: Element
    members: list[Element] = field(default_factory=list)
    wrappers: list[tuple[str, Element | None]] = field(default_factory=list)
    leaves: list[Leaf] = field(default_factory=list)
    plain: Element | None = None
    link_style: dict[int, int] = field(default_factory=dict)  # a link's key → its text's style


def _on(rpr: Element, name: str) -> bool:
    el = rpr.find(_w(name))
    return el is not None and el.get(_w("val"), "true").lower() not in _OFF


def _name(rpr: Element | None) -> str:
    if rpr is None:
        return "span"
    for name, tag_name in (("b", "b"), ("i", "i"), ("u", "u")):
        if _on(rpr, name):
            return tag_name
    return "span"


def _split_runs(p: Element) -> None:
    """Cut each run of ``p`` that mixes text with anything else into runs of one kind."""
    runs = [c for c in p if c.tag == _w("r")]
    runs += [r for h in p if h.tag == _w("hyperlink") for r in h if r.tag == _w("r")]
    for run in runs:
        kids = [c for c in run if c.tag != _w("rPr")]
        kinds = [c.tag in _TEXTISH for c in kids]
        if all(kinds) or not any(kinds):
            continue
        rpr = run.find(_w("rPr"))
        parent, at = run.getparent(), run.getparent().index(run)
        parent.remove(run)
        groups: list[list[Element]] = []
        for kid, kind in zip(kids, kinds, strict=True):
            if groups and (groups[-1][0].tag in _TEXTISH) == kind:
                groups[-1].append(kid)
            else:
                groups.append([kid])
        for offset, group in enumerate(groups):
            new = run.makeelement(run.tag, dict(run.attrib))
            if rpr is not None:
                new.append(copy.deepcopy(rpr))
            new.extend(group)
            parent.insert(at + offset, new)


def _text_run(el: Element) -> bool:
    return el.tag == _w("r") and all(c.tag in _TEXTISH for c in el)


def _member(el: Element) -> bool:
    if el.tag in _DROPPED or _text_run(el):
        return True
    if el.tag == _w("hyperlink"):
        kids = [c for c in el if c.tag not in _DROPPED]
        return bool(kids) and all(_text_run(c) for c in kids)
    return False


def _run_text(run: Element) -> str:
    return "".join(t.text or "" for t in run.iter(_w("t")))


def _chunks(p: Element) -> Iterator[Chunk]:
    chunk = Chunk(p)
    for child in p:
        if child.tag == _w("pPr"):
            continue
        if _member(child):
            chunk.members.append(child)
        elif chunk.members:
            yield chunk
            chunk = Chunk(p)
    if chunk.members:
        yield chunk


def _read_chunk(chunk: Chunk) -> Tagged:
    """Fill ``chunk``'s wrappers and leaves; its tagged segment."""
    styles: dict[bytes, int] = {}
    runs: list[tuple[Element, int | None]] = []  # (run, its link's key)
    for member in chunk.members:
        if member.tag == _w("hyperlink"):
            chunk.wrappers.append(("a", member))
            key = len(chunk.wrappers) - 1
            runs.extend((r, key) for r in member if r.tag == _w("r"))
        elif member.tag == _w("r"):
            runs.append((member, None))
    chars: dict[int, int] = {}
    items: list[tuple[str, int | None, int]] = []  # (text, link key, style key)
    for run, link in runs:
        rpr = run.find(_w("rPr"))
        ident = etree.tostring(rpr) if rpr is not None else b""
        if ident not in styles:
            styles[ident] = len(chunk.wrappers)
            chunk.wrappers.append((_name(rpr), rpr))
        text = _run_text(run)
        chars[styles[ident]] = chars.get(styles[ident], 0) + len(text)
        items.append((text, link, styles[ident]))
    plain = max(chars, key=lambda k: chars[k]) if chars else None
    chunk.plain = chunk.wrappers[plain][1] if plain is not None else None
    # a link's text is usually all in one style (Word's "Hyperlink"): the link's tag implies it
    for link in {link for _, link, _ in items if link is not None}:
        inside = [(len(t), s) for t, k, s in items if k == link]
        chunk.link_style[link] = max(inside, key=lambda c: c[0])[1]
    for text, link, style in items:
        implied = plain if link is None else chunk.link_style[link]
        keys = tuple(k for k in (link, style) if k is not None and k != implied)
        if not text.strip() and chunk.leaves:  # a formatted space is not worth a tag
            keys = chunk.leaves[-1][1]
        chunk.leaves.append((text, keys))
    return tag(chunk.leaves, [name for name, _ in chunk.wrappers])


def _rewrite(chunk: Chunk, tagged: Tagged, translation: str) -> None:
    p = chunk.parent
    at = p.index(chunk.members[0])
    for member in chunk.members:
        p.remove(member)
    new: list[Element] = []
    link_key: int | None = None
    for text, keys in untag(tagged, translation):
        link = next((k for k in keys if chunk.wrappers[k][0] == "a"), None)
        style = next((k for k in reversed(keys) if chunk.wrappers[k][0] != "a"), None)
        if style is not None:
            rpr = chunk.wrappers[style][1]
        elif link is not None:
            rpr = chunk.wrappers[chunk.link_style[link]][1]
        else:
            rpr = chunk.plain
        run = p.makeelement(_w("r"), {})
        if rpr is not None:
            run.append(copy.deepcopy(rpr))
        t = etree.SubElement(run, _w("t"))
        t.text = text
        t.set(XML_SPACE, "preserve")
        if link is None:
            new.append(run)
        else:
            if link != link_key or not new or new[-1].tag != _w("hyperlink"):
                source: Element = chunk.wrappers[link][1]
                new.append(source.makeelement(source.tag, dict(source.attrib)))
            new[-1].append(run)
        link_key = link
    for offset, el in enumerate(new):
        p.insert(at + offset, el)


def _open(data: bytes) -> Any:
    if not zipfile.is_zipfile(io.BytesIO(data)):
        raise DocumentError("not a valid .docx file: it is not a zip archive")
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as z:
            names = set(z.namelist())
            check_unpacked(z, ".docx")
    except DocumentError:
        raise
    except Exception as exc:  # BadZipFile: a zip whose directory is broken
        raise DocumentError(f"not a valid .docx file: {one_line(exc)}") from None
    for needed in ("[Content_Types].xml", "word/document.xml"):
        if needed not in names:
            raise DocumentError(f"not a valid .docx file: it has no {needed}")
    import docx
    from docx.opc.part import XmlPart

    try:
        document = docx.Document(io.BytesIO(data))
    except Exception as exc:  # python-docx's errors, lxml's, a broken zip entry
        raise DocumentError(f"not a valid .docx file: {one_line(exc)}") from None
    parts = [
        part
        for part in document.part.package.iter_parts()
        if isinstance(part, XmlPart) and _PARTS.match(str(part.partname))
    ]
    return document, parts


def parse(data: bytes) -> Parsed:
    document, parts = _open(data)
    found: list[tuple[Chunk, Tagged]] = []
    for part in parts:
        for p in list(part.element.iter(_w("p"))):
            _split_runs(p)
            for chunk in _chunks(p):
                tagged = _read_chunk(chunk)
                if translatable(tagged.text):
                    found.append((chunk, tagged))

    def write(translations: list[str]) -> bytes:
        for (chunk, tagged), tr in zip(found, translations, strict=True):
            _rewrite(chunk, tagged, tr)
        out = io.BytesIO()
        document.save(out)
        return out.getvalue()

    return Parsed([tagged.text for _, tagged in found], write)
