"""Mixtral: Mistral's block (pre-norm RMSNorm, RoPE, GQA, optional sliding window) with a
mixture of experts in place of the MLP: a softmax router sends each token to its top 2 of 8
SwiGLU experts, with the two weights renormalised to sum to 1.

Block: x + attn(norm(x)), then x + moe(norm(x)). `MoEBlock` is that skeleton for every MoE
family here (Qwen2-MoE, OLMoE and gpt-oss pass their own attention module)."""
from __future__ import annotations

import torch
import torch.nn as nn

from .config import ModelConfig
from .forward import CausalLM, ForwardContext
from .key_maps import attention_key_map, experts_key_map, skeleton_key_map
from .layers import GatedMLP, RMSNorm
from .llama import LlamaAttention
from .moe import MoEFeedForward, moe_config, recorder_for


class MoEBlock(nn.Module):
    """x + attn(attn_norm(x)), then x + mlp(mlp_norm(x)) with an MoE feed-forward (or a dense
    MLP on the config's dense_layers). The MoE layer's routing goes to the recorder's
    router_* / expert_* points and its MoEAux to ctx.moe_aux[layer]."""

    def __init__(self, config: ModelConfig, layer: int, attn: nn.Module):
        super().__init__()
        self.attn_norm = RMSNorm(config.d_model, config.norm_eps)
        self.attn = attn
        self.mlp_norm = RMSNorm(config.d_model, config.norm_eps)
        self.is_moe = config.is_moe_layer(layer)
        self.mlp = MoEFeedForward(moe_config(config)) if self.is_moe else \
            GatedMLP(config.d_model, config.d_ff, config.hidden_act)

    def forward(self, x: torch.Tensor, ctx: ForwardContext, layer: int) -> torch.Tensor:
        x = ctx.rows(layer, x) + ctx.record("attn_out", layer, self.attn(self.attn_norm(x), ctx, layer))
        h = self.mlp_norm(x)
        if self.is_moe:
            y, ctx.moe_aux[layer] = self.mlp(h, recorder_for(ctx, layer))
        else:
            y = self.mlp(h)
        return x + ctx.record("mlp_out", layer, y)


class MixtralForCausalLM(CausalLM):
    family = "mixtral"

    def __init__(self, config: ModelConfig):
        super().__init__()
        self.build(config, (MoEBlock(config, i, LlamaAttention(config)) for i in range(config.n_layers)))


def key_map(config: ModelConfig) -> dict:
    """Our parameter name -> Mixtral's tensor names (block_sparse_moe.gate, experts.{e}.w1 gate,
    w3 up, w2 down)."""
    m = skeleton_key_map(config)
    for i in range(config.n_layers):
        hf, ours = f"model.layers.{i}", f"blocks.{i}"
        m.update(attention_key_map(config, f"{ours}.attn", f"{hf}.self_attn"))
        m[f"{ours}.mlp.router.weight"] = [f"{hf}.block_sparse_moe.gate.weight"]
        m.update(experts_key_map(f"{ours}.mlp.experts", f"{hf}.block_sparse_moe.experts",
                                 config.n_experts, "w1", "w3", "w2"))
    return m
