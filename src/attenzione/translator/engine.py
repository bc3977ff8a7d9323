"""Source ids in, hypotheses out: the one object a worker process runs.

An :class:`Engine` holds what decoding a batch needs and nothing about text: the network, its
vocabulary shortlist and the :class:`~attenzione.search.scoring.Scoring` that builds a batch's
hard constraints and ranking terms. :meth:`Engine.decode_batch` pads one batch of source id
lists, picks the shortlist's output layer and calls
:func:`~attenzione.search.decoding.generate`.
"""

from __future__ import annotations

import torch
from torch import Tensor

from attenzione.config import DecodeConfig
from attenzione.model.transformer import Transformer
from attenzione.search.decoding import Hypothesis, generate
from attenzione.search.scoring import Scoring, Terms
from attenzione.search.shortlist import Shortlist, ShortlistHead, output_head


class Engine:
    """``model`` decoding with ``scoring``'s constraints and terms; ``shortlist``: the
    vocabulary shortlist (:mod:`attenzione.search.shortlist`), used while
    :attr:`use_shortlist` is True."""

    def __init__(
        self, model: Transformer, scoring: Scoring, shortlist: Shortlist | None = None
    ) -> None:
        if shortlist is not None:
            cfg = model.config
            shortlist.check(cfg.src_vocab_size, cfg.tgt_vocab_size)
        self.model, self.scoring, self.shortlist = model, scoring, shortlist
        self.use_shortlist = shortlist is not None

    @torch.inference_mode()
    def decode_batch(
        self, sources: list[list[int]], search: DecodeConfig, terms: Terms
    ) -> list[list[Hypothesis]]:
        """One batch of source id lists, decoded together (padded to the longest) with the
        hard constraints and the ranking terms ``terms`` weigh."""
        pad = self.model.config.pad_id
        device = next(self.model.parameters()).device
        width = max(len(ids) for ids in sources)
        batch = torch.full((len(sources), width), pad, dtype=torch.long, device=device)
        for row, ids in enumerate(sources):
            batch[row, : len(ids)] = torch.tensor(ids, dtype=torch.long, device=device)
        return generate(
            self.model,
            batch,
            search,
            constraints=self.scoring.constraints(batch, sources, terms),
            terms=self.scoring.terms(batch, sources, terms, search),
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
