"""The word lists a model directory carries, with one owner: the translator.

The ``names`` step and the ``word-check`` ranking term read the training targets' words; the
word check reads which source words are always translated; the ``number-format`` step how the
target writes numbers. :class:`WordLists` holds the three, immutable: the translator replaces
it, and the text steps' context and the search's scoring are built from it again.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from attenzione.data.numbers import NUMBER_FORMATS


@dataclass(frozen=True)
class WordLists:
    """The word check's lists and the number style, owned by the translator and read by the
    text steps (its :class:`~attenzione.pipeline.Context`) and the search (its
    :class:`~attenzione.search.scoring.Scoring`): ``known`` — the training targets' words
    (sorted; None: no word check); ``translated`` — the source words the training pairs always
    translate (sorted; None: every source word is free to copy); ``number_format`` — how the
    number-format step writes the source's numbers."""

    known: list[str] | None = None
    translated: list[str] | None = None
    number_format: str = "keep"

    def __post_init__(self) -> None:
        if self.number_format not in NUMBER_FORMATS:
            raise ValueError(f"number_format must be one of {', '.join(NUMBER_FORMATS)}")


def sorted_words(words: Sequence[str] | None) -> list[str] | None:
    return None if words is None else sorted(set(words))
