"""gpt-oss: attention with a learned sink logit per head, alternating sliding-window and full
layers, biases on q/k/v/o, and a mixture of experts:
- attention: softmax over [scores, sink_h]: the sink joins each head's denominator and attends
  to nothing, so a head may put weight on no token (rows sum to 1 - sink mass);
- router: a linear layer with a bias; the top-k *logits* are picked and softmaxed among
  themselves (models.moe "topk_softmax");
- experts: biases on both projections and a clamped SwiGLU: gate <= limit, |up| <= limit,
  out = (up + 1) * gate * sigmoid(alpha * gate).
Checkpoints store the experts fused and transposed, gate and up interleaved along the last
axis: gate_up_proj (E, d, 2F) with gate in the even columns, down_proj (E, F, d); the key map
converts them to our (E, 2F, d) = [gate; up] and (E, d, F) layout.

Block: models.mixtral.MoEBlock with GptOssAttention."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import torch
import torch.nn as nn

from .config import ModelConfig
from .forward import CausalLM, ForwardContext, attention_core
from .llama import LlamaAttention
from .key_maps import attention_key_map, skeleton_key_map
from .mixtral import MoEBlock


class GptOssAttention(LlamaAttention):
    """Llama attention (fused q/k/v with biases, GQA, RoPE) plus one learned sink logit per
    query head, passed to the shared attention core in place of RunOptions.sink_logit."""

    def __init__(self, config: ModelConfig):
        super().__init__(config)
        self.sinks = nn.Parameter(torch.zeros(config.n_heads))        # (H,) sink logits

    def forward(self, x: torch.Tensor, ctx: ForwardContext, layer: int) -> torch.Tensor:
        b, t, _ = x.shape
        qkv = self.wqkv(x).view(b, t, -1, self.head_dim).transpose(1, 2)  # (B, H+2Hkv, T, D)
        q, k, v = qkv.split(self.heads, dim=1)                            # (B, H|Hkv|Hkv, T, D)
        out = attention_core(ctx, layer, q, k, v, sink_logit=self.sinks)  # (B, H, Tq, D)
        return self.wo(out.transpose(1, 2).reshape(b, out.shape[2], -1))


class GptOssForCausalLM(CausalLM):
    family = "gpt_oss"

    def __init__(self, config: ModelConfig):
        super().__init__()
        self.build(config, (MoEBlock(config, i, GptOssAttention(config)) for i in range(config.n_layers)))


@dataclass(frozen=True)
class Converted:
    """A key-map value (models.loading) for one checkpoint tensor stored in another layout:
    `convert` maps it to ours."""
    name: str
    convert: Callable[[torch.Tensor], torch.Tensor]

    def names(self) -> list[str]:
        return [self.name]

    def build(self, tensors: dict) -> torch.Tensor:
        return self.convert(tensors[self.name]).contiguous()


def deinterleave(t: torch.Tensor) -> torch.Tensor:
    """(..., 2F) with gate, up alternating -> (..., 2F) = [all gates, all ups]."""
    return torch.cat((t[..., 0::2], t[..., 1::2]), dim=-1)


def gate_up_weight(t: torch.Tensor) -> torch.Tensor:
    """gate_up_proj (E, d, 2F) interleaved -> our w_gate_up (E, 2F, d) = [gate; up]."""
    return deinterleave(t).transpose(1, 2)


def down_weight(t: torch.Tensor) -> torch.Tensor:
    """down_proj (E, F, d) -> our w_down (E, d, F)."""
    return t.transpose(1, 2)


def key_map(config: ModelConfig) -> dict:
    """Our parameter name -> gpt-oss's tensor names (self_attn.sinks, mlp.router.weight/bias,
    mlp.experts.gate_up_proj(_bias), mlp.experts.down_proj(_bias), converted)."""
    m = skeleton_key_map(config)
    for i in range(config.n_layers):
        hf, ours = f"model.layers.{i}", f"blocks.{i}"
        m.update(attention_key_map(config, f"{ours}.attn", f"{hf}.self_attn"))
        m[f"{ours}.attn.sinks"] = [f"{hf}.self_attn.sinks"]
        m[f"{ours}.mlp.router.weight"] = [f"{hf}.mlp.router.weight"]
        m[f"{ours}.mlp.router.bias"] = [f"{hf}.mlp.router.bias"]
        experts, mine = f"{hf}.mlp.experts", f"{ours}.mlp.experts"
        m[f"{mine}.w_gate_up"] = Converted(f"{experts}.gate_up_proj", gate_up_weight)
        m[f"{mine}.b_gate_up"] = Converted(f"{experts}.gate_up_proj_bias", deinterleave)
        m[f"{mine}.w_down"] = Converted(f"{experts}.down_proj", down_weight)
        m[f"{mine}.b_down"] = [f"{experts}.down_proj_bias"]
    return m
