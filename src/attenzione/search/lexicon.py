"""Known words: beam search's check that a translation is spelled with real words.

A subword model writes a word piece by piece, and a piece that is likely after the one before
can make a word that does not exist: "Atlanta" → "Alanta", "Vidal" → "Vidalo", "esploso" →
"esplodato". The model directory can list the words of its training targets
(``tgt_words.txt``, written by :func:`word_list`). A word that is neither in that list nor in
the sentence's source (a name or a term to copy) is almost always such an invention, and
beam search ranks a hypothesis that writes one lower by ``word_penalty`` (in total log-prob)
— once per word, at the piece that makes it impossible: as soon as the letters written so
far are no longer the start of any known word, or at the word's end when they are a start
but not a word ("centesi" for "centesimi"). A soft constraint, like the number coverage: an
unknown word still wins when every hypothesis has one or the model is far surer of it.

Not every source word is free to copy: the model directory can also list the source words its
training pairs always translate (``src_translated.txt``, written by :func:`translated_words`:
"july", "police", "former", "turkey", but not "tom" or "boston"). An English word left in
the translation is charged like an invented one when the training data, having seen it in
several sources, never wrote it in a target.

A lone word mark "▁" writes nothing: it begins a word spelled in pieces that are not word
starts ("▁" "2" "0"). Followed by another word's start, it makes an empty word, a double
space where a word was dropped ("Party  mantenendo"); that is charged like an invented word.

Words are the lowercased runs of letters (:data:`WORD`): "dell'Università" is "dell" and
"università"; digits and punctuation are not words and are never checked.
"""

from __future__ import annotations

import bisect
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import torch
from torch import Tensor

from attenzione.search.topk import top_k

WORD = re.compile(r"[^\W\d_]+")
WORD_MARK = "\u2581"  # SentencePiece's "a word starts here"
BYTE_PIECE = re.compile(r"<0x[0-9A-F]{2}>")  # byte fallback's pieces (as in data.tokenizers)


def words_of(text: str) -> list[str]:
    """The lowercased words (runs of letters) of ``text``."""
    return WORD.findall(text.lower())


def word_list(texts: Iterable[str]) -> list[str]:
    """The distinct words of ``texts``, sorted: what a model directory's word list holds."""
    seen: set[str] = set()
    for text in texts:
        seen.update(words_of(text))
    return sorted(seen)


# A source word is "translated, not copied" when at least TRANSLATED_LEAST distinct training
# pairs have it in their source and no training target has it (chosen on the dev sets:
# docs/broad-training.md). A word some target does have is a known word, free anyway.
TRANSLATED_LEAST = 2


def translated_words(
    pairs: Iterable[tuple[str, str]], *, least: int = TRANSLATED_LEAST
) -> list[str]:
    """The source words that ``pairs`` always translate, sorted: in the sources of at least
    ``least`` distinct pairs and in none of the targets. What a model directory's
    ``src_translated.txt`` holds."""
    if least < 1:
        raise ValueError(f"least must be >= 1, got {least}")
    seen: Counter[str] = Counter()
    written: set[str] = set()
    for src, tgt in {(s, t) for s, t in pairs}:
        seen.update(set(words_of(src)))
        written.update(words_of(tgt))
    return sorted(w for w, n in seen.items() if n >= least and w not in written)


def piece_table(pieces: Sequence[str], eos_id: int) -> tuple[list[bytes], Tensor]:
    """What each target token writes, as UTF-8 (a byte piece ``<0xC5>`` its byte; special
    tokens nothing), and (V,) whether it begins a new word (a ``▁`` piece, or ``<eos>``,
    which ends the last one)."""
    texts: list[bytes] = []
    starts = torch.zeros(len(pieces), dtype=torch.bool)
    for i, piece in enumerate(pieces):
        if BYTE_PIECE.fullmatch(piece):
            texts.append(bytes([int(piece[3:5], 16)]))
            continue
        if piece.startswith("<") and piece.endswith(">"):
            piece = ""  # <pad>, <s>, </s>, <unk>: no letters
        if piece.startswith(WORD_MARK):
            starts[i] = True
            piece = piece[1:]
        texts.append(piece.encode("utf-8"))
    if 0 <= eos_id < len(pieces):
        starts[eos_id] = True
    return texts, starts


def holds(words: Sequence[str], w: str, *, whole: bool) -> bool:
    """Whether sorted ``words`` hold ``w`` (``whole``) or a word that starts with it."""
    i = bisect.bisect_left(words, w)
    return i < len(words) and (words[i] == w if whole else words[i].startswith(w))


def _fits(known: Sequence[str], source: Sequence[str], text: str, *, whole: bool) -> bool:
    """Whether ``text`` is made of words of sorted ``known`` or ``source`` (``whole``), or can
    still become so (see :meth:`Lexicon.fits`)."""
    runs = words_of(text)
    open_end = not whole and text[-1:].isalpha()
    for j, w in enumerate(runs):
        word = not (open_end and j == len(runs) - 1)  # the last run of an open text: a start
        if not (holds(known, w, whole=word) or holds(source, w, whole=word)):
            return False
    return True


def known_starts(known: Sequence[str], texts: Sequence[bytes], starts: Tensor) -> Tensor:
    """(V,) the pieces that begin a word and whose text fits sorted ``known`` words alone
    (:meth:`Lexicon.fits`, not ``whole``): they never spoil a word, whatever the source."""
    free = torch.zeros(len(texts), dtype=torch.bool)
    for i in starts.nonzero().flatten().tolist():
        text = texts[i].decode("utf-8", "ignore")
        free[i] = not text or _fits(known, (), text, whole=False)
    return free


@dataclass
class Lexicon:
    """The known words (``known``: sorted, lowercased) and, per sentence of a batch, the words
    of its source (``sources``), with what each target token writes (:func:`piece_table`).
    ``free``: :func:`known_starts` of these (None: the word check computes them; a model's
    are the same for every batch)."""

    known: Sequence[str]
    texts: Sequence[bytes]
    starts: Tensor
    sources: Sequence[frozenset[str]]
    penalty: float
    free: Tensor | None = None
    _memo: dict[tuple[int, str, bool], bool] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        self._sorted_sources = [sorted(words) for words in self.sources]

    def fits(self, sent: int, text: str, *, whole: bool) -> bool:
        """Whether ``text`` (one word as the pieces wrote it, punctuation included) is made of
        known words (``whole``), or can still become so (its last letters may be the start of
        a word) — for sentence ``sent``, whose source words count as known."""
        key = (sent, text, whole)
        hit = self._memo.get(key)
        if hit is None:
            hit = _fits(self.known, self._sorted_sources[sent], text, whole=whole)
            self._memo[key] = hit
        return hit


@dataclass
class Charge:
    """What beam search's continuations cost in ranking this step (≥ 0, subtracted from
    their total log-prob): ``now`` (N,) every continuation of a row (None: no row pays now);
    ``end_cost`` (V,) the continuations that end the word of each row in ``end_rows``; and
    ``cost`` each continuation (``rows[i]``, ``tokens[i]``) that makes its word impossible."""

    now: Tensor | None
    end_rows: Tensor | None
    end_cost: Tensor
    rows: Tensor | None
    tokens: Tensor | None
    cost: float

    def apply(self, rank: Tensor) -> None:
        """Subtract the charges but ``now`` from the (N,V) ranking scores, in place."""
        if self.end_rows is not None:  # rows whose word would end unfinished
            # in place, row by row (indexing would copy the rows out and write them back)
            cost = self.end_cost.expand(self.end_rows.shape[0], -1)
            rank.index_add_(0, self.end_rows, cost, alpha=-1)
        if self.rows is not None and self.tokens is not None:
            rank[self.rows, self.tokens] -= self.cost  # tokens that spoil their word


# how far down a row's pieces the check looks when all of its likeliest pay
FURTHER = 256


class WordCheck:
    """The word each beam row is writing, and what each next token costs (used by
    :func:`attenzione.search.decoding.generate`).

    A row's candidates among its ``width`` likeliest tokens are checked one by one: one that
    makes its word impossible is charged as it is chosen. When every one of them pays, the
    check goes on down the row's tokens (up to ``FURTHER``) to the first that costs nothing,
    charging the spoilers on the way. A row whose word became impossible through a token
    outside them pays at the next step instead, on every continuation.
    """

    def __init__(
        self, lexicon: Lexicon, row_sentence: list[int], width: int, device: torch.device
    ) -> None:
        self.lex = lexicon
        self.sentence = row_sentence  # the sentence each row belongs to
        self.word = [b""] * len(row_sentence)  # the word each row is writing, as UTF-8
        self.charged = [False] * len(row_sentence)  # that word has been penalised already
        self.starts = lexicon.starts.to(device)  # (V,) which pieces begin a word
        self.is_start = lexicon.starts.tolist()
        self.end_cost = lexicon.penalty * self.starts.float()  # (V,)
        free = lexicon.free
        if free is None:
            free = known_starts(lexicon.known, lexicon.texts, lexicon.starts)
        self.free_starts = free.to(device)  # (V,) word starts that never spoil a word
        self.is_known_start = free.tolist()
        self.width = width
        self.device = device
        self._charged_now: set[tuple[int, int]] = set()  # (row, token) charged this step
        # the row's word was begun by a piece that writes nothing (a lone "▁"), and nothing
        # has followed: ended now, it would be an empty word, a double space in the output
        self.empty = [False] * len(row_sentence)

    def penalty(self, log_probs: Tensor) -> Charge | None:
        """What each row pays (in total log-prob) for what it writes next, given its (N,V)
        ``log_probs`` (None: nothing): a token that makes its word impossible; any token,
        for a word that became impossible unnoticed; a token that ends a word that stops
        short of being one."""
        now, open_rows, at_end = self._rows()
        width = min(self.width, log_probs.shape[-1])
        likely = top_k(log_probs, width)[1]  # (N,width)
        likely_l = likely.tolist()
        # which likely pieces spoil their row's word: a word start that begins a known word
        # never does, nor a piece that goes on with a word that has paid already; the others
        # are checked one by one
        starts = self.starts[likely]  # (N,width) which of them begin a word
        is_open = torch.tensor(open_rows, device=likely.device)
        doubtful = (starts & ~self.free_starts[likely]) | (~starts & is_open[:, None])
        spoilt = [
            (r, j)
            for r, j in doubtful.nonzero().tolist()
            if self._spoils(self.sentence[r], self.word[r], open_rows[r], likely_l[r][j])
        ]
        spoils = torch.zeros_like(starts)
        spoils.view(-1)[[r * width + j for r, j in spoilt]] = True
        bad_rows = [r for r, _ in spoilt]
        bad_tokens = [likely_l[r][j] for r, j in spoilt]
        # a row with no likely piece that costs nothing (a piece that ends a short word
        # costs): look further down for the first that does not ("Dvo" + <0xC5> of
        # "Dvořák"), charging the spoilers above it, so that an unlikelier piece that spoils
        # the word cannot take the row's place unpaid
        short = torch.zeros_like(is_open)
        short[at_end] = True
        free = (~spoils & ~(short[:, None] & starts)).any(dim=1)  # (N,)
        ends_short = set(at_end)
        for r in (~free & is_open).nonzero().flatten().tolist():
            for tok in self._further(r, log_probs[r], set(likely_l[r]), r in ends_short):
                bad_rows.append(r)
                bad_tokens.append(tok)
        self._charged_now = set(zip(bad_rows, bad_tokens, strict=True))
        if not at_end and not any(now) and not bad_rows:
            return None

        def long(xs: list[int]) -> Tensor | None:
            return torch.tensor(xs, dtype=torch.long, device=self.device) if xs else None

        return Charge(
            torch.tensor(now, device=self.device) if any(now) else None,
            long(at_end),
            self.end_cost,
            long(bad_rows),
            long(bad_tokens),
            self.lex.penalty,
        )

    def _rows(self) -> tuple[list[float], list[bool], list[int]]:
        """Each row's word as it stands: what the row pays now on every continuation (its
        word became impossible unnoticed: it is charged now, once), whether the word is still
        open (not charged), and the open rows whose word stops short of being one (or is an
        empty word, after a lone "▁"): ending it now pays."""
        fits = self.lex.fits
        now = [0.0] * len(self.word)
        open_rows = [False] * len(self.word)
        at_end: list[int] = []
        for r, (sent, word) in enumerate(zip(self.sentence, self.word, strict=True)):
            if self.charged[r]:
                continue
            text = word.decode("utf-8", "ignore")
            if text and not fits(sent, text, whole=False):
                self.charged[r] = True
                now[r] = self.lex.penalty
                continue
            open_rows[r] = True
            if (text and not fits(sent, text, whole=True)) or (self.empty[r] and not word):
                at_end.append(r)
        return now, open_rows, at_end

    def _further(self, r: int, log_probs: Tensor, checked: set[int], short: bool) -> list[int]:
        """The spoilers of row ``r``'s word among its next pieces by likelihood, past the
        ``checked`` ones, down to the first piece that costs nothing (at most ``FURTHER``
        pieces). ``short``: the word stops short, so a piece that begins a new word costs too
        and the look goes on past it."""
        sent, word = self.sentence[r], self.word[r]
        if not word:
            return []
        more = log_probs.topk(min(FURTHER, log_probs.shape[-1])).indices.tolist()
        spoilers = []
        for tok in (t for t in more if t not in checked):  # ties may order the lists apart
            if self.is_known_start[tok]:  # a word start that spoils nothing
                if short:
                    continue
                break
            if self._spoils(sent, word, True, tok):
                spoilers.append(tok)
            elif not (short and self.is_start[tok]):
                break
        return spoilers

    def _spoils(self, sent: int, word: bytes, open_word: bool, tok: int) -> bool:
        """Whether writing ``tok`` after ``word`` makes a word that cannot become one."""
        if self.is_start[tok]:
            new = self.lex.texts[tok].decode("utf-8", "ignore")
        elif open_word:
            new = (word + self.lex.texts[tok]).decode("utf-8", "ignore")
        else:
            return False  # this word has paid already
        return bool(new) and not self.lex.fits(sent, new, whole=False)

    def advance(self, rows: Tensor | None, tokens: Tensor | None) -> None:
        """The rows live on from ``rows`` (None: the same) and write ``tokens`` (None:
        nothing yet)."""
        parents = list(range(len(self.word))) if rows is None else rows.tolist()
        self.sentence = [self.sentence[r] for r in parents]
        self.word = [self.word[r] for r in parents]
        self.charged = [self.charged[r] for r in parents]
        self.empty = [self.empty[r] for r in parents]
        if tokens is None:
            return
        for r, (parent, tok) in enumerate(zip(parents, tokens.tolist(), strict=True)):
            if self.is_start[tok]:
                self.word[r], self.charged[r] = self.lex.texts[tok], False
                self.empty[r] = not self.lex.texts[tok]
            else:
                self.word[r] += self.lex.texts[tok]
            if (parent, tok) in self._charged_now:
                self.charged[r] = True
