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

Words are the lowercased runs of letters (:data:`WORD`): "dell'Università" is "dell" and
"università"; digits and punctuation are not words and are never checked.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import torch
from torch import Tensor

WORD = re.compile(r"[^\W\d_]+")
WORD_MARK = "\u2581"  # SentencePiece's "a word starts here"


def words_of(text: str) -> list[str]:
    """The lowercased words (runs of letters) of ``text``."""
    return WORD.findall(text.lower())


def word_list(texts: Iterable[str]) -> list[str]:
    """The distinct words of ``texts``, sorted: what a model directory's word list holds."""
    seen: set[str] = set()
    for text in texts:
        seen.update(words_of(text))
    return sorted(seen)


def piece_table(pieces: Sequence[str], eos_id: int) -> tuple[list[str], Tensor]:
    """What each target token writes (``""`` for byte pieces and special tokens) and (V,)
    whether it begins a new word (a ``▁`` piece, or ``<eos>``, which ends the last one)."""
    texts: list[str] = []
    starts = torch.zeros(len(pieces), dtype=torch.bool)
    for i, piece in enumerate(pieces):
        if piece.startswith("<") and piece.endswith(">"):
            piece = ""  # <pad>, <s>, </s>, <unk>, <0xE2>: no letters
        if piece.startswith(WORD_MARK):
            starts[i] = True
            piece = piece[1:]
        texts.append(piece)
    if 0 <= eos_id < len(pieces):
        starts[eos_id] = True
    return texts, starts


@dataclass
class Lexicon:
    """The known words (``known``: sorted, lowercased) and, per sentence of a batch, the words
    of its source (``sources``), with what each target token writes (:func:`piece_table`)."""

    known: Sequence[str]
    texts: Sequence[str]
    starts: Tensor
    sources: Sequence[frozenset[str]]
    penalty: float
    _memo: dict[tuple[int, str, bool], bool] = field(default_factory=dict, repr=False)

    def _is_word(self, sent: int, word: str) -> bool:
        if word in self.sources[sent]:
            return True
        i = bisect.bisect_left(self.known, word)
        return i < len(self.known) and self.known[i] == word

    def _is_start(self, sent: int, prefix: str) -> bool:
        if any(w.startswith(prefix) for w in self.sources[sent]):
            return True
        i = bisect.bisect_left(self.known, prefix)
        return i < len(self.known) and self.known[i].startswith(prefix)

    def fits(self, sent: int, text: str, *, whole: bool) -> bool:
        """Whether ``text`` (one word as the pieces wrote it, punctuation included) is made of
        known words (``whole``), or can still become so (its last letters may be the start of
        a word) — for sentence ``sent``, whose source words count as known."""
        key = (sent, text, whole)
        hit = self._memo.get(key)
        if hit is None:
            runs = words_of(text)
            open_end = not whole and text[-1:].isalpha()
            hit = all(
                self._is_start(sent, w)
                if open_end and j == len(runs) - 1
                else self._is_word(sent, w)
                for j, w in enumerate(runs)
            )
            self._memo[key] = hit
        return hit


@dataclass
class Charge:
    """What beam search's continuations cost in ranking this step (≥ 0, subtracted from
    their total log-prob): ``now`` (N,) every continuation of a row (None: no row pays now),
    and ``end_cost`` (V,) the continuations that end the word of each row in ``end_rows``."""

    now: Tensor | None
    end_rows: Tensor | None
    end_cost: Tensor


class WordCheck:
    """The words each beam row is writing, and the penalty each next token brings (used by
    :func:`attenzione.decoding.generate`)."""

    def __init__(self, lexicon: Lexicon, row_sentence: list[int], device: torch.device) -> None:
        self.lex = lexicon
        self.sentence = row_sentence  # the sentence each row belongs to
        self.word = [""] * len(row_sentence)  # the word each row is writing
        self.charged = [False] * len(row_sentence)  # that word has been penalised already
        self.end_cost = lexicon.penalty * lexicon.starts.to(device).float()  # (V,)
        self.is_start = lexicon.starts.tolist()
        self.device = device

    def penalty(self) -> Charge | None:
        """What each row pays (in total log-prob) for what it writes next (None: nothing):
        at once, for a word that has just become impossible; at the word's end, for one that
        stops short of being a word."""
        fits = self.lex.fits
        now = [0.0] * len(self.word)
        at_end: list[int] = []
        for r, (sent, word) in enumerate(zip(self.sentence, self.word, strict=True)):
            if self.charged[r] or not word:
                continue
            if not fits(sent, word, whole=False):
                self.charged[r] = True
                now[r] = self.lex.penalty
            elif not fits(sent, word, whole=True):
                at_end.append(r)
        if not at_end and not any(now):
            return None
        return Charge(
            torch.tensor(now, device=self.device) if any(now) else None,
            torch.tensor(at_end, dtype=torch.long, device=self.device) if at_end else None,
            self.end_cost,
        )

    def advance(self, rows: Tensor | None, tokens: Tensor) -> None:
        """The rows live on from ``rows`` (None: the same) and write ``tokens``."""
        if rows is not None:
            keep = rows.tolist()
            self.sentence = [self.sentence[r] for r in keep]
            self.word = [self.word[r] for r in keep]
            self.charged = [self.charged[r] for r in keep]
        for r, tok in enumerate(tokens.tolist()):
            if self.is_start[tok]:
                self.word[r], self.charged[r] = self.lex.texts[tok], False
            else:
                self.word[r] += self.lex.texts[tok]
