"""Texts to source ids, as the model reads them: the text steps, a corpus tag, the length cap.

A :class:`SourceReader` knows what a model reads at once (``max_src_tokens``, its positions'
reach) and which corpus tags its source vocabulary has; the text steps' context (its
tokenizer, word lists) is passed in, since the translator rebuilds it when its word lists
change.
"""

from __future__ import annotations

from collections.abc import Sequence

from attenzione.data.corpus import without_controls
from attenzione.data.tokenizers import Tokenizer
from attenzione.pipeline import Context, Pipeline, Segment


class SourceReader:
    """Source ids for a model reading ``src_tokenizer``'s pieces: at most ``max_src_tokens``
    at once (``max_len - 1`` without a ``split`` step), a corpus tag's token first when asked."""

    def __init__(self, src_tokenizer: Tokenizer, max_src_tokens: int, max_len: int) -> None:
        self.src_tokenizer = src_tokenizer
        self.max_src_tokens, self.max_len = max_src_tokens, max_len
        # corpus tags (attenzione.data.mixing): the source vocabulary's
        self.tags: tuple[str, ...] = tuple(getattr(src_tokenizer, "tags", ()))

    def tag_ids(self, tag: str | None, default: str | None = None) -> list[int]:
        """The source ids that go before a text read with ``tag`` (None: ``default``; "": no
        tag)."""
        name = default if tag is None else tag or None
        if name is None:
            return []
        if name not in self.tags:
            have = ", ".join(self.tags) if self.tags else "none"
            raise ValueError(f"unknown corpus tag {name!r}: this model's tags are {have}")
        return [self.src_tokenizer.tag_id(name)]  # type: ignore[attr-defined]

    def read_at_once(
        self, ctx: Context, text: str, what: str, pipeline: Pipeline | None = None
    ) -> list[int]:
        """The source ids of ``text``, which must fit what the model reads in one pass: what
        it was trained on (``max_src_tokens``), or, with a pipeline that has no ``split``
        step to cut longer lines, the most its positions reach (``max_len - 1``)."""
        ids = ctx.encode(text)
        cut = pipeline is None or "split" in pipeline.names
        limit = (self.max_src_tokens if cut else self.max_len - 1) - ctx.reserved
        if len(ids) > limit:
            hint = "" if cut else " (the 'split' step translates a longer text in pieces)"
            raise ValueError(
                f"{what} has {len(ids)} source tokens (with <eos>) and this model reads at "
                f"most {limit} at once{hint}"
            )
        return ids

    def read(
        self,
        ctx: Context,
        texts: Sequence[str],
        pipeline: Pipeline,
        tag: str | None,
        default: str | None = None,
    ) -> list[list[Segment]]:
        """Each text's segments as the pipeline prepares them, those to translate with their
        source ids (control characters read as spaces: no model has seen one)."""
        first = self.tag_ids(tag, default)
        lines: list[list[Segment]] = []
        for i, text in enumerate(texts):
            if not isinstance(text, str):
                raise ValueError(f"input {i} is {type(text).__name__}, not a string")
            segments = pipeline.prepare(without_controls(text), ctx)
            for seg in segments:
                if seg.translate:
                    seg.ids = first + self.read_at_once(ctx, seg.text, f"input {i}", pipeline)
            lines.append(segments)
        return lines
