"""The encoder–decoder Transformer (seed 004), end to end.

    source ids ─ embed + positions ─ N × EncoderLayer ───────────────┐ memory (B,S,D)
    target ids ─ embed + positions ─ M × DecoderLayer (self, cross) ─┴─ linear ─ logits (B,T,V)

``encode`` and ``decode`` are separate so that translation runs the encoder once per source
batch and the decoder once per new token, on a :class:`~attenzione.cache.KVCache`.
``forward`` is the teacher-forced pass used in training. Attention maps come back in the output
objects when ``need_weights=True`` (then the reference "math" kernel runs); by default the
fused kernel runs and no weights are kept.

Masks (built once per batch, in :mod:`attenzione.masks`): the encoder and cross-attention use
the source key-padding mask (B,1,1,S); decoder self-attention uses causality alone, which is
exact for right-padded targets (a real target token never attends to a padded one, because
padding only ever comes after it). With ``need_weights=True`` the full masks of seed 000 are
used instead, so a padded query's row is drawn as empty rather than as noise.
"""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import torch
from torch import Tensor, nn

from attenzione import masks as M
from attenzione.cache import KVCache, LayerCache
from attenzione.config import ModelConfig
from attenzione.embeddings import TokenEmbedding
from attenzione.layers import DecoderLayer, EncoderLayer
from attenzione.positional import make_positions

CONFIG_NAME = "config.json"
WEIGHTS_NAME = "model.safetensors"


@dataclass
class EncoderOutput:
    """memory (B,S,D); memory_mask (B,1,1,S) bool; attentions: per layer (B,H,S,S)."""

    memory: Tensor
    memory_mask: Tensor
    attentions: list[Tensor] = field(default_factory=list)


@dataclass
class DecoderOutput:
    """logits (B,T,V); the cache (if any); per layer self (B,H,T,T) and cross (B,H,T,S) maps."""

    logits: Tensor
    cache: KVCache | None = None
    self_attentions: list[Tensor] = field(default_factory=list)
    cross_attentions: list[Tensor] = field(default_factory=list)


@dataclass
class Seq2SeqOutput:
    """What :meth:`Transformer.forward` returns. Attention lists are empty unless requested."""

    logits: Tensor
    encoder_attentions: list[Tensor] = field(default_factory=list)
    decoder_self_attentions: list[Tensor] = field(default_factory=list)
    cross_attentions: list[Tensor] = field(default_factory=list)


class Transformer(nn.Module):
    """Encoder–decoder Transformer built from a :class:`ModelConfig`."""

    def __init__(self, config: ModelConfig) -> None:
        super().__init__()
        self.config = cfg = config
        self.src_embed = TokenEmbedding(
            cfg.src_vocab_size, cfg.d_model, cfg.pad_id, embed_dim=cfg.src_embed_dim
        )
        if cfg.share_src_tgt_embeddings:
            self.tgt_embed = self.src_embed
        else:
            self.tgt_embed = TokenEmbedding(cfg.tgt_vocab_size, cfg.d_model, cfg.pad_id)
        self.positions = make_positions(cfg.positions, cfg.d_model, cfg.max_len)
        self.encoder_layers = nn.ModuleList(EncoderLayer(cfg) for _ in range(cfg.n_enc_layers))
        self.decoder_layers = nn.ModuleList(DecoderLayer(cfg) for _ in range(cfg.n_dec_layers))
        pre = cfg.norm == "pre"
        # Pre-norm leaves the residual stream un-normalised: one final LayerNorm per stack.
        self.encoder_norm: nn.Module = nn.LayerNorm(cfg.d_model) if pre else nn.Identity()
        self.decoder_norm: nn.Module = nn.LayerNorm(cfg.d_model) if pre else nn.Identity()
        self.generator = nn.Linear(cfg.d_model, cfg.tgt_vocab_size, bias=False)
        if cfg.tie_embeddings:
            self.generator.weight = self.tgt_embed.embedding.weight
        else:
            nn.init.normal_(self.generator.weight, std=cfg.d_model**-0.5)
        self.dropout = nn.Dropout(cfg.dropout)

    # ------------------------------------------------------------------ embeddings
    def _embed(self, embed: TokenEmbedding, ids: Tensor, offset: int = 0) -> Tensor:
        """(B,L) ids → (B,L,D): scaled token vectors + positions offset..offset+L-1."""
        x = embed(ids) + self.positions(ids.shape[1], offset)  # (B,L,D) + (L,D)
        if not self.training:
            return x
        out: Tensor = self.dropout(x)
        return out

    # ------------------------------------------------------------------ encoder
    def encode(self, src_ids: Tensor, *, need_weights: bool = False) -> EncoderOutput:
        """Run the encoder. src_ids: (B,S) right-padded with ``pad_id``."""
        cfg = self.config
        key_mask = M.padding_mask(src_ids, cfg.pad_id)  # (B,1,1,S)
        self_mask = M.pairwise_padding_mask(src_ids, cfg.pad_id) if need_weights else key_mask
        x = self._embed(self.src_embed, src_ids)
        maps: list[Tensor] = []
        for layer in self.encoder_layers:
            x, w = layer(x, self_mask, need_weights=need_weights)
            if w is not None:
                maps.append(w)
        return EncoderOutput(self.encoder_norm(x), key_mask, maps)

    # ------------------------------------------------------------------ decoder
    def init_cache(self, memory: Tensor, memory_mask: Tensor, capacity: int = 64) -> KVCache:
        """A cache holding every decoder layer's cross-attention K/V of ``memory`` (B,S,D)."""
        layers = []
        for layer in self.decoder_layers:
            assert isinstance(layer, DecoderLayer)
            k, v = layer.cross_attn.project_kv(memory)  # 2 × (B,H,S,Dh), computed once
            layers.append(LayerCache(cross_k=k, cross_v=v))
        return KVCache(layers=layers, memory_mask=memory_mask, capacity=capacity)

    def decode(
        self,
        tgt_ids: Tensor,
        memory: Tensor | None = None,
        memory_mask: Tensor | None = None,
        *,
        cache: KVCache | None = None,
        need_weights: bool = False,
        logits_at: Tensor | None = None,
    ) -> DecoderOutput:
        """Run the decoder and the output projection.

        Without a cache: ``tgt_ids`` (B,T) is the whole (right-padded) target prefix and
        ``memory``/``memory_mask`` come from :meth:`encode`. With a cache (from
        :meth:`init_cache`): ``tgt_ids`` holds only the new tokens, positions continue from
        ``cache.length``, and the memory is not needed.
        """
        cfg = self.config
        offset = 0 if cache is None else cache.length
        if cache is not None:
            memory_mask = cache.memory_mask
        if memory_mask is None:
            raise ValueError("decode needs memory_mask (or a cache that carries it)")
        self_mask: Tensor | None = None  # causal alone: exact for right-padded targets
        cross_mask: Tensor | None = memory_mask if cache is None else cache.cross_mask
        t = tgt_ids.shape[1]
        if need_weights:
            real = M.is_real(tgt_ids, cfg.pad_id)  # (B,T)
            self_mask = M.causal_mask(t, offset=offset, device=tgt_ids.device)
            if offset == 0:
                self_mask = self_mask & M.pairwise_padding_mask(tgt_ids, cfg.pad_id)
            cross_mask = memory_mask & real[:, None, :, None]  # (B,1,T,S): seed 000's mask
        elif cache is not None and t > 1:
            self_mask = M.causal_mask(t, offset=offset, device=tgt_ids.device)
        x = self._embed(self.tgt_embed, tgt_ids, offset)
        self_maps: list[Tensor] = []
        cross_maps: list[Tensor] = []
        for i, layer in enumerate(self.decoder_layers):
            x, sw, cw = layer(
                x,
                memory,
                self_mask,
                cross_mask,
                cache=cache,
                layer_index=i,
                need_weights=need_weights,
            )
            if sw is not None and cw is not None:
                self_maps.append(sw)
                cross_maps.append(cw)
        if cache is not None:
            cache.advance()
        if logits_at is not None:
            x = x[logits_at]  # (B,T,D) -> (N,D): only the positions asked for
        logits = self.generator(self.decoder_norm(x))  # (B,T,D) -> (B,T,V), or (N,V)
        return DecoderOutput(logits, cache, self_maps, cross_maps)

    def forward(
        self,
        src_ids: Tensor,
        tgt_ids: Tensor,
        need_weights: bool = False,
        *,
        logits_at: Tensor | None = None,
    ) -> Seq2SeqOutput:
        """Teacher-forced pass: src_ids (B,S), tgt_ids (B,T) (``<bos>`` + target) → logits.

        ``logits_at`` (B,T) bool: compute logits only at these positions, returned as (N,V)
        in row-major order — training passes the real target positions, so the largest matrix
        multiply (D × V) skips the padding.
        """
        enc = self.encode(src_ids, need_weights=need_weights)
        dec = self.decode(
            tgt_ids, enc.memory, enc.memory_mask, need_weights=need_weights, logits_at=logits_at
        )
        return Seq2SeqOutput(dec.logits, enc.attentions, dec.self_attentions, dec.cross_attentions)

    # ------------------------------------------------------------------ persistence
    def num_parameters(self, trainable_only: bool = False) -> int:
        params = {id(p): p for p in self.parameters() if p.requires_grad or not trainable_only}
        return sum(p.numel() for p in params.values())

    def save(self, directory: str | Path, *, dtype: torch.dtype | None = None) -> None:
        """Write ``config.json`` and ``model.safetensors`` into ``directory``, atomically.

        ``dtype`` (e.g. ``torch.float16``) stores the weights at a smaller precision; they are
        cast back to float32 on load.
        """
        from safetensors.torch import save_file

        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        state = _unshared_state(self, dtype)
        _atomic_write(directory / WEIGHTS_NAME, lambda p: save_file(state, str(p)))
        _atomic_write(directory / CONFIG_NAME, lambda p: self.config.save(p))

    @classmethod
    def load(cls, directory: str | Path, *, map_location: str = "cpu") -> Transformer:
        """Build a model from ``config.json`` and load ``model.safetensors``; never unpickles."""
        from safetensors.torch import load_file

        directory = Path(directory)
        for name in (CONFIG_NAME, WEIGHTS_NAME):
            if not (directory / name).is_file():
                raise FileNotFoundError(f"{directory / name} not found: not a model directory")
        model = cls(ModelConfig.load(directory / CONFIG_NAME))
        state = load_file(str(directory / WEIGHTS_NAME), device=map_location)
        own = model.state_dict()
        state = {k: v.to(own[k].dtype) if k in own else v for k, v in state.items()}
        missing, unexpected = model.load_state_dict(state, strict=False)
        tied = _tied_names(model)
        missing = [k for k in missing if k not in tied]
        if missing or unexpected:
            raise ValueError(
                f"{directory / WEIGHTS_NAME} does not match its config: "
                f"missing {missing[:5]}, unexpected {unexpected[:5]}"
            )
        return model


def _tied_names(model: nn.Module) -> set[str]:
    """State-dict names that alias an earlier tensor (tied or shared embeddings)."""
    seen: dict[int, str] = {}
    tied = set()
    for name, t in model.state_dict(keep_vars=True).items():
        if t.data_ptr() in seen:
            tied.add(name)
        else:
            seen[t.data_ptr()] = name
    return tied


def _unshared_state(model: nn.Module, dtype: torch.dtype | None) -> dict[str, Tensor]:
    """The state dict without aliases (safetensors stores each tensor once), optionally cast."""
    tied = _tied_names(model)
    out = {}
    for name, t in model.state_dict().items():
        if name in tied:
            continue
        t = t.detach()
        if dtype is not None and t.is_floating_point():
            t = t.to(dtype)
        out[name] = t.contiguous()
    return out


def _atomic_write(path: Path, write: object) -> None:
    """Call ``write(tmp_path)`` then rename onto ``path``: readers never see half a file."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    os.close(fd)
    try:
        write(Path(tmp))  # type: ignore[operator]
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
