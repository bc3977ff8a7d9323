"""Hugging Face Marian models (OPUS-MT's conventions) built by the tests, saved as
Helsinki-NLP's directories are, and imported with ``attenzione import``.

Shared by tests/test_marian_import.py (exactness against transformers) and
tests/test_marian_everywhere.py (every command on an imported model). transformers and
sentencepiece are needed: the test modules skip without them before importing this one.
"""

from __future__ import annotations

import io
import json
import warnings
from pathlib import Path
from typing import Any

import torch

PAD = 99  # <pad> of the 100-id models below: the last id, and the decoder's start
WORDS = ["the", "cat", "dog", "house", "red", "big", "small", "is", "has", "a", "il", "gatto",
         "cane", "casa", "rosso", "grande"]  # fmt: skip


def marian_model(
    vocab: int = 100,
    *,
    d_model: int = 32,
    layers: int = 2,
    heads: int = 4,
    d_ff: int = 64,
    seed: int = 0,
    spread: bool = True,
    **options: Any,
) -> Any:
    """A MarianMTModel of OPUS-MT's conventions (``<pad>`` last and the decoder's start,
    ``</s>`` 0, swish, scaled embeddings, one matrix for everything); ``spread``: weights
    drawn wide enough that logits differ by units (transformers' own init gives ~0.1), and a
    final logits bias that is not zero."""
    import transformers

    torch.manual_seed(seed)
    settings: dict[str, Any] = dict(
        vocab_size=vocab,
        decoder_vocab_size=vocab,
        d_model=d_model,
        encoder_layers=layers,
        decoder_layers=layers,
        encoder_attention_heads=heads,
        decoder_attention_heads=heads,
        encoder_ffn_dim=d_ff,
        decoder_ffn_dim=d_ff,
        activation_function="swish",
        scale_embedding=True,
        pad_token_id=vocab - 1,
        eos_token_id=0,
        decoder_start_token_id=vocab - 1,
        forced_eos_token_id=0,
        max_position_embeddings=64,
        dropout=0.0,
    )
    model = transformers.MarianMTModel(transformers.MarianConfig(**{**settings, **options}))
    if spread:
        with torch.no_grad():
            for name, p in model.named_parameters():
                if "embed_positions" in name:  # Marian's sinusoids: computed, never saved
                    continue
                if "layer_norm" in name:
                    p.normal_(1.0 if name.endswith("weight") else 0.0, 0.1)
                elif p.dim() == 2:  # embeddings and projections
                    p.normal_(0.0, p.shape[1] ** -0.5)
                else:
                    p.normal_(0.0, 0.1)
            model.final_logits_bias.normal_(0.0, 1.0)
    return model.eval()


def save(model: Any, directory: Path) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(str(directory))
    return directory


def trained_marian(steps: int = 120) -> Any:
    """A small Marian model trained here for ``steps`` to write its source reversed and
    renamed: far from perfect, but its translations end on their own, at different lengths."""
    model = marian_model(spread=False, seed=11)
    model.train()
    g = torch.Generator().manual_seed(12)
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    for _ in range(steps):
        lengths = torch.randint(2, 10, (32,), generator=g)
        src = torch.full((32, 10), PAD)
        labels = torch.full((32, 10), -100)
        for row, n in enumerate(lengths.tolist()):
            words = torch.randint(2, 40, (n,), generator=g)
            src[row, : n + 1] = torch.cat([words, torch.tensor([0])])
            labels[row, : n + 1] = torch.cat([(words.flip(0) * 3) % 97 + 2, torch.tensor([0])])
        loss = model(input_ids=src, attention_mask=src.ne(PAD).long(), labels=labels).loss
        opt.zero_grad()
        loss.backward()
        opt.step()
    return model.eval()


def spm_proto(texts: list[str], size: int) -> bytes:
    """A SentencePiece model of about ``size`` pieces trained on ``texts`` (its bytes)."""
    import sentencepiece as spm

    buffer = io.BytesIO()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(texts), model_writer=buffer, vocab_size=size,
        hard_vocab_limit=False, num_threads=1, minloglevel=2,
    )  # fmt: skip
    return buffer.getvalue()


def opus_mt_dir(directory: Path, hf: Any, pair: tuple[str, str] = ("en", "it")) -> Path:
    """``hf`` (100 ids, ``<pad>`` 99) saved as Helsinki-NLP's directories are: the model, two
    SentencePiece models trained here, the joint ``vocab.json`` (``</s>`` 0, ``<unk>`` 1, the
    pieces of both, fillers, ``<pad>`` 99), the ``pair`` in ``tokenizer_config.json`` and a
    model card with its licence."""
    import sentencepiece as spm

    save(hf, directory)
    texts = [" ".join(WORDS[i : i + 4]) + "." for i in range(len(WORDS))] * 5
    vocab = {"</s>": 0, "<unk>": 1}
    for side in ("source", "target"):
        proto = spm_proto(texts, 40)
        (directory / f"{side}.spm").write_bytes(proto)
        sp = spm.SentencePieceProcessor(model_proto=proto)
        for i in range(sp.get_piece_size()):
            if not sp.is_control(i) and not sp.is_unknown(i):
                vocab.setdefault(sp.id_to_piece(i), len(vocab))
    vocab.update({f"<fill{i}>": i for i in range(len(vocab), PAD)} | {"<pad>": PAD})
    (directory / "vocab.json").write_text(json.dumps(vocab, ensure_ascii=False), "utf-8")
    config = {"source_lang": pair[0], "target_lang": pair[1], "separate_vocabs": False}
    (directory / "tokenizer_config.json").write_text(json.dumps(config), "utf-8")
    card = f"---\nlanguage: [{pair[0]}, {pair[1]}]\nlicense: cc-by-4.0\n---\n"
    (directory / "README.md").write_text(card)
    return directory


def hf_tokenizer(directory: Path) -> Any:
    import transformers

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "Recommended: pip install sacremoses."
        return transformers.MarianTokenizer.from_pretrained(str(directory))


def import_with_cli(hf_dir: Path, out: Path) -> str:
    """``attenzione import HF_DIR --out OUT``, asserted to succeed; what it printed."""
    from typer.testing import CliRunner

    from attenzione.cli import app

    res = CliRunner().invoke(app, ["import", str(hf_dir), "--out", str(out)])
    assert res.exit_code == 0, res.output
    return res.output
