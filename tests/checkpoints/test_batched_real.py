"""Batched decoding of the real checkpoints equals decoding each run alone (the tiny random models:
tests/unit/test_batched.py)."""
from __future__ import annotations

import functools

import pytest
import torch

from models.attention import MaskSpec
from engine.batched import BatchedDecoder
from models.forward import RunOptions
from models.generate import SamplingParams, generate
from tests.helpers import run_together
from tests.unit.test_batched import Plan, assert_as_alone, run_batch


# the real checkpoints' logits (magnitude ~10-40) through 18-30 layers: 1e-5 of the largest, a
# few hundred fp32 roundings of difference between two orders of summation
REAL_RTOL = 1e-5


@pytest.fixture(scope="module", params=["smollm2-135m-instruct", "gemma-3-270m"])
def real_model(request):
    from explorer.checkpoints import prepare_embedded
    from models.loading import load_model
    return load_model(prepare_embedded(request.param), device="cpu", dtype=torch.float32)


def test_real_checkpoints_batched_equal_alone(real_model):
    """Both real checkpoints: three runs (full cache, a window, sinks + window) of different
    prompt lengths in one batch, greedy tokens identical to each alone, logits within
    REAL_RTOL of the largest (fp32 logits of magnitude ~10-40: the batched step's products,
    oneDNN's on packed weights, sum in another order than the run alone's)."""
    model = real_model
    vocab = min(model.config.vocab_size, 30000)
    plans = [Plan(torch.randint(100, vocab, (n,), generator=torch.Generator().manual_seed(n)).tolist(),
                  options, n_new=10, join=join)
             for n, options, join in [(12, RunOptions(), 0), (30, RunOptions(mask=MaskSpec(window=16)), 1),
                                      (20, RunOptions(mask=MaskSpec(window=8, sinks=4)), 2)]]
    run_batch(BatchedDecoder(model), plans, chunk=16)
    for plan in plans:
        assert_as_alone(model, plan, rtol=REAL_RTOL)


def test_real_checkpoints_a_shared_prefix_decodes_as_alone(real_model):
    """Both real checkpoints through the shared loop: four runs of one session on one 40-token
    prompt (one feeds it, three copy its keys and values), greedy tokens identical to each
    alone and logits within REAL_RTOL of the largest, as for any batched run."""
    from explorer.serving import Scheduler, Visitor

    model = real_model
    ids = torch.randint(100, 30000, (40,), generator=torch.Generator().manual_seed(40)).tolist()
    sched = Scheduler(model)
    params = SamplingParams(max_new_tokens=8)
    out: dict = {}

    def visit(i):
        out[i] = list(sched.generate(ids, params, eos_ids=[], keep_logits=True,
                                     visitor=Visitor(session="one")))

    run_together(*(functools.partial(visit, i) for i in range(4)), timeout=300)
    alone = list(generate(model, ids, params, eos_ids=[], keep_logits=True))
    assert sorted(s[0].shared_prefix for s in out.values()) == [0, 39, 39, 39]
    for steps in out.values():
        assert [s.token_id for s in steps] == [s.token_id for s in alone]
        worst = max((a.logits - b.logits).abs().max().item() for a, b in zip(steps, alone))
        scale = max(b.logits.abs().max().item() for b in alone)
        assert worst <= REAL_RTOL * scale, (worst, scale)
