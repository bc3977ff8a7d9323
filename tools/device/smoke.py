"""Device smoke test: the shipped model translates on the device (greedy must work: the
training run's dev evaluation decodes greedily; beam is reported)."""

import sys
import time
import traceback

import torch

from attenzione.config import search_config
from attenzione.translator.translator import Translator

dev = sys.argv[1] if len(sys.argv) > 1 else "cuda"
tr = Translator.from_pretrained(pack=False)
tr.model.to(dev)
src = ["The cat sleeps on the red sofa.", "In 1998 she moved to Paris, where she wrote 3 novels."]
ok = True
for beam in (1, 4):
    t = time.time()
    try:
        out = [r.text for r in tr.translate(src, search=search_config(beam))]
        print("beam", beam, out, f"{time.time() - t:.2f}s", flush=True)
    except Exception:
        traceback.print_exc()
        ok = ok and beam != 1
print("device", next(tr.model.parameters()).device, torch.__version__)
sys.exit(0 if ok else 3)
