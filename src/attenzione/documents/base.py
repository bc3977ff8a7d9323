"""What every format module gives back, and the one error they raise."""

from __future__ import annotations

import re
import zipfile
from collections.abc import Callable
from dataclasses import dataclass

#: Most bytes a zipped document (.docx, .odt) may unpack to: a 10 MB upload of zipped
#: spaces unpacks to 10 GB (a "zip bomb"), and the readers hold every part in memory.
MAX_UNPACKED = 256 * 1024 * 1024

# Characters XML 1.0 cannot hold (C0 controls but tab, LF, CR): a page's form feed cannot be
# written back into its tree.
_NOT_XML = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f]")


class DocumentError(ValueError):
    """A document that cannot be read: unknown format, malformed, too large. The message is
    one line, written for the user."""


@dataclass
class Parsed:
    """A document read into memory: the texts to translate, in order, and how to write the
    document back with their translations (once: it changes what was read)."""

    segments: list[str]
    write: Callable[[list[str]], bytes]


def decode_text(data: bytes, what: str) -> tuple[str, bool]:
    """``data`` as UTF-8 text, without the byte-order mark it may start with (and whether it
    did); a bad byte is a :class:`DocumentError` that names its line and column."""
    bom = data.startswith(b"\xef\xbb\xbf")
    body = data[3:] if bom else data
    try:
        return body.decode("utf-8"), bom
    except UnicodeDecodeError as exc:
        line = body.count(b"\n", 0, exc.start) + 1
        column = exc.start - (body.rfind(b"\n", 0, exc.start) + 1) + 1
        raise DocumentError(
            f"not valid UTF-8 text: a {what} must be UTF-8 (byte 0x{body[exc.start]:02x} "
            f"at line {line}, column {column})"
        ) from None


def encode_text(text: str, bom: bool) -> bytes:
    """``text`` as UTF-8, with the byte-order mark back if the source had one."""
    return (b"\xef\xbb\xbf" if bom else b"") + text.encode("utf-8")


def one_line(exc: BaseException) -> str:
    """An exception's message on one line (for "not a valid .docx file: …"), an XML parser's
    in words about the file (:func:`xml_problem`)."""
    text = xml_problem(" ".join(str(exc).split())) or type(exc).__name__
    return text if len(text) <= 200 else text[:197] + "..."


# libxml2's limits, which lxml's messages name by the parser's options ("use XML_PARSE_HUGE
# option", "see xmlCtxtSetMaxAmplification"): what each says of the file
_LIMITS = (
    (re.compile(r"Excessive depth in document: (\d+)[^,]*(?:, use XML_PARSE_HUGE option)?"),
     r"its elements are nested more than \1 levels deep"),
    (re.compile(r"(?:Resource limit exceeded: )?(?:Text node too long|Huge input lookup|"
                r"xmlSAX2Characters: huge text node)[^,]*(?:, try XML_PARSE_HUGE)?", re.I),
     "it holds a text too long to read in one piece"),
    (re.compile(r"Maximum entity amplification factor exceeded[^,]*|Detected an entity "
                r"reference loop", re.I),
     "it defines entities that expand without end (an \"entity bomb\")"),
)  # fmt: skip
_PARSER_NAMES = re.compile(
    r",? *(?:use XML_PARSE_HUGE option|try XML_PARSE_HUGE|see xmlCtxt\w+\.?)|XML_PARSE_\w+"
)
_STRING_SOURCE = re.compile(r" *\(<string>, line \d+\)$")  # lxml's name for bytes it read


def xml_problem(message: str) -> str:
    """An XML (or HTML) parser's message about a file in words about the file: a limit of
    libxml2's said as what the file holds too much of, without the parser's option names."""
    message = _STRING_SOURCE.sub("", message)
    for pattern, words in _LIMITS:
        found = pattern.search(message)
        if found:
            where = re.search(r"line \d+(?:, column \d+)?", message[found.end() :])
            return found.expand(words) + (f" (at {where.group(0)})" if where else "")
    return _PARSER_NAMES.sub("", message).strip(" ,")


def xml_safe(text: str) -> str:
    """``text`` with the characters XML cannot hold (a form feed, NUL…) made spaces."""
    return _NOT_XML.sub(" ", text)


def check_unpacked(archive: zipfile.ZipFile, what: str) -> None:
    """Refuse a zip whose entries together unpack to more than :data:`MAX_UNPACKED`."""
    total = sum(info.file_size for info in archive.infolist())
    if total > MAX_UNPACKED:
        raise DocumentError(
            f"not a valid {what} file: it unpacks to {total} bytes, more than the "
            f"{MAX_UNPACKED} allowed"
        )
