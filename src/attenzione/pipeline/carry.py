"""Step ``carry``: what the model cannot translate is carried over where it stands.

Markup tags (``<b>``, ``</b>``, ``<a href="…">``: :data:`MARKUP_TAG`), web and mail
addresses and host names (:data:`ADDRESS`), runs of pictographs the source vocabulary can
only spell in bytes (emoji, stars, dingbats: :meth:`Context.carries`, with the joiners
between them) and any stretch without a letter or digit ("!" after an emoji) are cut out
of the line and written back unchanged; the text between them is translated. The model has
hardly seen them: it turned "🍕" into invented words, "<b>Tom</b> is here" into
"<b>Tom-t> è qui" and "example.com" into "esempio.com".

With the ``inline-tags`` step on (a step that places tags: the pipeline sets the segment's
``keep_inline``), an address or a run of pictographs inside a sentence —
after a word or a comma, before a lower-case letter: "I had bread 🍞 and the coffee", "see
https://x.org for more" — does not cut it either (cut, its halves were translated apart,
"e il caffè"): it becomes a *point*, a pair of tags around the word before it whose opening
tag is empty and whose closing tag is the carried text, so the sentence is translated whole
and the point lands after the translation of that word, placed by attention.

When the ``inline-tags`` step is on, a pair of inline tags around some words of a stretch
(``Click <b>Save</b> now``: :func:`attenzione.pipeline.markup.inline_pairs`) does not cut it:
the pair is taken out of the text the model reads and kept in the segment (``tags``), and
``inline-tags`` places it in the translation by attention; this step writes the tags back in
the end (they stand in the translation as private-use marks while the steps between read it).
A pair around the whole stretch is carried around it; a pair around no letter or digit, next to
a digit, or between two letters cuts.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import NamedTuple

from attenzione.pipeline import marks
from attenzione.pipeline.base import Context, Segment, Step
from attenzione.pipeline.markup import Tag, inline_pairs, insert_tags, nonspace

# A markup tag (<b>, </b>, <br/>, <a href="…">): carried where it stands, the text around it
# translated. The service's format=html reads the tags it parses the same way.
MARKUP_TAG = re.compile(r"</?[A-Za-z][\w:-]*(?:\s[^<>]{0,200})?/?>")

# A host name without a scheme ("example.com", "shop.example.com:8080/cart"): dotted labels
# ending in a top-level domain. A capitalised name with one dot needs a generic domain
# ("Amazon.com", not "Sig.ra" or "Tom.si"); a lower-case one may end in any two letters
# ("identi.ca", "example.it"); "file.txt", "e.g." and "3.5" are not host names.
_GENERIC = r"(?:com|org|net|edu|gov|mil|int|info|biz|app|dev|xyz|online|site|tech|shop|blog)"
_TLD = rf"(?:[a-z]{{2}}|{_GENERIC})"
_LABEL = r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
_HOST = (
    rf"(?<![\w@./:-])(?:(?:{_LABEL}\.){{2,8}}{_TLD}|[a-z0-9][a-z0-9-]{{0,62}}\.{_TLD}|{_LABEL}\.{_GENERIC})"
    r"(?![\w-])(?::\d{1,5})?(?:/[^\s<>\"]*)?"
)

# A web or mail address ("https://example.com/a?b=1", "www.debian.org", "info@example.org",
# a bare host name), starting a word; the punctuation that ends a sentence after it is not
# part of it.
ADDRESS = re.compile(
    r"(?:(?:https?|ftp)://|www\.)[^\s<>\"]+"
    r"|[\w.+-]{1,64}@[\w-]{1,63}(?:\.[\w-]{1,63}){1,8}"  # bounded: linear on "a.a.a.…"
    rf"|{_HOST}"
)
_ADDRESS_END = re.compile(r"[.,;:!?'\")\]]+$")

# Characters that join an emoji sequence: zero-width joiner, variation selectors, the keycap
# and the tag characters of subdivision flags. Carried with the pictographs they join.
EMOJI_JOINERS = frozenset("\u200d\ufe0e\ufe0f\u20e3") | frozenset(map(chr, range(0xE0020, 0xE0080)))

NAME = "carry"


class Stretch(NamedTuple):
    """A stretch of a line: what joined it to the one before ("" or " "), its text, whether
    it is translated, and the inline tags taken out of it."""

    glue: str
    text: str
    readable: bool
    tags: tuple[Tag, ...] = ()


def _renumbered(tags: Sequence[Tag]) -> tuple[Tag, ...]:
    """``tags`` with their pairs numbered 0, 1, … in the order they open."""
    number: dict[int, int] = {}
    for t in tags:
        if t.opens:
            number[t.pair] = len(number)
    return tuple(Tag(t.text, t.at, number[t.pair], t.opens) for t in tags)


def stretches(text: str, ctx: Context, *, inline: bool = True) -> list[Stretch]:
    """``text`` (stripped) cut around what is carried, in order (see the module docstring);
    with ``inline``, inline pairs are kept with their stretch rather than cutting it."""
    items: list[tuple[str, str]] = []  # ("tag" | "cut" | "char", text)
    i = 0
    while i < len(text):
        tag = MARKUP_TAG.match(text, i)
        address = ADDRESS.match(text, i) if i == 0 or not text[i - 1].isalnum() else None
        if tag:
            items.append(("tag", tag.group(0)))
            i = tag.end()
        elif address and (found := _ADDRESS_END.sub("", address.group(0))):
            i += len(found)
            if items and items[-1] == ("char", "(") and text[i : i + 1] == ")":
                items.pop()  # "(https://x.org)" is carried whole, brackets and all
                found = f"({found})"
                i += 1
            items.append(("cut", found))  # the model would translate it ("esempio.com")
        elif ctx.carries(text[i]) or text[i + 1 : i + 2] in ("\ufe0f", "\u20e3"):
            # a pictograph, or a character shown as an emoji ("©️", the keycap "1️⃣")
            j = i + 1
            while j < len(text) and (ctx.carries(text[j]) or text[j] in EMOJI_JOINERS):
                j += 1
            items.append(("cut", text[i:j]))
            i = j
        else:
            items.append(("char", text[i]))
            i += 1
    if inline:
        _mark_points(items)
    tags = [(k, t) for k, (kind, t) in enumerate(items) if kind == "tag"]
    pairs = inline_pairs(tags) if inline else {}

    def joins(k: int) -> bool:
        """Whether the run of tags around item ``k`` stands between two letters or digits."""
        a, b = k, k
        while a >= 0 and items[a][0] == "tag":
            a -= 1
        while b < len(items) and items[b][0] == "tag":
            b += 1
        return (
            a >= 0
            and b < len(items)
            and items[a][0] == items[b][0] == "char"
            and items[a][1].isalnum()
            and items[b][1].isalnum()
        )

    while True:  # a pair with a cut (or no text) inside cuts too, until none is left
        kept = set(pairs) | set(pairs.values())
        bad = {
            o
            for o, c in pairs.items()
            if any(kind == "cut" or (kind == "tag" and k not in kept)
                   for k, (kind, _) in enumerate(items[o + 1 : c], start=o + 1))
            # around no letter or digit ("<b>…</b>"): the model would drop it
            or not any(kind == "char" and t.isalnum() for kind, t in items[o + 1 : c])
            # next to a digit ("<b>1</b>,000"): the number repair would read two numbers
            or any(0 <= k < len(items) and items[k][0] == "char" and items[k][1].isdigit()
                   for k in (o - 1, o + 1, c - 1, c + 1))
            # between two letters ("<a>Home</a><a>About</a>"): taken out, the tags would
            # glue two words into one
            or joins(o) or joins(c)
        }  # fmt: skip
        if not bad:
            break
        pairs = {o: c for o, c in pairs.items() if o not in bad}
    kept = set(pairs) | set(pairs.values())
    pair_of = {k: n for n, o in enumerate(sorted(pairs)) for k in (o, pairs[o])}
    runs: list[tuple[str, bool, list[Tag]]] = []  # (stretch, carried, its inline tags)
    buf: list[str] = []
    held: list[Tag] = []
    points = len(pairs)
    for k, (kind, t) in enumerate(items):
        if kind == "char":
            buf.append(t)
        elif kind == "point":
            # a pair around the word before the pictograph: an empty opening tag at its
            # start, the pictograph as its closing tag (after the word's translation)
            text = "".join(buf)
            word = len(text.rstrip()) - len(text.rstrip().rsplit(None, 1)[-1])
            before = " " if text[-1:].isspace() else ""
            held.append(Tag("", nonspace(text[:word]), points, True))
            held.append(Tag(before + t, nonspace(text), points, False))
            points += 1
            buf = [text.rstrip()]  # one space between the words, the one after it
        elif k in kept:
            held.append(Tag(t, nonspace("".join(buf)), pair_of[k], k in pairs))
        else:
            if buf or held:
                runs.append(("".join(buf), False, held))
            runs.append((t, True, []))
            buf, held = [], []
    if buf or held:
        runs.append(("".join(buf), False, held))
    out: list[Stretch] = []
    space = False  # whitespace since the last stretch kept
    for stretch, carried, held in runs:
        core = stretch.strip()
        lead: list[str] = []
        tail: list[str] = []
        n = nonspace(core)
        # pairs around the whole stretch are carried around it
        while held and held[0].opens and held[-1].pair == held[0].pair and held[0].at == 0:
            if held[-1].at != n:
                break
            lead.append(held.pop(0).text)
            tail.insert(0, held.pop().text)
        readable = not carried and any(c.isalnum() for c in core)
        if held and not readable:  # tags around punctuation: carried where they stand
            core, held = insert_tags(core, held), []
            readable = False
        if not core:  # only whitespace, between two carried runs
            space = True
            continue
        glue = " " if out and (space or stretch[0].isspace()) else ""
        if lead:
            out.append(Stretch(glue, "".join(lead), False))
            glue = ""
        out.append(Stretch(glue, core, readable, _renumbered(held)))
        if tail:
            out.append(Stretch("", "".join(tail), False))
        space = stretch[-1].isspace()
    return out


def _mark_points(items: list[tuple[str, str]]) -> None:
    """Turn each carried run of pictographs or address inside a sentence into a point.

    Inside a sentence: after a letter, digit or comma and before a lower-case letter (spaces
    between), with no tag in the way — "and 🍕 the coffee", not "Thanks! 😊 See you". A
    point does not cut its stretch: the sentence is translated whole, and what it carries is
    placed after the translation of the word before it, by attention, as an inline pair is.
    """
    for k, (kind, _) in enumerate(items):
        if kind != "cut":
            continue
        a = k - 1
        while a >= 0 and items[a] == ("char", " "):
            a -= 1
        b = k + 1
        while b < len(items) and items[b] == ("char", " "):
            b += 1
        if (
            a >= 0
            and b < len(items)
            and items[a][0] == items[b][0] == "char"
            and (items[a][1].isalnum() or items[a][1] == ",")
            and items[b][1].islower()
        ):
            items[k] = ("point", items[k][1])


def unmarked(text: str, tags: Sequence[Tag]) -> str:
    """``text`` with each tag's mark replaced by the tag (a mark lost on the way: its tag goes
    where the same tag stood in the source, by :func:`attenzione.pipeline.markup.insert_tags`)."""
    if all(text.count(marks.mark(k)) == 1 for k in range(len(tags))):
        return "".join(tags[marks.index(c)].text if marks.is_mark(c) else c for c in text)
    plain = "".join(c for c in text if not marks.is_mark(c))
    return insert_tags(plain, tags)


class Carry(Step):
    name = NAME

    def prepare(self, segments: list[Segment], ctx: Context) -> list[Segment]:
        out: list[Segment] = []
        for seg in segments:
            if not seg.translate:
                out.append(seg)
                continue
            for k, s in enumerate(stretches(seg.text, ctx, inline=seg.keep_inline)):
                glue = seg.glue if k == 0 else s.glue
                piece = seg.but(text=s.text, glue=glue, translate=s.readable)
                if s.tags:
                    piece.tags, piece.tags_length = s.tags, nonspace(s.text)
                out.append(piece)
        return out

    def restore(self, segment: Segment, text: str, ctx: Context, tokens: Sequence[int]) -> str:
        return unmarked(text, segment.tags) if segment.tags else text
