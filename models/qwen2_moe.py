"""Qwen2-MoE (Qwen1.5-MoE): Qwen2's attention (biases on q/k/v) with a mixture of experts whose
routed experts sit beside a shared expert that every token passes through, scaled by a sigmoid
gate sigmoid(x . w_g). The router is a softmax top-k whose kept weights are renormalised only
with norm_topk_prob. Layers in mlp_only_layers (or off the decoder_sparse_step) keep a dense MLP.

Block: models.mixtral.MoEBlock with Llama attention."""
from __future__ import annotations


from .config import ModelConfig
from .forward import CausalLM
from .llama import LlamaAttention
from .key_maps import attention_key_map, experts_key_map, skeleton_key_map
from .mixtral import MoEBlock


class Qwen2MoeForCausalLM(CausalLM):
    family = "qwen2_moe"

    def __init__(self, config: ModelConfig):
        super().__init__()
        self.build(config, (MoEBlock(config, i, LlamaAttention(config)) for i in range(config.n_layers)))


def key_map(config: ModelConfig) -> dict:
    """Our parameter name -> Qwen2-MoE's tensor names (mlp.gate, mlp.experts.{e}.*_proj,
    mlp.shared_expert.*_proj, mlp.shared_expert_gate; a dense layer's mlp.*_proj)."""
    m = skeleton_key_map(config)
    for i in range(config.n_layers):
        hf, ours = f"model.layers.{i}", f"blocks.{i}"
        m.update(attention_key_map(config, f"{ours}.attn", f"{hf}.self_attn"))
        if not config.is_moe_layer(i):
            m[f"{ours}.mlp.w_gate_up.weight"] = [f"{hf}.mlp.gate_proj.weight", f"{hf}.mlp.up_proj.weight"]
            m[f"{ours}.mlp.w_down.weight"] = [f"{hf}.mlp.down_proj.weight"]
            continue
        m[f"{ours}.mlp.router.weight"] = [f"{hf}.mlp.gate.weight"]
        m.update(experts_key_map(f"{ours}.mlp.experts", f"{hf}.mlp.experts", config.n_experts,
                                 "gate_proj", "up_proj", "down_proj"))
        if config.d_shared_expert:
            shared = f"{hf}.mlp.shared_expert"
            m[f"{ours}.mlp.shared.w_gate_up.weight"] = [f"{shared}.gate_proj.weight", f"{shared}.up_proj.weight"]
            m[f"{ours}.mlp.shared.w_down.weight"] = [f"{shared}.down_proj.weight"]
        if config.shared_expert_gate:
            m[f"{ours}.mlp.shared_gate.weight"] = [f"{hf}.mlp.shared_expert_gate.weight"]
    return m
