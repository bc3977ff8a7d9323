"""Numbers in translation: finding them, putting back the ones a model garbled, and writing
them the target's way.

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
as reproduced: the digits are exact and that is how an Italian reader writes it. A currency
symbol the translation dropped is put back by :mod:`attenzione.data.currency`.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence

from attenzione import config
from attenzione.languages import CURRENCY_CODE_NAMES, PairWords, pair_words

# the words of no language: what a number step knows of a pair without profiles
NO_WORDS = pair_words(None, None)

# digits, optionally grouped, with a decimal part, or joined into one expression by - / :
# ("2017", "1,000", "3.5", "555-1234", "10:30", "2017-05-01"): one number to copy whole
NUMBER = re.compile(r"(?<![\w.,])\d+(?:[.,:/-]\d+)*(?!\w)")


# a number run into the letters of a word: "10men", "17unds" (the word follows the digits).
# Two letters at least, and no digit after them: "1º", "2x", "4x4", "3a2" are forms, not glue
GLUED = re.compile(r"(?<![\w.,])(\d+(?:[.,:/-]\d+)*)([^\W\d_]{2,})(?!\d)")
# a language may write a suffix on the digits (Italian "un 18enne", "10mila euro", "il
# 150esimo"): kept whole (the profiles' ``numbers.numeral_suffixes``)


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


def _unglue(source: str, translation: str, wanted: Counter[str], words: PairWords) -> str:
    """Set apart each glued number of ``translation`` that is a source number it lacks."""
    missing = wanted.copy()
    for m in NUMBER.finditer(translation):
        take(missing, m.group(0))
    source_glued = {g.group(0).lower() for g in GLUED.finditer(source)}  # the source's own: kept

    def split(m: re.Match[str]) -> str:
        number, word = m.group(1), m.group(2)
        if (
            words.numeral_suffix.fullmatch(word)
            or m.group(0).lower() in source_glued
            or not take(missing, number)
        ):
            return m.group(0)
        return f"{number} {word}"

    return GLUED.sub(split, translation)


def repair_numbers(source: str, translation: str, words: PairWords = NO_WORDS) -> str:
    """``translation`` with each number the source lacks replaced by a missing source number
    (``words``: the pair's, whose numeral suffixes a number may carry glued on)."""
    wanted = Counter(numbers(source))
    if not wanted:
        return translation
    translation = _unglue(source, translation, wanted, words)
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


# ---------------------------------------------------------------- the target's number format
# English writes 1,234.5 and Italian 1.234,5. A translation that copies "2.3 million" or
# "55,000 barrels" digit for digit is exact but reads as English: the Italian references write
# "2,3 milioni" and "55.000 barili". ``comma`` is the Italian (and German, French, Spanish …)
# convention, ``point`` the English one, ``keep`` leaves numbers as the model wrote them.
# (Defined in config, which imports no torch, so that the command line can list them at once.)
NUMBER_FORMATS = config.NUMBER_FORMATS

# How each convention writes a number, keyed by the convention: thousands groups (English
# 1,234, Italian 1.234: three digits a group) and a decimal part (English 2.3, Italian 2,3).
# Converting to one convention rewrites the numbers written in the other.
_GROUPED = {
    "point": re.compile(r"\d{1,3}(?:,\d{3})+(?:\.\d+)?"),
    "comma": re.compile(r"\d{1,3}(?:\.\d{3})+(?:,\d+)?"),
}
_DECIMAL = {"point": re.compile(r"\d+\.\d+"), "comma": re.compile(r"\d+,\d+")}
# what only that convention writes: two groups or more, or groups and a decimal part
# ("1,000,000", "1,234.5"): how number_format_of tells which one the sources use
_ONLY = {
    "point": re.compile(r"\d{1,3}(?:,\d{3}){2,}(?:\.\d+)?|\d{1,3}(?:,\d{3})+\.\d+"),
    "comma": re.compile(r"\d{1,3}(?:\.\d{3}){2,}(?:,\d+)?|\d{1,3}(?:\.\d{3})+,\d+"),
}
_OTHER = {"point": "comma", "comma": "point"}
# one decimal point and three decimals: a thousands group to many writers ("5.000")
_AMBIGUOUS = {
    "point": re.compile(r"[1-9]\d{0,2}\.\d{3}"),
    "comma": re.compile(r"[1-9]\d{0,2},\d{3}"),
}
# a version: two decimal points or more ("4.6.2")
_VERSION = {"point": re.compile(r"\d+(?:\.\d+){2,}"), "comma": re.compile(r"\d+(?:,\d+){2,}")}
_SEPARATED = re.compile(r"\d[.,]\d")


# Words before a decimal-looking number that make it a label, not a quantity, are the pair's
# (languages/profiles: ``numbers``): always ("Figure 1.1", "version 2.3", "kernel 5.10"), or
# only capitalised, because lowercase they are ordinary words ("Table 1.5" but "the table 1.5
# metres long", "Release 2.3" but "factories release 2.5 million tonnes"); after the number
# ("the 1.1 version", a time: "at 2.30 pm"); months and currency codes are capitalised words
# that are no names ("in March 2.5 million", "EUR 2.5 million").
_WORD_BEFORE = re.compile(r"(\w+)\W{0,2}$")
_NAME_GAP = re.compile(r"[+#]* ?(?:[<>]=? ?)?")


def _is_name(word: str, first: bool, words: PairWords) -> bool:
    """A capitalised word taken for a name (of a program, a standard…): mid-sentence any
    capitalised word but a month or a currency; the first word of a sentence only when it
    could not be an ordinary word (all capitals or CamelCase: "GNOME", "MacOS", not "Add")."""
    lower = word.lower()
    if not word[:1].isupper() or word.isdigit() or lower in words.months | CURRENCY_CODE_NAMES:
        return False
    if not first:
        return True
    return (len(word) > 1 and word.isupper()) or any(c.isupper() for c in word[1:])


def _is_label(
    text: str, number: re.Match[str], translation: str = "", words: PairWords = NO_WORDS
) -> bool:
    """Whether ``number`` names something (a section, a version, a time) rather than counts:
    it opens the text as a heading does ("5.4. The network", "1.2 File Formats"), hangs on a
    word ("httpd-2.0"), follows a label word or a name ("Figure 1.1", "GNOME 3.8", "GTK+ 3.22",
    "CUPS < 1.6"), or is followed by one ("the 1.1 version", "2.30 pm").

    A sentence's capitalised first word could be either ("Python 3.8 is required", "Add 1.5
    cups"): it is a name when ``translation`` carries it unchanged before the number, as a
    name is carried ("È richiesto Python 3.8"), where an ordinary word is translated
    ("Aggiungi 1.5 tazze")."""
    start = number.start()
    if words.label_after.match(text, number.end()):
        return True
    before = text[:start].rstrip()
    if not before:
        after = text[number.end() :].lstrip()[:1]
        return after in ("", ".", ")", ":") or after.isupper()
    if start > 1 and text[start - 1] in "-/" and text[start - 2].isalpha():
        return True
    m = _WORD_BEFORE.search(before)
    if m is None:
        return False
    word = m.group(1)
    if word.lower() in words.labels or (
        word[:1].isupper() and word.lower() in words.capitalised_labels
    ):
        return True
    # a name is followed by the number itself, not by a bracket ("Whistler (1.5 hour drive")
    gap = text[m.end(1) : start]
    if not _NAME_GAP.fullmatch(gap):
        return False
    first = not before[: m.start()].strip()
    if _is_name(word, first, words):
        return True
    return (
        first
        and _is_name(word, False, words)
        and label_carried(word + gap, number.group(0), translation)
    )


def label_carried(lead: str, number: str, translation: str) -> bool:
    """Whether ``translation`` has ``number`` (read whole, as ``NUMBER`` reads it) right after
    ``lead`` as written ("Python "), and ``lead`` does not end a longer word."""
    for found in NUMBER.finditer(translation):
        before = translation[: found.start()]
        if found.group(0) == number and before.endswith(lead):
            rest = before[: len(before) - len(lead)]
            if not rest or not (rest[-1].isalnum() or rest[-1] in "_.,"):
                return True
    return False


def _in_format(number: str, written: str, label: bool) -> str:
    """``number`` (written in the ``written`` convention) in the other one, part by part for a
    range ("1.5-2.5"); unchanged when it is a label or could be either convention's."""
    parts = number.split("-")
    grouped, decimal = _GROUPED[written], _DECIMAL[written]
    ambiguous = _AMBIGUOUS[written]  # "5.000": five thousand to some, five to others
    out = []
    for part in parts:
        counts = not label and not ambiguous.fullmatch(part)
        if grouped.fullmatch(part) or (counts and decimal.fullmatch(part)):
            out.append(swap_separators(part))
        elif part.isdigit():
            out.append(part)
        else:  # a version, a date, a time: the whole number stays as written
            return number
    return "-".join(out)


def localize_numbers(
    source: str, translation: str, number_format: str, words: PairWords = NO_WORDS
) -> str:
    """``translation`` with the source's numbers that it copied as written rewritten in the
    target's ``number_format`` (see :data:`NUMBER_FORMATS`); ``words``: the pair's (label
    words, months), from its language profiles.

    Each number of the source that is a quantity in the other convention is rewritten where
    the translation has it as written: thousands groups always ("55,000" → "55.000"),
    decimals unless they are labels (:func:`_is_label`; a number listed after a label is one
    too: "Lua 5.2 and 5.1") or could be either convention's ("5.000"), each part of a range
    ("1.5-2.5" → "1,5-2,5"). Versions ("4.6.2"), dates and times stay. The digits never
    change, so number fidelity (:func:`take`) counts the result as the source's number.
    """
    if number_format == "keep":
        return translation
    if number_format not in NUMBER_FORMATS:
        raise ValueError(f"number format must be one of {', '.join(NUMBER_FORMATS)}")
    written = _OTHER[number_format]  # the convention of the numbers to rewrite
    plans: dict[str, list[str]] = {}  # each source number's new forms, in source order
    label_end = -1  # where the last label ended, for the numbers listed after it
    for m in NUMBER.finditer(source):
        n = m.group(0)
        listed = label_end >= 0 and words.list_gap.fullmatch(source[label_end : m.start()])
        label = bool(listed) or _is_label(source, m, translation, words)
        if label or _VERSION[written].fullmatch(n):
            label_end = m.end()
        plans.setdefault(n, []).append(_in_format(n, written, label))
    if all(new == n for n, forms in plans.items() for new in forms):
        return translation

    def rewrite(m: re.Match[str]) -> str:
        forms = plans.get(m.group(0))
        return forms.pop(0) if forms else m.group(0)

    return NUMBER.sub(rewrite, translation)


def number_format_of(pairs: Sequence[tuple[str, str]], *, least: int = 20) -> str:
    """The number format the targets of ``pairs`` use, as :func:`localize_numbers` names it.

    First the sources' convention, from the numbers only one convention writes ("1,000,000",
    "1,234.5" are English; "1.000.000", "1.234,5" Italian). Then its thousands groups vote:
    a source "55,000" whose target writes "55.000" votes for the other convention (here
    ``comma``), one copied as written for ``keep``. No convention in the sources, fewer
    than ``least`` votes, or no majority for rewriting: ``keep``.
    """
    # only sources with a separator between digits can say anything (a fast first look)
    pairs = [(s, t) for s, t in pairs if _SEPARATED.search(s)]
    seen: Counter[str] = Counter()
    for source, _ in pairs:
        for n in NUMBER.findall(source):
            seen.update(c for c, only in _ONLY.items() if only.fullmatch(n))
    if not seen or seen["point"] == seen["comma"]:
        return "keep"
    convention = seen.most_common(1)[0][0]
    grouped, votes = _GROUPED[convention], Counter[str]()
    for source, target in pairs:
        in_target: Counter[str] | None = None
        for n in NUMBER.findall(source):
            if not grouped.fullmatch(n):
                continue
            if in_target is None:
                in_target = Counter(NUMBER.findall(target))
            if in_target[swap_separators(n)] > 0:
                votes[_OTHER[convention]] += 1
            elif in_target[n] > 0:
                votes["keep"] += 1
    if sum(votes.values()) < least or votes["keep"] >= votes[_OTHER[convention]]:
        return "keep"
    return _OTHER[convention]
