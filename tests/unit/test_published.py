"""The published configurations (explorer/published.py) are typed once: the KV-cache
calculator, the MLA comparison and the MoE parameter count all read DeepSeek-V3 from the one
entry, so a change to it reaches all three."""
from explorer import published
from explorer.architecture import mla
from explorer.generate import shapes
from explorer.moe import params


def deepseek_as_read() -> tuple[int, int, int]:
    """(the calculator's elements per token and layer, the MLA comparison's bytes per token,
    the MoE count's total) of DeepSeek-V3."""
    row = next(s for s in shapes.published_shapes() if s.name == "DeepSeek-V3")
    count = next(c for c in params.published_counts() if c.name == "DeepSeek-V3")
    return row.elements_per_token_layer(), mla.run_cache(tokens=4).latent_bytes_per_token, count.total


def test_the_three_users_read_deepseek_v3_from_one_entry(monkeypatch):
    elements, latent_bytes, total = deepseek_as_read()
    assert (elements, latent_bytes) == (512 + 64, (512 + 64) * 61 * 2)
    monkeypatch.setitem(published.DEEPSEEK_V3["config"], "kv_lora_rank", 256)
    # a latent of 256: the cache holds 256 numbers fewer, and each layer's kv down-projection,
    # its norm and its up-projection (to 128 heads of k_nope 128 + v 128) shrink with it
    assert deepseek_as_read() == (256 + 64, (256 + 64) * 61 * 2,
                                  total - 61 * 256 * (7168 + 1 + 128 * (128 + 128)))


def test_the_calculator_cites_each_release_with_its_layout():
    sources = {s.name: s.source for s in shapes.SHAPES}
    assert sources["Llama-2-7B"] == "meta-llama/Llama-2-7b-hf"
    assert sources["Mistral 7B"] == "mistralai/Mistral-7B-v0.1 (sliding_window 4096)"
    assert sources["Gemma 3 27B"] == "google/gemma-3-27b (52 local : 10 global, window 1024)"
    assert sources["DeepSeek-V3"] == "deepseek-ai/DeepSeek-V3 (MLA: latent 512 + RoPE key 64)"
