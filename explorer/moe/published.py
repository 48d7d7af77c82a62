"""Published MoE configurations, as data: the config.json values that decide the parameter
count, copied from each model's Hugging Face repository (the file named in `source`), and the
totals its authors state (`stated`: billions total, active), which explorer.moe.params must
reproduce (claim C14).
Only the keys the count needs are copied; their names are the config.json's own."""
from __future__ import annotations

PUBLISHED: dict[str, dict] = {
    "Mixtral 8x7B": {
        "source": "huggingface.co/mistralai/Mixtral-8x7B-v0.1, config.json",
        "stated": (46.7, 12.9),  # Mistral AI's announcement
        "config": {"model_type": "mixtral", "vocab_size": 32000, "hidden_size": 4096,
                   "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8,
                   "intermediate_size": 14336, "num_local_experts": 8, "num_experts_per_tok": 2,
                   "tie_word_embeddings": False},
    },
    "DeepSeek-V3": {
        "source": "huggingface.co/deepseek-ai/DeepSeek-V3, config.json",
        "stated": (671, 37),  # DeepSeek-V3 technical report; its 14B multi-token prediction module not counted
        "config": {"model_type": "deepseek_v3", "vocab_size": 129280, "hidden_size": 7168,
                   "num_hidden_layers": 61, "first_k_dense_replace": 3, "intermediate_size": 18432,
                   "moe_intermediate_size": 2048, "n_routed_experts": 256, "n_shared_experts": 1,
                   "num_experts_per_tok": 8, "num_attention_heads": 128, "q_lora_rank": 1536,
                   "kv_lora_rank": 512, "qk_nope_head_dim": 128, "qk_rope_head_dim": 64,
                   "v_head_dim": 128, "tie_word_embeddings": False},
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
