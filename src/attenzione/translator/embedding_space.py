"""The model's own embedding space: nearest pieces, analogies and similarities in its table.

``attenzione embeddings`` explores GloVe, the vectors a ``glove50`` model starts from; this
module explores what a trained model ended with — the rows of its embedding table, the
vectors it actually reads (before the √d_model scale and the positions are applied). A side
is one table: ``source`` (``model.src_embed``) or ``target`` (``model.tgt_embed``). They are
one and the same when the config shares them (``share_src_tgt_embeddings``, the shipped
models), and the target table is also the output layer's weight when it is tied
(``tie_embeddings``): :attr:`EmbeddingSpace.table` says which.

A query is a piece or a word:

* text that begins with SentencePiece's word mark ``▁`` names a piece exactly (``▁king``);
* anything else is a word, read by the side's tokenizer (as it is: no text step runs): one
  piece (``king`` → ``▁king``), or several (``kingdoms`` → ``▁king`` ``dom`` ``s``), whose
  rows are averaged — the answer lists the pieces it used. A word the tokenizer can only read with
  ``<unk>`` cannot be placed in the space and is refused in one line (a ``ValueError``).

Cosine similarity is computed in float64 from the model's fp32 rows, exactly as they are: a
table in another precision (a bf16 translator's, or a quantised one) is refused, since its
rows are not the model's numbers (an int8 translator keeps its embedding table in fp32:
dynamic quantisation only touches linear layers). The candidates are every row that is a
piece of the side's vocabulary, less the specials (``<pad>``, ``<bos>``, ``<eos>``,
``<unk>``, the decoder's start token, corpus tags) and the pieces of the query itself.

``analogy(a, b, c)`` is 3CosAdd (Mikolov et al. 2013), as the GloVe explorer computes it: the
pieces nearest to ê(a) − ê(b) + ê(c), each ê the unit vector of its row (or of its pieces'
mean), a, b and c's own pieces excluded. Unit vectors keep a frequent piece's long row from
outweighing the others.

Shapes: V the table's rows (the vocabulary), E its width (d_model, or the width of
pretrained vectors a learned projection maps to d_model).
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
import torch
from torch import Tensor

from attenzione.data.tokenizer_base import SPECIALS, WORD_START, Tokenizer
from attenzione.model.transformer import Transformer

SIDES = ("source", "target")
#: the longest query read (characters): a word, or a piece, not a paragraph
MAX_QUERY = 100
#: the most neighbours one call lists
MAX_K = 200


@dataclass(frozen=True)
class Query:
    """A word or piece as it was asked (``text``) and the pieces that stand for it: one
    piece's row, or the mean of several pieces' rows."""

    text: str
    pieces: tuple[str, ...]
    ids: tuple[int, ...]

    def to_dict(self) -> dict[str, Any]:
        return {
            "text": self.text,
            "pieces": [{"piece": p, "id": i} for p, i in zip(self.pieces, self.ids, strict=True)],
            "mean": len(self.ids) > 1,
        }


@dataclass(frozen=True)
class Neighbour:
    """One row of the table and its cosine similarity to the query's vector."""

    piece: str
    id: int
    cosine: float

    def to_dict(self) -> dict[str, Any]:
        return {"piece": self.piece, "id": self.id, "cosine": self.cosine}


@dataclass(frozen=True)
class Answer:
    """What :meth:`EmbeddingSpace.nearest`, :meth:`~EmbeddingSpace.analogy` and
    :meth:`~EmbeddingSpace.similarity` return: the queries as read, and the neighbours best
    first (``nearest``, ``analogy``) or the one cosine (``similarity``)."""

    kind: str
    table: Mapping[str, Any]
    queries: tuple[Query, ...]
    formula: str
    neighbours: tuple[Neighbour, ...] = ()
    cosine: float | None = None
    excluded: tuple[str, ...] = ()  # the query's own pieces, never listed

    def to_dict(self) -> dict[str, Any]:
        """The JSON of ``attenzione embeddings … --model --json`` and ``POST /embeddings``."""
        out: dict[str, Any] = {
            "kind": self.kind,
            "table": dict(self.table),
            "queries": [q.to_dict() for q in self.queries],
            "formula": self.formula,
        }
        if self.kind == "similarity":
            out["cosine"] = self.cosine
        else:
            out["k"] = len(self.neighbours)
            out["excluded"] = list(self.excluded)
            out["neighbours"] = [n.to_dict() for n in self.neighbours]
        return out


class EmbeddingSpace:
    """The rows of one embedding table with their pieces, for cosine neighbours.

    ``table``: (V,E) fp32, the model's own parameter; ``tokenizer``: the side's (its ids
    index the table's rows); ``special_ids``: rows that are no piece to list; ``info``: what
    :attr:`table` reports about the table (its side, language, sharing); ``like``: a space
    on the same table (the other side of a shared one), whose rows are reused rather than read
    again. Build one from a loaded translator with :func:`embedding_space`.
    """

    def __init__(
        self,
        table: Tensor,
        tokenizer: Tokenizer,
        *,
        special_ids: Iterable[int] = (),
        info: Mapping[str, Any] | None = None,
        like: EmbeddingSpace | None = None,
    ) -> None:
        if table.dim() != 2:
            raise ValueError(f"an embedding table is (V, E), not of shape {tuple(table.shape)}")
        if table.is_quantized or table.dtype != torch.float32:
            what = "quantised" if table.is_quantized else str(table.dtype).replace("torch.", "")
            raise ValueError(
                f"the embedding table is {what}, not the model's fp32 rows: load the model "
                "with precision fp32 to explore its embedding space"
            )
        self.tokenizer = tokenizer
        self._rows: np.ndarray  # (V,E) fp32
        self._unit: np.ndarray  # (V,E) float64, each row of length 1 (a zero row stays 0)
        self._table: Tensor = table
        if like is not None and like._table is table:  # one table, two sides: read it once
            self._rows, self._unit = like._rows, like._unit
        else:
            # a copy (V,E) fp32, then float64 from here on: the cosines are the fp32 rows' own
            # to float64's rounding
            self._rows = table.detach().to("cpu").numpy().copy()
            wide = self._rows.astype(np.float64)  # (V,E)
            norms = np.linalg.norm(wide, axis=1)  # (V,)
            self._unit = wide / np.where(norms == 0.0, 1.0, norms)[:, None]
        n_rows = len(self._rows)
        n_pieces = min(n_rows, tokenizer.vocab_size)
        # a row's piece (None past the tokenizer's vocabulary), and each piece's first row
        self.pieces: list[str | None] = [tokenizer.id_to_token(i) for i in range(n_pieces)]
        self.pieces += [None] * (n_rows - n_pieces)
        self._index: dict[str, int] = {}
        for i, piece in enumerate(self.pieces):
            if piece is not None:
                self._index.setdefault(piece, i)
        specials = {i for i in special_ids if 0 <= i < n_rows}
        specials |= {i for i, p in enumerate(self.pieces) if p is None or p in SPECIALS}
        self.special_ids = frozenset(specials)
        self.table: Mapping[str, Any] = {
            "rows": n_rows,
            "width": int(self._rows.shape[1]),
            "dtype": "float32",
            **(info or {}),
        }

    def __len__(self) -> int:
        return len(self._rows)

    # ------------------------------------------------------------------ reading a query
    def query(self, text: str) -> Query:
        """``text`` read as a piece (it begins with ``▁``) or a word (the tokenizer's pieces);
        a ``ValueError`` in one line when it cannot be placed in the space."""
        if not isinstance(text, str):
            raise ValueError(f"a word or piece is text, not {type(text).__name__}")
        word = text.strip()
        side = self.table.get("side", "this")
        if not word:
            raise ValueError("the word is empty")
        if len(word) > MAX_QUERY:
            raise ValueError(f"a word or piece of at most {MAX_QUERY} characters, not {len(word)}")
        if word in self._index and self._index[word] in self.special_ids:
            raise ValueError(f"{word!r} is a special piece, not a point of the embedding space")
        if word.startswith(WORD_START):
            if word not in self._index:
                raise ValueError(
                    f"{word!r} is not a piece of the {side} vocabulary (without the leading "
                    f"{WORD_START} it is read as a word)"
                )
            ids = [self._index[word]]
        else:
            ids = list(self.tokenizer.encode(word))
            if not ids:
                raise ValueError(f"{word!r} has no pieces in the {side} vocabulary")
            unknown = self.tokenizer.unk_id
            if any(i == unknown or not 0 <= i < len(self) for i in ids):
                raise ValueError(
                    f"{word!r} cannot be represented: the {side} tokenizer reads it with <unk> "
                    "(a character or word its vocabulary lacks)"
                )
            if any(i in self.special_ids for i in ids):
                raise ValueError(f"{word!r} is read as a special piece, not a point of the space")
        pieces = tuple(str(self.pieces[i]) for i in ids)
        return Query(word, pieces, tuple(ids))

    def vector(self, query: Query | str) -> np.ndarray:
        """The query's vector (E,) float64: its piece's row, or the mean of its pieces'."""
        q = self.query(query) if isinstance(query, str) else query
        vec: np.ndarray = self._rows[list(q.ids)].astype(np.float64).mean(axis=0)  # (E,)
        if not np.any(vec):
            raise ValueError(f"{q.text!r} has a zero vector: it points nowhere to compare")
        return vec

    # ------------------------------------------------------------------ the three questions
    def nearest(self, word: str, k: int = 10) -> Answer:
        """The ``k`` pieces whose rows have the highest cosine similarity with ``word``'s
        vector, best first (the query's own pieces and the specials excluded)."""
        q = self.query(word)
        found = self._nearest(self.vector(q), k, q.ids)
        return Answer(
            "nearest",
            self.table,
            (q,),
            "cos(e(word), e(p)) = e(word) · e(p) / (|e(word)| |e(p)|) for every piece p",
            found,
            excluded=_unique(q.pieces),
        )

    def analogy(self, a: str, b: str, c: str, k: int = 5) -> Answer:
        """The ``k`` pieces nearest to ê(a) − ê(b) + ê(c) (3CosAdd on unit vectors; king −
        man + woman ≈ queen), a, b and c's pieces excluded."""
        qs = (self.query(a), self.query(b), self.query(c))
        units = [v / np.linalg.norm(v) for v in (self.vector(q) for q in qs)]
        target = units[0] - units[1] + units[2]  # (E,)
        if not np.any(target):
            raise ValueError(f"{a} − {b} + {c} is the zero vector: it points nowhere")
        skip = tuple(i for q in qs for i in q.ids)
        found = self._nearest(target, k, skip)
        return Answer(
            "analogy",
            self.table,
            qs,
            "cos(ê(a) − ê(b) + ê(c), e(p)) for every piece p, ê(x) = e(x) / |e(x)|",
            found,
            excluded=_unique(p for q in qs for p in q.pieces),
        )

    def similarity(self, a: str, b: str) -> Answer:
        """The cosine similarity of ``a``'s and ``b``'s vectors."""
        qa, qb = self.query(a), self.query(b)
        va, vb = self.vector(qa), self.vector(qb)
        cos = float(np.clip(va @ vb / (np.linalg.norm(va) * np.linalg.norm(vb)), -1.0, 1.0))
        return Answer(
            "similarity",
            self.table,
            (qa, qb),
            "cos(e(a), e(b)) = e(a) · e(b) / (|e(a)| |e(b)|)",
            cosine=cos,
        )

    def _nearest(self, vec: np.ndarray, k: int, skip: Sequence[int]) -> tuple[Neighbour, ...]:
        """The ``k`` candidate rows of highest cosine with ``vec`` (E,), best first; ties in
        id order."""
        if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= MAX_K:
            raise ValueError(f"k must be 1..{MAX_K}, not {k!r}")
        cos = np.clip(self._unit @ (vec / np.linalg.norm(vec)), -1.0, 1.0)  # (V,)
        out = np.ones(len(cos), dtype=bool)
        out[list(self.special_ids)] = False
        out[list(skip)] = False
        candidates = np.flatnonzero(out)
        order = candidates[np.argsort(-cos[candidates], kind="stable")[:k]]
        return tuple(Neighbour(str(self.pieces[i]), int(i), float(cos[i])) for i in order)


def _unique(items: Iterable[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(items))


# ---------------------------------------------------------------------- from a translator
class Loaded(Protocol):
    """What this module reads of a :class:`~attenzione.translator.translator.Translator`
    (named here so that the translator's module, which calls this one, is not imported)."""

    @property
    def model(self) -> Transformer: ...
    @property
    def src_tokenizer(self) -> Tokenizer: ...
    @property
    def tgt_tokenizer(self) -> Tokenizer: ...
    @property
    def info(self) -> Mapping[str, Any]: ...
    @property
    def precision(self) -> str: ...


_SPACES: weakref.WeakKeyDictionary[Loaded, dict[str, EmbeddingSpace]] = weakref.WeakKeyDictionary()
_LOCK = threading.Lock()


def embedding_space(translator: Loaded, side: str = "source") -> EmbeddingSpace:
    """The embedding space of ``translator``'s ``side`` table (``source`` or ``target``),
    built once per translator (a translator is fixed once made, so is its table)."""
    if side not in SIDES:
        raise ValueError(f"side must be source or target, not {side!r}")
    with _LOCK:
        mine = _SPACES.setdefault(translator, {})
        if side not in mine:
            other = mine.get(SIDES[side == "source"])
            mine[side] = _build(translator, side, other)
        return mine[side]


def _build(translator: Loaded, side: str, other: EmbeddingSpace | None) -> EmbeddingSpace:
    model, cfg = translator.model, translator.model.config
    embed = model.src_embed if side == "source" else model.tgt_embed
    tokenizer = translator.src_tokenizer if side == "source" else translator.tgt_tokenizer
    shared = model.src_embed is model.tgt_embed
    tied = bool(cfg.tie_embeddings)
    language = translator.info.get(f"{side}_language")
    specials = {cfg.pad_id, cfg.bos_id, cfg.eos_id, cfg.unk_id, cfg.start_id}
    specials |= {tokenizer.pad_id, tokenizer.bos_id, tokenizer.eos_id, tokenizer.unk_id}
    tag_id = getattr(tokenizer, "tag_id", None)
    for tag in getattr(tokenizer, "tags", ()) or ():
        if callable(tag_id):
            specials.add(int(tag_id(tag)))
    if shared:
        about = "one table for the source and the target" + (
            ", and the output layer's weight (tied)" if tied else ""
        )
    elif side == "target" and tied:
        about = "the target's own table, also the output layer's weight (tied)"
    else:
        about = f"the {side}'s own table (not shared with the {SIDES[side == 'source']})"
    width = int(embed.weight.shape[1])
    if width != cfg.d_model:
        about += f"; a learned projection maps its {width} dimensions to d_model {cfg.d_model}"
    weight = embed.weight
    if translator.precision != "fp32" and weight.dtype == torch.float32:
        about += f" (fp32 in this {translator.precision} translator: its own rows)"
    info = {
        "side": side,
        "language": language if isinstance(language, str) else None,
        "shared": shared,
        "tied": tied and (shared or side == "target"),
        "about": about,
    }
    return EmbeddingSpace(weight, tokenizer, special_ids=specials, info=info, like=other)
