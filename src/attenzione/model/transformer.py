"""The encoder–decoder Transformer of Vaswani et al. (2017), end to end.

    source ids ─ embed + positions ─ N × EncoderLayer ───────────────┐ memory (B,S,D)
    target ids ─ embed + positions ─ M × DecoderLayer (self, cross) ─┴─ linear ─ logits (B,T,V)

``encode`` and ``decode`` are separate so that translation runs the encoder once per source
batch and the decoder once per new token, on a :class:`~attenzione.model.cache.KVCache`.
``forward`` is the teacher-forced pass used in training. Attention maps come back in the output
objects when ``need_weights=True``, each as an
:class:`~attenzione.model.attention.AttentionRecord` (weights, the q/k/v they came from, the mask);
otherwise none are kept. (This is the reference: a model loaded to translate, or one in
training, runs model/fast/'s kernels behind the same interface.) The outputs also carry the
masks the model applied, so a viewer draws what the model used instead of rebuilding it.

No file I/O here: reading and writing model directories is :mod:`attenzione.translator.model_dir`'s
job.

Masks (built once per batch, in :mod:`attenzione.model.masks`): the encoder and cross-attention use
the source key-padding mask (B,1,1,S); decoder self-attention uses the causal mask alone, which is
exact for right-padded targets (a real target token never attends to a padded one, because
padding only ever comes after it). With ``need_weights=True`` the full masks of
:mod:`attenzione.model.masks` (padded queries too) are used instead, so a padded query's row is
drawn as empty rather than as noise.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from torch import Tensor, nn

from attenzione.config import ModelConfig
from attenzione.model import masks as M
from attenzione.model.attention import AttentionRecord
from attenzione.model.cache import KVCache, LayerCache
from attenzione.model.embeddings import TokenEmbedding
from attenzione.model.layers import DecoderLayer, EncoderLayer
from attenzione.model.positional import make_positions


def _weights(records: list[AttentionRecord]) -> list[Tensor]:
    return [r.weights for r in records]


@dataclass
class EncoderOutput:
    """memory (B,S,D); memory_mask (B,1,1,S) bool, the key mask for cross-attention;
    self_mask: the mask encoder self-attention applied ((B,1,1,S), or (B,1,S,S) with weights);
    records: per layer, on request."""

    memory: Tensor
    memory_mask: Tensor
    records: list[AttentionRecord] = field(default_factory=list)
    self_mask: Tensor | None = None

    @property
    def attentions(self) -> list[Tensor]:
        """Per layer (B,H,S,S)."""
        return _weights(self.records)


@dataclass
class DecoderOutput:
    """logits (B,T,V); the cache (if any); per layer self and cross records (on request);
    the masks applied: self_mask (None: none, one new position on a cache) and cross_mask
    (None = no padding; with a cache, the cache's ``memory_mask``, which an inference cache
    keeps one row a sentence rather than one a hypothesis)."""

    logits: Tensor
    cache: KVCache | None = None
    self_records: list[AttentionRecord] = field(default_factory=list)
    cross_records: list[AttentionRecord] = field(default_factory=list)
    self_mask: Tensor | None = None
    cross_mask: Tensor | None = None

    @property
    def self_attentions(self) -> list[Tensor]:
        """Per layer (B,H,T,T)."""
        return _weights(self.self_records)

    @property
    def cross_attentions(self) -> list[Tensor]:
        """Per layer (B,H,T,S)."""
        return _weights(self.cross_records)


@dataclass
class Seq2SeqOutput:
    """What :meth:`Transformer.forward` returns. Records are empty unless requested."""

    logits: Tensor
    encoder: EncoderOutput
    decoder: DecoderOutput

    @property
    def encoder_attentions(self) -> list[Tensor]:
        """Per layer (B,H,S,S)."""
        return self.encoder.attentions

    @property
    def decoder_self_attentions(self) -> list[Tensor]:
        """Per layer (B,H,T,T)."""
        return self.decoder.self_attentions

    @property
    def cross_attentions(self) -> list[Tensor]:
        """Per layer (B,H,T,S)."""
        return self.decoder.cross_attentions


class Transformer(nn.Module):
    """Encoder–decoder Transformer built from a :class:`ModelConfig`."""

    def __init__(self, config: ModelConfig) -> None:
        super().__init__()
        self.config = cfg = config
        scale = cfg.scale_embeddings
        self.src_embed = TokenEmbedding(
            cfg.src_vocab_size, cfg.d_model, cfg.pad_id, embed_dim=cfg.src_embed_dim, scale=scale
        )
        if cfg.share_src_tgt_embeddings:
            self.tgt_embed = self.src_embed
        else:
            self.tgt_embed = TokenEmbedding(
                cfg.tgt_vocab_size, cfg.d_model, cfg.pad_id, scale=scale
            )
        self.positions = make_positions(cfg.positions, cfg.d_model, cfg.max_len)
        self.encoder_layers = nn.ModuleList(EncoderLayer(cfg) for _ in range(cfg.n_enc_layers))
        self.decoder_layers = nn.ModuleList(DecoderLayer(cfg) for _ in range(cfg.n_dec_layers))
        pre = cfg.norm == "pre"
        # Pre-norm leaves the residual stream un-normalised: one final LayerNorm per stack.
        eps = cfg.layer_norm_eps
        self.encoder_norm: nn.Module = nn.LayerNorm(cfg.d_model, eps=eps) if pre else nn.Identity()
        self.decoder_norm: nn.Module = nn.LayerNorm(cfg.d_model, eps=eps) if pre else nn.Identity()
        # the output layer: no bias, as the paper, unless the config asks for one (Marian's
        # final_logits_bias, which an imported model carries)
        self.generator = nn.Linear(cfg.d_model, cfg.tgt_vocab_size, bias=cfg.output_bias)
        if cfg.tie_embeddings:
            self.generator.weight = self.tgt_embed.embedding.weight
        else:
            nn.init.normal_(self.generator.weight, std=cfg.d_model**-0.5)
        if self.generator.bias is not None:
            nn.init.zeros_(self.generator.bias)
        self.embed_dropout = nn.Dropout(cfg.dropout)  # on embeddings + positions, in training

    # ------------------------------------------------------------------ embeddings
    def _embed(self, embed: TokenEmbedding, ids: Tensor, offset: int = 0) -> Tensor:
        """(B,L) ids → (B,L,D): scaled token vectors + positions offset..offset+L-1."""
        x = embed(ids) + self.positions(ids.shape[1], offset)  # (B,L,D) + (L,D)
        out: Tensor = self.embed_dropout(x)
        return out

    # ------------------------------------------------------------------ encoder
    def encode(self, src_ids: Tensor, *, need_weights: bool = False) -> EncoderOutput:
        """Run the encoder. src_ids: (B,S) right-padded with ``pad_id``."""
        cfg = self.config
        key_mask = M.padding_mask(src_ids, cfg.pad_id)  # (B,1,1,S)
        self_mask = M.pairwise_padding_mask(src_ids, cfg.pad_id) if need_weights else key_mask
        x = self._embed(self.src_embed, src_ids)
        records: list[AttentionRecord] = []
        for layer in self.encoder_layers:
            x, rec = layer(x, self_mask, need_weights=need_weights)
            if rec is not None:
                records.append(rec)
        return EncoderOutput(self.encoder_norm(x), key_mask, records, self_mask)

    # ------------------------------------------------------------------ decoder
    def init_cache(self, memory: Tensor, memory_mask: Tensor, capacity: int = 64) -> KVCache:
        """A cache holding every decoder layer's cross-attention K/V of ``memory`` (B,S,D).

        ``capacity``: how many positions the decoding may reach; the cache here grows as it
        goes and needs no such hint (a model prepared for inference preallocates with it).
        """
        layers = []
        for layer in self.decoder_layers:
            assert isinstance(layer, DecoderLayer)
            k, v = layer.cross_attn.project_kv(memory)  # 2 × (B,H,S,Dh), computed once
            layers.append(LayerCache(cross_k=k, cross_v=v))
        return KVCache(layers=layers, memory_mask=memory_mask)

    def decode(
        self,
        tgt_ids: Tensor,
        memory: Tensor | None = None,
        memory_mask: Tensor | None = None,
        *,
        cache: KVCache | None = None,
        need_weights: bool = False,
        logits_at: Tensor | None = None,
        output: Callable[[Tensor], Tensor] | None = None,
    ) -> DecoderOutput:
        """Run the decoder and the output projection.

        Without a cache: ``tgt_ids`` (B,T) is the whole (right-padded) target prefix and
        ``memory``/``memory_mask`` come from :meth:`encode`. With a cache (from
        :meth:`init_cache`): ``tgt_ids`` holds only the new tokens, positions continue from
        ``cache.length``, and the memory is not needed.

        ``logits_at`` (B,T) bool: logits only at these positions, (N,V) in row-major order
        (training's loss skips the padding this way, see :meth:`forward`). ``output``: an
        output layer to use instead of :attr:`generator` (a vocabulary shortlist's, which
        scores fewer pieces; the search passes it).
        """
        cfg = self.config
        offset = 0 if cache is None else cache.length
        t = tgt_ids.shape[1]
        if cache is not None:
            memory_mask = cache.memory_mask
        if memory_mask is None:
            raise ValueError("decode needs memory_mask (or a cache that carries it)")
        # causality: exact for right-padded targets (a real query never reaches a padded key
        # after it); one new position on a cache may attend to every key, and needs no mask
        self_mask = M.causal_mask(t, offset=offset, device=tgt_ids.device) if t > 1 else None
        cross_mask: Tensor | None = memory_mask if cache is None else cache.cross_mask
        if need_weights:
            # The full masks, so a padded query's row is drawn empty, not as noise (the first
            # position is the start token: real whatever its id, masks.target_is_real)
            if offset == 0:
                self_mask = M.decoder_self_mask(tgt_ids, cfg.pad_id)  # (B,1,T,T)
            else:  # the cached keys' padding is not at hand; causality is what applies
                self_mask = M.causal_mask(t, offset=offset, device=tgt_ids.device)
            if cache is None:  # (B,1,T,S)
                cross_mask = M.with_real_queries(memory_mask, tgt_ids, cfg.pad_id)
            else:  # the new tokens are real: the cache's source mask is the whole story
                cross_mask = memory_mask
        x = self._embed(self.tgt_embed, tgt_ids, offset)
        self_recs: list[AttentionRecord] = []
        cross_recs: list[AttentionRecord] = []
        for i, layer in enumerate(self.decoder_layers):
            x, s_rec, c_rec = layer(
                x,
                memory,
                self_mask,
                cross_mask,
                cache=cache,
                layer_index=i,
                need_weights=need_weights,
            )
            if s_rec is not None and c_rec is not None:
                self_recs.append(s_rec)
                cross_recs.append(c_rec)
        if cache is not None:
            cache.advance(t)
        if logits_at is not None:
            x = x[logits_at]  # (B,T,D) -> (N,D): only the positions asked for
        head = self.generator if output is None else output
        logits = head(self.decoder_norm(x))  # (B,T,D) -> (B,T,V), or (N,V)
        return DecoderOutput(logits, cache, self_recs, cross_recs, self_mask, cross_mask)

    def forward(
        self,
        src_ids: Tensor,
        tgt_ids: Tensor,
        need_weights: bool = False,
        *,
        logits_at: Tensor | None = None,
    ) -> Seq2SeqOutput:
        """Teacher-forced pass: src_ids (B,S), tgt_ids (B,T) (the start token, ``<bos>`` unless
        the config names another, + target) → logits.

        ``logits_at`` (B,T) bool: compute logits only at these positions, returned as (N,V)
        in row-major order — training passes the real target positions, so the largest matrix
        multiply (D × V) skips the padding.
        """
        enc = self.encode(src_ids, need_weights=need_weights)
        dec = self.decode(
            tgt_ids, enc.memory, enc.memory_mask, need_weights=need_weights, logits_at=logits_at
        )
        return Seq2SeqOutput(dec.logits, enc, dec)

    # ------------------------------------------------------------------ size
    def num_parameters(self, trainable_only: bool = False) -> int:
        """Distinct parameters (a tied or shared matrix counts once)."""
        params = {id(p): p for p in self.parameters() if p.requires_grad or not trainable_only}
        return sum(p.numel() for p in params.values())
