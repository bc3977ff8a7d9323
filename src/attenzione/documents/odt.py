"""OpenDocument text (``.odt``): paragraphs and headings of ``content.xml`` (and the page
headers and footers of ``styles.xml``), with zipfile and lxml.

An ODF paragraph (``text:p``, ``text:h``) is mixed content: text, ``text:span`` (a character
style: bold, italic…) and ``text:a`` (a link, ``xlink:href``) inside each other, and
``text:s`` for runs of spaces. Those are the inline elements (:mod:`attenzione.documents.tree`
does the rest); a tab, a line break, a frame, a note, a bookmark is a barrier kept where it
stands, and the paragraphs inside a frame, a table cell, a note or a comment are translated
in turn. A span's tag in the segment is named after its style (``b``, ``i``, ``u``, else
``span``), for whoever reads the segments; the style itself is copied back whole.

Writing back, every entry of the zip is copied as it was, in the same order, with the same
compression, but for the two XML parts; ``mimetype`` is written first and uncompressed, as
ODF requires.
"""

from __future__ import annotations

import io
import zipfile

from lxml import etree

from attenzione.documents.base import DocumentError, Parsed, check_unpacked, one_line
from attenzione.documents.tree import Element, Rules, chunks, rewrite

TEXT = "urn:oasis:names:tc:opendocument:xmlns:text:1.0"
STYLE = "urn:oasis:names:tc:opendocument:xmlns:style:1.0"
FO = "urn:oasis:names:xsl:formatting-objects:xmlns:xsl-fo-compatible:1.0"
OFFICE = "urn:oasis:names:tc:opendocument:xmlns:office:1.0"
MIMETYPE = "application/vnd.oasis.opendocument.text"
PARTS = ("content.xml", "styles.xml")

_ROOTS = {f"{{{TEXT}}}p", f"{{{TEXT}}}h"}
_INLINE = {f"{{{TEXT}}}span", f"{{{TEXT}}}a"}
_SKIP = {f"{{{TEXT}}}tracked-changes"}


def _spaces(el: Element) -> str | None:
    if el.tag == f"{{{TEXT}}}s":
        count = el.get(f"{{{TEXT}}}c", "1")
        return " " * (int(count) if count.isdigit() else 1)
    if el.tag == f"{{{TEXT}}}soft-page-break":  # where the last layout broke the page
        return ""
    return None


def style_names(*trees: Element) -> dict[str, str]:
    """Text styles by name → "b", "i" or "u" (the first of bold, italic, underlined they
    set)."""
    names: dict[str, str] = {}
    for tree in trees:
        for style in tree.iter(f"{{{STYLE}}}style"):
            props = style.find(f"{{{STYLE}}}text-properties")
            if props is None:
                continue
            if props.get(f"{{{FO}}}font-weight") == "bold":
                names[style.get(f"{{{STYLE}}}name", "")] = "b"
            elif props.get(f"{{{FO}}}font-style") == "italic":
                names[style.get(f"{{{STYLE}}}name", "")] = "i"
            elif props.get(f"{{{STYLE}}}text-underline-style", "none") != "none":
                names[style.get(f"{{{STYLE}}}name", "")] = "u"
    return names


def _rules(styles: dict[str, str]) -> Rules:
    def name(el: Element) -> str:
        if el.tag == f"{{{TEXT}}}a":
            return "a"
        return styles.get(el.get(f"{{{TEXT}}}style-name", ""), "span")

    return Rules(
        root=lambda el: el.tag in _ROOTS,
        inline=lambda el: el.tag in _INLINE,
        skip=lambda el: el.tag in _SKIP,
        spaces=_spaces,
        name=name,
    )


def _read(data: bytes) -> tuple[zipfile.ZipFile, dict[str, Element]]:
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
        names = archive.namelist()
        check_unpacked(archive, ".odt")
        if "content.xml" not in names:
            raise DocumentError("not a valid .odt file: it has no content.xml")
        if "mimetype" in names:
            mimetype = archive.read("mimetype").decode("ascii", "replace").strip()
            if not mimetype.startswith(MIMETYPE):
                raise DocumentError(f"not a valid .odt file: its mimetype is {mimetype!r}")
        parser = etree.XMLParser(resolve_entities=False, no_network=True)
        trees = {
            part: etree.fromstring(archive.read(part), parser) for part in PARTS if part in names
        }
    except DocumentError:
        raise
    except Exception as exc:  # BadZipFile, XMLSyntaxError, a broken entry
        raise DocumentError(f"not a valid .odt file: {one_line(exc)}") from None
    if trees["content.xml"].tag != f"{{{OFFICE}}}document-content":
        raise DocumentError("not a valid .odt file: content.xml is not ODF content")
    return archive, trees


def parse(data: bytes) -> Parsed:
    archive, trees = _read(data)
    rules = _rules(style_names(*trees.values()))
    found = {part: chunks(tree, rules) for part, tree in trees.items()}
    order = [part for part in PARTS if part in trees]

    def write(translations: list[str]) -> bytes:
        todo = iter(translations)
        for part in order:
            for chunk, tagged in found[part]:
                rewrite(chunk, tagged, next(todo))
        out = io.BytesIO()
        with zipfile.ZipFile(out, "w") as z:
            infos = archive.infolist()
            first = [i for i in infos if i.filename == "mimetype"]
            for info in first + [i for i in infos if i.filename != "mimetype"]:
                body = archive.read(info.filename)
                if info.filename in trees:
                    body = etree.tostring(
                        trees[info.filename].getroottree(), xml_declaration=True, encoding="UTF-8"
                    )
                copy = zipfile.ZipInfo(info.filename, info.date_time)
                copy.compress_type = (
                    zipfile.ZIP_STORED if info.filename == "mimetype" else info.compress_type
                )
                copy.external_attr = info.external_attr
                z.writestr(copy, body)
        return out.getvalue()

    return Parsed([tagged.text for part in order for _, tagged in found[part]], write)
