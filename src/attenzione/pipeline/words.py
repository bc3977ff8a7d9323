"""How the casing and names steps read words: what more than one step asks of a line's words.

``capitals`` and ``title-case`` both judge a line in capitals (:func:`in_capitals`) and
sentence ends (:func:`ends_sentence`) the same way; ``capitals`` and ``names`` both read a
name with letters the vocabulary spells in bytes with base letters (:func:`foldable`). They
live here so that no step imports another.
"""

from __future__ import annotations

import re
import unicodedata

from attenzione.pipeline.base import Context
from attenzione.search.lexicon import holds

# A word (an apostrophe inside it keeps it one: "don't")
WORD = re.compile(r"[^\W\d_]+(?:['\u2019][^\W\d_]+)?")
_CODE = re.compile(r"\b(?=\w*[^\W\d_])(?=\w*\d)\w+\b")  # letters and digits: "AB12CD"

# Letters with no decomposition into a base letter and marks, and the base letter each reads as
_BASE_LETTER = {"ł": "l", "Ł": "L", "ø": "o", "Ø": "O", "đ": "d", "Đ": "D", "ı": "i", "ħ": "h",
                "Ħ": "H", "ŧ": "t", "Ŧ": "T"}  # fmt: skip
# A word is read with its letters' base letters only from this many letters on: a shorter one
# ("õ", "Ýr") could come back as an ordinary word of the translation ("o")
FOLD_MIN_LETTERS = 3
# Only a word with a letter from this code point on that the vocabulary spells in bytes is read
# with base letters: past Latin-1 (on the 177 sentences, 166 came out exactly with every such
# word folded, 171 with the words past Latin-1 folded). Read at each call of :func:`foldable`.
FOLD_FROM = 0x100


def shouting(text: str) -> bool:
    """Whether ``text`` is written in capitals: at least two cased letters, none lower-case."""
    cased = [c for c in text if c.isupper() or c.islower()]
    return len(cased) >= 2 and not any(c.islower() for c in cased)


def in_capitals(words: str) -> bool:
    """Whether a line whose text is ``words`` is read as a line in capitals: written in
    capitals, and not a code with no word of three letters ("ID: AB12CD")."""
    return shouting(words) and (
        not _CODE.search(words) or any(len(w) >= 3 for w in WORD.findall(words))
    )


def ends_sentence(text: str) -> bool:
    """Whether ``text`` ends a sentence (the next stretch starts one)."""
    return text.rstrip("\"')»”")[-1:] in (".", "!", "?")


def base_letter(ch: str) -> str | None:
    """The one ASCII letter ``ch`` is written on ("ń" → "n", "ğ" → "g", "ł" → "l"), or None."""
    if ch in _BASE_LETTER:
        return _BASE_LETTER[ch]
    base = "".join(c for c in unicodedata.normalize("NFKD", ch) if not unicodedata.combining(c))
    return base if len(base) == 1 and base.isascii() and base.isalpha() else None


def foldable(word: str, ctx: Context) -> str | None:
    """The reading of ``word`` with base letters when it may be read so, else None: a word of
    :data:`FOLD_MIN_LETTERS` letters or more with a letter from :data:`FOLD_FROM` on that the
    vocabulary spells in bytes, every letter with a base letter, and a reading that is
    neither a known target word nor a word the training data always translates ("Sąd" would
    read "Sad")."""
    if len(word) < FOLD_MIN_LETTERS or word.isascii():
        return None
    if not any(ord(c) >= FOLD_FROM and ctx.spelled_in_bytes(c) for c in word):
        return None
    letters = [c if c.isascii() else base_letter(c) for c in word]
    if any(b is None for b in letters):
        return None
    read = "".join(b for b in letters if b is not None)
    lower = read.lower()
    known = ctx.known_words
    if (known is not None and holds(known, lower, whole=True)) or lower in ctx.not_free:
        return None
    return read
