"""KV caches stored in bf16 or int8 (engine/kv_quant.py): every layout keeps LayerKV's positions
and lengths, what a forward attends over is exactly the codes decoded, and the bytes are the
stored tensors' (C3's formula with the element size, plus int8's scales)."""
from __future__ import annotations

import pytest
import torch

from models.attention import MaskSpec
from engine.kv_quant import KV_FORMATS, QuantLayerKV, check_format, quant_cache


def feed(model, cache, ids, chunks):
    """ids through the engine's forward in the given chunk sizes, then one token at a time."""
    out, at = [], 0
    for n in chunks:
        out.append(model(torch.tensor([ids[at:at + n]]), cache=cache))
        at += n
    while at < len(ids):
        out.append(model(torch.tensor([ids[at:at + 1]]), cache=cache))
        at += 1
    return torch.cat(out, dim=1)


@pytest.mark.parametrize("family", ["llama", "gemma3"])
@pytest.mark.parametrize("kv_format", ["bf16", "int8"])
def test_layouts_positions_and_codes_match_the_fp32_cache(tiny, family, kv_format):
    model = tiny[family]
    config = model.config
    # a window and sinks on every layer exercise the ring's chunk and one-token paths
    for mask in (None, MaskSpec(window=6, sinks=2)):
        masks = model.layer_masks(mask)
        ids = torch.randint(0, config.vocab_size, (23,), generator=torch.Generator().manual_seed(3)).tolist()
        with torch.inference_mode():
            ref_cache = quant_cache(config, masks, 32, "fp32")
            cache = quant_cache(config, masks, 32, kv_format)
            ref = feed(model, ref_cache, ids, (9, 5))
            got = feed(model, cache, ids, (9, 5))
        assert cache.pos == ref_cache.pos == len(ids)
        for mine, theirs in zip(cache.layers, ref_cache.layers):
            assert isinstance(mine, QuantLayerKV) and mine.kind == theirs.kind
            assert torch.equal(mine.slot_pos, theirs.slot_pos) and mine.length == theirs.length
        # layer 0's keys and values come from the embeddings alone: the same inputs, so its
        # stored codes are exactly the fp32 cache's values encoded
        first, ref_first = cache.layers[0], ref_cache.layers[0]
        for codes, scale, values in ((first.k, first.k_scale, ref_first.k), (first.v, first.v_scale, ref_first.v)):
            filled = ref_first.slot_pos >= 0
            want_codes, want_scale = first._encode(values)
            assert torch.equal(codes[:, :, filled], want_codes[:, :, filled])
            if scale is not None:
                assert torch.equal(scale[:, :, filled], want_scale[:, :, filled])
        assert torch.isfinite(got).all() and got.shape == ref.shape
        assert 0 < (got - ref).abs().max() < 1.0


@pytest.mark.parametrize("kv_format, element, scales", [("fp32", 4, 0), ("bf16", 2, 0), ("int8", 1, 4)])
def test_bytes_are_the_stored_tensors(tiny, kv_format, element, scales):
    model = tiny["llama"]
    config = model.config
    cache = quant_cache(config, model.layer_masks(), 16, kv_format)
    with torch.inference_mode():
        model(torch.tensor([[1, 2, 3, 4, 5]]), cache=cache)
    per_token = config.kv_bytes_per_token(element) + 2 * config.n_layers * config.n_kv_heads * scales
    assert sum(cache.used_bytes()) == 5 * per_token
    assert sum(cache.allocated_bytes()) == 16 * per_token


def test_int8_rounding_is_within_half_a_scale():
    layer = QuantLayerKV(1, 2, 8, 4, None, MaskSpec(), "int8")
    x = torch.randn(1, 2, 3, 8, generator=torch.Generator().manual_seed(0))
    codes, scale = layer._encode(x)
    assert (layer._decode(codes, scale) - x).abs().le(scale / 2 + 1e-7).all()
    assert codes.abs().amax() == 127


def test_formats_checked_and_pooled_moves_refused():
    assert check_format("int8") == "int8" and KV_FORMATS == ("fp32", "bf16", "int8")
    with pytest.raises(ValueError):
        check_format("fp8")
    layer = QuantLayerKV(1, 2, 8, 4, None, MaskSpec(), "bf16")
    with pytest.raises(ValueError):
        layer.move_to(torch.zeros(1, 2, 4, 8), torch.zeros(1, 2, 4, 8), torch.zeros(4, dtype=torch.long))
