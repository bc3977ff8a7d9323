"""Text in, text out: the model, its two tokenizers and the decoder, loaded as one object.

A :class:`Translator` is what a model directory becomes in memory. The tokenizers travel with
the weights (``src_tokenizer/``, ``tgt_tokenizer/``), so translation always tokenizes exactly
as training did — the mismatch users of other toolkits keep running into cannot happen here.

Input policy:

* an empty or whitespace-only line translates to an empty line;
* a line whose source tokens fit ``max_src_tokens`` (what the model was trained on, by default
  100) is translated whole;
* a longer line is split into sentences by :func:`attenzione.data.sentences.split_sentences`
  (a real segmenter: "Dr. Ur" and "U.S." do not end a sentence; the service uses the same
  one), each translated on its own and joined with a space; a single sentence that is still
  too long is cut at word boundaries into pieces that fit, and a single word that alone is
  longer than the model reads (a long URL, a hash) is copied unchanged. Nothing is silently
  dropped;
* pictographs the source vocabulary can only spell in bytes (emoji, stars, dingbats: see
  :meth:`Translator.carries`) and markup tags (``<b>``, ``</b>``: :data:`MARKUP_TAG`) are
  carried over where they stand, and the text between them is translated: the model has
  hardly seen them and turned "🍕" into invented words, "</b>" into "-t>". A stretch with no
  letter or digit ("!" after an emoji) is kept as it is. A pair of inline tags around some
  words of a stretch ("Click <b>Save</b> now") does not cut it: the stretch is translated
  whole and the pair placed around the words that attend to what it enclosed
  (:mod:`attenzione.markup`);
* a line written all in capitals ("WARNING: DO NOT OPEN") is translated in sentence case
  and its translation put back in capitals: the training data is hardly ever in capitals,
  and the model left such text untranslated (a line with a code and no word of three
  letters, "ID: AB12CD", is read as it is);
* a line in title case ("Scientists Discover New Species") is read with its ordinary words in
  lower case (:meth:`Translator._truecase`): the model took "Doors" for a name.

Capitals and title case are judged on the whole line (its text, not its tags).
:meth:`Translator.translate_n_best` and :meth:`Translator.attention` read a sentence the same
way (an n-best list needs one stretch of text).
"""

from __future__ import annotations

import itertools
import re
import unicodedata
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

import torch

from attenzione import model_dir
from attenzione.config import (
    ATTENTION_COVERAGE,
    NUMBER_COVERAGE,
    PUNCTUATION_COVERAGE,
    WORD_PENALTY,
    DecodeConfig,
)
from attenzione.data.corpus import normalize
from attenzione.data.numbers import (
    NUMBER_FORMATS,
    localize_numbers,
    repair_numbers,
    restore_currency,
)
from attenzione.data.sentences import split_sentences
from attenzione.data.tokenizers import Tokenizer, is_byte_piece
from attenzione.decoding import Coverage, Hypothesis, WholeCharacters, generate, utf8_roles
from attenzione.lexicon import Lexicon, holds, piece_table, words_of
from attenzione.markup import (
    Tag,
    inline_pairs,
    insert,
    insert_tags,
    nonspace,
    piece_texts,
    place,
)
from attenzione.model import Transformer
from attenzione.model_dir import PRETRAINED_DIR

if TYPE_CHECKING:
    from attenzione.viz.maps import AttentionMaps

__all__ = ["PRETRAINED_DIR", "ScoredTranslation", "Translator"]

# Lines taken from an iterable at a time by translate_iter: sorted by length inside a chunk
# (little padding), yielded in input order as each chunk finishes (output streams).
STREAM_CHUNK = 512


@dataclass(frozen=True)
class ScoredTranslation:
    """One candidate translation of one sentence, with what the model thought of it.

    ``confidence`` is the mean log-probability per generated token, the closing ``<eos>``
    counted as a token: ``log_prob / (len(ids) + 1)``; ``exp(confidence)`` is the geometric
    mean of the probabilities the model gave each token it wrote (1.0 = certain). ``ids`` are
    the model's raw output ids (no ``<bos>``/``<eos>``), e.g. for :meth:`Translator.attention`.
    """

    text: str
    confidence: float
    log_prob: float
    ids: tuple[int, ...]
    # how many pieces the model translated: > 1 when the sentence was too long and was split
    # (or pictographs stood between its parts), 0 when nothing was translated: one word too
    # long to read, or only pictographs and punctuation, carried unchanged
    pieces: int = 1
    # the text the model read when it translated one piece: the sentence less the pictographs
    # and tags carried around it, in sentence case if it was in capitals, its ordinary words
    # lower-cased if it was in title case ("" for 0 or several pieces); its names with rare
    # letters are as written ("Gdańsk": the model read "Gdansk", and attention() reads it so)
    read: str = ""


# Characters that join an emoji sequence: zero-width joiner, variation selectors, the keycap
# and the tag characters of subdivision flags. Carried with the pictographs they join.
EMOJI_JOINERS = frozenset("\u200d\ufe0e\ufe0f\u20e3") | frozenset(map(chr, range(0xE0020, 0xE0080)))


def _shouting(text: str) -> bool:
    """Whether ``text`` is written in capitals: at least two cased letters, none lower-case."""
    cased = [c for c in text if c.isupper() or c.islower()]
    return len(cased) >= 2 and not any(c.islower() for c in cased)


_TITLE_WORD = re.compile(r"[^\W\d_]+(?:['\u2019][^\W\d_]+)?")
_CODE = re.compile(r"\b(?=\w*[^\W\d_])(?=\w*\d)\w+\b")  # letters and digits: "AB12CD"
# A word: a run of letters (a name such as "Gdańsk" or "Erdoğan" is one)
_LETTERS = re.compile(r"[^\W\d_]+")
# Letters with no decomposition into a base letter and marks, and the base letter each reads as
_BASE_LETTER = {"ł": "l", "Ł": "L", "ø": "o", "Ø": "O", "đ": "d", "Đ": "D", "ı": "i", "ħ": "h",
                "Ħ": "H", "ŧ": "t", "Ŧ": "T"}  # fmt: skip
# A word is read with its letters' base letters only from this many letters on: a shorter one
# ("õ", "Ýr") could come back as an ordinary word of the translation ("o")
FOLD_MIN_LETTERS = 3
# Only a word with a letter from this code point on that the vocabulary spells in bytes is read
# with base letters: past Latin-1, whose letters ("é", "ü", "ñ", "ç") the training data has in
# many names the model learned to copy in bytes. On 177 sentences with 59 such names
# (`python tools/name_copying.py`) the name came out exactly in 128 read in bytes, 166 with
# every such word folded and 171 with the words past Latin-1 folded.
FOLD_FROM = 0x100


def _base_letter(ch: str) -> str | None:
    """The one ASCII letter ``ch`` is written on ("ń" → "n", "ğ" → "g", "ł" → "l"), or None."""
    if ch in _BASE_LETTER:
        return _BASE_LETTER[ch]
    base = "".join(c for c in unicodedata.normalize("NFKD", ch) if not unicodedata.combining(c))
    return base if len(base) == 1 and base.isascii() and base.isalpha() else None


def _unfolded(text: str, swaps: Sequence[tuple[str, str]]) -> str:
    """``text`` with each whole word that is a ``read`` of ``swaps`` written back as its
    ``original``: the one read exactly so, else (the translation changed its case: "gdansk")
    the first read so in any case."""
    if not swaps:
        return text
    exact = dict(swaps)
    loose: dict[str, str] = {}
    for read, original in swaps:
        loose.setdefault(read.casefold(), original)
    word = _whole_words([r for r, _ in swaps], re.IGNORECASE)
    return word.sub(lambda m: exact.get(m.group(0)) or loose[m.group(0).casefold()], text)


def _whole_words(words: Sequence[str], flags: int = 0) -> re.Pattern[str]:
    """A pattern for any of ``words`` standing as a whole word (no letter either side), the
    longest tried first."""
    pattern = "|".join(re.escape(w) for w in sorted(words, key=lambda w: -len(w)))
    return re.compile(rf"(?<![^\W\d_])(?:{pattern})(?![^\W\d_])", flags)


# The short words English title case leaves in lower case ("Species in the Amazon").
_MINOR_WORDS = frozenset({
    "a", "an", "the", "and", "but", "or", "nor", "for", "so", "yet", "as", "at", "by", "in",
    "of", "off", "on", "per", "to", "up", "via", "vs", "v",
})  # fmt: skip


def _title_case(text: str) -> bool:
    """Whether ``text`` is written in (English) title case, "Scientists Discover New Species
    in the Amazon": every word after the first capitalised but the short ones title case
    leaves alone, and at least two of them of four letters or more. A sentence with a
    lower-case verb ("Mother Teresa won the Nobel Peace Prize") is not."""
    words = _TITLE_WORD.findall(text)[1:]
    if any(not w[:1].isupper() and w not in _MINOR_WORDS for w in words):
        return False
    return sum(len(w) >= 4 and w[:1].isupper() for w in words) >= 2


def _sentence_case(text: str, *, starts: bool) -> str:
    """``text`` in lower case, its first letter a capital if it ``starts`` a sentence and the
    first letter after each ". ", "! " or "? " too; a one-letter word ("I") keeps its case."""
    words = [w if len(w) == 1 else w.lower() for w in text.split(" ")]
    out = list(" ".join(words))
    capital = starts
    for i, c in enumerate(out):
        if c.isalpha():
            out[i] = c.upper() if capital else c
            capital = False
        elif c in ".!?":
            capital = True
        elif not c.isspace() and c not in "\"'«“(":
            capital = False
    return "".join(out)


# Inline tags stand in a translation as these private-use characters (one per tag, by its
# index) while its numbers are repaired and its case set, then are written as they were.
_MARK_BASE = 0xF0000


def _mark(k: int) -> str:
    return chr(_MARK_BASE + k)


def _is_mark(c: str) -> bool:
    return _MARK_BASE <= ord(c) < _MARK_BASE + 0x10000


def _unmarked(text: str, tags: Sequence[Tag]) -> str:
    """``text`` with each tag's mark replaced by the tag (a mark lost on the way: its tag goes
    where the same tag stood in the source, by :func:`attenzione.markup.insert_tags`)."""
    if all(text.count(_mark(k)) == 1 for k in range(len(tags))):
        return "".join(tags[ord(c) - _MARK_BASE].text if _is_mark(c) else c for c in text)
    plain = "".join(c for c in text if not _is_mark(c))
    return insert_tags(plain, tags)


class _Stretch(NamedTuple):
    """A stretch of a line (:meth:`Translator._stretches`): what joined it to the one before
    ("" or " "), its text, whether it is translated, and the inline tags taken out of it."""

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


@dataclass(frozen=True)
class _Part:
    """One stretch of an input line: ``glue`` (what joined it to the stretch before, "" or
    " "), the ``text`` the model reads (in sentence case when the line shouted, its ordinary
    words lower-cased when it was in title case), whether it is put back in capitals
    (``upper``), its source ids (None: carried unchanged), and whether it goes on with a
    sentence begun before it (``continues``: the first piece of a stretch after a carried
    one, whose first letter is lower-case), so that its translation starts lower-case."""

    glue: str
    text: str
    upper: bool
    ids: list[int] | None
    continues: bool = False
    too_long: bool = False  # one word longer than the model reads, copied (ids None)
    # inline tags taken out of the text, placed in its translation by attention
    tags: tuple[Tag, ...] = ()
    # (read, original) of each word the model read with base letters ("Gdansk", "Gdańsk"),
    # written back in the translation (Translator._fold)
    swaps: tuple[tuple[str, str], ...] = ()


# A markup tag (<b>, </b>, <br/>, <a href="…">): carried where it stands, the text around it
# translated. The cleaning step keeps few pairs with tags (data.cleaning's placeholder filter),
# and the model spoilt every one: "<b>Tom</b> is here" → "<b>Tom-t> è qui". The service's
# format=html does the same with the tags it parses.
MARKUP_TAG = re.compile(r"</?[A-Za-z][\w:-]*(?:\s[^<>]{0,200})?/?>")

# How inline tags are placed (attenzione.markup): the decoder layer whose cross-attention
# aligns the words (its heads averaged; negative counts from the last), and whether a target
# piece is read at the step that feeds it back (True) or at the one that predicts it.
ALIGN_LAYER = 0
ALIGN_SHIFT = True

DIGITS = "0123456789"
# The punctuation beam search asks a translation to carry over from its source (as many of
# each mark as the source has; ``punctuation_coverage``): a clause's commas, a list's
# semicolons, a colon, a bracket. The translations of the shipped model dropped one source
# comma in nine (938 commas for the FLORES sources' 1,050; docs/broad-training.md). Quotes
# and dashes are not here: languages write them differently.
CARRIED_MARKS = ",;:()"


def _symbol_table(tok: Tokenizer, vocab_size: int, symbols: str) -> torch.Tensor:
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


def _byte_pieces(tok: Tokenizer) -> dict[str, int]:
    """The byte-fallback pieces of a vocabulary (``<0x00>``…``<0xFF>``) and their ids."""
    pieces = (tok.id_to_token(i) for i in range(tok.vocab_size))
    return {p: i for i, p in enumerate(pieces) if is_byte_piece(p)}


class Translator:
    """A trained model with its tokenizers. Build one with :meth:`from_pretrained`."""

    def __init__(
        self,
        model: Transformer,
        src_tokenizer: Tokenizer,
        tgt_tokenizer: Tokenizer,
        *,
        info: dict[str, Any] | None = None,
        max_src_tokens: int | None = None,
        known_words: Sequence[str] | None = None,
        translated_words: Sequence[str] | None = None,
    ) -> None:
        self.model = model.eval()
        self.src_tokenizer = src_tokenizer
        self.tgt_tokenizer = tgt_tokenizer
        self.info = dict(info or {})
        limit = max_src_tokens or int(self.info.get("max_src_tokens", 100))
        # The source also carries <eos>, and positions must exist for it.
        self.max_src_tokens = min(limit, model.config.max_len - 1)
        # (source id, target id) of each byte piece both vocabularies have: the ones the
        # source can show the model it may copy (a word-level source has none, and then no
        # target byte is banned)
        src_bytes = _byte_pieces(src_tokenizer)
        tgt_bytes = src_bytes if tgt_tokenizer is src_tokenizer else _byte_pieces(tgt_tokenizer)
        shared = [p for p in tgt_bytes if p in src_bytes]
        self._byte_src = torch.tensor([src_bytes[p] for p in shared], dtype=torch.long)
        self._byte_tgt = torch.tensor([tgt_bytes[p] for p in shared], dtype=torch.long)
        # what each target piece is as UTF-8, so byte pieces always spell whole characters
        # (None: a vocabulary without byte fallback has nothing to keep well-formed)
        self._utf8 = utf8_roles(tgt_bytes, model.config.tgt_vocab_size) if tgt_bytes else None
        # the byte each byte piece writes, to keep the characters spelled in bytes whole
        # characters of the source (decoding.WholeCharacters)
        self._src_byte = {i: int(p[3:5], 16) for p, i in src_bytes.items()}
        self._tgt_byte = torch.full((model.config.tgt_vocab_size,), -1, dtype=torch.long)
        for p, i in tgt_bytes.items():
            self._tgt_byte[i] = int(p[3:5], 16)
        # (V,C): how many of each digit and carried mark every piece writes, for beam search's
        # coverage; a mark the target vocabulary cannot write is left out (every translation
        # would owe it)
        every = DIGITS + CARRIED_MARKS
        tgt_table = _symbol_table(tgt_tokenizer, model.config.tgt_vocab_size, every)
        kept = [c for c in range(len(every)) if c < len(DIGITS) or tgt_table[:, c].any()]
        self._marks = "".join(every[c] for c in kept[len(DIGITS) :])
        self._symbols_tgt = tgt_table[:, kept]
        src_table = _symbol_table(src_tokenizer, model.config.src_vocab_size, every)
        self._symbols_src = src_table[:, kept]
        # source pieces that end / begin with a digit, and pieces that are not a word's start:
        # a mark written between two digits ("55,000", "9:30"; not "3 (4)") belongs to a
        # number, which the target may write with other separators ("55.000")
        src_pieces = [src_tokenizer.id_to_token(i) for i in range(src_tokenizer.vocab_size)]
        src_pieces += [""] * max(0, model.config.src_vocab_size - len(src_pieces))
        digits = set(DIGITS)
        self._ends_digit = torch.tensor([p[-1:] in digits for p in src_pieces])
        self._starts_digit = torch.tensor([p[:1] in digits for p in src_pieces])
        self._joined = torch.tensor([bool(p) and not p.startswith("\u2581") for p in src_pieces])
        # the decoder layer whose cross-attention the attention coverage reads: the middle one
        # (on FLORES dev the shipped model's middle layer of 3 served best; docs/broad-training.md)
        self.attention_layer = model.config.n_dec_layers // 2
        # the decoder layer whose cross-attention places inline tags (attenzione.markup)
        self.alignment_layer = ALIGN_LAYER % model.config.n_dec_layers
        self._carried: dict[str, bool] = {}  # character -> carried as a pictograph (carries)
        self._counted: dict[str, int] = {}  # word -> its number of source pieces (_n_pieces)
        self._bytes_only: dict[str, bool] = {}  # character -> spelled in bytes (_fold)
        # the words of the training targets, sorted (None: no word check; see
        # attenzione.lexicon)
        self.known_words = known_words
        # the source words the training pairs always translate: not free to copy
        # (None: every source word is; see attenzione.lexicon)
        self.translated_words = translated_words
        # how the target language writes 1,234.5 (what the training targets did; see
        # attenzione.data.numbers.localize_numbers): the model's own unless set otherwise
        self.number_format = str(self.info.get("number_format", "keep"))
        if self.number_format not in NUMBER_FORMATS:
            raise ValueError(
                f"info.json: number_format must be one of {', '.join(NUMBER_FORMATS)}, "
                f"not {self.number_format!r}"
            )

    # ------------------------------------------------------------------ loading / saving
    @classmethod
    def from_pretrained(
        cls, path: str | Path | None = None, *, precision: str = "fp32"
    ) -> Translator:
        """Load a model directory; ``None`` loads the English→Italian model shipped inside.

        ``precision``: ``"fp32"`` (the reference), ``"bf16"`` or ``"int8"`` (faster on CPU,
        approximate; see :mod:`attenzione.precision`). Every way the directory can be damaged
        is a ``ValueError``/``FileNotFoundError`` naming the file.
        """
        from attenzione.precision import PRECISIONS, for_inference

        if precision not in PRECISIONS:
            raise ValueError(f"precision must be one of {', '.join(PRECISIONS)}, not {precision!r}")
        directory = Path(path) if path is not None else PRETRAINED_DIR
        if not directory.exists():
            if path is None:
                raise FileNotFoundError(
                    f"the shipped model is missing from {directory}; reinstall attenzione or "
                    "pass --model DIR"
                )
            raise FileNotFoundError(f"model directory {directory} does not exist")
        if not directory.is_dir():
            raise NotADirectoryError(f"{directory} is a file, not a model directory")
        raw = model_dir.load_model(directory)
        src_tok, tgt_tok = model_dir.load_tokenizers(directory, raw.config)
        info = model_dir.read_info(directory)
        words = model_dir.read_words(directory)
        translated = model_dir.read_words(directory, model_dir.TRANSLATED_NAME)
        return cls(
            for_inference(raw, precision),
            src_tok,
            tgt_tok,
            info=info,
            known_words=words,
            translated_words=translated,
        )

    def save_pretrained(self, directory: str | Path, *, dtype: torch.dtype | None = None) -> Path:
        """Write a loadable model directory (weights, config, tokenizers, info), atomically."""
        return model_dir.write_model_dir(
            directory,
            self.model,
            self.src_tokenizer,
            self.tgt_tokenizer,
            info=self.info,
            words=self.known_words,
            translated=self.translated_words,
            dtype=dtype,
        )

    # ------------------------------------------------------------------ tokens
    def encode_source(self, text: str) -> list[int]:
        """Source ids as the encoder sees them: the tokenizer's ids + ``<eos>``.

        The text is first normalised as the training data was (:func:`normalize`: NFC,
        typographic apostrophes → ', whitespace runs → one space): the model has never seen a
        "’", and "I don’t know" would otherwise come out as nonsense."""
        return self.src_tokenizer.encode(normalize(text)) + [self.model.config.eos_id]

    def _pieces(self, text: str) -> list[str]:
        """Split ``text`` into parts whose source ids fit ``max_src_tokens`` (input policy)."""
        if len(self.encode_source(text)) <= self.max_src_tokens:
            return [text]
        parts: list[str] = []
        for sentence in (s.strip() for s in split_sentences(text)):
            if not sentence:
                continue
            if len(self.encode_source(sentence)) <= self.max_src_tokens:
                parts.append(sentence)
                continue
            chunk: list[str] = []
            for word in sentence.split():
                if (
                    chunk
                    and len(self.encode_source(" ".join([*chunk, word]))) > self.max_src_tokens
                ):
                    parts.append(" ".join(chunk))
                    chunk = []
                chunk.append(word)
            if chunk:
                parts.append(" ".join(chunk))
        return parts

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
                hit = self._spelled_in_bytes(ch) or tok.unk_id in tok.encode(ch)
            self._carried[ch] = hit
        return hit

    def _spelled_in_bytes(self, ch: str) -> bool:
        """Whether the source vocabulary writes the character ``ch`` only in bytes."""
        hit = self._bytes_only.get(ch)
        if hit is None:
            tok = self.src_tokenizer
            hit = any(is_byte_piece(tok.id_to_token(i)) for i in tok.encode(ch))
            self._bytes_only[ch] = hit
        return hit

    def _foldable(self, word: str) -> str | None:
        """The reading of ``word`` with base letters when :meth:`_fold` may read it so: a word
        of :data:`FOLD_MIN_LETTERS` letters or more with a letter from :data:`FOLD_FROM` on
        that the source vocabulary spells only in bytes, every letter with a base letter, and
        a reading that is neither a known target word nor a source word the training data
        always translates ("Sąd" would read "Sad"). None otherwise."""
        if len(word) < FOLD_MIN_LETTERS or word.isascii():
            return None
        if not any(ord(c) >= FOLD_FROM and self._spelled_in_bytes(c) for c in word):
            return None
        letters = [c if c.isascii() else _base_letter(c) for c in word]
        if any(b is None for b in letters):
            return None
        read = "".join(b for b in letters if b is not None)
        lower = read.lower()
        known = self.known_words
        if (known is not None and holds(known, lower, whole=True)) or lower in self._not_free:
            return None
        return read

    def _fold(self, text: str) -> tuple[str, tuple[tuple[str, str], ...]]:
        """``text`` as the model reads it best: each word :meth:`_foldable` ("Gdańsk",
        "Erdoğan", "Łódź") read with base letters ("Gdansk"), which the model copies where
        the bytes came back garbled ("Gda sbottoNato"). Returned with the (read, original)
        pairs to write back (:func:`_unfolded`). A word is kept as it is when the text has its
        reading already, in any case ("lodz.pl", "LODZ"), or when another word reads alike.
        The text is read in NFC, as :meth:`encode_source` reads it; each letter becomes one
        letter, so an NFC text keeps its offsets (inline tags are placed by them)."""
        if not any(ord(c) > 0x7F for c in text):
            return text, ()
        text = unicodedata.normalize("NFC", text)
        folded = text.casefold()
        found: dict[str, str] = {}
        clash: set[str] = set()
        for word in sorted(set(_LETTERS.findall(text))):
            read = self._foldable(word)
            if read is None or read.casefold() in folded:
                continue
            if read in found:  # another word reads alike
                clash.add(read)
            found[read] = word
        swaps = tuple((r, w) for r, w in sorted(found.items()) if r not in clash)
        if swaps:
            reads = {w: r for r, w in swaps}
            text = _whole_words(list(reads)).sub(lambda m: reads[m.group(0)], text)
        return text, swaps

    def _truecase(self, text: str, *, starts: bool) -> str:
        """``text`` in title case with each capitalised word lower-cased where it is an
        ordinary word: the source vocabulary spells the lower-case form in fewer pieces, or
        both forms in one (a subword vocabulary gives the forms it saw often few pieces:
        "Doors" → "doors", "The" → "the"; "Tom" and "Massachusetts" stay), or the training
        data always translates it (:attr:`translated_words`) and the capitalised form is not
        the shorter ("Governor" → "governor"; "Italy" stays). A word that starts a sentence,
        "I" and words with other capitals ("NASA") are kept. Measured on Tatoeba dev in title
        case, with the other rules tried: docs/broad-training.md."""
        first = starts

        def one(m: re.Match[str]) -> str:
            nonlocal first
            word, begins = m.group(0), first
            first = False
            rest = word[1:]
            if (
                begins
                or not word[:1].isupper()
                or rest != rest.lower()
                or re.split("['\u2019]", word)[0] == "I"
            ):
                return word
            lower = word[:1].lower() + rest
            n_lower, n_word = self._n_pieces(lower), self._n_pieces(word)
            ordinary = (
                n_lower < n_word
                or n_lower == n_word == 1
                # a word the data always translates, unless the capitalised form is the one
                # the vocabulary knows better (a name: "Italy", "Christmas")
                or (lower.lower() in self._not_free and n_word >= n_lower)
            )
            return lower if ordinary else word

        out = []
        for piece in re.split(r"(?<=[.!?])(\s+)", text):  # a sentence's first word is kept
            out.append(_TITLE_WORD.sub(one, piece))
            first = True
        return "".join(out)

    def _names(self, text: str) -> str:
        """``text`` in sentence case with the words the source vocabulary knows as names
        capitalised again: spelled in fewer pieces capitalised ("italy" → "Italy", "tom" →
        "Tom"), or read with base letters (:meth:`_foldable`: "łódź" → "Łódź"), for a line
        that was all in capitals."""

        def one(m: re.Match[str]) -> str:
            word = m.group(0)
            if not word.islower():
                return word
            name = word[:1].upper() + word[1:]
            if self._foldable(name) is not None:  # "łódź": no English word has such letters
                return name
            return name if self._n_pieces(name) < self._n_pieces(word) else word

        return _TITLE_WORD.sub(one, text)

    def _n_pieces(self, word: str) -> int:
        """How many source pieces ``word`` is spelled in (remembered: the casing steps ask
        for the same words again and again)."""
        n = self._counted.get(word)
        if n is None:
            n = self._counted[word] = len(self.src_tokenizer.encode(normalize(word)))
        return n

    def _stretches(self, text: str, *, inline: bool = True) -> list[_Stretch]:
        """``text`` (stripped) cut around what is carried, not translated: (glue, stretch,
        translated?, inline tags) in order. Carried are markup tags (:data:`MARKUP_TAG`), runs
        of pictographs (with the joiners between them), and any stretch without a letter or
        digit. With ``inline``, a pair of inline tags around some words of one stretch
        (``<b>`` … ``</b>``: :func:`attenzione.markup.inline_pairs`) does not cut it: it is
        taken out of the text the model reads and kept with the stretch, to be placed in the
        translation by attention (:mod:`attenzione.markup`); a pair around the whole stretch
        is carried around it, and a pair around no text cuts."""
        items: list[tuple[str, str]] = []  # ("tag" | "cut" | "char", text)
        i = 0
        while i < len(text):
            tag = MARKUP_TAG.match(text, i)
            if tag:
                items.append(("tag", tag.group(0)))
                i = tag.end()
            elif self.carries(text[i]) or text[i + 1 : i + 2] in ("\ufe0f", "\u20e3"):
                # a pictograph, or a character shown as an emoji ("©️", the keycap "1️⃣")
                j = i + 1
                while j < len(text) and (self.carries(text[j]) or text[j] in EMOJI_JOINERS):
                    j += 1
                items.append(("cut", text[i:j]))
                i = j
            else:
                items.append(("char", text[i]))
                i += 1
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
        for k, (kind, t) in enumerate(items):
            if kind == "char":
                buf.append(t)
            elif k in kept:
                held.append(Tag(t, nonspace("".join(buf)), pair_of[k], k in pairs))
            else:
                if buf or held:
                    runs.append(("".join(buf), False, held))
                runs.append((t, True, []))
                buf, held = [], []
        if buf or held:
            runs.append(("".join(buf), False, held))
        out: list[_Stretch] = []
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
                out.append(_Stretch(glue, "".join(lead), False))
                glue = ""
            out.append(_Stretch(glue, core, readable, _renumbered(held)))
            if tail:
                out.append(_Stretch("", "".join(tail), False))
            space = stretch[-1].isspace()
        return out

    def _parts(self, text: str, *, inline: bool = True) -> list[_Part]:
        """The input policy for one line: the stretches between pictographs and tags (read
        in sentence case when the line is in capitals, with its ordinary words in lower case
        when it is in title case), each cut to what the model reads at once. A stretch with
        inline tags (``inline``) that the model cannot read at once, or whose case changes
        alter its length, is read again with its tags cutting it."""
        parts: list[_Part] = []
        stretches = self._stretches(text.strip(), inline=inline)
        words = " ".join(s.text for s in stretches if s.readable)
        # capitals are judged on the text to translate, not on the tags around it; a line
        # with a code ("ID: AB12CD") and no word of three letters is read as it is
        upper = _shouting(words) and (
            not _CODE.search(words) or any(len(w) >= 3 for w in _TITLE_WORD.findall(words))
        )
        title = not upper and _title_case(words)
        starts = True  # the next stretch starts a sentence
        for glue, stretch, readable, tags in stretches:
            if not readable:
                parts.append(_Part(glue, stretch, False, None))
                continue
            if upper:
                read = self._names(_sentence_case(stretch, starts=starts))
            elif title:
                read = self._truecase(stretch, starts=starts)
            else:
                read = stretch
            starts = stretch.rstrip("\"')»”")[-1:] in (".", "!", "?")
            pieces = self._pieces(read)
            marked = any(_is_mark(c) for c in read)  # the input has the marks' characters
            changed = nonspace(read) != nonspace(stretch)  # "İ".lower() is two characters
            folds = [self._fold(piece) for piece in pieces]
            encoded = [self.encode_source(folded) for folded, _ in folds]
            if tags and (
                len(pieces) > 1
                or marked
                or changed
                or len(folds[0][0]) != len(pieces[0])  # an NFD text read in NFC
                or not self._spells(folds[0][0], encoded[0])
            ):
                return self._parts(text, inline=False)
            for k, (piece, ids) in enumerate(zip(pieces, encoded, strict=True)):
                swaps = folds[k][1]
                glue_k = glue if k == 0 else " "
                if len(ids) <= self.max_src_tokens:
                    # a stretch after a carried pictograph or tag that goes on with a sentence
                    first = next((c for c in piece if c.isalpha()), "")
                    continues = k == 0 and bool(parts) and first.islower()
                    parts.append(
                        _Part(glue_k, piece, upper, ids, continues, tags=tags, swaps=swaps)
                    )
                else:  # one word longer than the model reads: copied as it was written
                    copy = piece.upper() if upper else piece
                    if tags:
                        return self._parts(text, inline=False)
                    parts.append(_Part(glue_k, copy, False, None, too_long=True))
        return parts

    def _read_at_once(self, text: str, advice: str) -> list[int]:
        """The source ids of ``text``, which must fit what the model reads in one pass (for
        what has no split form: an n-best list, one attention map)."""
        ids = self.encode_source(text.strip())
        if len(ids) > self.max_src_tokens:
            raise ValueError(
                f"the sentence has {len(ids)} source tokens (with <eos>) and this model reads "
                f"at most {self.max_src_tokens} at once: {advice}"
            )
        return ids

    def _batches(self, ids: list[list[int]], batch_size: int) -> list[list[int]]:
        """Indices grouped by similar length, so a batch carries little padding."""
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        order = sorted(range(len(ids)), key=lambda i: len(ids[i]))
        return [order[i : i + batch_size] for i in range(0, len(order), batch_size)]

    # ------------------------------------------------------------------ translation
    @torch.inference_mode()
    def translate_ids(
        self, src: Sequence[list[int]], cfg: DecodeConfig, *, batch_size: int = 64
    ) -> list[list[Hypothesis]]:
        """Decode source id lists (each already ending in ``<eos>``); results in input order."""
        pad = self.model.config.pad_id
        device = next(self.model.parameters()).device
        results: list[list[Hypothesis]] = [[] for _ in src]
        for group in self._batches(list(src), batch_size):
            width = max(len(src[i]) for i in group)
            batch = torch.full((len(group), width), pad, dtype=torch.long, device=device)
            for row, i in enumerate(group):
                batch[row, : len(src[i])] = torch.tensor(src[i], dtype=torch.long, device=device)
            banned = self._byte_bans(batch)
            coverage = self._coverage(batch, cfg)
            decoded = generate(
                self.model,
                batch,
                cfg,
                banned=banned,
                coverage=coverage,
                utf8=self._utf8,
                lexicon=self._lexicon([src[i] for i in group], cfg),
                attend=self.attention_layer,
                whole=self._whole([src[i] for i in group]),
            )
            for i, hyps in zip(group, decoded, strict=True):
                results[i] = hyps
        return results

    @property
    def translated_words(self) -> list[str] | None:
        """The source words a translation may not copy for free (sorted; None: all may be)."""
        return self._translated

    @translated_words.setter
    def translated_words(self, words: Sequence[str] | None) -> None:
        self._translated = None if words is None else sorted(set(words))
        self._not_free = frozenset(self._translated or ())

    @property
    def known_words(self) -> list[str] | None:
        """The words beam search checks the output against (sorted; None: no check)."""
        return self._known_words

    @known_words.setter
    def known_words(self, words: Sequence[str] | None) -> None:
        self._known_words = None if words is None else sorted(set(words))

    @cached_property
    def _word_pieces(self) -> tuple[list[bytes], torch.Tensor]:
        """What each target piece writes and which begin a word (:func:`piece_table`), built
        the first time a word check runs."""
        tok, v = self.tgt_tokenizer, self.model.config.tgt_vocab_size
        pieces = [tok.id_to_token(i) if i < tok.vocab_size else "<>" for i in range(v)]
        return piece_table(pieces, self.model.config.eos_id)

    def _lexicon(self, src: list[list[int]], cfg: DecodeConfig) -> Lexicon | None:
        """The known words and each source's words (less those the training data always
        translates), for beam search's word check (None when it is off or the model
        has no word list)."""
        if self.known_words is None or cfg.word_penalty == 0 or cfg.method != "beam":
            return None
        sources = [
            frozenset(words_of(self.src_tokenizer.decode(ids))) - self._not_free for ids in src
        ]
        return Lexicon(self.known_words, *self._word_pieces, sources, cfg.word_penalty)

    def _coverage(self, batch: torch.Tensor, cfg: DecodeConfig) -> Coverage:
        """The digits and carried marks each source sentence has, and those each target piece
        writes: the output is pushed to carry every number over before it ends
        (``number_coverage`` per digit) and to keep the source's commas, semicolons, colons
        and brackets (``punctuation_coverage`` per mark; see ``CARRIED_MARKS``) — not those
        inside a number ("55,000", "9:30"), which the target may write otherwise."""
        symbols = self._symbols_src.to(batch.device)[batch]  # (B,S,C)
        real = (batch != self.model.config.pad_id).long()[:, :, None]  # (B,S,1)
        # a mark between digits is part of a number, left to the digits' coverage
        in_number = torch.zeros(batch.shape, dtype=torch.bool, device=batch.device)  # (B,S)
        ends, starts = self._ends_digit.to(batch.device), self._starts_digit.to(batch.device)
        joined = self._joined.to(batch.device)
        in_number[:, 1:-1] = ends[batch[:, :-2]] & joined[batch[:, 1:-1]] & starts[batch[:, 2:]]
        symbols[:, :, len(DIGITS) :] *= (~in_number).long()[:, :, None]
        need = (symbols * real).sum(dim=1)  # (B,C)
        weight = torch.tensor(
            [cfg.number_coverage] * len(DIGITS) + [cfg.punctuation_coverage] * len(self._marks),
            device=batch.device,
        )
        return Coverage(need=need, table=self._symbols_tgt.to(batch.device), weight=weight)

    def _whole(self, sources: Sequence[list[int]]) -> WholeCharacters | None:
        """The characters each source spells in byte pieces: all a translation may spell in
        bytes (None: the vocabularies have no byte pieces in common, or no source spells a
        character in bytes, and the byte bans alone leave none to spell)."""
        if self._utf8 is None or not len(self._byte_src):
            return None
        chars = []
        for ids in sources:
            spelled = bytes(self._src_byte[i] for i in ids if i in self._src_byte)
            text = spelled.decode("utf-8", "ignore")
            chars.append(frozenset(c.encode() for c in text if len(c.encode()) > 1))
        return WholeCharacters(self._tgt_byte, chars) if any(chars) else None

    def _byte_bans(self, batch: torch.Tensor) -> torch.Tensor | None:
        """(B,V) the byte pieces (``<0xE2>``…) each sentence may not produce: all but those
        its source was spelled with. A tokenizer with byte fallback spells in bytes only what
        its vocabulary lacks; such a character in the output can only be one copied from the
        source, and a stray byte elsewhere would decode as "�". None when the vocabularies
        share no byte pieces."""
        if not len(self._byte_src):
            return None
        v = self.model.config.tgt_vocab_size
        banned = torch.zeros((batch.shape[0], v), dtype=torch.bool, device=batch.device)
        src_ids, tgt_ids = self._byte_src.to(batch.device), self._byte_tgt.to(batch.device)
        in_source = (batch[:, :, None] == src_ids[None, None, :]).any(dim=1)  # (B, n_bytes)
        banned[:, tgt_ids] = ~in_source
        return banned

    def translate(
        self,
        texts: str | Sequence[str],
        *,
        beam: int = 4,
        sample: bool = False,
        temperature: float = 1.0,
        top_k: int = 0,
        top_p: float = 1.0,
        seed: int | None = None,
        length_penalty: float = 1.0,
        number_coverage: float = NUMBER_COVERAGE,
        punctuation_coverage: float = PUNCTUATION_COVERAGE,
        attention_coverage: float = ATTENTION_COVERAGE,
        word_penalty: float = WORD_PENALTY,
        batch_size: int = 64,
        decode: DecodeConfig | None = None,
        fix_numbers: bool = True,
    ) -> list[str]:
        """Translate one string or a list of strings; returns a list of Italian strings.

        ``beam`` 1 is greedy decoding; ``sample=True`` samples instead (with ``temperature``,
        ``top_k``, ``top_p`` and a ``seed`` for reproducibility). ``decode`` overrides all.
        ``fix_numbers`` puts back source numbers the model garbled ("2017" → "20177"; see
        :func:`attenzione.data.numbers.repair_numbers`) and the currency symbols it dropped
        ("$19.99" → "19,99": :func:`~attenzione.data.numbers.restore_currency`), and writes
        the source's numbers in the target's convention, :attr:`number_format` ("2.3
        million" → "2,3 milioni"); False: the model's output as it is.
        ``number_coverage`` makes beam search prefer a translation that has written every
        digit of the source's numbers (:class:`attenzione.decoding.Coverage`; 0 = off; greedy
        decoding and sampling ignore it). ``punctuation_coverage`` does the same for the
        source's commas, semicolons, colons and brackets (:data:`CARRIED_MARKS`), per mark.
        ``attention_coverage`` makes beam search prefer a translation that attended to every
        source token (GNMT's coverage penalty, read off :attr:`attention_layer`; 0 = off).
        ``word_penalty`` makes beam search prefer a translation whose words are known words of
        the model or words of the source (:mod:`attenzione.lexicon`; 0 = off; a model without
        a word list, greedy decoding and sampling ignore it).
        """
        if isinstance(texts, str):
            texts = [texts]
        cfg = decode or decode_config(
            beam,
            sample,
            temperature,
            top_k,
            top_p,
            seed,
            length_penalty,
            number_coverage,
            word_penalty=word_penalty,
            punctuation_coverage=punctuation_coverage,
            attention_coverage=attention_coverage,
        )
        return self._translate_lines(list(texts), cfg, batch_size, fix_numbers)

    def translate_iter(
        self,
        texts: Iterable[str],
        *,
        decode: DecodeConfig | None = None,
        batch_size: int = 64,
        chunk: int = STREAM_CHUNK,
        fix_numbers: bool = True,
    ) -> Iterator[str]:
        """Translate an iterable of lines lazily, yielding each translation in input order.

        Lines are taken ``chunk`` at a time (sorted by length inside a chunk for batching), so
        the first translations arrive after one chunk, not after the whole input — a file can
        be written as it goes, and a run killed halfway keeps what was done.
        """
        cfg = decode or DecodeConfig()
        if chunk < 1:
            raise ValueError(f"chunk must be >= 1, got {chunk}")
        it = iter(texts)
        while block := list(itertools.islice(it, chunk)):
            yield from self._translate_lines(block, cfg, batch_size, fix_numbers)

    def _finish(self, source: str, text: str, fix_numbers: bool) -> str:
        """A decoded translation of ``source`` as the user gets it: its numbers repaired, the
        currency symbols it dropped put back, its numbers written in :attr:`number_format`
        ("55,000" → "55.000" for Italian); with
        ``fix_numbers`` False, exactly what the model wrote."""
        if not fix_numbers:
            return text
        text = restore_currency(source, repair_numbers(source, text))
        return localize_numbers(source, text, self.number_format)

    def _decode_parts(
        self, texts: Sequence[str], cfg: DecodeConfig, batch_size: int
    ) -> list[list[tuple[_Part, list[Hypothesis] | None]]]:
        """Each text's parts (the input policy) with their hypotheses, in order; a part of
        ``None`` hypotheses is carried unchanged."""
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        parts: list[tuple[int, _Part]] = []
        for i, text in enumerate(texts):
            if not isinstance(text, str):
                raise ValueError(f"input {i} is {type(text).__name__}, not a string")
            parts.extend((i, part) for part in self._parts(text))
        todo = [part.ids for _, part in parts if part.ids is not None]
        hyps = iter(self.translate_ids(todo, cfg, batch_size=batch_size))
        grouped: list[list[tuple[_Part, list[Hypothesis] | None]]] = [[] for _ in texts]
        for i, part in parts:
            grouped[i].append((part, None if part.ids is None else next(hyps)))
        return grouped

    @staticmethod
    def _line(parts: Iterable[tuple[_Part, str]]) -> str:
        """A line put back together from its parts and what each became: each after the glue
        its source had, the line stripped (a part that came out empty leaves no edge)."""
        return "".join(part.glue + text for part, text in parts).strip()

    def _written(self, part: _Part, h: Hypothesis, fix_numbers: bool) -> str:
        """The translation of one part as the user gets it (in capitals if it was, with its
        inline tags placed by attention)."""
        text = _unfolded(self.tgt_tokenizer.decode(h.tokens), part.swaps)
        if part.tags:  # each tag stands in the text as a private-use mark until the end
            placed = self._place_tags(part, h.tokens)
            text = insert(text, [(at, _mark(part.tags.index(t))) for at, t in placed])
        text = self._finish(part.text, text, fix_numbers)
        if part.upper:
            text = text.upper()
        elif part.continues:
            k = next((i for i, c in enumerate(text) if not _is_mark(c)), len(text))
            if text[k : k + 1].isupper() and not text[k + 1 : k + 2].isupper():
                text = text[:k] + text[k].lower() + text[k + 1 :]  # "Sta dormendo" after "🐱"
        if part.tags:
            text = _unmarked(text, part.tags)
        return text

    def _spells(self, text: str, ids: Sequence[int]) -> bool:
        """Whether ``text``'s source ``ids`` (:meth:`encode_source`) write its characters (not
        so when the tokenizer rewrites them, "…" → "...", or reads one as ``<unk>``): inline
        tags are placed by counting characters."""
        pieces = [self.src_tokenizer.id_to_token(i) for i in ids[:-1]]
        written = "".join(piece_texts(pieces))
        return nonspace(written) == nonspace(text) and "\ufffd" not in written

    def _place_tags(self, part: _Part, tokens: Sequence[int]) -> list[tuple[int, Tag]]:
        """Where ``part``'s inline tags go in its translation ``tokens``: by the cross-attention
        of :attr:`alignment_layer`, each target piece read as it is fed back
        (:func:`attenzione.markup.place`)."""
        assert part.ids is not None
        cfg = self.model.config
        device = next(self.model.parameters()).device
        src = torch.tensor([part.ids], dtype=torch.long, device=device)
        tgt = torch.tensor([[cfg.bos_id, *tokens, cfg.eos_id]], dtype=torch.long, device=device)
        with torch.inference_mode():
            out = self.model(src, tgt, need_weights=True)
        att = out.decoder.cross_attentions[self.alignment_layer][0].float().mean(dim=0)
        # row j + 1 is the step that reads target piece j (ALIGN_SHIFT; row j predicts it)
        shift = 1 if ALIGN_SHIFT else 0
        weights = att[shift : shift + len(tokens), : len(part.ids) - 1]  # <eos> left out
        src_pieces = [self.src_tokenizer.id_to_token(i) for i in part.ids[:-1]]
        tgt_pieces = [self.tgt_tokenizer.id_to_token(i) for i in tokens]
        return place(part.tags, src_pieces, tgt_pieces, weights)

    def _translate_lines(
        self, texts: list[str], cfg: DecodeConfig, batch_size: int, fix_numbers: bool
    ) -> list[str]:
        """The input policy (empty lines, long lines split) around :meth:`translate_ids`."""
        out: list[str] = []
        for parts in self._decode_parts(texts, cfg, batch_size):
            out.append(
                self._line(
                    (part, part.text if h is None else self._written(part, h[0], fix_numbers))
                    for part, h in parts  # h None: carried, written as it was
                )
            )
        return out

    def translate_n_best(
        self,
        text: str,
        *,
        beam: int = 4,
        n_best: int = 4,
        length_penalty: float = 1.0,
        number_coverage: float = NUMBER_COVERAGE,
        punctuation_coverage: float = PUNCTUATION_COVERAGE,
        attention_coverage: float = ATTENTION_COVERAGE,
        word_penalty: float = WORD_PENALTY,
        fix_numbers: bool = True,
    ) -> list[tuple[str, float]]:
        """The ``n_best`` beam hypotheses of one sentence, best first, with their ranking
        scores (length-normalised log-prob with the word penalties, less the number and
        punctuation coverage's charges, plus the weighed attention coverage; with beam 1
        and one hypothesis it is greedy decoding, and the score its total log-prob). The
        sentence must fit what the model reads at once (a split line has no n-best list); as
        in :meth:`translate`, pictographs around it are carried and capitals read in
        sentence case, but it must be one stretch of text."""
        cfg = decode_config(
            beam,
            False,
            1.0,
            0,
            1.0,
            None,
            length_penalty,
            number_coverage,
            n_best=n_best,
            word_penalty=word_penalty,
            punctuation_coverage=punctuation_coverage,
            attention_coverage=attention_coverage,
        )
        if not text.strip():
            return [("", 0.0)]
        parts = self._parts(text)
        readable = [k for k, part in enumerate(parts) if part.ids is not None]
        if not readable and not any(p.too_long for p in parts):  # pictographs, tags, marks
            return [(self._line((p, p.text) for p in parts), 0.0)]
        if len(readable) != 1:
            self._read_at_once(text, "an n-best list needs a shorter sentence")  # too long?
            raise ValueError(
                f"pictographs or tags cut this sentence into {len(readable)} stretches of "
                "text, each translated on its own: an n-best list needs one"
            )
        (k,) = readable
        ids = parts[k].ids
        assert ids is not None
        out: list[tuple[str, float]] = []
        for h in self.translate_ids([ids], cfg)[0]:
            texts = [p.text for p in parts]
            texts[k] = self._written(parts[k], h, fix_numbers)
            line = self._line(zip(parts, texts, strict=True))
            if all(line != seen for seen, _ in out):  # the repairs can make two alike
                out.append((line, h.score))
        return out

    def translate_scored(
        self,
        sentences: Sequence[str],
        *,
        beam: int = 4,
        n_best: int = 1,
        length_penalty: float = 1.0,
        number_coverage: float = NUMBER_COVERAGE,
        punctuation_coverage: float = PUNCTUATION_COVERAGE,
        attention_coverage: float = ATTENTION_COVERAGE,
        word_penalty: float = WORD_PENALTY,
        batch_size: int = 64,
        fix_numbers: bool = True,
    ) -> list[list[ScoredTranslation]]:
        """The ``n_best`` candidates of each sentence, best first, with their confidence.

        Used by the service, which has already cut its input into sentences and wants each
        one's score. A blank sentence gives ``[ScoredTranslation("", 0.0, 0.0, ())]``. A
        sentence too long for the model, or cut by pictographs or tags into several stretches
        of text, is translated in pieces (the input policy) and gets one candidate: the
        pieces' best translations joined, their log-probs summed.
        Candidates are ranked by beam search's score (with the number, punctuation and
        attention coverage and the word check), so a candidate that owes a digit or invents a
        word can come after one with a lower ``confidence``.
        """
        cfg = decode_config(
            max(beam, n_best),
            False,
            1.0,
            0,
            1.0,
            None,
            length_penalty,
            number_coverage,
            n_best,
            word_penalty=word_penalty,
            punctuation_coverage=punctuation_coverage,
            attention_coverage=attention_coverage,
        )
        out: list[list[ScoredTranslation]] = []
        for parts in self._decode_parts(sentences, cfg, batch_size):
            if not parts:
                out.append([ScoredTranslation("", 0.0, 0.0, ())])
                continue
            if sum(h is not None for _, h in parts) > 1:  # pieces: the best of each joined
                parts = [(part, None if h is None else h[:1]) for part, h in parts]
            ranks = max((len(h) for _, h in parts if h is not None), default=1)
            cands = []
            for rank in range(ranks):
                texts: list[tuple[_Part, str]] = []
                log_prob, n_tokens, ids, n_pieces, read = 0.0, 0, [], 0, ""
                for part, h in parts:
                    if h is None:  # carried unchanged: no tokens, no score
                        texts.append((part, part.text))
                        continue
                    read = part.text
                    texts.append((part, self._written(part, h[rank], fix_numbers)))
                    log_prob += h[rank].log_prob
                    n_tokens += len(h[rank].tokens) + 1  # + <eos>
                    ids.extend(h[rank].tokens)
                    n_pieces += 1
                confidence = log_prob / n_tokens if n_tokens else 0.0
                cands.append(
                    ScoredTranslation(
                        self._line(texts),
                        confidence,
                        log_prob,
                        tuple(ids),
                        n_pieces,
                        read if n_pieces == 1 else "",
                    )
                )
            out.append(cands)
        return out

    # ------------------------------------------------------------------ attention
    def attention(
        self,
        src: str,
        tgt: str | None = None,
        *,
        beam: int = 4,
        tgt_ids: Sequence[int] | None = None,
    ) -> AttentionMaps:
        """Every attention map of every layer and head for ``src`` → ``tgt``.

        With ``tgt`` None the sentence is translated first (beam search), then the translation
        is teacher-forced through the model with the reference kernel, which returns the maps;
        given a ``tgt`` (a reference translation) that one is teacher-forced instead. Given
        ``tgt_ids`` (the model's own output for one piece, e.g. :attr:`ScoredTranslation.ids`),
        exactly those tokens are replayed: no second search, no re-tokenization of the text.
        Translated here, a sentence is read as :meth:`translate` reads it: pictographs around
        it left out, capitals read in sentence case (the maps show the model's own tokens).
        """
        from attenzione.explain import collect_attention

        if not src.strip():
            raise ValueError("the sentence to show attention for is empty")
        if tgt is None and tgt_ids is None:
            # what translate() would have the model read: without the pictographs carried
            # around it, in sentence case if it is in capitals (when that is one stretch)
            readable = [p.text for p in self._parts(src) if p.ids is not None]
            src = readable[0] if len(readable) == 1 else src
        # translate() would split a longer line; one map cannot show that, and cutting it
        # would show an input (without <eos>) the model never sees. Its names are read with
        # base letters, as translate() reads them (_fold)
        folded, swaps = self._fold(src)
        src_ids = self._read_at_once(folded, "show a shorter sentence")
        teacher_forced = tgt is not None
        if tgt_ids is not None:
            tgt_ids = list(tgt_ids)
        elif tgt is None:
            cfg = decode_config(beam, False, 1.0, 0, 1.0, None, 1.0)
            tgt_ids = self.translate_ids([src_ids], cfg)[0][0].tokens
        else:
            tgt_ids = self.tgt_tokenizer.encode(normalize(tgt))
        translation = self.tgt_tokenizer.decode(tgt_ids)
        if not teacher_forced:
            translation = _unfolded(translation, swaps)
        cfg_m = self.model.config
        device = next(self.model.parameters()).device
        src_t = torch.tensor([src_ids], dtype=torch.long, device=device)  # (1,S)
        tgt_t = torch.tensor([[cfg_m.bos_id, *tgt_ids]], dtype=torch.long, device=device)  # (1,T)
        src_tokens = [self.src_tokenizer.id_to_token(i) for i in src_ids]
        pieces = [self.tgt_tokenizer.id_to_token(i) for i in tgt_ids]
        eos = self.tgt_tokenizer.id_to_token(cfg_m.eos_id)
        bos = self.tgt_tokenizer.id_to_token(cfg_m.bos_id)
        return collect_attention(
            self.model,
            src_t,
            tgt_t,
            src_tokens=src_tokens,
            tgt_tokens=[bos, *pieces],
            out_tokens=[*pieces, eos],
            source=src.strip(),
            translation=translation,
            teacher_forced=teacher_forced,
        )


def decode_config(
    beam: int,
    sample: bool,
    temperature: float,
    top_k: int,
    top_p: float,
    seed: int | None,
    length_penalty: float,
    number_coverage: float = NUMBER_COVERAGE,
    n_best: int = 1,
    *,
    word_penalty: float = WORD_PENALTY,
    punctuation_coverage: float = PUNCTUATION_COVERAGE,
    attention_coverage: float = ATTENTION_COVERAGE,
) -> DecodeConfig:
    """The decoding settings the options of :meth:`Translator.translate` (and of ``attenzione
    translate``) describe: sampling, greedy (beam 1) or beam search (``n_best`` candidates)."""
    # Sampling options are checked even when sampling is off: a bad value is a mistake either
    # way, and silently ignoring it would hide it.
    sampling = DecodeConfig(
        method="sample",
        temperature=temperature,
        top_k=top_k,
        top_p=top_p,
        seed=seed,
        number_coverage=number_coverage,
        word_penalty=word_penalty,
        punctuation_coverage=punctuation_coverage,
        attention_coverage=attention_coverage,
    )
    if sample:
        return sampling
    if beam < 1:
        raise ValueError(f"beam must be >= 1, got {beam}")
    if beam == 1 and n_best == 1:
        return DecodeConfig(
            method="greedy",
            number_coverage=number_coverage,
            word_penalty=word_penalty,
            punctuation_coverage=punctuation_coverage,
            attention_coverage=attention_coverage,
        )
    return DecodeConfig(
        method="beam",
        beam_size=beam,
        n_best=n_best,
        length_penalty=length_penalty,
        number_coverage=number_coverage,
        word_penalty=word_penalty,
        punctuation_coverage=punctuation_coverage,
        attention_coverage=attention_coverage,
    )
