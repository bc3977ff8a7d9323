"""Turning a source batch into target token ids: greedy, sampling and beam search.

All three run the encoder once and then the decoder one token per step on a
:class:`~attenzione.cache.KVCache` (seed 004's "prediction": linear + softmax over the
vocabulary, pick a token, feed it back, stop at ``<eos>`` or a maximum length).

* **greedy** picks argmax p(y_t | y_<t, x) at every step;
* **sampling** draws from softmax(logits / temperature), optionally restricted to the k most
  likely tokens (top-k) or to the smallest set whose probability reaches p (top-p, nucleus);
  a ``seed`` makes it reproducible;
* **beam search** keeps the K best partial translations by total log-probability; a finished
  one is ranked by ``log p / length^length_penalty`` (``length_penalty`` 0 = raw log-prob,
  1 = per-token average; larger values favour longer outputs), and a sentence stops once K
  hypotheses have finished. With K = 1 it is greedy decoding, token for token.

Sentences that are finished leave the batch (the cache is reordered to the remaining rows), so
a batch costs what its unfinished sentences cost. The length cap for a source of n real tokens
is ``max_len_a·n + max_len_b`` new tokens, never beyond the model's ``max_len``.

The loop only needs ``model.config`` (pad/bos/eos ids, max_len), ``model.encode``,
``model.init_cache`` and ``model.decode`` — which lets tests drive it with a scripted stub.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor

from attenzione.config import DecodeConfig


@dataclass
class Hypothesis:
    """One output: token ids (no ``<bos>``/``<eos>``), its ranking score and total log-prob."""

    tokens: list[int]
    score: float
    log_prob: float


def _limits(model: Any, src_ids: Tensor, cfg: DecodeConfig) -> Tensor:
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


@torch.inference_mode()
def greedy_or_sample(model: Any, src_ids: Tensor, cfg: DecodeConfig) -> list[list[Hypothesis]]:
    """Greedy decoding (``cfg.method == "greedy"``) or sampling (``"sample"``), batched.

    src_ids: (B,S). Returns one single-element list of :class:`Hypothesis` per sentence.
    """
    mc = model.config
    sample = cfg.method == "sample"
    gen = None
    if sample and cfg.seed is not None:
        gen = torch.Generator(device=src_ids.device).manual_seed(cfg.seed)
    b = src_ids.shape[0]
    limits = _limits(model, src_ids, cfg)
    enc = model.encode(src_ids)
    cache = model.init_cache(enc.memory, enc.memory_mask, capacity=int(limits.max()) + 1)
    rows = torch.arange(b, device=src_ids.device)  # original sentence of each live row
    cur = torch.full((b, 1), mc.bos_id, dtype=torch.long, device=src_ids.device)
    out_tokens: list[list[int]] = [[] for _ in range(b)]
    log_probs = [0.0] * b
    for step in range(int(limits.max())):
        logits = model.decode(cur, cache=cache).logits[:, -1].float()  # (N,V)
        if step < cfg.min_len:
            logits[:, mc.eos_id] = float("-inf")
        logp = torch.log_softmax(logits, dim=-1)
        if sample:
            filtered = _filter_logits(logits / cfg.temperature, cfg.top_k, cfg.top_p)
            nxt = torch.multinomial(filtered.softmax(dim=-1), 1, generator=gen).squeeze(1)
            picked = logp.gather(1, nxt[:, None]).squeeze(1)
        else:
            picked, nxt = logp.max(dim=-1)  # (N,): the best token and its log-probability
        done = (nxt == mc.eos_id) | (limits[rows] <= step + 1)
        for r, tok, lp in zip(rows.tolist(), nxt.tolist(), picked.tolist(), strict=True):
            log_probs[r] += lp
            if tok != mc.eos_id:
                out_tokens[r].append(tok)
        if bool(done.all()):
            break
        if bool(done.any()):
            keep = (~done).nonzero().squeeze(1)  # shrink the batch to unfinished rows
            cache.reorder(keep)
            rows, nxt = rows[keep], nxt[keep]
        cur = nxt[:, None]
    return [[Hypothesis(t, lp, lp)] for t, lp in zip(out_tokens, log_probs, strict=True)]


@torch.inference_mode()
def beam_search(model: Any, src_ids: Tensor, cfg: DecodeConfig) -> list[list[Hypothesis]]:
    """Batched beam search on the K/V cache. src_ids: (B,S) → ``n_best`` hypotheses each.

    Rows of the decoder batch are (sentence, beam) pairs, K consecutive rows per live sentence.
    At each step the K·V continuations of a sentence are ranked by total log-prob; of the best
    2K, ``<eos>`` ones within the top K are set aside as finished, and the best K others go on.
    """
    mc = model.config
    k = cfg.beam_size
    b = src_ids.shape[0]
    dev = src_ids.device
    limits = _limits(model, src_ids, cfg)
    enc = model.encode(src_ids)
    cache = model.init_cache(enc.memory, enc.memory_mask, capacity=int(limits.max()) + 1)
    cache.reorder(torch.arange(b, device=dev).repeat_interleave(k))  # (B·K) rows
    live = list(range(b))  # original sentence of each live group of K rows
    scores = torch.full((b, k), float("-inf"), device=dev)
    scores[:, 0] = 0.0  # all beams start identical: only the first may expand at step 0
    history = torch.empty((b * k, 0), dtype=torch.long, device=dev)
    cur = torch.full((b * k, 1), mc.bos_id, dtype=torch.long, device=dev)
    finished: list[list[Hypothesis]] = [[] for _ in range(b)]
    lim = limits.tolist()

    def finish(sent: int, toks: list[int], total: float, length: int) -> None:
        norm = total / (length**cfg.length_penalty)
        finished[sent].append(Hypothesis(toks, norm, total))

    for step in range(int(limits.max())):
        n = len(live)
        logits = model.decode(cur, cache=cache).logits[:, -1].float()  # (n·K,V)
        if step < cfg.min_len:
            logits[:, mc.eos_id] = float("-inf")
        v = logits.shape[-1]
        cand = scores.view(n * k, 1) + torch.log_softmax(logits, dim=-1)  # (n·K,V)
        top_s, top_i = cand.view(n, k * v).topk(min(2 * k, k * v), dim=1)  # (n,2K)
        parent_l = (top_i // v).tolist()
        tok_l = (top_i % v).tolist()
        score_l = top_s.tolist()
        hist_l: list[list[int]] | None = None
        parents: list[int] = []
        new_tok: list[int] = []
        new_scores: list[float] = []
        still: list[int] = []
        length = step + 1
        for g in range(n):
            sent = live[g]
            chosen: list[int] = []
            for j in range(len(tok_l[g])):
                s = score_l[g][j]
                if s == float("-inf"):
                    break
                if tok_l[g][j] == mc.eos_id:
                    if j < k:
                        hist_l = history.tolist() if hist_l is None else hist_l
                        finish(sent, hist_l[g * k + parent_l[g][j]], s, length)
                elif len(chosen) < k:
                    chosen.append(j)
            at_limit = lim[sent] <= length
            if at_limit:
                hist_l = history.tolist() if hist_l is None else hist_l
                for j in chosen:
                    toks = hist_l[g * k + parent_l[g][j]] + [tok_l[g][j]]
                    finish(sent, toks, score_l[g][j], length)
            if len(finished[sent]) >= k or at_limit or not chosen:
                continue
            n_real = len(chosen)
            while len(chosen) < k:  # fewer than K live options: pad with dead copies
                chosen.append(chosen[0])
            still.append(g)
            for idx, j in enumerate(chosen):
                parents.append(g * k + parent_l[g][j])
                new_tok.append(tok_l[g][j])
                new_scores.append(score_l[g][j] if idx < n_real else float("-inf"))
        if not still:
            break
        index = torch.tensor(parents, dtype=torch.long, device=dev)
        cache.reorder(index)
        tok_t = torch.tensor(new_tok, dtype=torch.long, device=dev)
        history = torch.cat([history.index_select(0, index), tok_t[:, None]], dim=1)
        scores = torch.tensor(new_scores, device=dev).view(len(still), k)
        live = [live[g] for g in still]
        cur = tok_t[:, None]
    out = []
    for hyps in finished:
        hyps.sort(key=lambda h: h.score, reverse=True)
        out.append(hyps[: cfg.n_best])
    return out


def generate(
    model: Any, src_ids: Tensor, cfg: DecodeConfig | None = None
) -> list[list[Hypothesis]]:
    """Decode a (B,S) source batch with ``cfg`` (default: beam 4). Eval mode is the caller's."""
    cfg = cfg or DecodeConfig()
    if cfg.method == "beam":
        return beam_search(model, src_ids, cfg)
    return greedy_or_sample(model, src_ids, cfg)
