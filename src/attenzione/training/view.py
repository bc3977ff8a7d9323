"""Training made visible: teacher forcing, the loss at each position, and a padded batch's masks.

:func:`teacher_forced` puts a sentence and its reference translation through the model the way
a training step does — the batch :func:`~attenzione.data.batching.collate` makes, every target
position at once under the causal mask, logits at the real positions only, the loss from the
very function the trainer calls (:func:`~attenzione.training.loss.label_smoothed_loss`, label
smoothing included) — and lists, at each position, the piece fed, the reference piece, its
probability, −log p, the position's loss, and the piece greedy decoding would have chosen
there (``differs``: it is not the reference's). It also decodes the reference step by step
on the K/V cache, as translation does, and reports how far those log-probabilities are from
the full pass's (``cached_check``).

:func:`padded_batch_masks` runs a batch of two sentences of different lengths and returns the
three masks the model applied to it (seed 000's definitions, :mod:`attenzione.model.masks`): the
encoder's pairwise padding mask, the decoder's causal ∧ padding mask, the cross mask.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import torch

from attenzione.config import TrainConfig
from attenzione.data.batching import Batch, collate
from attenzione.data.corpus import normalize
from attenzione.training.loss import label_smoothed_loss
from attenzione.translator.translator import Translator
from attenzione.viz.maps import display_tokens

#: the trainer's label smoothing unless told otherwise (TrainConfig's default)
DEFAULT_SMOOTHING: float = next(
    f.default for f in dataclasses.fields(TrainConfig) if f.name == "label_smoothing"
)  # type: ignore[assignment]


def _source_ids(translator: Translator, text: str) -> list[int]:
    """The source as the model reads it (without the final ``<eos>``, which collate adds)."""
    if not text.strip():
        raise ValueError("the sentence is empty")
    ids = translator.encode_source(text)
    return ids[:-1] if ids and ids[-1] == translator.model.config.eos_id else ids


def _batch(translator: Translator, pairs: Sequence[tuple[list[int], list[int]]]) -> Batch:
    cfg = translator.model.config
    return collate(pairs, pad_id=cfg.pad_id, bos_id=cfg.start_id, eos_id=cfg.eos_id)


def teacher_forced(
    translator: Translator, text: str, reference: str, *, smoothing: float | None = None
) -> dict[str, Any]:
    """The training view of ``text`` → ``reference`` (the module docstring). ``smoothing``:
    the label smoothing ε (None: the trainer's default,
    :attr:`attenzione.config.TrainConfig.label_smoothing`)."""
    if not reference.strip():
        raise ValueError("the reference translation is empty")
    eps = DEFAULT_SMOOTHING if smoothing is None else float(smoothing)
    if not 0.0 <= eps < 1.0:
        raise ValueError(f"label smoothing must be in [0, 1), got {eps}")
    model = translator.model
    cfg = model.config
    src = _source_ids(translator, text)
    ref = translator.tgt_tokenizer.encode(normalize(reference))
    if not ref:
        raise ValueError("the reference translation makes no pieces")
    if len(ref) + 1 > cfg.max_len or len(src) + 1 > cfg.max_len:
        raise ValueError(f"the pair is longer than the model's {cfg.max_len} positions")
    batch = _batch(translator, [(src, ref)])
    real = batch.tgt_out != cfg.pad_id
    with torch.inference_mode():
        # what train_step computes: logits at the real target positions, then the loss
        logits = model(batch.src_ids, batch.tgt_in, logits_at=real).logits.float()  # (N,V)
        smoothed, nll, n_tok = label_smoothed_loss(
            logits, batch.tgt_out, pad_id=cfg.pad_id, smoothing=eps
        )
        target = batch.tgt_out[real]  # (N,)
        lprobs = torch.log_softmax(logits, dim=-1)
        per_position = [
            float(
                label_smoothed_loss(
                    logits[i : i + 1], target[i : i + 1, None], pad_id=cfg.pad_id, smoothing=eps
                )[0]
            )
            for i in range(n_tok)
        ]
        cached = _cached_logprobs(translator, batch)  # (N,V)
    cached_check = float((cached - lprobs).abs().max())
    tok = translator.tgt_tokenizer
    fed = batch.tgt_in[0].tolist()
    positions = []
    for i in range(n_tok):
        y = int(target[i])
        best = int(lprobs[i].argmax())
        lp = float(lprobs[i, y])
        positions.append(
            {
                "position": i,
                "fed": display_tokens([tok.id_to_token(fed[i])])[0],
                "reference": display_tokens([tok.id_to_token(y)])[0],
                "reference_id": y,
                "probability": float(torch.exp(lprobs[i, y])),
                "logprob": lp,
                "nll": -lp,
                "loss": per_position[i],
                "greedy": display_tokens([tok.id_to_token(best)])[0],
                "greedy_id": best,
                "greedy_probability": float(torch.exp(lprobs[i, best])),
                "differs": best != y,
            }
        )
    return {
        "source": text,
        "reference": reference,
        "src_tokens": display_tokens(
            [translator.src_tokenizer.id_to_token(i) for i in batch.src_ids[0].tolist()]
        ),
        "smoothing": eps,
        "positions": positions,
        "tokens": n_tok,
        "loss": float(smoothed) / n_tok,
        "nll": float(nll) / n_tok,
        "perplexity": float(torch.exp(nll / n_tok)),
        "greedy_differs": sum(p["differs"] for p in positions),
        "cached_check": cached_check,
    }


def _cached_logprobs(translator: Translator, batch: Batch) -> torch.Tensor:
    """The reference decoded one position at a time on the K/V cache, as translation runs:
    (N,V) log-probabilities at the real positions of ``batch`` (one sentence)."""
    model = translator.model
    enc = model.encode(batch.src_ids)
    t = batch.tgt_in.shape[1]
    cache = model.init_cache(enc.memory, enc.memory_mask, capacity=t)
    rows = []
    for i in range(t):
        out = model.decode(batch.tgt_in[:, i : i + 1], cache=cache)
        rows.append(torch.log_softmax(out.logits[0, -1].float(), dim=-1))
    return torch.stack(rows)


def shorter(text: str) -> str:
    """A shorter sentence to pad a batch with: the first half of ``text``'s words (at least
    one)."""
    words = text.split()
    return " ".join(words[: max(1, len(words) // 2)])


def padded_batch_masks(translator: Translator, first: str, second: str) -> dict[str, Any]:
    """The three masks the model applies to a padded batch of two sentences (each with its
    translation teacher-forced): ``encoder`` (B,S,S), ``decoder`` (B,T,T), ``cross`` (B,T,S) as
    lists of booleans, True = may attend, with each sentence's ``src_tokens`` and
    ``tgt_tokens`` (padding included, as ``<pad>``)."""
    texts = [first, second]
    srcs = [_source_ids(translator, t) for t in texts]
    outs = translator.translate_ids([[*s, translator.model.config.eos_id] for s in srcs])
    tgts = [list(o[0].tokens) for o in outs]
    batch = _batch(translator, list(zip(srcs, tgts, strict=True)))
    with torch.inference_mode():
        out = translator.model(batch.src_ids, batch.tgt_in, need_weights=True)
    src_tok, tgt_tok = translator.src_tokenizer, translator.tgt_tokenizer
    b, s = batch.src_ids.shape
    t = batch.tgt_in.shape[1]
    enc = out.encoder.self_mask
    dec, cross = out.decoder.self_mask, out.decoder.cross_mask
    assert enc is not None and dec is not None and cross is not None
    return {
        "sentences": texts,
        "src_tokens": [
            display_tokens([src_tok.id_to_token(i) for i in row]) for row in batch.src_ids.tolist()
        ],
        "tgt_tokens": [
            display_tokens([tgt_tok.id_to_token(i) for i in row]) for row in batch.tgt_in.tolist()
        ],
        "translations": [tgt_tok.decode(t_) for t_ in tgts],
        "encoder": enc.expand(b, 1, s, s)[:, 0].tolist(),
        "decoder": dec.expand(b, 1, t, t)[:, 0].tolist(),
        "cross": cross.expand(b, 1, t, s)[:, 0].tolist(),
        "src_ids": batch.src_ids.tolist(),
        "tgt_in": batch.tgt_in.tolist(),
        "pad_id": translator.model.config.pad_id,
    }
