"""``attenzione export``: transformers and CTranslate2 translate exactly as we do.

Oracle tests: a model exported for Hugging Face, loaded with ``MarianMTModel`` /
``MarianTokenizer``, and one exported for CTranslate2, loaded with ``ctranslate2.Translator``,
give our logits (teacher-forced, within 1e-4 in fp32) and our greedy ids. Small random models
(their every weight and bias perturbed, so a dimension in the wrong place shows) cover each
convention the conversion handles — shared or separate vocabularies, tied or untied output
layer, corpus tags, a GloVe-width source table, an odd d_model, and for CTranslate2 pre-norm
layers, heads that do not split d_model and learned positions; the shipped en→it model is
compared on 20 sentences against ``Translator.translate(…, steps=())`` greedy, texts included.
What transformers' Marian cannot hold is refused in one line, and nothing is written.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
import torch
from typer.testing import CliRunner

from attenzione.cli import app
from attenzione.config import DecodeConfig, ModelConfig, search_config
from attenzione.data import SentencePieceTokenizer, Tokenizer
from attenzione.model.transformer import Transformer
from attenzione.search.constraints import Never
from attenzione.search.decoding import generate
from attenzione.translator import model_dir
from attenzione.translator.export import ExportRefused, export
from attenzione.translator.translator import PRETRAINED_DIR, Translator
from tiny_model import tiny_translator
from toy_corpus import toy_pairs

PAIRS = toy_pairs()
ENGLISH = [en for en, _ in PAIRS]
ITALIAN = [it for _, it in PAIRS]
TEXTS = [
    "The red cat is here.",
    "The old house is small.",
    "The new train is there.",
    "The big book is here. The car is red.",
    "The dog is old and the cat is new.",
    "Is the car there?",
]
INFO = {"source_language": "en", "target_language": "it"}
TOLERANCE = 1e-4


# ---------------------------------------------------------------------------- tiny models
@pytest.fixture(scope="module")
def joint() -> SentencePieceTokenizer:
    """One vocabulary for both sides with a corpus tag, as the shipped models have."""
    tok = SentencePieceTokenizer.train(ENGLISH + ITALIAN, vocab_size=50, byte_fallback=False)
    return tok.with_tags(["lc"])


@pytest.fixture(scope="module")
def toks(joint: Tokenizer) -> dict[bool, tuple[Tokenizer, Tokenizer]]:
    """Joint (True): ``joint`` on both sides. Separate (False): a vocabulary per side, of
    different sizes, a corpus tag on the source side only."""
    src = SentencePieceTokenizer.train(ENGLISH, vocab_size=30, byte_fallback=False)
    tgt = SentencePieceTokenizer.train(ITALIAN, vocab_size=40, byte_fallback=False)
    return {True: (joint, joint), False: (src.with_tags(["lc"]), tgt)}


# name -> (joint vocabulary?, ModelConfig fields)
VARIANTS: dict[str, tuple[bool, dict[str, Any]]] = {
    "shared-tied": (True, {"share_src_tgt_embeddings": True, "tie_embeddings": True}),
    "shared-untied": (True, {"share_src_tgt_embeddings": True}),
    "separate": (False, {}),
    "separate-tied": (False, {"tie_embeddings": True}),
    "glove-width": (False, {"src_embed_dim": 10}),
    "odd-width": (True, {"d_model": 21, "n_heads": 3, "d_head": 7, "tie_embeddings": True}),
}
CT2_ONLY: dict[str, tuple[bool, dict[str, Any]]] = {
    "pre-norm": (False, {"norm": "pre"}),
    "heads-apart": (True, {"n_heads": 3, "d_head": 6}),
    "learned": (True, {"positions": "learned", "share_src_tgt_embeddings": True}),
}
# the settings the model core learnt for Marian: tested where the core builds them
CORE: dict[str, tuple[bool, dict[str, Any]]] = {
    "gelu": (True, {"activation": "gelu"}),
    "swish": (False, {"activation": "swish"}),
    "unscaled": (False, {"scale_embeddings": False}),
    "output-bias": (True, {"output_bias": True, "tie_embeddings": True}),
}


def _config(src: Tokenizer, tgt: Tokenizer, **kw: Any) -> ModelConfig:
    base = dict(d_model=24, n_heads=3, d_head=8, d_ff=40, n_enc_layers=2, n_dec_layers=2,
                dropout=0.0, max_len=48)  # fmt: skip
    return ModelConfig(src.vocab_size, tgt.vocab_size, **(base | kw))  # type: ignore[arg-type]


@torch.no_grad()
def _random_model(cfg: ModelConfig) -> Transformer:
    """Untrained, every weight, bias and LayerNorm moved off its initial value (a LayerNorm
    of ones and zeros, or biases of zeros, would hide a dimension put in the wrong place)."""
    torch.manual_seed(0)
    model = Transformer(cfg).eval()
    for p in model.parameters():
        p.add_(0.2 * torch.randn_like(p))
    return model


def _honoured(**kw: Any) -> bool:
    """Whether the model core builds what ``kw`` asks (a config field it may not read yet)."""
    src = SentencePieceTokenizer.train(ENGLISH, vocab_size=30, byte_fallback=False)
    plain, other = _random_model(_config(src, src)), _random_model(_config(src, src, **kw))
    if kw.get("output_bias"):
        return "generator.bias" in other.state_dict()
    ids = torch.tensor([[5, 6, 7, 2]])
    return not torch.equal(plain(ids, ids).logits, other(ids, ids).logits)


def _save(tmp: Path, toks: tuple[Tokenizer, Tokenizer], **kw: Any) -> Path:
    model = _random_model(_config(*toks, **kw))
    return Translator(model, *toks, info=dict(INFO)).save_pretrained(tmp / "model")


# ---------------------------------------------------------------------------- our side
def _batch(rows: list[list[int]]) -> torch.Tensor:
    """(B,L) right-padded with 0."""
    out = torch.zeros((len(rows), max(map(len, rows))), dtype=torch.long)
    for i, row in enumerate(rows):
        out[i, : len(row)] = torch.tensor(row)
    return out


def _ours(path: Path, texts: list[str]) -> tuple[Transformer, list[list[int]], list[Any], Any]:
    """The model of ``path``, the source ids of ``texts``, our greedy outputs (the model alone:
    corpus tags banned, as both exports ban them) and their teacher-forced logits (B,T,V),
    ``<start> + output`` (B,T) and its real positions (B,T)."""
    model = model_dir.load_model(path).eval()
    cfg = model.config
    src, tgt = model_dir.load_tokenizers(path)
    sources = [src.encode(t) + [cfg.eos_id] for t in texts]
    never = [Never(_tags(tgt), cfg.eos_id)] if _tags(tgt) else []
    hyps = generate(model, _batch(sources), DecodeConfig(method="greedy"), constraints=never)
    outputs = [h[0].tokens for h in hyps]
    prefix = _batch([[cfg.start_id, *o] for o in outputs])
    real = _batch([[1] * (len(o) + 1) for o in outputs]).bool()
    with torch.no_grad():
        logits = model(_batch(sources), prefix).logits
    return model, sources, outputs, (logits, prefix, real)


def _caps(sources: list[list[int]], cfg: ModelConfig) -> list[int]:
    """Our greedy search's limit on new tokens per source (search/decoding.py)."""
    d = DecodeConfig(method="greedy")
    return [min(int(len(s) * d.max_len_a) + d.max_len_b, cfg.max_len - 1) for s in sources]


def _cut(ids: list[int], eos: int, cap: int) -> list[int]:
    """A peer's output as ours reads: up to its ``<eos>``, at most ``cap`` tokens."""
    return (ids[: ids.index(eos)] if eos in ids else ids)[:cap]


def _pieces(tok: Tokenizer) -> list[str]:
    return [tok.id_to_token(i) for i in range(tok.vocab_size)]


def _tags(tok: Tokenizer) -> list[int]:
    """The ids of a vocabulary's corpus tags: never written, by us or by the exports."""
    return [i for i, p in enumerate(_pieces(tok)) if p.startswith("<tag:")]


# ---------------------------------------------------------------------------- the peers
def _hf_check(path: Path, tmp: Path, texts: list[str]) -> tuple[float, list[Any], list[str]]:
    """Export ``path`` for Hugging Face and compare with ours: the tokenizer's ids, the
    teacher-forced logits, greedy ids. Returns the largest logit difference, transformers'
    greedy ids and texts."""
    transformers = pytest.importorskip("transformers")
    out = export(path, "huggingface", tmp / "hf")
    model, sources, ours, (logits, prefix, real) = _ours(path, texts)
    tok = transformers.MarianTokenizer.from_pretrained(out)
    hf = transformers.MarianMTModel.from_pretrained(out).eval()
    batch = tok(texts, return_tensors="pt", padding=True)
    assert [
        row[: len(s)].tolist() for row, s in zip(batch.input_ids, sources, strict=True)
    ] == sources
    with torch.no_grad():
        theirs = hf(**batch, decoder_input_ids=prefix).logits
        caps = _caps(sources, model.config)
        generated = hf.generate(**batch, max_length=max(caps) + 2)  # counts the start token
    gap = float((logits - theirs)[real].abs().max())
    assert gap < TOLERANCE
    eos = model.config.eos_id
    hf_ids = [_cut(g[1:].tolist(), eos, c) for g, c in zip(generated, caps, strict=True)]
    assert hf_ids == ours
    return gap, hf_ids, tok.batch_decode(generated, skip_special_tokens=True)


def _ct2_check(path: Path, tmp: Path, texts: list[str]) -> tuple[float, list[Any], list[str]]:
    """Export ``path`` for CTranslate2 and compare with ours: greedy ids and the scores of our
    outputs. Returns the largest difference of a token's log-probability, CTranslate2's greedy
    ids and their texts (the exported ``target.spm`` decoding its pieces)."""
    ctranslate2 = pytest.importorskip("ctranslate2")
    import sentencepiece

    out = export(path, "ctranslate2", tmp / "ct2")
    model, sources, ours, (logits, _, _) = _ours(path, texts)
    cfg = model.config
    src, tgt = model_dir.load_tokenizers(path)
    src_pieces, tgt_pieces = _pieces(src), _pieces(tgt)
    translator = ctranslate2.Translator(str(out), device="cpu", compute_type="float32")
    tokens = [[src_pieces[i] for i in s[:-1]] for s in sources]  # <eos>: add_source_eos
    caps = _caps(sources, cfg)
    found = translator.translate_batch(
        tokens,
        beam_size=1,
        max_decoding_length=max(caps) + 1,
        min_decoding_length=0,  # CTranslate2's default 1 forbids <eos> first; ours allows it
        suppress_sequences=[[tgt_pieces[i]] for i in _tags(tgt)] or None,
    )
    index = {p: i for i, p in enumerate(tgt_pieces)}
    ids = [[index[p] for p in r.hypotheses[0]][:c] for r, c in zip(found, caps, strict=True)]
    assert ids == ours
    log_probs = torch.log_softmax(logits, dim=-1)
    scored = translator.score_batch(tokens, [[tgt_pieces[i] for i in o] for o in ours])
    gap = 0.0
    for row, (o, s, cap) in enumerate(zip(ours, scored, caps, strict=True)):
        said = o + [cfg.eos_id] if len(o) < cap else o  # CTranslate2 scores the <eos> too
        mine = log_probs[row, torch.arange(len(said)), torch.tensor(said, dtype=torch.long)]
        gap = max(gap, float((mine - torch.tensor(s.log_probs[: len(said)])).abs().max()))
    assert gap < TOLERANCE
    if not (out / "target.spm").is_file():  # a word-level vocabulary
        return gap, ids, [" ".join(r.hypotheses[0]) for r in found]
    spm = sentencepiece.SentencePieceProcessor(model_file=str(out / "target.spm"))
    return gap, ids, [spm.decode(r.hypotheses[0]) for r in found]


# ---------------------------------------------------------------------------- tiny: tests
@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_huggingface_gives_our_logits_and_greedy_ids(
    variant: str, toks: dict[bool, Any], tmp_path: Path
) -> None:
    is_joint, kw = VARIANTS[variant]
    _hf_check(_save(tmp_path, toks[is_joint], **kw), tmp_path, TEXTS)


@pytest.mark.parametrize("variant", sorted(VARIANTS | CT2_ONLY))
def test_ctranslate2_gives_our_scores_and_greedy_ids(
    variant: str, toks: dict[bool, Any], tmp_path: Path
) -> None:
    is_joint, kw = (VARIANTS | CT2_ONLY)[variant]
    _ct2_check(_save(tmp_path, toks[is_joint], **kw), tmp_path, TEXTS)


@pytest.mark.parametrize("variant", sorted(CORE))
def test_the_marian_settings_of_the_core_export_exactly(
    variant: str, toks: dict[bool, Any], tmp_path: Path
) -> None:
    is_joint, kw = CORE[variant]
    if not _honoured(**kw):
        pytest.skip(f"the model core does not build {kw} yet")
    path = _save(tmp_path, toks[is_joint], **kw)
    _hf_check(path, tmp_path, TEXTS)
    _ct2_check(path, tmp_path, TEXTS)


def test_a_corpus_tag_is_one_token_for_transformers(joint: Tokenizer, tmp_path: Path) -> None:
    transformers = pytest.importorskip("transformers")
    path = _save(tmp_path, (joint, joint), share_src_tgt_embeddings=True, tie_embeddings=True)
    tok = transformers.MarianTokenizer.from_pretrained(export(path, "huggingface", tmp_path / "o"))
    tag, text = joint.tag_id("lc"), "The red cat is here."  # type: ignore[attr-defined]
    assert tok(f"<tag:lc> {text}").input_ids == [tag, *joint.encode(text), 2]
    assert tok.decode([tag, *joint.encode(text)], skip_special_tokens=True) == text


@pytest.mark.parametrize(
    ("kw", "needle"),
    [
        ({"norm": "pre"}, "norm=pre"),
        ({"n_heads": 3, "d_head": 6}, "3 × 6 is not d_model 24"),
        ({"positions": "learned"}, "learned"),
    ],
)
def test_what_marian_cannot_hold_is_refused_in_one_line(
    kw: dict[str, Any], needle: str, joint: Tokenizer, tmp_path: Path
) -> None:
    path = _save(tmp_path, (joint, joint), **kw)
    with pytest.raises(ExportRefused, match="huggingface") as err:
        export(path, "huggingface", tmp_path / "out")
    assert needle in str(err.value) and "ctranslate2" in str(err.value)
    assert "\n" not in str(err.value)
    assert not (tmp_path / "out").exists()


def test_a_word_level_model_goes_to_ctranslate2_only(tmp_path: Path) -> None:
    path = tiny_translator().save_pretrained(tmp_path / "tiny")
    with pytest.raises(ExportRefused, match="WordTokenizer, and Marian's tokenizer is Sentence"):
        export(path, "huggingface", tmp_path / "out")
    _ct2_check(path, tmp_path, ["the red cat is here .", "the old dog is there ."])


def test_writing_needs_no_transformers_and_ctranslate2_is_named_when_missing(
    joint: Tokenizer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _save(tmp_path, (joint, joint))
    for name in ("transformers", "ctranslate2", "ctranslate2.specs"):
        monkeypatch.setitem(sys.modules, name, None)  # import fails
    out = export(path, "huggingface", tmp_path / "hf")
    assert {p.name for p in out.iterdir()} >= {
        "config.json", "generation_config.json", "model.safetensors", "vocab.json",
        "source.spm", "target.spm", "tokenizer_config.json", "README.md",
    }  # fmt: skip
    with pytest.raises(ExportRefused, match=r"pip install ctranslate2"):
        export(path, "ctranslate2", tmp_path / "ct2")


def test_an_existing_directory_is_replaced_only_if_it_is_an_export(
    joint: Tokenizer, tmp_path: Path
) -> None:
    path = _save(tmp_path, (joint, joint))
    with pytest.raises(FileExistsError, match="not a huggingface export"):
        export(path, "huggingface", path)  # a model directory is never taken for an export
    (tmp_path / "empty").mkdir()
    export(path, "huggingface", tmp_path / "empty")
    export(path, "huggingface", tmp_path / "empty")  # an earlier export: replaced whole
    with pytest.raises(FileExistsError, match="not a ctranslate2 export"):
        export(path, "ctranslate2", tmp_path / "empty")
    assert (path / "model.safetensors").is_file()


def test_the_command_line(joint: Tokenizer, tmp_path: Path) -> None:
    path, run = _save(tmp_path, (joint, joint)), CliRunner().invoke
    res = run(app, ["export", str(path), "--format", "huggingface", "--out", str(tmp_path / "o")])
    assert res.exit_code == 0, res.output
    assert (tmp_path / "o" / "vocab.json").is_file()
    res = run(app, ["export", str(path), "--format", "onnx", "--out", str(tmp_path / "x")])
    assert res.exit_code == 2 and "huggingface, ctranslate2" in res.output
    pre = _save(tmp_path / "pre", (joint, joint), norm="pre")
    res = run(app, ["export", str(pre), "-f", "huggingface", "-o", str(tmp_path / "x")])
    assert res.exit_code == 2 and res.output.startswith("error: huggingface: Marian normalises")
    assert "Traceback" not in res.output


# ---------------------------------------------------------------------------- shipped
SHIPPED_TEXTS = [
    "The cat is sleeping on the sofa.",
    "I was born in 1990.",
    "Where is the train station?",
    "Tom didn't come back until after 2:30.",
    "This program is free software; you can redistribute it and/or modify it.",
    "Click Save to keep your changes.",
    "The meeting starts at 9:30 and ends at 11:45.",
    "I don't know what to do.",
    "Please install the package before running the script.",
    "The weather was beautiful yesterday, so we went to the beach.",
    "Can you help me find my keys?",
    "The file could not be opened because it is damaged.",
    "She has lived in Rome for ten years.",
    "Scientists discovered a new species of frog in the Amazon.",
    "Press the button to start the game.",
    "We need more time to finish the project.",
    "The children are playing in the garden.",
    "Select the text you want to copy.",
    "My brother is taller than me.",
    "The museum is closed on Mondays.",
]
# spelled in byte pieces: the translator's hard constraints (byte bans, whole UTF-8
# characters) are ours alone, so these are compared with the model alone only
BYTE_TEXTS = ["I live in Łódź. 😊", "Erdoğan spoke in Ankara."]


@pytest.fixture(scope="module")
def raw_greedy() -> list[Any]:
    """``attenzione translate --raw --beam 1`` of the shipped model: (ids, text) each."""
    if not (PRETRAINED_DIR / "model.safetensors").is_file():
        pytest.skip("no shipped model in this checkout")
    found = Translator.from_pretrained(PRETRAINED_DIR).translate(
        SHIPPED_TEXTS, search=search_config(1), steps=()
    )
    return [(list(t.candidates[0].ids), t.text) for t in found]


@pytest.mark.parametrize("peer", ["transformers", "ctranslate2"])
def test_the_shipped_model_in_transformers_and_ctranslate2(
    peer: str, raw_greedy: list[Any], tmp_path: Path
) -> None:
    check = _hf_check if peer == "transformers" else _ct2_check
    gap, ids, texts = check(PRETRAINED_DIR, tmp_path, SHIPPED_TEXTS + BYTE_TEXTS)
    # the byte texts were compared with the model alone in check(); the rest, with
    # attenzione's own translations, texts included
    assert list(zip(ids, texts, strict=True))[: len(SHIPPED_TEXTS)] == raw_greedy
    print(f"{peer}: max |logit or log-prob difference| {gap:.2e}, {len(ids)} greedy outputs equal")
