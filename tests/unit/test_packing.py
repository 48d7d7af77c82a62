"""Packed weights (engine/packing.py through the weight provider of models/layers.py): a packed
product is an fp32 product and only on its thread; the pooled steps pack the weights until they
are dropped."""
from __future__ import annotations

import threading

import pytest
import torch
import torch.nn.functional as F

import engine.batched as batched
import engine.packing as packing
from engine.batched import BatchedDecoder
from tests.unit.test_batched import prompt


# ----- packed weights (models.layers.weight_provider, engine.packing.pack_model) -------------

needs_packing = pytest.mark.skipif(not __import__("engine.packing", fromlist=["can_pack"]).can_pack(
    torch.zeros(1)), reason="this torch has no oneDNN packing")


@needs_packing
def test_a_packed_product_is_an_fp32_product_and_only_on_its_own_thread():
    """The packed product is fp32 (its error against float64 is of F.linear's order, no bf16 or
    tf32 shortcut), and only the thread inside weight_provider uses it: another thread computing
    at the same moment gets F.linear's exact result."""
    from engine.packing import pack_weight
    from models.layers import Linear, weight_provider

    torch.manual_seed(0)
    layer = Linear(576, 1536, bias=True)
    x = torch.randn(30, 1, 576)
    exact = F.linear(x.double(), layer.weight.double(), layer.bias.double())
    plain = layer(x)
    table = {layer: pack_weight(layer.weight)}
    inside, other = {}, {}
    entered, checked = threading.Event(), threading.Event()

    def elsewhere():
        entered.wait(10)
        other["y"] = layer(x)   # while the main thread is inside weight_provider
        checked.set()

    thread = threading.Thread(target=elsewhere)
    thread.start()
    with torch.inference_mode(), weight_provider(table):
        entered.set()
        inside["y"] = layer(x)
        assert checked.wait(10)
    thread.join()
    scale = exact.abs().max().item()
    assert (inside["y"].double() - exact).abs().max().item() <= 4e-6 * scale
    assert (plain.double() - exact).abs().max().item() <= 4e-6 * scale
    assert not torch.equal(inside["y"], plain)   # the packed product did run (another order)
    assert torch.equal(other["y"], plain)
    assert torch.equal(layer(x), plain)          # outside the block: F.linear again


@needs_packing
def test_pooled_steps_pack_the_weights_until_they_are_dropped(tiny, monkeypatch):
    """The first pooled step packs every Linear of the model and its LM head; the copies are
    kept while runs decode together and after they leave (the next class reuses them) until
    drop_packed, and made again at the next pooled step. A model whose head is larger than
    HEAD_PACK_MAX_BYTES packs nothing; EXPLORER_PACKED=0 (PACKED False) packs nothing."""
    from models.layers import Linear

    model = tiny["llama"]
    linears = [m for m in model.modules() if isinstance(m, Linear)]
    assert len(linears) == 2 * 2 * model.config.n_layers   # q/k/v + o, gate/up + down
    decoder = BatchedDecoder(model, solo=None)
    runs = [decoder.start(16) for _ in range(3)]
    for run in runs:
        decoder.prefill(prompt(4, 1), run)
    decoder.step_many([5, 6, 7], runs)
    table = decoder._packed
    assert set(table) == set(linears) | {model}
    for run in runs:
        decoder.release(run)
    assert decoder._packed is table                  # kept for the next class
    decoder.drop_packed()
    assert decoder._packed is None
    runs = [decoder.start(16) for _ in range(2)]
    for run in runs:
        decoder.prefill(prompt(4, 2), run)
    decoder.step_many([5, 6], runs)
    assert decoder._packed and decoder._packed is not table

    monkeypatch.setattr(packing, "HEAD_PACK_MAX_BYTES", model.lm_head_weight().nbytes - 1)
    assert batched.pack_model(model) == {}   # a head too large: nothing packed
    monkeypatch.setattr(batched, "PACKED", False)
    decoder = BatchedDecoder(model, solo=None)
    runs = [decoder.start(16) for _ in range(2)]
    for run in runs:
        decoder.prefill(prompt(4, 2), run)
    decoder.step_many([5, 6], runs)
    assert decoder._packed is None
