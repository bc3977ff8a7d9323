"""Documents translated with their formatting kept: .txt, .html, .docx, .odt, .srt.

Two phases, so that the caller (the CLI, the HTTP service) owns the translating::

    doc = read_document(data, "report.docx")           # bytes in; nothing is written
    translations = [t.text for t in translator.translate(doc.segments)]
    out = doc.write(translations)                        # bytes out

``segments`` are the texts to translate, in document order: one per paragraph (per line in
a .txt, per cue in a .srt, per run of a block's text between two breaks in the others), with
the paragraph's inline formatting — bold, italic, underline, links, styled spans — as tags
(``The <b id="1">red</b> house``) that the translator places around the right words
(:mod:`attenzione.pipeline.markup`). Reading them back, each tag's formatting is copied from the run
it came from (:mod:`attenzione.documents.tags`). Paragraphs with nothing to translate (no
letter) are left out and stay as they are, and so does everything that is not text: styles,
images, tables, headers, scripts, attributes, subtitle timings.

Formats are chosen by the file name's suffix (:data:`FORMATS`). Anything wrong with a file is
a :class:`DocumentError` (a ``ValueError``) with a one-line message for the user.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import PurePath

from attenzione.documents.base import DocumentError, Parsed

__all__ = ["FORMATS", "Document", "DocumentError", "read_document", "format_of"]

FORMATS: dict[str, str] = {
    ".txt": "plain text, one paragraph per line (UTF-8)",
    ".html": "HTML page or fragment",
    ".htm": "HTML page or fragment",
    ".docx": "Word document (Office Open XML)",
    ".odt": "OpenDocument text (LibreOffice Writer)",
    ".srt": "SubRip subtitles (UTF-8)",
}


def _parser(suffix: str) -> Callable[[bytes], Parsed]:
    # each format's module (and its library: lxml, python-docx) is imported when used
    if suffix == ".txt":
        from attenzione.documents import text

        return text.parse
    if suffix in (".html", ".htm"):
        from attenzione.documents import html

        return html.parse
    if suffix == ".docx":
        from attenzione.documents import docx

        return docx.parse
    if suffix == ".odt":
        from attenzione.documents import odt

        return odt.parse
    from attenzione.documents import srt

    return srt.parse


def format_of(filename: str) -> str:
    """The suffix of ``filename`` that names its format (lower case), or a
    :class:`DocumentError` naming the supported ones."""
    suffix = PurePath(filename).suffix.lower()
    if suffix not in FORMATS:
        what = f"suffix {suffix!r}" if suffix else "no suffix"
        raise DocumentError(
            f"cannot translate {PurePath(filename).name or filename!r} ({what}): supported "
            f"documents are {', '.join(FORMATS)}"
        )
    return suffix


class Document:
    """A document read into memory: :attr:`segments` to translate, :meth:`write` to get the
    translated document's bytes."""

    def __init__(self, data: bytes, suffix: str, segments: list[str]) -> None:
        self._data = data
        self._suffix = suffix
        self.segments = segments

    @property
    def format(self) -> str:
        """The format's suffix (".docx")."""
        return self._suffix

    def write(self, translations: Sequence[str]) -> bytes:
        """The document with each segment replaced by its translation (same order, same
        number). The source is read again, so a Document may be written more than once."""
        translations = list(translations)
        if len(translations) != len(self.segments):
            raise ValueError(f"{len(translations)} translations for {len(self.segments)} segments")
        if not self.segments:
            return self._data  # nothing to translate: the file as it was, byte for byte
        return _parser(self._suffix)(self._data).write(translations)


def read_document(data: bytes, filename: str, *, max_segments: int | None = None) -> Document:
    """Read a document of the format its ``filename``'s suffix names (case-insensitive).

    Raises :class:`DocumentError` for an unknown suffix, a malformed file, text that is not
    in its encoding (UTF-8 for .txt and .srt; .html may name its charset) or, with
    ``max_segments``, a document with more segments than that."""
    suffix = format_of(filename)
    segments = _parser(suffix)(data).segments
    if max_segments is not None and len(segments) > max_segments:
        raise DocumentError(
            f"the document has {len(segments):,} paragraphs to translate; at most "
            f"{max_segments:,} are allowed"
        )
    return Document(data, suffix, segments)
