"""One model's vocabularies read into the tables the constraints and ranking terms use.

:mod:`attenzione.search.constraints` and :mod:`attenzione.search.terms` hold the mechanisms,
which know nothing of tokenizers; :class:`Scoring` reads one model's vocabularies into what
they need (which target pieces are bytes, which write a digit or a comma, what each piece
spells) and, per batch, what its sources ask of them. Each table is built the first time a
hook needs it (a ``cached_property``): a model whose search never checks words never reads
its vocabulary for the word check, and loading a model reads none of them. Which hooks a
batch gets, and in what order, is the registry's (:mod:`attenzione.search.registry`).
"""

from __future__ import annotations

import unicodedata
from collections.abc import Sequence
from functools import cached_property
from typing import Any

import torch
from torch import Tensor

from attenzione.data.tokenizers import Tokenizer, is_byte_piece
from attenzione.search.constraints import WholeCharacters, utf8_roles
from attenzione.search.lexicon import Lexicon, known_starts, piece_table, words_of

# the symbol columns of the coverage tables: first the digits, then the carried marks
DIGITS = "0123456789"

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
    """One model's vocabularies read for decoding, each table on first use.

    ``config``: the model's (vocabulary sizes, special ids, decoder layers); ``known_words``
    (sorted) and ``not_free``: the word check's lists (:mod:`attenzione.search.lexicon`; None:
    no word check). Fixed once made, as the translator that owns it."""

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
        # the decoder layer whose cross-attention the attention coverage reads: the middle one
        # (on FLORES dev the shipped model's middle layer of 3 served best; docs/broad-training.md)
        self.attention_layer = config.n_dec_layers // 2

    # ------------------------------------------------------------------ the special tokens
    @cached_property
    def tag_ids(self) -> list[int]:
        """The corpus tags of a joint vocabulary: source tokens only, never written."""
        tags = getattr(self.tgt_tokenizer, "tags", ())
        return [self.tgt_tokenizer.tag_id(t) for t in tags]  # type: ignore[attr-defined]

    @property
    def starts_from_pad(self) -> bool:
        """Whether the decoder starts from ``<pad>`` (Marian's), a token it must never write."""
        start = getattr(self.config, "start_id", self.config.bos_id)
        return bool(start == self.config.pad_id)

    # ------------------------------------------------------------------ byte pieces
    @cached_property
    def _bytes(self) -> tuple[dict[str, int], dict[str, int]]:
        """The byte pieces of the source and the target vocabulary, each with its id."""
        cfg, src, tgt = self.config, self.src_tokenizer, self.tgt_tokenizer
        src_bytes = _byte_pieces(src, cfg.src_vocab_size)
        same = tgt is src and cfg.tgt_vocab_size == cfg.src_vocab_size
        return src_bytes, src_bytes if same else _byte_pieces(tgt, cfg.tgt_vocab_size)

    @cached_property
    def _shared_bytes(self) -> tuple[Tensor, Tensor]:
        """(source id, target id) of each byte piece both vocabularies have: the ones the
        source can show the model it may copy (a word-level source has none, and then no
        target byte is banned)."""
        src_bytes, tgt_bytes = self._bytes
        shared = [p for p in tgt_bytes if p in src_bytes]
        return (
            torch.tensor([src_bytes[p] for p in shared], dtype=torch.long),
            torch.tensor([tgt_bytes[p] for p in shared], dtype=torch.long),
        )

    @property
    def shares_bytes(self) -> bool:
        """Whether both vocabularies have byte pieces in common (the byte constraints)."""
        return len(self._shared_bytes[0]) > 0

    @cached_property
    def utf8(self) -> Tensor | None:
        """(V,) what each target piece is as UTF-8 (:func:`utf8_roles`), so byte pieces always
        spell whole characters (None: a vocabulary without byte fallback has nothing to keep
        well-formed)."""
        tgt_bytes = self._bytes[1]
        return utf8_roles(tgt_bytes, self.config.tgt_vocab_size) if tgt_bytes else None

    @cached_property
    def tgt_byte_ids(self) -> list[int]:
        """Every byte piece of the target: a vocabulary shortlist always lists them, so a
        character begun in bytes can always be finished (the UTF-8 constraint needs them)."""
        return sorted(self._bytes[1].values())

    def byte_bans(self, batch: Tensor) -> Tensor:
        """(B,V) the byte pieces (``<0xE2>``…) each sentence may not produce: all but those
        its source was spelled with. A tokenizer with byte fallback spells in bytes only what
        its vocabulary lacks; such a character in the output can only be one copied from the
        source, and a stray byte elsewhere would decode as "�"."""
        v = self.config.tgt_vocab_size
        banned = torch.zeros((batch.shape[0], v), dtype=torch.bool, device=batch.device)
        src_ids, tgt_ids = (t.to(batch.device) for t in self._shared_bytes)
        in_source = (batch[:, :, None] == src_ids[None, None, :]).any(dim=1)  # (B, n_bytes)
        banned[:, tgt_ids] = ~in_source
        return banned

    @cached_property
    def _byte_values(self) -> tuple[dict[int, int], Tensor]:
        """The byte each byte piece writes: source id -> byte, and (V,) per target id (-1:
        not a byte piece), to keep the characters spelled in bytes whole characters of the
        source (constraints.WholeCharacters)."""
        src_bytes, tgt_bytes = self._bytes
        tgt_byte = torch.full((self.config.tgt_vocab_size,), -1, dtype=torch.long)
        for p, i in tgt_bytes.items():
            tgt_byte[i] = int(p[3:5], 16)
        return {i: int(p[3:5], 16) for p, i in src_bytes.items()}, tgt_byte

    def whole_characters(self, sources: Sequence[Sequence[int]]) -> WholeCharacters | None:
        """The characters each source spells in byte pieces: all a translation may spell in
        bytes (None: no source spells a character in bytes, and the byte bans alone leave
        none to spell)."""
        src_byte, tgt_byte = self._byte_values
        chars = []
        for ids in sources:
            spelled = bytes(src_byte[i] for i in ids if i in src_byte)
            text = spelled.decode("utf-8", "ignore")
            chars.append(frozenset(c.encode() for c in text if len(c.encode()) > 1))
        return WholeCharacters(tgt_byte, chars) if any(chars) else None

    # ------------------------------------------------------------------ marks written alone
    @cached_property
    def lone_marks(self) -> tuple[list[str], Tensor]:
        """The marks that target pieces write alone ("." or "▁.") and (C,V) which pieces
        write each: written twice in a row only where the source has them so
        (constraints.NoDoubledMarks)."""
        tok, v = self.tgt_tokenizer, self.config.tgt_vocab_size
        alone: dict[str, list[int]] = {}
        for i in range(min(tok.vocab_size, v)):
            piece = tok.id_to_token(i)
            mark = piece.removeprefix("\u2581")
            if len(mark) == 1 and unicodedata.category(mark)[0] == "P" and not is_byte_piece(piece):
                alone.setdefault(mark, []).append(i)
        writes = torch.zeros((len(alone), v), dtype=torch.bool)
        for c, ids in enumerate(alone.values()):
            writes[c, ids] = True
        return list(alone), writes

    def doubled(self, sources: Sequence[Sequence[int]]) -> Tensor:
        """(B,C) whether each source writes each of :attr:`lone_marks` twice in a row."""
        marks = self.lone_marks[0]
        texts = [self.src_tokenizer.decode(list(ids)).replace(" ", "") for ids in sources]
        return torch.tensor(
            [[ch * 2 in text for ch in marks] for text in texts], dtype=torch.bool
        ).reshape(len(texts), len(marks))

    # ------------------------------------------------------------------ digits and marks
    @cached_property
    def _coverage(self) -> tuple[Tensor, Tensor]:
        """(V,C) how many of each digit and carried mark every target piece writes, and the
        same of the source's pieces; a mark the target vocabulary cannot write is left out
        (every translation would owe it)."""
        cfg, every = self.config, DIGITS + CARRIED_MARKS
        tgt_table = _symbol_table(self.tgt_tokenizer, cfg.tgt_vocab_size, every)
        kept = [c for c in range(len(every)) if c < len(DIGITS) or tgt_table[:, c].any()]
        src_table = _symbol_table(self.src_tokenizer, cfg.src_vocab_size, every)
        return tgt_table[:, kept], src_table[:, kept]

    @property
    def symbol_table(self) -> Tensor:
        """(V,C) how many of each digit and carried mark every target piece writes."""
        return self._coverage[0]

    @property
    def n_marks(self) -> int:
        """How many of the carried marks the target vocabulary writes (the columns after the
        digits)."""
        return self._coverage[0].shape[1] - len(DIGITS)

    @cached_property
    def _digit_edges(self) -> tuple[Tensor, Tensor, Tensor]:
        """Source pieces that end / begin with a digit, and pieces that are not a word's
        start: a mark written between two digits ("55,000", "9:30"; not "3 (4)") belongs to a
        number, which the target may write with other separators ("55.000")."""
        tok, v = self.src_tokenizer, self.config.src_vocab_size
        pieces = [tok.id_to_token(i) for i in range(min(tok.vocab_size, v))]
        pieces += [""] * max(0, v - len(pieces))
        digits = set(DIGITS)
        return (
            torch.tensor([p[-1:] in digits for p in pieces]),
            torch.tensor([p[:1] in digits for p in pieces]),
            torch.tensor([bool(p) and not p.startswith("\u2581") for p in pieces]),
        )

    def symbols(self, batch: Tensor) -> Tensor:
        """(B,C) the digits and carried marks each source sentence has — not the marks inside
        a number ("55,000", "9:30"), which the target may write otherwise."""
        symbols = self._coverage[1].to(batch.device)[batch]  # (B,S,C)
        real = (batch != self.config.pad_id).long()[:, :, None]  # (B,S,1)
        # a mark between digits is part of a number, left to the digits' coverage
        in_number = torch.zeros(batch.shape, dtype=torch.bool, device=batch.device)  # (B,S)
        ends, starts, joined = (t.to(batch.device) for t in self._digit_edges)
        in_number[:, 1:-1] = ends[batch[:, :-2]] & joined[batch[:, 1:-1]] & starts[batch[:, 2:]]
        symbols[:, :, len(DIGITS) :] *= (~in_number).long()[:, :, None]
        return (symbols * real).sum(dim=1)  # (B,C)

    # ------------------------------------------------------------------ the word check
    @cached_property
    def _word_pieces(self) -> tuple[list[bytes], Tensor]:
        """What each target piece writes and which begin a word (:func:`piece_table`)."""
        tok, v = self.tgt_tokenizer, self.config.tgt_vocab_size
        pieces = [tok.id_to_token(i) if i < tok.vocab_size else "<>" for i in range(v)]
        return piece_table(pieces, self.config.eos_id)

    @cached_property
    def _known_starts(self) -> Tensor:
        """The target pieces that begin a word and never spoil one (:func:`known_starts`)."""
        assert self.known_words is not None
        return known_starts(self.known_words, *self._word_pieces)

    def lexicon(self, sources: Sequence[Sequence[int]], penalty: float) -> Lexicon | None:
        """The word check's lexicon for a batch whose rows' source ids are ``sources``, each
        invented word charged ``penalty`` (None: the model has no word list)."""
        if self.known_words is None:
            return None
        decode = self.src_tokenizer.decode
        words = [frozenset(words_of(decode(list(ids)))) - self.not_free for ids in sources]
        texts, starts = self._word_pieces
        return Lexicon(self.known_words, texts, starts, words, penalty, self._known_starts)
