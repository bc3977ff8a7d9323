"""Numbers in translation: finding them, and putting back the ones a model garbled.

A neural translator writes numbers the way it writes words — piece by piece, from what it
has seen — so it can turn "2017" into "20177" or "555-1234" into "555255325525555". Digits
split into single pieces (the tokenizer) and training pairs with random numbers (the data
mix) teach the model to copy; :func:`repair_numbers` is the guarantee behind that lesson. It
runs after decoding and only touches numbers of the translation that match no number of the
source: each such number is replaced, in order, by a source number that the translation has
not reproduced. A translation that already has every source number is returned unchanged,
and a number the model wrote out in words ("two" → "due") is left alone. A missing source
number that the model glued to the next word ("10 gunmen" → "10men") is first set apart
("10 men"), unless the glued form is the source's own ("3D") or an Italian word made with a
number ("18enne", "10mila", "2019esimo").

A number written with the other convention's separators (1,000 ↔ 1.000, 3.5 ↔ 3,5) counts
as reproduced: the digits are exact and that is how an Italian reader writes it.
"""

from __future__ import annotations

import re
from collections import Counter

# digits, optionally grouped, with a decimal part, or joined into one expression by - / :
# ("2017", "1,000", "3.5", "555-1234", "10:30", "2017-05-01"): one number to copy whole
NUMBER = re.compile(r"(?<![\w.,])\d+(?:[.,:/-]\d+)*(?!\w)")


# a number run into the letters of a word: "10men", "17unds" (the word follows the digits).
# Two letters at least, and no digit after them: "1º", "2x", "4x4", "3a2" are forms, not glue
GLUED = re.compile(r"(?<![\w.,])(\d+(?:[.,:/-]\d+)*)([^\W\d_]{2,})(?!\d)")
# Italian writes these with the digits ("un 18enne", "10mila euro", "il 150esimo"): kept whole
_ITALIAN_SUFFIX = re.compile(r"(?:enne|enni|mila|esim[oaie]|ennale|ennali)", re.IGNORECASE)


def numbers(text: str) -> list[str]:
    """The numbers of ``text`` in order of appearance."""
    return NUMBER.findall(text)


def swap_separators(number: str) -> str:
    """1,000 ↔ 1.000 and 3.5 ↔ 3,5: the same number in the other convention."""
    return number.translate(str.maketrans(",.", ".,"))


def take(pool: Counter[str], number: str, *, other_separators: bool = True) -> bool:
    """Use up one ``number`` from ``pool`` (as written, or with the other separators)."""
    for form in (number, swap_separators(number)) if other_separators else (number,):
        if pool[form] > 0:
            pool[form] -= 1
            return True
    return False


def _unglue(source: str, translation: str, wanted: Counter[str]) -> str:
    """Set apart each glued number of ``translation`` that is a source number it lacks."""
    missing = wanted.copy()
    for m in NUMBER.finditer(translation):
        take(missing, m.group(0))
    source_glued = {g.group(0).lower() for g in GLUED.finditer(source)}  # the source's own: kept

    def split(m: re.Match[str]) -> str:
        number, word = m.group(1), m.group(2)
        if (
            _ITALIAN_SUFFIX.fullmatch(word)
            or m.group(0).lower() in source_glued
            or not take(missing, number)
        ):
            return m.group(0)
        return f"{number} {word}"

    return GLUED.sub(split, translation)


def repair_numbers(source: str, translation: str) -> str:
    """``translation`` with each number the source lacks replaced by a missing source number."""
    wanted = Counter(numbers(source))
    if not wanted:
        return translation
    translation = _unglue(source, translation, wanted)
    found = list(NUMBER.finditer(translation))
    # first pass: which translation numbers reproduce a source number (as is, or localised)
    stray: list[re.Match[str]] = []
    for m in found:
        if not take(wanted, m.group(0)):
            stray.append(m)
    missing: list[str] = []  # source numbers not reproduced, in source order
    for n in numbers(source):
        if wanted[n] > 0:
            wanted[n] -= 1
            missing.append(n)
    if not stray or not missing:
        return translation
    # second pass: replace stray numbers by missing ones, left to right
    out, last = [], 0
    for m, replacement in zip(stray, missing, strict=False):
        out.append(translation[last : m.start()])
        out.append(replacement)
        last = m.end()
    out.append(translation[last:])
    return "".join(out)
