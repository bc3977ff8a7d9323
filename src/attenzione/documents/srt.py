"""SubRip subtitles (``.srt``): each cue's text is a segment; numbers and timings are kept.

A cue is a number line, a timing line (``00:00:01,000 --> 00:00:03,500``) and one or more
lines of text up to a blank line. A cue's lines are one sentence more often than not, so
they are translated together and the translation is wrapped back into as many lines, of
about equal length; a dialogue cue, whose lines each start with a dash, is translated line
by line. The inline tags SubRip allows (``<i>``, ``<b>``, ``<font color=…>``) go through
the translator as any inline tags do. Everything but the cue text is written back byte for
byte: numbering, timings, blank lines, line endings. The file must be UTF-8 (a byte-order
mark is kept).
"""

from __future__ import annotations

import re

from attenzione.documents.base import DocumentError, Parsed, decode_text, encode_text
from attenzione.documents.tags import translatable
from attenzione.documents.text import split_line

# a word to wrap at: a tag with spaces inside (<font color="red">) is not cut
_WORD = re.compile(r"(?:<[^<>]*>|[^\s<]|<(?![^<>]*>))+")
_TIMING = re.compile(r"^\s*\d+:\d+:\d+[,.]\d+\s*-->\s*\d+:\d+:\d+[,.]\d+")


def wrap(text: str, n: int) -> list[str]:
    """``text`` cut at spaces into at most ``n`` lines of about equal length."""
    words = _WORD.findall(text)
    lines: list[str] = []
    while words and n > 1:
        left = sum(map(len, words)) + len(words) - 1
        goal = left / n
        line = [words.pop(0)]
        while words and len(" ".join(line)) + 1 + len(words[0]) / 2 <= goal:
            line.append(words.pop(0))
        lines.append(" ".join(line))
        n -= 1
    if words:
        lines.append(" ".join(words))
    return lines or [""]


def parse(data: bytes) -> Parsed:
    text, bom = decode_text(data, ".srt file")
    lines = text.splitlines(keepends=True)
    groups: list[list[int]] = []  # the line numbers of each segment
    i = 0
    cues = 0
    while i < len(lines):
        if i + 1 < len(lines) and lines[i].strip().isdigit() and _TIMING.match(lines[i + 1]):
            cues += 1
            j = i + 2
            while j < len(lines) and lines[j].strip():
                j += 1
            body = [k for k in range(i + 2, j) if translatable(lines[k])]
            if body and all(lines[k].lstrip().startswith("-") for k in body):
                groups.extend([k] for k in body)
            elif body:
                groups.append(body)
            i = j
        else:
            i += 1
    if not cues and text.strip():
        raise DocumentError("not a valid .srt file: no cue (a number, then a timing line)")
    segments = [" ".join(split_line(lines[k])[1] for k in group) for group in groups]

    def write(translations: list[str]) -> bytes:
        out = list(lines)
        for group, tr in zip(groups, translations, strict=True):
            parts = wrap(tr, len(group)) if len(group) > 1 else [" ".join(tr.split("\n"))]
            parts += [""] * (len(group) - len(parts))
            for k, part in zip(group, parts, strict=True):
                lead, _, rest = split_line(lines[k])
                out[k] = lead + part + (rest if rest else "")
            # lines left empty by a shorter translation are dropped, not left blank (a blank
            # line would end the cue)
            for k, part in zip(group, parts, strict=True):
                if not part:
                    out[k] = ""
        return encode_text("".join(out), bom)

    return Parsed(segments, write)
