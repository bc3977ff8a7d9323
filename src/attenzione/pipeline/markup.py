"""Inline markup carried into a whole-sentence translation by the model's cross-attention.

"Click <b>Save</b> to keep your changes." used to be cut at its tags and translated in three
pieces ("Click", "Save", "to keep your changes."), which keeps each tag where it stood but
spoils the sentence: a piece has no verb, no agreement, no word order of its own. Here the
sentence is translated whole, without its tags, and each pair of tags is put back around the
words of the translation that attend to the words it enclosed (the attention of the decoder
layer :attr:`attenzione.translator.translator.Translator.alignment_layer`, read the way alignment
toolkits read it; see :func:`place`):

* a pair (``<b>`` … ``</b>``) is placed around the target words whose likeliest source word
  (by attention) lies inside it, from the first to the last of them, but not across a word
  that looks at a word outside it ("Tom è <b>qui</b>", not "<b>Tom è qui</b>"); a short
  first word that no word inside attends from most (an article) is left out of it; when no
  target word looks inside, the pair goes around the one word that attends to it most;
* pairs are kept nested as they were: a pair inside another stays inside it, pairs side by
  side do not overlap (they may swap order, as words do: "<b>red</b> <i>car</i>" →
  "<i>auto</i> <b>rossa</b>"); should the words run out, a pair is kept empty, never dropped;
* every tag comes out exactly once, as it was written.

Only paired inline tags are placed so. Block and void tags (``<p>``, ``<br/>``, ``<li>``:
:data:`CUTTING`), a tag without its partner, a pair around no letter or digit and a tag next
to a digit still cut the text where they stand (:func:`attenzione.pipeline.carry.stretches`);
a pair around the whole sentence simply stays around it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

import torch

from attenzione.data.tokenizers import WORD_START, is_byte_piece

# Tags that end a stretch of text rather than mark words inside it (HTML's block and void
# elements, and those whose content is not prose); any other tag with its partner in the same
# stretch is inline.
CUTTING = frozenset({
    "address", "area", "article", "aside", "audio", "base", "blockquote", "body", "br",
    "button", "canvas", "caption", "center", "col", "datalist", "dd", "details", "dialog",
    "div", "dl", "dt", "embed", "fieldset", "figcaption", "figure", "footer", "form", "h1",
    "h2", "h3", "h4", "h5", "h6", "head", "header", "hgroup", "hr", "html", "iframe", "img",
    "input", "legend", "li", "link", "main", "map", "math", "menu", "meta", "nav",
    "noscript", "object", "ol", "optgroup", "option", "p", "param", "pre", "rp", "rt",
    "script", "search", "section", "select", "source", "style", "summary", "svg", "table",
    "tbody", "td", "template", "textarea", "tfoot", "th", "thead", "title", "tr", "track",
    "ul", "video", "wbr",
})  # fmt: skip

# A pair's first word is dropped while it is a short word (at most this many characters: an
# article, a preposition: "il <b>menu</b>", not "<b>il menu</b>") that no word inside the pair
# attends from most.
SHORT_WORD = 5
_NAME = re.compile(r"</?([A-Za-z][\w:-]*)")


@dataclass(frozen=True)
class Tag:
    """One tag of a sentence, taken out of the text the model reads: as it was written
    (``text``), where it stood (``at``: how many non-space characters of the sentence come
    before it), the index of its pair among the sentence's pairs, and whether it opens it."""

    text: str
    at: int
    pair: int
    opens: bool


def tag_name(tag: str) -> str:
    """The element name of a tag, lower-cased ("<A href=…>" → "a")."""
    m = _NAME.match(tag)
    return m.group(1).lower() if m else ""


def inline_pairs(tags: Sequence[tuple[int, str]]) -> dict[int, int]:
    """The inline pairs among a run of tags, given as (key, tag text) in order: {key of the
    opening tag: key of its closing tag}. A closing tag pairs with the last open one of its
    name when that is the innermost open tag; crossed, unclosed and self-closing tags and
    those in :data:`CUTTING` pair with nothing."""
    pairs: dict[int, int] = {}
    stack: list[tuple[str, int]] = []
    for key, text in tags:
        name = tag_name(text)
        if not name or name in CUTTING or text.endswith("/>"):
            continue
        if not text.startswith("</"):
            stack.append((name, key))
        elif stack and stack[-1][0] == name:
            pairs[stack.pop()[1]] = key
        elif any(n == name for n, _ in stack):  # crossed: its opener and all inside it lose
            while stack and stack[-1][0] != name:
                stack.pop()
            stack.pop()
    return pairs


def nonspace(text: str) -> int:
    """How many characters of ``text`` are not whitespace."""
    return sum(not c.isspace() for c in text)


def piece_texts(pieces: Sequence[str]) -> list[str]:
    """What each piece writes, in order, so that joined they are the decoded text (before its
    leading space is stripped): ``▁`` is a space, and a run of byte pieces is decoded
    together and written by its first piece."""
    out = [""] * len(pieces)
    i = 0
    while i < len(pieces):
        if is_byte_piece(pieces[i]):
            j = i
            while j < len(pieces) and is_byte_piece(pieces[j]):
                j += 1
            raw = bytes(int(p[3:5], 16) for p in pieces[i:j])
            out[i] = raw.decode("utf-8", "replace")
            i = j
        else:
            out[i] = pieces[i].replace(WORD_START, " ")
            i += 1
    return out


def words(pieces: Sequence[str]) -> list[list[int]]:
    """Piece indices grouped into words: ``▁`` starts one, a piece without letters or digits
    (punctuation) is one of its own, and byte pieces go on with the word they are in."""
    out: list[list[int]] = []
    punct_before = False
    for i, p in enumerate(pieces):
        if (is_byte_piece(p) and out) or (out and all(pieces[j] == WORD_START for j in out[-1])):
            out[-1].append(i)  # a lone "▁" is the space before the word it goes on with
            punct_before = not is_byte_piece(p) and not any(c.isalnum() for c in p)
            continue
        punct = not is_byte_piece(p) and not any(c.isalnum() for c in p)
        if not out or p.startswith(WORD_START) or punct or punct_before:
            out.append([i])
        else:
            out[-1].append(i)
        punct_before = punct and p != WORD_START
    return out


@dataclass
class _Span:
    pair: int
    depth: int
    lo: int  # first target word
    hi: int  # last target word; hi < lo: kept empty, after word ``hi``
    root: int  # an empty pair's: the depth of the outermost empty pair around it (or its own)


def place(
    tags: Sequence[Tag],
    src_pieces: Sequence[str],
    tgt_pieces: Sequence[str],
    weights: torch.Tensor,
) -> list[tuple[int, Tag]]:
    """Where each tag goes in the translation: (character offset in the decoded text, tag),
    in the order they are to be written. ``weights`` (T,S) is the attention of each target
    piece (row) on each source piece (column), special tokens left out; ``tags`` are the
    sentence's, every pair whole (its opening and closing tag)."""
    src_words, tgt_words = words(src_pieces), words(tgt_pieces)
    n_pairs = 1 + max((t.pair for t in tags), default=-1)
    if not tgt_words or not n_pairs:  # nothing to place in: every pair at the start
        return [(0, t) for t in tags]
    # source words as non-space character ranges
    texts = piece_texts(src_pieces)
    starts, ends, pos = [], [], 0
    for word in src_words:
        before = pos
        for i in word:
            pos += nonspace(texts[i])
        starts.append(before)
        ends.append(pos)
    opening = {t.pair: t for t in tags if t.opens}
    closing = {t.pair: t for t in tags if not t.opens}
    inside: list[list[int]] = []
    for p in range(n_pairs):
        a, b = opening[p].at, closing[p].at
        ws = [s for s in range(len(src_words)) if a <= starts[s] < b]
        # a tag inside a word ("Sa<b>v</b>e") marks the words it overlaps
        inside.append(ws or [s for s in range(len(src_words)) if starts[s] < b and ends[s] > a])
    # word-level attention: mean over a target word's pieces of the sum over a source word's
    w = torch.stack(
        [torch.stack([weights[t_idx][:, s_idx].sum(dim=1).mean() for s_idx in src_words])
         for t_idx in tgt_words]
    ) if src_words else torch.zeros((len(tgt_words), 0))  # fmt: skip
    best = w.argmax(dim=1).tolist() if src_words else [-1] * len(tgt_words)
    tgt_texts = piece_texts(tgt_pieces)
    # punctuation: a word with no letter or digit
    src_punct = [not any(c.isalnum() for i in word for c in texts[i]) for word in src_words]
    tgt_punct = [not any(c.isalnum() for i in word for c in tgt_texts[i]) for word in tgt_words]
    # the source's nesting: a pair's parent is the innermost pair around it
    order = sorted(range(n_pairs), key=lambda p: (opening[p].at, -closing[p].at, p))
    parent: dict[int, int | None] = {}
    open_stack: list[int] = []
    for p in order:
        while open_stack and not (
            opening[open_stack[-1]].at <= opening[p].at
            and closing[p].at <= closing[open_stack[-1]].at
        ):
            open_stack.pop()
        parent[p] = open_stack[-1] if open_stack else None
        open_stack.append(p)
    children: dict[int | None, list[int]] = {}
    for p in order:
        children.setdefault(parent[p], []).append(p)
    spans: dict[int, _Span] = {}

    def word_text(t: int) -> str:
        return "".join(tgt_texts[i] for i in tgt_words[t]).strip()

    def breaks(t: int, p: int) -> bool:
        # a word that looks at a word outside the pair (not at punctuation) ends a block
        return best[t] not in inside[p] and not src_punct[best[t]]

    def fit(kids: list[int], lo: int, hi: int, depth: int, root: int) -> None:
        taken = [False] * len(tgt_words)
        # the pair with most words first, then in source order
        for p in sorted(kids, key=lambda p: (-len(inside[p]), order.index(p))):
            free = [t for t in range(lo, hi + 1) if not taken[t]]
            if not free:
                # kept empty, at the end of its parent, with all inside it
                spans[p] = _Span(p, depth, hi + 1, hi, min(root, depth))
                fit(children.get(p, []), hi + 1, hi, depth + 1, min(root, depth))
                continue
            runs: list[list[int]] = [[free[0]]]
            for t in free[1:]:
                if t == runs[-1][-1] + 1 and not breaks(t, p):
                    runs[-1].append(t)
                else:
                    runs.append([t])
            mass = w[:, inside[p]].sum(dim=1) if inside[p] else torch.zeros(len(tgt_words))
            aligned = [[t for t in run if best[t] in inside[p]] for run in runs]
            if any(aligned):
                k = max(
                    range(len(runs)),
                    key=lambda k: (len(aligned[k]), float(mass[aligned[k]].sum())),
                )
                a, b = aligned[k][0], aligned[k][-1]
                # the target word each inside source word attends from most anchors the pair
                anchors = {int(w[a : b + 1, s].argmax()) + a for s in inside[p]}
                while a < b and a not in anchors and len(word_text(a)) <= SHORT_WORD:
                    a += 1
                # punctuation at its edges only when the source had it there ("<b>Ctrl</b>:")
                while a < b and tgt_punct[a] and not src_punct[inside[p][0]]:
                    a += 1
                while b > a and tgt_punct[b] and not src_punct[inside[p][-1]]:
                    b -= 1
            if not any(aligned) or (
                a == b and tgt_punct[a] and not all(src_punct[s] for s in inside[p])
            ):  # the word that looks inside most (punctuation only when nothing else)
                a = b = max(free, key=lambda t: (not tgt_punct[t], float(mass[t])))
            spans[p] = _Span(p, depth, a, b, depth)
            for t in range(a, b + 1):
                taken[t] = True
            fit(children.get(p, []), a, b, depth + 1, depth + 1)

    fit(children.get(None, []), 0, len(tgt_words) - 1, 0, 0)
    # target words as character ranges of the decoded text (its leading space stripped)
    joined = "".join(tgt_texts)
    lead = len(joined) - len(joined.lstrip(" "))  # decoding strips every leading space
    first, last = [], []
    offset = -lead
    for word in tgt_words:
        text = "".join(tgt_texts[i] for i in word)
        first.append(offset + len(text) - len(text.lstrip()))
        offset += len(text)
        last.append(offset - (len(text) - len(text.rstrip())))
    # At one offset: first the tags that close (the innermost first), then the empty pairs
    # (nested as they were), then those that open (the outermost first).
    placed: list[tuple[int, tuple[int, ...], Tag]] = []
    for p, span in spans.items():
        if span.hi < span.lo:  # empty: after the words before it, before its parent closes
            at = last[span.hi] if span.hi >= 0 else 0
            placed.append((at, (0, -span.root, 1, span.depth), opening[p]))
            placed.append((at, (0, -span.root, 2, -span.depth), closing[p]))
        else:
            placed.append((first[span.lo], (1, span.depth), opening[p]))
            placed.append((last[span.hi], (0, -span.depth, 0), closing[p]))
    placed.sort(key=lambda x: (x[0], x[1]))
    return [(at, tag) for at, _, tag in placed]


def insert_tags(text: str, tags: Sequence[Tag]) -> str:
    """``text`` with ``tags`` put back where they stood: each before the non-space character
    ``tag.at`` (after the last one when it is the count of them), in order."""
    offsets = [i for i, c in enumerate(text) if not c.isspace()]
    placed = []
    for t in tags:
        if not t.opens and 0 < t.at <= len(offsets):  # a closing tag goes right after its text
            at = offsets[t.at - 1] + 1
        elif t.at < len(offsets):  # an opening one right before it
            at = offsets[t.at]
        else:
            at = len(text)
        placed.append((at, t.text))
    return insert(text, placed)


def insert(text: str, placed: Sequence[tuple[int, str]]) -> str:
    """``text`` with each string of ``placed`` put at its character offset (in order)."""
    out, pos = [], 0
    for at, s in placed:
        at = max(pos, min(at, len(text)))
        out.append(text[pos:at])
        out.append(s)
        pos = at
    out.append(text[pos:])
    return "".join(out)
