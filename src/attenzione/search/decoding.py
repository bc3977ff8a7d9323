"""Turning a source batch into target token ids: one loop, three ways of choosing tokens.

Every method runs the same loop (the paper's "prediction": linear + softmax over the
vocabulary, pick a token, feed it back, stop at ``<eos>`` or a maximum length)::

    encode the source once → a K/V cache with the cross-attention K/V
    the strategy's starting rows: the cache and the hooks follow them
    per step: decode the newest tokens on the cache → the output head's logits (N,V)
              → the constraints mask them → log-probabilities (→ the constraints that mask
              after normalisation; the watchers are shown the result) → the strategy
              chooses, ranking with its terms, and says which rows live on → the cache and
              the hooks follow them → next step

The choice is a strategy (:mod:`attenzione.search.strategies`: greedy, sampling, beam
search); what a caller adds is a list of hooks with one protocol (:mod:`attenzione.search.hooks`):
**constraints** mask tokens out of every method's choice (``min_len`` is one), **ranking
terms** charge beam search's ranking. The loop has no per-feature branch: the shortlist is an
output head, each hook is called in list order.

Sentences that are finished leave the batch (the strategy returns the surviving rows, the
cache and the hooks are reordered to them), so a batch costs what its unfinished sentences
cost. The length cap for a source of n real tokens is ``max_len_a·n + max_len_b`` new tokens,
never beyond the model's ``max_len``.

The loop needs only what :class:`DecodingModel` names — ``config`` (pad/bos/eos ids, max_len),
``encode``, ``init_cache`` and ``decode`` — which lets the tests drive it with a scripted stub.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

import torch
from torch import Tensor

from attenzione.config import DecodeConfig
from attenzione.search.constraints import MinLength
from attenzione.search.hooks import (
    Charge,
    Constraint,
    FullVocabulary,
    Hook,
    OutputHead,
    Term,
    Watcher,
)
from attenzione.search.strategies import STRATEGIES, Hypothesis, Scores, scratch

__all__ = ["Charge", "Constraint", "DecodingModel", "Hypothesis", "Term", "generate"]


class DecodingModel(Protocol):
    """What the loop needs of a model (:class:`~attenzione.model.transformer.Transformer` has it).

    ``config`` needs ``pad_id``, ``bos_id`` (or ``start_id``), ``eos_id``, ``max_len`` and
    ``tgt_vocab_size`` (and ``n_dec_layers`` for a term that reads attention); ``encode``
    returns an object with ``memory`` (B,S,D) and ``memory_mask`` (B,1,1,S); the cache returned
    by ``init_cache`` needs ``reorder(indices)``; ``decode(tgt_ids, cache=…)`` returns an object
    with ``logits`` (B,T,V) (``output=`` is passed only with an output head that has a layer of
    its own), and with ``need_weights=True`` also ``cross_attentions`` (per decoder layer,
    (B,H,T,S); asked for only when a term reads attention).
    """

    @property
    def config(self) -> Any: ...

    def encode(self, src_ids: Tensor) -> Any: ...

    def init_cache(self, memory: Tensor, memory_mask: Tensor, capacity: int) -> Any: ...

    def decode(
        self, tgt_ids: Tensor, *, cache: Any, need_weights: bool = False, output: Any = None
    ) -> Any: ...


@torch.inference_mode()
def generate(
    model: DecodingModel,
    src_ids: Tensor,
    cfg: DecodeConfig | None = None,
    *,
    constraints: Sequence[Constraint] = (),
    terms: Sequence[Term] = (),
    head: OutputHead | None = None,
) -> list[list[Hypothesis]]:
    """Decode a (B,S) source batch with ``cfg`` (default: beam 4). Eval mode is the caller's.

    ``constraints``: hard masks every method obeys; ``terms``: beam search's ranking terms
    (greedy decoding and sampling ignore them); both applied in order
    (:mod:`attenzione.search.hooks`). ``head``: the output layer (default: the model's own,
    the whole vocabulary; a shortlist's: :class:`attenzione.search.shortlist.ShortlistHead`).
    Returns, per sentence, its hypotheses best first
    (one for greedy and sampling, up to ``n_best`` for beam search).
    """
    cfg = cfg or DecodeConfig()
    mc = model.config
    head = FullVocabulary() if head is None else head
    masks = [MinLength(cfg.min_len, mc.eos_id), *constraints]
    for hook in [*masks, *terms]:  # what does not fit is refused before any decoding
        hook.start(src_ids.shape[0], mc.tgt_vocab_size)
    limits = _limits(model, src_ids, cfg)  # (B,)
    search = STRATEGIES[cfg.method](cfg, mc.eos_id, limits, terms)
    hooks: list[Hook] = [*masks, *search.terms]
    watchers = [c for c in masks if isinstance(c, Watcher)]
    before = [c for c in masks if not c.normalised]
    after = [c for c in masks if c.normalised and not isinstance(c, Watcher)]
    need_weights = any(t.reads_attention for t in search.terms)

    enc = model.encode(src_ids)
    cache = model.init_cache(enc.memory, enc.memory_mask, capacity=int(limits.max()) + 1)
    rows = search.start()  # (N,) the sentence of each row; None: one row per sentence
    _follow(cache, hooks, rows, None)
    n = src_ids.shape[0] if rows is None else rows.shape[0]
    # the token the decoder reads first: <bos>, or the config's decoder_start_id (Marian's
    # decoders start from <pad>); a config without start_id (a test's stub) starts from bos_id
    start = getattr(mc, "start_id", mc.bos_id)
    cur = torch.full((n, 1), start, dtype=torch.long, device=src_ids.device)  # (N,1)
    options = _decode_options(head, need_weights)
    buffers: dict[str, Tensor] = {}  # the log-probs' memory, reused each step
    for step in range(int(limits.max())):
        out = model.decode(cur, cache=cache, **options)
        logits = head(out.logits[:, -1].float())  # (N,V)
        for c in before:
            c.mask(logits)
        log_probs = torch.log_softmax(logits, dim=-1, out=scratch(buffers, "lp", logits))
        for c in after:
            c.mask(logits)
            c.mask(log_probs)
        for w in watchers:  # what the strategy chooses from, after every constraint
            w.watch(logits, log_probs)
        attention = out.cross_attentions if need_weights else None
        chosen = search.step(step, Scores(logits, log_probs, attention))
        if chosen is None:
            break
        _follow(cache, hooks, chosen.rows, chosen.tokens)
        cur = chosen.tokens[:, None]  # (N,1): only the new token goes through the decoder
    return search.results()


def _limits(model: DecodingModel, src_ids: Tensor, cfg: DecodeConfig) -> Tensor:
    """(B,) maximum number of new tokens per sentence (the ``<eos>`` included)."""
    n_src = (src_ids != model.config.pad_id).sum(dim=1)  # (B,)
    limit = (n_src.double() * cfg.max_len_a).floor().long() + cfg.max_len_b
    return limit.clamp(min=1, max=model.config.max_len - 1)


def _follow(cache: Any, hooks: Sequence[Hook], rows: Tensor | None, tokens: Tensor | None) -> None:
    """The cache and every hook follow the rows that live on (``rows``: their parents, None:
    the same rows), which wrote ``tokens`` (None: none yet)."""
    if rows is not None:
        cache.reorder(rows)
    for hook in hooks:
        hook.reorder(rows, tokens)


def _decode_options(head: OutputHead, need_weights: bool) -> dict[str, Any]:
    """The model's ``decode`` options, each passed only when used (a stub need not take
    them)."""
    options: dict[str, Any] = {}
    if need_weights:
        options["need_weights"] = True
    if head.layer is not None:
        options["output"] = head.layer
    return options
