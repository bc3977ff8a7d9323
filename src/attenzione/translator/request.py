"""What one call of the translator asks: a frozen request, checked once where it is made.

A :class:`~attenzione.translator.translator.Translator` is fixed when it is made (its
precision, shortlist, workers, number format and word lists); all that varies from one call
to the next is a :class:`Request` — how to search, the weights of the registry's switches, a
user's own hooks, the text steps, the corpus tag, a target prefix and how many sentences a
batch holds — as CTranslate2's ``translate_batch`` takes every search option as an argument.

:meth:`Translator.request <attenzione.translator.translator.Translator.request>` makes one:
what is left None becomes the model's own, and :meth:`Request.checked` cuts the batch to the
rows the machine holds at that beam and refuses a beam too wide, in one line
(:mod:`attenzione.translator.bounds`). That is the one place a search is checked against the
bounds: the command line (before it loads the model) and the service (before it queues a
request) make their requests the same way.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import TypedDict

from attenzione.config import DecodeConfig
from attenzione.pipeline import Pipeline
from attenzione.search.hooks import Hook
from attenzione.search.registry import Terms, UserHook
from attenzione.translator.bounds import Bounds


@dataclass(frozen=True)
class Request:
    """One call's options. ``search``: how to search (:func:`attenzione.config.search_config`);
    ``terms``: the weights of the registry's switches (a :class:`Terms` or a mapping of some
    of them; None: the model's); ``hooks``: a user's own constraints and ranking terms, each a
    hook or what makes one from a batch (:data:`attenzione.search.registry.UserHook`), applied
    after the registered ones; ``steps``: the text pipeline or the names of its steps (None:
    the model's; ``()``: the model alone); ``tag``: the corpus tag to read the texts with (None:
    the model's ``default_tag``; "": none); ``prefix``: the text every translation begins with
    (its first segment's; "": none); ``batch_size``: the most sentences a batch holds."""

    search: DecodeConfig = field(default_factory=DecodeConfig)
    terms: Terms | None = None
    hooks: tuple[UserHook, ...] = ()
    steps: Pipeline | None = None
    tag: str | None = None
    prefix: str = ""
    batch_size: int = 64

    def __post_init__(self) -> None:
        if not isinstance(self.search, DecodeConfig):
            raise ValueError(f"search must be a DecodeConfig, not {type(self.search).__name__}")
        if self.terms is not None and not isinstance(self.terms, Terms):
            if not isinstance(self.terms, Mapping):
                raise ValueError("terms must map ranking terms' names to weights")
            object.__setattr__(self, "terms", Terms(self.terms))
        hooks = tuple(self.hooks)
        for i, hook in enumerate(hooks):
            if not (isinstance(hook, Hook) or callable(hook)):
                raise ValueError(f"hook {i} is neither a hook nor what makes one from a batch")
        object.__setattr__(self, "hooks", hooks)
        if self.steps is not None and not isinstance(self.steps, Pipeline):
            names: Iterable[str] = self.steps
            object.__setattr__(self, "steps", Pipeline.build(names))
        if self.tag is not None and not isinstance(self.tag, str):
            raise ValueError(f"tag must be a string, not {type(self.tag).__name__}")
        if not isinstance(self.prefix, str):
            raise ValueError(f"prefix must be a string, not {type(self.prefix).__name__}")
        if isinstance(self.batch_size, bool) or not isinstance(self.batch_size, int):
            raise ValueError(f"batch_size must be an integer, got {self.batch_size!r}")
        if self.batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {self.batch_size}")

    def checked(self, bounds: Bounds) -> Request:
        """This request with its batch cut to the sentences ``bounds`` hold at its beam (at
        least one); a beam or n-best list wider than the machine can search is refused in
        one line (ValueError)."""
        return replace(self, batch_size=bounds.batch_for(self.search, self.batch_size))


class Options(TypedDict, total=False):
    """:class:`Request`'s fields as keyword arguments (``Translator.translate(texts, beam…)``)."""

    search: DecodeConfig | None
    terms: Terms | Mapping[str, float] | None
    hooks: Iterable[UserHook]
    steps: Pipeline | Iterable[str] | None
    tag: str | None
    prefix: str
    batch_size: int
