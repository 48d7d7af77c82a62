"""Every published model configuration the app cites, as data: each value copied once from the
publication named in `source`, under the names that publication uses (a config.json's own keys).

Only the keys some part of the app needs are copied, so an entry is not a whole config.json:
- the KV-cache calculator (explorer/generate/shapes.py) reads the attention shape of Llama-2-7B,
  Llama 3 8B, Mistral 7B, Gemma 3 27B, Gemma 3 270M and DeepSeek-V3, through `cache_config`;
- the MoE parameter count (explorer/moe/params.py, C14) reads the MoE models, and reproduces the
  totals their authors state (`stated`: billions total, active);
- the Architecture tab builds the original Transformer and GPT-2 from theirs
  (explorer/architecture/blocks.py) and compares DeepSeek-V3's latent cache with MHA / GQA
  (explorer/architecture/mla.py), through `cache_config` too.
"""
from __future__ import annotations

from typing import Union

from models.config import ModelConfig, config_from_hf
from models.mla import MLAConfig, mla_config_from_hf

PUBLISHED: dict[str, dict] = {
    # "Attention Is All You Need" (Vaswani et al., 2017): Table 3, row "base"; §3.1 (encoder and
    # decoder stacks of N = 6, residual + LayerNorm after each sub-layer, "LayerNorm(x + Sublayer(x))"),
    # §3.3 (ReLU feed-forward), §3.4 (one weight matrix shared by both embeddings and the pre-softmax
    # projection), §3.5 (sinusoidal positions), §6.1 (WMT 2014 English-German: a shared vocabulary
    # of about 37000 byte-pair tokens). Stated size: 65 M parameters (Table 3).
    "Original Transformer": {
        "source": "Vaswani et al. 2017, Attention Is All You Need: Table 3 (base), §3.1-3.5, §6.1",
        "stated_params_millions": 65,
        "config": {"n_layers": 6, "d_model": 512, "d_ff": 2048, "n_heads": 8, "vocab_size": 37000,
                   "activation": "relu", "positions": "sinusoidal"},
    },
    # GPT-2 small (n_inner null: 4 x n_embd).
    "GPT-2": {
        "source": "huggingface.co/openai-community/gpt2, config.json",
        "config": {"model_type": "gpt2", "activation_function": "gelu_new", "n_embd": 768, "n_head": 12,
                   "n_layer": 12, "n_positions": 1024, "n_ctx": 1024, "vocab_size": 50257,
                   "layer_norm_epsilon": 1e-05, "tie_word_embeddings": True},
    },
    "Llama-2-7B": {
        "source": "huggingface.co/meta-llama/Llama-2-7b-hf, config.json",
        "config": {"model_type": "llama", "vocab_size": 32000, "hidden_size": 4096,
                   "intermediate_size": 11008, "num_hidden_layers": 32, "num_attention_heads": 32,
                   "num_key_value_heads": 32},
    },
    "Llama 3 8B": {
        "source": "huggingface.co/meta-llama/Meta-Llama-3-8B, config.json",
        "config": {"model_type": "llama", "vocab_size": 128256, "hidden_size": 4096,
                   "intermediate_size": 14336, "num_hidden_layers": 32, "num_attention_heads": 32,
                   "num_key_value_heads": 8},
    },
    "Mistral 7B": {
        "source": "huggingface.co/mistralai/Mistral-7B-v0.1, config.json",
        "config": {"model_type": "mistral", "vocab_size": 32000, "hidden_size": 4096,
                   "intermediate_size": 14336, "num_hidden_layers": 32, "num_attention_heads": 32,
                   "num_key_value_heads": 8, "sliding_window": 4096},
    },
    # the text model's keys (text_config); every 6th layer global: 52 local, 10 global
    "Gemma 3 27B": {
        "source": "huggingface.co/google/gemma-3-27b-pt, config.json (text_config)",
        "config": {"model_type": "gemma3_text", "vocab_size": 262208, "hidden_size": 5376,
                   "intermediate_size": 21504, "num_hidden_layers": 62, "num_attention_heads": 32,
                   "num_key_value_heads": 16, "head_dim": 128, "sliding_window": 1024,
                   "sliding_window_pattern": 6},
    },
    "Gemma 3 270M": {
        "source": "huggingface.co/google/gemma-3-270m, config.json",
        "config": {"model_type": "gemma3_text", "vocab_size": 262144, "hidden_size": 640,
                   "intermediate_size": 2048, "num_hidden_layers": 18, "num_attention_heads": 4,
                   "num_key_value_heads": 1, "head_dim": 256, "sliding_window": 512,
                   "layer_types": (["sliding_attention"] * 5 + ["full_attention"]) * 3},
    },
    "Mixtral 8x7B": {
        "source": "huggingface.co/mistralai/Mixtral-8x7B-v0.1, config.json",
        "stated": (46.7, 12.9),  # Mistral AI's announcement
        "config": {"model_type": "mixtral", "vocab_size": 32000, "hidden_size": 4096,
                   "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8,
                   "intermediate_size": 14336, "num_local_experts": 8, "num_experts_per_tok": 2,
                   "tie_word_embeddings": False},
    },
    # Multi-head latent attention: per token and layer the cache holds kv_lora_rank +
    # qk_rope_head_dim = 576 numbers; 61 layers, the first 3 with a dense feed-forward.
    "DeepSeek-V3": {
        "source": "huggingface.co/deepseek-ai/DeepSeek-V3, config.json",
        "stated": (671, 37),  # DeepSeek-V3 technical report; its 14B multi-token prediction module not counted
        "config": {"model_type": "deepseek_v3", "vocab_size": 129280, "hidden_size": 7168,
                   "num_hidden_layers": 61, "first_k_dense_replace": 3, "intermediate_size": 18432,
                   "moe_intermediate_size": 2048, "n_routed_experts": 256, "n_shared_experts": 1,
                   "num_experts_per_tok": 8, "num_attention_heads": 128, "num_key_value_heads": 128,
                   "q_lora_rank": 1536, "kv_lora_rank": 512, "qk_nope_head_dim": 128,
                   "qk_rope_head_dim": 64, "v_head_dim": 128, "rope_theta": 10000,
                   "max_position_embeddings": 163840, "tie_word_embeddings": False},
    },
    "Qwen1.5-MoE-A2.7B (Qwen2-MoE)": {
        "source": "huggingface.co/Qwen/Qwen1.5-MoE-A2.7B, config.json",
        "stated": (14.3, 2.7),  # Qwen's model card
        "config": {"model_type": "qwen2_moe", "vocab_size": 151936, "hidden_size": 2048,
                   "num_hidden_layers": 24, "num_attention_heads": 16, "num_key_value_heads": 16,
                   "moe_intermediate_size": 1408, "shared_expert_intermediate_size": 5632,
                   "num_experts": 60, "num_experts_per_tok": 4, "tie_word_embeddings": False},
    },
    "OLMoE-1B-7B": {
        "source": "huggingface.co/allenai/OLMoE-1B-7B-0924, config.json",
        "stated": (6.9, 1.3),  # the OLMoE paper
        "config": {"model_type": "olmoe", "vocab_size": 50304, "hidden_size": 2048,
                   "num_hidden_layers": 16, "num_attention_heads": 16, "num_key_value_heads": 16,
                   "intermediate_size": 1024, "num_experts": 64, "num_experts_per_tok": 8,
                   "tie_word_embeddings": False},
    },
    "gpt-oss-20b": {
        "source": "huggingface.co/openai/gpt-oss-20b, config.json",
        "stated": (20.9, 3.6),  # OpenAI's model card; active without the embedding table
        "config": {"model_type": "gpt_oss", "vocab_size": 201088, "hidden_size": 2880,
                   "num_hidden_layers": 24, "num_attention_heads": 64, "num_key_value_heads": 8,
                   "head_dim": 64, "intermediate_size": 2880, "num_local_experts": 32,
                   "num_experts_per_tok": 4, "tie_word_embeddings": False},
    },
    "gpt-oss-120b": {
        "source": "huggingface.co/openai/gpt-oss-120b, config.json",
        "stated": (116.8, 5.1),  # OpenAI's model card; active without the embedding table
        "config": {"model_type": "gpt_oss", "vocab_size": 201088, "hidden_size": 2880,
                   "num_hidden_layers": 36, "num_attention_heads": 64, "num_key_value_heads": 8,
                   "head_dim": 64, "intermediate_size": 2880, "num_local_experts": 128,
                   "num_experts_per_tok": 4, "tie_word_embeddings": False},
    },
}
ORIGINAL_TRANSFORMER = PUBLISHED["Original Transformer"]
GPT2 = PUBLISHED["GPT-2"]
DEEPSEEK_V3 = PUBLISHED["DeepSeek-V3"]


def cache_config(name: str) -> Union[ModelConfig, MLAConfig]:
    """The attention shape of a published model, through the engine's own mapping from a
    config.json: models.config.config_from_hf, or models.mla.mla_config_from_hf for DeepSeek's
    latent attention, with every layer's feed-forward taken as the dense one (the routed
    experts do not touch the cache). The keys not copied here (RoPE, norms) take the
    dataclass's defaults: read the cache's shape from it, nothing else."""
    config = PUBLISHED[name]["config"]
    if config["model_type"] == "deepseek_v3":
        return mla_config_from_hf({**config, "first_k_dense_replace": config["num_hidden_layers"]})
    return config_from_hf(config)
