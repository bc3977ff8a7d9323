"""Marian's tokenizer: the one OPUS-MT models were trained with, read without transformers.

A Hugging Face Marian directory (every Helsinki-NLP ``opus-mt-*`` checkpoint) splits text with
two SentencePiece models, ``source.spm`` and ``target.spm``, but numbers the pieces with a
third file, ``vocab.json``: one *joint* table, piece → id, shared by encoder and decoder. The
ids are that table's, never SentencePiece's own (``</s>`` is 0, ``<unk>`` 1 and ``<pad>`` the
last id in OPUS-MT's; all are read from the files, none assumed). So encoding is text →
SentencePiece *pieces* (strings) → ``vocab.json`` ids, and a piece the table lacks is
``<unk>`` even when its SentencePiece model knows it: the two were built apart.

:class:`MarianVocabTokenizer` reproduces transformers' ``MarianTokenizer`` (checked against
5.x in ``tests/test_marian_tokenizer.py``) step by step, because a model's outputs are only
OPUS-MT's if its inputs are the same ids:

* text is first cut at the added tokens (``</s>``, ``<unk>``, ``<pad>`` and any others the
  directory declares): written out, each is its own id, never spelled in pieces;
* a piece of text that begins with a language code, ``>>ita<<`` (how a multilingual model is
  told the target language), keeps the code whole as one token;
* no normalisation besides the SentencePiece model's own (transformers builds a Moses
  punctuation normaliser for Marian but never calls it while encoding);
* decoding skips the special ids and joins the remaining pieces with this side's
  SentencePiece model.

``encode`` adds no ``</s>``, as every tokenizer here (the translator appends ``eos_id``).
Marian has no ``<bos>``: its decoder starts from ``<pad>`` (:attr:`decoder_start_id`, the
model config's ``decoder_start_id``). ``bos_id`` is then only a name the model config needs
distinct from ``pad_id`` and ``eos_id``: it is ``unk_id``, which nothing starts from.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from attenzione.data.jsonfile import member, read_json, read_json_object
from attenzione.data.tokenizer_base import CONFIG_NAME, WORD_START, Tokenizer, named_file

SIDES = ("source", "target")
SPM_FILES = {"source": "source.spm", "target": "target.spm"}
VOCAB_FILE, TARGET_VOCAB_FILE = "vocab.json", "target_vocab.json"
HF_CONFIG, HF_SPECIALS = "tokenizer_config.json", "special_tokens_map.json"
# transformers' named special tokens, in its order (the order missing ones get ids in), and
# Marian's defaults: no <bos>, the decoder starts from <pad>
NAMED = ("bos_token", "eos_token", "unk_token", "sep_token", "pad_token", "cls_token", "mask_token")
DEFAULTS = {"eos_token": "</s>", "unk_token": "<unk>", "pad_token": "<pad>"}


@dataclass(frozen=True)
class AddedToken:
    """A token the text is cut at before SentencePiece sees it (transformers' AddedToken).

    ``special`` ones are skipped by :meth:`MarianVocabTokenizer.decode`; ``lstrip``/``rstrip``
    swallow the spaces on that side of the token when it is written in the text."""

    content: str
    id: int
    special: bool = True
    lstrip: bool = False
    rstrip: bool = False


#: a multilingual OPUS-MT model's language token, as its vocabulary writes it
LANGUAGE_TOKEN = re.compile(r">>[A-Za-z_]{2,16}<<")


def language_code(text: str) -> tuple[list[str], str]:
    """``(">>ita<<",), " rest"`` for a text that begins with a language code: from its
    leading ``>>`` to the first ``<<`` after (transformers' rule, unknown codes included)."""
    if text.startswith(">>") and (end := text.find("<<")) != -1:
        return [text[: end + 2]], text[end + 2 :]
    return [], text


class MarianVocabTokenizer(Tokenizer):
    """One side (``"source"`` or ``"target"``) of a Marian tokenizer: its SentencePiece model
    and the joint ``vocab`` (piece → id); ``added`` are the tokens cut out of the text first.

    ``eos_token``/``unk_token``/``pad_token`` name the special pieces; their ids are the
    vocabulary's. ``clean_up_spaces`` is transformers' ``clean_up_tokenization_spaces``
    (glue " ." and " 's" back: off unless the directory turned it on).
    """

    def __init__(
        self,
        spm_proto: bytes,
        vocab: Mapping[str, int],
        *,
        side: str = "source",
        added: Sequence[AddedToken] = (),
        eos_token: str = "</s>",
        unk_token: str = "<unk>",
        pad_token: str = "<pad>",
        clean_up_spaces: bool = False,
    ) -> None:
        import sentencepiece as spm

        if side not in SIDES:
            raise ValueError(f"side must be 'source' or 'target', not {side!r}")
        self.side = side
        self.proto = spm_proto
        if not spm_proto:  # sentencepiece takes b"" for a model of no pieces
            raise RuntimeError("the file is empty")
        self.sp = spm.SentencePieceProcessor(model_proto=spm_proto)
        self.sp_size = int(self.sp.get_piece_size())
        if self.sp_size == 0:
            raise RuntimeError("it holds no pieces")
        self.vocab = _checked_vocab(vocab)
        self.added = tuple(_checked_added(t) for t in added)
        self.eos_token, self.unk_token, self.pad_token = eos_token, unk_token, pad_token
        self.clean_up_spaces = bool(clean_up_spaces)
        # id → piece: the table's, then the added tokens' (transformers looks them up first)
        self._pieces = {i: p for p, i in self.vocab.items()}
        self._added_ids = {t.content: t.id for t in self.added}
        self._pieces.update({t.id: t.content for t in self.added})
        if unk_token not in self.vocab:  # every unknown piece is its id: transformers' rule
            raise ValueError(f"the unknown token {unk_token!r} is not in the vocabulary")
        for name, token in (("eos", eos_token), ("pad", pad_token)):
            if token not in self.vocab and token not in self._added_ids:
                raise ValueError(f"the {name} token {token!r} is not in the vocabulary")
        self.eos_id = self.token_to_id(eos_token)
        self.unk_id = self.token_to_id(unk_token)
        self.pad_id = self.token_to_id(pad_token)
        self.decoder_start_id = self.pad_id  # Marian's decoder reads <pad> first
        self.bos_id = self.unk_id  # no <bos>: a name distinct from pad and eos (see above)
        self._special_tokens = {t.content for t in self.added if t.special}
        self._special_tokens |= {eos_token, unk_token, pad_token}
        self._special_ids = {self.token_to_id(t) for t in self._special_tokens}
        # the added tokens as one pattern, longest first: the leftmost, longest match wins
        contents = sorted(self._added_ids, key=len, reverse=True)
        self._cut = re.compile("|".join(map(re.escape, contents))) if contents else None
        self._strip = {t.content: (t.lstrip, t.rstrip) for t in self.added}
        self._size = max(self._pieces) + 1
        self._tags: tuple[str, ...] = (
            tuple(sorted(p for p in self.vocab if LANGUAGE_TOKEN.fullmatch(p)))
            if side == "source"
            else ()
        )

    # ------------------------------------------------------------------ reading a directory
    @classmethod
    def from_hf_dir(cls, path: str | Path, side: str = "source") -> MarianVocabTokenizer:
        """One side of the tokenizer in a Hugging Face Marian directory: ``source.spm`` or
        ``target.spm``, ``vocab.json`` (``target_vocab.json`` for the target side of a model
        with ``separate_vocabs``), and the special tokens ``tokenizer_config.json`` (or the
        older ``special_tokens_map.json``) declares."""
        d = Path(path)
        if side not in SIDES:
            raise ValueError(f"side must be 'source' or 'target', not {side!r}")
        # every file through member(): a link that leads out of the directory is refused
        config_path = member(d, HF_CONFIG)
        config = read_json_object(config_path) if config_path.is_file() else {}
        specials_path = member(d, HF_SPECIALS)
        if "added_tokens_decoder" not in config and specials_path.is_file():
            specials = read_json(specials_path)  # older directories: the names only
            if isinstance(specials, dict):
                config = {**config, **specials}
                config_path = specials_path if not config_path.is_file() else config_path
        separate = bool(config.get("separate_vocabs", False)) and side == "target"
        vocab_path = member(d, TARGET_VOCAB_FILE if separate else VOCAB_FILE)
        spm_path = member(d, SPM_FILES[side])
        for needed in (vocab_path, spm_path):
            if not needed.is_file():
                raise FileNotFoundError(f"{needed} not found: not a Marian tokenizer directory")
        raw = read_json(vocab_path)  # each file's errors name it
        try:
            vocab = dict(_checked_vocab(raw))
        except ValueError as exc:
            raise ValueError(f"{vocab_path}: {exc}") from None
        try:
            names, added = _specials(config, vocab)
        except ValueError as exc:
            raise ValueError(f"{config_path}: {exc}") from None
        try:
            tok = cls(
                spm_path.read_bytes(),
                vocab,
                side=side,
                added=added,
                clean_up_spaces=bool(config.get("clean_up_tokenization_spaces", False)),
                **names,
            )
        except ValueError as exc:
            raise ValueError(f"{d}: {exc}") from None
        except RuntimeError as exc:  # sentencepiece's answer to a damaged model
            raise ValueError(f"{spm_path} is not a SentencePiece model ({exc})") from None
        # the file that numbers the largest id, for the check that the ids fit a model
        in_vocab = max(raw.values()) == tok.vocab_size - 1 or not config_path.is_file()
        tok.origin = str(vocab_path if in_vocab else config_path)
        return tok

    # ------------------------------------------------------------------ the interface
    @property
    def vocab_size(self) -> int:
        """One more than the largest id (the embedding tables' height)."""
        return self._size

    @property
    def language_codes(self) -> list[str]:
        """The ``>>xx<<`` tokens of a multilingual model's vocabulary (empty for a pair)."""
        return [p for p in self.vocab if p.startswith(">>") and p.endswith("<<")]

    @property
    def tags(self) -> tuple[str, ...]:
        """The language tokens of a multilingual model's source vocabulary (``>>ita<<``): read
        before a text, they say which language to write (the corpus tags of
        :class:`~attenzione.translator.reading.SourceReader`, so ``--tag`` and an
        ``info.json``'s ``default_tag`` choose one)."""
        return self._tags

    def tag_id(self, name: str) -> int:
        """The id of language token ``name``; a ``ValueError`` naming a few there are."""
        if name not in self.tags:
            have = ", ".join(self.tags[:8]) if self.tags else "none"
            raise ValueError(f"unknown language token {name!r}: this model's are {have}")
        return self.vocab[name]

    def token_to_id(self, piece: str) -> int:
        """The id of ``piece``: an added token's, the table's, else ``unk_id``."""
        if piece in self._added_ids:
            return self._added_ids[piece]
        return self.vocab.get(piece, self.vocab[self.unk_token])

    def pieces(self, text: str) -> list[str]:
        """``text`` as the tokens transformers makes of it, before they become ids."""
        out: list[str] = []
        for chunk, is_added in self._chunks(text):
            if is_added:
                out.append(chunk)
            else:
                code, rest = language_code(chunk)
                out += code + self.sp.encode(rest, out_type=str)
        return out

    def encode(self, text: str) -> list[int]:
        return [self.token_to_id(p) for p in self.pieces(text)]

    def id_to_token(self, i: int) -> str:
        i = int(i)
        if i in self._pieces:
            return self._pieces[i]
        if 0 <= i < self.sp_size:  # transformers falls back to SentencePiece's own piece
            return str(self.sp.id_to_piece(i)) or self.unk_token
        return self.unk_token

    def decode(self, ids: Sequence[int]) -> str:
        """``ids`` as text: special ids skipped, the pieces joined by this side's model."""
        run: list[str] = []
        out = ""
        for i in ids:
            if int(i) in self._special_ids:
                continue
            piece = self.id_to_token(i)
            if piece in self._special_tokens:  # a special written by a non-special id
                out += str(self.sp.decode_pieces(run)) + piece + " "
                run = []
            else:
                run.append(piece)
        out += str(self.sp.decode_pieces(run))
        text = out.replace(WORD_START, " ").strip()
        return _clean_up(text) if self.clean_up_spaces else text

    def save(self, directory: str | Path) -> Path:
        """``tokenizer.json``, the SentencePiece model and the vocabulary: all a load needs."""
        d = Path(directory)
        d.mkdir(parents=True, exist_ok=True)
        model = SPM_FILES[self.side]
        (d / model).write_bytes(self.proto)
        text = json.dumps(self.vocab, ensure_ascii=False, indent=0)
        (d / VOCAB_FILE).write_text(text + "\n", encoding="utf-8")
        config = {
            "type": "marian",
            "side": self.side,
            "model": model,
            "vocab": VOCAB_FILE,
            "eos_token": self.eos_token,
            "unk_token": self.unk_token,
            "pad_token": self.pad_token,
            "added_tokens": [asdict(t) for t in self.added],
            "clean_up_tokenization_spaces": self.clean_up_spaces,
        }
        text = json.dumps(config, ensure_ascii=False, indent=1)
        (d / CONFIG_NAME).write_text(text + "\n", encoding="utf-8")
        return d

    # ------------------------------------------------------------------ helpers
    def _chunks(self, text: str) -> list[tuple[str, bool]]:
        """``text`` cut at the added tokens: (part, whether it is one), empty parts dropped,
        the spaces an added token strips taken off its neighbours."""
        if self._cut is None:
            return [(text, False)] if text else []
        parts: list[tuple[str, bool]] = []
        start = 0
        for m in self._cut.finditer(text):
            parts += [(text[start : m.start()], False), (m.group(), True)]
            start = m.end()
        parts.append((text[start:], False))
        for k, (part, is_added) in enumerate(parts):
            if not is_added:
                continue
            lstrip, rstrip = self._strip.get(part, (False, False))
            if rstrip and k + 1 < len(parts) and parts[k + 1][0]:
                parts[k + 1] = (parts[k + 1][0].lstrip(), False)
            if lstrip and k > 0 and parts[k - 1][0]:
                parts[k - 1] = (parts[k - 1][0].rstrip(), parts[k - 1][1])
        return [(p, a) for p, a in parts if p]


def load_marian(directory: Path, config: dict[str, Any], path: Path) -> MarianVocabTokenizer:
    """What :meth:`MarianVocabTokenizer.save` wrote into ``directory`` (its ``config`` read
    from ``path``): the files it names must lie inside the directory."""
    model = named_file(directory, config.get("model"), path)
    vocab_path = named_file(directory, config.get("vocab", VOCAB_FILE), path)
    raw = config.get("added_tokens", [])
    try:
        if not isinstance(raw, list) or not all(isinstance(t, dict) for t in raw):
            raise ValueError("'added_tokens' must be a list of objects")
        names_of = {"content", "id", "special", "lstrip", "rstrip"}
        for t in raw:
            if not {"content", "id"} <= set(t) <= names_of:
                raise ValueError(
                    f"an added token has the fields content, id, special, lstrip and rstrip, "
                    f"not {sorted(map(str, t))[:6]}"
                )
        added = [AddedToken(**t) for t in raw]
        names = {k: config.get(k, DEFAULTS[k]) for k in DEFAULTS}
        if not all(isinstance(v, str) for v in names.values()):
            raise ValueError(f"special tokens must be strings, not {names}")
        return MarianVocabTokenizer(
            model.read_bytes(),
            read_json(vocab_path),
            side=str(config.get("side", "source")),
            added=added,
            clean_up_spaces=bool(config.get("clean_up_tokenization_spaces", False)),
            **names,
        )
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{path}: {exc}") from None
    except RuntimeError as exc:
        raise ValueError(f"{model} is not a SentencePiece model ({exc})") from None


def _specials(
    config: Mapping[str, Any], vocab: dict[str, int]
) -> tuple[dict[str, str], list[AddedToken]]:
    """Marian's special token names and the added tokens, as transformers resolves them from
    a ``tokenizer_config.json``: the saved ``added_tokens_decoder`` first, then every special
    token not there yet, at its vocabulary id or, missing, appended after the last (``vocab``
    grows). ``<unk>`` must be in the vocabulary (transformers refuses otherwise)."""
    values = {k: config.get(k, DEFAULTS.get(k)) for k in NAMED}
    named = {k: _content(v, k) for k, v in values.items() if v is not None}
    extra_key = "extra_special_tokens"
    key = extra_key if config.get(extra_key) else "additional_special_tokens"
    raw_extra = config.get(key) or []
    if isinstance(raw_extra, dict):  # transformers 5's named extra tokens: {name: token}
        raw_extra = list(raw_extra.values())
    if not isinstance(raw_extra, list):  # a string would be read as its characters
        raise ValueError(f"{key} must be a list of tokens, not {type(raw_extra).__name__}")
    extra = [_content(t, key, empty=False) for t in raw_extra]
    if named.get("unk_token") not in vocab:
        raise ValueError(f"the unknown token {named.get('unk_token')!r} is not in the vocabulary")
    added: dict[str, AddedToken] = {}
    saved = config.get("added_tokens_decoder") or {}
    if not isinstance(saved, dict):
        raise ValueError("'added_tokens_decoder' must be an object of id → token")
    for number, token in saved.items():
        if not (isinstance(number, str) and number.isascii() and number.isdecimal()):
            raise ValueError(f"added_tokens_decoder: {str(number)[:30]!r} is not an id")
        if not isinstance(token, dict) or token.get("single_word"):
            raise ValueError(f"added_tokens_decoder: the token of id {number} is not supported")
        content = _content(token, "added_tokens_decoder", empty=False)
        special = bool(token.get("special", False))
        lstrip, rstrip = bool(token.get("lstrip")), bool(token.get("rstrip"))
        added[content] = AddedToken(content, int(number), special, lstrip, rstrip)
    size = len({**vocab, **{t.content: t.id for t in added.values()}})
    for token in dict.fromkeys([*named.values(), *extra]):
        if token in added or not token:
            continue
        if token not in vocab:
            vocab[token] = size
            size += 1
        added[token] = AddedToken(token, vocab[token])
    names = {k: named[k] for k in DEFAULTS if k in named}
    return names, list(added.values())


def _content(value: object, where: str, *, empty: bool = True) -> str:
    """A token written as a string or as transformers' object (``{"content": ...}``);
    ``empty=False``: the empty string is refused too (the text would be cut everywhere)."""
    if isinstance(value, dict):
        value = value.get("content")
    if not isinstance(value, str):
        raise ValueError(f"{where}: a token must be a string, not {type(value).__name__}")
    if not value and not empty:
        raise ValueError(f"{where}: a token is empty (the text would be cut at every character)")
    return value


def _checked_added(token: AddedToken) -> AddedToken:
    """``token`` if its content is a non-empty string, its id an int >= 0 and its flags
    booleans: an empty token would cut the text at every character, silently."""
    if not isinstance(token.content, str) or not token.content:
        raise ValueError(
            f"an added token is empty or not a string (id {token.id!r}): the text would be cut "
            "at every character"
        )
    if isinstance(token.id, bool) or not isinstance(token.id, int) or token.id < 0:
        raise ValueError(f"the added token {token.content[:30]!r} has id {token.id!r}, not an id")
    flags = (token.special, token.lstrip, token.rstrip)
    if not all(isinstance(f, bool) for f in flags):
        raise ValueError(f"the added token {token.content[:30]!r} has flags that are not booleans")
    return token


def _checked_vocab(vocab: object) -> dict[str, int]:
    if not isinstance(vocab, Mapping) or not vocab:
        raise ValueError("the vocabulary must be a non-empty JSON object of piece → id")
    bad = [
        (p, i)
        for p, i in vocab.items()
        if not isinstance(p, str) or isinstance(i, bool) or not isinstance(i, int) or i < 0
    ]
    if bad:
        raise ValueError(f"the vocabulary maps pieces to ids >= 0, not {bad[:3]}")
    return dict(vocab)


def _clean_up(text: str) -> str:
    """transformers' ``clean_up_tokenization``: English spacing around punctuation undone."""
    for spaced, glued in (
        (" .", "."),
        (" ?", "?"),
        (" !", "!"),
        (" ,", ","),
        (" ' ", "'"),
        (" n't", "n't"),
        (" 'm", "'m"),
        (" 's", "'s"),
        (" 've", "'ve"),
        (" 're", "'re"),
    ):
        text = text.replace(spaced, glued)
    return text
