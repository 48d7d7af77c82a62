"""The Llama family: Llama, Mistral (sliding window on every layer), Qwen2 (biases on q/k/v).

Block: x + attn(norm(x)), then x + mlp(norm(x)) -- pre-norm RMSNorm, RoPE, SwiGLU, GQA,
no biases (except Qwen2's q/k/v)."""
from __future__ import annotations

import torch
import torch.nn as nn

from .config import ModelConfig
from .forward import CausalLM, ForwardContext, attention_core
from .key_maps import attention_key_map, gated_mlp_key_map, skeleton_key_map
from .layers import GatedMLP, Linear, RMSNorm


class LlamaAttention(nn.Module):
    def __init__(self, config: ModelConfig):
        super().__init__()
        self.n_heads, self.n_kv_heads, self.head_dim = config.n_heads, config.n_kv_heads, config.head_dim
        q_dim, kv_dim = self.n_heads * self.head_dim, self.n_kv_heads * self.head_dim
        # q, k and v in one matrix: one matmul per token (the loader concatenates the three)
        self.wqkv = Linear(config.d_model, q_dim + 2 * kv_dim, bias=config.qkv_bias)
        self.wo = Linear(q_dim, config.d_model, bias=config.o_bias)
        self.heads = (self.n_heads, self.n_kv_heads, self.n_kv_heads)

    def forward(self, x: torch.Tensor, ctx: ForwardContext, layer: int) -> torch.Tensor:
        b, t, _ = x.shape
        qkv = self.wqkv(x).view(b, t, -1, self.head_dim).transpose(1, 2)  # (B, H+2Hkv, T, D)
        q, k, v = qkv.split(self.heads, dim=1)                            # (B, H|Hkv|Hkv, T, D)
        out = attention_core(ctx, layer, q, k, v)                         # (B, H, T, D)
        # (B, Tq, d): Tq = T, or 1 in the last layer of a prefill (ForwardContext.rows)
        return self.wo(out.transpose(1, 2).reshape(b, out.shape[2], -1))


class LlamaBlock(nn.Module):
    def __init__(self, config: ModelConfig):
        super().__init__()
        self.attn_norm = RMSNorm(config.d_model, config.norm_eps)
        self.attn = LlamaAttention(config)
        self.mlp_norm = RMSNorm(config.d_model, config.norm_eps)
        self.mlp = GatedMLP(config.d_model, config.d_ff, config.hidden_act)

    def forward(self, x: torch.Tensor, ctx: ForwardContext, layer: int) -> torch.Tensor:
        x = ctx.rows(layer, x) + ctx.record("attn_out", layer, self.attn(self.attn_norm(x), ctx, layer))
        return x + ctx.record("mlp_out", layer, self.mlp(self.mlp_norm(x)))


class LlamaForCausalLM(CausalLM):
    family = "llama"

    def __init__(self, config: ModelConfig):
        super().__init__()
        self.build(config, (LlamaBlock(config) for _ in range(config.n_layers)))


def key_map(config: ModelConfig) -> dict[str, list[str]]:
    """Our parameter name -> the Hugging Face tensor names it is made of (concatenated on dim 0
    when several). Explicit, so an unexpected checkpoint fails loudly instead of half-loading."""
    m = skeleton_key_map(config)
    for i in range(config.n_layers):
        hf, ours = f"model.layers.{i}", f"blocks.{i}"
        m.update(attention_key_map(config, f"{ours}.attn", f"{hf}.self_attn"))
        m.update(gated_mlp_key_map(f"{ours}.mlp", f"{hf}.mlp"))
    return m
