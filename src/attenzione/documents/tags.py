"""A paragraph's formatted runs as one tagged string, and the translation's tags as runs again.

The translator already carries inline tags through a sentence: "The <b>red</b> house" is
translated whole and the pair put back around the words that translate "red" (the
``inline-tags`` step, :mod:`attenzione.pipeline.markup`). Every format of this package reduces a
paragraph to *leaves* — pieces of text, each with the chain of formatting wrappers around it
(a link, a bold run, a ``<span>``), outermost first, named by small integer keys — and this
module turns them into that tagged string and back:

* each wrapper key becomes a tag of its own, ``<b id="3">`` … ``</b>``: the name says what it
  is (b, i, u, a, span; the model never reads it), the ``id`` which wrapper it was, so the
  formatting of that exact run can be copied back whatever words the tag ends up around;
* whitespace at the two ends of the paragraph stays out of the string (the translator strips
  it) and is put back around the translation with the wrappers it had; inside, a run of
  whitespace (an HTML source's line break and indentation) is one space;
* on the way back only the tags this module wrote are read as tags: any other ``<…>`` of the
  translation is text (a document about HTML may well say "<div>"), a closing tag counts only
  when it closes the innermost open tag of its name, and a tag the translation lost (``--raw``
  lets the model write what it likes) only loses its formatting, never text.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

Keys = tuple[int, ...]
# A piece of text and the keys of the wrappers around it, outermost first.
Leaf = tuple[str, Keys]

_TAG = re.compile(r'<([A-Za-z][\w-]*) id="(\d+)">|</([A-Za-z][\w-]*)>')
_SPACES = re.compile(r"\s+")


@dataclass(frozen=True)
class Tagged:
    """One segment: ``text`` (stripped, inline formatting as tags) and what it takes to read
    a translation of it back into leaves: each key's tag name and the whitespace cut from
    the two ends, with its wrappers."""

    text: str
    names: tuple[str, ...]
    lead: Leaf
    trail: Leaf


def merged(leaves: Sequence[Leaf]) -> list[Leaf]:
    """``leaves`` with empty ones dropped and neighbours under the same wrappers joined."""
    out: list[Leaf] = []
    for text, keys in leaves:
        if not text:
            continue
        if out and out[-1][1] == keys:
            out[-1] = (out[-1][0] + text, keys)
        else:
            out.append((text, keys))
    return out


def translatable(text: str) -> bool:
    """Whether a text has anything to translate: a letter (not only numbers, punctuation,
    whitespace or tags)."""
    return any(c.isalpha() for c in _TAG.sub("", text))


def tag(leaves: Sequence[Leaf], names: Sequence[str]) -> Tagged:
    """The tagged string of a paragraph's leaves; ``names[key]`` is the tag name of a key."""
    leaves = merged(leaves)
    plain = "".join(t for t, _ in leaves)
    n_lead = len(plain) - len(plain.lstrip())
    n_trail = len(plain) - len(plain.rstrip())
    lead = (plain[:n_lead], leaves[0][1] if leaves else ())
    trail = (plain[len(plain) - n_trail :] if n_trail else "", leaves[-1][1] if leaves else ())
    # cut the ends' whitespace off the leaves
    body: list[Leaf] = []
    pos = 0
    for text, keys in leaves:
        start, end = pos, pos + len(text)
        pos = end
        lo, hi = max(start, n_lead), min(end, len(plain) - n_trail)
        if lo < hi:  # a line break inside a paragraph is a space to the reader, and here
            body.append((_SPACES.sub(" ", text[lo - start : hi - start]), keys))
    parts: list[str] = []
    open_: list[int] = []
    for text, keys in body:
        common = 0
        while common < min(len(open_), len(keys)) and open_[common] == keys[common]:
            common += 1
        while len(open_) > common:
            parts.append(f"</{names[open_.pop()]}>")
        for key in keys[common:]:
            parts.append(f'<{names[key]} id="{key}">')
            open_.append(key)
        parts.append(text)
    parts.extend(f"</{names[key]}>" for key in reversed(open_))
    return Tagged("".join(parts), tuple(names), lead, trail)


def untag(tagged: Tagged, translation: str) -> list[Leaf]:
    """The leaves of a translation of ``tagged.text``, with the ends' whitespace back."""
    leaves: list[Leaf] = [tagged.lead]
    stack: list[int] = []
    pos = 0
    pending = ""
    for m in _TAG.finditer(translation):
        pending += translation[pos : m.start()]
        pos = m.end()
        name, number, closing = m.groups()
        if closing is None:
            key = int(number)
            if key >= len(tagged.names) or tagged.names[key] != name:
                pending += m.group(0)  # not one of ours: text
                continue
            leaves.append((pending, tuple(stack)))
            pending = ""
            stack.append(key)
        elif stack and tagged.names[stack[-1]] == closing:
            leaves.append((pending, tuple(stack)))
            pending = ""
            stack.pop()
        else:
            pending += m.group(0)
    leaves.append((pending + translation[pos:], tuple(stack)))
    leaves.append(tagged.trail)
    return merged(leaves)
