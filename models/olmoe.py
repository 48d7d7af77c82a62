"""OLMoE: a Llama-style block with a mixture of experts (softmax top-k, 8 of 64, kept weights
renormalised only with norm_topk_prob) and QK-norm over the *whole* projection: RMSNorm over
all H*D query features (and all Hkv*D key features) before they are split into heads, where
Gemma 3 normalises each head's D features. Optionally q, k and v are clamped to
[-clip_qkv, clip_qkv].

Block: models.mixtral.MoEBlock with OlmoeAttention."""
from __future__ import annotations

import torch
import torch.nn as nn

from .config import ModelConfig
from .forward import CausalLM, ForwardContext, attention_core
from .layers import Linear, RMSNorm
from .key_maps import attention_key_map, experts_key_map, skeleton_key_map
from .mixtral import MoEBlock


class OlmoeAttention(nn.Module):
    def __init__(self, config: ModelConfig):
        super().__init__()
        self.n_heads, self.n_kv_heads, self.head_dim = config.n_heads, config.n_kv_heads, config.head_dim
        q_dim, kv_dim = self.n_heads * self.head_dim, self.n_kv_heads * self.head_dim
        self.wqkv = Linear(config.d_model, q_dim + 2 * kv_dim, bias=config.qkv_bias)
        self.wo = Linear(q_dim, config.d_model, bias=config.o_bias)
        self.q_norm = RMSNorm(q_dim, config.norm_eps)     # over all heads' features at once
        self.k_norm = RMSNorm(kv_dim, config.norm_eps)
        self.split = (q_dim, kv_dim, kv_dim)
        self.clip = config.clip_qkv

    def forward(self, x: torch.Tensor, ctx: ForwardContext, layer: int) -> torch.Tensor:
        b, t, _ = x.shape
        q, k, v = self.wqkv(x).split(self.split, dim=-1)          # (B, T, H*D | Hkv*D | Hkv*D)
        q, k = self.q_norm(q), self.k_norm(k)
        if self.clip is not None:
            q, k, v = (z.clamp(-self.clip, self.clip) for z in (q, k, v))
        q = q.view(b, t, self.n_heads, self.head_dim).transpose(1, 2)      # (B, H, T, D)
        k = k.view(b, t, self.n_kv_heads, self.head_dim).transpose(1, 2)   # (B, Hkv, T, D)
        v = v.view(b, t, self.n_kv_heads, self.head_dim).transpose(1, 2)
        out = attention_core(ctx, layer, q, k, v)                          # (B, H, Tq, D)
        return self.wo(out.transpose(1, 2).reshape(b, out.shape[2], -1))


class OlmoeForCausalLM(CausalLM):
    family = "olmoe"

    def __init__(self, config: ModelConfig):
        super().__init__()
        self.build(config, (MoEBlock(config, i, OlmoeAttention(config)) for i in range(config.n_layers)))


def key_map(config: ModelConfig) -> dict:
    """Our parameter name -> OLMoE's tensor names (self_attn.q_norm/k_norm, mlp.gate,
    mlp.experts.{e}.*_proj)."""
    m = skeleton_key_map(config)
    for i in range(config.n_layers):
        hf, ours = f"model.layers.{i}", f"blocks.{i}"
        m.update(attention_key_map(config, f"{ours}.attn", f"{hf}.self_attn"))
        m[f"{ours}.attn.q_norm.weight"] = [f"{hf}.self_attn.q_norm.weight"]
        m[f"{ours}.attn.k_norm.weight"] = [f"{hf}.self_attn.k_norm.weight"]
        m[f"{ours}.mlp.router.weight"] = [f"{hf}.mlp.gate.weight"]
        m.update(experts_key_map(f"{ours}.mlp.experts", f"{hf}.mlp.experts", config.n_experts,
                                 "gate_proj", "up_proj", "down_proj"))
    return m
