"""What every model family shares around its blocks: run options, named recording points, the
per-forward context (positions, RoPE tables and masks derived once), the attention core that
sits between a family's projections, and the causal-LM skeleton (embed -> blocks -> norm -> head).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, ClassVar, Iterable, Mapping, Optional, Sequence, Union

import torch
import torch.nn as nn

from .attention import IMPLEMENTATIONS, MaskSpec, TileTrace, attend, scored_entries, sdpa_mask_for
from .config import ModelConfig, SLIDING
from .kv_cache import KVCache
from .layers import RMSNorm, linear, rope_cos_sin, rope_inv_freq, rotate, signed_sin


@dataclass(frozen=True)
class RunOptions:
    """How to run a forward. The defaults reproduce the checkpoint exactly."""
    attn_impl: str = "sdpa"               # "sdpa" | "eager" | "tiled", or an engine's backend
    # extra restriction (window, sinks) on every layer, or a tuple with one MaskSpec-or-None
    # per layer (e.g. sinks only in Gemma's global layers)
    mask: Union[MaskSpec, tuple, None] = None
    sink_logit: Optional[float] = None    # gpt-oss style logit added to every softmax denominator
    rope_theta: Optional[float] = None    # override RoPE base of full-attention layers
    rope_local_theta: Optional[float] = None  # override RoPE base of sliding layers (Gemma 3)
    block_q: int = 64                     # tile sizes of the tiled path
    block_k: int = 64
    last_logits_only: bool = False        # generation needs only the last row of logits


POINTS = ("embed", "q_pre_rope", "k_pre_rope", "q", "k", "v", "attn_probs", "attn_out",
          "mlp_out", "resid", "tile_trace")
# an MoE layer's routing (models/moe.py): router_logits, router_probs (B,T,E); picks, weights (B,T,k)
MOE_POINTS = ("router_logits", "router_probs", "expert_picks", "expert_weights")


# A recording hook: (value at the point, layer) -> what to keep under (point, layer), or None
# to keep nothing. It reads the forward's tensors; it cannot change them.
Hook = Callable[[Any, int], Any]


class Recorder:
    """Opt-in named captures, TransformerLens style. A forward without a recorder pays nothing;
    with one, only the requested points on the requested layers are kept (detached, on CPU).

    Points: embed, q_pre_rope/k_pre_rope (B,H,T,D) before RoPE, q/k/v after RoPE, attn_probs
    (B,H,T,S) with "kv_pos" (S,) alongside, attn_out, mlp_out, resid (output of each block),
    tile_trace (a TileTrace, forces the tiled path). Asking for attn_probs makes that layer use
    the eager path (or tiled, if selected), since SDPA cannot return probabilities.

    hooks: {point: hook(value, layer)} reduces a point as it is recorded, so a forward over a
    long text keeps only what an analysis needs (the last row, a mass per head) instead of every
    (B,H,T,S) matrix; the hook's return is kept (tensors detached, on CPU), None keeps nothing.
    "kv_pos" may have a hook too. Subclassing Recorder to override `save` is not needed."""

    def __init__(self, points: Iterable[str], layers: Optional[Iterable[int]] = None,
                 hooks: Optional[Mapping[str, Hook]] = None):
        self.points = set(points)
        unknown = self.points - set(POINTS) - set(MOE_POINTS)
        if unknown:
            raise ValueError(f"unknown recording points {sorted(unknown)}; known: {POINTS + MOE_POINTS}")
        self.layers = None if layers is None else set(layers)
        self.hooks = dict(hooks or {})
        stray = set(self.hooks) - self.points - ({"kv_pos"} if "attn_probs" in self.points else set())
        if stray:
            raise ValueError(f"hooks on points not recorded: {sorted(stray)}")
        self.records: dict = {}

    def wants(self, point: str, layer: int) -> bool:
        return point in self.points and (self.layers is None or layer in self.layers)

    def save(self, point: str, layer: int, value):
        hook = self.hooks.get(point)
        if hook is not None:
            value = hook(value.detach() if torch.is_tensor(value) else value, layer)
            if value is None:
                return
        self.records[(point, layer)] = _kept(value)

    def get(self, point: str, layer: int):
        return self.records[(point, layer)]


def _kept(value):
    """A recorded value as kept: tensors (also inside a dict, list or tuple) detached, on CPU."""
    if torch.is_tensor(value):
        return value.detach().cpu()
    if isinstance(value, dict):
        return {k: _kept(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_kept(v) for v in value)
    return value


def rope_kind(config: ModelConfig, layer: int) -> str:
    """"sliding" or "full": which RoPE base a layer rotates with (Gemma 3 has one per kind)."""
    return "sliding" if config.layer_types[layer] == SLIDING else "full"


def rope_inv_freq_of(config: ModelConfig, options: RunOptions, kind: str) -> torch.Tensor:
    """RoPE frequencies of one layer kind, with the run's base overrides: the one place the
    bases are chosen (the eager forward and engine.fused both rotate with these)."""
    if kind == "full":
        # context scaling (linear, llama3) applies to full-attention layers only, as upstream does
        return rope_inv_freq(config.head_dim, options.rope_theta or config.rope_theta, config.rope_scaling)
    base = options.rope_local_theta or config.rope_local_theta or config.rope_theta
    if options.rope_theta and config.rope_local_theta is None:
        base = options.rope_theta  # one base for all layers (Llama family)
    return rope_inv_freq(config.head_dim, base)


class ForwardContext:
    """Everything derived from positions for one forward: RoPE cos/sin and the visibility mask
    per layer type, computed once and shared by all layers of that type."""

    def __init__(self, model: "CausalLM", positions: torch.Tensor, cache: Optional[KVCache],
                 options: RunOptions, recorder: Optional[Recorder], dtype: torch.dtype,
                 layer_masks: Optional[list] = None):
        self.model, self.positions, self.cache = model, positions, cache
        self.options, self.recorder = options, recorder
        self.score_entries = 0  # query-key scores computed in this forward, all layers and heads
        # from this layer on only the last row is needed (set by CausalLM.forward, see rows())
        self.last_row_from: Optional[int] = None
        # layer -> models.moe.MoEAux of each MoE layer: routing and auxiliary losses, for training
        self.moe_aux: dict = {}
        self.layer_masks = layer_masks if layer_masks is not None else model.layer_masks(options.mask)
        self._dtype = dtype
        self._rope: dict = {}     # layer kind -> (cos, signed sin), made when first needed
        self._visible: dict = {}

    def record(self, point: str, layer: int, value: torch.Tensor) -> torch.Tensor:
        """Save `value` at a named point if the recorder asks for it; returns it unchanged."""
        if self.recorder is not None and self.recorder.wants(point, layer):
            self.recorder.save(point, layer, value)
        return value

    def rope(self, layer: int):
        """(cos, signed_sin) (T, head_dim) at this forward's positions for the layer's RoPE base."""
        kind = rope_kind(self.model.config, layer)
        if kind not in self._rope:
            inv_freq = rope_inv_freq_of(self.model.config, self.options, kind)
            cos, sin = rope_cos_sin(self.positions, inv_freq, self._dtype)
            self._rope[kind] = (cos, signed_sin(sin))
        return self._rope[kind]

    def store(self, layer: int, k: torch.Tensor, v: torch.Tensor):
        """Put this forward's keys/values (B,Hkv,T,D), already rotated, in the layer's cache.
        Returns the keys, values and absolute key positions (S,) the queries attend over."""
        if self.cache is None:
            return k, v, self.positions
        return self.cache.update(layer, self.positions, k, v)

    def last_row_only(self, layer: int) -> bool:
        """True where a forward that keeps only the last logits (a prefill) needs this layer's
        queries, output projection and MLP at the last position only. Its keys and values are
        still made for every position: the cache needs them."""
        return self.last_row_from is not None and layer >= self.last_row_from

    def rows(self, layer: int, x: torch.Tensor) -> torch.Tensor:
        """The rows of a block's residual stream (B, T, d) that the rest of the forward needs."""
        return x[:, -1:] if self.last_row_only(layer) else x

    def query_positions(self, layer: int) -> torch.Tensor:
        return self.positions[-1:] if self.last_row_only(layer) else self.positions

    def visible(self, layer: int, kv_pos: torch.Tensor):
        """(visible (Tq,S) bool, sdpa_mask_for(visible)) for this layer's queries; cached per
        (mask, key layout, queries)."""
        mask = self.layer_masks[layer]
        q_pos = self.query_positions(layer)
        # Layers with the same mask hold the same positions in the same slots (their caches
        # are built alike and receive identical updates), so (mask, S) identifies the layout.
        key = (mask, kv_pos.shape[0], q_pos.shape[0])
        if key not in self._visible:
            vis = mask.visible(q_pos, kv_pos)
            self._visible[key] = (vis, sdpa_mask_for(vis, q_pos, kv_pos))
        return self._visible[key]


def textbook_attention(ctx: ForwardContext, layer: int, q: torch.Tensor, k: torch.Tensor,
                       v: torch.Tensor, sink_logit=None) -> torch.Tensor:
    """The part of self-attention every family shares: q (B,H,T,D), k/v (B,Hkv,T,D) before RoPE
    -> rotate at absolute positions -> cache -> mask -> attend (eager, SDPA or tiled, by
    ctx.options.attn_impl; models.attention.attend). Returns (B,H,T,D)."""
    rec, opts = ctx.recorder, ctx.options
    ctx.record("q_pre_rope", layer, q)
    ctx.record("k_pre_rope", layer, k)
    cos, sin_signed = ctx.rope(layer)
    q, k = rotate(q, cos, sin_signed), rotate(k, cos, sin_signed)
    k, v, kv_pos = ctx.store(layer, k, v)
    q_pos = ctx.query_positions(layer)
    if q_pos.shape[0] != q.shape[2]:
        q = q[:, :, -1:]                                                # (B, H, 1, D)
    visible, sdpa_mask = ctx.visible(layer, kv_pos)
    need_probs = rec is not None and rec.wants("attn_probs", layer)
    trace = None
    if rec is not None and rec.wants("tile_trace", layer):
        trace = TileTrace(opts.block_q, opts.block_k)
    if sink_logit is None:
        sink_logit = opts.sink_logit
    softcap = ctx.model.config.attn_logit_softcapping
    b, h, t, _ = q.shape
    ctx.score_entries += b * h * scored_entries(opts.attn_impl, sdpa_mask, t, kv_pos.shape[0],
                                                visible=visible, sink_logit=sink_logit,
                                                need_probs=need_probs, softcap=softcap, trace=trace,
                                                block_q=opts.block_q, block_k=opts.block_k)
    out, probs = attend(q, k, v, q_pos, kv_pos, ctx.layer_masks[layer],
                        ctx.model.config.attn_scale, impl=opts.attn_impl, sink_logit=sink_logit,
                        softcap=softcap, need_probs=need_probs, visible=visible,
                        sdpa_mask=sdpa_mask, block_q=opts.block_q, block_k=opts.block_k,
                        trace=trace)
    for name, value in (("q", q), ("k", k), ("v", v)):
        ctx.record(name, layer, value)
    if rec is not None:
        if need_probs:
            rec.save("attn_probs", layer, probs)
            rec.save("kv_pos", layer, kv_pos)
        if trace is not None:
            rec.save("tile_trace", layer, trace)
    return out


# --- the attention-backend seam ----------------------------------------------------------------
# A backend runs one layer's attention from its projections: (ctx, layer, q (B,H,T,D), k and v
# (B,Hkv,T,D) before RoPE, sink_logit) -> (B,H,T,D). RunOptions.attn_impl names it, as
# transformers' ALL_ATTENTION_FUNCTIONS does. models/ registers its three paths, all the textbook
# function above; a decode engine registers its own under other names (engine.batched: each row
# of a batch over its own run's cache, or every run's cache pooled) and never changes this file.
AttentionBackend = Callable[[ForwardContext, int, torch.Tensor, torch.Tensor, torch.Tensor, Any],
                            torch.Tensor]
ATTENTION_BACKENDS: dict[str, AttentionBackend] = {name: textbook_attention for name in IMPLEMENTATIONS}


def register_attention(name: str, backend: AttentionBackend) -> None:
    """Make `backend` the attention of forwards whose RunOptions.attn_impl is `name`. A name
    already taken by another function is refused: two engines cannot share one (the same
    function again, as a reloaded module registers it, is not another)."""
    held = ATTENTION_BACKENDS.get(name)
    if held is not None and _qualified(held) != _qualified(backend):
        raise ValueError(f"attention backend {name!r} is already registered")
    ATTENTION_BACKENDS[name] = backend


def _qualified(fn) -> tuple:
    return getattr(fn, "__module__", None), getattr(fn, "__qualname__", None)


def attention_core(ctx: ForwardContext, layer: int, q: torch.Tensor, k: torch.Tensor,
                   v: torch.Tensor, sink_logit=None) -> torch.Tensor:
    """A layer's attention, by the backend its run options name (the families call this)."""
    name = ctx.options.attn_impl
    backend = ATTENTION_BACKENDS.get(name)
    if backend is None:
        raise ValueError(f"unknown attention implementation {name!r}; registered: {sorted(ATTENTION_BACKENDS)}")
    return backend(ctx, layer, q, k, v, sink_logit)


class CausalLM(nn.Module):
    """embed -> blocks -> final norm -> LM head. Families subclass it, declare their `family`
    (the name ModelConfig.family carries, e.g. "llama"; code that depends on a family's block
    layout, such as engine.fused, reads it rather than probing attributes) and provide
    `blocks`, `norm`, and optionally `embed_scale`."""
    family: ClassVar[str] = ""   # each family class sets it; equal to its config's family
    config: ModelConfig
    embed_scale: Optional[float] = None

    def build(self, config, blocks: Iterable[nn.Module], norm: Optional[nn.Module] = None) -> None:
        """The parts every family has: the token embedding, its blocks, the final norm (RMSNorm
        unless the family passes its own) and an LM head unless the embeddings are tied."""
        self.config = config
        self.embed = nn.Embedding(config.vocab_size, config.d_model)
        self.blocks = nn.ModuleList(blocks)
        self.norm = norm if norm is not None else RMSNorm(config.d_model, config.norm_eps)
        if not config.tie_embeddings:
            self.lm_head = nn.Linear(config.d_model, config.vocab_size, bias=False)

    def layer_masks(self, override: Union[MaskSpec, Sequence, None] = None) -> list[MaskSpec]:
        """Each layer's own mask (causal, or causal + its sliding window), restricted by an
        optional override: one MaskSpec for every layer, or one MaskSpec-or-None per layer.
        The cache layout is built from the same list, so cache and mask always agree."""
        n = self.config.n_layers
        per_layer = [override] * n if override is None or isinstance(override, MaskSpec) else list(override)
        if len(per_layer) != n:
            raise ValueError(f"{len(per_layer)} per-layer masks given for {n} layers")
        return [MaskSpec(window=self.config.layer_window(i)).restrict(per_layer[i]) for i in range(n)]

    def element_size(self) -> int:
        """Bytes per element of the model's weights and of its KV cache (new_cache makes the
        cache in the embedding's dtype): 4 in fp32, 2 in bf16."""
        return self.embed.weight.element_size()

    def new_cache(self, max_len: int, batch: int = 1, options: Optional[RunOptions] = None) -> KVCache:
        param = self.embed.weight
        mask = options.mask if options is not None else None
        return KVCache.for_model(self.config, self.layer_masks(mask), max_len, batch,
                                 param.dtype, param.device)

    def forward(self, input_ids: torch.Tensor, positions: Optional[torch.Tensor] = None,
                cache: Optional[KVCache] = None, options: Optional[RunOptions] = None,
                recorder: Optional[Recorder] = None, return_context: bool = False,
                stop_at_layer: Optional[int] = None):
        """input_ids (B, T) -> logits (B, T, V) (or (B, 1, V) with last_logits_only).
        Positions: with a cache, cache.positions(T) = cache.pos + arange(T) (the cache makes
        them and advances after the last block); without one, `positions` or arange(T).
        stop_at_layer=n runs blocks 0 .. n-1 only and returns their output, the residual
        stream (B, T, d) (n = 0: the embeddings), instead of logits: what a recorder needs from
        the first layers, without the rest. Not with a cache (its later layers would miss the
        tokens)."""
        options = options or RunOptions()
        bsz, t = input_ids.shape
        n_layers = self.config.n_layers
        if stop_at_layer is not None:
            if cache is not None:
                raise ValueError("stop_at_layer leaves later layers' caches behind: run it without a cache")
            if not 0 <= stop_at_layer <= n_layers:
                raise ValueError(f"stop_at_layer must be in 0..{n_layers}, got {stop_at_layer}")
        if cache is not None:
            if positions is not None:
                raise ValueError("with a KV cache the positions are the cache's (cache.pos + arange(T))")
            positions = cache.positions(t, input_ids.device)
        elif positions is None:
            positions = torch.arange(t, device=input_ids.device)
        x = self.embed_tokens(input_ids)                                  # (B, T, d)
        ctx = ForwardContext(self, positions, cache, options, recorder, x.dtype)
        if options.last_logits_only and recorder is None and cache is not None and t > 1:
            # a prefill: the last block's queries, output projection and MLP matter only at
            # the last position (ForwardContext.rows). Not without a cache: generating without
            # one is claim C1's textbook baseline, which recomputes every row of every layer.
            ctx.last_row_from = self.config.n_layers - 1
        if recorder is not None and recorder.wants("embed", 0):
            recorder.save("embed", 0, x)
        for i, block in enumerate(self.blocks):
            if i == stop_at_layer:
                break
            x = block(x, ctx, i)
            if recorder is not None and recorder.wants("resid", i):
                recorder.save("resid", i, x)
        if stop_at_layer is not None:
            return (x, ctx) if return_context else x
        if cache is not None:
            cache.advance(t)
        if options.last_logits_only:
            x = x[:, -1:]
        logits = self.head(x)
        return (logits, ctx) if return_context else logits

    def embed_tokens(self, input_ids: torch.Tensor) -> torch.Tensor:
        """(B, T) ids -> (B, T, d) input of the first block."""
        x = self.embed(input_ids)
        if self.embed_scale is not None:
            # Gemma: the scale is cast to the activation dtype first, as upstream does
            x = x * torch.tensor(self.embed_scale, dtype=x.dtype)
        return x

    def head(self, x: torch.Tensor) -> torch.Tensor:
        """Final norm and LM head (with Gemma's optional final softcap): (B, T, d) -> (B, T, V)."""
        # keyed by the model: a weight provider may hold the head's product (models.layers)
        logits = linear(self.norm(x), self.lm_head_weight(), key=self)
        if self.config.final_logit_softcapping is not None:
            cap = self.config.final_logit_softcapping
            logits = cap * torch.tanh(logits / cap)
        return logits

    def lm_head_weight(self) -> torch.Tensor:
        return self.embed.weight if self.config.tie_embeddings else self.lm_head.weight
