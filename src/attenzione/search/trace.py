"""A decoding trace: what the search saw and chose at every step, recorded by two hooks.

A :class:`TraceRecorder` follows one sentence through any search without changing it. Its
:class:`~attenzione.search.hooks.Watcher` is shown each step's logits and log-probs after every
constraint (what the strategy chooses from) and follows the rows as the K/V cache does; for beam
search its :class:`~attenzione.search.hooks.Term`, which charges nothing, is told of every
hypothesis the search sets aside as finished. From these it keeps, per step:

* every live row's ``top_k`` next pieces (id, logit, log-prob over the whole vocabulary, best
  first; pieces a constraint ruled out are left out);
* for beam search, the hypotheses as nodes of a tree — each with its parent (the node it
  continues), its piece, its total log-prob, and whether it was **kept** (one of the K that go
  on), **finished** (set aside with ``<eos>``, or cut at the length cap) or **pruned** (among
  the best 2K continuations by total log-prob, but neither kept nor finished).

The recorder is a user's hook (``Translator.translate(…, hooks=recorder.hooks)``): the search
runs exactly as it does without it — the registered hooks, the strategy and the numbers are the
same, so greedy decoding's chosen pieces are ``translate --beam 1``'s and beam search's winner
is ``translate``'s. :meth:`TraceRecorder.chain` then reads off the winner's path.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import Tensor

from attenzione.search.hooks import Hook, Term, Watcher
from attenzione.search.registry import HookBatch
from attenzione.search.topk import top_k

__all__ = ["Node", "StepRecord", "TraceRecorder"]


@dataclass
class Node:
    """One hypothesis of the search after a step: ``parent`` (the index of the node it
    continues, None at the first step), the ``token`` it wrote, its total ``log_prob`` and its
    ``status``: "kept", "finished" or "pruned". ``step``: the step that wrote the token."""

    step: int
    parent: int | None
    token: int
    log_prob: float
    status: str
    score: float | None = None  # a finished hypothesis's length-normalised log-prob


@dataclass
class StepRecord:
    """One step as the search saw it: the node each live row continues (None: the empty
    start), and per row its top pieces — ids, logits and log-probs, best first."""

    rows: list[int | None]
    ids: list[list[int]]
    logits: list[list[float]]
    log_probs: list[list[float]]


@dataclass
class _State:
    top_k: int
    length_penalty: float
    beam: bool
    records: list[StepRecord] = field(default_factory=list)
    nodes: list[Node] = field(default_factory=list)
    rows: list[int | None] = field(default_factory=list)  # the node of each live row
    totals: Tensor | None = None  # (N,) each live row's total log-prob
    log_probs: Tensor | None = None  # (N,V) this step's, until the rows move on
    ended: list[int] = field(default_factory=list)  # nodes finished at this step


class _Watch(Watcher):
    def __init__(self, state: _State) -> None:
        self.state = state

    def start(self, batch: int, vocab: int) -> None:
        if batch != 1:
            raise ValueError(f"a trace follows one sentence, not {batch}")

    def watch(self, logits: Tensor, log_probs: Tensor) -> None:
        st = self.state
        n = log_probs.shape[0]
        assert st.totals is not None and st.totals.shape[0] == n, "rows followed from the start"
        k = min(st.top_k, log_probs.shape[-1])
        values, ids = top_k(log_probs, k)  # (N,k) best first
        picked = logits.gather(1, ids)
        rows_ids, rows_l, rows_lp = [], [], []
        for row_ids, row_l, row_lp in zip(
            ids.tolist(), picked.tolist(), values.tolist(), strict=True
        ):
            keep = [j for j, lp in enumerate(row_lp) if lp != float("-inf")]
            rows_ids.append([row_ids[j] for j in keep])
            rows_l.append([row_l[j] for j in keep])
            rows_lp.append([row_lp[j] for j in keep])
        st.records.append(StepRecord(list(st.rows), rows_ids, rows_l, rows_lp))
        st.log_probs = log_probs.clone()
        st.ended = []

    def reorder(self, rows: Tensor | None, tokens: Tensor | None) -> None:
        st = self.state
        if tokens is None:  # the strategy's starting rows: beam search's K copies of one start
            n = 1 if rows is None else rows.shape[0]
            st.rows = [None] * n
            totals = torch.full((n,), float("-inf"))
            totals[0] = 0.0  # all beams start identical: only the first may expand
            st.totals = totals
            return
        assert st.log_probs is not None and st.totals is not None
        step = len(st.records) - 1
        parents = (
            torch.arange(tokens.shape[0], device=tokens.device) if rows is None else rows
        ).cpu()
        gained = st.log_probs.cpu()[parents, tokens.cpu()]
        totals = st.totals.cpu()[parents] + gained
        seen: set[tuple[int, int]] = set()
        new_rows: list[int | None] = []
        for i, (parent, token) in enumerate(zip(parents.tolist(), tokens.tolist(), strict=True)):
            if (parent, token) in seen or totals[i] == float("-inf"):
                totals[i] = float("-inf")  # a dead copy beam search pads a group with
                new_rows.append(None)
                continue
            seen.add((parent, token))
            st.nodes.append(Node(step, st.rows[parent], token, float(totals[i]), "kept"))
            new_rows.append(len(st.nodes) - 1)
        if st.beam:
            self._pruned(step, seen)
        st.rows, st.totals = new_rows, totals

    def _pruned(self, step: int, kept: set[tuple[int, int]]) -> None:
        """The best 2K continuations by total log-prob that were neither kept nor finished."""
        st = self.state
        assert st.log_probs is not None and st.totals is not None
        total = st.log_probs.cpu() + st.totals.cpu()[:, None]  # (N,V)
        v = total.shape[1]
        width = min(2 * total.shape[0], total.numel())
        values, flat = total.view(-1).topk(width)
        ended = {(n.parent, n.token) for n in (st.nodes[i] for i in st.ended)}
        for value, index in zip(values.tolist(), flat.tolist(), strict=True):
            row, token = divmod(index, v)
            if value == float("-inf") or (row, token) in kept:
                continue
            if (st.rows[row], token) in ended:
                continue
            st.nodes.append(Node(step, st.rows[row], token, value, "pruned"))

    def finish(self, row: int, token: int) -> None:
        """Beam search set aside row ``row``'s hypothesis, which wrote ``token``."""
        st = self.state
        assert st.log_probs is not None and st.totals is not None
        step = len(st.records) - 1
        total = float(st.totals[row].cpu() + st.log_probs[row, token].cpu())
        length = step + 1
        score = total / (length**st.length_penalty)
        st.nodes.append(Node(step, st.rows[row], token, total, "finished", score))
        st.ended.append(len(st.nodes) - 1)


class _Ends(Term):
    """Charges nothing; tells the watcher of each hypothesis beam search sets aside."""

    def __init__(self, watch: _Watch) -> None:
        self.watch = watch

    def at_end(self, row: int, token: int) -> tuple[float, bool]:
        self.watch.finish(row, token)
        return 0.0, False


class TraceRecorder:
    """Records one sentence's search (the module docstring): give :attr:`hooks` to the
    search as a user's own hooks, then read :attr:`records`, :attr:`nodes` and :meth:`chain`."""

    def __init__(self, top_k: int = 10) -> None:
        if top_k < 1:
            raise ValueError(f"top_k must be >= 1, got {top_k}")
        self.top_k = top_k
        self._state: _State | None = None

    def _make(self, batch: HookBatch) -> Hook:
        """The watcher for a batch (and, for beam search, its term, made alongside)."""
        cfg = batch.cfg
        self._state = _State(self.top_k, cfg.length_penalty, cfg.method == "beam")
        self._watch = _Watch(self._state)
        return self._watch

    def _ends(self, batch: HookBatch) -> Hook | None:
        return _Ends(self._watch) if batch.cfg.method == "beam" else None

    @property
    def hooks(self) -> tuple[Any, Any]:
        """The user hooks that record a search: the watcher's maker, then the term's."""
        return (self._make, self._ends)

    @property
    def records(self) -> list[StepRecord]:
        if self._state is None:
            raise RuntimeError("nothing was recorded: the recorder's hooks were not given")
        return self._state.records

    @property
    def nodes(self) -> list[Node]:
        if self._state is None:
            raise RuntimeError("nothing was recorded: the recorder's hooks were not given")
        return self._state.nodes

    def chain(self, tokens: Sequence[int], eos_id: int) -> list[int]:
        """Beam search's nodes of the output ``tokens``, one per step, the last the finished
        one (it wrote ``<eos>``, or the last token at the cap). Greedy decoding and sampling
        keep one row, not a tree: for them this is empty."""
        st = self._state
        if st is None or not st.beam:
            return []
        want = list(tokens)
        for i in range(len(st.nodes) - 1, -1, -1):
            if st.nodes[i].status != "finished":
                continue
            chain = self._chain(i)
            written = [st.nodes[j].token for j in chain]
            if written in ([*want, eos_id], want):
                return chain
        raise RuntimeError("the output is not among the hypotheses the search finished")

    def _chain(self, node: int) -> list[int]:
        st = self._state
        assert st is not None
        out: list[int] = []
        at: int | None = node
        while at is not None:
            out.append(at)
            at = st.nodes[at].parent
        out.reverse()
        return out
