"""Hard constraints of decoding: tokens a row may not write, whatever the model thinks.

Each is a :class:`attenzione.search.hooks.Constraint` passed to
:func:`attenzione.search.decoding.generate` in a list; they hold for every method (greedy,
sampling, beam search).

* :class:`MinLength`: no ``<eos>`` before ``min_len`` tokens (``DecodeConfig.min_len``; the
  loop adds it itself).
* :class:`Never`: tokens no row may write (a model's corpus tags); :class:`NeverNormalised`
  the same after normalisation (an imported Marian model's ``<pad>``).
* :class:`NoDoubledMarks`: a punctuation mark twice in a row only where the source has it
  twice in a row ("sul divano.." was an alternative of "on the sofa.").
* :class:`ForcedPrefix`: each row's translation begins with the tokens given (CTranslate2's
  ``target_prefix``), which keep the probability the model gives them.

The others exist because of byte fallback: a SentencePiece vocabulary spells a
character it lacks as its UTF-8 bytes (``£`` = ``<0xC2><0xA3>``), and a model that writes
bytes can write nonsense with them.

* :class:`ByteBan`: the byte pieces a sentence's source was not spelled with may not be
  written — such a character in the output can only be one copied from the source, and a
  stray byte elsewhere would decode as "�".
* :class:`WellFormedUTF8`: after a lead byte only continuation bytes may follow, as many as it
  announces (and no ``<eos>``); elsewhere a continuation byte, or a byte UTF-8 never uses, may
  not be written. The choice is renormalised over what is allowed, as a ban is.
* :class:`WholeCharacters`: the bytes spell only whole characters of the sentence's source
  (after normalisation: what it masks is not renormalised).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import torch
from torch import Tensor

from attenzione.search.hooks import Constraint


class MinLength(Constraint):
    """No ``<eos>`` (``eos_id``) before ``min_len`` tokens have been written."""

    def __init__(self, min_len: int, eos_id: int) -> None:
        self.min_len, self.eos_id = min_len, eos_id
        self.written = 0

    def start(self, batch: int, vocab: int) -> None:
        self.written = 0

    def mask(self, scores: Tensor) -> None:
        if self.written < self.min_len:
            scores[:, self.eos_id] = float("-inf")

    def reorder(self, rows: Tensor | None, tokens: Tensor | None) -> None:
        if tokens is not None:
            self.written += 1


class Never(Constraint):
    """Tokens no row may ever write: a model's corpus tags (reserved source tokens that a
    joint vocabulary also has on the target side)."""

    def __init__(self, ids: Sequence[int], eos_id: int) -> None:
        if eos_id in ids:
            raise ValueError("<eos> may not be banned: every sentence must be able to end")
        self.ids = list(ids)

    def start(self, batch: int, vocab: int) -> None:
        if any(not 0 <= i < vocab for i in self.ids):
            raise ValueError(f"banned tokens must be ids of the {vocab}-token vocabulary")

    def mask(self, scores: Tensor) -> None:
        scores[:, self.ids] = float("-inf")


class NeverNormalised(Never):
    """:class:`Never` after normalisation: the banned tokens keep their share of the
    probability, as transformers' ``bad_words_ids`` does (an imported Marian model's
    ``<pad>``, its decoder's start token)."""

    normalised = True


class NoDoubledMarks(Constraint):
    """A punctuation mark written twice in a row only where the sentence's source writes it
    twice in a row: "Wait..." keeps its dots, "on the sofa." has no "sul divano.." among its
    alternatives. Any language, any mark: only the source decides.

    ``writes``: (C,V) bool, the target tokens that write each of C marks alone ("." and
    "▁."); ``doubled``: (B,C) bool, whether each sentence's source writes the mark twice in a
    row."""

    def __init__(self, writes: Tensor, doubled: Tensor) -> None:
        self.writes, self.doubled = writes, doubled
        dev = writes.device
        # the mark each token writes alone (-1: none)
        self.column = torch.where(writes.any(0), writes.long().argmax(0), -1)
        self.sentence = torch.zeros(0, dtype=torch.long, device=dev)
        self.last = torch.zeros(0, dtype=torch.long, device=dev)  # (N,) the last mark or -1

    def start(self, batch: int, vocab: int) -> None:
        marks = self.writes.shape[0]
        if tuple(self.writes.shape) != (marks, vocab) or tuple(self.doubled.shape) != (
            batch,
            marks,
        ):
            raise ValueError(f"writes must be (C, {vocab}) and doubled ({batch}, C) booleans")
        self.sentence = torch.arange(batch, device=self.writes.device)
        self.last = torch.full((batch,), -1, dtype=torch.long, device=self.writes.device)

    def mask(self, scores: Tensor) -> None:
        col = self.last.clamp(min=0)
        rows = ((self.last >= 0) & ~self.doubled[self.sentence, col]).nonzero().flatten()
        if rows.numel():
            scores[rows] = scores[rows].masked_fill(self.writes[col[rows]], float("-inf"))

    def reorder(self, rows: Tensor | None, tokens: Tensor | None) -> None:
        if rows is not None:
            self.sentence, self.last = self.sentence[rows], self.last[rows]
        if tokens is not None:
            self.last = self.column[tokens]


class ForcedPrefix(Constraint):
    """Each sentence's translation begins with its ``prefixes`` (token ids; empty: free). At
    step t a row whose prefix is longer than t may write only its token t.

    It masks after normalisation: a forced token keeps the log-prob the model gives it, so the
    prefix is scored as the model reads it (as CTranslate2 scores a ``target_prefix``). A
    forced token another constraint bans (a byte piece the source was not spelled with) is
    refused in one line (ValueError), never dropped in silence."""

    normalised = True

    def __init__(self, prefixes: Sequence[Sequence[int]]) -> None:
        width = max((len(p) for p in prefixes), default=0)
        # (B,L) each sentence's prefix, padded with -1 (free from there)
        self.table = torch.full((len(prefixes), width), -1, dtype=torch.long)
        for b, ids in enumerate(prefixes):
            self.table[b, : len(ids)] = torch.tensor(list(ids), dtype=torch.long)
        self.sentence = torch.zeros(0, dtype=torch.long)  # (N,) the sentence of each row
        self.written = 0

    def start(self, batch: int, vocab: int) -> None:
        if self.table.shape[0] != batch:
            raise ValueError(f"the prefixes are for {self.table.shape[0]} sentences, not {batch}")
        if bool(((self.table < -1) | (self.table >= vocab)).any()):
            raise ValueError(f"a prefix must be ids of the {vocab}-token vocabulary")
        self.sentence = torch.arange(batch)
        self.written = 0

    def mask(self, scores: Tensor) -> None:
        if self.written >= self.table.shape[1]:
            return
        want = self.table[self.sentence, self.written].to(scores.device)  # (N,) -1: free
        rows = (want >= 0).nonzero().squeeze(1)
        if not rows.numel():
            return
        keep = scores[rows, want[rows]]  # (R,) the forced tokens' scores
        if not bool(torch.isfinite(keep).all()):
            token = int(want[rows][~torch.isfinite(keep)][0])
            raise ValueError(
                f"the model cannot write the prefix here: its piece {self.written + 1} "
                f"(id {token}) is one the search rules out for this sentence (a byte or "
                "mark its source does not have)"
            )
        scores[rows] = float("-inf")
        scores[rows, want[rows]] = keep

    def reorder(self, rows: Tensor | None, tokens: Tensor | None) -> None:
        if rows is not None:
            self.sentence = self.sentence[rows.cpu()]
        if tokens is not None:
            self.written += 1


class ByteBan(Constraint):
    """(B,V) booleans: the tokens each sentence may never produce. ``<eos>`` (``eos_id``)
    must stay allowed: every sentence must be able to end."""

    def __init__(self, banned: Tensor, eos_id: int) -> None:
        if banned.dim() == 2 and banned.shape[1] > eos_id and bool(banned[:, eos_id].any()):
            raise ValueError("banned may not ban <eos>: every sentence must be able to end")
        self.banned = banned
        # only the columns some sentence bans are ever masked (a few byte pieces of 24k)
        self.cols = torch.zeros(0, dtype=torch.long, device=banned.device)
        self.rows = banned

    def start(self, batch: int, vocab: int) -> None:
        if self.banned.dtype != torch.bool or tuple(self.banned.shape) != (batch, vocab):
            raise ValueError(f"banned must be a bool tensor of shape {(batch, vocab)}")
        self.cols = self.banned.any(dim=0).nonzero().squeeze(1)  # (C,)
        self.rows = self.banned[:, self.cols]  # (N,C)

    def mask(self, scores: Tensor) -> None:
        if self.cols.numel():
            scores[:, self.cols] = scores[:, self.cols].masked_fill_(self.rows, float("-inf"))

    def reorder(self, rows: Tensor | None, tokens: Tensor | None) -> None:
        if rows is not None:
            self.rows = self.rows[rows]


# what a token is as UTF-8 (utf8_roles)
NOT_A_BYTE, CONTINUATION, NEVER = 0, -1, -2


def utf8_roles(byte_pieces: Mapping[str, int], vocab_size: int) -> Tensor:
    """(V,) long: what each token is as UTF-8, from the vocabulary's byte-fallback pieces
    (``byte_pieces``: ``<0x00>``…``<0xFF>`` and their ids). The number of continuation bytes
    a lead byte announces (1–3), ``CONTINUATION`` for 0x80–0xBF, ``NEVER`` for the bytes
    well-formed UTF-8 never holds (0xC0, 0xC1, 0xF5–0xFF), ``NOT_A_BYTE`` (0) for every other
    token; an ASCII byte is complete in itself (0)."""
    roles = torch.full((vocab_size,), NOT_A_BYTE, dtype=torch.long)
    for piece, i in byte_pieces.items():
        roles[i] = _role(int(piece[3:5], 16))
    return roles


def _role(byte: int) -> int:
    """What ``byte`` is as UTF-8 (:func:`utf8_roles`; -1, no byte: ``NOT_A_BYTE``)."""
    if 0x80 <= byte <= 0xBF:
        return CONTINUATION
    if byte in (0xC0, 0xC1) or byte >= 0xF5:
        return NEVER
    if byte >= 0xC2:
        return 1 if byte <= 0xDF else 2 if byte <= 0xEF else 3
    return NOT_A_BYTE


def _keep_utf8(logits: Tensor, owed: Tensor, cont: Tensor, closed: Tensor) -> None:
    """Mask in place what would break UTF-8: rows that owe continuation bytes (``owed`` > 0)
    may write only those (``cont``: their ids); the others no continuation byte and no
    ``NEVER`` byte (``closed``: the ids of those, so only their columns are touched). A row
    that owes bytes none of which is allowed (all banned) is left as it is rather than
    emptied."""
    waiting = (owed > 0).nonzero().squeeze(1)  # (W,) the rows that owe bytes: few
    if waiting.numel():
        keep = logits[waiting[:, None], cont]  # (W,C)
        able = torch.isfinite(keep).any(dim=1)  # some continuation byte is allowed
        waiting, keep = waiting[able], keep[able]
        logits[waiting] = float("-inf")
        logits[waiting[:, None], cont] = keep
    if closed.numel():
        free = ~(owed > 0)  # (N,)
        logits[:, closed] = logits[:, closed].masked_fill_(free[:, None], float("-inf"))


def _next_owed(owed: Tensor, tokens: Tensor, roles: Tensor) -> Tensor:
    """The continuation bytes each row owes after writing ``tokens``."""
    role = roles[tokens]
    return torch.where(role == CONTINUATION, (owed - 1).clamp(min=0), role.clamp(min=0))


class WellFormedUTF8(Constraint):
    """Byte pieces that always make well-formed UTF-8 (see the module docstring).

    ``roles``: (V,) what each token is as UTF-8 (:func:`utf8_roles`)."""

    def __init__(self, roles: Tensor) -> None:
        self.roles = roles
        # the continuation bytes, all a row that owes some may write; and the bytes a row
        # that owes nothing may not write: continuation and NEVER bytes
        cont = roles == CONTINUATION
        self.cont = cont.nonzero().squeeze(1)
        self.closed = (cont | (roles == NEVER)).nonzero().squeeze(1)
        self.owed = torch.zeros(0, dtype=torch.long, device=roles.device)  # (N,)

    def start(self, batch: int, vocab: int) -> None:
        if tuple(self.roles.shape) != (vocab,):
            raise ValueError(f"utf8 must have one role per target token ({vocab},)")
        self.owed = torch.zeros(batch, dtype=torch.long, device=self.roles.device)

    def mask(self, scores: Tensor) -> None:
        _keep_utf8(scores, self.owed, self.cont, self.closed)

    def reorder(self, rows: Tensor | None, tokens: Tensor | None) -> None:
        if rows is not None:
            self.owed = self.owed[rows]
        if tokens is not None:
            self.owed = _next_owed(self.owed, tokens, self.roles)


class WholeCharacters(Constraint):
    """Byte pieces that spell only whole characters of the sentence's source.

    A byte-fallback vocabulary spells a character it lacks in bytes ("≤" = ``<0xE2>``
    ``<0x89>`` ``<0xA4>``), so such a character in a translation is one the model copies
    from its source, byte by byte. Well-formed UTF-8 (:class:`WellFormedUTF8`) and a ban of
    the bytes the source lacks still let it end "≤" as "≉" (E2 89 89), or "№" (E2 84 96) as
    "℄" (E2 84 84): bytes the source has, in another order. With this, a row that has begun a
    character may only go on with a byte that keeps it the beginning of one of its
    sentence's ``chars``.

    It masks after normalisation: the byte left keeps the probability the model gave it, so
    a character begun by mistake is not made cheaper to finish. A row whose every allowed
    byte is masked already is left as it is rather than emptied.

    ``byte_of``: (V,) the byte each byte piece writes (-1 for other tokens); ``chars``: per
    sentence, the UTF-8 of each character it may spell in bytes (its source's)."""

    normalised = True

    def __init__(self, byte_of: Tensor, chars: Sequence[frozenset[bytes]]) -> None:
        self.byte_of: list[int] = byte_of.tolist()
        self.token_of = {b: t for t, b in enumerate(self.byte_of) if b >= 0}
        # what each token is as UTF-8 (utf8_roles), to count the bytes a character owes
        self.roles = torch.tensor([_role(b) for b in self.byte_of], dtype=torch.long)
        self.chars = list(chars)
        self.sentence: list[int] = []  # the sentence each row belongs to
        self.begun: list[bytes] = []  # the bytes of the character each row is writing
        self.owed = torch.zeros(0, dtype=torch.long)  # (N,) the bytes it still owes

    def start(self, batch: int, vocab: int) -> None:
        if len(self.chars) != batch or len(self.byte_of) != vocab:
            raise ValueError(
                f"whole characters need the characters of {batch} sources and the byte of "
                f"each of {vocab} target tokens"
            )
        self.sentence = list(range(batch))
        self.begun = [b""] * batch
        self.owed = torch.zeros(batch, dtype=torch.long)

    def mask(self, scores: Tensor) -> None:
        for r in (self.owed > 0).nonzero().flatten().tolist():
            begun, n = self.begun[r], len(self.begun[r])
            chars = self.chars[self.sentence[r]]
            allowed = {c[n] for c in chars if n and len(c) > n and c.startswith(begun)}
            ids = [self.token_of[b] for b in allowed if b in self.token_of]
            if not ids or not bool(torch.isfinite(scores[r, ids]).any()):
                continue
            keep = scores[r, ids].clone()
            scores[r] = float("-inf")
            scores[r, ids] = keep

    def reorder(self, rows: Tensor | None, tokens: Tensor | None) -> None:
        if rows is not None:
            parents = rows.tolist()
            self.sentence = [self.sentence[r] for r in parents]
            self.begun = [self.begun[r] for r in parents]
            self.owed = self.owed[rows.cpu()]
        if tokens is None:
            return
        self.owed = _next_owed(self.owed, tokens.cpu(), self.roles)
        for r, (tok, left) in enumerate(zip(tokens.tolist(), self.owed.tolist(), strict=True)):
            byte = self.byte_of[tok]
            if byte < 0x80:  # not a byte piece, or ASCII: no character is open
                self.begun[r] = b""
            elif 0x80 <= byte <= 0xBF:
                self.begun[r] += bytes([byte])
            else:
                self.begun[r] = bytes([byte])
            if not left:
                self.begun[r] = b""  # the character is complete
