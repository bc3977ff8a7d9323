"""One sentence's decoding, step by step: what :meth:`Translator.trace` returns.

A :class:`Trace` joins what the search saw (:class:`attenzione.search.trace.TraceRecorder`,
recorded while ``translate`` ran) and the sentence's attention maps (the translation replayed
through the model, :meth:`Translator.attention`). Its :meth:`Trace.to_dict` is the JSON the
service's ``POST /trace``, ``attenzione attention --trace --json`` and the player on the page
read:

``translation``, ``source``, ``pieces`` (the output's pieces), ``method``, ``beam``,
``prefix``, ``ablate`` and ``steps`` — one per decoding step, each with ``step``, ``prefix``
(the pieces written before it), ``chosen`` (the piece written; ``</s>``-style ``<eos>`` at the
end), ``forced`` (a piece of the forced prefix), ``top`` (``{"piece", "id", "logit",
"logprob"}``, best first, over the whole vocabulary after the hard constraints: the
distribution the search chose from), ``cross_attention`` (per decoder layer, the step's row
averaged over the heads, over the source pieces) and ``self_attention`` (the same over the
pieces fed so far); for beam search ``beams``, the search's tree (``{"id", "step", "parent",
"piece", "log_prob", "score", "status"}``, status kept, finished or pruned) and ``path`` (the
winner's node at each step). ``attention``: the whole maps, as the viewer draws them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from attenzione.search.trace import Node, StepRecord
from attenzione.viz.maps import AttentionMaps, display_tokens


@dataclass
class Trace:
    """A decoding trace (the module docstring): the search's ``records`` and ``nodes``, the
    winner's ``chain`` of nodes (beam search; one a step), the output ``tokens`` and the
    attention ``maps``."""

    source: str
    translation: str
    tokens: list[int]
    pieces: list[str]
    records: list[StepRecord]
    nodes: list[Node]
    chain: list[int]
    maps: AttentionMaps
    method: str
    beam: int
    prefix_len: int = 0
    prefix: str = ""
    ablate: list[str] = field(default_factory=list)
    id_to_piece: Any = None
    eos_id: int = 2

    def chosen_ids(self) -> list[int]:
        """The piece chosen at each step: the output's, then its ``<eos>`` (unless it was cut
        at the length cap)."""
        ids = list(self.tokens)
        ended = len(self.chain or self.records) > len(ids)
        return ids + [self.eos_id] if ended else ids

    def row_of(self, step: int) -> int:
        """The row of step ``step``'s record that the output continues."""
        if not self.chain:
            return 0
        return self.records[step].rows.index(None if step == 0 else self.chain[step - 1])

    def to_dict(self, decimals: int = 4) -> dict[str, Any]:
        piece = self.id_to_piece
        chosen = self.chosen_ids()
        cross = self.maps.weights("cross").float().mean(dim=1)  # (L,T,S)
        selfs = self.maps.weights("decoder").float().mean(dim=1)  # (L,T,T)

        def r(x: float) -> float:
            return round(float(x), decimals)

        steps = []
        for t in range(len(chosen)):
            record = self.records[t]
            row = self.row_of(t)
            top = [
                {"piece": piece(i), "id": i, "logit": r(lg), "logprob": r(lp)}
                for i, lg, lp in zip(
                    record.ids[row], record.logits[row], record.log_probs[row], strict=True
                )
            ]
            steps.append(
                {
                    "step": t,
                    "prefix": [piece(i) for i in chosen[:t]],
                    "chosen": piece(chosen[t]),
                    "chosen_id": chosen[t],
                    "forced": t < self.prefix_len,
                    "top": top,
                    "cross_attention": [[r(x) for x in layer[t].tolist()] for layer in cross],
                    "self_attention": [
                        [r(x) for x in layer[t, : t + 1].tolist()] for layer in selfs
                    ],
                }
            )
        out: dict[str, Any] = {
            "source": self.source,
            "translation": self.translation,
            "pieces": self.pieces,
            "shown_pieces": display_tokens(self.pieces),
            "method": self.method,
            "beam": self.beam,
            "prefix": self.prefix,
            "ablate": self.ablate,
            "steps": steps,
        }
        if self.method == "beam":
            out["beams"] = [
                {
                    "id": i,
                    "step": n.step,
                    "parent": n.parent,
                    "piece": piece(n.token),
                    "log_prob": r(n.log_prob),
                    "score": None if n.score is None else r(n.score),
                    "status": n.status,
                }
                for i, n in enumerate(self.nodes)
            ]
            out["path"] = list(self.chain)
        out["attention"] = self.maps.to_dict(decimals)
        return out
