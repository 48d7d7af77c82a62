"""The GGUF's own codes as a decode precision ("gguf", issue 30): the blocks read back out of a
GGUF give exactly the weights gguf-py dequantizes; a checkpoint's codes give back its fp32
weights or are refused; the kernel's product equals its arithmetic written out in torch (codes
times scale plus offset; the input in two int8 digits per block of 16, 15 bits of the block's
largest value); a fused or batched decode step through the codes matches the fp32 engine.

The price against fp32: the weights are the fp32 checkpoint's own, so only the input's rounding
counts, <= max|x| / 65024 of each block of 16 (half a step of 1/32512). Over the tiny models'
15 products, errors adding at worst, that is < 15 x 2^-15 of the logits' scale; the bound
checked is 1e-3, which also holds the summation order's 1e-5.
"""
import numpy as np
import pytest
import torch

from explorer.checkpoints import gguf_codes
from models.code_format import CODE_BLOCK, CODE_SUFFIXES
from engine import quantized
from engine.batched import BatchedDecoder
from engine.fused import FusedDecoder
from models.generate import full_forward_logits
from models.layers import Linear
from models.loading import read_codes
from tests.helpers import N_PROMPT, batched_logits, decode_sequence, decoder_logits
from tests.unit.test_fused import OPTIONS
from tests.unit.test_precision import _engine_steps

PATHS = [False, True]   # portable: the SIMD path (where this CPU has it), the portable loops


# ----------------------------------------------------------------------- reading the GGUF
@pytest.mark.parametrize("kind", sorted(gguf_codes.FORMATS))
def test_each_format_reads_back_what_gguf_py_dequantizes(kind):
    """Random blocks of each format (fp16 scales kept finite): scale * code + offset equals
    gguf-py's own dequantization bit for bit, codes within [-128, 127]."""
    import gguf

    per, size, _ = gguf_codes.FORMATS[kind]
    rng = np.random.default_rng(0)
    rows, cols = 3, 2 * 256
    raw = rng.integers(0, 256, size=(rows * cols // per, size), dtype=np.uint8)
    # the fp16 fields: finite, modest values (random bytes could be NaN or inf)
    halves = {"Q8_0": [0], "Q5_0": [0], "Q4_1": [0, 2], "Q4_K": [0, 2], "Q6_K": [208]}[kind]
    for at in halves:
        raw[:, at:at + 2] = rng.uniform(-0.1, 0.1, size=len(raw)).astype(np.float16).view(np.uint8).reshape(-1, 2)
    codes, scales, offsets = gguf_codes.tensor_codes(kind, raw, rows, cols)
    assert codes.min() >= -128 and codes.max() <= 127
    ours = (codes.reshape(rows, -1, CODE_BLOCK) * scales[..., None] + offsets[..., None]).reshape(rows, cols)
    theirs = gguf.quants.dequantize(raw.reshape(rows, -1), gguf.GGMLQuantizationType[kind])
    np.testing.assert_array_equal(ours.astype(np.float32), theirs.reshape(rows, cols))


def test_llama_rows_are_unpermuted_as_transformers_does():
    from transformers.modeling_gguf_pytorch_utils import LlamaTensorProcessor

    rows = np.arange(24 * 3).reshape(24, 3)
    expected = LlamaTensorProcessor()._reverse_permute_weights(rows, 4, 4)
    np.testing.assert_array_equal(gguf_codes.unpermute_rows(rows, 4), expected)


def test_a_format_without_codes_is_refused():
    with pytest.raises(ValueError, match="no integer codes"):
        gguf_codes.tensor_codes("F16", np.zeros((2, 64), np.uint8), 2, 64)
    with pytest.raises(ValueError, match="do not make"):
        gguf_codes.tensor_codes("Q8_0", np.zeros((3, 34), np.uint8), 2, 64)


# ---------------------------------------------------------------------------- the product
def _random_codes(rows: int, cols: int, seed: int = 0, run: int = CODE_BLOCK):
    """Codes with a scale and an offset per `run` along a row, written (as the file keeps
    them) per block of CODE_BLOCK: run 32 repeats each pair's, as Q8_0 or Q4_K do."""
    g = torch.Generator().manual_seed(seed)
    codes = torch.randint(0, 256, (rows, cols), generator=g, dtype=torch.int16).to(torch.uint8)
    scales = torch.rand(rows, cols // run, generator=g) * 0.01
    offsets = (torch.rand(rows, cols // run, generator=g) - 0.5) * 0.2
    per = run // CODE_BLOCK
    return codes, scales.repeat_interleave(per, dim=1), offsets.repeat_interleave(per, dim=1)


def _dequantize(codes, scales, offsets):
    rows, cols = codes.shape
    c = codes.to(torch.float32).sub(128).reshape(rows, -1, CODE_BLOCK)
    return (c * scales[..., None] + offsets[..., None]).reshape(rows, cols)


def _digits(x: torch.Tensor, block: int) -> torch.Tensor:
    """The gguf path's input: blocks of the matrix's, step max|x| / 32512, rounded half to even."""
    blocks = x.reshape(*x.shape[:-1], -1, block)
    amax = blocks.abs().amax(-1, keepdim=True)
    inv = torch.where(amax > 0, 32512.0 / amax, torch.zeros_like(amax))
    return (torch.round(blocks * inv) * (amax / 32512.0)).reshape(x.shape)


class Reference:
    """The product a gguf QuantWeight computes, written in torch."""

    def __init__(self, qw: quantized.QuantWeight):
        self.w, self.block = qw.dequantize(), qw.block

    def __call__(self, x, bias=None):
        return torch.nn.functional.linear(_digits(x.float(), self.block), self.w, bias)


@pytest.mark.parametrize("portable", PATHS)
@pytest.mark.parametrize("with_offsets", [True, False])    # Q4_K / Q4_1, or Q8_0 / Q5_0 / Q6_K
@pytest.mark.parametrize("run", [16, 32])                  # Q6_K's runs, or the others'
def test_product_equals_the_codes_written_out(portable, with_offsets, run):
    codes, scales, offsets = _random_codes(70, 96, run=run)  # 70 rows: a ragged last tile
    if not with_offsets:
        offsets = torch.zeros_like(offsets)
    g = torch.Generator().manual_seed(1)
    x, b = torch.randn(5, 96, generator=g), torch.randn(70, generator=g)
    x[0, :16] = 0.0                                          # an all-zero block of the input
    qw = quantized.QuantWeight.from_codes(codes, scales, offsets)
    assert qw.block == run
    assert torch.equal(qw.dequantize(), _dequantize(codes, scales, offsets))
    out, ref = qw(x, b, portable=portable), Reference(qw)(x, b)
    assert (out - ref).abs().max().item() <= 1e-5 * ref.abs().max().item()
    exact = torch.nn.functional.linear(x, _dequantize(codes, scales, offsets), b)
    assert ((out - exact).abs().max() / exact.abs().max()).item() <= 1e-4
    # a byte a code, an fp32 scale and offset a block (no offsets where all are 0); 70 rows
    # padded to 80
    assert qw.nbytes == 80 * 96 + (2 if with_offsets else 1) * 80 * (96 // run) * 4
    assert (qw.offsets is None) == (not with_offsets)


def test_packed_layout_is_the_one_the_kernel_reads():
    codes, scales, offsets = _random_codes(20, 64, seed=3)
    qw = quantized.QuantWeight.from_codes(codes, scales, offsets)
    r, k = torch.meshgrid(torch.arange(32), torch.arange(64), indexing="ij")
    index = (((r // 16 * 4 + k // 16) * 4 + k % 16 // 4) * 16 + r % 16) * 4 + k % 4
    read = qw.data[index.reshape(-1)].reshape(32, 64)
    assert torch.equal(read[:20], codes) and (read[20:] == 128).all()     # padded rows: code 0
    rows, blocks = torch.meshgrid(torch.arange(32), torch.arange(4), indexing="ij")
    at = ((rows // 16 * 4 + blocks) * 16 + rows % 16).reshape(-1)
    assert torch.equal(qw.scales[at].reshape(32, 4)[:20], scales)
    assert torch.equal(qw.offsets[at].reshape(32, 4)[:20], offsets)
    assert torch.equal(qw.codes().short() + 128, codes.short())
    # runs of 32: the same codes' layout, one scale and offset per block of 32
    codes, scales, offsets = _random_codes(20, 64, seed=3, run=32)
    qw = quantized.QuantWeight.from_codes(codes, scales, offsets)
    assert qw.block == 32 and torch.equal(qw.data[index.reshape(-1)].reshape(32, 64)[:20], codes)
    rows, blocks = torch.meshgrid(torch.arange(32), torch.arange(2), indexing="ij")
    at = ((rows // 16 * 2 + blocks) * 16 + rows % 16).reshape(-1)
    assert torch.equal(qw.scales[at].reshape(32, 2)[:20], scales[:, 0::2])
    assert torch.equal(qw.offsets[at].reshape(32, 2)[:20], offsets[:, 0::2])


def test_bad_codes_get_a_clear_message():
    codes, scales, offsets = _random_codes(4, 32)
    with pytest.raises(ValueError, match="uint8"):
        quantized.QuantWeight.from_codes(codes.to(torch.int16), scales, offsets)
    with pytest.raises(ValueError, match="scales and offsets"):
        quantized.QuantWeight.from_codes(codes, scales[:, :1], offsets)
    with pytest.raises(ValueError, match="the checkpoint's own codes"):
        quantized.QuantWeight(torch.randn(4, 32), "gguf")


# ---------------------------------------------------------- a model with codes, end to end
def _with_codes(model, folder, seed=0):
    """Give every matrix of `model` random codes, set its weights to their dequantized values,
    and write the codes file the loader would find (under the Hugging Face names)."""
    from safetensors.torch import save_file

    from models.code_format import CODES_FILE
    from models.loading import FAMILIES, source_names

    _, key_map = FAMILIES[model.config.family]
    keys = key_map(model.config)
    names = {m: n for n, m in model.named_modules()}
    head = "embed.weight" if model.config.tie_embeddings else "lm_head.weight"
    matrices = [(keys[names[m] + ".weight"], m.weight) for m in model.modules() if isinstance(m, Linear)]
    matrices.append((keys[head], model.lm_head_weight()))
    tensors = {}
    with torch.no_grad():
        for i, (sources, weight) in enumerate(matrices):
            parts = source_names(sources)
            config = model.config
            q, kv = config.n_heads * config.head_dim, config.n_kv_heads * config.head_dim
            # the Hugging Face matrices the fused one is made of: q, k, v; gate, up; or one
            sizes = [q, kv, kv] if len(parts) == 3 else [weight.shape[0] // len(parts)] * len(parts)
            # every other matrix in runs of 32 (blocks of 32 in the copy): a step mixes both
            run = 32 if i % 2 and weight.shape[1] % 32 == 0 else CODE_BLOCK
            codes, scales, offsets = _random_codes(weight.shape[0], weight.shape[1], seed + i, run)
            scales *= 0.05   # |w| <= 0.07: weights of the tiny models' own size
            offsets *= 0.1
            weight.copy_(_dequantize(codes, scales, offsets))
            r0 = 0
            for part, n in zip(parts, sizes):
                for suffix, t in zip(CODE_SUFFIXES, (codes, scales, offsets)):
                    tensors[part + suffix] = t[r0:r0 + n].contiguous()
                r0 += n
    path = folder / CODES_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    save_file(tensors, str(path))
    model.codes_file = path
    model.__dict__.pop("_weight_copies", None)
    return model


@pytest.fixture
def coded(tiny, tmp_path):
    from tests.helpers import ours_from_hf, tiny_hf

    def make(kind):
        model = ours_from_hf(tiny_hf(kind))
        return _with_codes(model, tmp_path / kind)
    return make


def test_read_codes_gives_every_matrix_or_refuses(coded, tmp_path):
    model = coded("llama")
    found = read_codes(model)
    linears = [m for m in model.modules() if isinstance(m, Linear)]
    assert set(found) == set(linears) | {model}
    for module, (codes, scales, offsets) in found.items():
        weight = module.lm_head_weight() if module is model else module.weight
        assert torch.allclose(_dequantize(codes, scales, offsets), weight, rtol=0, atol=1e-7)
    with torch.no_grad():
        linears[0].weight[0, 0] += 0.01                       # the weights are not the codes'
    with pytest.raises(ValueError, match="do not give back its weights"):
        read_codes(model)
    model.codes_file = tmp_path / "absent.safetensors"
    with pytest.raises(ValueError, match="holds no GGUF codes"):
        read_codes(model)


@pytest.mark.parametrize("kind", ["llama", "qwen2", "gemma3"])
@pytest.mark.parametrize("portable", PATHS)
def test_fused_step_through_the_codes(coded, kind, portable):
    model, opts = coded(kind), OPTIONS["default"]
    ids = decode_sequence()
    out, _ = decoder_logits(model, FusedDecoder(model, opts, weights="gguf", portable=portable), ids)
    table = {k: Reference(v) for k, v in quantized.weights_of(model, "gguf").table.items()}
    same = _engine_steps(model, opts, ids, table)
    # the input's rounding is as small as the summation order's differences here: the step
    # comes as close to the fp32 engine as to the engine with the same products (measured
    # 2e-5 to 1.6e-4 of the logits' scale for both; the tiny Gemma's 6 layers the most)
    assert (out - same).abs().max().item() <= 1e-3 * same.abs().max().item()
    fp32 = full_forward_logits(model, ids[0].tolist(), opts)[N_PROMPT - 1:]
    # the bound the Generate tab states for the step against models/ (1e-3)
    assert ((out - fp32).abs().max() / fp32.abs().max()).item() <= quantized.MODELS_BOUND["gguf"]


def test_batched_steps_through_the_codes(coded):
    model, opts = coded("llama"), OPTIONS["default"]
    ids = [decode_sequence(4), decode_sequence(5)]
    decoder = BatchedDecoder(model, solo=None, weights="gguf")
    for seq, out in zip(ids, batched_logits(decoder, ids, opts)):
        fp32 = full_forward_logits(model, seq[0].tolist(), opts)[N_PROMPT - 1:]
        assert ((out - fp32).abs().max() / fp32.abs().max()).item() <= quantized.MODELS_BOUND["gguf"]
    assert decoder.pack()[model].weights == "gguf"


def test_a_model_without_codes_cannot_take_gguf(tiny):
    model = tiny["llama"]
    with pytest.raises(ValueError, match="holds no GGUF codes"):
        FusedDecoder(model, weights="gguf")


