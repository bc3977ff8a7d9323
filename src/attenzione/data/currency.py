"""Currency symbols a translation dropped, put back on their amounts.

A symbol written against a number ("$19.99", "€ 5", "30 £"): a translation that keeps the
number but drops the symbol has lost what the number counts ("Price: $19.99" → "Prezzo:
19,99"). An amount written with a symbol, or with a currency named in words next to it
("5 milioni di dollari", "28 euro": the words of the pair's language profiles), has been
said its own way and is left alone. The numbers
are found as :mod:`attenzione.data.numbers` finds them.
"""

from __future__ import annotations

import re

from attenzione.data.numbers import NO_WORDS, NUMBER
from attenzione.languages import PairWords

CURRENCY_SYMBOLS = "$€£¥₹"
_SYMBOL_NUMBER = re.compile(rf"([{CURRENCY_SYMBOLS}])(\s?)({NUMBER.pattern})")
_NUMBER_SYMBOL = re.compile(rf"({NUMBER.pattern})(\s?)([{CURRENCY_SYMBOLS}])")
_WORDS_AFTER = re.compile(r"[^\w,;]*(?:\w+[^\w,;]+){0,2}\w+")  # up to three, in its clause
# the word just before an amount, at most two characters from it. (When this lived in
# data/numbers.py, the number format's pattern of the same name, defined later, replaced the
# "\w+\W*$" written here; this is the one that ran, kept so that translations stay as they were.)
_WORD_BEFORE = re.compile(r"(\w+)\W{0,2}$")


def _amounts(source: str) -> dict[int, tuple[str, str]]:
    """The source's amounts: the start of each number with a currency symbol against it, and
    what goes before and after it. A symbol between two numbers ("3 $20") is the amount's it
    touches, else the next number's."""
    claims: dict[int, tuple[int, int, str, str]] = {}  # symbol at -> (rank, number at, …)
    for m in _SYMBOL_NUMBER.finditer(source):
        rank = 0 if not m.group(2) else 2
        claims[m.start(1)] = min(
            claims.get(m.start(1), (9, 0, "", "")), (rank, m.start(3), m.group(1) + m.group(2), "")
        )
    for m in _NUMBER_SYMBOL.finditer(source):
        rank = 1 if not m.group(2) else 3
        claims[m.start(3)] = min(
            claims.get(m.start(3), (9, 0, "", "")), (rank, m.start(1), "", m.group(2) + m.group(3))
        )
    return {at: (before, after) for _, at, before, after in claims.values()}


def restore_currency(source: str, translation: str, words: PairWords = NO_WORDS) -> str:
    """``translation`` with the currency symbols of the source's amounts put back where it
    wrote an amount's number bare: "Price: $19.99" → "Prezzo: 19,99" becomes "Prezzo:
    $19,99". The symbol goes on the side the translation writes its other amounts with it
    ("10 a 20$" → "10$ a 20$"), else the source's side. The k-th "5" of the source is the
    k-th "5" of the translation; a number the two do not write equally often is left alone,
    and so is one written with a symbol in the same run of characters ("5–10$") or with a
    currency word of the pair's languages (``words``) next to it."""
    if not any(c in source for c in CURRENCY_SYMBOLS):
        return translation
    amounts = _amounts(source)

    def value(n: str) -> str:
        return n.replace(",", ".")  # 19.99 and 19,99 are one value here

    src = [(m.start(), value(m.group(0))) for m in NUMBER.finditer(source)]
    tgt = list(NUMBER.finditer(translation))
    edits: list[tuple[int, int, str]] = []
    for start, (before, after) in sorted(amounts.items()):
        v = next(val for at, val in src if at == start)
        k = [at for at, val in src if val == v].index(start)
        same = [m for m in tgt if value(m.group(0)) == v]
        if len(same) != sum(val == v for _, val in src):
            continue
        m = same[k]
        a = m.start()
        while a > 0 and not translation[a - 1].isspace():
            a -= 1
        b = m.end()
        while b < len(translation) and not translation[b].isspace():
            b += 1
        near = translation[max(0, a - 2) : b + 2]  # its run of characters, and a space beyond
        if any(c in near for c in CURRENCY_SYMBOLS):
            continue
        after_words = _WORDS_AFTER.match(translation, m.end())
        before_word = _WORD_BEFORE.search(translation, 0, m.start())
        around = (
            (after_words.group(0) if after_words else "")
            + " "
            + (before_word.group(0) if before_word else "")
        )
        if words.currency_word.search(around):
            continue
        symbol = (before + after).strip()
        if re.search(rf"\d\s?{re.escape(symbol)}", translation) and before:
            before, after = "", (" " if before.endswith(" ") else "") + symbol
        elif re.search(rf"{re.escape(symbol)}\s?\d", translation) and after:
            before, after = symbol + (" " if after.startswith(" ") else ""), ""
        edits.append((m.start(), m.end(), before + m.group(0) + after))
    for a, b, text in sorted(edits, reverse=True):
        translation = translation[:a] + text + translation[b:]
    return translation
