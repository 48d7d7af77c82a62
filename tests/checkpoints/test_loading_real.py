"""A real model holds its weights once (loading itself: tests/unit/test_loading.py)."""
import sys
import textwrap

import pytest

from tests.helpers import python_output


# In a fresh interpreter: load the real SmolLM2 in fp32 (the dtype its file has, so nothing is
# converted), run one forward so every parameter is read, and print what grew, in MB: the
# process's anonymous memory (RssAnon), its file-backed memory (RssFile), the parameters'
# bytes; then how many safetensors files it still maps.
RSS_PROBE = textwrap.dedent("""
    import gc, torch
    from bench.soak import rss_parts_mb
    from models.loading import load_model
    from explorer.checkpoints import prepare_embedded
    def parts():
        return [int(rss_parts_mb()[k]) for k in ("RssAnon", "RssFile")]
    folder = prepare_embedded("smollm2-135m-instruct")
    anon0, file0 = parts()
    model = load_model(folder, device="cpu", dtype=torch.float32)
    with torch.inference_mode():
        model(torch.tensor([[1, 2, 3]]))
    gc.collect()
    anon, file = parts()
    maps = open("/proc/self/maps").read()
    print(anon - anon0, file - file0, sum(p.nbytes for p in model.parameters()) // 2 ** 20,
          maps.count(".safetensors"))
""")


@pytest.mark.slow
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc/self/status")
def test_real_model_holds_its_weights_once():
    """SmolLM2 in fp32 after a forward: the checkpoint is no longer mapped, and the process
    grew by about the model's bytes (513 MB, fused q/k/v and gate/up included), not by the
    file (513 MB) plus the fused copies (279 MB) that a model of views would hold. RssAnon
    also moves by tens of MB between fresh interpreters (the allocator's reuse), hence the
    margin; RssFile grows only by the libraries a forward loads."""
    anon, file, params, maps = map(int, python_output(RSS_PROBE).split()[-4:])
    assert params >= 500, params                       # SmolLM2 in fp32: 513 MB
    assert maps == 0
    assert params <= anon <= params + 150, (anon, params)
    assert file <= 100, file
