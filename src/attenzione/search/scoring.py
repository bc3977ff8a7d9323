"""What beam search is given for a batch: hard constraints and ranking terms, built from a
model's vocabularies.

:mod:`attenzione.search.constraints` and :mod:`attenzione.search.terms` hold the mechanisms,
which know nothing of tokenizers; this module turns one model's vocabularies into the tables
they read (which target pieces are bytes, which write a digit or a comma, what each piece
spells) once, and builds the constraints and terms of each batch from its source ids. The
translator asks it for both. The ranking terms come from a registry
(:mod:`attenzione.search.ranking`, whose names this module re-exports): a name, a default
weight and a builder each, which reads this module's tables; :class:`Terms` holds their
weights, each switchable by name.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Sequence
from functools import cached_property
from typing import Any

import torch
from torch import Tensor

from attenzione.config import DecodeConfig
from attenzione.data.tokenizers import Tokenizer, is_byte_piece
from attenzione.search.constraints import (
    ByteBan,
    Never,
    NeverNormalised,
    NoDoubledMarks,
    WellFormedUTF8,
    WholeCharacters,
    utf8_roles,
)
from attenzione.search.hooks import Constraint, Term
from attenzione.search.lexicon import Lexicon, known_starts, piece_table, words_of
from attenzione.search.ranking import (
    DIGITS,
    RANKING_TERMS,
    TERM_NAMES,
    RankingTerm,
    TermBatch,
    Terms,
    ranking_term,
)

__all__ = [
    "CARRIED_MARKS",
    "DIGITS",
    "RANKING_TERMS",
    "TERM_NAMES",
    "RankingTerm",
    "Scoring",
    "TermBatch",
    "Terms",
    "ranking_term",
]

# The punctuation beam search asks a translation to carry over from its source (as many of
# each mark as the source has): a clause's commas, a list's semicolons, a colon, a bracket.
# The translations of the shipped model dropped one source comma in nine (938 commas for the
# FLORES sources' 1,050; docs/broad-training.md). Quotes and dashes are not here: languages
# write them differently.
CARRIED_MARKS = ",;:()"


def _symbol_table(tok: Tokenizer, vocab_size: int, symbols: str) -> Tensor:
    """(vocab_size, len(symbols)) long: how many times each of ``symbols`` occurs in each
    piece's text (byte pieces, special tokens and ids past the tokenizer's vocabulary write
    none)."""
    column = {ch: c for c, ch in enumerate(symbols)}
    table = torch.zeros((vocab_size, len(symbols)), dtype=torch.long)
    for i in range(min(tok.vocab_size, vocab_size)):
        piece = tok.id_to_token(i)
        if is_byte_piece(piece):
            continue
        for ch in piece:
            if ch in column:
                table[i, column[ch]] += 1
    return table


def _byte_pieces(tok: Tokenizer, rows: int) -> dict[str, int]:
    """The byte-fallback pieces of a vocabulary (``<0x00>``…``<0xFF>``) and their ids, among
    the model's ``rows`` (a tokenizer that numbers pieces past them is refused at load,
    model_dir.check_vocabularies; a walk past them could take for ever: ids of a billion)."""
    pieces = (tok.id_to_token(i) for i in range(min(tok.vocab_size, rows)))
    return {p: i for i, p in enumerate(pieces) if is_byte_piece(p)}


class Scoring:
    """One model's vocabularies read for decoding: builds each batch's constraints and terms.

    ``config``: the model's (vocabulary sizes, special ids, decoder layers); ``known_words``
    (sorted) and ``not_free``: the word check's lists (:mod:`attenzione.search.lexicon`; None: no
    word check)."""

    def __init__(
        self,
        config: Any,
        src_tokenizer: Tokenizer,
        tgt_tokenizer: Tokenizer,
        known_words: Sequence[str] | None = None,
        not_free: frozenset[str] = frozenset(),
    ) -> None:
        self.config, self.src_tokenizer, self.tgt_tokenizer = config, src_tokenizer, tgt_tokenizer
        self.known_words, self.not_free = known_words, not_free
        # (source id, target id) of each byte piece both vocabularies have: the ones the
        # source can show the model it may copy (a word-level source has none, and then no
        # target byte is banned)
        src_bytes = _byte_pieces(src_tokenizer, config.src_vocab_size)
        same = tgt_tokenizer is src_tokenizer and config.tgt_vocab_size == config.src_vocab_size
        tgt_bytes = src_bytes if same else _byte_pieces(tgt_tokenizer, config.tgt_vocab_size)
        shared = [p for p in tgt_bytes if p in src_bytes]
        self._byte_src = torch.tensor([src_bytes[p] for p in shared], dtype=torch.long)
        self._byte_tgt = torch.tensor([tgt_bytes[p] for p in shared], dtype=torch.long)
        # what each target piece is as UTF-8, so byte pieces always spell whole characters
        # (None: a vocabulary without byte fallback has nothing to keep well-formed)
        self._utf8 = utf8_roles(tgt_bytes, config.tgt_vocab_size) if tgt_bytes else None
        # every byte piece of the target: a vocabulary shortlist always lists them, so a
        # character begun in bytes can always be finished (the UTF-8 constraint needs them)
        self.tgt_byte_ids = sorted(tgt_bytes.values())
        # the byte each byte piece writes, to keep the characters spelled in bytes whole
        # characters of the source (constraints.WholeCharacters)
        self._src_byte = {i: int(p[3:5], 16) for p, i in src_bytes.items()}
        self._tgt_byte = torch.full((config.tgt_vocab_size,), -1, dtype=torch.long)
        for p, i in tgt_bytes.items():
            self._tgt_byte[i] = int(p[3:5], 16)
        # (V,C): how many of each digit and carried mark every piece writes, for the
        # coverage terms; a mark the target vocabulary cannot write is left out (every
        # translation would owe it)
        every = DIGITS + CARRIED_MARKS
        tgt_table = _symbol_table(tgt_tokenizer, config.tgt_vocab_size, every)
        kept = [c for c in range(len(every)) if c < len(DIGITS) or tgt_table[:, c].any()]
        self.n_marks = len(kept) - len(DIGITS)
        self.symbol_table = tgt_table[:, kept]
        self._symbols_src = _symbol_table(src_tokenizer, config.src_vocab_size, every)[:, kept]
        # source pieces that end / begin with a digit, and pieces that are not a word's start:
        # a mark written between two digits ("55,000", "9:30"; not "3 (4)") belongs to a
        # number, which the target may write with other separators ("55.000")
        src_rows = min(src_tokenizer.vocab_size, config.src_vocab_size)
        src_pieces = [src_tokenizer.id_to_token(i) for i in range(src_rows)]
        src_pieces += [""] * max(0, config.src_vocab_size - len(src_pieces))
        digits = set(DIGITS)
        self._ends_digit = torch.tensor([p[-1:] in digits for p in src_pieces])
        self._starts_digit = torch.tensor([p[:1] in digits for p in src_pieces])
        self._joined = torch.tensor([bool(p) and not p.startswith("\u2581") for p in src_pieces])
        # the marks that target pieces write alone ("." or "▁."): written twice in a row
        # only where the source has them so (NoDoubledMarks)
        alone: dict[str, list[int]] = {}
        for i in range(min(tgt_tokenizer.vocab_size, config.tgt_vocab_size)):
            piece = tgt_tokenizer.id_to_token(i)
            mark = piece.removeprefix("\u2581")
            if len(mark) == 1 and unicodedata.category(mark)[0] == "P" and not is_byte_piece(piece):
                alone.setdefault(mark, []).append(i)
        self._mark_chars = list(alone)
        self._writes = torch.zeros((len(alone), config.tgt_vocab_size), dtype=torch.bool)
        for c, ids in enumerate(alone.values()):
            self._writes[c, ids] = True
        # the corpus tags of a joint vocabulary: source tokens only, never written
        tags = getattr(tgt_tokenizer, "tags", ())
        self._never = [tgt_tokenizer.tag_id(t) for t in tags]  # type: ignore[attr-defined]
        # the decoder layer whose cross-attention the attention coverage reads: the middle one
        # (on FLORES dev the shipped model's middle layer of 3 served best; docs/broad-training.md)
        self.attention_layer = config.n_dec_layers // 2

    @property
    def known_words(self) -> Sequence[str] | None:
        """The word check's known words (sorted; None: no word check)."""
        return self._known_words

    @known_words.setter
    def known_words(self, words: Sequence[str] | None) -> None:
        self._known_words = words
        # read off them once per list: the word starts that never spoil a word
        self._known_starts: Tensor | None = None

    # ------------------------------------------------------------------ constraints
    def constraints(
        self, batch: Tensor, sources: Sequence[Sequence[int]], weights: Terms | None = None
    ) -> list[Constraint]:
        """The hard constraints of a (B,S) source ``batch`` (``sources``: its rows' ids);
        ``weights`` switch the rule ``doubled-marks`` (None: on)."""
        out: list[Constraint] = []
        start = getattr(self.config, "start_id", self.config.bos_id)
        if start == self.config.pad_id:  # Marian decoders start from <pad>: never written
            out.append(NeverNormalised([self.config.pad_id], self.config.eos_id))
        if self._never:
            out.append(Never(self._never, self.config.eos_id))
        if self._mark_chars and (weights is None or weights.weight("doubled-marks") > 0):
            doubled = self._doubled(sources).to(batch.device)
            out.append(NoDoubledMarks(self._writes.to(batch.device), doubled))
        if len(self._byte_src):
            out.append(ByteBan(self._byte_bans(batch), self.config.eos_id))
        if self._utf8 is not None:
            out.append(WellFormedUTF8(self._utf8.to(batch.device)))
            whole = self._whole(sources)
            if whole is not None:
                out.append(whole)
        return out

    def _doubled(self, sources: Sequence[Sequence[int]]) -> Tensor:
        """(B,C) whether each source writes each mark of :attr:`_writes` twice in a row."""
        texts = [self.src_tokenizer.decode(list(ids)).replace(" ", "") for ids in sources]
        return torch.tensor(
            [[ch * 2 in text for ch in self._mark_chars] for text in texts], dtype=torch.bool
        ).reshape(len(texts), len(self._mark_chars))

    def _byte_bans(self, batch: Tensor) -> Tensor:
        """(B,V) the byte pieces (``<0xE2>``…) each sentence may not produce: all but those
        its source was spelled with. A tokenizer with byte fallback spells in bytes only what
        its vocabulary lacks; such a character in the output can only be one copied from the
        source, and a stray byte elsewhere would decode as "�"."""
        v = self.config.tgt_vocab_size
        banned = torch.zeros((batch.shape[0], v), dtype=torch.bool, device=batch.device)
        src_ids, tgt_ids = self._byte_src.to(batch.device), self._byte_tgt.to(batch.device)
        in_source = (batch[:, :, None] == src_ids[None, None, :]).any(dim=1)  # (B, n_bytes)
        banned[:, tgt_ids] = ~in_source
        return banned

    def _whole(self, sources: Sequence[Sequence[int]]) -> WholeCharacters | None:
        """The characters each source spells in byte pieces: all a translation may spell in
        bytes (None: the vocabularies have no byte pieces in common, or no source spells a
        character in bytes, and the byte bans alone leave none to spell)."""
        if not len(self._byte_src):
            return None
        chars = []
        for ids in sources:
            spelled = bytes(self._src_byte[i] for i in ids if i in self._src_byte)
            text = spelled.decode("utf-8", "ignore")
            chars.append(frozenset(c.encode() for c in text if len(c.encode()) > 1))
        return WholeCharacters(self._tgt_byte, chars) if any(chars) else None

    # ------------------------------------------------------------------ terms
    def terms(
        self,
        batch: Tensor,
        sources: Sequence[Sequence[int]],
        weights: Terms,
        cfg: DecodeConfig,
    ) -> list[Term]:
        """The ranking terms of a (B,S) source ``batch`` with ``weights``, in the order of
        :data:`RANKING_TERMS` (those weighed 0 are left out; none for greedy decoding and
        sampling)."""
        if cfg.method != "beam":
            return []
        made = TermBatch(self, batch, sources, cfg)
        out: list[Term] = []
        for name, term in RANKING_TERMS.items():
            weight = weights.weight(name)
            if weight > 0 and (built := term.build(made, weight)) is not None:
                out.append(built)
        return out

    def symbols(self, batch: Tensor) -> Tensor:
        """(B,C) the digits and carried marks each source sentence has — not the marks inside
        a number ("55,000", "9:30"), which the target may write otherwise."""
        symbols = self._symbols_src.to(batch.device)[batch]  # (B,S,C)
        real = (batch != self.config.pad_id).long()[:, :, None]  # (B,S,1)
        # a mark between digits is part of a number, left to the digits' coverage
        in_number = torch.zeros(batch.shape, dtype=torch.bool, device=batch.device)  # (B,S)
        ends, starts = self._ends_digit.to(batch.device), self._starts_digit.to(batch.device)
        joined = self._joined.to(batch.device)
        in_number[:, 1:-1] = ends[batch[:, :-2]] & joined[batch[:, 1:-1]] & starts[batch[:, 2:]]
        symbols[:, :, len(DIGITS) :] *= (~in_number).long()[:, :, None]
        return (symbols * real).sum(dim=1)  # (B,C)

    @cached_property
    def _word_pieces(self) -> tuple[list[bytes], Tensor]:
        """What each target piece writes and which begin a word (:func:`piece_table`), built
        the first time a word check runs."""
        tok, v = self.tgt_tokenizer, self.config.tgt_vocab_size
        pieces = [tok.id_to_token(i) if i < tok.vocab_size else "<>" for i in range(v)]
        return piece_table(pieces, self.config.eos_id)

    def lexicon(self, sources: Sequence[Sequence[int]], penalty: float) -> Lexicon | None:
        """The word check's lexicon for a batch whose rows' source ids are ``sources``, each
        invented word charged ``penalty`` (None: the model has no word list)."""
        if self.known_words is None:
            return None
        decode = self.src_tokenizer.decode
        words = [frozenset(words_of(decode(list(ids)))) - self.not_free for ids in sources]
        texts, starts = self._word_pieces
        known = self._starts_of_known()
        return Lexicon(self.known_words, texts, starts, words, penalty, known)

    def _starts_of_known(self) -> Tensor:
        """The target pieces that begin a word and never spoil one (:func:`known_starts`),
        computed the first time a word check runs on these known words."""
        assert self.known_words is not None
        if self._known_starts is None:
            self._known_starts = known_starts(self.known_words, *self._word_pieces)
        return self._known_starts
