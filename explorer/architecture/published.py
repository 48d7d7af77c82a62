"""Published configurations the Architecture tab draws and computes from, as data: each value
copied from the publication named in `source`, under the names that publication uses.

The original Transformer and GPT-2 have no checkpoint in this app: their blocks are built from
these values without memory (explorer/architecture/inventory.py instantiates the modules on the
meta device and reads which tensors exist). DeepSeek-V3's attention shape feeds the latent-cache
comparison (explorer/architecture/mla.py)."""
from __future__ import annotations

# "Attention Is All You Need" (Vaswani et al., 2017): Table 3, row "base"; §3.1 (encoder and
# decoder stacks of N = 6, residual + LayerNorm after each sub-layer, "LayerNorm(x + Sublayer(x))"),
# §3.3 (ReLU feed-forward), §3.4 (one weight matrix shared by both embeddings and the pre-softmax
# projection), §3.5 (sinusoidal positions), §6.1 (WMT 2014 English-German: a shared vocabulary
# of about 37000 byte-pair tokens). Stated size: 65 M parameters (Table 3).
ORIGINAL_TRANSFORMER: dict = {
    "source": "Vaswani et al. 2017, Attention Is All You Need: Table 3 (base), §3.1-3.5, §6.1",
    "stated_params_millions": 65,
    "config": {"n_layers": 6, "d_model": 512, "d_ff": 2048, "n_heads": 8, "vocab_size": 37000,
               "activation": "relu", "positions": "sinusoidal"},
}

# GPT-2 small: config.json of huggingface.co/openai-community/gpt2 (n_inner null: 4 x n_embd).
GPT2: dict = {
    "source": "huggingface.co/openai-community/gpt2, config.json",
    "config": {"model_type": "gpt2", "activation_function": "gelu_new", "n_embd": 768, "n_head": 12,
               "n_layer": 12, "n_positions": 1024, "n_ctx": 1024, "vocab_size": 50257,
               "layer_norm_epsilon": 1e-05, "tie_word_embeddings": True},
}

# DeepSeek-V3: config.json of huggingface.co/deepseek-ai/DeepSeek-V3 (attention and size keys).
DEEPSEEK_V3: dict = {
    "source": "huggingface.co/deepseek-ai/DeepSeek-V3, config.json",
    "config": {"model_type": "deepseek_v3", "hidden_size": 7168, "num_hidden_layers": 61,
               "num_attention_heads": 128, "num_key_value_heads": 128, "kv_lora_rank": 512,
               "q_lora_rank": 1536, "qk_nope_head_dim": 128, "qk_rope_head_dim": 64,
               "v_head_dim": 128, "vocab_size": 129280, "intermediate_size": 18432,
               "rope_theta": 10000, "max_position_embeddings": 163840},
}
