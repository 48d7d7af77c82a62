"""The project's own small MoE language model ("explorer-moe"): a Llama-style decoder (pre-norm
RMSNorm, RoPE, GQA attention from models.llama) whose feed-forward is a mixture of experts.
Trained by `python -m explorer.moe.train` on Python's standard library sources, in three
variants that differ only in how the router is balanced: none, an auxiliary loss, a selection
bias (DeepSeek-V3's auxiliary-loss-free balancing).

Block: x + attn(norm(x)), then x + moe(norm(x)). The MoE layer records, per layer, the router's
probabilities and picks through the engine's Recorder, so the explorer draws them without any
extra forward code."""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import torch

from .config import ModelConfig
from .forward import CausalLM
from .llama import LlamaAttention
from .key_maps import attention_key_map, skeleton_key_map
from .mixtral import MoEBlock
from .moe import MoEFeedForward, moe_config

ARCHITECTURE = "ExplorerMoeForCausalLM"
BALANCING = ("none", "aux", "bias")


@dataclass
class ExplorerMoEConfig(ModelConfig):
    """ModelConfig (its MoE fields: n_experts, n_experts_per_tok, d_expert; n_experts = 0 is
    the dense baseline) plus how the router was balanced in training."""
    balancing: str = "none"          # "none" | "aux" | "bias" (the router has a selection bias)
    aux_coef: float = 0.0            # weight the "aux" variant trained its balancing loss with

    def __post_init__(self):
        super().__post_init__()
        if self.balancing not in BALANCING:
            raise ValueError(f"balancing {self.balancing!r} not in {BALANCING}")


class ExplorerMoEBlock(MoEBlock):
    """Mixtral's block (softmax router, top-k, picked weights renormalised, SwiGLU experts).
    In the bias variant the router also carries a selection bias, which chooses experts but
    never weights them (DeepSeek-V3): moe_config has no field for it, so that variant's MoE
    layer is made again from the same MoEConfig with selection_bias set."""

    def __init__(self, config: ExplorerMoEConfig, layer: int):
        super().__init__(config, layer, LlamaAttention(config))
        if self.is_moe and config.balancing == "bias":
            self.mlp = MoEFeedForward(dataclasses.replace(moe_config(config), selection_bias=True))


class ExplorerMoEForCausalLM(CausalLM):
    family = "explorer_moe"

    def __init__(self, config: ExplorerMoEConfig):
        super().__init__()
        self.build(config, (ExplorerMoEBlock(config, i) for i in range(config.n_layers)))


def key_map(config: ExplorerMoEConfig) -> dict[str, list[str]]:
    """Our parameter name -> the checkpoint tensor names it is made of (concatenated on dim 0).
    The checkpoint uses Hugging Face's layout; experts are stored grouped, as transformers 5
    holds them: mlp.experts.gate_up_proj (E, 2F, d) and mlp.experts.down_proj (E, d, F)."""
    m = skeleton_key_map(config)
    for i in range(config.n_layers):
        hf, ours = f"model.layers.{i}", f"blocks.{i}"
        m.update(attention_key_map(config, f"{ours}.attn", f"{hf}.self_attn"))
        if config.n_experts:
            m[f"{ours}.mlp.router.weight"] = [f"{hf}.mlp.gate.weight"]
            if config.balancing == "bias":
                m[f"{ours}.mlp.router.selection_bias"] = [f"{hf}.mlp.gate.e_score_correction_bias"]
            m[f"{ours}.mlp.experts.w_gate_up"] = [f"{hf}.mlp.experts.gate_up_proj"]
            m[f"{ours}.mlp.experts.w_down"] = [f"{hf}.mlp.experts.down_proj"]
        else:
            m[f"{ours}.mlp.w_gate_up.weight"] = [f"{hf}.mlp.gate_proj.weight", f"{hf}.mlp.up_proj.weight"]
            m[f"{ours}.mlp.w_down.weight"] = [f"{hf}.mlp.down_proj.weight"]
    return m


def checkpoint_tensors(model: ExplorerMoEForCausalLM) -> dict[str, torch.Tensor]:
    """The inverse of key_map: our parameters under the checkpoint's names (fused q/k/v and
    gate/up matrices split back along dim 0)."""
    config = model.config
    params = dict(model.named_parameters())  # selection_bias too (a Parameter without grad)
    q, kv = config.n_heads * config.head_dim, config.n_kv_heads * config.head_dim
    out = {}
    for ours, sources in key_map(config).items():
        value = params[ours].detach()
        if len(sources) == 1:
            parts = [value]
        elif ours.endswith("wqkv.weight"):
            parts = value.split([q, kv, kv], dim=0)
        else:
            parts = value.split(config.d_ff, dim=0)
        out.update((name, part.contiguous()) for name, part in zip(sources, parts))
    return out


def config_to_hf(config: ExplorerMoEConfig) -> dict:
    return {"architectures": [ARCHITECTURE], "model_type": "explorer_moe",
            "vocab_size": config.vocab_size, "hidden_size": config.d_model,
            "num_hidden_layers": config.n_layers, "num_attention_heads": config.n_heads,
            "num_key_value_heads": config.n_kv_heads, "head_dim": config.head_dim,
            "intermediate_size": config.d_ff, "rope_theta": config.rope_theta,
            "rms_norm_eps": config.norm_eps, "hidden_act": config.hidden_act,
            "max_position_embeddings": config.max_position_embeddings,
            "tie_word_embeddings": config.tie_embeddings,
            "num_experts": config.n_experts, "num_experts_per_tok": config.n_experts_per_tok,
            "moe_intermediate_size": config.d_expert, "norm_topk_prob": True,
            "balancing": config.balancing, "aux_coef": config.aux_coef, "eos_token_id": config.eos_token_ids,
            "torch_dtype": "bfloat16"}


def config_from_hf(hf: dict) -> ExplorerMoEConfig:
    return ExplorerMoEConfig(
        family="explorer_moe", architecture=ARCHITECTURE, vocab_size=hf["vocab_size"],
        d_model=hf["hidden_size"], n_layers=hf["num_hidden_layers"],
        n_heads=hf["num_attention_heads"], n_kv_heads=hf["num_key_value_heads"],
        d_ff=hf["intermediate_size"], head_dim=hf.get("head_dim") or 0,
        rope_theta=float(hf["rope_theta"]), norm_eps=hf["rms_norm_eps"],
        hidden_act=hf.get("hidden_act", "silu"),
        max_position_embeddings=hf["max_position_embeddings"],
        tie_embeddings=hf["tie_word_embeddings"], n_experts=hf["num_experts"],
        n_experts_per_tok=hf["num_experts_per_tok"], d_expert=hf["moe_intermediate_size"],
        router_scoring="softmax", router_renormalize=True,
        balancing=hf.get("balancing", "none"), aux_coef=float(hf.get("aux_coef", 0.0)),
        eos_token_ids=list(hf.get("eos_token_id") or []))
