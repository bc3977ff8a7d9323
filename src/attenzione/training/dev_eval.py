"""Measuring a model during training: dev loss and perplexity, greedy BLEU/chrF.

The dev loss is computed exactly as the training loss (label-smoothed, per target token) on
the dev pairs that fit the training limit, *whole*: a pair is either scored with all its
tokens or left out (and counted), never scored on a target cut short — a cut target has no
``<eos>`` where the sentence really ends and would teach the number something false.

BLEU and chrF are sacreBLEU's on greedy translations of the head of each dev set, through
:class:`~attenzione.translator.translator.Translator` (input policy included), without the repair of
garbled numbers, so the figures show what the model itself learned.
"""

from __future__ import annotations

import math
from typing import Any

import torch

from attenzione.config import DecodeConfig, TrainConfig
from attenzione.data import collate
from attenzione.data.tokenizers import Tokenizer
from attenzione.evaluation import corpus_scores, number_fidelity
from attenzione.model.transformer import Transformer
from attenzione.training.data_prep import PreparedData
from attenzione.training.loss import label_smoothed_loss
from attenzione.training.step import autocast
from attenzione.translator.translator import Translator

Pairs = list[tuple[str, str]]
DEV_BATCH = 64


def evaluate(model: Transformer, data: PreparedData, cfg: TrainConfig) -> dict[str, Any]:
    """Dev loss/perplexity on the dev split and greedy BLEU/chrF on the dev sets' heads
    (``model`` in eval mode meanwhile, back in training mode after)."""
    model.eval()
    try:
        record: dict[str, Any] = dev_loss(
            model,
            data.dev,
            data.src_tok,
            data.tgt_tok,
            limit=cfg.max_src_tokens,
            smoothing=cfg.label_smoothing,
            bf16=cfg.bf16,
        )
        translator = Translator(
            model, data.src_tok, data.tgt_tok, max_src_tokens=cfg.max_src_tokens
        )
        dev_sets = {"": data.dev, **data.extra_dev}
        record.update(dev_scores(translator, dev_sets, cfg.dev_bleu_sentences))
    finally:
        model.train()
    return record


@torch.no_grad()
def dev_loss(
    model: Transformer,
    pairs: Pairs,
    src_tok: Tokenizer,
    tgt_tok: Tokenizer,
    *,
    limit: int,
    smoothing: float,
    bf16: bool = False,
) -> dict[str, float]:
    """{dev_loss, dev_ppl, dev_loss_pairs}: loss per target token over the pairs that fit.

    ``limit`` is the training limit on tokens per side (pairs at or beyond it are left out of
    training, and so of this measure).
    """
    cfg = model.config
    device = next(model.parameters()).device
    src = src_tok.encode_batch([s for s, _ in pairs])
    tgt = tgt_tok.encode_batch([t for _, t in pairs])
    kept = [(s, t) for s, t in zip(src, tgt, strict=True) if len(s) < limit and len(t) < limit]
    total, nll_sum, n_tok = 0.0, 0.0, 0
    for start in range(0, len(kept), DEV_BATCH):
        batch = collate(
            kept[start : start + DEV_BATCH],
            pad_id=cfg.pad_id,
            bos_id=cfg.start_id,
            eos_id=cfg.eos_id,
        ).to(device)
        with autocast(device, bf16):
            logits = model(batch.src_ids, batch.tgt_in).logits  # (B,T,V)
        loss, nll, n = label_smoothed_loss(
            logits, batch.tgt_out, pad_id=cfg.pad_id, smoothing=smoothing
        )
        total, nll_sum, n_tok = total + float(loss), nll_sum + float(nll), n_tok + n
    return {
        "dev_loss": total / max(n_tok, 1),
        "dev_ppl": math.exp(min(nll_sum / max(n_tok, 1), 50)),
        "dev_loss_pairs": len(kept),
    }


def dev_scores(
    translator: Translator, dev_sets: dict[str, Pairs], n_sentences: int
) -> dict[str, Any]:
    """Greedy BLEU/chrF (and the share of source numbers kept) on the head of each dev set.

    The run's own split is named "" (keys ``dev_bleu`` …), every ``--extra-dev`` set by its
    name (``dev_<name>_bleu`` …); with extra sets, ``dev_score`` is the mean BLEU of all, the
    figure ``best/`` follows.
    """
    record: dict[str, Any] = {}
    for name, pairs in dev_sets.items():
        head = pairs[:n_sentences]
        sources = [s for s, _ in head]
        # the model's own output: greedy (no ranking term), numbers as it wrote them, so the
        # figures show what it learned
        plain = DecodeConfig(method="greedy")
        steps = [n for n in translator.pipeline.names if n not in ("numbers", "number-format")]
        hyps = [r.text for r in translator.translate(sources, search=plain, steps=steps)]
        scores = corpus_scores(hyps, [t for _, t in head])
        prefix = f"dev_{name}_" if name else "dev_"
        record[prefix + "bleu"] = scores.bleu
        record[prefix + "chrf"] = scores.chrf
        kept = number_fidelity(sources, hyps)
        if kept.total:
            record[prefix + "numbers"] = kept.share
    if len(dev_sets) > 1:
        names = [f"dev_{n}_bleu" if n else "dev_bleu" for n in dev_sets]
        record["dev_score"] = sum(record[n] for n in names) / len(names)
    return record
