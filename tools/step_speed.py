"""Training-step speed of a preset's shape at a given vocabulary size, fp32 and bf16.

    python tools/step_speed.py broad 2 16000     # preset, threads, vocabulary
    python tools/step_speed.py small 2 24000 6   # … and encoder layers (the shipped 6+3)
    python tools/step_speed.py small 2 24000 6 2048 bf16   # … a feed-forward width, bf16 only

One fixed batch of 160 pairs × 25 target tokens (4,000 tokens, the broad run's budget),
forward + label-smoothed loss + backward + AdamW, four steps each, with the block-wise loss
the trainer uses and with the plain log-softmax one (``reference_loss``) it replaced; prints
the step times and target tokens/s of the fastest step after the first. Logits only at the
target positions, as the trainer asks for them. Stop any trainer first: a figure taken beside
one measures the contention. docs/tokenizer-study.md cites it.
"""

from __future__ import annotations

import sys
import time
from contextlib import nullcontext

import torch

from attenzione.config import ModelConfig
from attenzione.model.transformer import Transformer
from attenzione.training.loss import label_smoothed_loss, reference_loss
from attenzione.training.presets import get_preset


def main() -> None:
    name, threads, vocab = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    torch.set_num_threads(threads)
    shape = dict(get_preset(name).model)
    if len(sys.argv) > 4:
        shape["n_enc_layers"] = int(sys.argv[4])
    if len(sys.argv) > 5:
        shape["d_ff"] = int(sys.argv[5])
    only_bf16 = sys.argv[6:7] == ["bf16"]
    model = Transformer(ModelConfig(src_vocab_size=vocab, tgt_vocab_size=vocab, **shape)).train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    batch, length = 160, 25
    src = torch.randint(4, vocab, (batch, length))
    tgt = torch.randint(4, vocab, (batch, length + 1))
    real = tgt[:, 1:] != 0  # no padding here: every position
    size = f"{shape['n_enc_layers']}+{shape['n_dec_layers']}, d_ff {shape['d_ff']}"
    runs = ((False, False), (True, False), (False, True), (True, True))
    for bf16, plain in [(True, False)] if only_bf16 else runs:
        times = []
        for _ in range(4):
            start = time.perf_counter()
            ctx = torch.autocast("cpu", dtype=torch.bfloat16) if bf16 else nullcontext()
            with ctx:
                logits = model(src, tgt[:, :-1], logits_at=real).logits  # (N,V)
            if plain:
                loss, _ = reference_loss(logits, tgt[:, 1:][real], smoothing=0.1)
                n = logits.shape[0]
            else:
                loss, _, n = label_smoothed_loss(logits, tgt[:, 1:], pad_id=0, smoothing=0.1)
            (loss / n).backward()
            opt.step()
            opt.zero_grad()
            times.append(time.perf_counter() - start)
        best = batch * length / min(times[1:])
        label = ("bf16" if bf16 else "fp32") + (", plain loss" if plain else "")
        steps = [round(t, 2) for t in times]
        print(f"{name} ({size}) {label} vocab {vocab}: steps {steps} s, {best:.0f} tok/s")


if __name__ == "__main__":
    main()
