"""The search's one hook protocol: what masks the scores and what charges them.

Everything a caller adds to the search is a :class:`Hook`, a small object the loop consults at
every step, in list order, as Hugging Face's logits processors are — with the incremental
state our K/V cache needs. A hook is made for a batch of sentences and keeps its state per
*row*, and the rows change: beam search starts K rows per sentence, finished sentences leave
the batch, beams are re-ranked. So a hook has, besides what it does each step, one method that
follows the rows exactly as the cache does:

* :meth:`Hook.start` — a new search of ``batch`` sentences, one row each (raise
  ``ValueError`` here if the hook does not fit them);
* :meth:`Hook.reorder` — the rows live on from ``rows`` (None: the same rows) and, unless
  ``tokens`` is None (the strategy's starting rows, before any token), wrote ``tokens``.

What a hook does each step makes it one of two kinds:

* a :class:`Constraint` **masks** scores: :meth:`Constraint.mask` sets to −inf, in place,
  the tokens some rows may not write (``min_len``'s early ``<eos>`` is one:
  :class:`attenzione.search.constraints.MinLength`); it holds for every method. Most mask
  the logits before they are normalised (the probability of a masked token goes to the
  others); one with ``normalised = True`` masks after, the log-probs and the logits alike,
  without renormalising;
* a :class:`Term` **charges** them: it changes how beam search *ranks* its hypotheses, never
  their ``log_prob``. :meth:`Term.charge` says what each continuation costs while searching
  (a :class:`Charge`), :meth:`Term.at_end` what a finished hypothesis pays and whether it
  still *owes* something (then it does not count towards the K that stop the search). Greedy
  decoding and sampling ignore terms: with no other hypothesis to choose, a push could only
  make them write on past their ending.

A :class:`Watcher` is a constraint that masks nothing: it is shown each step's logits and
log-probs after every constraint (what the strategy chooses from) and follows the rows, and so
records the search without changing it (:mod:`attenzione.search.trace` is one).

The output layer is not a hook but the search's :class:`OutputHead`: the model's whole
vocabulary (:class:`FullVocabulary`), or a shortlist's
(:class:`attenzione.search.shortlist.ShortlistHead`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol

from torch import Tensor


class Hook:
    """What every hook has: it follows the rows (see the module docstring)."""

    # the loop passes each step's cross-attention (per decoder layer, (N,H,1,S)) to
    # Term.charge; the decoder computes it only when some hook says so
    reads_attention: bool = False

    def start(self, batch: int, vocab: int) -> None:
        """A new search of ``batch`` sentences over a ``vocab``-token target vocabulary, one
        row per sentence. Raise ``ValueError`` if this hook does not fit them."""

    def reorder(self, rows: Tensor | None, tokens: Tensor | None) -> None:
        """The rows live on from ``rows`` (N',) (None: the same rows) and wrote ``tokens``
        (N',) (None: nothing yet, the strategy's starting rows)."""


class Constraint(Hook):
    """A hard constraint: tokens some rows may not write now. It must never leave a row with
    nothing to write."""

    # False: masks the logits, before they are normalised; True: masks after normalisation,
    # the log-probs and the logits alike (called once with each), without renormalising
    normalised: bool = False

    def mask(self, scores: Tensor) -> None:
        """Set to −inf, in place, what each row of the (N,V) ``scores`` may not write."""


class Watcher(Constraint):
    """A hook that changes nothing: after every constraint has masked, :meth:`watch` is shown
    the step's (N,V) ``logits`` and ``log_probs`` — what the strategy chooses from. Made into
    a batch's hooks as a constraint is (after the registered ones when it is a user's)."""

    normalised = True

    def mask(self, scores: Tensor) -> None:
        """A watcher masks nothing."""

    def watch(self, logits: Tensor, log_probs: Tensor) -> None:
        """See one step's scores (do not change them)."""


class Charge(Protocol):
    """What continuations cost in beam search's ranking at one step (≥ 0, subtracted from
    their total log-prob): ``now`` (N,) charged to every continuation of a row (None: none),
    and :meth:`apply`, which subtracts the rest in place from the (N,V) ranking scores."""

    now: Tensor | None

    def apply(self, rank: Tensor) -> None: ...


class Term(Hook):
    """A ranking term of beam search (see the module docstring)."""

    def charge(self, log_probs: Tensor, attention: Sequence[Tensor] | None) -> Charge | None:
        """What the continuations of each row cost this step (None: nothing), given the (N,V)
        ``log_probs`` (and, with ``reads_attention``, the cross-attention)."""
        return None

    def at_end(self, row: int, token: int) -> tuple[float, bool]:
        """A hypothesis finishes: row ``row`` writes ``token`` (``<eos>``, or its last token
        at the length cap). Returns what is subtracted from its ranking score and whether it
        still owes something."""
        return 0.0, False


class OutputHead(Protocol):
    """The search's output layer. ``layer``: what the model's ``decode`` is given as its
    ``output`` (None: the model's own layer); calling the head turns the (N,V') logits that
    layer gives into (N,V) scores over the whole target vocabulary."""

    @property
    def layer(self) -> Callable[[Tensor], Tensor] | None: ...

    def __call__(self, logits: Tensor) -> Tensor: ...


class FullVocabulary:
    """The model's own output layer: every piece of the vocabulary is scored."""

    layer: Callable[[Tensor], Tensor] | None = None

    def __call__(self, logits: Tensor) -> Tensor:
        return logits
