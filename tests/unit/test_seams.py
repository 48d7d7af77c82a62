"""The two seams models/ defines for the engine (models/README.md): an attention backend chosen
by name, and a weight provider that hands each matrix product its weights; and the promise
they keep: a mask kind defined once in MaskSpec.predicate reaches every engine path."""
from __future__ import annotations

import dataclasses
import threading

import pytest
import torch
import torch.nn.functional as F

from engine.batched import BatchedDecoder
from engine.fused import FusedDecoder
from engine.static import StaticDecoder
from models.attention import MaskSpec, and_
from models.forward import ATTENTION_BACKENDS, RunOptions, register_attention, textbook_attention
from models.generate import full_forward_logits
from models.layers import Linear, weight_provider
from tests.helpers import N_PROMPT, N_TOTAL, batched_logits, decode_sequence, decoder_logits


def test_a_backend_is_chosen_by_its_name(tiny):
    model = tiny["llama"]
    ids = decode_sequence()[:, :8]
    calls = []

    def counting(ctx, layer, q, k, v, sink_logit=None):
        calls.append(layer)
        named = ctx.options
        ctx.options = dataclasses.replace(named, attn_impl="sdpa")   # the textbook's SDPA path
        try:
            return textbook_attention(ctx, layer, q, k, v, sink_logit)
        finally:
            ctx.options = named

    register_attention("counting", counting)
    try:
        with torch.inference_mode():
            out = model(ids, options=RunOptions(attn_impl="counting"))
            ref = model(ids, options=RunOptions(attn_impl="sdpa"))
        assert calls == list(range(model.config.n_layers)) and torch.equal(out, ref)
        with pytest.raises(ValueError, match="already registered"):
            register_attention("counting", lambda *a: None)
        with pytest.raises(ValueError, match="unknown attention implementation 'nope'"):
            model(ids, options=RunOptions(attn_impl="nope"))
    finally:
        del ATTENTION_BACKENDS["counting"]
    assert {"eager", "sdpa", "tiled", "per_run", "pooled"} <= set(ATTENTION_BACKENDS)


def test_a_weight_provider_computes_the_products_it_holds_on_its_thread_only():
    torch.manual_seed(0)
    held, other = Linear(8, 4), Linear(8, 4)
    x = torch.randn(3, 8)
    doubled = {held: lambda x, bias: 2 * F.linear(x, held.weight, bias)}
    seen = {}
    inside = threading.Event()
    done = threading.Event()

    def elsewhere():
        inside.wait(10)
        seen["other thread"] = held(x)
        done.set()

    thread = threading.Thread(target=elsewhere)
    thread.start()
    with torch.no_grad(), weight_provider(doubled):
        inside.set()
        assert done.wait(10)
        assert torch.allclose(held(x), 2 * F.linear(x, held.weight, held.bias))
        assert torch.equal(other(x), F.linear(x, other.weight, other.bias))   # not held: its own
    thread.join()
    assert torch.equal(seen["other thread"], F.linear(x, held.weight, held.bias).detach())
    assert torch.equal(held(x), F.linear(x, held.weight, held.bias))          # outside: its own


def test_a_mask_kind_defined_once_reaches_every_engine_path(tiny, monkeypatch):
    """A new term in MaskSpec.predicate (here: keys at positions 1 mod 3 hidden, except a query's
    own) and nothing else changed: the static, fused, fused batched and pooled steps all give
    the eager forward's logits under it, so none of them holds a copy of the predicates (the
    C++ kernels receive the mask from Python)."""
    original = MaskSpec.predicate

    def with_a_new_kind(self):
        return and_(original(self), lambda q, k: (k % 3 != 1) | (k == q))

    monkeypatch.setattr(MaskSpec, "predicate", with_a_new_kind)
    model, opts = tiny["llama"], RunOptions()
    seqs = [decode_sequence(4), decode_sequence(5)]
    expected = [full_forward_logits(model, s[0].tolist(), opts)[N_PROMPT - 1:] for s in seqs]
    plain = full_forward_logits(model, seqs[0][0].tolist(), opts)[N_PROMPT - 1:]
    monkeypatch.setattr(MaskSpec, "predicate", original)
    assert (plain - full_forward_logits(model, seqs[0][0].tolist(), opts)[N_PROMPT - 1:]).abs().max() > 1e-3
    monkeypatch.setattr(MaskSpec, "predicate", with_a_new_kind)
    paths = {"static": decoder_logits(model, StaticDecoder(model, opts, compile=False), seqs[0])[0]}
    try:
        paths["fused"] = decoder_logits(model, FusedDecoder(model, opts), seqs[0])[0]
        paths["fused batch"] = batched_logits(BatchedDecoder(model), seqs, opts)[0]
    except (RuntimeError, OSError):   # no C++ compiler here: the Python paths still hold it
        pass
    paths["pooled"] = batched_logits(BatchedDecoder(model, fused_batch=False, solo=None), seqs, opts)[0]
    assert N_TOTAL - N_PROMPT + 1 == expected[0].shape[0]
    for name, got in paths.items():
        assert (got - expected[0]).abs().max().item() <= 1e-4 * expected[0].abs().max().item(), name


def test_the_one_compiled_copy_of_the_predicates_knows_every_mask_term():
    """The Flash tab's compiled kernel (engine/kernels/flash_tiled.cpp) keeps its own copy of
    the predicates: handing it an n x n visibility would take the memory its figure shows it does
    not need. Its parameters come from MaskSpec's fields in one place (explorer/flash/compiled.py)
    and tests/test_flash.py holds it to the eager path for every mask kind; this fails as soon
    as MaskSpec gains a term the kernel has not been taught."""
    from dataclasses import fields

    from explorer.flash.compiled import KERNEL_TERMS
    assert {f.name for f in fields(MaskSpec)} == set(KERNEL_TERMS)
