"""Multi-head latent attention (MLA, DeepSeek-V2/V3) with a latent KV cache, and a small dense
causal LM around it (claim C6).

Per token and layer, MLA caches one latent c_kv (kv_lora_rank numbers, shared by every head)
and one RoPE key k_rope (qk_rope_head_dim numbers, also shared), instead of a K and a V per
head. Attention up-projects the cached latent into per-head keys and values:

    x ──kv_a_proj_with_mqa──► [c_kv | k_rope]          (B, T, r + d_rope)   ← what the cache holds
    c_kv ──kv_a_layernorm──kv_b_proj──► [k_nope | v]   (B, H, S, d_nope + d_v) per head
    k = [k_nope | RoPE(k_rope)]                        one RoPE key, broadcast to every head
    q = [q_nope | RoPE(q_rope)]                        from x (directly, or through a q latent)

Position lives only on the small decoupled part (q_rope, k_rope): a rotation that depends on
the position cannot be folded into the fixed up-projection kv_b_proj (claim C7, shown in
explorer/architecture/mla.py), so the positional part of the key is a separate, tiny key.

DeepSeek lays the RoPE dimensions out in interleaved pairs (x0, x1), (x2, x3), ...
(config.rope_interleave, true for DeepSeek-V3). models.layers rotates in the rotate-half layout,
pairing dimension i with i + d/2; de-interleaving (x0, x2, ..., x1, x3, ...) first turns one
layout into the other exactly, so the shared apply_rope does the rotation.

The module is checked against transformers' DeepseekV3ForCausalLM on tiny random configs with
dense layers only (tests/unit/test_mla.py): prefill and cached decode agree to 1e-5, and the latent
cache, up-projected, reproduces the per-head K and V of the uncached forward.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

import torch
import torch.nn as nn
import torch.nn.functional as F

from .attention import MaskSpec, attend
from .config import UnsupportedModelError, kv_elements
from .forward import Recorder
from .key_maps import gated_mlp_key_map, skeleton_key_map
from .layers import GatedMLP, RMSNorm, apply_rope, rope_cos_sin, rope_inv_freq


@dataclass
class MLAConfig:
    vocab_size: int
    d_model: int                     # residual stream width (hidden_size)
    n_layers: int
    n_heads: int                     # attention heads (every head has its own q, k_nope, v)
    d_ff: int                        # hidden width of the dense gated MLP
    kv_lora_rank: int                # r: width of the cached latent c_kv
    qk_nope_head_dim: int            # per-head key/query part without position
    qk_rope_head_dim: int            # decoupled RoPE part, one key shared by every head
    v_head_dim: int                  # per-head value width
    q_lora_rank: Optional[int] = None  # None: q straight from x; else x -> q latent -> q
    rope_theta: float = 10000.0
    rope_interleave: bool = True     # DeepSeek's pair layout (x0, x1), (x2, x3), ...
    norm_eps: float = 1e-6
    tie_embeddings: bool = False
    hidden_act: str = "silu"
    family: str = "mla"

    def __post_init__(self):
        if self.qk_rope_head_dim % 2:
            raise UnsupportedModelError(f"RoPE needs an even qk_rope_head_dim, got {self.qk_rope_head_dim}")

    @property
    def qk_head_dim(self) -> int:
        """Width of each head's query and key: the position-free part plus the RoPE part."""
        return self.qk_nope_head_dim + self.qk_rope_head_dim

    @property
    def attn_scale(self) -> float:
        return self.qk_head_dim ** -0.5

    @property
    def latent_width(self) -> int:
        """Numbers the cache holds per token and layer: the latent and the RoPE key, r + d_rope."""
        return self.kv_lora_rank + self.qk_rope_head_dim

    @property
    def gqa_heads(self) -> float:
        """The KV heads of a per-head K/V cache of the same size (models.config.kv_elements),
        in heads of v_head_dim: (r + d_rope) / (2 x v_head_dim); 2.25 for DeepSeek-V3."""
        return self.latent_width / kv_elements(1, self.v_head_dim)

    def latent_bytes_per_token(self, bytes_per_elem: int) -> int:
        """What the latent cache holds per token: (r + d_rope) x layers x bytes (C6)."""
        return self.latent_width * self.n_layers * bytes_per_elem

    def expanded_kv_bytes_per_token(self, bytes_per_elem: int) -> int:
        """What a cache of the up-projected per-head K and V would hold per token:
        heads x (qk_head_dim + v_head_dim) x layers x bytes."""
        return self.n_heads * (self.qk_head_dim + self.v_head_dim) * self.n_layers * bytes_per_elem


def mla_config_from_hf(hf: dict[str, Any]) -> MLAConfig:
    """The explicit mapping from a DeepSeek-V3 config.json dict, for dense layers only (every
    layer below first_k_dense_replace); an MoE layer or a scaled RoPE is refused."""
    n_layers = hf["num_hidden_layers"]
    if hf.get("first_k_dense_replace", 0) < n_layers:
        raise UnsupportedModelError("models.mla runs dense layers only: first_k_dense_replace must be "
                                    f">= num_hidden_layers ({n_layers})")
    if hf.get("attention_bias"):
        raise UnsupportedModelError("attention_bias=True is not implemented")
    rope = hf.get("rope_parameters") or {}
    if rope.get("rope_type", "default") != "default":
        raise UnsupportedModelError(f"RoPE scaling {rope.get('rope_type')!r} is not implemented")
    return MLAConfig(
        vocab_size=hf["vocab_size"], d_model=hf["hidden_size"], n_layers=n_layers,
        n_heads=hf["num_attention_heads"], d_ff=hf["intermediate_size"],
        kv_lora_rank=hf["kv_lora_rank"], qk_nope_head_dim=hf["qk_nope_head_dim"],
        qk_rope_head_dim=hf["qk_rope_head_dim"], v_head_dim=hf["v_head_dim"],
        q_lora_rank=hf.get("q_lora_rank"), rope_theta=float(rope.get("rope_theta", hf.get("rope_theta", 10000.0))),
        rope_interleave=bool(hf.get("rope_interleave", True)), norm_eps=hf.get("rms_norm_eps", 1e-6),
        tie_embeddings=bool(hf.get("tie_word_embeddings", False)), hidden_act=hf.get("hidden_act", "silu"))


# ---------------------------------------------------------------------------------------------
# The latent cache


class LatentKVCache:
    """Preallocated per layer: the latent c_kv (B, max_len, r) and the rotated RoPE key
    (B, max_len, d_rope) of every token seen. No per-head K or V is stored anywhere: attention
    rebuilds them from these with kv_b_proj (MLAttention.expand). Written only through
    `update`; `advance` moves the position after the last layer has written."""

    def __init__(self, config: MLAConfig, max_len: int, batch: int = 1,
                 dtype: torch.dtype = torch.float32, device=None):
        if max_len < 1:
            raise ValueError(f"max_len must be >= 1, got {max_len}")
        self.max_len = max_len
        self.latent = [torch.zeros(batch, max_len, config.kv_lora_rank, dtype=dtype, device=device)
                       for _ in range(config.n_layers)]
        self.rope_key = [torch.zeros(batch, max_len, config.qk_rope_head_dim, dtype=dtype, device=device)
                         for _ in range(config.n_layers)]
        self._pos = 0

    @property
    def pos(self) -> int:
        """Tokens stored so far (the next token's position)."""
        return self._pos

    def positions(self, t: int, device=None) -> torch.Tensor:
        if self._pos + t > self.max_len:
            raise ValueError(f"the cache holds {self.max_len} tokens; {self._pos} + {t} do not fit")
        return torch.arange(self._pos, self._pos + t, device=device)

    def update(self, layer: int, latent: torch.Tensor, rope_key: torch.Tensor):
        """Write T new tokens' latent (B, T, r) and rotated RoPE key (B, T, d_rope) of `layer`
        at positions pos .. pos+T-1; return every stored token's (B, pos+T, r), (B, pos+T, d_rope)."""
        end = self._pos + latent.shape[1]
        if end > self.max_len:
            raise ValueError(f"the cache holds {self.max_len} tokens; {end} do not fit")
        self.latent[layer][:, self._pos:end] = latent
        self.rope_key[layer][:, self._pos:end] = rope_key
        return self.latent[layer][:, :end], self.rope_key[layer][:, :end]

    def advance(self, t: int) -> None:
        self._pos += t

    def used_bytes(self) -> int:
        """Bytes of the stored tokens, all layers: pos x (r + d_rope) x batch x element size per
        layer, from the cache tensors' shapes and element size and the fill count pos."""
        return sum(self._pos * (lat.shape[-1] + key.shape[-1]) * lat.shape[0] * lat.element_size()
                   for lat, key in zip(self.latent, self.rope_key))


# ---------------------------------------------------------------------------------------------
# The attention and a dense causal LM around it


def deinterleave(x: torch.Tensor) -> torch.Tensor:
    """(..., d) pairs (x0, x1), (x2, x3), ... -> (x0, x2, ..., x1, x3, ...): DeepSeek's interleaved
    RoPE layout turned into the rotate-half layout apply_rope pairs (i with i + d/2)."""
    return x.unflatten(-1, (-1, 2)).transpose(-1, -2).flatten(-2)  # (..., d/2, 2) -> (..., 2, d/2) -> (..., d)


class MLAttention(nn.Module):
    def __init__(self, config: MLAConfig):
        super().__init__()
        self.config = config
        h, r, d_rope = config.n_heads, config.kv_lora_rank, config.qk_rope_head_dim
        self.n_heads = h
        if config.q_lora_rank is None:
            self.wq = nn.Linear(config.d_model, h * config.qk_head_dim, bias=False)
        else:
            self.wq_a = nn.Linear(config.d_model, config.q_lora_rank, bias=False)
            self.q_a_norm = RMSNorm(config.q_lora_rank, config.norm_eps)
            self.wq_b = nn.Linear(config.q_lora_rank, h * config.qk_head_dim, bias=False)
        # down-projection: the latent and the shared RoPE key in one matrix
        self.wkv_a = nn.Linear(config.d_model, r + d_rope, bias=False)
        self.kv_a_norm = RMSNorm(r, config.norm_eps)
        # up-projection: latent -> per-head k_nope and v
        self.wkv_b = nn.Linear(r, h * (config.qk_nope_head_dim + config.v_head_dim), bias=False)
        self.wo = nn.Linear(h * config.v_head_dim, config.d_model, bias=False)

    def rope(self, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
        if self.config.rope_interleave:
            x = deinterleave(x)
        return apply_rope(x, cos, sin)

    def queries(self, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
        """x (B, T, d) -> q (B, H, T, qk_head_dim), its RoPE part rotated."""
        b, t, _ = x.shape
        c = self.config
        q = self.wq(x) if c.q_lora_rank is None else self.wq_b(self.q_a_norm(self.wq_a(x)))
        q = q.view(b, t, self.n_heads, c.qk_head_dim).transpose(1, 2)    # (B, H, T, dqk)
        q_nope, q_rope = q.split((c.qk_nope_head_dim, c.qk_rope_head_dim), dim=-1)
        return torch.cat((q_nope, self.rope(q_rope, cos, sin)), dim=-1)

    def latents(self, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor):
        """x (B, T, d) -> what the cache stores: the normed latent c_kv (B, T, r) and the
        rotated RoPE key (B, T, d_rope)."""
        c = self.config
        latent, rope_key = self.wkv_a(x).split((c.kv_lora_rank, c.qk_rope_head_dim), dim=-1)
        return self.kv_a_norm(latent), self.rope(rope_key, cos, sin)

    def expand(self, latent: torch.Tensor, rope_key: torch.Tensor):
        """The up-projection: latent (B, S, r) and RoPE key (B, S, d_rope) -> per-head
        k (B, H, S, qk_head_dim) and v (B, H, S, v_head_dim)."""
        b, s, _ = latent.shape
        c = self.config
        kv = self.wkv_b(latent).view(b, s, self.n_heads, -1).transpose(1, 2)   # (B, H, S, d_nope + d_v)
        k_nope, v = kv.split((c.qk_nope_head_dim, c.v_head_dim), dim=-1)
        shared = rope_key[:, None].expand(b, self.n_heads, s, c.qk_rope_head_dim)  # one key, every head
        return torch.cat((k_nope, shared), dim=-1), v

    def absorbed_scores(self, q: torch.Tensor, latent: torch.Tensor, rope_key: torch.Tensor) -> torch.Tensor:
        """Attention scores straight from the cache, no per-head K built: the key up-projection
        W_UK is position-free, so it moves onto the query, q_nope^T (W_UK c) = (W_UK^T q_nope)^T c;
        the RoPE part, rotated by position, stays a separate dot product with the shared key.
        q (B, H, T, dqk), latent (B, S, r), rope_key (B, S, d_rope) -> scaled scores (B, H, T, S)."""
        c = self.config
        w_uk = self.wkv_b.weight.view(self.n_heads, -1, c.kv_lora_rank)[:, :c.qk_nope_head_dim]  # (H, d_nope, r)
        q_nope, q_rope = q.split((c.qk_nope_head_dim, c.qk_rope_head_dim), dim=-1)
        q_latent = torch.einsum("bhtd,hdr->bhtr", q_nope, w_uk)                              # (B, H, T, r)
        scores = q_latent @ latent[:, None].transpose(-1, -2) + q_rope @ rope_key[:, None].transpose(-1, -2)
        return scores * c.attn_scale

    def forward(self, x: torch.Tensor, positions: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor,
                cache: Optional[LatentKVCache], layer: int, impl: str = "sdpa",
                recorder: Optional[Recorder] = None) -> torch.Tensor:
        b, t, _ = x.shape
        q = self.queries(x, cos, sin)                                    # (B, H, T, dqk)
        latent, rope_key = self.latents(x, cos, sin)                     # (B, T, r), (B, T, d_rope)
        kv_pos = positions
        if cache is not None:
            latent, rope_key = cache.update(layer, latent, rope_key)     # (B, S, r), (B, S, d_rope)
            kv_pos = torch.arange(latent.shape[1], device=x.device)
        k, v = self.expand(latent, rope_key)                             # (B, H, S, dqk), (B, H, S, dv)
        if recorder is not None:
            # the latent and the RoPE key are read from the cache itself (LatentKVCache.latent, .rope_key)
            for name, value in (("q", q), ("k", k), ("v", v)):
                if recorder.wants(name, layer):
                    recorder.save(name, layer, value)
        out, _ = attend(q, k, v, positions, kv_pos, MaskSpec(), self.config.attn_scale, impl=impl)
        return self.wo(out.transpose(1, 2).reshape(b, t, -1))            # (B, T, H*dv) -> (B, T, d)


class MLABlock(nn.Module):
    """Pre-norm: x + attn(norm(x)), then x + mlp(norm(x)) (DeepSeek-V3's dense layers)."""

    def __init__(self, config: MLAConfig):
        super().__init__()
        self.attn_norm = RMSNorm(config.d_model, config.norm_eps)
        self.attn = MLAttention(config)
        self.mlp_norm = RMSNorm(config.d_model, config.norm_eps)
        self.mlp = GatedMLP(config.d_model, config.d_ff, config.hidden_act)

    def forward(self, x, positions, cos, sin, cache, layer, impl="sdpa", recorder=None):
        x = x + self.attn(self.attn_norm(x), positions, cos, sin, cache, layer, impl, recorder)
        return x + self.mlp(self.mlp_norm(x))


class MLAForCausalLM(nn.Module):
    """embed -> MLA blocks -> final norm -> LM head."""

    def __init__(self, config: MLAConfig):
        super().__init__()
        self.config = config
        self.embed = nn.Embedding(config.vocab_size, config.d_model)
        self.blocks = nn.ModuleList(MLABlock(config) for _ in range(config.n_layers))
        self.norm = RMSNorm(config.d_model, config.norm_eps)
        if not config.tie_embeddings:
            self.lm_head = nn.Linear(config.d_model, config.vocab_size, bias=False)
        self.register_buffer("inv_freq", rope_inv_freq(config.qk_rope_head_dim, config.rope_theta),
                             persistent=False)

    def new_cache(self, max_len: int, batch: int = 1) -> LatentKVCache:
        return LatentKVCache(self.config, max_len, batch, self.embed.weight.dtype, self.embed.weight.device)

    def forward(self, input_ids: torch.Tensor, cache: Optional[LatentKVCache] = None,
                impl: str = "sdpa", recorder: Optional[Recorder] = None) -> torch.Tensor:
        """input_ids (B, T) -> logits (B, T, V); with a cache, positions are cache.pos + arange(T)."""
        t = input_ids.shape[1]
        positions = (cache.positions(t, input_ids.device) if cache is not None
                     else torch.arange(t, device=input_ids.device))
        x = self.embed(input_ids)                                        # (B, T, d)
        cos, sin = rope_cos_sin(positions, self.inv_freq, x.dtype)       # (T, d_rope) each
        for i, block in enumerate(self.blocks):
            x = block(x, positions, cos, sin, cache, i, impl, recorder)
        if cache is not None:
            cache.advance(t)
        weight = self.embed.weight if self.config.tie_embeddings else self.lm_head.weight
        return F.linear(self.norm(x), weight)


def key_map(config: MLAConfig) -> dict[str, list[str]]:
    """Our parameter name -> the DeepSeek-V3 tensor names it is made of (concatenated on dim 0)."""
    m = skeleton_key_map(config)
    for i in range(config.n_layers):
        hf, ours = f"model.layers.{i}", f"blocks.{i}"
        if config.q_lora_rank is None:
            m[f"{ours}.attn.wq.weight"] = [f"{hf}.self_attn.q_proj.weight"]
        else:
            m[f"{ours}.attn.wq_a.weight"] = [f"{hf}.self_attn.q_a_proj.weight"]
            m[f"{ours}.attn.q_a_norm.weight"] = [f"{hf}.self_attn.q_a_layernorm.weight"]
            m[f"{ours}.attn.wq_b.weight"] = [f"{hf}.self_attn.q_b_proj.weight"]
        m[f"{ours}.attn.wkv_a.weight"] = [f"{hf}.self_attn.kv_a_proj_with_mqa.weight"]
        m[f"{ours}.attn.kv_a_norm.weight"] = [f"{hf}.self_attn.kv_a_layernorm.weight"]
        m[f"{ours}.attn.wkv_b.weight"] = [f"{hf}.self_attn.kv_b_proj.weight"]
        m[f"{ours}.attn.wo.weight"] = [f"{hf}.self_attn.o_proj.weight"]
        m.update(gated_mlp_key_map(f"{ours}.mlp", f"{hf}.mlp"))
    return m


def mla_from_hf_state(config: MLAConfig, tensors: dict[str, torch.Tensor]) -> MLAForCausalLM:
    """Our model holding a DeepSeek-V3 state dict, through the explicit key map (an unmapped,
    missing or mis-shaped tensor raises, as models.loading does for every family)."""
    from .loading import build_state_dict

    model = MLAForCausalLM(config)
    state = build_state_dict(model, tensors, key_map(config))
    model.load_state_dict(state, strict=False)  # strict: the non-persistent inv_freq is not in it
    missing = set(dict(model.named_parameters())) - set(state)
    if missing:
        raise ValueError(f"parameters left unloaded: {sorted(missing)[:5]}")
    return model.eval().requires_grad_(False)
