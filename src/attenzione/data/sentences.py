"""Cutting text into sentences, losslessly, with a real segmenter.

The model was trained on single sentences (Tatoeba pairs), so long input is translated one
sentence at a time — by ``attenzione translate`` when a line is longer than the model's limit,
and always by ``attenzione serve``. A regular expression on ``.!?`` gets this wrong in the
cases readers notice first: "Dr. Ur", "U.S.", "e.g.", "3.5", "No. 5". `sentencex`
(Wikimedia's segmenter: ~300 languages, abbreviation lists, no dependencies, a Rust core)
handles them, and it keeps the whitespace between sentences, which lets us promise:

    "".join(split_sentences(text)) == text

for any text. Line breaks always end a sentence (a paragraph never continues on the next line
of a form field), and each segment keeps the whitespace that followed it, so a caller can
translate ``segment.strip()`` and put the surrounding whitespace back around the translation.
"""

from __future__ import annotations

import sentencex


def split_sentences(text: str, language: str = "en") -> list[str]:
    """Segments of ``text`` (sentences with their trailing whitespace), joining back to it.

    ``language`` is the ISO 639-1 code of the text (sentencex's abbreviation lists are per
    language; unknown codes fall back to its generic rules). Empty text gives ``[]``.
    """
    out: list[str] = []
    for line in text.splitlines(keepends=True):
        body = line.rstrip("\r\n")
        # sentencex works on byte offsets and panics on some multi-byte whitespace (seen with
        # U+00A0 after an abbreviation); it segments a copy whose whitespace is plain spaces,
        # one character for one, so the offsets found in the copy cut the original.
        plain = "".join(" " if ch.isspace() else ch for ch in body)
        cuts: list[int] = []
        pos = 0
        for part in _segment(language, plain)[:-1]:
            part = part.strip()
            found = plain.find(part, pos) if part else -1
            if found < 0:  # cannot locate it: the rest of the line stays one segment
                break
            pos = found + len(part)
            pos += len(plain[pos:]) - len(plain[pos:].lstrip())
            if 0 < pos < len(body):
                cuts.append(pos)
        bounds = [0, *cuts, len(line)]
        out.extend(line[a:b] for a, b in zip(bounds, bounds[1:], strict=False) if b > a)
    return out


def _segment(language: str, text: str) -> list[str]:
    """sentencex's sentences, or the whole text if it fails (it is Rust: a bug there raises
    ``PanicException``, a BaseException, which must not take a server thread down)."""
    if not text.strip():
        return []
    try:
        return list(sentencex.segment(language, text))
    except (KeyboardInterrupt, SystemExit):
        raise
    except BaseException:
        return [text]


def strip_segment(segment: str) -> tuple[str, str, str]:
    """(leading whitespace, text, trailing whitespace) of one segment."""
    text = segment.strip()
    if not text:
        return segment, "", ""
    start = segment.find(text)
    return segment[:start], text, segment[start + len(text) :]
