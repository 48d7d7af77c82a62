"""models/mla.py against transformers' DeepseekV3ForCausalLM (dense layers only, tiny random
configs): prefill and cached decode logits, the latent cache against transformers' own cache,
the up-projected cache against the per-head K/V of the uncached forward, and the cache's bytes."""
from __future__ import annotations

import pytest
import torch

from models.forward import Recorder
from models.mla import (LatentKVCache, MLAConfig, deinterleave, mla_config_from_hf,
                        mla_from_hf_state)

TOL = 1e-5


def tiny_deepseek(seed: int = 0, **overrides):
    """A tiny random DeepseekV3ForCausalLM with dense layers only (first_k_dense_replace =
    n_layers) and random norm weights (ones would hide a missing norm)."""
    import transformers as tf

    from explorer.architecture.mla import TINY_DEEPSEEK_V3

    fields = {**TINY_DEEPSEEK_V3, **overrides}     # the claims board's C6 module, by default
    cfg = tf.DeepseekV3Config(**fields)
    cfg._attn_implementation = "eager"
    torch.manual_seed(seed)
    model = tf.DeepseekV3ForCausalLM(cfg).eval()
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "norm" in name:
                p.normal_(1.0, 0.3)
    return model


def ours_of(hf_model):
    config = mla_config_from_hf(hf_model.config.to_dict())
    return mla_from_hf_state(config, {k: v.detach().clone() for k, v in hf_model.state_dict().items()})


VARIANTS = {
    "q_lora+interleave": {},
    "q_direct": {"q_lora_rank": None},
    "rotate_half": {"rope_interleave": False},
    "one_layer_wide_rope": {"num_hidden_layers": 1, "first_k_dense_replace": 1, "qk_rope_head_dim": 16},
}


@pytest.mark.parametrize("variant", sorted(VARIANTS))
@pytest.mark.parametrize("impl", ["eager", "sdpa"])
def test_prefill_matches_transformers(variant, impl):
    hf = tiny_deepseek(**VARIANTS[variant])
    ours = ours_of(hf)
    ids = torch.randint(0, 97, (2, 13), generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        expected = hf(ids).logits
        got = ours(ids, impl=impl)
    assert got.shape == expected.shape
    assert (got - expected).abs().max().item() <= TOL


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_cached_decode_matches_transformers(variant):
    """Prefill 7 tokens, then decode 6 one by one: our latent cache vs transformers' cache."""
    from transformers import DynamicCache

    hf = tiny_deepseek(**VARIANTS[variant])
    ours = ours_of(hf)
    ids = torch.randint(0, 97, (1, 13), generator=torch.Generator().manual_seed(2))
    cache = ours.new_cache(16)
    hf_cache = DynamicCache(config=hf.config)
    with torch.no_grad():
        got = [ours(ids[:, :7], cache=cache)]
        expected = [hf(ids[:, :7], cache=hf_cache, use_cache=True).logits]
        for t in range(7, 13):
            got.append(ours(ids[:, t:t + 1], cache=cache))
            expected.append(hf(ids[:, t:t + 1], cache=hf_cache, use_cache=True).logits)
        full = ours(ids)
    got, expected = torch.cat(got, dim=1), torch.cat(expected, dim=1)
    assert (got - expected).abs().max().item() <= TOL
    assert (got - full).abs().max().item() <= TOL      # cached == uncached, ours
    assert cache.pos == 13
    # the cache holds what transformers' holds: the normed latent and the rotated RoPE key
    # (transformers keeps the RoPE key in the interleaved layout's rotated output order, which
    # is the rotate-half order: its apply_rotary_pos_emb_interleave returns cat(even, odd))
    for layer in range(hf.config.num_hidden_layers):
        hf_latent = hf_cache.layers[layer].keys[:, 0]                  # (B, S, r)
        hf_rope_key = hf_cache.layers[layer].values[:, 0]              # (B, S, d_rope)
        assert (cache.latent[layer][:, :13] - hf_latent).abs().max().item() <= TOL
        assert (cache.rope_key[layer][:, :13] - hf_rope_key).abs().max().item() <= TOL


def test_latent_cache_reproduces_per_head_kv():
    """The up-projected latent cache equals the per-head K and V that the uncached forward
    computes for the same tokens, and transformers' expand_kv of its own latents."""
    hf = tiny_deepseek()
    ours = ours_of(hf)
    ids = torch.randint(0, 97, (1, 11), generator=torch.Generator().manual_seed(3))
    rec = Recorder(["k", "v"])
    cache = ours.new_cache(11)
    with torch.no_grad():
        ours(ids, recorder=rec)                    # uncached: K and V up-projected from this pass's latents
        ours(ids[:, :5], cache=cache)
        for t in range(5, 11):
            ours(ids[:, t:t + 1], cache=cache)
        for layer, block in enumerate(ours.blocks):
            k, v = block.attn.expand(cache.latent[layer][:, :11], cache.rope_key[layer][:, :11])
            c = ours.config
            assert k.shape == (1, c.n_heads, 11, c.qk_head_dim)
            assert v.shape == (1, c.n_heads, 11, c.v_head_dim)
            assert (k - rec.get("k", layer)).abs().max().item() <= TOL
            assert (v - rec.get("v", layer)).abs().max().item() <= TOL
            hf_k, hf_v = hf.model.layers[layer].self_attn.expand_kv(
                cache.latent[layer][:, None, :11], cache.rope_key[layer][:, None, :11])
            assert (k - hf_k).abs().max().item() <= TOL
            assert (v - hf_v).abs().max().item() <= TOL
    # the RoPE part is one key shared by every head; the position-free parts differ per head
    k = rec.get("k", 0)
    rope = k[..., ours.config.qk_nope_head_dim:]
    assert torch.equal(rope, rope[:, :1].expand_as(rope))
    assert (k[:, 0, :, :12] - k[:, 1, :, :12]).abs().max().item() > 1e-3


def test_the_boards_module_is_transformers_deepseek_v3():
    """The module the claims board's C6 runs (explorer/architecture/mla.py: TINY_DEEPSEEK_V3 and
    its random DeepSeek-V3-named weights) is transformers' DeepseekV3ForCausalLM holding the same
    tensors: prefill and cached decode logits, and the cache, within TOL."""
    from transformers import DynamicCache
    from explorer.architecture import mla as board

    hf = tiny_deepseek()
    tensors = board.tiny_checkpoint(0)
    missing, unexpected = hf.load_state_dict(tensors, strict=False)
    assert not unexpected and all("rotary_emb" in name for name in missing), (missing, unexpected)
    ours = board.tiny_model(0)
    assert ours.config == board.TINY == mla_config_from_hf(hf.config.to_dict())
    ids = torch.randint(0, 97, (1, 12), generator=torch.Generator().manual_seed(4))
    cache, hf_cache = ours.new_cache(12), DynamicCache(config=hf.config)
    with torch.no_grad():
        assert (ours(ids) - hf(ids).logits).abs().max().item() <= TOL
        got = [ours(ids[:, :6], cache=cache)]
        expected = [hf(ids[:, :6], cache=hf_cache, use_cache=True).logits]
        for t in range(6, 12):
            got.append(ours(ids[:, t:t + 1], cache=cache))
            expected.append(hf(ids[:, t:t + 1], cache=hf_cache, use_cache=True).logits)
    assert (torch.cat(got, dim=1) - torch.cat(expected, dim=1)).abs().max().item() <= TOL
    for layer in range(hf.config.num_hidden_layers):
        assert (cache.latent[layer] - hf_cache.layers[layer].keys[:, 0]).abs().max().item() <= TOL
    # norm weights drawn around 1: a norm dropped on either side would show
    assert (tensors["model.layers.0.self_attn.kv_a_layernorm.weight"] - 1).abs().max() > 0.1


def test_cache_bytes_per_token():
    hf = tiny_deepseek()
    ours = ours_of(hf)
    c = ours.config
    cache = ours.new_cache(32)
    with torch.no_grad():
        ours(torch.arange(9)[None], cache=cache)
        ours(torch.tensor([[5]]), cache=cache)
    per_token = (c.kv_lora_rank + c.qk_rope_head_dim) * c.n_layers * 4
    assert c.latent_bytes_per_token(4) == per_token == (16 + 8) * 3 * 4
    assert cache.used_bytes() == 10 * per_token
    # what per-head K and V would take: heads x (dqk + dv) x layers x bytes
    assert c.expanded_kv_bytes_per_token(4) == 4 * (20 + 10) * 3 * 4
    assert c.expanded_kv_bytes_per_token(4) / c.latent_bytes_per_token(4) == pytest.approx(5.0)


def test_deinterleave_is_the_pair_layout_change():
    x = torch.arange(8.0)
    assert deinterleave(x).tolist() == [0, 2, 4, 6, 1, 3, 5, 7]


def test_bad_inputs():
    config = MLAConfig(vocab_size=10, d_model=8, n_layers=1, n_heads=2, d_ff=8, kv_lora_rank=4,
                       qk_nope_head_dim=2, qk_rope_head_dim=2, v_head_dim=2)
    cache = LatentKVCache(config, max_len=3)
    with pytest.raises(ValueError, match="do not fit"):
        cache.update(0, torch.zeros(1, 4, 4), torch.zeros(1, 4, 2))
    with pytest.raises(ValueError, match="first_k_dense_replace"):
        mla_config_from_hf(dict(tiny_deepseek().config.to_dict(), first_k_dense_replace=1))
    with pytest.raises(ValueError, match="even"):
        MLAConfig(vocab_size=10, d_model=8, n_layers=1, n_heads=2, d_ff=8, kv_lora_rank=4,
                  qk_nope_head_dim=2, qk_rope_head_dim=3, v_head_dim=2)
    hf = tiny_deepseek()
    state = {k: v.detach().clone() for k, v in hf.state_dict().items()}
    state["model.layers.0.self_attn.kv_b_proj.bias"] = torch.zeros(4 * 22)
    with pytest.raises(ValueError, match="do not map"):
        mla_from_hf_state(mla_config_from_hf(hf.config.to_dict()), state)


def test_key_up_projection_absorbs_into_the_query():
    """Scores from the latent with W_UK moved onto the query equal q·k of the up-projected keys:
    the position-free part of the key never needs to be built per head."""
    hf = tiny_deepseek()
    ours = ours_of(hf)
    ids = torch.randint(0, 97, (2, 9), generator=torch.Generator().manual_seed(5))
    rec = Recorder(["q", "k"])
    cache = ours.new_cache(9, batch=2)
    with torch.no_grad():
        ours(ids, cache=cache, recorder=rec)
        for layer, block in enumerate(ours.blocks):
            q, k = rec.get("q", layer), rec.get("k", layer)
            explicit = (q @ k.transpose(-1, -2)) * ours.config.attn_scale              # (B, H, T, S)
            absorbed = block.attn.absorbed_scores(q, cache.latent[layer], cache.rope_key[layer])
            # scores of a random init are small (~1e-2): compare relative to them
            torch.testing.assert_close(absorbed, explicit, rtol=1e-5, atol=1e-8)
            assert explicit.abs().max().item() > 1e-2                                 # not trivially zero
