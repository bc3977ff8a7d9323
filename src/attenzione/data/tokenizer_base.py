"""What every tokenizer is, whichever kind: the interface, the four special ids, the saved
directory's layout.

Every tokenizer has the same four special tokens with the same ids — ``<pad>`` 0, ``<bos>`` 1,
``<eos>`` 2, ``<unk>`` 3 — so the model's config never depends on which one is used (an
imported one, :mod:`attenzione.data.marian_tokenizer`, overrides the ids with its own). A
tokenizer saves itself into a directory: ``tokenizer.json``, whose ``type`` names the kind,
plus the files it names. The kinds live in modules of their own (word-level and SentencePiece
in :mod:`attenzione.data.tokenizers`, which also loads any kind; OPUS-MT's in
:mod:`attenzione.data.marian_tokenizer`); this module is what they share, so neither of them
imports the other.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from pathlib import Path

PAD_ID, BOS_ID, EOS_ID, UNK_ID = 0, 1, 2, 3
SPECIALS = ("<pad>", "<bos>", "<eos>", "<unk>")
WORD_START = "\u2581"  # SentencePiece's mark of a piece that begins a word
CONFIG_NAME = "tokenizer.json"


class Tokenizer(ABC):
    """text ↔ ids. ``encode`` adds no ``<bos>``/``<eos>``; ``decode`` skips special tokens."""

    pad_id, bos_id, eos_id, unk_id = PAD_ID, BOS_ID, EOS_ID, UNK_ID
    # the file or folder it was read from, for the messages that blame it (None: built here)
    origin: str | None = None

    @property
    @abstractmethod
    def vocab_size(self) -> int: ...

    @abstractmethod
    def encode(self, text: str) -> list[int]: ...

    @abstractmethod
    def decode(self, ids: Sequence[int]) -> str: ...

    @abstractmethod
    def id_to_token(self, i: int) -> str: ...

    @abstractmethod
    def save(self, directory: str | Path) -> Path: ...

    def encode_batch(self, texts: Sequence[str]) -> list[list[int]]:
        return [self.encode(t) for t in texts]

    def sample_batch(self, texts: Sequence[str], *, alpha: float, seed: int) -> list[list[int]]:
        """``texts`` each segmented at random (subword regularisation), the same for the same
        ``seed``. Only a subword tokenizer has more than one segmentation to choose from."""
        raise ValueError(
            f"subword sampling needs a SentencePiece tokenizer, not {type(self).__name__}"
        )


def named_file(directory: Path, name: object, config_path: Path) -> Path:
    """``directory/name``, a file ``config_path`` names, if ``name`` is a plain file name that
    stays inside ``directory``: a downloaded model's ``tokenizer.json`` is not trusted to
    point anywhere else (``../../etc/passwd``, or a symlink leading out)."""
    if not isinstance(name, str) or not name or Path(name).name != name or name in (".", ".."):
        raise ValueError(f"{config_path}: 'model' must be a file name in {directory}, not {name!r}")
    target = (directory / name).resolve()
    if target.parent != directory.resolve():
        raise ValueError(f"{config_path}: 'model' {name!r} leads outside {directory}")
    if not target.is_file():
        raise FileNotFoundError(f"{directory / name} not found (named by {config_path})")
    return target
