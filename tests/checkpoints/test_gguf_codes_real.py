"""A real checkpoint decodes its own GGUF codes as fp32 does (the codes themselves:
tests/unit/test_gguf_codes.py)."""
import pytest
import torch

from engine import quantized
from engine.fused import FusedDecoder


# ----------------------------------------------------------------- the real checkpoints
@pytest.mark.slow
@pytest.mark.parametrize("name", ["smollm2-135m-instruct", "gemma-3-270m"])
def test_a_real_checkpoint_decodes_its_own_codes_as_fp32_does(runtime, name):
    """The converted folder keeps the GGUF's codes; they give back every fp32 weight (read_codes
    checks each matrix), take 1.5 bytes a weight, and decoding through them picks fp32's token
    at every one of 64 held-out positions."""
    from transformers import AutoTokenizer

    from explorer.checkpoints import prepare_embedded
    from explorer.generate.precision import teacher_forced
    from explorer.texts import long_text
    from models.forward import RunOptions

    model = runtime.get(name).model
    assert "gguf" in quantized.available_weights(model)
    copy = quantized.weights_of(model, "gguf")
    count = sum(q.shape[0] * q.shape[1] for q in copy.table.values())
    assert copy.nbytes <= 1.52 * count                 # tiles of 16 rows pad a few
    ids = AutoTokenizer.from_pretrained(prepare_embedded(name))(long_text()).input_ids[-65:]
    opts = RunOptions(last_logits_only=True)
    with torch.inference_mode():
        fp32 = teacher_forced(FusedDecoder(model, opts, weights="fp32"), ids)
        codes = teacher_forced(FusedDecoder(model, opts, weights="gguf"), ids)
    assert torch.equal(fp32.argmax(-1), codes.argmax(-1))
    assert (codes - fp32).abs().max().item() < 0.1
    scale = fp32.abs().max().item()
    assert (codes - fp32).abs().max().item() <= quantized.MODELS_BOUND["gguf"] * scale
