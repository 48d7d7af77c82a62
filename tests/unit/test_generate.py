"""Generation: greedy cached == uncached, seeded sampling reproducible, EOS/limit/stop, bad
parameters refused, counted score entries (C1)."""
import math

import pytest
import torch

from models.generate import SamplingParams, generate, sample_next
from tests.helpers import ours_from_hf, tiny_hf


@pytest.fixture(scope="module")
def model():
    return ours_from_hf(tiny_hf("llama"))


def tokens(steps):
    return [s.token_id for s in steps]


def test_cached_and_uncached_greedy_agree(model):
    params = SamplingParams(max_new_tokens=20)
    cached = list(generate(model, [5, 6, 7], params, eos_ids=[]))
    uncached = list(generate(model, [5, 6, 7], params, use_cache=False, eos_ids=[]))
    assert tokens(cached) == tokens(uncached) and len(cached) == 20
    assert cached[-1].finished == "length"


def test_score_entries_linear_with_cache_quadratic_without(model):
    c = model.config
    params = SamplingParams(max_new_tokens=10)
    cached = list(generate(model, [1, 2, 3, 4], params, eos_ids=[]))
    uncached = list(generate(model, [1, 2, 3, 4], params, use_cache=False, eos_ids=[]))
    heads = c.n_layers * c.n_heads
    for s in cached[1:]:
        assert s.tokens_processed == 1 and s.score_entries == heads * (s.position)
    for s in uncached:
        t = s.position  # sequence length fed this step
        # the causal SDPA kernel computes the lower triangle of the square
        assert s.tokens_processed == t and s.score_entries == heads * t * (t + 1) // 2


def test_seeded_sampling_is_reproducible(model):
    p = SamplingParams(max_new_tokens=15, temperature=1.0, top_k=20, top_p=0.9, seed=123)
    a, b = tokens(generate(model, [3, 4], p, eos_ids=[])), tokens(generate(model, [3, 4], p, eos_ids=[]))
    assert a == b
    c = tokens(generate(model, [3, 4], SamplingParams(max_new_tokens=15, temperature=1.0, seed=7), eos_ids=[]))
    assert c != a


def test_top_k_and_top_p_restrict_support():
    logits = torch.tensor([5.0, 4.0, 3.0, -2.0, -3.0])
    g = torch.Generator().manual_seed(0)
    seen_k = {sample_next(logits, SamplingParams(temperature=5.0, top_k=2), g) for _ in range(200)}
    assert seen_k == {0, 1}
    seen_p = {sample_next(logits, SamplingParams(temperature=1.0, top_p=0.5), g) for _ in range(200)}
    assert seen_p == {0}


def test_stops_at_eos_and_on_request(model):
    first = tokens(generate(model, [1, 2], SamplingParams(max_new_tokens=5), eos_ids=[]))
    steps = list(generate(model, [1, 2], SamplingParams(max_new_tokens=5), eos_ids=[first[1]]))
    assert len(steps) == 2 and steps[-1].finished == "eos"
    calls = []
    stop_after = lambda: len(calls) >= 3  # noqa: E731
    out = []
    for s in generate(model, [1, 2], SamplingParams(max_new_tokens=50), eos_ids=[], should_stop=stop_after):
        calls.append(s)
        out.append(s)
    assert len(out) == 3


@pytest.mark.parametrize("bad", [dict(temperature=math.nan), dict(temperature=math.inf), dict(top_p=0.0),
                                 dict(top_p=float("nan")), dict(top_k=-1), dict(max_new_tokens=0),
                                 dict(temperature=-1.0), dict(max_new_tokens=10**6)])
def test_bad_sampling_parameters(bad):
    with pytest.raises(ValueError):
        SamplingParams(**bad)


def test_empty_and_too_long_prompts(model):
    with pytest.raises(ValueError, match="empty"):
        next(generate(model, [], SamplingParams()))
    with pytest.raises(ValueError, match="exceeds the model's context"):
        next(generate(model, [1] * 250, SamplingParams(max_new_tokens=10)))
