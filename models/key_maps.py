"""Pieces of the explicit weight key maps (our parameter name -> the Hugging Face tensor names
it is made of), shared by the families that name their tensors the Llama way: `model.embed_tokens`,
`model.norm`, `lm_head`, `model.layers.{i}.input_layernorm` / `post_attention_layernorm`,
`self_attn.{q,k,v,o}_proj`, `mlp.{gate,up,down}_proj`. Each family's `key_map` lists the rest
itself, so a checkpoint with an unexpected tensor still fails loudly instead of half-loading.

A source list is concatenated on dim 0; a list of lists is stacked on a new dim 0, one entry per
expert, each inner list concatenated on dim 0 (models/loading.py source_value)."""
from __future__ import annotations


def head_key_map(config) -> dict:
    """Embedding, final norm, and the LM head unless it is tied to the embedding."""
    m = {"embed.weight": ["model.embed_tokens.weight"], "norm.weight": ["model.norm.weight"]}
    if not config.tie_embeddings:
        m["lm_head.weight"] = ["lm_head.weight"]
    return m


def skeleton_key_map(config) -> dict:
    """head_key_map plus each block's two pre-norms (before attention, before the MLP)."""
    m = head_key_map(config)
    for i in range(config.n_layers):
        m[f"blocks.{i}.attn_norm.weight"] = [f"model.layers.{i}.input_layernorm.weight"]
        m[f"blocks.{i}.mlp_norm.weight"] = [f"model.layers.{i}.post_attention_layernorm.weight"]
    return m


def attention_key_map(config, ours: str, hf: str) -> dict:
    """Llama-style q/k/v/o projections, q/k/v fused into one (and their biases where the config
    has them)."""
    m = {f"{ours}.wqkv.weight": [f"{hf}.{p}_proj.weight" for p in "qkv"],
         f"{ours}.wo.weight": [f"{hf}.o_proj.weight"]}
    if config.qkv_bias:
        m[f"{ours}.wqkv.bias"] = [f"{hf}.{p}_proj.bias" for p in "qkv"]
    if config.o_bias:
        m[f"{ours}.wo.bias"] = [f"{hf}.o_proj.bias"]
    return m


def gated_mlp_key_map(ours: str, hf: str) -> dict:
    """A SwiGLU / GeGLU MLP: gate and up fused into one (2F, d) weight, then down."""
    return {f"{ours}.w_gate_up.weight": [f"{hf}.gate_proj.weight", f"{hf}.up_proj.weight"],
            f"{ours}.w_down.weight": [f"{hf}.down_proj.weight"]}


def experts_key_map(ours: str, hf: str, n_experts: int, gate: str, up: str, down: str) -> dict:
    """Per-expert checkpoint tensors (hf.{e}.{gate|up|down}.weight, as Mixtral, Qwen2-MoE and
    OLMoE store them) -> our stacked (E, 2F, d) and (E, d, F) tensors."""
    return {f"{ours}.w_gate_up": [[f"{hf}.{e}.{gate}.weight", f"{hf}.{e}.{up}.weight"] for e in range(n_experts)],
            f"{ours}.w_down": [[f"{hf}.{e}.{down}.weight"] for e in range(n_experts)]}
