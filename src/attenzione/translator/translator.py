"""Text in, text out: the model, its two tokenizers and the decoder, loaded as one object.

A :class:`Translator` is what a model directory becomes in memory. The tokenizers travel with
the weights (``src_tokenizer/``, ``tgt_tokenizer/``), so translation always tokenizes exactly
as training did — the mismatch users of other toolkits keep running into cannot happen here.

It is fixed when it is made, as CTranslate2's ``Translator`` is: the precision, the shortlist
switch, the worker processes, the number format and the word lists are arguments of
:meth:`Translator.from_pretrained` (or of the constructor), and its attributes cannot be set
afterwards (:meth:`Translator.replace` makes another on the same network). What varies from
call to call is one frozen :class:`~attenzione.translator.request.Request`, given to
:meth:`Translator.translate` as keyword arguments or whole::

    texts ─▶ the text pipeline prepares each line (attenzione.pipeline) ─▶ segments
          ─▶ source ids, batched by length ─▶ generate(): search + the registry's hooks
             (attenzione.search.registry) + the user's own ─▶ hypotheses
          ─▶ the pipeline restores each segment's translation ─▶ one Translation per text

``steps`` picks the text steps (:class:`attenzione.pipeline.Pipeline`; ``()`` for the model
alone), ``terms`` the weights of the registry's switches (:class:`attenzione.search.registry.
Terms`) and ``hooks`` a user's own constraints and ranking terms. A model directory's
``info.json`` records the default pipeline (none: its pair's, attenzione.pipeline.pairs).
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import replace as replaced
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Unpack

import torch

from attenzione.data.corpus import normalize, without_controls
from attenzione.data.numbers import NUMBER_FORMATS
from attenzione.data.tokenizers import Tokenizer
from attenzione.languages import languages_of
from attenzione.model.transformer import Transformer
from attenzione.pipeline import Context, Segment
from attenzione.pipeline.pairs import built_pipeline
from attenzione.search.decoding import Hypothesis
from attenzione.search.scoring import Scoring
from attenzione.search.shortlist import Shortlist
from attenzione.translator import model_dir
from attenzione.translator.attention import AttentionAligner
from attenzione.translator.bounds import Bounds, bounds_for
from attenzione.translator.candidates import Candidate, Translation, assemble
from attenzione.translator.engine import Engine
from attenzione.translator.explain import replay
from attenzione.translator.model_dir import PRETRAINED_DIR
from attenzione.translator.reading import SourceReader
from attenzione.translator.request import Options, Request
from attenzione.translator.scheduler import STREAM_CHUNK, BatchRunner, Scheduler
from attenzione.translator.words import WordLists, sorted_words

if TYPE_CHECKING:
    from attenzione.translator.embedding_space import EmbeddingSpace
    from attenzione.translator.journey import Journey
    from attenzione.translator.trace import Trace
    from attenzione.viz.maps import AttentionMaps

__all__ = [
    "MODEL",
    "PRETRAINED_DIR",
    "STREAM_CHUNK",
    "BatchRunner",
    "Candidate",
    "Request",
    "Translation",
    "Translator",
    "WordLists",
]


class _FromModel(enum.Enum):
    MODEL = "the model directory's"


#: ``from_pretrained(known_words=MODEL)``: the list the model directory carries (the default).
MODEL = _FromModel.MODEL


class Translator:
    """A trained model with its tokenizers, fixed once made. Build one with
    :meth:`from_pretrained`.

    ``info``: the model's info.json; ``max_src_tokens``: the most source tokens read at once
    (None: info.json's, else 100); ``known_words`` / ``translated_words``: the word check's lists
    (:mod:`attenzione.search.lexicon`; None: no check, every source word free to copy);
    ``number_format``: how the number-format step writes numbers (None: info.json's, else
    keep); ``shortlist``: the model's vocabulary shortlist, used while ``use_shortlist``;
    ``workers``: other processes to decode batches in (:class:`attenzione.translator.workers.
    Workers`; None: this one); ``bounds``: the rows this machine can search (None: measured
    now); ``directory``, ``precision``, ``packed``: where and how the model was loaded (what
    workers load again)."""

    def __init__(
        self,
        model: Transformer,
        src_tokenizer: Tokenizer,
        tgt_tokenizer: Tokenizer,
        *,
        info: Mapping[str, Any] | None = None,
        max_src_tokens: int | None = None,
        known_words: Sequence[str] | None = None,
        translated_words: Sequence[str] | None = None,
        number_format: str | None = None,
        shortlist: Shortlist | None = None,
        use_shortlist: bool = True,
        workers: BatchRunner | None = None,
        bounds: Bounds | None = None,
        directory: Path | None = None,
        precision: str = "fp32",
        packed: bool = False,
    ) -> None:
        model = model.eval()
        info = dict(info or {})
        limit = max_src_tokens or int(info.get("max_src_tokens", 100))
        # how the target language writes 1,234.5 (the number-format step): the model's own
        told = "info.json: " if number_format is None else ""
        if number_format is None:
            number_format = str(info.get("number_format", "keep"))
        if number_format not in NUMBER_FORMATS:
            raise ValueError(
                f"{told}number_format must be one of {', '.join(NUMBER_FORMATS)}, "
                f"not {number_format!r}"
            )
        words = WordLists(sorted_words(known_words), sorted_words(translated_words), number_format)
        # the widest beam and the batch rows this machine can hold (translator/bounds.py)
        bounds = bounds_for(model.config) if bounds is None else bounds
        # what replace() makes another from: the same parts and these
        self._given: dict[str, Any] = {
            "info": info,
            "max_src_tokens": max_src_tokens,
            "known_words": words.known,
            "translated_words": words.translated,
            "number_format": number_format,
            "shortlist": shortlist,
            "use_shortlist": use_shortlist,
            "workers": workers,
            "bounds": bounds,
            "directory": directory,
            "precision": precision,
            "packed": packed,
        }
        self.src_tokenizer = src_tokenizer
        self.tgt_tokenizer = tgt_tokenizer
        self.info: Mapping[str, Any] = MappingProxyType(info)
        # The source also carries <eos>, and positions must exist for it.
        self.max_src_tokens = min(limit, model.config.max_len - 1)
        self.words = words
        self.bounds = bounds
        self.directory, self.precision, self.packed = directory, precision, packed
        # tag placement by cross-attention, handed to the text steps
        self.aligner = AttentionAligner(model, src_tokenizer, tgt_tokenizer)
        self.ctx = Context(
            src_tokenizer,
            self.max_src_tokens,
            model.config.eos_id,
            known_words=words.known,
            not_free=frozenset(words.translated or ()),
            number_format=words.number_format,
            place_tags=self.aligner,
            **languages_of(info),
        )
        scoring = Scoring(
            model.config, src_tokenizer, tgt_tokenizer, words.known, self.ctx.not_free
        )
        self.engine = Engine(model, scoring, shortlist, use_shortlist=use_shortlist)
        self.scheduler = Scheduler(self.engine, workers)
        # the pipeline and ranking terms info.json records, else its pair's (pipeline.pairs)
        try:
            self.pipeline, self.terms = built_pipeline(info)
        except ValueError as exc:
            raise ValueError(f"info.json: {exc}") from None
        # text to source ids: the length cap, corpus tags (attenzione.data.mixing)
        self.reader = SourceReader(src_tokenizer, self.max_src_tokens, model.config.max_len)
        self.tags = self.reader.tags
        # the tag a text is read with unless told otherwise (None: none)
        default = info.get("default_tag")
        if default is not None and default not in self.tags:
            raise ValueError(f"info.json: default_tag {default!r} is not one of the model's tags")
        self.default_tag: str | None = default
        self._fixed = True

    def __setattr__(self, name: str, value: object) -> None:
        if getattr(self, "_fixed", False):
            raise AttributeError(
                f"a Translator is fixed once made: {name} cannot be set (give it to "
                "Translator.from_pretrained, or make another with Translator.replace)"
            )
        object.__setattr__(self, name, value)

    def replace(self, **changes: Any) -> Translator:
        """Another translator on this one's network, tokenizers and shortlist, with the
        constructor arguments ``changes`` (``number_format="keep"``, ``workers=pool``,
        ``known_words=[...]``…) in place of this one's; this one is unchanged."""
        unknown = sorted(set(changes) - set(self._given))
        if unknown:
            raise TypeError(f"replace() takes {', '.join(self._given)}, not {', '.join(unknown)}")
        return Translator(
            self.model, self.src_tokenizer, self.tgt_tokenizer, **{**self._given, **changes}
        )

    # ------------------------------------------------------------------ parts and word lists
    @property
    def known_words(self) -> list[str] | None:
        """The words of the training targets (sorted; None: no word check), which the
        ``names`` step and the ``word-check`` term read."""
        return self.words.known

    @property
    def translated_words(self) -> list[str] | None:
        """The source words the training pairs always translate, not free to copy (sorted;
        None: every source word is)."""
        return self.words.translated

    @property
    def number_format(self) -> str:
        """How the number-format step writes the source's numbers (keep, comma, point)."""
        return self.words.number_format

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

    @property
    def workers(self) -> BatchRunner | None:
        """Other processes to decode batches in (:class:`attenzione.translator.workers.Workers`;
        None: this one)."""
        return self.scheduler.workers

    @property
    def alignment_layer(self) -> int:
        """The decoder layer whose cross-attention places inline tags."""
        return self.aligner.layer

    # ------------------------------------------------------------------ loading / saving
    @classmethod
    def from_pretrained(
        cls,
        path: str | Path | None = None,
        *,
        precision: str = "fp32",
        pack: bool = True,
        shortlist: bool = True,
        workers: BatchRunner | None = None,
        number_format: str | None = None,
        known_words: Sequence[str] | None | _FromModel = MODEL,
        translated_words: Sequence[str] | None | _FromModel = MODEL,
        bounds: Bounds | None = None,
    ) -> Translator:
        """Load a model directory; ``None`` loads the English→Italian model shipped inside.

        ``precision``: ``"fp32"`` (the reference), ``"bf16"`` or ``"int8"`` (faster on CPU,
        approximate; see :mod:`attenzione.model.fast.precision`); ``pack=False`` keeps fp32's
        linear layers unpacked (:mod:`attenzione.model.fast.packing`); ``shortlist=False``
        scores the whole vocabulary though the model ships a shortlist; ``workers``: processes
        to decode batches in (:class:`attenzione.translator.workers.Workers`, loading the same
        directory); ``number_format`` (None: the model's), ``known_words`` and
        ``translated_words`` (:data:`MODEL`: the directory's lists; None: none) in place of
        what the directory says; ``bounds`` as the constructor takes them. Every way the
        directory can be damaged is a ``ValueError``/``FileNotFoundError`` naming the file.
        """
        from attenzione.model.fast.precision import PRECISIONS, for_inference

        if precision not in PRECISIONS:
            raise ValueError(f"precision must be one of {', '.join(PRECISIONS)}, not {precision!r}")
        if number_format is not None and number_format not in NUMBER_FORMATS:
            raise ValueError(
                f"number_format must be one of {', '.join(NUMBER_FORMATS)}, not {number_format!r}"
            )
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
        if known_words is MODEL:
            known_words = model_dir.read_words(directory)
        if translated_words is MODEL:
            translated_words = model_dir.read_words(directory, model_dir.TRANSLATED_NAME)
        return cls(
            for_inference(raw, precision, pack=pack),
            src_tok,
            tgt_tok,
            info=model_dir.read_info(directory),
            known_words=known_words,
            translated_words=translated_words,
            number_format=number_format,
            shortlist=model_dir.read_shortlist(directory, raw.config),
            use_shortlist=shortlist,
            workers=workers,
            bounds=bounds,
            directory=directory,
            precision=precision,
            packed=pack,
        )

    def save_pretrained(
        self,
        directory: str | Path,
        *,
        dtype: torch.dtype | None = None,
        info: Mapping[str, Any] | None = None,
    ) -> Path:
        """Write a loadable model directory (weights, config, tokenizers, info: ``info`` in
        place of the translator's, if given), atomically."""
        return model_dir.write_model_dir(
            directory,
            self.model,
            self.src_tokenizer,
            self.tgt_tokenizer,
            info=dict(self.info if info is None else info),
            words=self.known_words,
            translated=self.translated_words,
            dtype=dtype,
            shortlist=self.shortlist,
        )

    # ------------------------------------------------------------------ requests
    def request(self, request: Request | None = None, /, **options: Unpack[Options]) -> Request:
        """A request for this translator: ``request`` (None: a new one) with ``options`` in
        place of its fields, what is None made the model's own (its ranking weights, its
        pipeline), its tag checked, and its batch cut to what the machine holds at its beam
        (:meth:`Request.checked`: a beam too wide is refused here, in one line)."""
        if request is not None and not isinstance(request, Request):
            raise TypeError(
                f"the argument after the texts is a Request, not a {type(request).__name__}: "
                "give the search as search=..."
            )
        if options.get("search", ...) is None:
            del options["search"]
        made = Request(**options) if request is None else replaced(request, **options)  # type: ignore[arg-type]
        made = replaced(
            made,
            terms=self.terms if made.terms is None else made.terms,
            steps=self.pipeline if made.steps is None else made.steps,
            tag=self.default_tag if made.tag is None else made.tag,
        )
        self.reader.tag_ids(made.tag)  # an unknown tag: one line now
        return made.checked(self.bounds)

    def _prefix_ids(self, request: Request) -> tuple[int, ...]:
        """The target pieces of the request's prefix (none without one)."""
        return self.prefix_ids(request.prefix)

    def prefix_ids(self, prefix: str) -> tuple[int, ...]:
        """The target pieces a forced ``prefix`` is (none for a blank one); a prefix with a
        piece outside the model's vocabulary, or longer than any translation it writes, is
        one line (ValueError)."""
        if not prefix.strip():
            return ()
        text = normalize(prefix)
        ids = tuple(self.tgt_tokenizer.encode(text))
        unk = self.model.config.unk_id
        if unk in ids:
            encode = self.tgt_tokenizer.encode
            word = next((w for w in text.split() if unk in encode(w)), text)
            raise ValueError(
                f"the prefix has {word!r}, which the model's target vocabulary cannot write"
            )
        cap = self.model.config.max_len - 1
        if len(ids) >= cap:
            raise ValueError(
                f"the prefix is {len(ids)} pieces; this model writes at most {cap - 1} before "
                "its <eos>"
            )
        return ids

    def _check_prefix_fits(
        self, prefix: tuple[int, ...], sources: Sequence[Sequence[int]], request: Request
    ) -> None:
        """A prefix as long as a source's cap on new tokens (the search's ``max_len_a·n +
        max_len_b``, within the model's positions) would leave no room for its ``<eos>``:
        one line (ValueError)."""
        cfg, pad = request.search, self.model.config.pad_id
        for ids in sources:
            n = sum(1 for i in ids if i != pad)
            cap = max(1, min(int(n * cfg.max_len_a) + cfg.max_len_b, self.model.config.max_len - 1))
            if len(prefix) >= cap:
                raise ValueError(
                    f"the prefix is {len(prefix)} pieces; a translation of this sentence has "
                    f"at most {cap}, its <eos> included"
                )

    # ------------------------------------------------------------------ translation
    def translate(
        self,
        texts: str | Sequence[str],
        request: Request | None = None,
        /,
        **options: Unpack[Options],
    ) -> list[Translation]:
        """Translate one text or a list of texts; one :class:`Translation` per text, in order.

        The options are a :class:`~attenzione.translator.request.Request`'s, given whole or as
        keyword arguments: ``search`` — how to search (default: beam 4, one candidate; see
        :func:`attenzione.config.search_config` for greedy decoding, sampling and n-best
        lists); ``terms`` — the weights of the registry's switches (default: the model's);
        ``hooks`` — a user's own constraints and ranking terms, applied after the registered
        ones (:mod:`attenzione.search.registry`); ``steps`` — the text pipeline, or the names
        of its steps (default: the model's; ``()``: the model alone); ``tag`` — the corpus tag
        to read the texts with, the kind of text to translate into (default: the model's
        ``default_tag``; "": none; see :attr:`tags`); ``prefix`` — the text each translation
        begins with; ``batch_size``. A blank text translates to "". Control characters (NUL,
        ESC…; not tab or line ends) are read as spaces whatever the steps: no model has seen
        one.
        """
        if isinstance(texts, str):
            texts = [texts]
        return self._begin(texts, self.request(request, **options))()

    def _begin(self, texts: Sequence[str], request: Request) -> Callable[[], list[Translation]]:
        """:meth:`translate` in two halves: read ``texts`` (the text steps, the source ids)
        and start decoding them with ``request`` (with :attr:`workers`, their batches are
        handed out now); the call returned collects the translations."""
        pipeline = request.steps
        assert pipeline is not None, "a request made by Translator.request"
        lines = self.reader.read(self.ctx, texts, pipeline, request.tag)
        todo, prefixes = [], []
        prefix = self._prefix_ids(request)
        for segs in lines:
            read = [seg.ids for seg in segs if seg.ids is not None]
            todo += read
            prefixes += [prefix if i == 0 else () for i in range(len(read))]
        if prefix:
            self._check_prefix_fits(
                prefix, [ids for ids, p in zip(todo, prefixes, strict=True) if p], request
            )
        decoded = self.scheduler.start(todo, request, prefixes if prefix else None)

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
        request: Request | None = None,
        /,
        *,
        chunk: int = STREAM_CHUNK,
        **options: Unpack[Options],
    ) -> Iterator[Translation]:
        """:meth:`translate` over an iterable of lines, lazily, in input order.

        Lines are taken ``chunk`` at a time (sorted by length inside a chunk for batching), so
        the first translations arrive after one chunk, not after the whole input — a file can
        be written as it goes, and a run killed halfway keeps what was done. With
        :attr:`workers`, the next chunk is read (and its batches handed out) before a chunk's
        translations are given, so that the workers never wait between chunks."""
        made = self.request(request, **options)

        def begin(block: list[str]) -> Callable[[], list[Translation]]:
            return self._begin(block, made)

        return self.scheduler.stream(texts, begin, chunk)

    def translate_ids(
        self,
        src: Sequence[list[int]],
        request: Request | None = None,
        /,
        **options: Unpack[Options],
    ) -> list[list[Hypothesis]]:
        """Decode source id lists (each already ending in ``<eos>``), batched by length, with
        the request's search, weights, hooks and prefix (the text steps and the tag are the
        texts' and play no part); hypotheses per source, in input order. With
        :attr:`workers` set and more than one batch, the batches go to them."""
        made = self.request(request, **options)
        prefix = self._prefix_ids(made)
        return self.scheduler.start(src, made, [prefix] * len(src) if prefix else None)()

    def encode_source(self, text: str) -> list[int]:
        """Source ids as the encoder sees them: the tokenizer's ids + ``<eos>`` (the text as
        it is: the ``normalize`` step reads it as the training data was read)."""
        return self.ctx.encode(text)

    # ------------------------------------------------------------------ the trace
    def trace(
        self,
        text: str,
        request: Request | None = None,
        /,
        *,
        top_k: int = 10,
        ablate: str | Sequence[str] | None = None,
        **options: Unpack[Options],
    ) -> Trace:
        """One sentence's decoding, step by step (:class:`~attenzione.translator.trace.Trace`):
        :meth:`translate` with the request's options (``search``, ``prefix``…), recorded by a
        search hook as it runs — each step's ``top_k`` next pieces, the piece chosen, for beam
        search the tree of hypotheses — with the sentence's attention maps. ``ablate``: parts
        of the model switched off while it translates (:mod:`attenzione.translator.ablation`:
        ``"cross:2.1"``, ``["encoder:0.*", "positions"]``); none: the model as it is. The text
        must be one sentence the pipeline does not cut (else one line, ValueError)."""
        from attenzione.search.trace import TraceRecorder
        from attenzione.translator.ablation import ablated, parse_ablation
        from attenzione.translator.trace import Trace

        cut = parse_ablation(ablate, self.model.config)
        if not text.strip():
            raise ValueError("the sentence to trace is empty")
        made = self.request(request, **options)
        recorder = TraceRecorder(top_k)
        with ablated(self.model, cut):
            [translation] = self._begin(
                [text], replaced(made, hooks=(*made.hooks, *recorder.hooks))
            )()
            best = translation.candidates[0]
            if best.pieces != 1:
                raise ValueError(
                    "a trace follows one sentence the model translates in one piece; this "
                    f"text made {best.pieces} (give one sentence)"
                )
            maps = self.attention(best.read, tgt_ids=best.ids, tag=made.tag)
        eos = self.model.config.eos_id
        chain = recorder.chain(best.ids, eos)
        search = made.search
        return Trace(
            source=text,
            translation=best.text,
            tokens=list(best.ids),
            pieces=[self.tgt_tokenizer.id_to_token(i) for i in best.ids],
            records=recorder.records,
            nodes=recorder.nodes,
            chain=chain,
            maps=maps,
            method=search.method,
            beam=search.beam_size if search.method == "beam" else 1,
            prefix_len=len(self._prefix_ids(made)),
            prefix=made.prefix,
            ablate=cut.parts,
            id_to_piece=self.tgt_tokenizer.id_to_token,
            eos_id=eos,
        )

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

        With ``tgt`` None the sentence is read through the text pipeline as :meth:`translate`
        reads it (it must make one segment), translated (beam search), and the translation is
        teacher-forced through the model with the reference kernel, which returns the maps;
        given a ``tgt`` (a reference translation) that one is teacher-forced instead. Given
        ``tgt_ids`` (the model's own output, e.g. :attr:`Candidate.ids`, with ``src`` its
        :attr:`Candidate.read`), exactly those are replayed on exactly that source: no second
        search, no re-tokenization. ``tag``: as in :meth:`translate` (the tag's token is the
        first source token of the maps).
        """
        src_ids, tgt_ids, read, translation = self._pair(src, tgt, beam, tgt_ids, tag)
        return replay(
            self.model,
            (self.src_tokenizer, self.tgt_tokenizer),
            src_ids,
            tgt_ids,
            source=read,
            translation=translation,
            teacher_forced=tgt is not None,
        )

    def journey(
        self, src: str, token: int, tgt: str | None = None, *, beam: int = 4, top_k: int = 10
    ) -> Journey:
        """One decoder position's way through the whole model, every step checked against the
        value the model computed (:mod:`attenzione.translator.journey`), for ``src`` → its
        translation (``beam``), or → ``tgt`` teacher-forced. Position ``token`` is fed piece
        ``token`` of ``[start] + translation`` and predicts the next; out of range: one line."""
        from attenzione.translator.journey import follow

        if self.precision != "fp32":
            raise ValueError(
                f"the journey follows the model's fp32 numbers; this one is loaded in "
                f"{self.precision} (load it with precision fp32)"
            )
        src_ids, tgt_ids, read, translation = self._pair(src, tgt, beam, None, None)
        cfg = self.model.config
        ids_to = self.tgt_tokenizer.id_to_token
        return follow(
            self.model,
            src_ids,
            tgt_ids,
            token,
            src_tokens=[self.src_tokenizer.id_to_token(i) for i in src_ids],
            tgt_tokens=[ids_to(i) for i in [cfg.start_id, *tgt_ids]],
            out_piece=ids_to,
            source=read,
            translation=translation,
            top_k=top_k,
        )

    def occlusion(
        self, src: str, tgt: str | None = None, *, beam: int = 4, words: Sequence[str] | None = None
    ) -> dict[str, Any]:
        """Occlusion attribution beside every head's cross-attention
        (:mod:`attenzione.translator.occlusion`) for ``src`` → its translation (``beam``), or →
        ``tgt``; ``words``: the source words to remove one at a time (None: each in turn)."""
        from attenzione.translator.occlusion import occlusion

        src_ids, tgt_ids, read, translation = self._pair(src, tgt, beam, None, None)
        maps = replay(self.model, (self.src_tokenizer, self.tgt_tokenizer), src_ids, tgt_ids)
        cfg = self.model.config
        n_tag = len(self.reader.tag_ids(None, self.default_tag))
        pieces = [self.src_tokenizer.id_to_token(i) for i in src_ids]
        keep = [i < n_tag or x == cfg.eos_id for i, x in enumerate(src_ids)]
        found = occlusion(
            self.model,
            src_ids,
            tgt_ids,
            src_pieces=pieces,
            tgt_pieces=maps.out_tokens,
            keep=keep,
            words=words,
            cross=maps.cross,
        )
        return {"source": read, "translation": translation, **found}

    def embedding_space(self, side: str = "source") -> EmbeddingSpace:
        """The model's own embedding space on ``side`` (``source`` or ``target``): nearest
        pieces, analogies and similarities over its table's rows
        (:mod:`attenzione.translator.embedding_space`), built once."""
        from attenzione.translator.embedding_space import embedding_space

        return embedding_space(self, side)

    def _pair(
        self,
        src: str,
        tgt: str | None,
        beam: int,
        tgt_ids: Sequence[int] | None,
        tag: str | None,
    ) -> tuple[list[int], list[int], str, str]:
        """The (source ids, target ids, source as read, translation) :meth:`attention` shows
        (its docstring says how each argument is read)."""
        from attenzione.config import search_config

        src = without_controls(src)
        if not src.strip():
            raise ValueError("the sentence to show attention for is empty")
        translation, read = tgt, src.strip()
        reader, ctx, pipeline = self.reader, self.ctx, self.pipeline
        first = reader.tag_ids(tag, self.default_tag)  # a corpus tag's token, if any
        if tgt_ids is not None:
            src_ids = first + reader.read_at_once(ctx, read, "the sentence")
            tgt_ids = list(tgt_ids)
            translation = self.tgt_tokenizer.decode(tgt_ids)
        else:
            segs = [s for s in pipeline.prepare(src, ctx) if s.translate]
            if len(segs) == 1:
                seg = segs[0]
            else:  # a line the pipeline cuts: shown as the model reads it whole
                seg = Segment(normalize(src) if "normalize" in pipeline.names else src)
            seg.ids = src_ids = first + reader.read_at_once(ctx, seg.text, "the sentence", pipeline)
            read = seg.text  # what the model reads: its maps show its tokens
            if tgt is None:
                tgt_ids = self.translate_ids([src_ids], search=search_config(beam))[0][0].tokens
                decoded = self.tgt_tokenizer.decode(tgt_ids)
                translation = pipeline.restore(seg, decoded, ctx, tgt_ids)
            else:
                tgt_ids = self.tgt_tokenizer.encode(normalize(tgt))
        return list(src_ids), list(tgt_ids), read, translation or ""
