"""What every format module gives back, and the one error they raise."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass


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
    """An exception's message on one line (for "not a valid .docx file: …")."""
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text if len(text) <= 200 else text[:197] + "..."
