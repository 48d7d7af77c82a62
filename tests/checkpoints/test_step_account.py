"""One account of the decode step that runs (explorer/generate/step_cost.py): with
EXPLORER_WEIGHTS set to each precision, the bytes the count gives for the matrices are the
bytes of the very tensors the loop's decoder reads (the batched step's table and the fused
step's matrices, the same copies), the roof's peak is the product of that precision, and on
the real checkpoints the served gguf step is counted at its copies' 164.6 MB (not fp32's
538 MB) and moves them at no more than the measured bandwidth (C2's share <= 1)."""
from __future__ import annotations

import ctypes

import pytest
import torch

from explorer.generate import device_roof, roofline, step_cost
from engine import quantized
from engine.batched import BatchedDecoder
from engine.fused import FusedDecoder
from models.layers import Linear

SMALL = device_roof.RoofSettings(bandwidth_bytes=32 << 20, matmul_n=256, repeats=2)


def matrices_read(model, decoder: BatchedDecoder) -> tuple[int, set]:
    """(bytes, data addresses) of the matrices the batched step's products read: the copies in
    its table, or the model's own tensors where it keeps none."""
    table = decoder._weights_table() if decoder.weights != "fp32" else {}
    nbytes, addresses = 0, set()
    keyed = [(m, m.weight) for m in model.modules() if isinstance(m, Linear)]
    keyed.append((model, model.lm_head_weight()))
    for key, weight in keyed:
        copy = table.get(key)
        if copy is None:
            nbytes += weight.numel() * weight.element_size()
            addresses.add(weight.data_ptr())
        else:
            nbytes += copy.nbytes
            addresses.add(copy.data.data_ptr())
    return nbytes, addresses


def fused_addresses(fused: FusedDecoder) -> set:
    """The data addresses of the matrices the fused step's kernel was handed."""
    found = {ctypes.cast(fused._model.lm_head.w, ctypes.c_void_p).value}
    for layer in fused._layers:
        for name in ("wqkv", "wo", "w_gate_up", "w_down"):
            found.add(ctypes.cast(getattr(layer, name).w, ctypes.c_void_p).value)
    return found


@pytest.mark.parametrize("weights", ["fp32", "bf16", "int8"])
def test_counted_bytes_are_the_decoders_own_tensors(tiny, monkeypatch, weights):
    model = tiny["llama"]            # widths 64 and 96: every precision takes them
    monkeypatch.setenv(quantized.WEIGHTS_ENV, weights)
    assert step_cost.served_weights(model) == weights
    decoder = BatchedDecoder(model)
    assert decoder.weights == weights
    shape = step_cost.step_shape(model)
    nbytes, addresses = matrices_read(model, decoder)
    assert shape.weights == weights and shape.matrix_bytes == nbytes
    # the fused step of a run alone reads the same tensors
    assert fused_addresses(FusedDecoder(model, weights=weights)) == addresses
    per_weight = {"fp32": 4.0, "bf16": 2.0, "int8": 1.125}[weights]
    # padding rows of a last tile aside, the bytes a weight of the format
    assert per_weight <= shape.bytes_per_weight < per_weight * 1.2
    # norms and embedding rows are the model's own fp32 tensors whatever the precision
    others = shape.dense_weight_bytes - shape.matrix_bytes
    assert others == step_cost.step_shape(model, "fp32").dense_weight_bytes - \
        step_cost.step_shape(model, "fp32").matrix_bytes
    assert shape.element_bytes == model.new_cache(1).layers[0].k.element_size()


def test_fewer_bytes_move_the_knee_to_smaller_batches(tiny):
    model = tiny["llama"]
    knees = {w: step_cost.crossing_batch(step_cost.step_shape(model, w), 16, 10.0)
             for w in ("fp32", "bf16", "int8")}
    assert knees["fp32"] > knees["bf16"] > knees["int8"]


@pytest.mark.parametrize("weights", ["bf16", "int8", "gguf"])
def test_the_roof_peak_is_the_product_that_runs(weights, monkeypatch):
    monkeypatch.setattr(device_roof, "_CACHE", {})
    roof = device_roof.measure("cpu", torch.float32, 1, settings=SMALL, weights=weights)
    assert roof.weights == weights and roof.product == quantized.path_label(weights)
    assert roof.flops > 0 and roof.ridge == roof.flops / roof.bandwidth
    assert device_roof.cached("cpu", torch.float32, 1, weights) is roof
    assert device_roof.cached("cpu", torch.float32, 1, "fp32") is None    # a key of its own
    with pytest.raises(ValueError, match="CPU"):
        device_roof.measure("meta", torch.float32, weights=weights)


def test_a_roof_of_another_product_is_refused(tiny, monkeypatch):
    model = tiny["llama"]
    monkeypatch.setenv(quantized.WEIGHTS_ENV, "int8")
    roof = device_roof.DeviceRoof("cpu", "float32", 1, 10e9, 50e9, 0.0, 0.0, SMALL, weights="fp32")
    with pytest.raises(ValueError, match="fp32 products for steps on int8"):
        roofline.run(model, list(range(1, 9)), roof, batches=(1, 2), timed_steps=1, threads=1)


# ----- the real checkpoints -------------------------------------------------------------------
@pytest.mark.slow
@pytest.mark.parametrize("weights", ["fp32", "bf16", "int8", "gguf"])
def test_real_step_counts_its_copies_and_stays_under_the_roof(smol, monkeypatch, weights):
    """SmolLM2's step in each precision: the count equals the decoder's tensors (gguf: the
    GGUF's codes at 164.6 MB, not fp32's 538 MB), and its B = 1 step (the fused one) moves its
    counted bytes at no more than the bandwidth measured just before (C2's share <= 1)."""
    from explorer.serving import batch_threads

    model = smol.model
    monkeypatch.setenv(quantized.WEIGHTS_ENV, weights)
    shape = step_cost.step_shape(model)
    nbytes, _ = matrices_read(model, BatchedDecoder(model))
    assert shape.weights == weights and shape.matrix_bytes == nbytes
    expected_mb = {"fp32": 537.9, "bf16": 269.0, "int8": 151.3, "gguf": 164.6}[weights]
    assert shape.matrix_bytes / 1e6 == pytest.approx(expected_mb, abs=0.1)
    threads = batch_threads()
    ids = roofline.prompt_ids(smol.tokenizer, roofline.EVIDENCE_CONTEXT)
    shares = []
    for _ in range(2):   # a second try, on a roof measured afresh, where load changed between
        monkeypatch.setattr(device_roof, "_CACHE", {})
        roof = device_roof.measure(smol.device, smol.dtype, threads, weights=weights)
        result = roofline.run(model, ids, roof, batches=(1, 2), timed_steps=3, threads=threads)
        shares.append(roofline.bandwidth_share(result))
        print(f"\n{weights}: {shape.matrix_bytes / 1e6:.1f} MB, B = 1 {result.step_seconds[0] * 1e3:.2f} ms, "
              f"share {shares[-1]:.2f} of {roof.bandwidth / 1e9:.1f} GB/s, path {result.paths[0]}")
        assert result.shape.weights == weights and result.paths[0] == "fused"
        if shares[-1] <= 1.0:
            break
    assert 0.0 < min(shares) <= 1.0, shares
    assert max(shares) <= roofline.C2_MAX_SHARE   # the board's consistency check, on every try
