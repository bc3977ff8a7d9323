"""Private-use characters that stand in a text for something taken out of it.

A tag (``<b>``) must survive steps that read a translation as text — the number repair, the
case of a line in capitals, a sentence segmenter — without being read by them: while they
run, the k-th tag stands in the text as one character of Unicode's supplementary private use
area A (U+F0000 + k), which no step reads as a letter, digit, space or sentence end, and is
written back when they are done. The inline-tag steps of the pipeline and the service's HTML
planner (:mod:`attenzione.serve.text`) both use these.
"""

from __future__ import annotations

MARK_BASE = 0xF0000
MARK_COUNT = 0x10000


def mark(k: int) -> str:
    """The character that stands for the ``k``-th thing held out of a text."""
    if not 0 <= k < MARK_COUNT:
        raise ValueError(f"a text can hold at most {MARK_COUNT} marks, not {k + 1}")
    return chr(MARK_BASE + k)


def is_mark(c: str) -> bool:
    """Whether the character ``c`` is a mark."""
    return MARK_BASE <= ord(c) < MARK_BASE + MARK_COUNT


def index(c: str) -> int:
    """Which thing the mark ``c`` stands for."""
    return ord(c) - MARK_BASE


def has_marks(text: str) -> bool:
    """Whether ``text`` holds a mark (a user's text may: then it is not marked again)."""
    return any(is_mark(c) for c in text)
