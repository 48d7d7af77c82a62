"""The fused decode step (engine.fused + engine/kernels/fused_decode.cpp): one C++
call per token must reproduce the eager engine for every family, every cache layout (full,
sliding ring that wraps, sinks+window) and a sink logit, leave the engine's KVCache exactly as
the engine would, and generate the same tokens with the same telemetry. Its shared library is
loaded only from a private folder and only with the digest recorded when it was built."""
import os
import stat

import pytest
import torch

import engine.fused as fused
import engine.native as native
from engine.static import StaticDecoder
from models.forward import RunOptions
from engine.fused import FusedDecoder
from models.generate import SamplingParams, full_forward_logits, generate
from tests.helpers import (N_PROMPT, assert_cache_bookkeeping, decode_options, decode_sequence,
                           decoder_logits)

OPTIONS = decode_options()


@pytest.mark.parametrize("kind", ["llama", "mistral", "qwen2", "gemma3"])
@pytest.mark.parametrize("name", list(OPTIONS))
def test_fused_step_equals_the_full_forward(tiny, kind, name):
    model, opts = tiny[kind], OPTIONS[name]
    ids = decode_sequence()
    ref = full_forward_logits(model, ids[0].tolist(), opts)[N_PROMPT - 1:]
    out, cache = decoder_logits(model, FusedDecoder(model, opts), ids)
    assert (out - ref).abs().max().item() <= 1e-5
    assert_cache_bookkeeping(cache)


@pytest.mark.parametrize("name", ["default", "sinks 3 + window 5"])
def test_fused_step_leaves_the_cache_the_engine_leaves(tiny, name):
    """Same keys, values and slot positions in every layer as the eager engine's own decode."""
    model, opts = tiny["gemma3"], OPTIONS[name]
    ids = decode_sequence(7)
    _, mine = decoder_logits(model, FusedDecoder(model, opts), ids)
    with torch.inference_mode():
        theirs = model.new_cache(ids.shape[1], options=opts)
        model(ids[:, :N_PROMPT], cache=theirs, options=opts)
        for i in range(N_PROMPT, ids.shape[1]):
            model(ids[:, i:i + 1], cache=theirs, options=opts)
    for a, b in zip(mine.layers, theirs.layers):
        assert torch.equal(a.slot_pos, b.slot_pos)
        assert (a.k - b.k).abs().max().item() <= 1e-5 and (a.v - b.v).abs().max().item() <= 1e-5
    assert mine.lengths() == theirs.lengths() and mine.pos == theirs.pos


@pytest.mark.parametrize("threads", [1, 3])
def test_fused_step_with_other_thread_counts(tiny, threads):
    """The kernel splits rows and heads by the thread count torch is set to: 1 thread does
    everything, 3 threads get uneven shares (4 heads, 2 KV heads, 64-wide matrices)."""
    model, opts = tiny["qwen2"], OPTIONS["window 6"]
    ids = decode_sequence(8)
    ref = full_forward_logits(model, ids[0].tolist(), opts)[N_PROMPT - 1:]
    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        out, _ = decoder_logits(model, FusedDecoder(model, opts), ids)
    finally:
        torch.set_num_threads(before)
    assert (out - ref).abs().max().item() <= 1e-5



def build_kernel():
    """The fused step's library, compiled if this machine has none yet."""
    return native.build(fused.SOURCE, "fused decode")

def test_generate_through_the_fused_decoder_yields_the_same_steps(tiny):
    model = tiny["gemma3"]
    params = SamplingParams(max_new_tokens=20)
    prompt = [3, 1, 4, 1, 5, 9]
    eager = list(generate(model, prompt, params, eos_ids=[], keep_logits=True))
    mine = list(generate(model, prompt, params, eos_ids=[], keep_logits=True, decoder=FusedDecoder(model)))
    assert [s.token_id for s in mine] == [s.token_id for s in eager]
    for a, b in zip(mine, eager):
        assert (a.position, a.phase, a.tokens_processed, a.finished) == (b.position, b.phase, b.tokens_processed, b.finished)
        assert a.cache_lengths == b.cache_lengths and a.cache_bytes == b.cache_bytes
        assert (a.logits - b.logits).abs().max().item() <= 1e-5
        # the kernel scores only visible slots: here every slot the engine attends over
        assert a.score_entries == b.score_entries


def test_sampling_through_the_fused_decoder_is_reproducible(tiny):
    model = tiny["llama"]
    params = SamplingParams(max_new_tokens=12, temperature=0.9, top_p=0.9, seed=3)
    eager = [s.token_id for s in generate(model, [7, 8, 9], params, eos_ids=[])]
    mine = [s.token_id for s in generate(model, [7, 8, 9], params, eos_ids=[], decoder=FusedDecoder(model))]
    assert mine == eager


def test_bad_uses_are_refused_with_a_clear_message(tiny):
    model = tiny["llama"]
    with pytest.raises(ValueError, match="replaces SDPA"):
        FusedDecoder(model, RunOptions(attn_impl="eager"))
    with pytest.raises(ValueError, match="float32"):
        FusedDecoder(tiny_bf16(model))
    decoder = FusedDecoder(model)
    with pytest.raises(ValueError, match="batch 1"):
        decoder.new_cache(8, batch=2)
    with pytest.raises(ValueError, match="own model"):
        next(generate(tiny["qwen2"], [1, 2], decoder=decoder))
    with torch.inference_mode():
        cache = decoder.new_cache(4)
        model(torch.tensor([[1, 2, 3]]), cache=cache, options=decoder.options)
        with pytest.raises(ValueError, match="outside the vocabulary"):
            decoder.step(10_000, cache)
        assert cache.pos == 3                      # a refused step changes nothing
        decoder.step(4, cache)
        with pytest.raises(ValueError, match="KV cache full"):
            decoder.step(5, cache)
        with pytest.raises(ValueError, match="another model"):
            decoder.step(5, tiny["gemma3"].new_cache(8))
    assert cache.pos == 4 and cache.lengths() == [4] * model.config.n_layers


def tiny_bf16(model):
    import copy
    return copy.deepcopy(model).to(torch.bfloat16)


def test_kernel_is_built_once_per_machine(tmp_path, monkeypatch):
    monkeypatch.setenv("EXPLORER_CACHE", str(tmp_path))
    first = build_kernel()
    assert first.parent == tmp_path / "kernels" and first.suffix == ".so"
    stamp = os.stat(first).st_mtime_ns
    assert build_kernel() == first and os.stat(first).st_mtime_ns == stamp  # not rebuilt
    # the library and its digest, no temporary left
    assert sorted(p.name for p in first.parent.iterdir()) == [first.name, first.name + ".sha256"]
    assert stat.S_IMODE(os.stat(first.parent).st_mode) == 0o700
    native.check_kernel(first)                                                 # loadable


def test_kernel_is_refused_unless_private_and_as_built(tmp_path, monkeypatch):
    """Write access to the kernels folder must not mean running code in this process: a
    library whose bytes changed, a folder others may write to, or one another user owns is
    refused before ctypes loads anything."""
    monkeypatch.setenv("EXPLORER_CACHE", str(tmp_path))
    library = build_kernel()
    original = library.read_bytes()
    library.write_bytes(original + b"\0")                                    # tampered with
    with pytest.raises(native.KernelRefused, match="sha256 mismatch"):
        native.check_kernel(library)
    library.write_bytes(original)
    native.check_kernel(library)
    (library.parent / (library.name + ".sha256")).unlink()                   # no digest
    with pytest.raises(native.KernelRefused, match="no digest"):
        native.check_kernel(library)
    assert build_kernel() == library                                   # rebuilt, recorded
    native.check_kernel(library)
    os.chmod(library.parent, 0o770)                                          # group-writable
    with pytest.raises(native.KernelRefused, match="written by other users"):
        native.check_kernel(library)
    with pytest.raises(native.KernelRefused, match="written by other users"):
        build_kernel()
    os.chmod(library.parent, 0o700)
    monkeypatch.setattr(native.os, "getuid", lambda: os.stat(library).st_uid + 1)  # someone else's
    with pytest.raises(native.KernelRefused, match="belongs to another user"):
        native.check_kernel(library)
    monkeypatch.undo()
    monkeypatch.setenv("EXPLORER_CACHE", str(tmp_path / "elsewhere"))
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "kernels").symlink_to(library.parent)           # a link to it
    with pytest.raises(native.KernelRefused, match="symbolic link"):
        build_kernel()


def test_a_family_without_a_kernel_layout_is_refused(tiny):
    """The fused step reads the family the model class declares; a family it has no layout
    for is refused in plain words, not guessed from the blocks' attributes."""
    model = tiny["llama"]
    assert FusedDecoder(model).model is model
    other = type("OtherForCausalLM", (type(model),), {"family": "other"})
    renamed = other.__new__(other)
    renamed.__dict__ = model.__dict__
    with pytest.raises(ValueError, match="no kernel for the 'other' family"):
        FusedDecoder(renamed)


def test_without_a_compiler_the_error_says_what_to_do(tmp_path, monkeypatch):
    monkeypatch.setenv("EXPLORER_CACHE", str(tmp_path))
    monkeypatch.setattr(native, "compiler", lambda: None)
    with pytest.raises(RuntimeError, match="needs a C.. compiler"):
        build_kernel()
    monkeypatch.setattr(native, "compiler", lambda: "/bin/false")
    with pytest.raises(RuntimeError, match="building the fused decode kernel failed"):
        build_kernel()
    assert not any((tmp_path / "kernels").iterdir())                         # nothing half-built


def test_fused_and_static_steps_agree(tiny):
    """Both fast paths start from the same eager prefill and keep the same cache layout."""
    model, opts = tiny["mistral"], OPTIONS["sinks 3 + window 5"]
    ids = decode_sequence(9)
    a, _ = decoder_logits(model, FusedDecoder(model, opts), ids)
    b, _ = decoder_logits(model, StaticDecoder(model, opts, compile=False), ids)
    assert (a - b).abs().max().item() <= 1e-5
