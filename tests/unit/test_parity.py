"""Our modules vs transformers' own classes, tiny random configs, CPU fp32 (litgpt style)."""
import pytest
import torch

from models.forward import RunOptions
from tests.helpers import ours_from_hf, tiny_hf

FAMILIES = ["llama", "llama_tied", "mistral", "qwen2", "gemma3"]
TOL = 1e-5


@pytest.fixture(scope="module", params=FAMILIES)
def pair(request):
    hf = tiny_hf(request.param)
    return request.param, hf, ours_from_hf(hf)


def test_prefill_logits_match(pair):
    kind, hf, ours = pair
    ids = torch.randint(0, 97, (2, 23), generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        ref = hf(ids).logits
        out = ours(ids)
    assert (out - ref).abs().max().item() <= TOL


@pytest.mark.parametrize("impl", ["eager", "sdpa", "tiled"])
def test_step_by_step_decode_matches(pair, impl):
    """Prompt prefill, then one token at a time through our KV cache, against transformers'
    full forward over the same sequence (longer than the Mistral/Gemma windows)."""
    kind, hf, ours = pair
    ids = torch.randint(0, 97, (1, 20), generator=torch.Generator().manual_seed(2))
    with torch.no_grad():
        ref = hf(ids).logits[0]
        cache = ours.new_cache(max_len=20)
        opts = RunOptions(attn_impl=impl, block_q=4, block_k=4)
        rows = [ours(ids[:, :8], cache=cache, options=opts)[0]]
        for t in range(8, 20):
            rows.append(ours(ids[:, t:t + 1], cache=cache, options=opts)[0])
    out = torch.cat(rows)
    assert cache.pos == 20
    assert (out - ref).abs().max().item() <= TOL


def test_hf_decode_with_its_cache_matches_ours(pair):
    """transformers' own incremental decode (its DynamicCache) against our cached decode."""
    kind, hf, ours = pair
    ids = torch.randint(0, 97, (1, 16), generator=torch.Generator().manual_seed(3))
    with torch.no_grad():
        out_hf = hf(ids[:, :10], use_cache=True)
        past, ref = out_hf.past_key_values, [out_hf.logits[0]]
        for t in range(10, 16):
            o = hf(ids[:, t:t + 1], past_key_values=past, use_cache=True)
            past = o.past_key_values
            ref.append(o.logits[0])
        cache = ours.new_cache(max_len=16)
        mine = [ours(ids[:, :10], cache=cache)[0]] + [ours(ids[:, t:t + 1], cache=cache)[0] for t in range(10, 16)]
    assert (torch.cat(mine) - torch.cat(ref)).abs().max().item() <= TOL


def test_loader_rejects_unmapped_and_missing_tensors():
    from models.loading import CheckpointLoadError, load_state, model_from_config
    from models.config import config_from_hf
    hf = tiny_hf("llama")
    state = {k: v.clone() for k, v in hf.state_dict().items()}
    config = config_from_hf(hf.config.to_dict())
    extra = dict(state, **{"model.layers.0.self_attn.extra.weight": torch.zeros(3)})
    with pytest.raises(CheckpointLoadError, match="do not map"):
        load_state(model_from_config(config), extra)
    missing = dict(state)
    del missing["model.layers.2.mlp.down_proj.weight"]
    with pytest.raises(CheckpointLoadError, match="lacks tensor 'model.layers.2.mlp.down_proj.weight'"):
        load_state(model_from_config(config), missing)
    wrong = dict(state, **{"model.norm.weight": torch.ones(65)})
    with pytest.raises(CheckpointLoadError, match="shape"):
        load_state(model_from_config(config), wrong)


def test_unsupported_architecture_is_refused():
    from models.config import UnsupportedModelError, config_from_hf
    with pytest.raises(UnsupportedModelError, match="unsupported architecture 'GPT2LMHeadModel'"):
        config_from_hf({"architectures": ["GPT2LMHeadModel"], "model_type": "gpt2"})


def test_recording_points_reassemble_the_residual_stream(pair):
    """attn_out + mlp_out added to the previous residual give the next one: the named points
    are the real intermediate tensors, and every declared point is recorded."""
    from models.forward import POINTS, Recorder
    kind, hf, ours = pair
    ids = torch.randint(0, 97, (1, 9), generator=torch.Generator().manual_seed(8))
    rec = Recorder([p for p in POINTS if p != "tile_trace"])
    with torch.no_grad():
        ours(ids, recorder=rec)
    for point in POINTS:
        if point != "tile_trace":
            assert (point, 1) in rec.records or point == "embed", point
    rebuilt = rec.get("resid", 0) + rec.get("attn_out", 1) + rec.get("mlp_out", 1)
    assert (rebuilt - rec.get("resid", 1)).abs().max() <= 1e-5
