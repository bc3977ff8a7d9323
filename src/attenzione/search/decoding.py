"""Turning a source batch into target token ids: one loop, three ways of choosing tokens.

Every method runs the same loop (the paper's "prediction": linear + softmax over the
vocabulary, pick a token, feed it back, stop at ``<eos>`` or a maximum length):

    encode the source once → a K/V cache with the cross-attention K/V → per step:
    decode the newest tokens on the cache → logits → the hard constraints mask them →
    log-probabilities → the strategy picks tokens (ranking with the terms) and says which
    cache rows live on → reorder the cache, the constraints and the terms → next step

Only the choice differs, and it lives in a small strategy object (as OpenNMT's
``DecodeStrategy`` and keras-hub's samplers do):

* :class:`Greedy` picks argmax p(y_t | y_<t, x) at every step;
* :class:`Sampling` draws from softmax(logits / temperature), optionally restricted to the k
  most likely tokens (top-k) or to the smallest set whose probability reaches p (top-p,
  nucleus); a ``seed`` makes it reproducible;
* :class:`BeamSearch` keeps the K best partial translations by total log-probability; a
  finished one is ranked by ``log p / length^length_penalty`` (``length_penalty`` 0 = raw
  log-prob, 1 = per-token average; larger values favour longer outputs), and a sentence stops
  once K hypotheses have finished. With K = 1 it is greedy decoding, token for token.

What a caller adds to the search comes in two kinds, each a list of small objects with one
interface, as Hugging Face's logits processors are (the loop has no per-feature branches):

* **hard constraints** (:class:`Constraint`, e.g. :mod:`attenzione.search.constraints`: byte bans,
  well-formed UTF-8, whole characters) mask tokens out of every method's choice;
* **ranking terms** (:class:`Term`, e.g. :mod:`attenzione.search.terms`: number, punctuation and
  attention coverage, the word check) change how beam search *ranks* its hypotheses, never
  their ``log_prob``. A term can charge continuations while searching (:meth:`Term.charge`)
  and charge a finished hypothesis (:meth:`Term.at_end`); a hypothesis a term says still
  *owes* something does not count towards the K that stop the search, which goes on for one
  that owes nothing until the length cap. Greedy decoding and sampling ignore terms: with no
  other hypothesis to choose, a push could only make them write on past their ending.

Sentences that are finished leave the batch (the strategy returns the surviving rows, the
loop reorders the cache to them), so a batch costs what its unfinished sentences cost. The
length cap for a source of n real tokens is ``max_len_a·n + max_len_b`` new tokens, never
beyond the model's ``max_len``.

The loop needs only what :class:`DecodingModel` names — ``config`` (pad/bos/eos ids, max_len),
``encode``, ``init_cache`` and ``decode`` — which lets the tests drive it with a scripted stub.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import torch
from torch import Tensor

from attenzione.config import DecodeConfig
from attenzione.search.topk import top_k


class DecodingModel(Protocol):
    """What the loop needs of a model (:class:`~attenzione.model.transformer.Transformer` has it).

    ``config`` needs ``pad_id``, ``bos_id``, ``eos_id``, ``max_len`` and ``tgt_vocab_size``
    (and ``n_dec_layers`` for a term that reads attention); ``encode`` returns an object with
    ``memory`` (B,S,D) and ``memory_mask`` (B,1,1,S); the cache returned by ``init_cache``
    needs ``reorder(indices)``; ``decode(tgt_ids, cache=…)`` returns an object with ``logits``
    (B,T,V) (``output=`` is passed only with a shortlist: the output layer to use), and
    with ``need_weights=True`` also ``cross_attentions`` (per decoder layer,
    (B,H,T,S); asked for only when a term reads attention).
    """

    @property
    def config(self) -> Any: ...

    def encode(self, src_ids: Tensor) -> Any: ...

    def init_cache(self, memory: Tensor, memory_mask: Tensor, capacity: int) -> Any: ...

    def decode(
        self, tgt_ids: Tensor, *, cache: Any, need_weights: bool = False, output: Any = None
    ) -> Any: ...


@dataclass
class Hypothesis:
    """One output: token ids (no ``<bos>``/``<eos>``), its ranking score and total log-prob."""

    tokens: list[int]
    score: float
    log_prob: float


@dataclass
class Step:
    """A strategy's answer for one step: the next token of every surviving row (N,), and the
    cache rows those survivors continue from (None: the same rows, in the same order)."""

    tokens: Tensor
    rows: Tensor | None


class Constraint:
    """A hard constraint: tokens some rows may not write now.

    The loop calls :meth:`start` once with the sentence of each starting row, then per step
    :meth:`mask` on the (N,V) logits before they are normalised (a masked token's probability
    goes to the others), :meth:`trim` after (masked without renormalising), and
    :meth:`advance` with the rows that live on and the tokens they wrote. A constraint must
    never leave a row with nothing to write."""

    def check(self, batch: int, vocab: int) -> None:
        """Raise ``ValueError`` if this constraint does not fit a batch of ``batch`` sources
        and a ``vocab``-token target vocabulary."""

    def start(self, row_sentence: list[int]) -> None:
        """A new search whose rows belong to these sentences."""

    def mask(self, logits: Tensor) -> None:
        """Mask (N,V) ``logits`` in place (−inf), before they are normalised."""

    def trim(self, logits: Tensor, log_probs: Tensor) -> None:
        """Mask (N,V) ``logits`` and ``log_probs`` in place, after normalisation."""

    def advance(self, rows: Tensor | None, tokens: Tensor) -> None:
        """The rows live on from ``rows`` (None: the same) and write ``tokens``."""


class Charge(Protocol):
    """What continuations cost in beam search's ranking at one step (≥ 0, subtracted from
    their total log-prob): ``now`` (N,) charged to every continuation of a row (None: none),
    and :meth:`apply`, which subtracts the rest in place from the (N,V) ranking scores."""

    now: Tensor | None

    def apply(self, rank: Tensor) -> None: ...


class Term:
    """A ranking term of beam search (see the module docstring). ``reads_attention``: the
    loop passes each step's cross-attention (per decoder layer, (N,H,1,S)) to
    :meth:`charge`."""

    reads_attention: bool = False

    def check(self, batch: int, vocab: int) -> None:
        """Raise ``ValueError`` if this term does not fit the batch and the vocabulary."""

    def start(self, row_sentence: list[int]) -> None:
        """A new search whose rows belong to these sentences."""

    def charge(self, log_probs: Tensor, attention: Sequence[Tensor] | None) -> Charge | None:
        """What the continuations of each row cost this step (None: nothing)."""
        return None

    def at_end(self, row: int, token: int) -> tuple[float, bool]:
        """A hypothesis finishes: row ``row`` writes ``token`` (``<eos>``, or its last token
        at the length cap). Returns what is subtracted from its ranking score and whether it
        still owes something (then it does not count towards the K that stop the search)."""
        return 0.0, False

    def advance(self, rows: Tensor | None, tokens: Tensor) -> None:
        """The rows live on from ``rows`` (None: the same) and write ``tokens``."""


def _limits(model: DecodingModel, src_ids: Tensor, cfg: DecodeConfig) -> Tensor:
    """(B,) maximum number of new tokens per sentence (the ``<eos>`` included)."""
    n_src = (src_ids != model.config.pad_id).sum(dim=1)  # (B,)
    limit = (n_src.double() * cfg.max_len_a).floor().long() + cfg.max_len_b
    return limit.clamp(min=1, max=model.config.max_len - 1)


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


def _scratch(store: dict[str, Tensor], name: str, like: Tensor) -> Tensor:
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

    def __init__(self, cfg: DecodeConfig, eos_id: int, limits: Tensor) -> None:
        self.cfg, self.eos_id = cfg, eos_id
        self.limits = limits.tolist()  # (B,) per-sentence caps on new tokens
        self.batch = len(self.limits)

    def start(self) -> Tensor | None:
        """Cache rows to begin with (None: one row per sentence, as encoded)."""
        return None

    def step(
        self, step: int, logits: Tensor, log_probs: Tensor, charges: Sequence[Charge] = ()
    ) -> Step | None:
        """Choose from (N,V) ``logits``/``log_probs`` of the live rows at ``step`` (0-based).
        ``charges``: what the terms charge the continuations in ranking (beam search only)."""
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

    def step(
        self, step: int, logits: Tensor, log_probs: Tensor, charges: Sequence[Charge] = ()
    ) -> Step | None:
        nxt, picked = self.choose(logits, log_probs)
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
        self.live = list(range(b))  # original sentence of each live group of K rows
        self.scores = torch.full((b, k), float("-inf"), device=dev)
        self.scores[:, 0] = 0.0  # all beams start identical: only the first may expand
        self.paid = torch.zeros((b, k), device=dev)  # word penalties charged so far (≤ 0)
        self.any_paid = False
        self.history = torch.empty((b * k, 0), dtype=torch.long, device=dev)  # (N, step)
        self.finished: list[list[Hypothesis]] = [[] for _ in range(b)]
        self._buffers: dict[str, Tensor] = {}  # the ranking scores' memory, reused each step

    def start(self) -> Tensor:
        return torch.arange(self.batch, device=self.device).repeat_interleave(self.k)  # (B·K,)

    def _finish(
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

    def step(
        self, step: int, logits: Tensor, log_probs: Tensor, charges: Sequence[Charge] = ()
    ) -> Step | None:
        k, n = self.k, len(self.live)
        v = log_probs.shape[-1]
        base = self.scores.view(n * k, 1)  # (n·K,1) total log-probs so far
        width = min(2 * k, k * v)
        if not charges and not self.any_paid:  # nothing charged: rank by log-prob
            total = torch.add(log_probs, base, out=_scratch(self._buffers, "rank", log_probs))
            top_s, top_i = top_k(total.view(n, k * v), width)  # (n,2K)
            top_r = top_s
        else:  # rank by log-prob + charges, and read the model's own score back
            paid = self.paid.view(n * k, 1)
            for charge in charges:
                if charge.now is not None:
                    paid = paid - charge.now[:, None]
            rank = _scratch(self._buffers, "rank", log_probs)  # (n·K,V)
            torch.add(log_probs, base + paid, out=rank)
            for charge in charges:
                charge.apply(rank)
            top_r, top_i = top_k(rank.view(n, k * v), width)  # (n,2K)
            rows = (top_i // v) + torch.arange(n, device=top_i.device)[:, None] * k  # (n,2K)
            top_s = base.view(-1)[rows] + log_probs[rows, top_i % v]
        parent_l = (top_i // v).tolist()
        tok_l = (top_i % v).tolist()
        score_l = top_s.tolist()
        paid_l = (top_r - top_s).tolist()
        parents: list[int] = []
        new_tok: list[int] = []
        new_scores: list[float] = []
        new_paid: list[float] = []
        still: list[int] = []
        length = step + 1
        for g in range(n):
            sent = self.live[g]
            chosen: list[int] = []
            for j in range(len(tok_l[g])):
                s = score_l[g][j]
                if s == float("-inf"):
                    break
                pay = paid_l[g][j]
                if tok_l[g][j] == self.eos_id:
                    if j < k:
                        row = g * k + parent_l[g][j]
                        toks = self.history[row].tolist()  # one row: the whole is rarely needed
                        self._finish(sent, toks, s, length, pay, row, self.eos_id)
                elif len(chosen) < k:
                    chosen.append(j)
            at_limit = self.limits[sent] <= length
            # cut at the cap: kept only when fewer than K have ended properly (those ending at
            # this step count): a cut sentence never beats K that ended, and a search that
            # went on only for the coverage does not return one
            if at_limit and len(self.finished[sent]) < k:
                for j in chosen:
                    row, tok = g * k + parent_l[g][j], tok_l[g][j]
                    toks = [*self.history[row].tolist(), tok]
                    self._finish(sent, toks, score_l[g][j], length, paid_l[g][j], row, tok)
            if self.complete[sent] >= k or at_limit or not chosen:
                continue
            n_real = len(chosen)
            while len(chosen) < k:  # fewer than K live options: pad with dead copies
                chosen.append(chosen[0])
            still.append(g)
            for idx, j in enumerate(chosen):
                parents.append(g * k + parent_l[g][j])
                new_tok.append(tok_l[g][j])
                new_scores.append(score_l[g][j] if idx < n_real else float("-inf"))
                new_paid.append(paid_l[g][j] if idx < n_real else 0.0)
        if not still:
            return None
        index = torch.tensor(parents, dtype=torch.long, device=self.device)  # (n'·K,)
        tok_t = torch.tensor(new_tok, dtype=torch.long, device=self.device)  # (n'·K,)
        self.history = torch.cat([self.history.index_select(0, index), tok_t[:, None]], dim=1)
        self.scores = torch.tensor(new_scores, device=self.device).view(len(still), k)
        self.paid = torch.tensor(new_paid, device=self.device).view(len(still), k)
        self.any_paid = any(new_paid)
        self.live = [self.live[g] for g in still]
        return Step(tok_t, index)

    def results(self) -> list[list[Hypothesis]]:
        out = []
        for hyps in self.finished:
            hyps.sort(key=lambda h: h.score, reverse=True)
            out.append(hyps[: self.cfg.n_best])
        return out


STRATEGIES: dict[str, type[Strategy]] = {
    "greedy": Greedy,
    "sample": Sampling,
    "beam": BeamSearch,
}


@torch.inference_mode()
def generate(
    model: DecodingModel,
    src_ids: Tensor,
    cfg: DecodeConfig | None = None,
    *,
    constraints: Sequence[Constraint] = (),
    terms: Sequence[Term] = (),
    vocab: Tensor | None = None,
    output: Callable[[Tensor], Tensor] | None = None,
) -> list[list[Hypothesis]]:
    """Decode a (B,S) source batch with ``cfg`` (default: beam 4). Eval mode is the caller's.

    ``vocab`` (a shortlist's sorted target ids) with ``output`` (the output layer scoring just
    those, :func:`attenzione.search.shortlist.output_layer`): the model's logits are computed for
    these pieces only, and every other piece counts as −inf (:mod:`attenzione.search.shortlist`).

    ``constraints``: hard masks every method obeys (:class:`Constraint`); ``terms``: ranking
    terms of beam search (:class:`Term`; greedy decoding and sampling ignore them), applied
    in order. Returns, per sentence, its hypotheses best first (one for greedy and sampling,
    up to ``n_best`` for beam search).
    """
    cfg = cfg or DecodeConfig()
    mc = model.config
    if (vocab is None) != (output is None):
        raise ValueError("a shortlist needs both vocab (its ids) and output (its output layer)")
    parts: list[Constraint | Term] = [*constraints, *terms]
    for part in parts:
        part.check(src_ids.shape[0], mc.tgt_vocab_size)
    if cfg.method != "beam":
        terms = ()  # no other hypothesis to choose: a push could only make them write on
    limits = _limits(model, src_ids, cfg)  # (B,)
    strategy: Strategy
    if cfg.method == "beam":
        strategy = BeamSearch(cfg, mc.eos_id, limits, terms)
    else:
        strategy = STRATEGIES[cfg.method](cfg, mc.eos_id, limits)
    enc = model.encode(src_ids)
    cache = model.init_cache(enc.memory, enc.memory_mask, capacity=int(limits.max()) + 1)
    rows = strategy.start()
    if rows is not None:
        cache.reorder(rows)
    n = src_ids.shape[0] if rows is None else rows.shape[0]
    row_sentence = list(range(n)) if rows is None else rows.tolist()
    parts = [*constraints, *terms]  # the terms greedy decoding and sampling keep: none
    for part in parts:
        part.start(row_sentence)
    need_weights = any(t.reads_attention for t in terms)
    extra: dict[str, Any] = {}  # decode's options, passed only when used
    if need_weights:
        extra["need_weights"] = True
    if output is not None:
        extra["output"] = output
    cur = torch.full((n, 1), mc.bos_id, dtype=torch.long, device=src_ids.device)  # (N,1)
    buffers: dict[str, Tensor] = {}  # the log-probs' memory, reused each step
    for step in range(int(limits.max())):
        out = model.decode(cur, cache=cache, **extra)
        logits = out.logits[:, -1].float()  # (N,V), or (N,|vocab|) with a shortlist
        if vocab is not None:  # → (N,V), −inf outside the shortlist
            full = logits.new_full((logits.shape[0], mc.tgt_vocab_size), float("-inf"))
            logits = full.index_copy_(1, vocab, logits)
        if step < cfg.min_len:
            logits[:, mc.eos_id] = float("-inf")
        for c in constraints:
            c.mask(logits)
        log_probs = torch.log_softmax(logits, dim=-1, out=_scratch(buffers, "lp", logits))
        for c in constraints:
            c.trim(logits, log_probs)
        attention = out.cross_attentions if need_weights else None
        charges = [ch for t in terms if (ch := t.charge(log_probs, attention)) is not None]
        chosen = strategy.step(step, logits, log_probs, charges)
        if chosen is None:
            break
        if chosen.rows is not None:
            cache.reorder(chosen.rows)
        for part in parts:
            part.advance(chosen.rows, chosen.tokens)
        cur = chosen.tokens[:, None]  # (N,1): only the new token goes through the decoder
    return strategy.results()
