"""Source ids in, hypotheses out: the one object a worker process runs.

An :class:`Engine` holds what decoding a batch needs and nothing about text: the network, its
vocabulary shortlist and the :class:`~attenzione.search.scoring.Scoring` whose tables a batch's
hooks read. :meth:`Engine.decode_batch` pads one batch of source id lists, has the registry
build its hard constraints and ranking terms (:func:`~attenzione.search.registry.hooks_for`,
a request's own hooks after them), picks the shortlist's output layer and calls
:func:`~attenzione.search.decoding.generate`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import torch
from torch import Tensor

from attenzione.model.transformer import Transformer
from attenzione.search.decoding import Hypothesis, generate
from attenzione.search.registry import HookBatch, hooks_for
from attenzione.search.scoring import Scoring
from attenzione.search.shortlist import Shortlist, ShortlistHead, output_head

if TYPE_CHECKING:
    from attenzione.translator.request import Request


class Engine:
    """``model`` decoding with the hooks ``scoring``'s tables make; ``shortlist``: the
    vocabulary shortlist (:mod:`attenzione.search.shortlist`), used if ``use_shortlist``."""

    def __init__(
        self,
        model: Transformer,
        scoring: Scoring,
        shortlist: Shortlist | None = None,
        *,
        use_shortlist: bool = True,
    ) -> None:
        if shortlist is not None:
            cfg = model.config
            shortlist.check(cfg.src_vocab_size, cfg.tgt_vocab_size)
        self.model, self.scoring, self.shortlist = model, scoring, shortlist
        self.use_shortlist = use_shortlist and shortlist is not None

    @torch.inference_mode()
    def decode_batch(
        self,
        sources: list[list[int]],
        request: Request,
        prefixes: Sequence[Sequence[int]] | None = None,
    ) -> list[list[Hypothesis]]:
        """One batch of source id lists, decoded together (padded to the longest) with the
        request's search, the registry's hooks at its weights and its own hooks after them;
        ``prefixes``: each source's forced target prefix (None: none)."""
        pad = self.model.config.pad_id
        device = next(self.model.parameters()).device
        width = max(len(ids) for ids in sources)
        batch = torch.full((len(sources), width), pad, dtype=torch.long, device=device)
        for row, ids in enumerate(sources):
            batch[row, : len(ids)] = torch.tensor(ids, dtype=torch.long, device=device)
        assert request.terms is not None, "a request made by Translator.request"
        made = HookBatch(self.scoring, batch, sources, request.search, prefixes or ())
        constraints, terms = hooks_for(made, request.terms, request.hooks)
        return generate(
            self.model,
            batch,
            request.search,
            constraints=constraints,
            terms=terms,
            head=self._shortlist_for(batch),
        )

    def _shortlist_for(self, batch: Tensor) -> ShortlistHead | None:
        """The output head scoring only the target ids a (B,S) source batch may produce, or
        None (the whole vocabulary) without a shortlist."""
        if self.shortlist is None or not self.use_shortlist:
            return None
        cfg = self.model.config
        vocab = self.shortlist.ids_for(
            batch.cpu(),
            always=(cfg.eos_id, cfg.unk_id, *self.scoring.tgt_byte_ids),
            copy_source=cfg.share_src_tgt_embeddings,  # one vocabulary: copying is piecewise
        ).to(batch.device)
        return output_head(self.model, vocab)
