"""In-house transformer modules: the textbook (models/README.md: a newcomer's path, the two
seams, adding a mask kind). Nothing here imports Gradio, plotting, the explorer or engine/.

Public API, in the order data flows:

    from models.loading import load_model            # folder (config.json + safetensors) -> CausalLM
    model = load_model(folder, device=None, dtype=None)   # CPU fp32 / CUDA bf16 by default
    model.config                                     # models.config.ModelConfig dataclass:
        # family, n_layers, d_model, n_heads, n_kv_heads, head_dim, d_ff, vocab_size,
        # rope_theta, rope_local_theta (Gemma sliding layers), layer_types ("full_attention" /
        # "sliding_attention" per layer), sliding_window, layer_window(i), layer_rope_theta(i),
        # attn_scale, n_rep, max_position_embeddings, eos_token_ids
    type(model).family                               # declared by each family class ("llama",
                                                     # "gemma3"), equal to model.config.family

    # KV-cache bytes: the one formula (C3, C9), checked against the real cache tensors (tests)
    model.element_size()                             # bytes per element of weights and cache
    config.kv_elements_per_token_layer()             # models.config.kv_elements: 2 x kv heads x head_dim
    config.kv_bytes_per_token(bytes)                 # 2 x layers x kv heads x head_dim x bytes
    config.kv_bytes_per_token(bytes, n_kv_heads=config.n_heads)   # the same shape as MHA
    config.kv_layer_bytes(tokens, bytes, capacity)   # one layer holding min(tokens, capacity)
    config.kv_layer_capacities()                     # per layer: its window, None = full
    config.kv_bytes_per_layer(tokens, bytes, capacities=None)   # list; default: own windows
    config.kv_bytes(tokens, bytes, capacities=None)  # their sum; a run's: cache.capacities()

    from models.forward import RunOptions, Recorder
    logits = model(input_ids)                        # (B, T) long -> (B, T, V)
    logits = model(ids, options=RunOptions(
        attn_impl="eager" | "sdpa" | "tiled",        # all three agree (tests)
        mask=MaskSpec(window=64, sinks=4),           # restrict every layer (narrower window wins)
        sink_logit=1.5,                              # gpt-oss style extra softmax logit (or tensor (H,))
        rope_theta=..., rope_local_theta=...,        # change the RoPE base (full / sliding layers)
        block_q=64, block_k=64,                      # tiled path tile sizes
    ))
    rec = Recorder(["attn_probs", "q_pre_rope", "k_pre_rope", "q", "k", "resid", "tile_trace"],
                   layers=[3])                       # capture only what is shown
    model(ids, recorder=rec); rec.get("attn_probs", 3)  # (B, H, T, S) fp32, rows sum to 1 - sink mass
    rec.get("kv_pos", 3)                             # (S,) absolute key positions of those columns
    # hooks reduce a point as it is recorded (keep what the hook returns; None keeps nothing):
    rec = Recorder(["attn_probs"], hooks={"attn_probs": lambda p, layer: p[..., 0].mean(-1),
                                          "kv_pos": lambda pos, layer: None})
    rec = Recorder(["resid"], hooks={"resid": lambda x, layer: x[:, -1]})   # last position only
    resid = model(ids, recorder=rec, stop_at_layer=4)  # blocks 0..3 only; returns (B, T, d)
    logits, ctx = model(ids, return_context=True); ctx.score_entries  # scores computed, all layers

    from models.attention import MaskSpec            # causal ∧ (window ∨ sinks) predicates
    MaskSpec(window=8, sinks=2).visible(q_pos, kv_pos)  # (T, S) bool: what the model uses

    cache = model.new_cache(max_len, options=RunOptions(mask=...))   # models.kv_cache.KVCache
    model(ids_chunk, cache=cache)                    # positions = cache.pos + arange(T)
    cache.used_bytes(), cache.lengths(), cache.capacities(), cache[i].kind, cache[i].positions()
    cache[i].used_bytes()                            # its filled slots' K and V, from the tensors
    cache.pos, cache[i].length                       # read-only: only the cache writes them
    cache.rewind(pos)                                # forget positions >= pos

    from models.generate import generate, SamplingParams, full_forward_logits
    for step in generate(model, prompt_ids, SamplingParams(max_new_tokens=64, temperature=0.7,
                         top_k=50, top_p=0.9, seed=0), options=RunOptions(...), use_cache=True,
                         keep_logits=False, should_stop=lambda: False):
        step.token_id, step.position, step.latency_s, step.score_entries, step.cache_bytes, ...

    from models.decoder import Decoder, EagerDecoder
    # Decoder protocol: model, options, new_cache(max_len), prefill(ids, cache) -> (1, 1, V),
    # step(token, cache) -> (1, 1, V), scores_per_step(cache); generate() takes any of them
    generate(model, prompt_ids, params)              # = decoder=EagerDecoder(model, options)
    # the engine's decoders (engine/: static, fused, batched) follow the same protocol

    # The two seams an engine plugs into (models/ never imports it):
    from models.forward import register_attention, ATTENTION_BACKENDS
    register_attention("mine", fn)                   # fn(ctx, layer, q, k, v, sink_logit) -> (B,H,T,D)
    model(ids, options=RunOptions(attn_impl="mine")) # q, k, v before RoPE; "eager"/"sdpa"/"tiled" built in
    from models.layers import weight_provider
    with weight_provider({module: product}):         # product(x, bias) on its own copy of the weight
        model(ids)                                   # on this thread only; other modules: F.linear

    # Mixture of experts (models/moe.py; families "mixtral", "qwen2_moe", "olmoe", "gpt_oss")
    config.n_experts, config.n_experts_per_tok, config.d_expert, config.is_moe_layer(i)
    rec = Recorder(["router_logits", "router_probs", "expert_picks", "expert_weights"])
    model(ids, recorder=rec); rec.get("expert_picks", 0)   # (B, T, k); router_* are (B, T, E)
    logits, ctx = model(ids, return_context=True); ctx.moe_aux[i]   # models.moe.MoEAux per MoE layer
    from models.moe import MoEConfig, MoEFeedForward, update_selection_bias
    moe = MoEFeedForward(MoEConfig(d_model=64, d_expert=128, n_experts=8, top_k=2,
                                   scoring="softmax",        # | "topk_softmax" (gpt-oss) | "sigmoid"
                                   renormalize=True, selection_bias=False, n_shared=0,
                                   shared_gate=False, aux_loss_coef=0.01, seq_aux_loss_coef=0.0))
    y, aux = moe(x)                                  # x (B, T, d) -> y (B, T, d), grouped experts
    aux.loss, aux.switch_loss(), aux.sequence_loss(), aux.load()   # load: (E,) assignments
    update_selection_bias(moe.router, aux.load(), rate=1e-3)      # DeepSeek-V3 balancing step
"""
