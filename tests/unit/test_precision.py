"""bf16 and int8 weights in the decode steps (engine.quantized, fused_decode.cpp).

Two kinds of proof, for both product paths (the SIMD one this CPU has, and the portable one):
- exactness of the kernel: its products equal the format's own arithmetic written out in
  torch (the dequantized weights; the input rounded to bf16 on the AVX512_BF16 path, quantized
  in blocks of 32 for int8) up to the summation order (1e-5 of the output's scale), and a fused
  or batched decode step equals the engine's forward run with those same products;
- the price of the format against the fp32 engine, within a bound stated from its rounding:
  bf16 keeps 8 bits of mantissa (relative rounding <= 2^-9 = 0.2% per weight and per input on
  the bf16 path); int8 blocks round a weight by <= max|w| / 254 of its block (0.4%) and the
  input the same way. Over the tiny models' 3 layers of 4 products and a head (15 rounded
  products, errors adding at worst) that is <= 15 x 0.2% = 3% of the logits' scale for bf16 and
  <= 15 x 2 x 0.4% = 12% for int8; the bounds checked are these.
"""
import pytest
import torch

from engine import quantized
from engine.batched import BatchedDecoder
from engine.fused import FusedDecoder
from models.forward import RunOptions
from models.generate import full_forward_logits
from models.layers import Linear, weight_provider
from tests.helpers import N_PROMPT, N_TOTAL, batched_logits, decode_sequence, decoder_logits
from tests.unit.test_fused import OPTIONS

PATHS = [False, True]   # portable: the SIMD path (where this CPU has it), the portable loops
BOUND = {w: quantized.MODELS_BOUND[w] for w in ("bf16", "int8")}   # the bounds the app states


def _quantize_input(x: torch.Tensor) -> torch.Tensor:
    """The int8 path's input: blocks of 32, scale max|x| / 127, rounded half to even."""
    blocks = x.reshape(*x.shape[:-1], -1, quantized.QBLOCK)
    amax = blocks.abs().amax(-1, keepdim=True)
    inv = torch.where(amax > 0, 127.0 / amax, torch.zeros_like(amax))
    return (torch.round(blocks * inv) * (amax / 127.0)).reshape(x.shape)


class Reference:
    """The product a QuantWeight computes, written in torch: what the kernel must equal."""

    def __init__(self, qw: quantized.QuantWeight, portable: bool):
        self.w = qw.dequantize()
        simd = not portable and quantized.simd_paths()[qw.weights]
        self.prep = {"bf16": (lambda x: x.to(torch.bfloat16).float()) if simd else (lambda x: x),
                     "int8": _quantize_input}[qw.weights]

    def __call__(self, x, bias=None):
        return torch.nn.functional.linear(self.prep(x.float()), self.w, bias)


def _reference_table(model, weights, portable):
    return {k: Reference(v, portable) for k, v in quantized.weights_of(model, weights).table.items()}


@pytest.mark.parametrize("weights", ["bf16", "int8"])
@pytest.mark.parametrize("portable", PATHS)
def test_product_equals_the_format_written_out(weights, portable):
    g = torch.Generator().manual_seed(0)
    w, b = torch.randn(70, 96, generator=g), torch.randn(70, generator=g)   # 70: a ragged last chunk
    x = torch.randn(5, 96, generator=g)
    qw = quantized.QuantWeight(w, weights)
    out, ref = qw(x, b, portable=portable), Reference(qw, portable)(x, b)
    assert (out - ref).abs().max().item() <= 1e-5 * ref.abs().max().item()
    # the format's own price against fp32, within its rounding
    exact = torch.nn.functional.linear(x, w, b)
    rel = ((out - exact).abs().max() / exact.abs().max()).item()
    assert 0 < rel <= {"bf16": 2 ** -7, "int8": 2 / 127}[weights]


def test_int8_blocks_round_within_half_a_step():
    w = torch.randn(8, 64, generator=torch.Generator().manual_seed(1))
    w[0, :32] = 0.0                                             # an all-zero block stays zero
    qw = quantized.QuantWeight(w, "int8")
    step = qw.block_scales().repeat_interleave(quantized.QBLOCK, dim=1)
    assert ((qw.dequantize() - w).abs() <= step / 2 + 1e-7).all()
    assert qw.codes().abs().max().item() == 127 and qw.dequantize()[0, :32].abs().sum() == 0
    # 8 rows padded to one tile of 16: a byte a weight and an fp32 scale a block
    assert qw.nbytes == 16 * 64 + 16 * 2 * 4


@pytest.mark.parametrize("weights", ["bf16", "int8"])
def test_packed_layout_is_the_one_the_kernel_reads(weights):
    """The tiles of 16 rows, written out element by element from the layout's formula
    (fused_decode.cpp), hold the rounded weights; the padded rows are zero."""
    g = torch.Generator().manual_seed(2)
    w = torch.randn(20, 64, generator=g)          # 20 rows: a second tile with 12 padded rows
    qw = quantized.QuantWeight(w, weights)
    r, k = torch.meshgrid(torch.arange(32), torch.arange(64), indexing="ij")
    if weights == "bf16":
        index = ((r // 16 * 32 + k // 2) * 16 + r % 16) * 2 + k % 2
        read = qw.data[index.reshape(-1)].float().reshape(32, 64)
        assert torch.equal(read[:20], w.to(torch.bfloat16).float())
    else:
        index = (((r // 16 * 2 + k // 32) * 8 + k % 32 // 4) * 16 + r % 16) * 4 + k % 4
        codes = qw.data[index.reshape(-1)].to(torch.int16).reshape(32, 64) - 128
        rows, blocks = torch.meshgrid(torch.arange(32), torch.arange(2), indexing="ij")
        scales = qw.scales[((rows // 16 * 2 + blocks) * 16 + rows % 16).reshape(-1)].reshape(32, 2)
        read = codes.float() * scales.repeat_interleave(32, dim=1)
        assert torch.equal(read[:20], qw.dequantize()) and torch.equal(codes[:20], qw.codes().short())
        assert ((read[:20] - w).abs() <= scales[:20].repeat_interleave(32, dim=1) / 2 + 1e-7).all()
    assert read[20:].abs().sum() == 0


def test_bad_input_gets_a_clear_message():
    with pytest.raises(ValueError, match="multiple of 32"):
        quantized.QuantWeight(torch.randn(4, 40), "int8")
    with pytest.raises(ValueError, match="multiple of 2"):
        quantized.QuantWeight(torch.randn(4, 31), "bf16")
    with pytest.raises(ValueError, match="weights must be one of"):
        quantized.check_weights("fp8")
    with pytest.raises(ValueError, match="input of width"):
        quantized.QuantWeight(torch.randn(4, 32), "bf16")(torch.randn(2, 31))


def test_configured_weights_reads_the_environment(monkeypatch):
    monkeypatch.setenv(quantized.WEIGHTS_ENV, "INT8")
    assert quantized.configured_weights() == "int8"
    monkeypatch.setenv(quantized.WEIGHTS_ENV, "int4")
    with pytest.raises(ValueError, match="EXPLORER_WEIGHTS"):
        quantized.configured_weights()


def test_path_label_follows_the_cpu_flags():
    flags = quantized.cpu_flags()
    simd = quantized.simd_paths()
    assert simd["bf16"] == ("avx512_bf16" in flags) and simd["int8"] == ("avx512_vnni" in flags)
    assert quantized.path_label("int8", portable=True) == "int8 (portable)"
    assert quantized.path_label("bf16", portable=False) == ("bf16 (AVX512_BF16)" if simd["bf16"] else "bf16 (portable)")


def _same_tolerance(weights: str, portable: bool) -> float:
    """How close a whole step comes to the engine run with the same products. Where the input
    of a product is kept in fp32 (the portable bf16 loop) only the summation order differs:
    1e-5. Where it is rounded (bf16 on AVX512_BF16, int8 always), a difference of 1e-7 upstream
    may carry an input element across a rounding boundary, changing it by one step (2^-8 of it
    for bf16, 1/127 of its block's max for int8) in one path and not in the other: the
    products stay exact (test_product_equals_the_format_written_out), the logits may move by
    such a step's consequence, measured <= 0.9% of their scale on the tiny models: 2%."""
    rounds_input = weights == "int8" or (not portable and quantized.simd_paths()[weights])
    return 2e-2 if rounds_input else 1e-5


def _engine_steps(model, opts, ids, table):
    """Eager prefill in fp32, then eager one-token steps with the products of `table`."""
    with torch.inference_mode():
        cache = model.new_cache(N_TOTAL, options=opts)
        rows = [model(ids[:, :N_PROMPT], cache=cache, options=opts)[0, -1]]
        with weight_provider(table):
            for i in range(N_PROMPT, N_TOTAL):
                rows.append(model(ids[:, i:i + 1], cache=cache, options=opts)[0, -1])
    return torch.stack(rows)


@pytest.mark.parametrize("kind", ["llama", "qwen2", "gemma3"])
@pytest.mark.parametrize("weights", ["bf16", "int8"])
@pytest.mark.parametrize("portable", PATHS)
def test_fused_step_in_each_precision(tiny, kind, weights, portable):
    model, opts = tiny[kind], OPTIONS["default"]
    ids = decode_sequence()
    out, _ = decoder_logits(model, FusedDecoder(model, opts, weights=weights, portable=portable), ids)
    same = _engine_steps(model, opts, ids, _reference_table(model, weights, portable))
    assert (out - same).abs().max().item() <= _same_tolerance(weights, portable) * same.abs().max().item()
    fp32 = full_forward_logits(model, ids[0].tolist(), opts)[N_PROMPT - 1:]
    rel = ((out - fp32).abs().max() / fp32.abs().max()).item()
    assert 0 < rel <= BOUND[weights]


@pytest.mark.parametrize("weights", ["bf16", "int8"])
def test_batched_steps_in_each_precision(tiny, weights):
    """Two runs decoding together through the pooled step read the same copies."""
    model, opts = tiny["llama"], OPTIONS["default"]
    ids = [decode_sequence(4), decode_sequence(5)]
    decoder = BatchedDecoder(model, solo=None, weights=weights)
    for seq, out in zip(ids, batched_logits(decoder, ids, opts)):
        same = _engine_steps(model, opts, seq, _reference_table(model, weights, False))
        assert (out - same).abs().max().item() <= _same_tolerance(weights, False) * same.abs().max().item()
    assert isinstance(decoder.pack()[next(m for m in model.modules() if isinstance(m, Linear))],
                      quantized.QuantWeight)


@pytest.mark.parametrize("weights", ["bf16", "int8"])
def test_a_prompt_reads_fp32_weights_in_company_as_alone(tiny, weights):
    """Prompts fed together while others decode (the copies packed) give the logits of each
    prompt fed alone, within fp32's summation order: a prompt is read in fp32 in both cases,
    so its first token does not depend on who else is decoding. A decode token in a step the
    pool cannot take (a sink logit) reads the copies, as the fused step alone does."""
    model = tiny["llama"]
    decoder = BatchedDecoder(model, solo=None, weights=weights)
    assert isinstance(decoder.pack()[model], quantized.QuantWeight)
    prompts = [decode_sequence(4)[0, :N_PROMPT].tolist(), decode_sequence(5)[0, :N_PROMPT].tolist()]
    with torch.inference_mode():
        runs = [decoder.start(N_TOTAL) for _ in prompts]
        together = decoder.forward_many(torch.tensor(prompts), runs)                 # (2, 1, V)
        for row, prompt in zip(together, prompts):
            alone = decoder.prefill(prompt, decoder.start(N_TOTAL))[0]
            assert (row - alone).abs().max().item() <= 1e-5 * alone.abs().max().item()
        opts = RunOptions(sink_logit=1.0)
        sinks = [decoder.start(N_TOTAL, opts) for _ in prompts]
        for run, prompt in zip(sinks, prompts):
            decoder.prefill(prompt, run)
        step = decoder.step_many([7, 9], sinks)
    for row, prompt, token in zip(step, prompts, [7, 9]):
        ids = torch.tensor([prompt + [token]])
        with torch.inference_mode():
            cache = model.new_cache(N_TOTAL, options=opts)
            model(ids[:, :-1], cache=cache, options=opts)
            with weight_provider(_reference_table(model, weights, False)):
                same = model(ids[:, -1:], cache=cache, options=opts)[0, -1]
        assert (row[-1] - same).abs().max().item() <= _same_tolerance(weights, False) * same.abs().max().item()


def test_int8_refuses_widths_it_cannot_block(tiny):
    from tests.helpers import ours_from_hf, tiny_hf
    model = ours_from_hf(tiny_hf("llama", hidden_size=48, num_attention_heads=4, num_key_value_heads=2))
    with pytest.raises(ValueError, match="multiples of 32"):
        FusedDecoder(model, weights="int8")
    assert FusedDecoder(model, weights="bf16").weights == "bf16"


def test_header_says_which_precision_runs(monkeypatch):
    from explorer.runtime import Runtime
    runtime = Runtime(device="cpu")
    monkeypatch.setenv(quantized.WEIGHTS_ENV, "int8")
    assert f"decode weights {quantized.path_label('int8')}" in runtime.device_label
    monkeypatch.setenv(quantized.WEIGHTS_ENV, "fp32")
    assert runtime.device_label.endswith("decode weights fp32")


def test_cli_weights_flag_is_checked():
    from explorer.cli import _parser
    args = _parser().parse_args(["hi", "--weights", "int8"])
    assert args.weights == "int8"
    with pytest.raises(SystemExit):
        _parser().parse_args(["hi", "--weights", "fp8"])
