"""Parallel corpora: reading, normalising, cleaning and splitting by sentence.

Readers name the file and the 1-based line of any problem (``corpus.tsv:1234: …``), because a
corpus of 300k lines with one broken line is useless to debug otherwise. Splits are disjoint
*by sentence*: this corpus repeats an English sentence with several Italian variants, and a
line-level split would put "Run!"→"Corri!" in train and "Run!"→"Corra!" in dev.
"""

from __future__ import annotations

import gzip
import random
import re
import unicodedata
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from attenzione import atomic

Pair = tuple[str, str]
_WS = re.compile(r"\s+")
# Control characters (Unicode category Cc) but the tab and the line ends: NUL, BEL, ESC, DEL,
# the C1 controls. No corpus has them; a model reading one writes nonsense.
_CONTROLS = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]+")


def without_controls(text: str) -> str:
    """``text`` with each run of control characters (not tab, CR, LF) made one space — what
    every text read by a model goes through, whatever the text steps."""
    return _CONTROLS.sub(" ", text)


class CorpusError(ValueError):
    """A malformed corpus line: the message starts with ``path:line:``."""


def normalize(text: str) -> str:
    """NFC, typographic apostrophes → ', byte-order marks (U+FEFF) removed, whitespace runs →
    one space, stripped."""
    text = unicodedata.normalize("NFC", text).replace("\u2019", "'").replace("\u02bc", "'")
    text = text.replace("\ufeff", "")
    return _WS.sub(" ", text).strip()


def _open_bytes(path: Path) -> Any:
    if not path.exists():
        raise FileNotFoundError(f"corpus file {path} does not exist")
    if path.is_dir():
        raise IsADirectoryError(f"{path} is a directory, not a corpus file")
    return gzip.open(path, "rb") if path.suffix == ".gz" else open(path, "rb")


def _lines(path: Path) -> Iterator[tuple[int, str | None, str]]:
    """(line number, text or None if undecodable, problem) for every line of ``path``."""
    with _open_bytes(path) as f:
        for no, raw in enumerate(f, start=1):
            raw = raw.rstrip(b"\n").rstrip(b"\r")
            try:
                yield no, raw.decode("utf-8"), ""
            except UnicodeDecodeError as exc:
                yield no, None, f"undecodable UTF-8 bytes at column {exc.start + 1}"


def _record(stats: dict[str, Any] | None, message: str) -> None:
    if stats is not None:
        stats["skipped"] = stats.get("skipped", 0) + 1
        errors = stats.setdefault("first_errors", [])
        if len(errors) < 5:
            errors.append(message)


def read_pairs(
    path: str | Path,
    *,
    fmt: str = "auto",
    skip_bad: bool = False,
    stats: dict[str, Any] | None = None,
) -> list[Pair]:
    """Read ``English<TAB>Italian[<TAB>attribution]`` lines (gzip when the name ends in .gz).

    ``fmt``: ``"tsv"`` exactly 2 columns, ``"tatoeba"`` 2 or 3 (the third, the attribution, is
    ignored), ``"auto"`` the same as tatoeba. A bad line raises :class:`CorpusError` naming file
    and line, or with ``skip_bad`` is skipped and counted in ``stats["skipped"]``.
    """
    if fmt not in ("auto", "tsv", "tatoeba"):
        raise ValueError(f"fmt must be 'auto', 'tsv' or 'tatoeba', got {fmt!r}")
    allowed = (2,) if fmt == "tsv" else (2, 3)
    path = Path(path)
    pairs: list[Pair] = []
    for no, text, problem in _lines(path):
        if text is not None:
            cols = text.split("\t")
            if len(cols) not in allowed:
                want = " or ".join(map(str, allowed))
                problem = f"expected {want} tab-separated columns, found {len(cols)}"
            elif not cols[0].strip() or not cols[1].strip():
                problem = f"empty {'source' if not cols[0].strip() else 'target'} side"
        if problem:
            message = f"{path}:{no}: {problem}"
            if not skip_bad:
                raise CorpusError(message)
            _record(stats, message)
            continue
        assert text is not None
        cols = text.split("\t")
        pairs.append((cols[0], cols[1]))
    return pairs


def read_parallel(
    src_path: str | Path,
    tgt_path: str | Path,
    *,
    skip_bad: bool = False,
    stats: dict[str, Any] | None = None,
) -> list[Pair]:
    """Moses-style aligned files: line i of ``src_path`` translates line i of ``tgt_path``."""
    src_lines, tgt_lines = list(_lines(Path(src_path))), list(_lines(Path(tgt_path)))
    if len(src_lines) != len(tgt_lines):
        raise CorpusError(
            f"{src_path}:{min(len(src_lines), len(tgt_lines)) + 1}: {src_path} has "
            f"{len(src_lines)} lines but {tgt_path} has {len(tgt_lines)}"
        )
    pairs: list[Pair] = []
    for (no, s, ps), (_, t, pt) in zip(src_lines, tgt_lines, strict=True):
        problem, where = (ps, src_path) if ps else (pt, tgt_path)
        if not problem and (s is None or not s.strip() or t is None or not t.strip()):
            problem, where = "empty line", (src_path if not (s or "").strip() else tgt_path)
        if problem:
            message = f"{where}:{no}: {problem}"
            if not skip_bad:
                raise CorpusError(message)
            _record(stats, message)
            continue
        assert s is not None and t is not None
        pairs.append((s, t))
    return pairs


def load_corpus(
    spec: str | Path,
    *,
    src_lang: str = "en",
    tgt_lang: str = "it",
    skip_bad: bool = False,
    stats: dict[str, Any] | None = None,
) -> list[Pair]:
    """A TSV file, or a Moses prefix ``P`` with ``P.en`` and ``P.it`` (optionally .gz)."""
    spec = Path(spec)
    if spec.is_file():
        return read_pairs(spec, skip_bad=skip_bad, stats=stats)
    for suffix in ("", ".gz"):
        src = Path(f"{spec}.{src_lang}{suffix}")
        tgt = Path(f"{spec}.{tgt_lang}{suffix}")
        if src.is_file() and tgt.is_file():
            return read_parallel(src, tgt, skip_bad=skip_bad, stats=stats)
    raise FileNotFoundError(
        f"corpus {spec} does not exist (neither a file nor {spec}.{src_lang} + {spec}.{tgt_lang})"
    )


def clean_pairs(
    pairs: Iterable[Pair],
    *,
    max_words: int | None = None,
    max_ratio: float | None = None,
    dedup: bool = True,
) -> list[Pair]:
    """Normalise both sides, drop exact duplicates, and optionally long or unbalanced pairs."""
    seen: set[Pair] = set()
    out: list[Pair] = []
    for s, t in pairs:
        pair = (normalize(s), normalize(t))
        if not pair[0] or not pair[1]:
            continue
        ns, nt = len(pair[0].split()), len(pair[1].split())
        if max_words is not None and max(ns, nt) > max_words:
            continue
        if max_ratio is not None and max(ns, nt) > max_ratio * min(ns, nt):
            continue
        if dedup:
            if pair in seen:
                continue
            seen.add(pair)
        out.append(pair)
    return out


@dataclass
class Splits:
    train: list[Pair] = field(default_factory=list)
    dev: list[Pair] = field(default_factory=list)
    test: list[Pair] = field(default_factory=list)


def _key(text: str) -> str:
    return normalize(text).casefold()


def split_by_sentence(pairs: list[Pair], *, dev_size: int, test_size: int, seed: int = 0) -> Splits:
    """Deterministic train/dev/test split in which no sentence of either side is shared.

    Pairs that share an English or an Italian sentence are joined (union-find) into groups;
    whole groups are shuffled by ``seed`` and dealt to dev, then test, then train.
    """
    parent = list(range(len(pairs)))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    owner: dict[tuple[int, str], int] = {}
    for i, (s, t) in enumerate(pairs):
        for side, text in ((0, s), (1, t)):
            j = owner.setdefault((side, _key(text)), i)
            if j != i:
                parent[find(i)] = find(j)
    groups: dict[int, list[int]] = {}
    for i in range(len(pairs)):
        groups.setdefault(find(i), []).append(i)
    ordered = sorted(groups.values(), key=lambda g: g[0])
    random.Random(seed).shuffle(ordered)
    splits = Splits()
    # A few groups are huge (short replies such as "Sì." translate hundreds of English
    # sentences); dealing one of them to dev would swallow it, so they always train.
    largest_held_out = max(1, min(dev_size, test_size or dev_size) // 20)
    for members in ordered:
        chosen = [pairs[i] for i in members]
        if len(members) > largest_held_out:
            splits.train.extend(chosen)
        elif len(splits.dev) < dev_size:
            splits.dev.extend(chosen)
        elif len(splits.test) < test_size:
            splits.test.extend(chosen)
        else:
            splits.train.extend(chosen)
    return splits


def write_pairs(pairs: Iterable[Pair], path: str | Path) -> Path:
    """Write a 2-column TSV (gzip for .gz) atomically, with the modes the umask asks for."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    data = "".join(f"{s}\t{t}\n" for s, t in pairs).encode("utf-8")

    def write(tmp: Path) -> None:
        if path.suffix == ".gz":
            with gzip.open(tmp, "wb") as f:
                f.write(data)
        else:
            tmp.write_bytes(data)

    return atomic.write_file(path, write)
