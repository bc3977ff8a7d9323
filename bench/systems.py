"""The systems under test, built at identical sizes from one :class:`Dims`.

* ``attenzione`` — our Transformer, decoding on its K/V cache;
* ``torch.nn`` — ``torch.nn.Transformer`` with embeddings, sinusoidal positions and an output
  layer, the way tutorials build it; greedy decoding re-runs the decoder on the whole prefix
  (``nn.TransformerDecoder`` has no cache);
* ``marian`` — Hugging Face ``MarianMTModel`` randomly initialised from a ``MarianConfig``
  of the same dimensions (no download); ``generate`` uses its K/V cache;
* ``ct2`` — CTranslate2, the C++ engine, running that same random Marian model converted with
  CTranslate2's own converter.

Every system takes batches in one convention — pad 0, <bos> 1, <eos> 2, ids 4…V-2 — and maps
it to its own (Marian pads with V-1). Training uses one loss for all: cross-entropy with label
smoothing 0.1 over real target tokens, Adam.
"""

from __future__ import annotations

import math
import tempfile
from contextlib import nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from attenzione.config import DecodeConfig, ModelConfig
from attenzione.model.transformer import Transformer
from attenzione.search.decoding import generate

PAD, BOS, EOS = 0, 1, 2


@dataclass(frozen=True)
class Dims:
    d_model: int = 256
    n_heads: int = 4
    d_head: int = 64
    d_ff: int = 1024
    layers: int = 3  # encoder layers
    vocab: int = 8000
    max_len: int = 256
    dropout: float = 0.1
    dec_layers: int | None = None  # None: as many as the encoder

    @property
    def n_dec(self) -> int:
        return self.layers if self.dec_layers is None else self.dec_layers


PRESETS = {
    "tiny": Dims(64, 4, 16, 256, 2, 1000),  # a smoke run of the harness
    "small": Dims(),
    "base": Dims(384, 6, 64, 1536, 5),
    # the shape of the shipped models (src/attenzione/pretrained/*): 6 + 3 layers, 24k pieces
    "shipped": Dims(256, 4, 64, 2048, 6, 24001, dec_layers=3),
}


def dims_of(model_dir: Path) -> Dims:
    """The shape of a model directory's network (its config.json), as bench dimensions."""
    import json

    cfg = json.loads((model_dir / "config.json").read_text(encoding="utf-8"))
    if cfg["src_vocab_size"] != cfg["tgt_vocab_size"]:
        raise SystemExit("bench needs one shared vocabulary (src_vocab_size == tgt_vocab_size)")
    return Dims(
        cfg["d_model"],
        cfg["n_heads"],
        cfg["d_head"],
        cfg["d_ff"],
        cfg["n_enc_layers"],
        cfg["tgt_vocab_size"],
        cfg["max_len"],
        dec_layers=cfg["n_dec_layers"],
    )


def _loss(logits: Tensor, target: Tensor, pad: int) -> Tensor:
    """Mean label-smoothed CE over real tokens; ``logits`` (B,T,V) or (N,V) at real tokens."""
    if logits.dim() == 2:
        target = target[target != pad]
    v = logits.shape[-1]
    return F.cross_entropy(
        logits.reshape(-1, v).float(), target.reshape(-1), ignore_index=pad, label_smoothing=0.1
    )


def _autocast(bf16: bool) -> Any:
    return torch.autocast("cpu", dtype=torch.bfloat16) if bf16 else nullcontext()


class System:
    name = "?"
    pad = PAD

    model: nn.Module
    opt: torch.optim.Optimizer

    def logits(self, src: Tensor, tgt_in: Tensor, tgt_out: Tensor) -> Tensor:
        raise NotImplementedError

    def train_step(self, src: Tensor, tgt_in: Tensor, tgt_out: Tensor, bf16: bool) -> float:
        """One optimizer step; every system shares this loss and optimizer."""
        self.model.train()
        self.opt.zero_grad(set_to_none=True)
        with _autocast(bf16):
            logits = self.logits(src, tgt_in, tgt_out)
        loss = _loss(logits, tgt_out, PAD)
        loss.backward()
        self.opt.step()
        return float(loss.detach())

    def greedy(self, src: Tensor, new_tokens: int, bf16: bool = False) -> Any:
        raise NotImplementedError

    def beam(self, src: Tensor, k: int, new_tokens: int, bf16: bool = False) -> Any:
        raise NotImplementedError

    def remap(self, ids: Tensor) -> Tensor:
        return ids if self.pad == PAD else ids.masked_fill(ids == PAD, self.pad)


# ---------------------------------------------------------------------------- attenzione
class Attenzione(System):
    name = "attenzione"

    def __init__(self, d: Dims) -> None:
        cfg = ModelConfig(
            src_vocab_size=d.vocab,
            tgt_vocab_size=d.vocab,
            d_model=d.d_model,
            n_heads=d.n_heads,
            d_head=d.d_head,
            d_ff=d.d_ff,
            n_enc_layers=d.layers,
            n_dec_layers=d.n_dec,
            dropout=d.dropout,
            max_len=d.max_len,
            share_src_tgt_embeddings=True,
            tie_embeddings=True,
        )
        self.model = Transformer(cfg)
        self.opt = torch.optim.Adam(self.model.parameters(), lr=1e-4)

    def logits(self, src: Tensor, tgt_in: Tensor, tgt_out: Tensor) -> Tensor:
        # our training path: the output layer runs on real target positions only
        out: Tensor = self.model(src, tgt_in, logits_at=tgt_out != PAD).logits
        return out

    def inference(self, precision: str, pack: bool = True) -> Attenzione:
        """A decoding-only view of this system as the translator runs it: fp32 with packed
        linear layers (``pack=False``: plain), bf16 weights, int8."""
        from attenzione.model.fast.precision import for_inference

        view = object.__new__(Attenzione)
        view.model = for_inference(self.model, precision, pack=pack)
        view.name = f"attenzione {precision}" if precision != "fp32" else "attenzione packed"
        return view

    def _decode(self, src: Tensor, cfg: DecodeConfig, bf16: bool) -> Any:
        self.model.eval()
        with _autocast(bf16):
            return generate(self.model, src, cfg)

    def greedy(self, src: Tensor, new_tokens: int, bf16: bool = False) -> Any:
        cfg = DecodeConfig(method="greedy", max_len_a=0.0, max_len_b=new_tokens, min_len=new_tokens)
        return self._decode(src, cfg, bf16)

    def beam(self, src: Tensor, k: int, new_tokens: int, bf16: bool = False) -> Any:
        cfg = DecodeConfig(
            method="beam", beam_size=k, max_len_a=0.0, max_len_b=new_tokens, min_len=new_tokens
        )
        return self._decode(src, cfg, bf16)


# ---------------------------------------------------------------------------- torch.nn
class _TorchNNModel(nn.Module):
    def __init__(self, d: Dims) -> None:
        super().__init__()
        self.d = d
        self.src_emb = nn.Embedding(d.vocab, d.d_model, padding_idx=PAD)
        self.tgt_emb = nn.Embedding(d.vocab, d.d_model, padding_idx=PAD)
        pos = torch.arange(d.max_len)[:, None]
        div = torch.exp(torch.arange(0, d.d_model, 2) * (-math.log(10000.0) / d.d_model))
        pe = torch.zeros(d.max_len, d.d_model)
        pe[:, 0::2], pe[:, 1::2] = torch.sin(pos * div), torch.cos(pos * div)
        self.register_buffer("pe", pe)
        self.tf = nn.Transformer(
            d_model=d.d_model,
            nhead=d.n_heads,
            num_encoder_layers=d.layers,
            num_decoder_layers=d.n_dec,
            dim_feedforward=d.d_ff,
            dropout=d.dropout,
            batch_first=True,
        )
        self.out = nn.Linear(d.d_model, d.vocab)
        self.scale = math.sqrt(d.d_model)

    def embed(self, emb: nn.Embedding, ids: Tensor) -> Tensor:
        return emb(ids) * self.scale + self.pe[: ids.shape[1]]

    def encode(self, src: Tensor) -> Tensor:
        out: Tensor = self.tf.encoder(
            self.embed(self.src_emb, src), src_key_padding_mask=src == PAD
        )
        return out

    def decode(self, tgt: Tensor, memory: Tensor, src_pad: Tensor) -> Tensor:
        t = tgt.shape[1]
        causal = nn.Transformer.generate_square_subsequent_mask(t)
        h = self.tf.decoder(
            self.embed(self.tgt_emb, tgt),
            memory,
            tgt_mask=causal,
            tgt_key_padding_mask=tgt == PAD,
            memory_key_padding_mask=src_pad,
            tgt_is_causal=True,
        )
        out: Tensor = self.out(h)
        return out

    def forward(self, src: Tensor, tgt: Tensor) -> Tensor:
        return self.decode(tgt, self.encode(src), src == PAD)


class TorchNN(System):
    name = "torch.nn"

    def __init__(self, d: Dims) -> None:
        self.model = _TorchNNModel(d)
        self.opt = torch.optim.Adam(self.model.parameters(), lr=1e-4)

    def logits(self, src: Tensor, tgt_in: Tensor, tgt_out: Tensor) -> Tensor:
        out: Tensor = self.model(src, tgt_in)
        return out

    @torch.inference_mode()
    def greedy(self, src: Tensor, new_tokens: int, bf16: bool = False) -> Any:
        self.model.eval()
        with _autocast(bf16):
            memory = self.model.encode(src)
            ys = torch.full((src.shape[0], 1), BOS, dtype=torch.long)
            for _ in range(new_tokens):
                logits = self.model.decode(ys, memory, src == PAD)[:, -1]
                logits[:, EOS] = float("-inf")  # fixed length, as for every system
                ys = torch.cat([ys, logits.argmax(-1, keepdim=True)], dim=1)
        return ys


# ---------------------------------------------------------------------------- Marian / CT2
def marian_config(d: Dims) -> Any:
    from transformers import MarianConfig

    v = d.vocab
    return MarianConfig(
        vocab_size=v,
        decoder_vocab_size=v,
        d_model=d.d_model,
        encoder_layers=d.layers,
        decoder_layers=d.n_dec,
        encoder_attention_heads=d.n_heads,
        decoder_attention_heads=d.n_heads,
        encoder_ffn_dim=d.d_ff,
        decoder_ffn_dim=d.d_ff,
        activation_function="relu",
        dropout=d.dropout,
        attention_dropout=0.0,
        activation_dropout=0.0,
        max_position_embeddings=d.max_len,
        pad_token_id=v - 1,
        eos_token_id=EOS,
        bos_token_id=BOS,
        decoder_start_token_id=v - 1,
        forced_eos_token_id=None,
        share_encoder_decoder_embeddings=True,
        scale_embedding=True,
    )


class Marian(System):
    name = "marian"

    def __init__(self, d: Dims) -> None:
        from transformers import MarianMTModel

        self.d = d
        self.pad = d.vocab - 1
        self.model = MarianMTModel(marian_config(d))
        self.opt = torch.optim.Adam(self.model.parameters(), lr=1e-4)

    def logits(self, src: Tensor, tgt_in: Tensor, tgt_out: Tensor) -> Tensor:
        src, tgt_in = self.remap(src), self.remap(tgt_in)
        out: Tensor = self.model(
            input_ids=src,
            attention_mask=(src != self.pad).long(),
            decoder_input_ids=tgt_in,
            decoder_attention_mask=(tgt_in != self.pad).long(),
        ).logits
        return out

    @torch.inference_mode()
    def _generate(self, src: Tensor, new_tokens: int, beams: int, bf16: bool) -> Any:
        self.model.eval()
        src = self.remap(src)
        with _autocast(bf16):
            return self.model.generate(
                input_ids=src,
                attention_mask=(src != self.pad).long(),
                max_new_tokens=new_tokens,
                min_new_tokens=new_tokens,
                num_beams=beams,
                do_sample=False,
                early_stopping=False,
            )

    def greedy(self, src: Tensor, new_tokens: int, bf16: bool = False) -> Any:
        return self._generate(src, new_tokens, 1, bf16)

    def beam(self, src: Tensor, k: int, new_tokens: int, bf16: bool = False) -> Any:
        return self._generate(src, new_tokens, k, bf16)


class _Vocab:
    """What CTranslate2's converter reads from a tokenizer: the vocabulary and two specials."""

    def __init__(self, v: int) -> None:
        self.vocab = {"<pad0>": 0, "<s>": BOS, "</s>": EOS, "<unk>": 3}
        self.vocab.update({f"t{i}": i for i in range(4, v - 1)})
        self.vocab["<pad>"] = v - 1
        self.eos_token, self.unk_token = "</s>", "<unk>"

    def get_vocab(self) -> dict[str, int]:
        return dict(self.vocab)


def convert_to_ct2(marian: Marian, out_dir: Path, quantization: str | None = None) -> Path:
    """Convert the random Marian model with CTranslate2's own Transformers converter."""
    from ctranslate2.converters import TransformersConverter

    src_dir = out_dir / "marian"
    marian.model.save_pretrained(src_dir)
    vocab = _Vocab(marian.d.vocab)

    class _Converter(TransformersConverter):  # type: ignore[misc]
        def load_tokenizer(self, *args: Any, **kwargs: Any) -> Any:
            return vocab

    target = out_dir / f"ct2-{quantization or 'float32'}"
    _Converter(str(src_dir)).convert(str(target), quantization=quantization, force=True)
    return target


class CT2(System):
    name = "ct2"

    def __init__(self, marian: Marian, threads: int, compute_type: str = "float32") -> None:
        import ctranslate2

        self._tmp = tempfile.TemporaryDirectory(prefix="bench-ct2-")
        path = convert_to_ct2(marian, Path(self._tmp.name))
        self.translator = ctranslate2.Translator(
            str(path),
            device="cpu",
            compute_type=compute_type,
            inter_threads=1,
            intra_threads=threads,
        )
        self.name = "ct2" if compute_type == "float32" else f"ct2-{compute_type}"

    @staticmethod
    def _tokens(src: Tensor) -> list[list[str]]:
        # CTranslate2 appends nothing: the source already ends with <eos> (id 2 = "</s>").
        out = []
        for row in src.tolist():
            out.append(["</s>" if i == EOS else f"t{i}" for i in row if i != PAD])
        return out

    def greedy(self, src: Tensor, new_tokens: int, bf16: bool = False) -> Any:
        return self.translator.translate_batch(
            self._tokens(src),
            beam_size=1,
            max_decoding_length=new_tokens,
            min_decoding_length=new_tokens,
            max_batch_size=0,
        )

    def beam(self, src: Tensor, k: int, new_tokens: int, bf16: bool = False) -> Any:
        return self.translator.translate_batch(
            self._tokens(src),
            beam_size=k,
            max_decoding_length=new_tokens,
            min_decoding_length=new_tokens,
        )
