"""The numbers of docs/attention.md's second tour, from the shipped en→it model.

    python tools/journey_tour.py

Follows one token of seed 000's sentence through the whole model (greedy; the position fed
``▁introdott``, which writes the participle's ending), then shows the training view of a
reference translation, the three masks of a padded batch, and the occlusion of each word
beside the heads' cross-attention. Every figure of the tour is printed here.
"""

from __future__ import annotations

from typing import Any

from attenzione.config import search_config
from attenzione.training.view import padded_batch_masks, teacher_forced
from attenzione.translator.translator import Translator

SENTENCE = "The transformer architecture was introduced in 2017."
REFERENCE = "L'architettura del Transformer è stata introdotta nel 2017."


def _first(values: Any, n: int = 4) -> str:
    flat: list[float] = []

    def walk(v: Any) -> None:
        if isinstance(v, list):
            for x in v:
                walk(x)
        else:
            flat.append(v)

    walk(values)
    return "[" + ", ".join("−∞" if x is None else f"{x:+.4f}" for x in flat[:n]) + ", …]"


def journey(tr: Translator) -> None:
    [out] = tr.translate(SENTENCE, search=search_config(1))
    pieces = [tr.tgt_tokenizer.id_to_token(i) for i in out.candidates[0].ids]
    token = pieces.index("▁introdott") + 1  # the position fed ▁introdott
    made = tr.journey(SENTENCE, token, beam=1)
    data = made.to_dict()
    print(f"greedy: {out.text}")
    print(f"token {token}: fed {data['input_piece']!r}, writes {data['predicted_piece']!r}; "
          f"largest difference from the model over {len(data['steps'])} steps: "
          f"{data['largest_check']:.1e}")  # fmt: skip
    for s in data["steps"]:
        first_head = s.get("head") in (None, 0)
        if s.get("layer") not in (None, 0, 2) or not first_head:
            continue
        extra = {k: s[k] for k in ("mean", "variance", "note", "masked_keys", "rank", "piece",
                                   "id", "position") if k in s}  # fmt: skip
        if "wavelengths" in s:
            extra["wavelengths"] = [s["wavelengths"][0], s["wavelengths"][-1]]
        check = "" if s["check"] is None else f" check {s['check']:.1e}"
        print(f"  {s['where']:<36} {s['name']:<20} {s['shape']:<14} {_first(s['values'])}"
              f"{check} {extra if extra else ''}")  # fmt: skip
    fired = [s["fired"] for s in data["steps"] if s["name"] == "activation"]
    print(f"  units that fire, per decoder layer: {fired} of {data['config']['d_ff']}")
    softmax = next(s for s in data["steps"] if s["name"] == "softmax" and "head" not in s)
    pairs = zip(softmax["pieces"][:3], softmax["values"][:3], strict=True)
    tops = ", ".join(f"{p!r} {v * 100:.1f}%" for p, v in pairs)
    print(f"  softmax over {softmax['shape']} pieces: {tops}")
    for s in data["steps"]:  # where the last layer's heads look, at this position
        if s["name"] == "softmax" and s.get("layer") == 2 and "head" in s:
            keys = next(k for k in data["steps"] if k["name"] == "key" and
                        k.get("layer") == 2 and k["block"] == s["block"])["keys"]  # fmt: skip
            j = max(range(len(s["values"])), key=lambda i: s["values"][i])
            print(
                f"  layer 2 {s['block']} head {s['head']}: most on {keys[j]!r} "
                f"({s['values'][j]:.2f})"
            )


def training(tr: Translator) -> None:
    view = teacher_forced(tr, SENTENCE, REFERENCE)
    print(f"training view of {REFERENCE!r}: loss {view['loss']:.4f} (ε {view['smoothing']}), "
          f"NLL {view['nll']:.4f}, perplexity {view['perplexity']:.2f}, "
          f"cache vs full pass {view['cached_check']:.1e}")  # fmt: skip
    for p in view["positions"]:
        mark = f"  greedy: {p['greedy']!r} {p['greedy_probability'] * 100:.1f}%" if p[
            "differs"] else ""  # fmt: skip
        print(
            f"  {p['position']:>2} {p['fed']!r:>16} → {p['reference']!r:<16} "
            f"p {p['probability']:.4f}  −log p {p['nll']:.3f}  loss {p['loss']:.3f}{mark}"
        )


def masks(tr: Translator) -> None:
    drawn = padded_batch_masks(tr, SENTENCE, "The cat sleeps.")
    for b in (0, 1):
        pads = drawn["src_tokens"][b].count("<pad>"), drawn["tgt_tokens"][b].count("<pad>")
        print(f"  batch row {b}: {drawn['sentences'][b]!r} → {drawn['translations'][b]!r}: "
              f"{pads[0]} source and {pads[1]} target <pad>")  # fmt: skip


def occlusion(tr: Translator) -> None:
    found = tr.occlusion(SENTENCE, beam=1)
    print(f"occlusion over {found['words']}")
    for j, w in enumerate(found["words"]):
        col = [row[j] for row in found["importance"]]
        t = max(range(len(col)), key=col.__getitem__)
        print(f"  without {w!r}: {found['targets'][t]!r} loses {col[t]:.2f} nats")
    heads = sorted(found["heads"], key=lambda h: -h["top1"])
    for h in (*heads[:2], *heads[-2:]):
        print(
            f"  layer {h['layer']} head {h['head']}: top1 {h['top1']:.2f}, "
            f"r {h['correlation']:+.2f}"
        )


def main() -> None:
    tr = Translator.from_pretrained()
    journey(tr)
    training(tr)
    masks(tr)
    occlusion(tr)


if __name__ == "__main__":
    main()
