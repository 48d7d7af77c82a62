"""torch's process-wide random generator is shared by every thread of the server: nothing the
app runs for a visitor seeds it or reseeds it, and nothing whose result must be reproducible
draws from it (issue 27, finding 12). Weights built "from a seed" come from a generator of
their own (explorer/architecture/seeding.py); an unseeded sampler seeds its own generator."""
from __future__ import annotations

import threading

import pytest
import torch
import torch.nn as nn

from explorer.architecture import mla, norm_placement
from explorer.architecture.seeding import draw_default_init, seeded
from models.generate import SamplingParams, new_generator
from models.mla import MLAForCausalLM


def test_an_unseeded_sampler_leaves_the_shared_generator_alone():
    torch.manual_seed(1234)
    state = torch.get_rng_state()
    first = new_generator(SamplingParams(max_new_tokens=4, temperature=0.8))
    second = new_generator(SamplingParams(max_new_tokens=4, temperature=0.8))
    assert torch.equal(torch.get_rng_state(), state)
    # each run still gets a fresh seed of its own, and a given seed is honoured
    assert first.initial_seed() != second.initial_seed()
    seeded_run = new_generator(SamplingParams(max_new_tokens=4, temperature=0.8, seed=7))
    assert seeded_run.initial_seed() == 7


def _reseed_until(stop: threading.Event) -> None:
    """What another visitor's thread may do at any time: reseed the shared generator, draw."""
    while not stop.is_set():
        new_generator(SamplingParams(max_new_tokens=1, temperature=1.0))
        torch.manual_seed(99)
        torch.rand(64)


def _while_reseeding(fn, repeats: int) -> list:
    stop = threading.Event()
    other = threading.Thread(target=_reseed_until, args=(stop,), daemon=True)
    other.start()
    try:
        return [fn() for _ in range(repeats)]
    finally:
        stop.set()
        other.join()


def _weights(module: nn.Module) -> list[torch.Tensor]:
    return [p.detach().clone() for p in module.parameters()]


@pytest.mark.slow   # ~28 s: builds the modules many times while another thread reseeds
def test_seeded_weights_do_not_change_while_another_thread_reseeds():
    config = norm_placement.StackConfig()
    reference = _weights(norm_placement.Stack(config, 4, "post", 3))
    built = _while_reseeding(lambda: _weights(norm_placement.Stack(config, 4, "post", 3)), 20)
    assert all(all(torch.equal(a, b) for a, b in zip(weights, reference)) for weights in built)

    gradients = norm_placement.run_init(depths=(3,), seed=5)
    again = _while_reseeding(lambda: norm_placement.run_init(depths=(3,), seed=5), 3)
    for result in again:
        for key, norms in gradients.grad_norms.items():
            assert (result.grad_norms[key] == norms).all(), key

    cache = mla.run_cache(seed=2, tokens=8)
    for result in _while_reseeding(lambda: mla.run_cache(seed=2, tokens=8), 5):
        assert (result.tiny_k_error, result.tiny_v_error, result.tiny_absorbed_error) == \
            (cache.tiny_k_error, cache.tiny_v_error, cache.tiny_absorbed_error)


def test_seeded_weights_are_those_manual_seed_gave():
    """The draws are the constructors' own, in their order: the weights equal those of
    torch.manual_seed(seed) + the constructor (what norm_training.json was computed from)."""
    torch.manual_seed(11)
    expected = _weights(MLAForCausalLM(mla.TINY))
    got = _weights(seeded(lambda: MLAForCausalLM(mla.TINY), 11))
    assert len(got) == len(expected) and all(torch.equal(a, b) for a, b in zip(got, expected))

    # the pre-norm stack as its constructor drew it from the shared generator
    config = norm_placement.StackConfig()
    old = norm_placement.Stack(config, 3, "pre", 0)
    torch.manual_seed(11)
    with torch.no_grad():
        for sub in old.modules():
            if isinstance(sub, (nn.Linear, nn.Embedding)):
                sub.reset_parameters()
        for sub in old.modules():
            if isinstance(sub, nn.Linear):
                nn.init.xavier_uniform_(sub.weight)
                nn.init.zeros_(sub.bias)
        nn.init.normal_(old.embed.weight, std=config.d_model ** -0.5)
        nn.init.normal_(old.pos.weight, std=config.d_model ** -0.5)
    new = norm_placement.Stack(config, 3, "pre", 11)
    assert all(torch.equal(a, b) for a, b in zip(_weights(new), _weights(old)))


def test_a_module_whose_initialisation_is_unknown_is_refused():
    class Scaled(nn.Module):
        def __init__(self):
            super().__init__()
            self.scale = nn.Parameter(torch.randn(3))

    try:
        draw_default_init(nn.Sequential(nn.Linear(2, 2), Scaled()), torch.Generator())
    except TypeError as error:
        assert "Scaled" in str(error)
    else:
        raise AssertionError("a parameter drawn from the shared generator went unnoticed")
