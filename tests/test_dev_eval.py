"""Dev measures during training: the loss is taken on whole pairs, never on cut targets."""

from __future__ import annotations

from attenzione.training.dev_eval import dev_loss
from tiny_model import tiny_translator


def test_dev_loss_leaves_out_pairs_it_would_have_to_cut() -> None:
    tr = tiny_translator()
    short = [("the cat is here", "il gatto è qui")] * 3
    long_target = [("the cat", " ".join(["il gatto è qui"] * 10))]  # 40 target tokens
    kw = dict(limit=20, smoothing=0.1)
    alone = dev_loss(tr.model, short, tr.src_tokenizer, tr.tgt_tokenizer, **kw)  # type: ignore[arg-type]
    mixed = dev_loss(tr.model, short + long_target, tr.src_tokenizer, tr.tgt_tokenizer, **kw)  # type: ignore[arg-type]
    assert alone["dev_loss_pairs"] == 3 and mixed["dev_loss_pairs"] == 3
    # the long pair is not scored on a truncated target (it used to be, without its <eos>)
    assert mixed["dev_loss"] == alone["dev_loss"]
