"""The pieces every text step shares: the segment it works on, its interface, and what it
may ask of the model (:class:`Context`)."""

from __future__ import annotations

import dataclasses
import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from attenzione.data.tokenizers import Tokenizer, is_byte_piece
from attenzione.languages import minor_words, pair_words
from attenzione.pipeline.markup import Tag, nonspace, piece_texts


@dataclass
class Segment:
    """A stretch of an input line on its way to the model and back.

    ``text``: what the model will read (the steps rewrite it); ``glue``: what joins it to the
    segment before it in the line ("" or " "); ``translate``: False for a stretch carried
    over as it is (a tag, a pictograph, punctuation alone, a word too long to read), whose
    ``text`` is written unchanged; ``ids``: the source ids the model reads (set by the
    translator).

    The other fields are what the steps note to undo their work: each is written by one step
    and read by the steps named beside it, so that no step reads another's notes by name."""

    text: str
    glue: str = ""
    translate: bool = True
    ids: list[int] | None = None
    # inline pairs and points may stay in this stretch (taken out of its text) for a step that
    # places them in the translation: set by the pipeline when one of its steps
    # ``places_tags``, cleared when it prepares a line again (:class:`Recut`); read by carry
    keep_inline: bool = False
    # carry: the inline tags taken out of the text, their positions counted in non-space
    # characters of the text as it was then, ``tags_length`` of them (split shares them out
    # among its pieces, inline-tags places them)
    tags: tuple[Tag, ...] = ()
    tags_length: int = 0
    # capitals: read in sentence case, written back in capitals (read by title-case, split)
    capitals: bool = False
    # split: the k-th of n pieces of a stretch cut to fit (read by continuation)
    piece: tuple[int, int] = (0, 1)
    # continuation: goes on with a sentence begun before it (its translation starts lower-case)
    continues: bool = False
    # number-format, numbers: the text as read before names reads it with base letters
    # (None: ``text``), what the translation's numbers are checked against
    source: str | None = None
    # names: the (read, original) pairs of the words read with base letters
    folded: tuple[tuple[str, str], ...] = ()

    def but(self, **changes: Any) -> Segment:
        """A copy with ``changes``."""
        return dataclasses.replace(self, **changes)


class Recut(Exception):  # noqa: N818 (a signal, not an error)
    """Raised by a step's ``prepare`` when the line must be prepared again with its inline
    tags cutting it (the model could not read the tagged stretch whole)."""


class Step:
    """A text step: one problem of real input the model alone handles badly.

    ``prepare`` turns a line's segments into new ones (rewriting their text, cutting them,
    marking some as carried) and notes in the segment's fields what ``restore`` needs;
    ``restore`` turns the model's translation of one segment into what the user gets.
    Steps prepare in the pipeline's order and restore in the reverse order. ``tokens``: the
    target ids of the translation being restored.

    ``places_tags``: the step puts a segment's inline tags back in its translation, so a
    pipeline with it lets a line's inline pairs stay in their stretch
    (:attr:`Segment.keep_inline`) rather than cut it."""

    name: str = ""
    places_tags: ClassVar[bool] = False
    # what the step needs of the pair's language profiles (attenzione.languages.REQUIREMENTS):
    # a pair's default pipeline has the step only where its profiles meet every need
    needs: ClassVar[tuple[str, ...]] = ()

    def prepare(self, segments: list[Segment], ctx: Context) -> list[Segment]:
        return segments

    def restore(self, segment: Segment, text: str, ctx: Context, tokens: Sequence[int]) -> str:
        return text


class Context:
    """What the text steps may ask of a model: its source vocabulary, how much it reads at
    once, its word lists and number format, and (for inline tags) an aligner.

    ``place_tags(segment, tokens)`` → [(character offset in the translation, tag)]: where the
    segment's inline tags go in a translation, by attention (the translator supplies it)."""

    def __init__(
        self,
        src_tokenizer: Tokenizer,
        max_src_tokens: int,
        eos_id: int,
        *,
        known_words: Sequence[str] | None = None,
        not_free: frozenset[str] = frozenset(),
        number_format: str = "keep",
        place_tags: Callable[[Segment, Sequence[int]], list[tuple[int, Tag]]] | None = None,
        source_language: str | None = None,
        target_language: str | None = None,
    ) -> None:
        self.src_tokenizer = src_tokenizer
        self.max_src_tokens = max_src_tokens
        self.eos_id = eos_id
        self.known_words = known_words
        self.not_free = not_free
        self.number_format = number_format
        self.place_tags = place_tags
        # ISO 639-1 codes (None: unknown): how sentences end (split), and the words of the
        # pair's language profiles the steps look for. A context that names neither language
        # (a model from before info.json named its pair) reads English into Italian.
        if source_language is None and target_language is None:
            source_language, target_language = "en", "it"
        self.source_language = source_language or ""
        self.pair_words = pair_words(source_language, target_language)
        self.minor_words = minor_words(source_language, target_language)
        # a model trained with corpus tags reads one tag token before the text: a place kept
        self.reserved = 1 if getattr(src_tokenizer, "tags", ()) else 0
        self._carried: dict[str, bool] = {}  # character -> carried as a pictograph
        self._counted: dict[str, int] = {}  # word -> its number of source pieces
        self._bytes_only: dict[str, bool] = {}  # character -> spelled in bytes

    def encode(self, text: str) -> list[int]:
        """Source ids as the encoder sees them: the tokenizer's ids + ``<eos>``."""
        return self.src_tokenizer.encode(text) + [self.eos_id]

    def fits(self, text: str) -> bool:
        """Whether the model reads ``text`` at once (with a corpus tag, if it has tags)."""
        return len(self.encode(text)) + self.reserved <= self.max_src_tokens

    def n_pieces(self, word: str) -> int:
        """How many source pieces ``word`` is spelled in (remembered: the casing steps ask for
        the same words again and again)."""
        n = self._counted.get(word)
        if n is None:
            n = self._counted[word] = len(self.src_tokenizer.encode(word))
        return n

    def spelled_in_bytes(self, ch: str) -> bool:
        """Whether the source vocabulary writes the character ``ch`` only in bytes."""
        hit = self._bytes_only.get(ch)
        if hit is None:
            tok = self.src_tokenizer
            hit = any(is_byte_piece(tok.id_to_token(i)) for i in tok.encode(ch))
            self._bytes_only[ch] = hit
        return hit

    def carries(self, ch: str) -> bool:
        """Whether the character ``ch`` is a pictograph carried over untranslated: a symbol
        (Unicode category So or Sk) from the arrows (U+2190) on that the source vocabulary
        can only spell in bytes, or not at all (``<unk>``) — emoji, "★", "✓"; not "°", "£",
        "€", "№" or a maths sign ("≤"), which belong to the sentence around them, nor a
        symbol it has a piece for ("→")."""
        hit = self._carried.get(ch)
        if hit is None:
            hit = unicodedata.category(ch) in ("So", "Sk") and ord(ch) >= 0x2190
            if hit:
                tok = self.src_tokenizer
                hit = self.spelled_in_bytes(ch) or tok.unk_id in tok.encode(ch)
            self._carried[ch] = hit
        return hit

    def spells(self, text: str) -> bool:
        """Whether ``text``'s source pieces write its characters (not so when the tokenizer
        rewrites them, "…" → "...", or reads one as ``<unk>``): inline tags are placed by
        counting characters."""
        ids = self.src_tokenizer.encode(text)
        pieces = [self.src_tokenizer.id_to_token(i) for i in ids]
        written = "".join(piece_texts(pieces))
        return nonspace(written) == nonspace(text) and "\ufffd" not in written
