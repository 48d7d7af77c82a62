"""The static decode step (models.compiled): the same family modules with fixed shapes, run
eagerly and through torch.compile, must reproduce the eager engine for every family, every
cache layout (full, sliding ring that wraps, sinks+window) and a sink logit; generation through
it must yield the same tokens and telemetry."""
import pytest
import torch

from models.attention import MaskSpec
from models.compiled import StaticDecoder
from models.forward import RunOptions
from models.generate import SamplingParams, full_forward_logits, generate
from tests.helpers import ours_from_hf, tiny_hf

N_PROMPT, N_TOTAL = 9, 30  # the windows (5, 7) and sinks+window (3 + 5) are all exceeded


@pytest.fixture(scope="module")
def tiny():
    return {kind: ours_from_hf(tiny_hf(kind)) for kind in ("llama", "mistral", "qwen2", "gemma3")}


def static_decode_logits(model, decoder, ids):
    """Eager prefill of N_PROMPT tokens, then one static step per remaining token; returns the
    logits of positions N_PROMPT-1 .. N_TOTAL-1 (each predicting the next token) and the cache."""
    with torch.inference_mode():
        cache = decoder.new_cache(N_TOTAL)
        rows = [model(ids[:, :N_PROMPT], cache=cache, options=decoder.options)[0, -1]]
        for i in range(N_PROMPT, N_TOTAL):
            rows.append(decoder.step(int(ids[0, i]), cache)[0, -1])
    return torch.stack(rows), cache


def sequence(seed=4):
    return torch.randint(0, 97, (1, N_TOTAL), generator=torch.Generator().manual_seed(seed))


OPTIONS = {"default": RunOptions(), "window 6": RunOptions(mask=MaskSpec(window=6)),
           "sinks 3 + window 5": RunOptions(mask=MaskSpec(window=5, sinks=3)),
           "sink logit": RunOptions(sink_logit=0.7)}


@pytest.mark.parametrize("kind", ["llama", "mistral", "qwen2", "gemma3"])
@pytest.mark.parametrize("name", list(OPTIONS))
def test_static_step_equals_the_full_forward(tiny, kind, name):
    model, opts = tiny[kind], OPTIONS[name]
    ids = sequence()
    ref = full_forward_logits(model, ids[0].tolist(), opts)[N_PROMPT - 1:]
    out, cache = static_decode_logits(model, StaticDecoder(model, opts, compile=False), ids)
    assert (out - ref).abs().max().item() <= 1e-5
    assert cache.pos == N_TOTAL
    # the Python-side bookkeeping agrees with what the buffers hold
    for layer in cache.layers:
        assert layer.length == min(N_TOTAL, layer.capacity)
        held = layer.positions().tolist()
        assert held == sorted(held) and held[-1] == N_TOTAL - 1 and len(held) == layer.length
        if layer.kind == "sinks+window":
            assert held[:3] == [0, 1, 2]


@pytest.mark.parametrize("kind,name", [("mistral", "sinks 3 + window 5"), ("gemma3", "default")])
def test_compiled_step_equals_the_eager_engine(tiny, kind, name):
    """torch.compile(fullgraph=True) of the step: any graph break would raise here."""
    model, opts = tiny[kind], OPTIONS[name]
    ids = sequence(5)
    ref = full_forward_logits(model, ids[0].tolist(), opts)[N_PROMPT - 1:]
    decoder = StaticDecoder(model, opts, compile=True)
    out, _ = static_decode_logits(model, decoder, ids)
    assert (out - ref).abs().max().item() <= 1e-5
    # a second run with a fresh cache of the same capacity reuses the graph and agrees again
    again, _ = static_decode_logits(model, decoder, ids)
    assert torch.equal(out, again)


def test_autotuned_step_equals_the_eager_engine(tiny):
    """autotune: frozen weights and Inductor's own GEMV kernels timed against ATen's."""
    model = tiny["gemma3"]
    ids = sequence(6)
    ref = full_forward_logits(model, ids[0].tolist())[N_PROMPT - 1:]
    out, _ = static_decode_logits(model, StaticDecoder(model, autotune=True), ids)
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
