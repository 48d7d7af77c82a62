"""Reading internals through hooks, not subclasses (models.forward): a Recorder's per-point
hooks keep a reduction of what they see, and stop_at_layer runs only the first blocks."""
import pytest
import torch

from models.forward import Recorder, RunOptions

IDS = torch.randint(0, 97, (2, 11), generator=torch.Generator().manual_seed(3))


def test_hooks_keep_what_they_return(tiny):
    """A hook sees the same tensor a plain recording keeps, and what it returns is kept; None
    keeps nothing (here: kv_pos beside the probabilities)."""
    model = tiny["gemma3"]
    plain = Recorder(["attn_probs", "resid"])
    hooked = Recorder(["attn_probs", "resid"], hooks={
        "resid": lambda x, layer: x[:, -1],                                       # (B, d)
        "attn_probs": lambda p, layer: {"first": p[..., 0].mean(-1),              # (B, H)
                                        "layer": layer},
        "kv_pos": lambda pos, layer: None,
    })
    with torch.no_grad():
        a = model(IDS, recorder=plain)
        b = model(IDS, recorder=hooked)
    assert torch.equal(a, b)
    for layer in range(model.config.n_layers):
        assert torch.equal(hooked.get("resid", layer), plain.get("resid", layer)[:, -1])
        kept = hooked.get("attn_probs", layer)
        assert kept["layer"] == layer
        assert torch.equal(kept["first"], plain.get("attn_probs", layer)[..., 0].mean(-1))
        assert ("kv_pos", layer) in plain.records and ("kv_pos", layer) not in hooked.records
    with pytest.raises(ValueError, match="hooks on points not recorded"):
        Recorder(["resid"], hooks={"q": lambda x, layer: x})


@pytest.mark.parametrize("kind", ["llama", "gemma3"])
def test_stop_at_layer_runs_the_first_blocks_only(tiny, kind):
    """stop_at_layer=n returns block n-1's output (the same tensor a full forward records) and
    never reaches block n: a recorder sees nothing there."""
    model = tiny[kind]
    n_layers = model.config.n_layers
    full = Recorder(["resid", "q"])
    opts = RunOptions(attn_impl="eager")
    with torch.no_grad():
        model(IDS, recorder=full, options=opts)
        for n in range(n_layers + 1):
            rec = Recorder(["resid", "q"])
            out = model(IDS, recorder=rec, stop_at_layer=n, options=opts)
            expected = full.get("resid", n - 1) if n else model.embed_tokens(IDS)
            assert out.shape == (2, 11, model.config.d_model) and torch.equal(out, expected)
            assert sorted({layer for _, layer in rec.records}) == list(range(n))
        with pytest.raises(ValueError, match="without a cache"):
            model(IDS[:1], cache=model.new_cache(16), stop_at_layer=1)
        with pytest.raises(ValueError, match="stop_at_layer must be in"):
            model(IDS, stop_at_layer=n_layers + 1)
