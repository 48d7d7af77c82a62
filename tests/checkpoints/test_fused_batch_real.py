"""The fused batched step on the real checkpoints in their decode precision (the tiny models:
tests/unit/test_fused_batch.py)."""
from __future__ import annotations

import pytest

from models.attention import MaskSpec
from models.forward import RunOptions
from tests.unit.test_fused_batch import assert_same_caches, solo_and_batch


@pytest.mark.slow
@pytest.mark.parametrize("name", ["smollm2-135m-instruct", "gemma-3-270m"])
def test_real_checkpoints_in_their_decode_precision(runtime, name):
    """Both real checkpoints in the precision the app decodes them in (gguf codes where this CPU
    has VNNI), five runs of mixed options and prompt lengths: the solo step's logits to the bit,
    the same greedy tokens and scores."""
    model = runtime.get(name).model
    options = [RunOptions(), RunOptions(mask=MaskSpec(window=16)), RunOptions(mask=MaskSpec(window=8, sinks=4)),
               RunOptions(), RunOptions(sink_logit=0.5)]
    from engine.quantized import configured_weights
    worst, tokens, mine, scores, my_scores, alone, together = solo_and_batch(
        model, options, [12, 30, 20, 5, 9], steps=6, weights=configured_weights(model))
    assert worst == 0.0 and mine == tokens and my_scores == scores
    assert_same_caches(alone, together)
