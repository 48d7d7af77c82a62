"""Our MoE families vs transformers' own classes: tiny random-init models, saved with
save_pretrained (the checkpoint format on disk: per-expert tensors for Mixtral, Qwen2-MoE and
OLMoE; fused, transposed, interleaved experts for gpt-oss) and read back by models.loading.
CPU fp32, logits within 1e-5, prefill and cached decode, every attention path."""
import pytest
import torch

from models.forward import MOE_POINTS, Recorder, RunOptions
from models.loading import CheckpointLoadError, load_model

TOL = 1e-5
IMPLS = ["eager", "sdpa", "tiled"]
FAMILIES = ["mixtral", "qwen2_moe", "olmoe", "gpt_oss"]
COMMON = dict(vocab_size=97, hidden_size=64, intermediate_size=96, num_hidden_layers=3,
              num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256,
              rms_norm_eps=1e-6, bos_token_id=1, eos_token_id=2, pad_token_id=0)


def tiny_moe_hf(kind: str, seed: int = 0):
    """A tiny random-init transformers MoE causal LM (fp32, eval), with every norm, bias,
    router bias and sink logit random (zero/one init would hide a missing one), and each
    family's options set where they change the computation: Mixtral's sliding window,
    Qwen2-MoE's dense layer and shared expert, OLMoE's renormalisation and q/k/v clamp,
    gpt-oss's alternating windows and a SwiGLU limit that clamps."""
    import transformers as tf
    if kind == "mixtral":
        cfg = tf.MixtralConfig(**COMMON, num_local_experts=4, num_experts_per_tok=2, sliding_window=7)
        cls = tf.MixtralForCausalLM
    elif kind == "qwen2_moe":
        cfg = tf.Qwen2MoeConfig(**COMMON, num_experts=6, num_experts_per_tok=2, moe_intermediate_size=32,
                                shared_expert_intermediate_size=48, norm_topk_prob=False,
                                mlp_only_layers=[1])
        cls = tf.Qwen2MoeForCausalLM
    elif kind == "olmoe":
        cfg = tf.OlmoeConfig(**COMMON, num_experts=6, num_experts_per_tok=3, norm_topk_prob=True,
                             clip_qkv=0.8)
        cls = tf.OlmoeForCausalLM
    elif kind == "gpt_oss":
        cfg = tf.GptOssConfig(**COMMON, num_local_experts=4, num_experts_per_tok=2, head_dim=16,
                              sliding_window=5, swiglu_limit=0.15,
                              rope_parameters={"rope_type": "default", "rope_theta": 10000.0})
        cls = tf.GptOssForCausalLM
    else:
        raise ValueError(kind)
    cfg._attn_implementation = "eager"
    torch.manual_seed(seed)
    model = cls(cfg).eval()
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "norm" in name:
                p.normal_(1.0, 0.3)
            elif name.endswith(("bias", "sinks")):
                p.normal_(0.0, 0.5 if name.endswith("sinks") else 0.1)
    return model


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    """kind -> (transformers model, its save_pretrained folder); made once per family."""
    made = {}

    def get(kind):
        if kind not in made:
            hf = tiny_moe_hf(kind)
            folder = tmp_path_factory.mktemp(kind)
            hf.save_pretrained(folder)
            made[kind] = hf, folder
        return made[kind]
    return get


@pytest.fixture(scope="module", params=FAMILIES)
def pair(request, saved):
    hf, folder = saved(request.param)
    return request.param, hf, load_model(folder, device="cpu", dtype=torch.float32)


@pytest.mark.parametrize("impl", IMPLS)
def test_prefill_logits_match(pair, impl):
    kind, hf, ours = pair
    ids = torch.randint(3, 97, (2, 23), generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        ref = hf(ids).logits
        out = ours(ids, options=RunOptions(attn_impl=impl, block_q=8, block_k=8))
    assert (out - ref).abs().max().item() <= TOL


@pytest.mark.parametrize("impl", IMPLS)
def test_step_by_step_decode_matches(pair, impl):
    """Prompt prefill, then one token at a time through our KV cache, against transformers'
    full forward over the same sequence (longer than the sliding windows)."""
    kind, hf, ours = pair
    ids = torch.randint(3, 97, (1, 20), generator=torch.Generator().manual_seed(2))
    with torch.no_grad():
        ref = hf(ids).logits[0]
        cache = ours.new_cache(max_len=20)
        opts = RunOptions(attn_impl=impl, block_q=4, block_k=4)
        rows = [ours(ids[:, :8], cache=cache, options=opts)[0]]
        for t in range(8, 20):
            rows.append(ours(ids[:, t:t + 1], cache=cache, options=opts)[0])
    assert cache.pos == 20
    assert (torch.cat(rows) - ref).abs().max().item() <= TOL


def test_hf_decode_with_its_cache_matches_ours(pair):
    """transformers' own incremental decode (its cache) against our cached decode."""
    kind, hf, ours = pair
    ids = torch.randint(3, 97, (1, 16), generator=torch.Generator().manual_seed(3))
    with torch.no_grad():
        out = hf(ids[:, :10], use_cache=True)
        ref = [out.logits[0]]
        for t in range(10, 16):
            out = hf(ids[:, t:t + 1], cache=out.cache, use_cache=True)
            ref.append(out.logits[0])
        cache = ours.new_cache(max_len=16)
        mine = [ours(ids[:, :10], cache=cache)[0]] + [ours(ids[:, t:t + 1], cache=cache)[0] for t in range(10, 16)]
    assert (torch.cat(mine) - torch.cat(ref)).abs().max().item() <= TOL


def test_router_recordings_match_transformers(pair):
    """The recorded router logits are transformers' (output_router_logits), layer by layer;
    picks and weights are the top-k of the recorded probabilities; ctx.moe_aux holds the same
    routing for training."""
    kind, hf, ours = pair
    ids = torch.randint(3, 97, (1, 12), generator=torch.Generator().manual_seed(4))
    rec = Recorder(MOE_POINTS)
    with torch.no_grad():
        ref = hf(ids, output_router_logits=True).router_logits
        _, ctx = ours(ids, recorder=rec, return_context=True)
    moe_layers = [i for i in range(ours.config.n_layers) if ours.config.is_moe_layer(i)]
    assert len(ref) == len(moe_layers) and sorted(ctx.moe_aux) == moe_layers
    k = ours.config.n_experts_per_tok
    for ref_logits, layer in zip(ref, moe_layers):
        logits = rec.get("router_logits", layer)                                  # (1, T, E)
        assert logits.shape == (1, 12, ours.config.n_experts)
        assert (logits[0] - ref_logits).abs().max() <= TOL
        probs, picks, weights = (rec.get(p, layer) for p in ("router_probs", "expert_picks", "expert_weights"))
        assert torch.equal(picks, probs.topk(k, dim=-1).indices)
        expected = probs.gather(-1, picks)
        if ours.config.router_renormalize:
            expected = expected / expected.sum(-1, keepdim=True)
        assert (weights - expected).abs().max() <= 1e-6
        assert torch.equal(ctx.moe_aux[layer].picks, picks)
    for layer in set(range(ours.config.n_layers)) - set(moe_layers):
        assert ("router_logits", layer) not in rec.records       # a dense layer routes nothing


def test_gpt_oss_sink_attention_matches_transformers(saved):
    """gpt-oss's learned per-head sink logits: our attention probabilities (rows summing to
    1 - sink mass) equal transformers' on sliding and full layers."""
    hf, folder = saved("gpt_oss")
    ours = load_model(folder, device="cpu", dtype=torch.float32)
    ids = torch.randint(3, 97, (1, 11), generator=torch.Generator().manual_seed(5))
    rec = Recorder(["attn_probs"])
    with torch.no_grad():
        ref = hf(ids, output_attentions=True).attentions
        ours(ids, recorder=rec)
    for layer in range(ours.config.n_layers):
        probs = rec.get("attn_probs", layer)                                      # (1, H, T, T)
        assert (probs - ref[layer]).abs().max() <= TOL
        assert (probs.sum(-1) < 1 - 1e-3).all()                  # the sinks took some mass
    assert ours.config.layer_types[0] == "sliding_attention" and ours.config.layer_types[1] == "full_attention"


def test_moe_config_mapping(pair):
    kind, hf, ours = pair
    c, h = ours.config, hf.config
    assert c.family == kind and type(ours).family == kind
    assert c.n_experts == (getattr(h, "num_local_experts", None) or h.num_experts)
    assert c.n_experts_per_tok == h.num_experts_per_tok
    expected = {"mixtral": dict(router_renormalize=True, router_scoring="softmax"),
                "qwen2_moe": dict(router_renormalize=False, d_shared_expert=48, shared_expert_gate=True,
                                  dense_layers=[1], d_expert=32),
                "olmoe": dict(router_renormalize=True, clip_qkv=0.8),
                "gpt_oss": dict(router_scoring="topk_softmax", router_bias=True, expert_bias=True,
                                swiglu_limit=0.15)}[kind]
    for field, value in expected.items():
        assert getattr(c, field) == value, field


def test_loader_names_a_missing_expert_tensor(saved, tmp_path):
    from safetensors.torch import load_file, save_file
    hf, folder = saved("mixtral")
    tensors = load_file(str(folder / "model.safetensors"))
    del tensors["model.layers.1.block_sparse_moe.experts.3.w2.weight"]
    save_file(tensors, str(tmp_path / "model.safetensors"), metadata={"format": "pt"})
    (tmp_path / "config.json").write_text((folder / "config.json").read_text())
    with pytest.raises(CheckpointLoadError, match=r"experts\.3\.w2\.weight"):
        load_model(tmp_path, device="cpu", dtype=torch.float32)


def test_yarn_rope_is_refused_clearly():
    """Real gpt-oss checkpoints use YaRN RoPE, which our RoPE does not implement: refused
    with the reason, never run with the wrong frequencies."""
    import transformers as tf
    from models.config import UnsupportedModelError, config_from_hf
    cfg = tf.GptOssConfig(**COMMON, num_local_experts=4, num_experts_per_tok=2, head_dim=16)
    with pytest.raises(UnsupportedModelError, match="yarn"):
        config_from_hf(cfg.to_dict())


def test_bench_mixtral_twin_is_the_same_model(saved):
    """bench.moe_decode times transformers on a Mixtral twin built from our tensors when a
    checkpoint's architecture is not transformers' (the project's own MoE models): the twin's
    logits are ours."""
    from bench.moe_decode import mixtral_twin
    hf, folder = saved("mixtral")
    ours = load_model(folder, device="cpu", dtype=torch.float32)
    twin = mixtral_twin(ours)
    twin.config._attn_implementation = "eager"
    ids = torch.randint(3, 97, (1, 14), generator=torch.Generator().manual_seed(6))
    with torch.no_grad():
        assert (twin(ids).logits - ours(ids)).abs().max() <= TOL
        assert (twin(ids).logits - hf(ids).logits).abs().max() <= TOL
