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
``info.json`` records the default pipeline (none: its pair's, attenzione.pipeline.pairs).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch

from attenzione.config import DecodeConfig
from attenzione.data.numbers import NUMBER_FORMATS
from attenzione.data.tokenizers import Tokenizer
from attenzione.languages import languages_of
from attenzione.model.transformer import Transformer
from attenzione.pipeline import Context, Pipeline
from attenzione.pipeline.pairs import built_pipeline
from attenzione.search.decoding import Hypothesis
from attenzione.search.scoring import Scoring, Terms
from attenzione.search.shortlist import Shortlist
from attenzione.translator import model_dir
from attenzione.translator.attention import AttentionAligner
from attenzione.translator.bounds import bounds_for
from attenzione.translator.candidates import Candidate, Translation, assemble
from attenzione.translator.engine import Engine
from attenzione.translator.model_dir import PRETRAINED_DIR
from attenzione.translator.reading import SourceReader
from attenzione.translator.scheduler import STREAM_CHUNK, BatchRunner, Scheduler
from attenzione.translator.words import WordLists, sorted_words

if TYPE_CHECKING:
    from attenzione.viz.maps import AttentionMaps

__all__ = [
    "PRETRAINED_DIR",
    "STREAM_CHUNK",
    "BatchRunner",
    "Candidate",
    "Translation",
    "Translator",
    "WordLists",
]


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
        model = model.eval()
        self.src_tokenizer = src_tokenizer
        self.tgt_tokenizer = tgt_tokenizer
        self.info = dict(info or {})
        limit = max_src_tokens or int(self.info.get("max_src_tokens", 100))
        # The source also carries <eos>, and positions must exist for it.
        self.max_src_tokens = min(limit, model.config.max_len - 1)
        # how the target language writes 1,234.5 (the number-format step): the model's own
        number_format = str(self.info.get("number_format", "keep"))
        if number_format not in NUMBER_FORMATS:
            raise ValueError(
                f"info.json: number_format must be one of {', '.join(NUMBER_FORMATS)}, "
                f"not {number_format!r}"
            )
        # tag placement by cross-attention, handed to the text steps
        self.aligner = AttentionAligner(model, src_tokenizer, tgt_tokenizer)
        self.engine = Engine(model, Scoring(model.config, src_tokenizer, tgt_tokenizer), shortlist)
        self.scheduler = Scheduler(self.engine)
        # the widest beam and the batch rows this machine can hold (translator/bounds.py)
        self.bounds = bounds_for(model.config)
        self.words = WordLists(
            sorted_words(known_words), sorted_words(translated_words), number_format
        )
        # the pipeline and ranking terms info.json records, else its pair's (pipeline.pairs)
        try:
            self.pipeline, self.terms = built_pipeline(self.info)
        except ValueError as exc:
            raise ValueError(f"info.json: {exc}") from None
        # text to source ids: the length cap, corpus tags (attenzione.data.mixing)
        self.reader = SourceReader(src_tokenizer, self.max_src_tokens, model.config.max_len)
        self.tags = self.reader.tags
        # the tag a text is read with unless told otherwise (None: none)
        default = self.info.get("default_tag")
        if default is not None and default not in self.tags:
            raise ValueError(f"info.json: default_tag {default!r} is not one of the model's tags")
        self.default_tag: str | None = default
        # where and how the model was loaded (from_pretrained; what workers load again)
        self.directory: Path | None = None
        self.precision, self.packed = "fp32", False

    # ------------------------------------------------------------------ parts and word lists
    @property
    def words(self) -> WordLists:
        """The word lists and number style: set a new :class:`WordLists` (or one of the three
        properties below) and the text steps' context and the search's scoring follow."""
        return self._words

    @words.setter
    def words(self, words: WordLists) -> None:
        self._words = words
        self.ctx = Context(
            self.src_tokenizer,
            self.max_src_tokens,
            self.model.config.eos_id,
            known_words=words.known,
            not_free=frozenset(words.translated or ()),
            number_format=words.number_format,
            place_tags=self.aligner,
            **languages_of(self.info),
        )
        scoring = self.engine.scoring
        scoring.known_words, scoring.not_free = words.known, self.ctx.not_free

    @property
    def known_words(self) -> list[str] | None:
        """The words of the training targets (sorted; None: no word check), which the
        ``names`` step and the ``word-check`` term read."""
        return self._words.known

    @known_words.setter
    def known_words(self, words: Sequence[str] | None) -> None:
        self.words = replace(self._words, known=sorted_words(words))

    @property
    def translated_words(self) -> list[str] | None:
        """The source words the training pairs always translate, not free to copy (sorted;
        None: every source word is)."""
        return self._words.translated

    @translated_words.setter
    def translated_words(self, words: Sequence[str] | None) -> None:
        self.words = replace(self._words, translated=sorted_words(words))

    @property
    def number_format(self) -> str:
        """How the number-format step writes the source's numbers (keep, comma, point)."""
        return self._words.number_format

    @number_format.setter
    def number_format(self, value: str) -> None:
        self.words = replace(self._words, number_format=value)

    @property
    def model(self) -> Transformer:
        return self.engine.model

    @property
    def scoring(self) -> Scoring:
        return self.engine.scoring

    @property
    def shortlist(self) -> Shortlist | None:
        return self.engine.shortlist

    @property
    def use_shortlist(self) -> bool:
        """Whether decoding scores only the shortlist's pieces
        (:mod:`attenzione.search.shortlist`)."""
        return self.engine.use_shortlist

    @use_shortlist.setter
    def use_shortlist(self, value: bool) -> None:
        self.engine.use_shortlist = value

    @property
    def workers(self) -> BatchRunner | None:
        """Other processes to decode batches in (:class:`attenzione.translator.workers.Workers`;
        None: this one)."""
        return self.scheduler.workers

    @workers.setter
    def workers(self, runner: BatchRunner | None) -> None:
        self.scheduler.workers = runner

    @property
    def alignment_layer(self) -> int:
        """The decoder layer whose cross-attention places inline tags."""
        return self.aligner.layer

    # ------------------------------------------------------------------ loading / saving
    @classmethod
    def from_pretrained(
        cls, path: str | Path | None = None, *, precision: str = "fp32", pack: bool = True
    ) -> Translator:
        """Load a model directory; ``None`` loads the English→Italian model shipped inside.

        ``precision``: ``"fp32"`` (the reference), ``"bf16"`` or ``"int8"`` (faster on CPU,
        approximate; see :mod:`attenzione.model.fast.precision`); ``pack=False`` keeps fp32's linear
        layers unpacked (:mod:`attenzione.model.fast.packing`). Every way the directory can be
        damaged is a ``ValueError``/``FileNotFoundError`` naming the file.
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
        batch_size = self.bounds.batch_for(cfg, batch_size)  # refuses a beam too wide
        lines = self.reader.read(self.ctx, texts, pipeline, tag, self.default_tag)
        todo = [seg.ids for segs in lines for seg in segs if seg.ids is not None]
        decoded = self.scheduler.start(
            todo, cfg, self.terms if terms is None else terms, batch_size
        )

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
        pipeline = self._pipeline(steps)

        def begin(block: list[str]) -> Callable[[], list[Translation]]:
            return self._begin(block, search, terms, pipeline, tag, batch_size)

        return self.scheduler.stream(texts, begin, chunk)

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
        cfg = search or DecodeConfig()
        batch_size = self.bounds.batch_for(cfg, batch_size)
        return self.scheduler.start(src, cfg, self.terms if terms is None else terms, batch_size)()

    def decode_batch(
        self, sources: list[list[int]], search: DecodeConfig, terms: Terms
    ) -> list[list[Hypothesis]]:
        """One batch of source id lists, decoded together (:meth:`Engine.decode_batch`)."""
        return self.engine.decode_batch(sources, search, terms)

    def encode_source(self, text: str) -> list[int]:
        """Source ids as the encoder sees them: the tokenizer's ids + ``<eos>`` (the text as
        it is: the ``normalize`` step reads it as the training data was read)."""
        return self.ctx.encode(text)

    def _pipeline(self, steps: Pipeline | Iterable[str] | None) -> Pipeline:
        if steps is None:
            return self.pipeline
        return steps if isinstance(steps, Pipeline) else Pipeline.build(steps)

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
        """Every attention map of every layer and head for ``src`` → ``tgt``
        (:func:`attenzione.translator.attention.sentence_attention`, which says how)."""
        from attenzione.translator.attention import sentence_attention

        return sentence_attention(self, src, tgt, beam=beam, tgt_ids=tgt_ids, tag=tag)
