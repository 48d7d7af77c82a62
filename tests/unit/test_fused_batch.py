"""The fused batched decode step (engine.fused_batch): one C++ call decodes a token of
each of several runs, and every run gets exactly what the solo fused step gives it alone -- its
logits, its greedy tokens, its query-key scores, its cache's keys, values and slot positions --
whatever its options (cache policy, sink logit, RoPE base), its position, its weights' format,
and wherever its cache lives (its own buffers or a row of the pooled store, read in place)."""
from __future__ import annotations

import ctypes

import pytest
import torch

import engine.fused_batch as fused_batch
from models.attention import MaskSpec
from models.decoder import decode_options
from engine.batched import BatchedDecoder
from engine.fused import FusedDecoder
from engine.fused_batch import FusedBatch
from engine.quantized import simd_paths
from models.forward import RunOptions
from tests.helpers import decode_options as option_table

OPTIONS = list(option_table().values()) + [RunOptions(rope_theta=5000.0)]


def prompt(n: int, seed: int) -> list:
    return torch.randint(0, 97, (n,), generator=torch.Generator().manual_seed(seed)).tolist()


def solo_and_batch(model, options, lengths, steps, weights="fp32", portable=False, caches=None,
                   rooms=None):
    """Each run prefilled twice (n tokens), then decoded `steps` greedy steps alone by its fused
    decoder and together by FusedBatch; returns (largest logit difference, tokens alone, tokens
    together, scores alone, scores together, caches alone, caches together). rooms: each run's
    max_len (default: the longest prompt + steps + 1)."""
    decoders = [FusedDecoder(model, decode_options(o), weights=weights, portable=portable) for o in options]
    batch = FusedBatch()
    with torch.inference_mode():
        rooms = rooms or [max(lengths) + steps + 1] * len(decoders)
        alone = [d.new_cache(n) for d, n in zip(decoders, rooms)]
        together = caches or [d.new_cache(n) for d, n in zip(decoders, rooms)]
        first = []
        for i, (d, n) in enumerate(zip(decoders, lengths)):
            first.append(int(d.prefill(prompt(n, i), alone[i])[0, -1].argmax()))
            d.prefill(prompt(n, i), together[i])
        mine, theirs = list(first), list(first)
        worst, tokens, my_tokens, scores, my_scores = 0.0, [], [], [], []
        for _ in range(steps):
            ref = torch.stack([d.step(t, c)[0, 0] for d, t, c in zip(decoders, theirs, alone)])
            scores.append([d.scores_per_step(c) for d, c in zip(decoders, alone)])
            out, got = batch.step(mine, together, decoders)
            my_scores.append(got)
            worst = max(worst, (out[:, 0] - ref).abs().max().item())
            theirs, mine = ref.argmax(-1).tolist(), out[:, 0].argmax(-1).tolist()
            tokens.append(theirs)
            my_tokens.append(mine)
    return worst, tokens, my_tokens, scores, my_scores, alone, together


def assert_same_caches(alone, together):
    for a, b in zip(alone, together):
        assert a.pos == b.pos and a.lengths() == b.lengths() and a.used_bytes() == b.used_bytes()
        for la, lb in zip(a.layers, b.layers):
            assert torch.equal(la.slot_pos, lb.slot_pos)
            assert torch.equal(la.k, lb.k) and torch.equal(la.v, lb.v)


@pytest.mark.parametrize("kind", ["llama", "mistral", "qwen2", "gemma3"])
def test_a_batch_decodes_each_run_as_the_solo_fused_step(tiny, kind):
    """Five runs, each with its own options (full, window ring that wraps, sinks + window, a sink
    logit, another RoPE base) and prompt length: logits, tokens, scores and caches are the solo
    step's, to the bit (each run's sums are taken in the same order)."""
    worst, tokens, mine, scores, my_scores, alone, together = solo_and_batch(
        tiny[kind], OPTIONS, [3, 9, 5, 12, 7], steps=14)
    assert worst == 0.0
    assert mine == tokens and my_scores == scores
    assert_same_caches(alone, together)


@pytest.mark.parametrize("weights", ["bf16", "int8"])
@pytest.mark.parametrize("portable", [False, True], ids=["simd", "portable"])
def test_quantized_weights_batched_as_alone(tiny, weights, portable):
    """bf16 and int8 copies, SIMD and portable loops, up to 6 runs (more than the 4 inputs a
    pass over a tile takes): each run's logits are the solo step's in the same precision."""
    if not portable and not simd_paths()[weights]:
        pytest.skip(f"no SIMD path for {weights} here")
    for kind in ("llama", "gemma3"):
        options = (OPTIONS + OPTIONS)[:6]
        worst, tokens, mine, scores, my_scores, alone, together = solo_and_batch(
            tiny[kind], options, [3, 9, 5, 12, 7, 4], steps=8, weights=weights, portable=portable)
        assert worst == 0.0 and mine == tokens and my_scores == scores
        assert_same_caches(alone, together)


def test_runs_in_pooled_rows_are_read_and_written_in_place(tiny):
    """Runs whose caches are rows of the pooled store (heads a row's width apart, not their own
    capacity) decode in place: nothing is copied, the store holds their new keys, and each run
    gets what it gets alone."""
    model = tiny["gemma3"]
    decoder = BatchedDecoder(model, fused_batch=False)
    options = OPTIONS[:3]
    rooms = [30, 26, 22]
    runs = [decoder.start(n, decode_options(o)) for n, o in zip(rooms, options)]
    decoder.pool.attach(runs, decoder._moved)
    caches = [run.cache for run in runs]
    # the full layers of the shorter runs: heads the store's width apart, not their capacity
    full = [i for i, layer in enumerate(caches[0].layers) if layer.window is None]
    assert full and all(caches[2].layers[i].k.stride(1) == 30 * model.config.head_dim != caches[2].layers[i].k[0, 0].numel()
                        for i in full)
    storage = [c.layers[0].k.untyped_storage().data_ptr() for c in caches]
    worst, tokens, mine, *_, alone, together = solo_and_batch(model, options, [3, 9, 5], 12, caches=caches,
                                                              rooms=rooms)
    assert worst == 0.0 and mine == tokens
    assert [c.layers[0].k.untyped_storage().data_ptr() for c in caches] == storage
    assert all(c.layers[0].k.untyped_storage().data_ptr() == decoder.pool.k[0].untyped_storage().data_ptr()
               for c in caches)
    assert_same_caches(alone, together)


def test_batched_decoder_takes_the_fused_batch_and_falls_back(tiny, monkeypatch):
    """BatchedDecoder steps two or more runs through one fused_decode_batch call; a run whose
    options the fused step lacks (eager attention) sends the step to the engine's forward."""
    model = tiny["llama"]
    calls = []
    step = FusedBatch.step

    def spy(self, tokens, caches, decoders):
        calls.append(len(caches))
        return step(self, tokens, caches, decoders)
    monkeypatch.setattr(FusedBatch, "step", spy)
    decoder = BatchedDecoder(model)
    runs = [decoder.start(20, RunOptions()), decoder.start(20, RunOptions(mask=MaskSpec(window=4)))]
    with torch.inference_mode():
        for i, run in enumerate(runs):
            decoder.prefill(prompt(4 + i, i), run)
        logits = decoder.step_many([1, 2], runs)
    assert calls == [2] and logits.shape[:2] == (2, 1)
    assert all(run.row is None for run in runs)   # no pool: each cache stayed where it was
    assert runs[0].scores == model.config.n_heads * 5 * model.config.n_layers
    eager = decoder.start(20, RunOptions(attn_impl="eager"))
    with torch.inference_mode():
        decoder.prefill(prompt(3, 9), eager)
        decoder.step_many([3, 4, 5], runs + [eager])
    assert calls == [2]


def test_bad_arguments_are_refused_and_change_nothing(tiny):
    model = tiny["llama"]
    decoders = [FusedDecoder(model), FusedDecoder(model)]
    batch = FusedBatch()
    with torch.inference_mode():
        caches = [d.new_cache(6) for d in decoders]
        for d, c in zip(decoders, caches):
            d.prefill([1, 2, 3], c)
        with pytest.raises(ValueError, match="outside the vocabulary"):
            batch.step([1, 10_000], caches, decoders)
        with pytest.raises(ValueError, match="its own cache"):
            batch.step([1, 2], [caches[0], caches[0]], decoders)
        with pytest.raises(ValueError, match="another model"):
            batch.step([1, 2], [caches[0], tiny["gemma3"].new_cache(8)], decoders)
        with pytest.raises(ValueError, match="one model"):
            batch.step([1, 2], caches, [decoders[0], FusedDecoder(tiny["qwen2"])])
        assert [c.pos for c in caches] == [3, 3]
        for _ in range(3):
            batch.step([1, 2], caches, decoders)
        with pytest.raises(ValueError, match="KV cache full"):
            batch.step([1, 2], caches, decoders)
        assert [c.pos for c in caches] == [6, 6]
        # the kernel checks too: a slot outside a layer's capacity is refused
        lib = batch.lib
        bound, masks = fused_batch._bind(caches[0], model.config)   # masks: kept alive for the call
        runs = (fused_batch._RUNS * 1)(ctypes.cast(bound, fused_batch._RUNS))
        slots = torch.full((1, model.config.n_layers), 99, dtype=torch.int64)
        one = torch.zeros(1, dtype=torch.int64)
        status = lib.fused_decode_batch(ctypes.byref(decoders[0]._model), 1, one.data_ptr(), one.data_ptr(),
                                        slots.data_ptr(), runs, (fused_batch._P * 1)(),
                                        torch.zeros(2, 1, 2, model.config.head_dim).data_ptr(),
                                        torch.empty(1, model.config.vocab_size).data_ptr(), one.data_ptr())
        assert status == -1


