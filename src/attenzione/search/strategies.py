"""How the search chooses tokens: greedy decoding, sampling and beam search.

The loop (:func:`attenzione.search.decoding.generate`) is the same for all three; only the
choice differs, and it lives in a small strategy object (as OpenNMT's ``DecodeStrategy`` and
keras-hub's samplers do):

* :class:`Greedy` picks argmax p(y_t | y_<t, x) at every step;
* :class:`Sampling` draws from softmax(logits / temperature), optionally restricted to the k
  most likely tokens (top-k) or to the smallest set whose probability reaches p (top-p,
  nucleus); a ``seed`` makes it reproducible;
* :class:`BeamSearch` keeps the K best partial translations by total log-prob; a finished one
  is ranked by ``log p / length^length_penalty`` (``length_penalty`` 0 = raw log-prob, 1 =
  per-token average; larger values favour longer outputs), less what its ranking terms
  (:class:`attenzione.search.hooks.Term`) charge, and a sentence stops once K hypotheses
  that owe nothing have finished. With K = 1 it is greedy decoding, token for token.

Each is made by :data:`STRATEGIES` from the same arguments; only beam search keeps the
ranking terms (:attr:`Strategy.terms`), which the loop then keeps in step with its rows.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch
from torch import Tensor

from attenzione.config import DecodeConfig
from attenzione.search.hooks import Term
from attenzione.search.topk import top_k


@dataclass
class Hypothesis:
    """One output: token ids (no ``<bos>``/``<eos>``), its ranking score and total log-prob."""

    tokens: list[int]
    score: float
    log_prob: float


@dataclass
class Scores:
    """What a strategy chooses from at one step, for the N live rows: the (N,V) ``logits``
    and ``log_probs`` after the constraints, and the decoder's cross-attention (per decoder
    layer, (N,H,1,S); None unless a term reads it)."""

    logits: Tensor
    log_probs: Tensor
    attention: Sequence[Tensor] | None = None


@dataclass
class Step:
    """A strategy's answer for one step: the next token of every surviving row (N',), and the
    cache rows those survivors continue from (None: the same rows, in the same order)."""

    tokens: Tensor
    rows: Tensor | None


def _filter_logits(logits: Tensor, top_k: int, top_p: float) -> Tensor:
    """Set to −inf every logit outside the top-k and outside the top-p nucleus. (N,V)."""
    if top_k > 0 and top_k < logits.shape[-1]:
        kth = logits.topk(top_k, dim=-1).values[:, -1:]  # (N,1) the k-th largest
        logits = logits.masked_fill(logits < kth, float("-inf"))
    if top_p < 1.0:
        sorted_logits, order = logits.sort(dim=-1, descending=True)
        probs = sorted_logits.softmax(dim=-1)
        # Drop a token when the tokens ranked above it already reach p (always keep the first).
        drop_sorted = (probs.cumsum(dim=-1) - probs) >= top_p
        drop = torch.zeros_like(drop_sorted).scatter(-1, order, drop_sorted)
        logits = logits.masked_fill(drop, float("-inf"))
    return logits


def scratch(store: dict[str, Tensor], name: str, like: Tensor) -> Tensor:
    """An uninitialised tensor like ``like``, in memory ``store`` keeps across steps (good for
    one step): a (rows, V) tensor a step is 24 MB at 256 rows, and reusing the memory made the
    log-softmax and the ranking take a quarter less time (docs/benchmarks.md, issue 41, second
    pass)."""
    buf = store.get(name)
    if buf is None or buf.numel() < like.numel() or buf.dtype != like.dtype:
        buf = like.new_empty(like.numel())
        store[name] = buf
    return buf[: like.numel()].view(like.shape)


class Strategy:
    """How tokens are chosen. The loop calls :meth:`start`, then :meth:`step` until it
    returns None (every sentence finished), then :meth:`results`."""

    # the ranking terms it ranks with, which the loop keeps in step with its rows: beam
    # search's; greedy decoding and sampling have none
    terms: Sequence[Term] = ()

    def __init__(self, cfg: DecodeConfig, eos_id: int, limits: Tensor) -> None:
        self.cfg, self.eos_id = cfg, eos_id
        self.limits = limits.tolist()  # (B,) per-sentence caps on new tokens
        self.batch = len(self.limits)

    def start(self) -> Tensor | None:
        """Cache rows to begin with (None: one row per sentence, as encoded)."""
        return None

    def step(self, step: int, scores: Scores) -> Step | None:
        """Choose the live rows' next tokens from their ``scores`` at ``step`` (0-based); None
        once every sentence has finished."""
        raise NotImplementedError

    def results(self) -> list[list[Hypothesis]]:
        raise NotImplementedError


class Greedy(Strategy):
    """One row per sentence; each step takes the most likely token."""

    def __init__(self, cfg: DecodeConfig, eos_id: int, limits: Tensor) -> None:
        super().__init__(cfg, eos_id, limits)
        self.live = torch.arange(self.batch, device=limits.device)  # sentence of each row
        self.tokens: list[list[int]] = [[] for _ in range(self.batch)]
        self.log_probs = [0.0] * self.batch
        self.limit_t = limits

    def choose(self, logits: Tensor, log_probs: Tensor) -> tuple[Tensor, Tensor]:
        """(N,) next tokens and their log-probabilities."""
        picked, nxt = top_k(log_probs, 1)  # the most likely token and its log-prob
        return nxt[:, 0], picked[:, 0]

    def step(self, step: int, scores: Scores) -> Step | None:
        nxt, picked = self.choose(scores.logits, scores.log_probs)
        done = (nxt == self.eos_id) | (self.limit_t[self.live] <= step + 1)  # (N,)
        for r, tok, lp in zip(self.live.tolist(), nxt.tolist(), picked.tolist(), strict=True):
            self.log_probs[r] += lp
            if tok != self.eos_id:
                self.tokens[r].append(tok)
        if bool(done.all()):
            return None
        if not bool(done.any()):
            return Step(nxt, None)
        keep = (~done).nonzero().squeeze(1)  # shrink the batch to unfinished rows
        self.live = self.live[keep]
        return Step(nxt[keep], keep)

    def results(self) -> list[list[Hypothesis]]:
        return [[Hypothesis(t, lp, lp)] for t, lp in zip(self.tokens, self.log_probs, strict=True)]


class Sampling(Greedy):
    """Greedy's bookkeeping with a random choice: temperature, top-k, top-p, seeded."""

    def __init__(self, cfg: DecodeConfig, eos_id: int, limits: Tensor) -> None:
        super().__init__(cfg, eos_id, limits)
        self.generator = None
        if cfg.seed is not None:
            self.generator = torch.Generator(device=limits.device).manual_seed(cfg.seed)

    def choose(self, logits: Tensor, log_probs: Tensor) -> tuple[Tensor, Tensor]:
        cfg = self.cfg
        filtered = _filter_logits(logits / cfg.temperature, cfg.top_k, cfg.top_p)
        probs = filtered.softmax(dim=-1)
        nxt = torch.multinomial(probs, 1, generator=self.generator).squeeze(1)  # (N,)
        return nxt, log_probs.gather(1, nxt[:, None]).squeeze(1)


class BeamSearch(Strategy):
    """K rows per live sentence: (sentence, beam) pairs, K consecutive rows each.

    At each step the K·V continuations of a sentence are ranked by total log-prob; of the best
    2K, ``<eos>`` ones within the top K are set aside as finished, and the best K others go on.
    A sentence stops once K finished hypotheses owe nothing to any of the ``terms``.

    All K rows of a sentence start as the same empty translation; only the first may expand.
    (One row would do at the first step, but a sentence's numbers would then depend on its
    batch: docs/benchmarks.md, issue 41's second pass.)
    """

    def __init__(
        self, cfg: DecodeConfig, eos_id: int, limits: Tensor, terms: Sequence[Term] = ()
    ) -> None:
        super().__init__(cfg, eos_id, limits)
        self.terms = list(terms)
        self.complete = [0] * self.batch  # finished hypotheses that owe nothing, per sentence
        k, b, dev = cfg.beam_size, self.batch, limits.device
        self.k, self.device = k, dev
        self.limit_t = limits  # (B,) the cap on new tokens of each sentence
        self.live = torch.arange(b, device=dev)  # (n,) the sentence of each live group of K rows
        self.scores = torch.full((b, k), float("-inf"), device=dev)
        self.scores[:, 0] = 0.0  # all beams start identical: only the first may expand
        self.paid = torch.zeros((b, k), device=dev)  # word penalties charged so far (≤ 0)
        self.any_paid = False
        self.history = torch.empty((b * k, 0), dtype=torch.long, device=dev)  # (N, step)
        self.finished: list[list[Hypothesis]] = [[] for _ in range(b)]
        self._buffers: dict[str, Tensor] = {}  # the ranking scores' memory, reused each step

    def start(self) -> Tensor:
        return torch.arange(self.batch, device=self.device).repeat_interleave(self.k)  # (B·K,)

    def step(self, step: int, scores: Scores) -> Step | None:
        log_probs = scores.log_probs
        charges = [
            charge
            for term in self.terms
            if (charge := term.charge(log_probs, scores.attention)) is not None
        ]
        k, n, v = self.k, self.live.shape[0], log_probs.shape[-1]
        base = self.scores.view(n * k, 1)  # (n·K,1) total log-probs so far
        width = min(2 * k, k * v)
        if not charges and not self.any_paid:  # nothing charged: rank by log-prob
            total = torch.add(log_probs, base, out=scratch(self._buffers, "rank", log_probs))
            top_s, top_i = top_k(total.view(n, k * v), width)  # (n,2K)
            paid = torch.zeros_like(top_s)
        else:  # rank by log-prob + charges, and read the model's own score back
            so_far = self.paid.view(n * k, 1)
            for charge in charges:
                if charge.now is not None:
                    so_far = so_far - charge.now[:, None]
            rank = scratch(self._buffers, "rank", log_probs)  # (n·K,V)
            torch.add(log_probs, base + so_far, out=rank)
            for charge in charges:
                charge.apply(rank)
            top_r, top_i = top_k(rank.view(n, k * v), width)  # (n,2K)
            rows = (top_i // v) + torch.arange(n, device=top_i.device)[:, None] * k  # (n,2K)
            top_s = base.view(-1)[rows] + log_probs[rows, top_i % v]
            paid = top_r - top_s  # (n,2K) what each candidate has been charged (≤ 0)
        parent, tok = top_i // v, top_i % v  # (n,2K) the beam each continues, its token
        # a sentence reads its candidates best first, up to the first the model rules out
        alive = (top_s == float("-inf")).cumsum(dim=1) == 0  # (n,2K)
        is_eos = tok == self.eos_id
        ended = alive & is_eos  # <eos> within the top K: a hypothesis set aside
        ended[:, k:] = False
        going = alive & ~is_eos
        chosen = going & (going.cumsum(dim=1) <= k)  # (n,2K) the best K that go on
        n_chosen = chosen.sum(dim=1)  # (n,)
        length = step + 1
        at_limit = self.limit_t[self.live] <= length  # (n,)
        done = at_limit | (n_chosen == 0)  # (n,)
        touched = (ended.any(dim=1) | at_limit).nonzero().squeeze(1)  # (G,) few groups
        if touched.numel():
            settled = self._finish(length, touched, top_s, paid, tok, parent, ended, chosen)
            done[settled] = True
        keep = (~done).nonzero().squeeze(1)  # (n',) the groups that go on
        if not keep.numel():
            return None
        # each group's chosen candidates, best first; fewer than K: padded with dead copies
        # of its first (-inf, never expanded)
        sel = chosen[keep].to(torch.int8).sort(dim=1, descending=True, stable=True).indices
        sel = sel[:, :k]  # (n',K)
        dead = torch.arange(k, device=sel.device) >= n_chosen[keep][:, None]  # (n',K)
        sel = torch.where(dead, sel[:, :1], sel)
        index = (keep[:, None] * k + parent[keep].gather(1, sel)).view(-1)  # (n'·K,)
        tok_t = tok[keep].gather(1, sel).view(-1)  # (n'·K,)
        self.history = torch.cat([self.history.index_select(0, index), tok_t[:, None]], dim=1)
        self.scores = top_s[keep].gather(1, sel).masked_fill(dead, float("-inf"))  # (n',K)
        self.paid = paid[keep].gather(1, sel).masked_fill(dead, 0.0)  # (n',K)
        self.any_paid = bool(self.paid.any())
        self.live = self.live[keep]
        return Step(tok_t, index)

    def _finish(
        self,
        length: int,
        groups: Tensor,
        top_s: Tensor,
        paid: Tensor,
        tok: Tensor,
        parent: Tensor,
        ended: Tensor,
        chosen: Tensor,
    ) -> list[int]:
        """The finishing bookkeeping of one step, for the live ``groups`` (G,) that finish a
        hypothesis: each candidate that ``ended`` with ``<eos>`` is set aside, and a group at
        its length cap sets aside its ``chosen`` ones cut there — only when fewer than K
        have ended properly (those ending at this step count): a cut sentence never beats K
        that ended, and a search that went on only for the coverage does not return one.
        Returns the groups (of ``groups``) whose sentence has K that owe nothing."""
        g_l = groups.tolist()
        sents = self.live[groups].tolist()
        at_limit = (self.limit_t[self.live[groups]] <= length).tolist()
        s_l, pay_l = top_s[groups].tolist(), paid[groups].tolist()
        tok_l, parent_l = tok[groups].tolist(), parent[groups].tolist()
        ended_l, chosen_l = ended[groups].tolist(), chosen[groups].tolist()
        k, settled = self.k, []
        for i, (g, sent) in enumerate(zip(g_l, sents, strict=True)):
            for j in range(len(tok_l[i])):
                if ended_l[i][j]:
                    row = g * k + parent_l[i][j]
                    toks = self.history[row].tolist()  # one row: the whole is rarely needed
                    self._set_aside(sent, toks, s_l[i][j], length, pay_l[i][j], row, self.eos_id)
            if at_limit[i] and len(self.finished[sent]) < k:
                for j in range(len(tok_l[i])):
                    if chosen_l[i][j]:
                        row, last = g * k + parent_l[i][j], tok_l[i][j]
                        toks = [*self.history[row].tolist(), last]
                        self._set_aside(sent, toks, s_l[i][j], length, pay_l[i][j], row, last)
            if self.complete[sent] >= k:
                settled.append(g)
        return settled

    def _set_aside(
        self,
        sent: int,
        toks: list[int],
        total: float,
        length: int,
        paid: float,
        row: int,
        last: int,
    ) -> None:
        """Set a hypothesis aside (row ``row`` has written ``last``: ``<eos>``, or its last
        token at the length cap): ranked by its length-normalised log-prob (with the charges
        it ``paid`` while searching), less what each term charges it at its end."""
        norm = (total + paid) / (length**self.cfg.length_penalty)
        owes = False
        for term in self.terms:
            charge, owing = term.at_end(row, last)
            norm -= charge
            owes = owes or owing
        self.finished[sent].append(Hypothesis(toks, norm, total))
        self.complete[sent] += not owes

    def results(self) -> list[list[Hypothesis]]:
        out = []
        for hyps in self.finished:
            hyps.sort(key=lambda h: h.score, reverse=True)
            out.append(hyps[: self.cfg.n_best])
        return out


# each method's strategy, made from (cfg, eos_id, limits, terms): greedy decoding and sampling
# ignore the terms (with no other hypothesis to choose, a push could only make them write on)
STRATEGIES: dict[str, Callable[[DecodeConfig, int, Tensor, Sequence[Term]], Strategy]] = {
    "greedy": lambda cfg, eos_id, limits, terms: Greedy(cfg, eos_id, limits),
    "sample": lambda cfg, eos_id, limits, terms: Sampling(cfg, eos_id, limits),
    "beam": BeamSearch,
}
