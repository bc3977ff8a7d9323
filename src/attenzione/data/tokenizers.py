"""Tokenizers behind one interface: word-level (for GloVe) and SentencePiece subwords, and
:func:`load_tokenizer`, which reads any kind a directory was saved as.

The interface, the four special ids and the directory's layout every kind shares are
:mod:`attenzione.data.tokenizer_base`'s (re-exported here, where the package has always
imported them from). A tokenizer saves itself into a directory (``tokenizer.json`` plus its
files) that travels with every model, so text is split at translation time exactly as it was
in training.
"""

from __future__ import annotations

import io
import json
import math
import random
import re
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from functools import cached_property
from pathlib import Path
from typing import Any

from attenzione.data.jsonfile import read_json_object
from attenzione.data.marian_tokenizer import load_marian
from attenzione.data.tokenizer_base import (
    BOS_ID,
    CONFIG_NAME,
    EOS_ID,
    PAD_ID,
    SPECIALS,
    UNK_ID,
    Tokenizer,
    named_file,
)
from attenzione.data.tokenizer_base import WORD_START as WORD_START

_BYTE_PIECE = re.compile(r"<0x[0-9A-F]{2}>")
# how many of a text's best segmentations subword sampling draws from (Kudo 2018's l)
SAMPLE_FROM = 64


def is_byte_piece(piece: str) -> bool:
    """Whether ``piece`` is one of byte fallback's ``<0x00>``…``<0xFF>``."""
    return _BYTE_PIECE.fullmatch(piece) is not None


# ---------------------------------------------------------------------------- word level
# Words (letters/digits with inner hyphens), English clitics split GloVe-style ("do" "n't",
# "tom" "'s"), Italian elisions kept on the article ("l'" "architettura"), and any other
# non-space character as its own token.
_WORD_RE = re.compile(
    r"\w+(?=n't\b)"  # "do" of "don't"
    r"|n't\b|'(?:s|re|ve|ll|d|m)\b"  # English clitics, split off as GloVe does
    r"|\w+'(?!(?:s|re|ve|ll|d|m)\b)(?=\w)"  # Italian elision: "l'", "dell'", "dov'"
    r"|\w+(?:[-.]\w+)*"  # words, "e-mail", "2.5"
    r"|[^\w\s]",  # any other symbol on its own
    re.IGNORECASE,
)
_NO_SPACE_BEFORE = set(".,!?;:)]}%…»") | {"n't", "'s", "'re", "'ve", "'ll", "'d", "'m"}
_NO_SPACE_AFTER = set("([{«¿¡")


def _split_words(text: str) -> list[str]:
    tokens: list[str] = []
    for m in _WORD_RE.finditer(text):
        tokens.append(m.group(0))
    return tokens


class WordTokenizer(Tokenizer):
    """Whitespace + punctuation splitting with a frequency-ordered vocabulary."""

    def __init__(self, vocab: Sequence[str], *, lowercase: bool = True) -> None:
        if tuple(vocab[:4]) != SPECIALS:
            raise ValueError(f"a word vocabulary must start with {SPECIALS}")
        self.vocab = list(vocab)
        self.index = {w: i for i, w in enumerate(self.vocab)}
        self.lowercase = lowercase

    @classmethod
    def train(
        cls,
        texts: Iterable[str],
        *,
        min_count: int = 1,
        max_size: int | None = None,
        lowercase: bool = True,
        extra_words: Iterable[str] | None = None,
    ) -> WordTokenizer:
        counts: Counter[str] = Counter()
        for text in texts:
            counts.update(_split_words(text.lower() if lowercase else text))
        words = [
            w for w, c in sorted(counts.items(), key=lambda x: (-x[1], x[0])) if c >= min_count
        ]
        words = [w for w in words if w not in SPECIALS]
        if max_size is not None:
            words = words[: max(0, max_size - len(SPECIALS))]
        known = set(words)
        for w in extra_words or ():
            if w not in known and w not in SPECIALS:
                words.append(w)
                known.add(w)
        return cls([*SPECIALS, *words], lowercase=lowercase)

    @property
    def vocab_size(self) -> int:
        return len(self.vocab)

    def split(self, text: str) -> list[str]:
        return _split_words(text.lower() if self.lowercase else text)

    def encode(self, text: str) -> list[int]:
        return [self.index.get(w, self.unk_id) for w in self.split(text)]

    def id_to_token(self, i: int) -> str:
        return self.vocab[i] if 0 <= i < len(self.vocab) else SPECIALS[self.unk_id]

    def decode(self, ids: Sequence[int]) -> str:
        out = ""
        prev = ""
        skip = (self.pad_id, self.bos_id, self.eos_id)
        for i in ids:
            if i in skip:
                continue
            tok = self.id_to_token(i)
            glue = (
                not out
                or tok in _NO_SPACE_BEFORE
                or tok.lower() in _NO_SPACE_BEFORE
                or prev in _NO_SPACE_AFTER
                or prev.endswith("'")
            )
            out += tok if glue else " " + tok
            prev = tok
        return out

    def save(self, directory: str | Path) -> Path:
        d = Path(directory)
        d.mkdir(parents=True, exist_ok=True)
        config = {"type": "word", "lowercase": self.lowercase, "vocab": self.vocab}
        (d / CONFIG_NAME).write_text(
            json.dumps(config, ensure_ascii=False) + "\n", encoding="utf-8"
        )
        return d


# ---------------------------------------------------------------------------- SentencePiece
# A corpus tag: a name of letters, digits and hyphens ("lc", "ui", "prose-2"), never a number
TAG_NAME = re.compile(r"[A-Za-z][A-Za-z0-9-]{0,31}")


def tag_piece(name: str) -> str:
    """How a corpus tag is written as a token ("lc" → ``<tag:lc>``)."""
    return f"<tag:{name}>"


class SentencePieceTokenizer(Tokenizer):
    """Subwords from the ``sentencepiece`` library (unigram or BPE), specials at ids 0–3.

    ``tags``: corpus tags (:meth:`with_tags`), reserved tokens after SentencePiece's pieces
    (ids ``sp_size``, ``sp_size + 1``, …): a run puts one before the source of each pair of a
    tagged corpus (``attenzione train --data PATH:WEIGHT:TAG``) and translation before its
    input when asked to (``--tag``). No text encodes to one, and decoding writes none."""

    def __init__(self, model_proto: bytes, tags: Sequence[str] = ()) -> None:
        import sentencepiece as spm

        self.proto = model_proto
        self.sp = spm.SentencePieceProcessor(model_proto=model_proto)
        got = [self.sp.id_to_piece(i) for i in range(4)]
        if got != list(SPECIALS):
            raise ValueError(f"SentencePiece model has specials {got}, expected {list(SPECIALS)}")
        self.sp_size = int(self.sp.get_piece_size())
        bad = [t for t in tags if not isinstance(t, str) or not TAG_NAME.fullmatch(t)]
        if bad or len(set(tags)) != len(tags):
            raise ValueError(
                f"corpus tags must be distinct names of letters, digits and hyphens starting "
                f"with a letter, not {bad or list(tags)}"
            )
        self.tags = tuple(tags)

    def with_tags(self, tags: Sequence[str]) -> SentencePieceTokenizer:
        """This vocabulary with the corpus ``tags`` it lacks added after its own (the ids of
        the pieces and of the tags it has stay as they are)."""
        new = [t for t in dict.fromkeys(tags) if t not in self.tags]
        return self if not new else SentencePieceTokenizer(self.proto, (*self.tags, *new))

    def tag_id(self, name: str) -> int:
        """The id of corpus tag ``name``; a ``ValueError`` naming the tags there are."""
        if name not in self.tags:
            have = ", ".join(self.tags) if self.tags else "none"
            raise ValueError(f"unknown corpus tag {name!r}: this model's tags are {have}")
        return self.sp_size + self.tags.index(name)

    @classmethod
    def train(
        cls,
        texts: Iterable[str],
        *,
        vocab_size: int,
        model_type: str = "unigram",
        character_coverage: float = 1.0,
        seed: int = 0,
        input_sentence_size: int = 0,
        num_threads: int = 2,
        split_digits: bool = False,
        byte_fallback: bool = False,
        normalization: str = "nmt_nfkc",
    ) -> SentencePieceTokenizer:
        """Train on ``texts``.

        ``split_digits`` makes every digit its own piece, so a number is spelled digit by digit
        and the model learns to copy digits instead of memorising ``2017`` and ``20`` ``17`` as
        unrelated pieces; ``byte_fallback`` spells any character the vocabulary lacks as UTF-8
        byte pieces, so no input ever becomes ``<unk>`` (an emoji or a rare script survives the
        round trip). ``normalization`` is SentencePiece's rule: its default ``nmt_nfkc``
        rewrites text (``x²`` → ``x2``, ``…`` → ``...``), ``identity`` keeps every character as
        given, which with byte fallback means every input decodes back to itself.
        """
        import sentencepiece as spm

        if model_type not in ("unigram", "bpe"):
            raise ValueError(f"model_type must be 'unigram' or 'bpe', got {model_type!r}")
        buffer = io.BytesIO()
        try:
            spm.SentencePieceTrainer.train(
                sentence_iterator=iter(list(texts)),
                model_writer=buffer,
                vocab_size=vocab_size,
                model_type=model_type,
                character_coverage=character_coverage,
                pad_id=PAD_ID,
                bos_id=BOS_ID,
                eos_id=EOS_ID,
                unk_id=UNK_ID,
                pad_piece="<pad>",
                bos_piece="<bos>",
                eos_piece="<eos>",
                unk_piece="<unk>",
                input_sentence_size=input_sentence_size,
                shuffle_input_sentence=True,
                num_threads=num_threads,
                split_digits=split_digits,
                byte_fallback=byte_fallback,
                normalization_rule_name=normalization,
                minloglevel=2,
            )
        except RuntimeError as exc:
            raise ValueError(
                f"SentencePiece could not train (vocab_size={vocab_size}): {exc}"
            ) from None
        return cls(buffer.getvalue())

    @property
    def vocab_size(self) -> int:
        return self.sp_size + len(self.tags)

    def encode(self, text: str) -> list[int]:
        return list(self.sp.encode(text, out_type=int))

    def encode_batch(self, texts: Sequence[str]) -> list[list[int]]:
        return [list(x) for x in self.sp.encode(list(texts), out_type=int)]

    def sample_batch(self, texts: Sequence[str], *, alpha: float, seed: int) -> list[list[int]]:
        """Each text segmented at random, drawn from its ``SAMPLE_FROM`` best segmentations
        with probability proportional to the segmentation's likelihood to the power
        ``alpha`` (Kudo 2018's l-best sampling): 1 stays close to the best segmentation,
        smaller values spread towards shorter pieces ("▁research" "ers" for
        "▁researchers"). The n-best lists are deterministic and the draw is our own seeded
        generator's, so the same ``seed`` gives the same segmentations in any process (a
        resumed run sees what an uninterrupted one would have; SentencePiece's own sampler
        draws differently in every process)."""
        if not 0 < alpha <= 1:
            raise ValueError(f"alpha must be in (0, 1], got {alpha}")
        rng = random.Random(seed)
        score = self._piece_scores
        out: list[list[int]] = []
        for text in texts:
            try:
                options = self.sp.nbest_encode_as_ids(text, SAMPLE_FROM)
            except RuntimeError:  # a BPE model has no n-best segmentations
                raise ValueError(
                    "subword sampling needs a unigram SentencePiece model, not a BPE one"
                ) from None
            if len(options) < 2:
                out.append(list(options[0]) if options else [])
                continue
            logp = [alpha * sum(score[i] for i in ids) for ids in options]
            top = max(logp)
            weights = [math.exp(x - top) for x in logp]
            out.append(list(rng.choices(options, weights=weights)[0]))
        return out

    @cached_property
    def _piece_scores(self) -> list[float]:
        """Each piece's log-probability in the unigram model."""
        return [float(self.sp.get_score(i)) for i in range(self.sp_size)]

    def decode(self, ids: Sequence[int]) -> str:
        skip = (self.pad_id, self.bos_id, self.eos_id)
        keep = [int(i) for i in ids if int(i) not in skip and int(i) < self.sp_size]
        return str(self.sp.decode(keep))

    def id_to_token(self, i: int) -> str:
        if self.sp_size <= int(i) < self.vocab_size:
            return tag_piece(self.tags[int(i) - self.sp_size])
        return str(self.sp.id_to_piece(int(i)))

    def save(self, directory: str | Path) -> Path:
        d = Path(directory)
        d.mkdir(parents=True, exist_ok=True)
        (d / "spm.model").write_bytes(self.proto)
        config: dict[str, object] = {"type": "sentencepiece", "model": "spm.model"}
        if self.tags:
            config["tags"] = list(self.tags)
        (d / CONFIG_NAME).write_text(json.dumps(config) + "\n")
        return d


def load_tokenizer(directory: str | Path) -> Tokenizer:
    """Load what :meth:`Tokenizer.save` wrote (JSON and the SentencePiece model, no pickle).

    The directory may come from anywhere (a downloaded model), so nothing in it is trusted: a
    file it names must be a plain name inside the directory (``../../etc/passwd`` is
    refused, as is a symlink leading out), and damaged JSON or model files are ``ValueError``s
    naming the file, never a parser's traceback.
    """
    tok = _load_tokenizer(Path(directory))
    tok.origin = str(directory)
    return tok


def _load_tokenizer(d: Path) -> Tokenizer:
    path = d / CONFIG_NAME
    if not path.is_file():
        raise FileNotFoundError(f"{path} not found: not a tokenizer directory")
    config = read_json_object(path)
    kind = config.get("type")
    loader = LOADERS.get(kind) if isinstance(kind, str) else None
    if loader is None:
        expected = ", ".join(map(repr, list(LOADERS)[:-1])) + f" or {list(LOADERS)[-1]!r}"
        raise ValueError(f"{path}: unknown tokenizer type {kind!r} (expected {expected})")
    return loader(d, config, path)


def _load_word(d: Path, config: dict[str, Any], path: Path) -> WordTokenizer:
    vocab = config.get("vocab")
    if not isinstance(vocab, list) or not all(isinstance(w, str) for w in vocab):
        raise ValueError(f"{path}: 'vocab' must be a list of strings")
    try:
        return WordTokenizer(vocab, lowercase=bool(config.get("lowercase", True)))
    except ValueError as exc:
        raise ValueError(f"{path}: {exc}") from None


def _load_sentencepiece(d: Path, config: dict[str, Any], path: Path) -> SentencePieceTokenizer:
    model = named_file(d, config.get("model", "spm.model"), path)
    tags = config.get("tags", [])
    if not isinstance(tags, list):
        raise ValueError(f"{path}: 'tags' must be a list of corpus tag names")
    try:
        return SentencePieceTokenizer(model.read_bytes(), tags)
    except ValueError as exc:
        raise ValueError(f"{model}: {exc}") from None
    except Exception as exc:  # sentencepiece raises RuntimeError/OSError for a bad proto
        raise ValueError(f"{model} is not a SentencePiece model ({exc})") from None


# tokenizer.json's "type" -> how a directory of that kind is read (directory, its config,
# the config's path): every kind the package knows, one loader each
LOADERS: dict[str, Callable[[Path, dict[str, Any], Path], Tokenizer]] = {
    "word": _load_word,
    "sentencepiece": _load_sentencepiece,
    "marian": load_marian,  # one side of an OPUS-MT model
}
