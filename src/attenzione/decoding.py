"""Turning a source batch into target token ids: one loop, three ways of choosing tokens.

Every method runs the same loop (seed 004's "prediction": linear + softmax over the
vocabulary, pick a token, feed it back, stop at ``<eos>`` or a maximum length):

    encode the source once → a K/V cache with the cross-attention K/V → per step:
    decode the newest tokens on the cache → log-probabilities → the strategy picks tokens and
    says which cache rows live on → reorder the cache → next step

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

Beam search can also be told what each output should carry over from its source (a
:class:`Coverage`: in attenzione, the digits of the source's numbers, and its commas,
semicolons, colons and brackets). A finished hypothesis that still owes some is ranked lower
per owed symbol (``number_coverage``, or the coverage's own weights), and does not
count towards the K that stop the search, which goes on for one that owes nothing until the
length cap. Greedy decoding and sampling ignore it: with no other hypothesis to choose, a
push could only make them write on past their ending.

Beam search can also check the words it writes against the words the model's training targets
had (a :class:`attenzione.lexicon.Lexicon`): a hypothesis that writes a word neither known nor
in its source ("Alanta" for "Atlanta") is ranked lower by ``word_penalty``. Like the coverage,
this changes only how hypotheses are ranked (``score``), never their ``log_prob``.

Any method can also be kept to well-formed UTF-8 (``utf8``: what each token is as a byte,
see :func:`utf8_roles`). With byte fallback a character the vocabulary lacks is spelled as
its bytes (``£`` = ``<0xC2><0xA3>``); a model that writes the lead byte and then a word piece
would print "�". After a lead byte only continuation bytes may follow, as many as it
announces (and no ``<eos>``); elsewhere a continuation byte, or a byte UTF-8 never uses, may
not be written. The choice is renormalised over what is allowed, as a ban is.

Sentences that are finished leave the batch (the strategy returns the surviving rows, the
loop reorders the cache to them), so a batch costs what its unfinished sentences cost. The
length cap for a source of n real tokens is ``max_len_a·n + max_len_b`` new tokens, never
beyond the model's ``max_len``.

The loop needs only what :class:`DecodingModel` names — ``config`` (pad/bos/eos ids, max_len),
``encode``, ``init_cache`` and ``decode`` — which lets the tests drive it with a scripted stub.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import torch
from torch import Tensor

from attenzione.config import DecodeConfig
from attenzione.lexicon import Charge, Lexicon, WordCheck


class DecodingModel(Protocol):
    """What the loop needs of a model (:class:`~attenzione.model.Transformer` has it).

    ``config`` needs ``pad_id``, ``bos_id``, ``eos_id`` and ``max_len`` (and
    ``tgt_vocab_size`` to check a ban or a coverage, ``n_dec_layers`` to check ``attend``);
    ``encode`` returns an
    object with ``memory`` (B,S,D) and ``memory_mask`` (B,1,1,S); the cache returned by
    ``init_cache`` needs ``reorder(indices)``; ``decode(tgt_ids, cache=…)`` returns an object
    with ``logits`` (B,T,V), and with ``need_weights=True`` also ``cross_attentions`` (per
    decoder layer, (B,H,T,S); asked for only by the attention coverage, see :func:`generate`).
    """

    @property
    def config(self) -> Any: ...

    def encode(self, src_ids: Tensor) -> Any: ...

    def init_cache(self, memory: Tensor, memory_mask: Tensor, capacity: int) -> Any: ...

    def decode(self, tgt_ids: Tensor, *, cache: Any, need_weights: bool = False) -> Any: ...


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
        self,
        step: int,
        logits: Tensor,
        log_probs: Tensor,
        owed: Tensor | None = None,
        charge: Charge | None = None,
        attended: Tensor | None = None,
    ) -> Step | None:
        """Choose from (N,V) ``logits``/``log_probs`` of the live rows at ``step`` (0-based).
        ``owed`` (N,C): the coverage symbols each row has yet to write (None: no coverage).
        ``charge``: what the continuations cost in ranking (beam search only).
        ``attended`` (N,): each row's attention coverage, Σ log min(attention received, 1)
        over its source tokens (≤ 0; None: not measured; beam search only)."""
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
        picked, nxt = log_probs.max(dim=-1)  # one max gives both token and score
        return nxt, picked

    def step(
        self,
        step: int,
        logits: Tensor,
        log_probs: Tensor,
        owed: Tensor | None = None,
        charge: Charge | None = None,
        attended: Tensor | None = None,
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
    A sentence stops once K finished hypotheses owe nothing of its coverage (``table``, (V,C):
    the symbols each token writes; None: no coverage, every finished hypothesis counts).
    """

    def __init__(
        self,
        cfg: DecodeConfig,
        eos_id: int,
        limits: Tensor,
        table: Tensor | None = None,
        weight: Tensor | None = None,
    ) -> None:
        super().__init__(cfg, eos_id, limits)
        self.table = table
        # (C,) the charge per owed symbol of each column (None: number_coverage for all)
        self.weight = (
            torch.full((0 if table is None else table.shape[-1],), cfg.number_coverage)
            if weight is None
            else weight
        ).to(limits.device, torch.float64)
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

    def start(self) -> Tensor:
        return torch.arange(self.batch, device=self.device).repeat_interleave(self.k)  # (B·K,)

    def _finish(
        self,
        sent: int,
        toks: list[int],
        total: float,
        length: int,
        owes: tuple[int, float],
        paid: float,
        attended: float = 0.0,
    ) -> None:
        """Set a hypothesis aside: ranked by its length-normalised log-prob (with the word
        penalties it ``paid``), less the coverage's charge for the symbols it ``owes`` (how
        many, and their charge: ``number_coverage`` each, or the coverage's weights), plus
        ``attention_coverage`` times its attention coverage ``attended`` (≤ 0)."""
        count, charge = owes
        norm = (total + paid) / (length**self.cfg.length_penalty)
        norm -= charge
        norm += self.cfg.attention_coverage * attended
        self.finished[sent].append(Hypothesis(toks, norm, total))
        self.complete[sent] += count == 0

    def _owes(self, owed: Tensor | None, row: int, token: int) -> tuple[int, float]:
        """What row ``row`` still owes once it has written ``token``: how many symbols, and
        their charge."""
        if owed is None or self.table is None:
            return 0, 0.0
        left = (owed[row] - self.table[token]).clamp(min=0)  # (C,)
        return int(left.sum()), float((left * self.weight).sum())

    def step(
        self,
        step: int,
        logits: Tensor,
        log_probs: Tensor,
        owed: Tensor | None = None,
        charge: Charge | None = None,
        attended: Tensor | None = None,
    ) -> Step | None:
        k, n = self.k, len(self.live)
        v = log_probs.shape[-1]
        base = self.scores.view(n * k, 1)  # (n·K,1) total log-probs so far
        width = min(2 * k, k * v)
        if charge is None and not self.any_paid:  # nothing charged: rank by log-prob
            top_s, top_i = (base + log_probs).view(n, k * v).topk(width, dim=1)  # (n,2K)
            top_r = top_s
        else:  # rank by log-prob + charges, and read the model's own score back
            paid = self.paid.view(n * k, 1)
            if charge is not None and charge.now is not None:
                paid = paid - charge.now[:, None]
            rank = (base + paid) + log_probs  # (n·K,V)
            if charge is not None and charge.end_rows is not None:
                rank[charge.end_rows] -= charge.end_cost  # rows whose word would end unfinished
            if charge is not None and charge.rows is not None and charge.tokens is not None:
                rank[charge.rows, charge.tokens] -= charge.cost  # tokens that spoil their word
            top_r, top_i = rank.view(n, k * v).topk(width, dim=1)  # (n,2K)
            rows = (top_i // v) + torch.arange(n, device=top_i.device)[:, None] * k  # (n,2K)
            top_s = base.view(-1)[rows] + log_probs[rows, top_i % v]
        parent_l = (top_i // v).tolist()
        tok_l = (top_i % v).tolist()
        score_l = top_s.tolist()
        paid_l = (top_r - top_s).tolist()
        cover_l = None if attended is None else attended.tolist()  # (n·K,)
        hist_l: list[list[int]] | None = None  # the history as lists, built only if needed
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
                        hist_l = self.history.tolist() if hist_l is None else hist_l
                        row = g * k + parent_l[g][j]
                        owes = self._owes(owed, row, self.eos_id)
                        cover = 0.0 if cover_l is None else cover_l[row]
                        self._finish(sent, hist_l[row], s, length, owes, pay, cover)
                elif len(chosen) < k:
                    chosen.append(j)
            at_limit = self.limits[sent] <= length
            # cut at the cap: kept only when fewer than K have ended properly (those ending at
            # this step count): a cut sentence never beats K that ended, and a search that
            # went on only for the coverage does not return one
            if at_limit and len(self.finished[sent]) < k:
                hist_l = self.history.tolist() if hist_l is None else hist_l
                for j in chosen:
                    row, tok = g * k + parent_l[g][j], tok_l[g][j]
                    owes = self._owes(owed, row, tok)
                    cover = 0.0 if cover_l is None else cover_l[row]
                    self._finish(
                        sent, hist_l[row] + [tok], score_l[g][j], length, owes, paid_l[g][j], cover
                    )
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


@dataclass
class Coverage:
    """Symbols a translation should carry over before it ends: in attenzione's use, the
    digits of the source's numbers (so that a number is not dropped with its clause).

    ``need`` (B,C): how many of each of C symbols sentence b's source has; ``table`` (V,C):
    how many of each symbol target piece v writes. Beam search ranks a finished hypothesis
    that has written fewer than its sentence needs lower by ``number_coverage`` per owed
    symbol, and searches on for one that owes nothing (see :class:`BeamSearch`): a soft
    constraint. A translation that spells "2:30" as "due e mezza" pays for it but still wins
    when no beam wrote the digits or the model is far surer of the words; one that dropped a
    number loses to a beam that kept it. Scores stay the model's: ``log_prob`` is never
    touched, only ``score``.

    ``weight`` (C,): the charge per owed symbol of each column, when the symbols are worth
    different amounts (attenzione's translator covers the source's commas and brackets too,
    at ``punctuation_coverage`` each); None: ``number_coverage`` for every column. A column
    weighed 0 is not covered at all.
    """

    need: Tensor
    table: Tensor
    weight: Tensor | None = None

    def check(self, batch: int, vocab: int) -> None:
        c = self.table.shape[-1]
        if tuple(self.need.shape) != (batch, c) or tuple(self.table.shape) != (vocab, c):
            raise ValueError(
                f"coverage needs shapes ({batch}, C) and ({vocab}, C), got "
                f"{tuple(self.need.shape)} and {tuple(self.table.shape)}"
            )
        if self.need.dtype != torch.long or self.table.dtype != torch.long:
            raise ValueError("coverage counts must be integer (torch.long) tensors")
        if self.weight is not None:
            if tuple(self.weight.shape) != (c,):
                raise ValueError(
                    f"coverage weight needs shape ({c},), got {tuple(self.weight.shape)}"
                )
            if not bool(torch.isfinite(self.weight).all()) or bool((self.weight < 0).any()):
                raise ValueError("coverage weights must be finite and >= 0")

    def weights(self, number_coverage: float) -> Tensor:
        """(C,) the charge per owed symbol of each column."""
        if self.weight is not None:
            return self.weight.double()
        return torch.full((self.table.shape[-1],), float(number_coverage), dtype=torch.float64)


STRATEGIES: dict[str, type[Strategy]] = {
    "greedy": Greedy,
    "sample": Sampling,
    "beam": BeamSearch,
}


# the least attention a source token counts as having had, in the attention coverage (log 0
# would be -inf)
ATTENTION_FLOOR = 1e-6

# what a token is as UTF-8, for generate(utf8=...)
NOT_A_BYTE, CONTINUATION, NEVER = 0, -1, -2


def utf8_roles(byte_pieces: Mapping[str, int], vocab_size: int) -> Tensor:
    """(V,) long: what each token is as UTF-8, from the vocabulary's byte-fallback pieces
    (``byte_pieces``: ``<0x00>``…``<0xFF>`` and their ids). The number of continuation bytes
    a lead byte announces (1–3), ``CONTINUATION`` for 0x80–0xBF, ``NEVER`` for the bytes
    well-formed UTF-8 never holds (0xC0, 0xC1, 0xF5–0xFF), ``NOT_A_BYTE`` (0) for every other
    token; an ASCII byte is complete in itself (0)."""
    roles = torch.full((vocab_size,), NOT_A_BYTE, dtype=torch.long)
    for piece, i in byte_pieces.items():
        byte = int(piece[3:5], 16)
        if 0x80 <= byte <= 0xBF:
            roles[i] = CONTINUATION
        elif byte in (0xC0, 0xC1) or byte >= 0xF5:
            roles[i] = NEVER
        elif byte >= 0xC2:
            roles[i] = 1 if byte <= 0xDF else 2 if byte <= 0xEF else 3
    return roles


def _keep_utf8(logits: Tensor, owed: Tensor, roles: Tensor) -> None:
    """Mask in place what would break UTF-8: rows that owe continuation bytes (``owed`` > 0)
    may write only those; the others no continuation byte and no ``NEVER`` byte. A row that
    owes bytes none of which is allowed (all banned) is left as it is rather than emptied."""
    cont = roles == CONTINUATION  # (V,)
    waiting = owed > 0  # (N,)
    if bool(waiting.any()):
        open_cont = torch.isfinite(logits) & cont  # (N,V)
        waiting = waiting & open_cont.any(dim=-1)
        logits.masked_fill_(waiting[:, None] & ~cont[None, :], float("-inf"))
    free = ~(owed > 0)
    logits.masked_fill_(free[:, None] & (cont | (roles == NEVER))[None, :], float("-inf"))


def _next_owed(owed: Tensor, tokens: Tensor, roles: Tensor) -> Tensor:
    """The continuation bytes each row owes after writing ``tokens``."""
    role = roles[tokens]
    return torch.where(role == CONTINUATION, (owed - 1).clamp(min=0), role.clamp(min=0))


class WholeCharacters:
    """Byte pieces that spell only whole characters of the sentence's source.

    A byte-fallback vocabulary spells a character it lacks in bytes ("≤" = ``<0xE2>``
    ``<0x89>`` ``<0xA4>``), so such a character in a translation is one the model copies
    from its source, byte by byte. Well-formed UTF-8 (:func:`utf8_roles`) and a ban of the
    bytes the source lacks still let it end "≤" as "≉" (E2 89 89), or "№" (E2 84 96) as "℄"
    (E2 84 84): bytes the source has, in another order. With this, a row that has begun a
    character may only go on with a byte that keeps it the beginning of one of its
    sentence's ``chars``.

    ``byte_of``: (V,) the byte each byte piece writes (-1 for other tokens); ``chars``: per
    sentence, the UTF-8 of each character it may spell in bytes (its source's)."""

    def __init__(self, byte_of: Tensor, chars: Sequence[frozenset[bytes]]) -> None:
        self.byte_of: list[int] = byte_of.tolist()
        self.token_of = {b: t for t, b in enumerate(self.byte_of) if b >= 0}
        self.chars = list(chars)
        self.sentence: list[int] = []  # the sentence each row belongs to
        self.begun: list[bytes] = []  # the bytes of the character each row is writing

    def start(self, row_sentence: list[int]) -> None:
        """A new search, whose rows belong to these sentences."""
        self.sentence = list(row_sentence)
        self.begun = [b""] * len(row_sentence)

    def mask(self, owed: Tensor, logits: Tensor, log_probs: Tensor) -> None:
        """Mask in place, in the (N,V) ``logits`` and ``log_probs`` alike, the bytes that
        would make a row's character none of its source's. ``owed``: the continuation bytes
        each row still owes (:func:`_next_owed`). The log-probs are not renormalised: the
        byte left keeps the probability the model gave it, so a character begun by mistake
        is not made cheaper to finish. A row whose every allowed byte is masked already is
        left as it is rather than emptied."""
        for r in (owed > 0).nonzero().flatten().tolist():
            begun, n = self.begun[r], len(self.begun[r])
            chars = self.chars[self.sentence[r]]
            allowed = {c[n] for c in chars if n and len(c) > n and c.startswith(begun)}
            ids = [self.token_of[b] for b in allowed if b in self.token_of]
            if not ids or not bool(torch.isfinite(logits[r, ids]).any()):
                continue
            for scores in (logits, log_probs):
                keep = scores[r, ids].clone()
                scores[r] = float("-inf")
                scores[r, ids] = keep

    def advance(self, rows: Tensor | None, tokens: Tensor, owed: Tensor) -> None:
        """The rows live on from ``rows`` (None: the same), write ``tokens`` and then owe
        ``owed`` continuation bytes."""
        if rows is not None:
            parents = rows.tolist()
            self.sentence = [self.sentence[r] for r in parents]
            self.begun = [self.begun[r] for r in parents]
        for r, (tok, left) in enumerate(zip(tokens.tolist(), owed.tolist(), strict=True)):
            byte = self.byte_of[tok]
            if byte < 0x80:  # not a byte piece, or ASCII: no character is open
                self.begun[r] = b""
            elif 0x80 <= byte <= 0xBF:
                self.begun[r] += bytes([byte])
            else:
                self.begun[r] = bytes([byte])
            if not left:
                self.begun[r] = b""  # the character is complete


@torch.inference_mode()
def generate(
    model: DecodingModel,
    src_ids: Tensor,
    cfg: DecodeConfig | None = None,
    *,
    banned: Tensor | None = None,
    coverage: Coverage | None = None,
    utf8: Tensor | None = None,
    lexicon: Lexicon | None = None,
    attend: int | None = None,
    whole: WholeCharacters | None = None,
) -> list[list[Hypothesis]]:
    """Decode a (B,S) source batch with ``cfg`` (default: beam 4). Eval mode is the caller's.

    ``banned``: (B,V) booleans, the tokens each sentence may never produce (``<eos>`` must
    stay allowed). ``coverage``: what each sentence should produce before it ends (see
    :class:`Coverage`; weighed by its own weights, or else ``cfg.number_coverage``).
    ``utf8``: (V,) roles from :func:`utf8_roles`, to keep byte pieces well-formed (None: no
    check). ``lexicon``: the known words and each sentence's source words, to rank
    hypotheses that write other words lower by ``lexicon.penalty`` (beam search only; see
    :mod:`attenzione.lexicon`). ``attend``: the decoder layer whose cross-attention measures
    how fully each hypothesis has covered its source (beam search with
    ``cfg.attention_coverage`` > 0; the model's ``decode`` must then take
    ``need_weights=True`` and return ``cross_attentions``; None: not measured). ``whole``:
    the characters each sentence may spell in byte pieces (:class:`WholeCharacters`; with
    ``utf8`` only). Returns, per
    sentence, its hypotheses best first (one for greedy and sampling, up to ``n_best`` for
    beam search).
    """
    cfg = cfg or DecodeConfig()
    mc = model.config
    if banned is not None:
        want = (src_ids.shape[0], mc.tgt_vocab_size)
        if banned.dtype != torch.bool or tuple(banned.shape) != want:
            raise ValueError(f"banned must be a bool tensor of shape {want}")
        if bool(banned[:, mc.eos_id].any()):
            raise ValueError("banned may not ban <eos>: every sentence must be able to end")
    if utf8 is not None and tuple(utf8.shape) != (mc.tgt_vocab_size,):
        raise ValueError(f"utf8 must have one role per target token ({mc.tgt_vocab_size},)")
    if whole is not None and (
        utf8 is None
        or len(whole.chars) != src_ids.shape[0]
        or len(whole.byte_of) != mc.tgt_vocab_size
    ):
        raise ValueError(
            f"whole needs utf8, the characters of {src_ids.shape[0]} sources and the byte of "
            f"each of {mc.tgt_vocab_size} target tokens"
        )
    if lexicon is not None:
        if len(lexicon.sources) != src_ids.shape[0] or lexicon.starts.shape != (mc.tgt_vocab_size,):
            raise ValueError(
                f"the lexicon needs {src_ids.shape[0]} sources and {mc.tgt_vocab_size} pieces"
            )
        if lexicon.penalty == 0 or cfg.method != "beam":
            lexicon = None  # off; greedy and sampling have no other hypothesis to choose
    table = need = weight = None
    if coverage is not None:
        coverage.check(src_ids.shape[0], mc.tgt_vocab_size)
        weight = coverage.weights(cfg.number_coverage).to(src_ids.device)  # (C,)
        on = weight > 0  # a column weighed 0 is off
        # greedy and sampling have no other hypothesis to choose: off for them too
        if cfg.method == "beam" and bool(on.any()):
            table = coverage.table.to(src_ids.device)[:, on]  # (V,C')
            need = coverage.need.to(src_ids.device)[:, on]  # (B,C')
            weight = weight[on]
    if attend is not None and not 0 <= attend < mc.n_dec_layers:
        raise ValueError(f"attend must be a decoder layer, 0 to {mc.n_dec_layers - 1}: {attend}")
    if cfg.method != "beam" or cfg.attention_coverage == 0:
        attend = None  # off; greedy and sampling have no other hypothesis to choose
    limits = _limits(model, src_ids, cfg)  # (B,)
    strategy: Strategy
    if table is not None:
        strategy = BeamSearch(cfg, mc.eos_id, limits, table, weight)
    else:
        strategy = STRATEGIES[cfg.method](cfg, mc.eos_id, limits)
    enc = model.encode(src_ids)
    cache = model.init_cache(enc.memory, enc.memory_mask, capacity=int(limits.max()) + 1)
    rows = strategy.start()
    have = owed = None  # (N,C): what each row's sentence needs (need), has written, still owes
    if need is not None:
        need = need if rows is None else need[rows]
        have = torch.zeros_like(need)
    received = real = None  # (N,S): the attention each source token has had; its real tokens
    if attend is not None:
        real = (src_ids != mc.pad_id) & (src_ids != mc.eos_id)
        real = real if rows is None else real[rows]
        received = torch.zeros(real.shape, dtype=torch.float32, device=src_ids.device)
    if rows is not None:
        cache.reorder(rows)
        banned = None if banned is None else banned[rows]
    n = src_ids.shape[0] if rows is None else rows.shape[0]
    cur = torch.full((n, 1), mc.bos_id, dtype=torch.long, device=src_ids.device)  # (N,1)
    roles = None if utf8 is None else utf8.to(src_ids.device)
    bytes_owed = torch.zeros(n, dtype=torch.long, device=src_ids.device)  # (N,)
    row_sentence = list(range(n)) if rows is None else rows.tolist()
    words = None
    if lexicon is not None:
        words = WordCheck(lexicon, row_sentence, 2 * cfg.beam_size, src_ids.device)
    if whole is not None:
        whole.start(row_sentence)
    for step in range(int(limits.max())):
        attended = None
        if received is not None and real is not None:
            out = model.decode(cur, cache=cache, need_weights=True)
            # the heads' mean attention from the newest position to each source token
            received = received + out.cross_attentions[attend][:, :, -1].float().mean(dim=1)
            # GNMT's coverage (Wu et al. 2016): Σ over source tokens of log min(received, 1),
            # 0 once each has had a whole step's attention; floored so that log stays finite
            attended = (received.clamp(min=ATTENTION_FLOOR, max=1.0).log() * real).sum(dim=1)
        else:
            out = model.decode(cur, cache=cache)
        logits = out.logits[:, -1].float()  # (N,V)
        if step < cfg.min_len:
            logits[:, mc.eos_id] = float("-inf")
        if banned is not None:
            logits.masked_fill_(banned, float("-inf"))
        if roles is not None:
            _keep_utf8(logits, bytes_owed, roles)
        if need is not None and have is not None:
            owed = (need - have).clamp(min=0)  # (N,C)
        log_probs = torch.log_softmax(logits, dim=-1)
        if whole is not None:
            whole.mask(bytes_owed, logits, log_probs)
        charge = None if words is None else words.penalty(log_probs)
        chosen = strategy.step(step, logits, log_probs, owed, charge, attended)
        if chosen is None:
            break
        if chosen.rows is not None:
            cache.reorder(chosen.rows)
            if received is not None and real is not None:
                received, real = received[chosen.rows], real[chosen.rows]
            banned = None if banned is None else banned[chosen.rows]
            bytes_owed = bytes_owed[chosen.rows]
        if roles is not None:
            bytes_owed = _next_owed(bytes_owed, chosen.tokens, roles)
            if whole is not None:
                whole.advance(chosen.rows, chosen.tokens, bytes_owed)
        if words is not None:
            words.advance(chosen.rows, chosen.tokens)
        if need is not None and have is not None and table is not None:
            if chosen.rows is not None:
                need, have = need[chosen.rows], have[chosen.rows]
            have = have + table[chosen.tokens]
        cur = chosen.tokens[:, None]  # (N,1): only the new token goes through the decoder
    return strategy.results()
