"""Text in, text out: the model, its two tokenizers and the decoder, loaded as one object.

A :class:`Translator` is what a model directory becomes in memory. The tokenizers travel with
the weights (``src_tokenizer/``, ``tgt_tokenizer/``), so translation always tokenizes exactly
as training did — the mismatch users of other toolkits keep running into cannot happen here.

One call does the work, :meth:`Translator.translate`::

    texts ─▶ the text pipeline prepares each line (attenzione.pipeline) ─▶ segments
          ─▶ source ids, batched by length ─▶ generate(): search + hard constraints +
             ranking terms (attenzione.search.decoding, attenzione.search.scoring) ─▶ hypotheses
          ─▶ the pipeline restores each segment's translation ─▶ one Translation per text

What it does besides the model is explicit and switchable: ``steps`` picks the text steps
(:class:`attenzione.pipeline.Pipeline`; ``()`` for the model alone) and ``terms`` the weights
of beam search's ranking terms (:class:`attenzione.search.scoring.Terms`). A model directory's
``info.json`` records the pipeline it was measured with, which is the default.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch
from torch import Tensor

from attenzione.config import DecodeConfig, search_config
from attenzione.data.corpus import normalize, without_controls
from attenzione.data.numbers import NUMBER_FORMATS
from attenzione.data.tokenizers import Tokenizer
from attenzione.model.transformer import Transformer
from attenzione.pipeline import Context, Pipeline, Segment
from attenzione.pipeline.markup import Tag, place
from attenzione.search.decoding import Hypothesis, generate
from attenzione.search.scoring import TERM_NAMES, Scoring, Terms
from attenzione.search.shortlist import Shortlist, output_layer
from attenzione.translator import model_dir
from attenzione.translator.candidates import Candidate, Translation, assemble
from attenzione.translator.model_dir import PRETRAINED_DIR

if TYPE_CHECKING:
    from attenzione.viz.maps import AttentionMaps

__all__ = ["PRETRAINED_DIR", "BatchRunner", "Candidate", "Translation", "Translator"]

# Decodes batches of source ids elsewhere (attenzione.translator.workers): (batches, search, terms)
# →
# each batch's hypotheses, in order, as Translator.decode_batch gives them.
BatchRunner = Callable[
    [list[list[list[int]]], DecodeConfig, Terms], Iterable[list[list[Hypothesis]]]
]

# Lines taken from an iterable at a time by translate_iter: sorted by length inside a chunk
# (little padding), yielded in input order as each chunk finishes (output streams).
STREAM_CHUNK = 512

# The decoder layer whose cross-attention places inline tags (attenzione.pipeline.markup; negative
# counts from the last), and whether a target piece is read at the step that feeds it back
# (True) or at the one that predicts it.
ALIGN_LAYER = 0
ALIGN_SHIFT = True


class Translator:
    """A trained model with its tokenizers. Build one with :meth:`from_pretrained`.

    ``known_words`` / ``translated_words``: the word check's lists
    (:mod:`attenzione.search.lexicon`;
    None: no check, every source word free to copy)."""

    def __init__(
        self,
        model: Transformer,
        src_tokenizer: Tokenizer,
        tgt_tokenizer: Tokenizer,
        *,
        info: dict[str, Any] | None = None,
        max_src_tokens: int | None = None,
        known_words: Sequence[str] | None = None,
        translated_words: Sequence[str] | None = None,
        shortlist: Shortlist | None = None,
    ) -> None:
        self.model = model.eval()
        # the vocabulary shortlist (attenzione.search.shortlist): used while use_shortlist is True
        if shortlist is not None:
            cfg = model.config
            shortlist.check(cfg.src_vocab_size, cfg.tgt_vocab_size)
        self.shortlist = shortlist
        self.use_shortlist = shortlist is not None
        self.src_tokenizer = src_tokenizer
        self.tgt_tokenizer = tgt_tokenizer
        self.info = dict(info or {})
        limit = max_src_tokens or int(self.info.get("max_src_tokens", 100))
        # The source also carries <eos>, and positions must exist for it.
        self.max_src_tokens = min(limit, model.config.max_len - 1)
        known = None if known_words is None else sorted(set(known_words))
        translated = None if translated_words is None else sorted(set(translated_words))
        not_free = frozenset(translated or ())
        # how the target language writes 1,234.5 (the number-format step): the model's own
        number_format = str(self.info.get("number_format", "keep"))
        if number_format not in NUMBER_FORMATS:
            raise ValueError(
                f"info.json: number_format must be one of {', '.join(NUMBER_FORMATS)}, "
                f"not {number_format!r}"
            )
        self.ctx = Context(
            src_tokenizer,
            self.max_src_tokens,
            model.config.eos_id,
            known_words=known,
            not_free=not_free,
            number_format=number_format,
            place_tags=self._place_tags,
            source_language=str(self.info.get("source_language", "en")),
        )
        self.scoring = Scoring(model.config, src_tokenizer, tgt_tokenizer, known, not_free)
        self._translated = translated
        # the pipeline and ranking terms the model was measured with (info.json), by default
        recorded = self.info.get("pipeline") or {}
        try:
            self.pipeline = Pipeline.build(recorded.get("steps"))
            weights = {TERM_NAMES[k]: v for k, v in (recorded.get("terms") or {}).items()}
            self.terms = Terms(**weights)
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"info.json: a bad pipeline: {exc}") from None
        # the decoder layer whose cross-attention places inline tags (attenzione.pipeline.markup)
        self.alignment_layer = ALIGN_LAYER % model.config.n_dec_layers
        # corpus tags (attenzione.data.mixing): the source vocabulary's, and the one a
        # translation asks for unless told otherwise (None: none)
        self.tags: tuple[str, ...] = tuple(getattr(src_tokenizer, "tags", ()))
        default = self.info.get("default_tag")
        if default is not None and default not in self.tags:
            raise ValueError(f"info.json: default_tag {default!r} is not one of the model's tags")
        self.default_tag: str | None = default
        # other processes to decode batches in (attenzione.translator.workers.Workers; None: this
        # one)
        self.workers: BatchRunner | None = None
        # where and how the model was loaded (from_pretrained; what workers load again)
        self.directory: Path | None = None
        self.precision, self.packed = "fp32", False

    @property
    def known_words(self) -> list[str] | None:
        """The words of the training targets (sorted; None: no word check), which the
        ``names`` step and the ``word-check`` term read."""
        return self.ctx.known_words  # type: ignore[return-value]

    @known_words.setter
    def known_words(self, words: Sequence[str] | None) -> None:
        known = None if words is None else sorted(set(words))
        self.ctx.known_words = self.scoring.known_words = known

    @property
    def translated_words(self) -> list[str] | None:
        """The source words the training pairs always translate, not free to copy (sorted;
        None: every source word is)."""
        return self._translated

    @translated_words.setter
    def translated_words(self, words: Sequence[str] | None) -> None:
        self._translated = None if words is None else sorted(set(words))
        self.ctx.not_free = self.scoring.not_free = frozenset(self._translated or ())

    @property
    def number_format(self) -> str:
        """How the number-format step writes the source's numbers (keep, comma, point)."""
        return self.ctx.number_format

    @number_format.setter
    def number_format(self, value: str) -> None:
        if value not in NUMBER_FORMATS:
            raise ValueError(f"number_format must be one of {', '.join(NUMBER_FORMATS)}")
        self.ctx.number_format = value

    # ------------------------------------------------------------------ loading / saving
    @classmethod
    def from_pretrained(
        cls, path: str | Path | None = None, *, precision: str = "fp32", pack: bool = True
    ) -> Translator:
        """Load a model directory; ``None`` loads the English→Italian model shipped inside.

        ``precision``: ``"fp32"`` (the reference), ``"bf16"`` or ``"int8"`` (faster on CPU,
        approximate; see :mod:`attenzione.model.fast.precision`); ``pack=False`` keeps fp32's
        linear layers
        unpacked (:mod:`attenzione.model.fast.packing`). Every way the directory can be damaged
        is a ``ValueError``/``FileNotFoundError`` naming the file.
        """
        from attenzione.model.fast.precision import PRECISIONS, for_inference

        if precision not in PRECISIONS:
            raise ValueError(f"precision must be one of {', '.join(PRECISIONS)}, not {precision!r}")
        directory = Path(path) if path is not None else PRETRAINED_DIR
        if not directory.exists():
            if path is None:
                raise FileNotFoundError(
                    f"the shipped model is missing from {directory}; reinstall attenzione or "
                    "pass --model DIR"
                )
            raise FileNotFoundError(f"model directory {directory} does not exist")
        if not directory.is_dir():
            raise NotADirectoryError(f"{directory} is a file, not a model directory")
        raw = model_dir.load_model(directory)
        src_tok, tgt_tok = model_dir.load_tokenizers(directory, raw.config)
        translator = cls(
            for_inference(raw, precision, pack=pack),
            src_tok,
            tgt_tok,
            info=model_dir.read_info(directory),
            known_words=model_dir.read_words(directory),
            translated_words=model_dir.read_words(directory, model_dir.TRANSLATED_NAME),
            shortlist=model_dir.read_shortlist(directory, raw.config),
        )
        translator.directory, translator.precision, translator.packed = directory, precision, pack
        return translator

    def save_pretrained(self, directory: str | Path, *, dtype: torch.dtype | None = None) -> Path:
        """Write a loadable model directory (weights, config, tokenizers, info), atomically."""
        return model_dir.write_model_dir(
            directory,
            self.model,
            self.src_tokenizer,
            self.tgt_tokenizer,
            info=self.info,
            words=self.known_words,
            translated=self.translated_words,
            dtype=dtype,
            shortlist=self.shortlist,
        )

    # ------------------------------------------------------------------ translation
    def translate(
        self,
        texts: str | Sequence[str],
        *,
        search: DecodeConfig | None = None,
        terms: Terms | None = None,
        steps: Pipeline | Iterable[str] | None = None,
        tag: str | None = None,
        batch_size: int = 64,
    ) -> list[Translation]:
        """Translate one text or a list of texts; one :class:`Translation` per text, in order.

        ``search``: how to search (default: beam 4, one candidate; see
        :func:`attenzione.config.search_config` for greedy decoding, sampling and n-best
        lists). ``terms``: the weights of beam search's ranking terms (default: the model's).
        ``steps``: the text pipeline, or the names of the steps to run (default: the
        model's; ``()``: the model alone). ``tag``: the corpus tag to read the texts with,
        the kind of text to translate into (default: the model's ``default_tag``; "": none;
        see :attr:`tags`). A blank text translates to "". Control characters (NUL, ESC…;
        not tab or line ends) are read as spaces whatever the steps: no model has seen one.
        """
        if isinstance(texts, str):
            texts = [texts]
        return self._begin(texts, search, terms, self._pipeline(steps), tag, batch_size)()

    def _begin(
        self,
        texts: Sequence[str],
        search: DecodeConfig | None,
        terms: Terms | None,
        pipeline: Pipeline,
        tag: str | None,
        batch_size: int,
    ) -> Callable[[], list[Translation]]:
        """:meth:`translate` in two halves: read ``texts`` (the text steps, the source ids)
        and start decoding them (with :attr:`workers`, their batches are handed out now);
        the call returned collects the translations."""
        cfg = search or DecodeConfig()
        first = self._tag_ids(tag)
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        lines: list[list[Segment]] = []
        for i, text in enumerate(texts):
            if not isinstance(text, str):
                raise ValueError(f"input {i} is {type(text).__name__}, not a string")
            segments = pipeline.prepare(without_controls(text), self.ctx)
            for seg in segments:
                if seg.translate:
                    seg.ids = first + self._read_at_once(seg.text, f"input {i}", pipeline)
            lines.append(segments)
        todo = [seg.ids for segs in lines for seg in segs if seg.ids is not None]
        decoded = self._start_ids(todo, cfg, terms, batch_size)

        def collect() -> list[Translation]:
            hyps = iter(decoded())
            decode, ctx = self.tgt_tokenizer.decode, self.ctx
            return [
                assemble(
                    text,
                    segs,
                    [next(hyps) if s.ids is not None else [] for s in segs],
                    pipeline,
                    ctx,
                    decode,
                )
                for text, segs in zip(texts, lines, strict=True)
            ]

        return collect

    def translate_iter(
        self,
        texts: Iterable[str],
        *,
        search: DecodeConfig | None = None,
        terms: Terms | None = None,
        steps: Pipeline | Iterable[str] | None = None,
        tag: str | None = None,
        batch_size: int = 64,
        chunk: int = STREAM_CHUNK,
    ) -> Iterator[Translation]:
        """:meth:`translate` over an iterable of lines, lazily, in input order.

        Lines are taken ``chunk`` at a time (sorted by length inside a chunk for batching), so
        the first translations arrive after one chunk, not after the whole input — a file can
        be written as it goes, and a run killed halfway keeps what was done. With
        :attr:`workers`, the next chunk is read (and its batches handed out) before a chunk's
        translations are given, so that the workers never wait between chunks."""
        if chunk < 1:
            raise ValueError(f"chunk must be >= 1, got {chunk}")
        pipeline = self._pipeline(steps)
        it = iter(texts)
        if self.workers is None:
            while block := list(itertools.islice(it, chunk)):
                yield from self._begin(block, search, terms, pipeline, tag, batch_size)()
            return
        pending: Callable[[], list[Translation]] | None = None  # the chunk being decoded
        while True:
            # with workers, the next chunk is read and its batches handed out before this one
            # is collected, so that they do not wait at a chunk's end; an error in it waits
            # until this chunk's translations are out
            block = list(itertools.islice(it, chunk))
            started: Callable[[], list[Translation]] | None = None
            error: Exception | None = None
            if block:
                try:
                    started = self._begin(block, search, terms, pipeline, tag, batch_size)
                except Exception as exc:  # noqa: BLE001 (raised below, after the chunk before)
                    error = exc
            if pending is not None:
                yield from pending()
            if error is not None:
                raise error
            if started is None:
                return
            pending = started

    def translate_ids(
        self,
        src: Sequence[list[int]],
        search: DecodeConfig | None = None,
        terms: Terms | None = None,
        *,
        batch_size: int = 64,
    ) -> list[list[Hypothesis]]:
        """Decode source id lists (each already ending in ``<eos>``), batched by length, with
        the hard constraints and the ranking terms; hypotheses per source, in input order.
        With :attr:`workers` set and more than one batch, the batches go to them."""
        return self._start_ids(src, search or DecodeConfig(), terms, batch_size)()

    def _start_ids(
        self,
        src: Sequence[list[int]],
        cfg: DecodeConfig,
        terms: Terms | None,
        batch_size: int,
    ) -> Callable[[], list[list[Hypothesis]]]:
        """:meth:`translate_ids` in two halves: batch ``src`` and hand the batches to the
        :attr:`workers` now (without workers, nothing is decoded yet); the call returned
        collects the hypotheses, in input order."""
        weights = self.terms if terms is None else terms
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        order = sorted(range(len(src)), key=lambda i: len(src[i]))  # little padding
        groups = [order[start : start + batch_size] for start in range(0, len(order), batch_size)]
        groups.reverse()  # the longest first: workers that finish last finish together
        jobs = [[src[i] for i in group] for group in groups]
        if self.workers is not None and len(jobs) > 1:
            decoded: Iterable[list[list[Hypothesis]]] = self.workers(jobs, cfg, weights)
        else:
            decoded = (self.decode_batch(job, cfg, weights) for job in jobs)

        def collect() -> list[list[Hypothesis]]:
            results: list[list[Hypothesis]] = [[] for _ in src]
            for group, hyps in zip(groups, decoded, strict=True):
                for i, h in zip(group, hyps, strict=True):
                    results[i] = h
            return results

        return collect

    @torch.inference_mode()
    def decode_batch(
        self, sources: list[list[int]], search: DecodeConfig, terms: Terms
    ) -> list[list[Hypothesis]]:
        """One batch of source id lists, decoded together (padded to the longest) with the
        hard constraints and the ranking terms ``terms`` weigh."""
        pad = self.model.config.pad_id
        device = next(self.model.parameters()).device
        width = max(len(ids) for ids in sources)
        batch = torch.full((len(sources), width), pad, dtype=torch.long, device=device)
        for row, ids in enumerate(sources):
            batch[row, : len(ids)] = torch.tensor(ids, dtype=torch.long, device=device)
        vocab, output = self._shortlist_for(batch)
        return generate(
            self.model,
            batch,
            search,
            constraints=self.scoring.constraints(batch, sources),
            terms=self.scoring.terms(batch, sources, terms, search),
            vocab=vocab,
            output=output,
        )

    def _shortlist_for(self, batch: Tensor) -> tuple[Tensor | None, Any]:
        """The target ids a (B,S) source batch may produce and the output layer scoring just
        them, or (None, None) without a shortlist."""
        if self.shortlist is None or not self.use_shortlist:
            return None, None
        cfg = self.model.config
        vocab = self.shortlist.ids_for(
            batch.cpu(),
            always=(cfg.eos_id, cfg.unk_id, *self.scoring.tgt_byte_ids),
            copy_source=cfg.share_src_tgt_embeddings,  # one vocabulary: copying is piecewise
        ).to(batch.device)
        return vocab, output_layer(self.model, vocab)

    def encode_source(self, text: str) -> list[int]:
        """Source ids as the encoder sees them: the tokenizer's ids + ``<eos>`` (the text as
        it is: the ``normalize`` step reads it as the training data was read)."""
        return self.ctx.encode(text)

    def _tag_ids(self, tag: str | None) -> list[int]:
        """The source ids that go before a text read with ``tag`` (None: the default)."""
        name = self.default_tag if tag is None else tag or None
        if name is None:
            return []
        if name not in self.tags:
            have = ", ".join(self.tags) if self.tags else "none"
            raise ValueError(f"unknown corpus tag {name!r}: this model's tags are {have}")
        return [self.src_tokenizer.tag_id(name)]  # type: ignore[attr-defined]

    def _pipeline(self, steps: Pipeline | Iterable[str] | None) -> Pipeline:
        if steps is None:
            return self.pipeline
        return steps if isinstance(steps, Pipeline) else Pipeline.build(steps)

    def _read_at_once(self, text: str, what: str, pipeline: Pipeline | None = None) -> list[int]:
        """The source ids of ``text``, which must fit what the model reads in one pass: what
        it was trained on (``max_src_tokens``), or, with a pipeline that has no ``split``
        step to cut longer lines, the most its positions reach (``max_len - 1``)."""
        ids = self.ctx.encode(text)
        cut = pipeline is None or "split" in pipeline.names
        limit = (self.max_src_tokens if cut else self.model.config.max_len - 1) - self.ctx.reserved
        if len(ids) > limit:
            hint = "" if cut else " (the 'split' step translates a longer text in pieces)"
            raise ValueError(
                f"{what} has {len(ids)} source tokens (with <eos>) and this model reads at "
                f"most {limit} at once{hint}"
            )
        return ids

    def _place_tags(self, segment: Segment, tokens: Sequence[int]) -> list[tuple[int, Tag]]:
        """Where ``segment``'s inline tags go in its translation ``tokens``: by the
        cross-attention of :attr:`alignment_layer`, each target piece read as it is fed back
        (:func:`attenzione.pipeline.markup.place`)."""
        assert segment.ids is not None
        from attenzione.translator.explain import cross_attention

        att = cross_attention(self.model, segment.ids, tokens, self.alignment_layer)  # (T+2,S)
        # row j + 1 is the step that reads target piece j (ALIGN_SHIFT; row j predicts it)
        shift = 1 if ALIGN_SHIFT else 0
        # the text's own pieces: a corpus tag's token before them and <eos> after left out
        first = (
            1
            if self.tags and segment.ids[0] >= self.src_tokenizer.vocab_size - len(self.tags)
            else 0
        )
        weights = att[shift : shift + len(tokens), first : len(segment.ids) - 1]
        src_pieces = [self.src_tokenizer.id_to_token(i) for i in segment.ids[first:-1]]
        tgt_pieces = [self.tgt_tokenizer.id_to_token(i) for i in tokens]
        return place(segment.notes["carry"]["tags"], src_pieces, tgt_pieces, weights)

    # ------------------------------------------------------------------ attention
    def attention(
        self,
        src: str,
        tgt: str | None = None,
        *,
        beam: int = 4,
        tgt_ids: Sequence[int] | None = None,
        tag: str | None = None,
    ) -> AttentionMaps:
        """Every attention map of every layer and head for ``src`` → ``tgt``.

        With ``tgt`` None the sentence is read through the text pipeline as
        :meth:`translate` reads it (it must make one segment), translated (beam search), and
        the translation is teacher-forced through the model with the reference kernel, which
        returns the maps; given a ``tgt`` (a reference translation) that one is teacher-forced
        instead. Given ``tgt_ids`` (the model's own output, e.g. :attr:`Candidate.ids`, with
        ``src`` its :attr:`Candidate.read`), exactly those are replayed on exactly that
        source: no second search, no re-tokenization. ``tag``: as in :meth:`translate` (the
        tag's token is the first source token of the maps).
        """
        from attenzione.translator.explain import replay

        src = without_controls(src)
        if not src.strip():
            raise ValueError("the sentence to show attention for is empty")
        translation, read = tgt, src.strip()
        if tgt_ids is not None:
            src_ids = self._tag_ids(tag) + self._read_at_once(read, "the sentence")
            tgt_ids = list(tgt_ids)
            translation = self.tgt_tokenizer.decode(tgt_ids)
        else:
            segs = [s for s in self.pipeline.prepare(src, self.ctx) if s.translate]
            if len(segs) == 1:
                seg = segs[0]
            else:  # a line the pipeline cuts: shown as the model reads it whole
                seg = Segment(normalize(src) if "normalize" in self.pipeline.names else src)
            first = self._tag_ids(tag)
            seg.ids = src_ids = first + self._read_at_once(seg.text, "the sentence", self.pipeline)
            read = seg.text  # what the model reads: its maps show its tokens
            if tgt is None:
                cfg = search_config(beam)
                tgt_ids = self.translate_ids([src_ids], cfg)[0][0].tokens
                decoded = self.tgt_tokenizer.decode(tgt_ids)
                translation = self.pipeline.restore(seg, decoded, self.ctx, tgt_ids)
            else:
                tgt_ids = self.tgt_tokenizer.encode(normalize(tgt))
        return replay(
            self.model,
            (self.src_tokenizer, self.tgt_tokenizer),
            src_ids,
            tgt_ids,
            source=read,
            translation=translation or "",
            teacher_forced=tgt is not None,
        )
