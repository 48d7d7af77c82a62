"""Gemma 3 (text). Differences from Llama, each where it happens:
- embeddings scaled by sqrt(d_model) (cast to the activation dtype first);
- RMSNorm with a (1 + w) scale computed in fp32;
- four norms per block: before and after attention, before and after the MLP;
- QK-norm: RMSNorm over head_dim on q and k before RoPE;
- scores scaled by query_pre_attn_scalar^-0.5, not head_dim^-0.5;
- layer types: 5 sliding-window (local, RoPE base 10k) : 1 global (RoPE base 1M);
- GeGLU with tanh-approximated GELU."""
from __future__ import annotations

import torch
import torch.nn as nn

from .config import ModelConfig
from .forward import CausalLM, ForwardContext, attention_core
from .key_maps import attention_key_map, gated_mlp_key_map, head_key_map
from .layers import GatedMLP, Linear, RMSNorm


class Gemma3Attention(nn.Module):
    def __init__(self, config: ModelConfig):
        super().__init__()
        self.n_heads, self.n_kv_heads, self.head_dim = config.n_heads, config.n_kv_heads, config.head_dim
        q_dim, kv_dim = self.n_heads * self.head_dim, self.n_kv_heads * self.head_dim
        self.wqkv = Linear(config.d_model, q_dim + 2 * kv_dim, bias=False)
        self.wo = Linear(q_dim, config.d_model, bias=False)
        self.q_norm = RMSNorm(self.head_dim, config.norm_eps, unit_offset=True)
        self.k_norm = RMSNorm(self.head_dim, config.norm_eps, unit_offset=True)
        self.heads = (self.n_heads, self.n_kv_heads, self.n_kv_heads)

    def forward(self, x: torch.Tensor, ctx: ForwardContext, layer: int) -> torch.Tensor:
        b, t, _ = x.shape
        qkv = self.wqkv(x).view(b, t, -1, self.head_dim).transpose(1, 2)  # (B, H+2Hkv, T, D)
        q, k, v = qkv.split(self.heads, dim=1)                            # (B, H|Hkv|Hkv, T, D)
        q, k = self.q_norm(q), self.k_norm(k)                             # QK-norm over D
        out = attention_core(ctx, layer, q, k, v)                         # (B, H, T, D)
        # (B, Tq, d): Tq = T, or 1 in the last layer of a prefill (ForwardContext.rows)
        return self.wo(out.transpose(1, 2).reshape(b, out.shape[2], -1))


class Gemma3Block(nn.Module):
    def __init__(self, config: ModelConfig):
        super().__init__()
        norm = lambda: RMSNorm(config.d_model, config.norm_eps, unit_offset=True)  # noqa: E731
        self.attn_norm, self.attn_post_norm = norm(), norm()
        self.mlp_norm, self.mlp_post_norm = norm(), norm()
        self.attn = Gemma3Attention(config)
        self.mlp = GatedMLP(config.d_model, config.d_ff, config.hidden_act)

    def forward(self, x: torch.Tensor, ctx: ForwardContext, layer: int) -> torch.Tensor:
        x = ctx.rows(layer, x) + ctx.record("attn_out", layer,
                                            self.attn_post_norm(self.attn(self.attn_norm(x), ctx, layer)))
        return x + ctx.record("mlp_out", layer, self.mlp_post_norm(self.mlp(self.mlp_norm(x))))


class Gemma3ForCausalLM(CausalLM):
    family = "gemma3"

    def __init__(self, config: ModelConfig):
        super().__init__()
        self.embed_scale = config.d_model ** 0.5
        self.build(config, (Gemma3Block(config) for _ in range(config.n_layers)),
                   norm=RMSNorm(config.d_model, config.norm_eps, unit_offset=True))


def key_map(config: ModelConfig) -> dict[str, list[str]]:
    """Our parameter name -> Hugging Face tensor names (concatenated on dim 0 when several)."""
    m = head_key_map(config)
    for i in range(config.n_layers):
        hf, ours = f"model.layers.{i}", f"blocks.{i}"
        m[f"{ours}.attn_norm.weight"] = [f"{hf}.input_layernorm.weight"]
        m[f"{ours}.attn_post_norm.weight"] = [f"{hf}.post_attention_layernorm.weight"]
        m[f"{ours}.mlp_norm.weight"] = [f"{hf}.pre_feedforward_layernorm.weight"]
        m[f"{ours}.mlp_post_norm.weight"] = [f"{hf}.post_feedforward_layernorm.weight"]
        m.update(attention_key_map(config, f"{ours}.attn", f"{hf}.self_attn"))
        m[f"{ours}.attn.q_norm.weight"] = [f"{hf}.self_attn.q_norm.weight"]
        m[f"{ours}.attn.k_norm.weight"] = [f"{hf}.self_attn.k_norm.weight"]
        m.update(gated_mlp_key_map(f"{ours}.mlp", f"{hf}.mlp"))
    return m
