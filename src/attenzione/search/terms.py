"""Ranking terms of beam search: what a translation should carry over from its source.

Each is a :class:`attenzione.search.hooks.Term` passed to
:func:`attenzione.search.decoding.generate` in a list. They change how beam search *ranks*
hypotheses, never the model's ``log_prob``: the model proposes, the terms only choose among
its proposals. Greedy decoding and sampling ignore them. What each is worth on today's model
is in ``docs/pipeline.md``.

* :class:`SymbolCoverage`: the symbols of the source a translation has not written, charged
  at its end, per symbol. attenzione uses two: the digits of the source's numbers (a number
  dropped with its clause) and its commas, semicolons, colons and brackets (a clause run
  into the next). A hypothesis that still owes a symbol does not stop the search, which goes
  on for one that owes nothing: a soft constraint. A translation that spells "2:30" as "due
  e mezza" pays for it but still wins when no beam wrote the digits or the model is far surer
  of the words.
* :class:`AttentionCoverage`: GNMT's coverage penalty (Wu et al. 2016), Σ over source tokens
  of log min(attention received, 1) (≤ 0), read off one decoder layer's cross-attention: it
  ranks down a translation that left part of its source unattended, a dropped clause.
* :class:`WordPenalty`: a hypothesis that writes a word neither known to the model's
  training targets nor in its source ("Alanta" for "Atlanta") is charged while searching
  (:mod:`attenzione.search.lexicon`).
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import Tensor

from attenzione.search.hooks import Charge, Term
from attenzione.search.lexicon import Lexicon, WordCheck

# the least attention a source token counts as having had, in the attention coverage (log 0
# would be -inf)
ATTENTION_FLOOR = 1e-6


class SymbolCoverage(Term):
    """Symbols a translation should carry over before it ends.

    ``need`` (B,C): how many of each of C symbols sentence b's source has; ``table`` (V,C):
    how many of each symbol target piece v writes; ``weight``: the charge per owed symbol (in
    the length-normalised score: at the default length penalty 1, the mean log-prob per
    token); a scalar, or (C,) per column."""

    def __init__(self, need: Tensor, table: Tensor, weight: float | Tensor) -> None:
        if need.dim() != 2 or table.dim() != 2:
            raise ValueError(
                f"coverage needs a (B, C) need and a (V, C) table, got {tuple(need.shape)} "
                f"and {tuple(table.shape)}"
            )
        self.need_all, self.table = need, table
        w = torch.as_tensor(weight, dtype=torch.float64)
        self.weight = (w.expand(table.shape[-1]) if w.dim() == 0 else w).to(table.device)  # (C,)
        if not bool(torch.isfinite(self.weight).all()) or bool((self.weight < 0).any()):
            raise ValueError("coverage weights must be finite and >= 0")
        self.on = self.weight > 0  # (C,) a column weighed 0 is not covered at all
        self.need = self.have = self.owed = need

    def start(self, batch: int, vocab: int) -> None:
        c = self.table.shape[-1]
        if tuple(self.need_all.shape) != (batch, c) or tuple(self.table.shape) != (vocab, c):
            raise ValueError(
                f"coverage needs shapes ({batch}, C) and ({vocab}, C), got "
                f"{tuple(self.need_all.shape)} and {tuple(self.table.shape)}"
            )
        if self.need_all.dtype != torch.long or self.table.dtype != torch.long:
            raise ValueError("coverage counts must be integer (torch.long) tensors")
        if tuple(self.weight.shape) != (c,):
            raise ValueError(f"coverage weight needs shape ({c},), got {tuple(self.weight.shape)}")
        self.need = self.need_all  # (N,C)
        self.have = torch.zeros_like(self.need)

    def charge(self, log_probs: Tensor, attention: Sequence[Tensor] | None) -> Charge | None:
        self.owed = (self.need - self.have).clamp(min=0)  # (N,C) before this step's token
        return None

    def at_end(self, row: int, token: int) -> tuple[float, bool]:
        left = (self.owed[row] - self.table[token]).clamp(min=0)  # (C,)
        return float((left * self.weight).sum()), bool(left[self.on].any())

    def reorder(self, rows: Tensor | None, tokens: Tensor | None) -> None:
        if rows is not None:
            self.need, self.have = self.need[rows], self.have[rows]
        if tokens is not None:
            self.have = self.have + self.table[tokens]


class AttentionCoverage(Term):
    """GNMT's coverage penalty, weighed by ``weight``, read off decoder layer ``layer`` (its
    heads averaged). ``src_ids`` (B,S): the batch, whose real tokens (not padding, not
    ``<eos>``) are to be covered."""

    reads_attention = True

    def __init__(self, src_ids: Tensor, layer: int, weight: float, pad_id: int, eos_id: int):
        if not weight >= 0 or weight == float("inf"):
            raise ValueError(f"the attention coverage weight must be finite and >= 0: {weight}")
        self.layer, self.weight = layer, weight
        self.real_all = (src_ids != pad_id) & (src_ids != eos_id)  # (B,S)
        self.real = self.real_all
        self.received = torch.zeros(0)
        self.attended: Tensor | None = None
        self._attended_l: list[float] | None = None

    def start(self, batch: int, vocab: int) -> None:
        if self.real_all.dim() != 2 or self.real_all.shape[0] != batch:
            raise ValueError(
                f"the attention coverage was built for a batch of shape "
                f"{tuple(self.real_all.shape)}, not one of {batch} sources"
            )
        self.real = self.real_all  # (N,S)
        self.received = torch.zeros(self.real.shape, dtype=torch.float32, device=self.real.device)
        self.attended, self._attended_l = None, None

    def charge(self, log_probs: Tensor, attention: Sequence[Tensor] | None) -> Charge | None:
        if attention is None:
            raise ValueError("the attention coverage needs the decoder's cross-attention")
        if not 0 <= self.layer < len(attention):
            raise ValueError(
                f"attend must be a decoder layer, 0 to {len(attention) - 1}: {self.layer}"
            )
        # the heads' mean attention from the newest position to each source token
        self.received = self.received + attention[self.layer][:, :, -1].float().mean(dim=1)
        # Σ over source tokens of log min(received, 1), 0 once each has had a whole step's
        # attention; floored so that log stays finite
        floor = self.received.clamp(min=ATTENTION_FLOOR, max=1.0)
        self.attended = (floor.log() * self.real).sum(dim=1)  # (N,)
        self._attended_l = None
        return None

    def at_end(self, row: int, token: int) -> tuple[float, bool]:
        if self.attended is None:
            return 0.0, False
        if self._attended_l is None:
            self._attended_l = self.attended.tolist()
        return -(self.weight * self._attended_l[row]), False

    def reorder(self, rows: Tensor | None, tokens: Tensor | None) -> None:
        if rows is not None:
            self.received, self.real = self.received[rows], self.real[rows]


class WordPenalty(Term):
    """The word check (:class:`attenzione.search.lexicon.WordCheck`): ``lexicon.penalty`` in total
    log-prob per word written that is neither known nor in its source. ``width``: how many of
    a row's likeliest tokens are checked each step (beam search's 2K)."""

    def __init__(self, lexicon: Lexicon, width: int, device: torch.device) -> None:
        self.lexicon, self.width, self.device = lexicon, width, device
        self.words: WordCheck | None = None

    def start(self, batch: int, vocab: int) -> None:
        if len(self.lexicon.sources) != batch or self.lexicon.starts.shape != (vocab,):
            raise ValueError(f"the lexicon needs {batch} sources and {vocab} pieces")
        self.words = WordCheck(self.lexicon, list(range(batch)), self.width, self.device)

    def charge(self, log_probs: Tensor, attention: Sequence[Tensor] | None) -> Charge | None:
        assert self.words is not None
        return self.words.penalty(log_probs)

    def reorder(self, rows: Tensor | None, tokens: Tensor | None) -> None:
        assert self.words is not None
        self.words.advance(rows, tokens)
