"""Plain text (``.txt``): each line is a segment, and the line structure is kept exactly.

A line's indentation, its trailing spaces and its line ending (LF or CRLF, line by line)
stay as they were, as do blank lines and lines with nothing to translate ("----", "42").
The text must be UTF-8; a byte-order mark is kept.
"""

from __future__ import annotations

from attenzione.documents.base import Parsed, decode_text, encode_text
from attenzione.documents.tags import translatable


def split_line(line: str) -> tuple[str, str, str]:
    """(indentation, text, the rest: trailing whitespace and the line ending)."""
    body = line.strip()
    if not body:
        return line, "", ""
    start = line.index(body)
    return line[:start], body, line[start + len(body) :]


def parse(data: bytes) -> Parsed:
    text, bom = decode_text(data, ".txt file")
    lines = [split_line(line) for line in text.splitlines(keepends=True)]
    todo = [i for i, (_, body, _) in enumerate(lines) if translatable(body)]

    def write(translations: list[str]) -> bytes:
        out = [a + b + c for a, b, c in lines]
        for i, tr in zip(todo, translations, strict=True):
            lead, _, rest = lines[i]
            out[i] = lead + " ".join(tr.split("\n")) + rest
        return encode_text("".join(out), bom)

    return Parsed([lines[i][1] for i in todo], write)
