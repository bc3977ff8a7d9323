"""Mixed-content XML trees (HTML, OpenDocument): a block's text and its inline children as one
tagged segment, and the translation written back as new inline elements.

HTML's ``<p>Click <b>Save</b> to keep <a href="x">the file</a>.</p>`` and ODF's
``<text:p>Click <text:span text:style-name="T1">Save</text:span> …</text:p>`` have the same
shape: a *block* whose text runs through *inline* elements. A block's text from one *barrier*
to the next is one segment (a chunk). A barrier is any child that is not pure inline: a
``<br>``, an image, a ``<code>``, a nested list, an ODF tab or frame, a comment; it stays where
it is, exactly as it was, and whatever blocks it holds are chunked in turn. An inline element
is pure when its whole content is text and pure inline elements, with some non-space text: an
empty anchor (``<a id="top"></a>``) is a barrier, so it is never lost.

Writing back, a chunk's inline elements are replaced by copies of themselves (tag and every
attribute: a link keeps its href, a span its style) placed around the words the translator
put their tags around; the text of the barrier before the chunk (or the block's own text) is
set to what comes before the first one. Every element outside the chunks is left as it is.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from attenzione.documents.base import xml_safe
from attenzione.documents.tags import Leaf, Tagged, tag, translatable, untag

Element = Any  # an lxml element (lxml.etree._Element, lxml.html.HtmlElement)


@dataclass(frozen=True)
class Rules:
    """What a format's elements are. ``root``: a block whose text is chunked (others are only
    searched for blocks); ``inline``: may wrap words; ``skip``: never translated nor entered;
    ``spaces``: the text an element stands for, for an element that is only spacing (ODF's
    ``<text:s c="3"/>``), else None; ``name``: the tag name a wrapper gets in the segment."""

    root: Callable[[Element], bool]
    inline: Callable[[Element], bool]
    skip: Callable[[Element], bool]
    spaces: Callable[[Element], str | None]
    name: Callable[[Element], str]


@dataclass
class Chunk:
    """A run of a block's content between two barriers: its ``parent`` block, the barrier it
    follows (None: the block's own text), its inline children, and the wrappers its keys
    name."""

    parent: Element
    anchor: Element | None
    members: list[Element] = field(default_factory=list)
    wrappers: list[Element] = field(default_factory=list)
    leaves: list[Leaf] = field(default_factory=list)


def chunks(root: Element, rules: Rules) -> list[tuple[Chunk, Tagged]]:
    """Every chunk of the tree under ``root`` that has something to translate, in document
    order, with its tagged segment."""
    out: list[tuple[Chunk, Tagged]] = []
    _walk(root, rules, out)
    return out


def _is_element(el: Element) -> bool:
    return isinstance(el.tag, str)  # comments and processing instructions are not


def _pure(el: Element, rules: Rules) -> bool:
    if not _is_element(el) or not rules.inline(el) or rules.skip(el):
        return False
    if not all(rules.spaces(c) is not None or _pure(c, rules) for c in el):
        return False
    return bool("".join(el.itertext()).strip())


def _walk(el: Element, rules: Rules, out: list[tuple[Chunk, Tagged]]) -> None:
    if not _is_element(el) or rules.skip(el):
        return
    if not rules.root(el):
        for child in el:
            _walk(child, rules, out)
        return
    chunk = Chunk(el, None, leaves=[(el.text or "", ())])
    for child in el:
        if rules.spaces(child) is not None or _pure(child, rules):
            chunk.members.append(child)
            _collect(child, (), chunk, rules)
            chunk.leaves.append((child.tail or "", ()))
        else:
            _finish(chunk, rules, out)
            _walk(child, rules, out)
            chunk = Chunk(el, child, leaves=[(child.tail or "", ())])
    _finish(chunk, rules, out)


def _collect(el: Element, keys: tuple[int, ...], chunk: Chunk, rules: Rules) -> None:
    """``el``'s text as leaves (not its tail: that is its parent's)."""
    spaces = rules.spaces(el)
    if spaces is not None:
        chunk.leaves.append((spaces, keys))
        return
    keys = (*keys, len(chunk.wrappers))
    chunk.wrappers.append(el)
    chunk.leaves.append((el.text or "", keys))
    for child in el:
        _collect(child, keys, chunk, rules)
        chunk.leaves.append((child.tail or "", keys))


def _finish(chunk: Chunk, rules: Rules, out: list[tuple[Chunk, Tagged]]) -> None:
    tagged = tag(chunk.leaves, [rules.name(w) for w in chunk.wrappers])
    if translatable(tagged.text):
        out.append((chunk, tagged))


def rewrite(chunk: Chunk, tagged: Tagged, translation: str) -> None:
    """Replace ``chunk``'s content in its block by ``translation`` (tagged as ``tagged``)."""
    parent = chunk.parent
    for member in chunk.members:
        parent.remove(member)  # its tail goes with it: that text is the chunk's too
    lead = ""
    top: list[Element] = []
    stack: list[tuple[int, Element]] = []

    def add_text(text: str) -> None:
        nonlocal lead
        text = xml_safe(text)  # a page's form feed: lxml keeps it read, refuses it written
        holder = stack[-1][1] if stack else None
        if holder is not None and len(holder):
            holder[-1].tail = (holder[-1].tail or "") + text
        elif holder is not None:
            holder.text = (holder.text or "") + text
        elif top:
            top[-1].tail = (top[-1].tail or "") + text
        else:
            lead += text

    for text, keys in untag(tagged, translation):
        common = 0
        while common < min(len(stack), len(keys)) and stack[common][0] == keys[common]:
            common += 1
        del stack[common:]
        for key in keys[common:]:
            source = chunk.wrappers[key]
            new = source.makeelement(source.tag, dict(source.attrib))
            if stack:
                stack[-1][1].append(new)
            else:
                top.append(new)
            stack.append((key, new))
        add_text(text)
    if chunk.anchor is None:
        parent.text = lead or None
        at = 0
    else:
        chunk.anchor.tail = lead or None
        at = parent.index(chunk.anchor) + 1
    for offset, new in enumerate(top):
        parent.insert(at + offset, new)
