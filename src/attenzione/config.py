"""Configuration: frozen dataclasses that travel with every checkpoint.

Why frozen dataclasses rather than dicts or argparse namespaces: a model's shape is decided
once, validated once, written to ``config.json`` beside the weights and read back unchanged.
Every field has the paper's name (``d_model``, ``n_heads``, ``d_head``, ``d_ff``) and every bad
value is rejected with a ``ValueError`` that names it.

The one deliberate departure from the 2017 paper is that ``d_head`` is independent of
``d_model``: W^Q, W^K, W^V are d_model × (n_heads·d_head) and W^O maps back, so a
50-d GloVe model can run 4 heads of 16 even though 4 does not divide 50.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any, Literal, TypeVar

# How a translation writes the source's numbers: ``keep`` as the model wrote them, ``comma``
# 1.234,5 (Italian), ``point`` 1,234.5 (English); see attenzione.data.numbers.
NUMBER_FORMATS = ("keep", "comma", "point")

Positions = Literal["sinusoidal", "learned"]
NormPlacement = Literal["post", "pre"]
Activation = Literal["relu", "gelu", "swish"]
_CHOICES = {  # the fields with a fixed set of values
    "positions": ("sinusoidal", "learned"),
    "norm": ("post", "pre"),
    "activation": ("relu", "gelu", "swish"),  # the paper's ReLU, GELU (erf), SiLU (OPUS-MT's)
}

_T = TypeVar("_T")


def _check(cond: bool, message: str) -> None:
    if not cond:
        raise ValueError(message)


# What each annotation of a config field takes, read from its text (the module's annotations
# are strings): the JSON of a config file could hold anything, and a list where a number
# belongs would otherwise fail later in a comparison, with Python's words ("'<=' not
# supported between instances of 'float' and 'list'") in place of the field's
_KINDS: dict[str, tuple[tuple[type, ...], str]] = {
    "int": ((int,), "an int"),
    "float": ((int, float), "a number"),
    "bool": ((bool,), "true or false"),
    "str": ((str,), "a string"),
}


def _check_types(config: Any) -> None:
    """A ValueError naming the first field of ``config`` whose value is not of its type
    (a bool is no int nor number here, though Python counts it as one)."""
    for f in fields(config):
        value = getattr(config, f.name)
        kind = str(f.type)
        if kind.endswith(" | None"):
            if value is None:
                continue
            kind = kind.removesuffix(" | None")
        if kind not in _KINDS:  # a Literal: the field's own check names the values it takes
            continue
        types, what = _KINDS[kind]
        if (kind != "bool" and isinstance(value, bool)) or not isinstance(value, types):
            raise ValueError(f"{f.name} must be {what}, got {value!r}")


def _from_dict(cls: type[_T], data: dict[str, Any]) -> _T:
    """Build ``cls`` from a dict, naming unknown keys instead of failing with a TypeError."""
    known = {f.name for f in fields(cls)}  # type: ignore[arg-type]
    unknown = sorted(set(data) - known)
    if unknown:
        raise ValueError(
            f"unknown {cls.__name__} field(s) {unknown}; allowed fields are {sorted(known)}"
        )
    return cls(**data)


class _JsonMixin:
    """JSON round-trip shared by all configs: ``to_dict``/``from_dict``/``save``/``load``."""

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)  # type: ignore[call-overload]

    @classmethod
    def from_dict(cls: type[_T], data: dict[str, Any]) -> _T:
        return _from_dict(cls, data)

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2, sort_keys=True)

    @classmethod
    def from_json(cls: type[_T], text: str) -> _T:
        return _from_dict(cls, json.loads(text))

    def save(self, path: str | Path) -> None:
        Path(path).write_text(self.to_json() + "\n", encoding="utf-8")

    @classmethod
    def load(cls: type[_T], path: str | Path) -> _T:
        return _from_dict(cls, json.loads(Path(path).read_text(encoding="utf-8")))


@dataclass(frozen=True)
class ModelConfig(_JsonMixin):
    """Shape of an encoder–decoder Transformer.

    ``src_embed_dim`` is the width of the source token vectors before they enter the model: it
    equals ``d_model`` unless pretrained vectors of another size (GloVe 100 d into a 256-d model,
    say) are used, in which case a learned linear projection maps them to ``d_model``.

    The last fields are architecture other toolkits' models have (a Hugging Face
    ``MarianMTModel`` imports exactly: :mod:`attenzione.interop.marian`), their defaults ours,
    so older configs read as before: ``activation``, ``layer_norm_eps``, ``scale_embeddings``
    (tokens × √d_model), ``output_bias`` (Marian's ``final_logits_bias``), ``decoder_start_id``
    (None: ``bos_id``; Marian starts from ``pad_id``, and a decoder's first position is real
    whatever its id). Conventions that are only an order of the same numbers (Marian's
    sinusoids) are not here: an import converts them (:mod:`attenzione.interop.names`).
    """

    src_vocab_size: int
    tgt_vocab_size: int
    d_model: int = 256
    n_heads: int = 4
    d_head: int = 64
    d_ff: int = 1024
    n_enc_layers: int = 3
    n_dec_layers: int = 3
    dropout: float = 0.1
    attn_dropout: float = 0.0
    max_len: int = 256
    positions: Positions = "sinusoidal"
    norm: NormPlacement = "post"
    tie_embeddings: bool = False
    share_src_tgt_embeddings: bool = False
    src_embed_dim: int | None = None
    freeze_src_embeddings: bool = False
    pad_id: int = 0
    bos_id: int = 1
    eos_id: int = 2
    unk_id: int = 3
    activation: Activation = "relu"
    scale_embeddings: bool = True
    output_bias: bool = False
    layer_norm_eps: float = 1e-5
    decoder_start_id: int | None = None

    def __post_init__(self) -> None:
        _check_types(self)
        for name in ("src_vocab_size", "tgt_vocab_size", "d_model", "n_heads", "d_head", "d_ff"):
            value = getattr(self, name)
            _check(
                isinstance(value, int) and value > 0,
                f"{name} must be a positive int, got {value!r}",
            )
        for name in ("n_enc_layers", "n_dec_layers"):
            value = getattr(self, name)
            _check(isinstance(value, int) and value >= 1, f"{name} must be >= 1, got {value!r}")
        for name in ("dropout", "attn_dropout"):
            value = getattr(self, name)
            _check(0.0 <= value < 1.0, f"{name} must be in [0, 1), got {value!r}")
        _check(self.max_len >= 2, f"max_len must be >= 2, got {self.max_len!r}")
        for name, allowed in _CHOICES.items():  # "norm must be 'post' or 'pre', got 'x'"
            *first, last = map(repr, allowed)
            value = getattr(self, name)
            _check(value in allowed, f"{name} must be {', '.join(first)} or {last}, got {value!r}")
        eps = self.layer_norm_eps
        _check(0 < eps < 1, f"layer_norm_eps must be in (0, 1), got {eps!r}")
        if self.src_embed_dim is not None:
            _check(
                self.src_embed_dim > 0,
                f"src_embed_dim must be positive or None, got {self.src_embed_dim!r}",
            )
        specials = {"pad_id": self.pad_id, "bos_id": self.bos_id, "eos_id": self.eos_id}
        _check(
            len(set(specials.values())) == 3,
            f"pad_id, bos_id and eos_id must differ, got {specials}",
        )
        smallest = min(self.src_vocab_size, self.tgt_vocab_size)
        named = {**specials, "unk_id": self.unk_id, "decoder_start_id": self.start_id}
        for name, value in named.items():
            _check(
                0 <= value < smallest,
                f"{name}={value} is outside the vocabularies (sizes {self.src_vocab_size}, "
                f"{self.tgt_vocab_size})",
            )
        if self.share_src_tgt_embeddings:
            _check(
                self.src_vocab_size == self.tgt_vocab_size,
                "share_src_tgt_embeddings needs src_vocab_size == tgt_vocab_size, got "
                f"{self.src_vocab_size} and {self.tgt_vocab_size}",
            )
            _check(
                self.src_embed_dim in (None, self.d_model),
                "share_src_tgt_embeddings needs src_embed_dim == d_model",
            )

    @property
    def start_id(self) -> int:
        """The token the decoder reads first: ``decoder_start_id``, or ``bos_id``."""
        return self.bos_id if self.decoder_start_id is None else self.decoder_start_id

    @property
    def inner_dim(self) -> int:
        """Width of the concatenated heads, n_heads × d_head (A heads of d_head each)."""
        return self.n_heads * self.d_head

    def replace(self, **changes: Any) -> ModelConfig:
        return dataclasses.replace(self, **changes)


# How much lower beam search ranks a finished translation (in its ranking score: the mean
# log-prob per token at the default length penalty 1) per digit of the source's numbers it
# has not written: chosen on the dev sets (docs/broad-training.md)
NUMBER_COVERAGE = 0.5
# The same, per comma, semicolon, colon or bracket of the source the translation has not
# written (attenzione.search.scoring.CARRIED_MARKS): chosen on the dev sets (docs/broad-training.md)
PUNCTUATION_COVERAGE = 0.5
# How much beam search's ranking score weighs a finished translation's attention coverage (GNMT's
# coverage penalty: Σ over source tokens of log min(attention received, 1), ≤ 0), which ranks
# down a translation that left part of its source unattended, a dropped clause: chosen on the
# dev sets (docs/broad-training.md)
ATTENTION_COVERAGE = 0.02
# How much lower beam search ranks a hypothesis (in total log-prob) for each word it writes that
# is neither among the model's known words nor in the source (attenzione.search.lexicon): chosen on
# the dev sets (docs/broad-training.md)
WORD_PENALTY = 8.0


@dataclass(frozen=True)
class DecodeConfig(_JsonMixin):
    """How to search for a target sentence: the method and its settings. What beam search
    ranks besides the log-prob (coverage, the word check) are ranking terms with their own
    weights (:class:`attenzione.search.scoring.Terms`).

    ``max_len_a * src_len + max_len_b`` caps the number of generated tokens (fairseq's
    convention), never more than the model's ``max_len``.
    """

    method: Literal["greedy", "sample", "beam"] = "beam"
    beam_size: int = 4
    length_penalty: float = 1.0
    n_best: int = 1
    temperature: float = 1.0
    top_k: int = 0
    top_p: float = 1.0
    seed: int | None = None
    max_len_a: float = 1.5
    max_len_b: int = 10
    min_len: int = 0  # <eos> is forbidden before this many new tokens (benchmarks use it)

    def __post_init__(self) -> None:
        _check(
            self.method in ("greedy", "sample", "beam"),
            f"method must be 'greedy', 'sample' or 'beam', got {self.method!r}",
        )
        _check(self.beam_size >= 1, f"beam_size must be >= 1, got {self.beam_size}")
        _check(
            1 <= self.n_best <= max(1, self.beam_size) or self.method != "beam",
            f"n_best must be between 1 and beam_size ({self.beam_size}), got {self.n_best}",
        )
        _check(self.temperature > 0, f"temperature must be > 0, got {self.temperature}")
        _check(self.top_k >= 0, f"top_k must be >= 0 (0 = off), got {self.top_k}")
        _check(0.0 < self.top_p <= 1.0, f"top_p must be in (0, 1], got {self.top_p}")
        _check(self.length_penalty >= 0, f"length_penalty must be >= 0, got {self.length_penalty}")
        _check(self.max_len_a >= 0, f"max_len_a must be >= 0, got {self.max_len_a}")
        _check(self.max_len_b >= 1, f"max_len_b must be >= 1, got {self.max_len_b}")
        _check(self.min_len >= 0, f"min_len must be >= 0, got {self.min_len}")


def search_config(
    beam: int = 4,
    n_best: int = 1,
    *,
    sample: bool = False,
    temperature: float = 1.0,
    top_k: int = 0,
    top_p: float = 1.0,
    seed: int | None = None,
    length_penalty: float = 1.0,
) -> DecodeConfig:
    """The search the usual options describe: sampling, greedy (beam 1, one candidate) or beam
    search with ``n_best`` candidates (the beam widened to hold them)."""
    # Sampling options are checked even when sampling is off: a bad value is a mistake either
    # way, and silently ignoring it would hide it.
    sampling = DecodeConfig(
        method="sample", temperature=temperature, top_k=top_k, top_p=top_p, seed=seed
    )
    if sample:
        return sampling
    _check(beam >= 1, f"beam must be >= 1, got {beam}")
    if beam == 1 and n_best == 1:
        return DecodeConfig(method="greedy")
    return DecodeConfig(
        method="beam", beam_size=max(beam, n_best), n_best=n_best, length_penalty=length_penalty
    )


@dataclass(frozen=True)
class TrainConfig(_JsonMixin):
    """Everything about a training run that is not the model's shape.

    Stop conditions are absolute, so that ``--resume`` continues a run instead of restarting
    it: ``max_steps`` counts optimizer steps since the run began and ``epochs`` whole passes over
    the data; ``max_minutes`` is the wall-clock budget of *this* invocation (the one that makes
    sense when a run spans several sessions). Whichever comes first stops training.
    """

    data: str
    out: str
    preset: str = "small"
    epochs: int | None = None
    max_steps: int | None = None
    max_minutes: float | None = None
    seed: int = 1
    max_tokens: int = 3000
    max_sentences: int | None = None
    lr: float = 1e-3
    warmup_steps: int = 2000
    cooldown: float = 0.0  # lr → 0 over this last part of the budget (training.schedule)
    weight_decay: float = 0.0
    label_smoothing: float = 0.1
    clip_norm: float = 1.0
    bf16: bool = False
    dev_size: int = 2000
    test_size: int = 2000
    skip_bad_lines: bool = False
    dev_bleu_sentences: int = 500
    eval_every: int = 1000
    save_every_minutes: float = 10.0
    keep_snapshots: int = 0  # weights of the last K saves of last/, for averaging
    patience: int = 0
    max_src_tokens: int = 100
    vocab_size: int = 8000
    glove: str | None = None
    freeze_embeddings: bool = False
    num_threads: int | None = None
    progress: bool = True
    # several corpora (issue 11): ``data`` is the primary corpus (dev/test are split from it);
    # ``extra_data`` are more corpora as "PATH" or "PATH:WEIGHT", trained on whole
    data_weight: float = 1.0
    extra_data: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    extra_dev: tuple[str, ...] = ()
    # the cleaning filters of ``attenzione.data.cleaning`` (None / False switches one off)
    clean_max_words: int | None = 100
    clean_max_ratio: float | None = 3.0
    clean_placeholders: bool = True
    clean_identical_min_words: int | None = 3
    clean_untranslated: bool = True
    strip_accelerators: bool = True
    # the pair (default en→it): recorded in info.json, named by a Moses prefix's files; its
    # language profiles (attenzione.languages) choose its pipeline and cleaning function words
    src_lang: str = "en"
    tgt_lang: str = "it"
    # read every corpus, extra dev set and excluded set the other way: the second column is
    # the source (an Italian→English model from the en-it corpora). The held-out split is
    # drawn symmetrically, so it holds the same pairs as the forward run's, turned round.
    reverse: bool = False
    number_augment: float = 0.0
    # subword regularisation (Kudo 2018): each batch's sources are segmented afresh, drawn
    # from their best SentencePiece segmentations with this smoothing alpha (0 = off: the
    # best segmentation, as translation reads it); the targets keep theirs
    subword_sampling: float = 0.0
    split_digits: bool = False
    byte_fallback: bool = False
    tokenizer_sample: int = 0
    # where the run lives: "auto" (a GPU when there is one), "cpu" or "cuda"
    device: str = "auto"
    # whom info.json credits for the data; None: what the corpora say (data.attribution)
    attribution: str | None = None
    # a trained model directory whose weights start this run (training.warm_start)
    init_from: str | None = None
    # a model directory whose tokenizers the run uses instead of training its own
    tokenizers_from: str | None = None
    # the number of encoder / decoder layers, None: the preset's (with ``init_from`` a
    # shallower model grows: training.warm_start adds the layers as exact identities)
    enc_layers: int | None = None
    dec_layers: int | None = None
    # the feed-forward width, None: the preset's (with ``init_from`` a narrower model widens:
    # the new hidden units start with zero output weights, so the run starts exactly where it was)
    d_ff: int | None = None
    # the model width, the number of heads and each head's width, None: the preset's. The
    # heads need not divide d_model (W^Q, W^K, W^V are d_model × heads·d_head, W^O maps back);
    # with ``glove`` an unset d_model is the GloVe file's width, a set one projects it
    d_model: int | None = None
    heads: int | None = None
    d_head: int | None = None

    def __post_init__(self) -> None:
        for name in ("extra_data", "exclude", "extra_dev"):  # JSON gives lists back
            object.__setattr__(self, name, tuple(getattr(self, name)))
        _check(self.data_weight > 0, f"data_weight must be > 0, got {self.data_weight}")
        _check(self.keep_snapshots >= 0, f"keep_snapshots must be >= 0, got {self.keep_snapshots}")
        _check(
            0.0 <= self.subword_sampling <= 1.0,
            f"subword_sampling must be in [0, 1] (0 = off), got {self.subword_sampling}",
        )
        for name in ("epochs", "max_steps"):
            value = getattr(self, name)
            _check(value is None or value >= 1, f"{name} must be >= 1, got {value!r}")
        _check(
            self.max_minutes is None or self.max_minutes > 0,
            f"max_minutes must be > 0, got {self.max_minutes!r}",
        )
        _check(self.max_tokens >= 16, f"max_tokens must be >= 16, got {self.max_tokens}")
        _check(self.lr > 0, f"lr must be > 0, got {self.lr}")
        _check(self.warmup_steps >= 1, f"warmup_steps must be >= 1, got {self.warmup_steps}")
        for name in ("cooldown", "number_augment"):
            value = getattr(self, name)
            _check(0.0 <= value <= 1.0, f"{name} must be in [0, 1], got {value}")
        _check(
            0.0 <= self.label_smoothing < 1.0,
            f"label_smoothing must be in [0, 1), got {self.label_smoothing}",
        )
        _check(self.clip_norm >= 0, f"clip_norm must be >= 0 (0 = off), got {self.clip_norm}")
        _check(self.dev_size >= 1, f"dev_size must be >= 1, got {self.dev_size}")
        _check(self.test_size >= 0, f"test_size must be >= 0, got {self.test_size}")
        _check(self.eval_every >= 1, f"eval_every must be >= 1, got {self.eval_every}")
        _check(self.patience >= 0, f"patience must be >= 0 (0 = off), got {self.patience}")
        _check(self.vocab_size >= 16, f"vocab_size must be >= 16, got {self.vocab_size}")
        _check(
            self.max_src_tokens >= 1,
            f"max_src_tokens must be >= 1, got {self.max_src_tokens}",
        )
        for name in ("enc_layers", "dec_layers", "d_ff", "d_model", "heads", "d_head"):
            value = getattr(self, name)
            _check(value is None or value >= 1, f"{name} must be >= 1, got {value!r}")
        _check(
            self.num_threads is None or self.num_threads >= 1,
            f"num_threads must be >= 1 (or None for torch's choice), got {self.num_threads}",
        )
        _check(
            self.device in ("auto", "cpu", "cuda"),
            f"device must be 'auto', 'cpu' or 'cuda', got {self.device!r}",
        )
