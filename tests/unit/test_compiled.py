"""The static decode step (engine.static): the same family modules with fixed shapes, run
eagerly and through torch.compile, must reproduce the eager engine for every family, every
cache layout (full, sliding ring that wraps, sinks+window) and a sink logit; generation through
it must yield the same tokens and telemetry."""
import pytest
import torch

from engine.static import StaticDecoder
from models.forward import RunOptions
from models.generate import SamplingParams, full_forward_logits, generate
from tests.helpers import (N_PROMPT, assert_cache_bookkeeping, decode_options, decode_sequence,
                           decoder_logits)

OPTIONS = decode_options()


@pytest.mark.parametrize("kind", ["llama", "mistral", "qwen2", "gemma3"])
@pytest.mark.parametrize("name", list(OPTIONS))
def test_static_step_equals_the_full_forward(tiny, kind, name):
    model, opts = tiny[kind], OPTIONS[name]
    ids = decode_sequence()
    ref = full_forward_logits(model, ids[0].tolist(), opts)[N_PROMPT - 1:]
    out, cache = decoder_logits(model, StaticDecoder(model, opts, compile=False), ids)
    assert (out - ref).abs().max().item() <= 1e-5
    assert_cache_bookkeeping(cache)


@pytest.mark.slow
@pytest.mark.parametrize("kind,name", [("mistral", "sinks 3 + window 5"), ("gemma3", "default")])
def test_compiled_step_equals_the_eager_engine(tiny, kind, name):
    """torch.compile(fullgraph=True) of the step: any graph break would raise here."""
    model, opts = tiny[kind], OPTIONS[name]
    ids = decode_sequence(5)
    ref = full_forward_logits(model, ids[0].tolist(), opts)[N_PROMPT - 1:]
    decoder = StaticDecoder(model, opts, compile=True)
    out, _ = decoder_logits(model, decoder, ids)
    assert (out - ref).abs().max().item() <= 1e-5
    # a second run with a fresh cache of the same capacity reuses the graph and agrees again
    again, _ = decoder_logits(model, decoder, ids)
    assert torch.equal(out, again)


@pytest.mark.slow
def test_autotuned_step_equals_the_eager_engine(tiny):
    """autotune: frozen weights and Inductor's own GEMV kernels timed against ATen's."""
    model = tiny["gemma3"]
    ids = decode_sequence(6)
    ref = full_forward_logits(model, ids[0].tolist())[N_PROMPT - 1:]
    out, _ = decoder_logits(model, StaticDecoder(model, autotune=True), ids)
    assert (out - ref).abs().max().item() <= 1e-5


@pytest.mark.parametrize("compile", [False, True])
def test_generate_through_the_decoder_yields_the_same_steps(tiny, compile):
    model = tiny["gemma3"]
    params = SamplingParams(max_new_tokens=20)
    eager = list(generate(model, [3, 1, 4, 1, 5, 9], params, eos_ids=[], keep_logits=True))
    static = list(generate(model, [3, 1, 4, 1, 5, 9], params, eos_ids=[], keep_logits=True,
                           decoder=StaticDecoder(model, compile=compile)))
    assert [s.token_id for s in static] == [s.token_id for s in eager]
    for a, b in zip(static, eager):
        assert (a.position, a.phase, a.tokens_processed, a.finished) == (b.position, b.phase, b.tokens_processed, b.finished)
        assert a.cache_lengths == b.cache_lengths and a.cache_bytes == b.cache_bytes
        assert (a.logits - b.logits).abs().max().item() <= 1e-5
    # a static step scores every slot of every layer (the masked ones too), and says so
    capacity = [min(64, 5) if t == "sliding_attention" else 64 for t in model.config.layer_types]
    assert static[1].score_entries == model.config.n_heads * sum(capacity)


def test_sampling_through_the_decoder_is_reproducible(tiny):
    model = tiny["llama"]
    params = SamplingParams(max_new_tokens=12, temperature=0.9, top_p=0.9, seed=3)
    eager = [s.token_id for s in generate(model, [7, 8, 9], params, eos_ids=[])]
    static = [s.token_id for s in generate(model, [7, 8, 9], params, eos_ids=[],
                                           decoder=StaticDecoder(model, compile=False))]
    assert static == eager


def test_bad_uses_are_refused_with_a_clear_message(tiny):
    model = tiny["llama"]
    with pytest.raises(ValueError, match="uses SDPA"):
        StaticDecoder(model, RunOptions(attn_impl="eager"))
    decoder = StaticDecoder(model, compile=False, capacity_step=4)
    with pytest.raises(ValueError, match="own model"):
        next(generate(tiny["qwen2"], [1, 2], decoder=decoder))
    with pytest.raises(ValueError, match="own model"):
        next(generate(model, [1, 2], use_cache=False, decoder=decoder))
    with pytest.raises(ValueError, match="run options"):
        next(generate(model, [1, 2], options=RunOptions(sink_logit=1.0), decoder=decoder))
    with torch.inference_mode():
        cache = decoder.new_cache(3)             # rounded up to 4 slots
        model(torch.tensor([[1, 2, 3]]), cache=cache, options=decoder.options)
        decoder.step(4, cache)
        with pytest.raises(ValueError, match="KV cache full"):
            decoder.step(5, cache)
    assert cache.pos == 4 and cache.lengths() == [4] * model.config.n_layers  # untouched
