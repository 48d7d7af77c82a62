"""Weights in fewer bytes for the CPU decode steps: bf16 and int8 copies of a model's matrices,
the compiled products that read them, and which path the CPU runs.

Why. Decoding one token reads every weight once (claim C2), so at batch 1 and at the small
batches of a class the step's time is the bytes it reads. fp32 is 4 bytes a weight; bf16 is 2
(the upper half of the fp32: 8 bits of mantissa, relative rounding <= 2^-9); int8 here is
Q8_0's layout, blocks of QBLOCK = 32 weights along a row with one fp32 scale each
(1.125 bytes a weight; w = q * scale, q = round(w / scale), scale = max|w| / 127, so a weight's
rounding is <= scale / 2, i.e. <= max|w| / 254 of its block); gguf is the checkpoint's own
GGUF codes (explorer/checkpoints/gguf_codes.py: w = scale * code + offset in blocks of
CBLOCK = 16, or of 32 where each pair of 16 shares its scale and offset, as every format but
Q6_K does: 1.125-1.25 bytes a weight, 1.25-1.5 with offsets), the fp32 checkpoint's weights exactly,
where the checkpoint folder holds them (`models.code_format.CODES_FILE`). The products (fused_decode.cpp):
bf16 through AVX512_BF16's dot product where the CPU has it (the input vector is rounded to
bf16 as well), else a portable loop widening every weight to fp32; int8 against the input
vector quantized per block the same way, summed exactly in int32 per block (AVX512_VNNI where
the CPU has it, else a portable loop); gguf against the input in two int8 digits per block
(15 bits of the block's largest value), each digit's sum exact through the same instruction.
The fp32 engine stays the reference: the prefill runs
in it, and the tests bound every precision's logits against it (tests/unit/test_precision.py).

The copies are made once per model and precision (`weights_of`), held beside the fp32 model
(which the prefill and the recording forwards keep using).

    EXPLORER_WEIGHTS=fp32|bf16|int8|gguf  the precision the decode steps read (default: the
                                        model's decode_weights where its SIMD path exists, else fp32)
    EXPLORER_KERNEL_PORTABLE=1          the portable loops even where the SIMD paths exist
"""
from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Optional

import torch

from .fused_kernel import library as _library

WEIGHTS = ("fp32", "bf16", "int8", "gguf")
WTYPE = {"fp32": 0, "bf16": 1, "int8": 2, "gguf": 3}
QBLOCK = 32
CBLOCK = 16        # gguf: weights per block (one scale and one offset each), or 2 * CBLOCK
# gguf at most (blocks of 16 with offsets); linear_bytes counts each matrix's own
BYTES_PER_WEIGHT = {"fp32": 4.0, "bf16": 2.0, "int8": 1.0 + 4.0 / QBLOCK, "gguf": 1.0 + 8.0 / CBLOCK}
TILE = 16          # output rows per packed tile (fused_decode.cpp)
# what a row's width must be a multiple of: bf16 pairs, int8 and gguf blocks
WIDTH_STEP = {"bf16": 2, "int8": QBLOCK, "gguf": CBLOCK}
# the SIMD instruction each precision's product uses where the CPU has it
SIMD = {"bf16": "AVX512_BF16", "int8": "AVX512_VNNI", "gguf": "AVX512_VNNI"}
# How far a decode step on each precision's copies may stray from the fp32 engine (the modules
# of models/, eager), as a share of the logits' largest magnitude; the tests hold each bound
# (tests/unit/test_precision.py for bf16 and int8: 15 rounding steps of the format in a chain of
# products, each <= 2^-9 (bf16) or 2 x 1/254 (int8); tests/unit/test_gguf_codes.py for gguf, whose
# weights are the fp32 ones exactly and whose inputs keep 15 bits: 1e-3); fp32 differs only
# by the order of its sums (tests/unit/test_fused.py, test_batched.py: 1e-5).
MODELS_BOUND = {"fp32": 1e-5, "bf16": 15 * 2 ** -9, "int8": 15 * 2 / 254, "gguf": 1e-3}
WEIGHTS_ENV = "EXPLORER_WEIGHTS"
PORTABLE_ENV = "EXPLORER_KERNEL_PORTABLE"
DEFAULT_WEIGHTS = "fp32"


def check_weights(weights) -> str:
    """The precision name, or a clear ValueError."""
    if weights not in WEIGHTS:
        raise ValueError(f"weights must be one of {', '.join(WEIGHTS)}, not {weights!r}")
    return weights


def configured_weights(model=None) -> str:
    """The precision the decode steps read: the operator's (EXPLORER_WEIGHTS) if set; else the
    model's own default (`model.decode_weights`, set by the Runtime: the choice measured for its
    checkpoint) where this CPU has that precision's SIMD path, which is what it was measured on;
    else DEFAULT_WEIGHTS (fp32)."""
    value = os.environ.get(WEIGHTS_ENV, "").strip().lower()
    if value:
        try:
            return check_weights(value)
        except ValueError:
            raise ValueError(f"{WEIGHTS_ENV}={value!r}: choose one of {', '.join(WEIGHTS)}") from None
    own = check_weights(getattr(model, "decode_weights", DEFAULT_WEIGHTS))
    if own == DEFAULT_WEIGHTS or portable_forced() or own not in available_weights(model):
        return DEFAULT_WEIGHTS
    try:
        return own if simd_paths()[own] else DEFAULT_WEIGHTS
    except (RuntimeError, OSError):   # no compiler here: no quantized step at all
        return DEFAULT_WEIGHTS


def available_weights(model) -> tuple[str, ...]:
    """The precisions `model` can decode in: all but gguf, which needs the checkpoint's own
    codes (a folder converted from a GGUF keeps them: `codes_file`)."""
    has_codes = getattr(model, "codes_file", None) is not None
    return tuple(w for w in WEIGHTS if w != "gguf" or has_codes)


def portable_forced() -> bool:
    return os.environ.get(PORTABLE_ENV, "0") not in ("", "0")


def cpu_flags() -> set[str]:
    """The CPU's feature flags (/proc/cpuinfo on Linux; empty elsewhere)."""
    path = Path("/proc/cpuinfo")
    if not path.exists():
        return set()
    for line in path.read_text().splitlines():
        if line.startswith("flags"):
            return set(line.split(":", 1)[1].split())
    return set()


def simd_paths() -> dict[str, bool]:
    """{"bf16": AVX512_BF16 dot products built in, "int8" and "gguf": AVX512_VNNI built in}: the
    kernel is compiled with -march=native on this machine, so these follow the CPU's own flags."""
    bits = _library().fused_simd_paths()
    return {"bf16": bool(bits & 1), "int8": bool(bits & 2), "gguf": bool(bits & 2)}


def path_label(weights: str, portable: Optional[bool] = None) -> str:
    """The product path a precision takes on this machine, e.g. "int8 (AVX512_VNNI)"."""
    check_weights(weights)
    if weights == "fp32":
        return "fp32"
    portable = portable_forced() if portable is None else portable
    simd = SIMD[weights]
    if not portable and simd_paths()[weights]:
        return f"{weights} ({simd})"
    return f"{weights} (portable)"


class QuantWeight:
    """One (out, in) weight in bf16 or int8 blocks; calling it is the product x W^T (+ b) for
    any number of rows of x, through the compiled kernel (CPU, fp32 activations).

    Stored in the kernel's packed layout (fused_decode.cpp, "The packed layouts"): rows in tiles
    of TILE = 16, the last one padded with zero rows, and inside a tile one small step along
    the input (a bf16 pair, an int8 quad) of all 16 rows together, so that one vector load
    feeds 16 row sums at once; int8 codes are kept as q + 128 (unsigned bytes). `codes()`,
    `block_scales()` and `dequantize()` give the plain (out, in) views back."""

    offsets: Optional[torch.Tensor] = None   # gguf only

    def __init__(self, weight: torch.Tensor, weights: str):
        check_weights(weights)
        if weights == "fp32":
            raise ValueError("fp32 weights are the model's own: no copy")
        if weights == "gguf":
            raise ValueError("gguf weights are the checkpoint's own codes: QuantWeight.from_codes")
        weight = weight.detach().to(torch.float32)
        self.weights, self.shape = weights, tuple(weight.shape)
        out, n = self.shape
        if n % WIDTH_STEP[weights]:
            raise ValueError(f"{weights} weights need rows of a multiple of {WIDTH_STEP[weights]} "
                             f"values, not {n}")
        tiles = -(-out // TILE)
        padded = weight if out == tiles * TILE else torch.cat([weight, weight.new_zeros(tiles * TILE - out, n)])
        if weights == "bf16":
            # (T*16, n) -> (T, 16, n/2, 2) -> (T, n/2, 16, 2): a pair of 16 rows per 64 bytes
            self.data = (padded.to(torch.bfloat16).reshape(tiles, TILE, n // 2, 2)
                         .permute(0, 2, 1, 3).contiguous().reshape(-1))
            self.scales = None
        else:
            nb = n // QBLOCK
            blocks = padded.reshape(tiles * TILE, nb, QBLOCK)
            amax = blocks.abs().amax(-1)                                       # (T*16, nb)
            scales = amax / 127.0
            inv = torch.where(amax > 0, 127.0 / amax, torch.zeros_like(amax))
            q = torch.round(blocks * inv[..., None]).clamp_(-127, 127).to(torch.int16) + 128
            # (T*16, nb, 32) -> (T, 16, nb, 8, 4) -> (T, nb, 8, 16, 4): a quad of 16 rows per
            # 64 bytes; scales (T*16, nb) -> (T, nb, 16)
            self.data = (q.to(torch.uint8).reshape(tiles, TILE, nb, QBLOCK // 4, 4)
                         .permute(0, 2, 3, 1, 4).contiguous().reshape(-1))
            self.scales = scales.reshape(tiles, TILE, nb).permute(0, 2, 1).contiguous().reshape(-1)

    @classmethod
    def from_codes(cls, codes: torch.Tensor, scales: torch.Tensor, offsets: torch.Tensor) -> "QuantWeight":
        """gguf: the (out, in) codes + 128 (uint8) and the (out, in / CBLOCK) scales and offsets
        of w = scale * code + offset, packed as the int8 layout with blocks of CBLOCK; blocks of
        2 * CBLOCK where every pair of blocks along a row has one scale and one offset (Q8_0,
        Q5_0, Q4_1 and Q4_K use 32-runs; Q6_K's 16-runs differ), whose scales and offsets are
        then half as many bytes to read and half as many sums to scale. The codes' layout is
        the same for both (a block of 32 is two of 16 one after the other)."""
        out, n = codes.shape
        nb = n // CBLOCK
        if codes.dtype != torch.uint8 or n % CBLOCK or scales.shape != (out, nb) or offsets.shape != (out, nb):
            raise ValueError(f"gguf codes must be uint8 ({out}, a multiple of {CBLOCK}) with ({out}, "
                             f"{nb}) scales and offsets")
        self = cls.__new__(cls)
        self.weights, self.shape = "gguf", (out, n)
        self._block = CBLOCK
        if (nb % 2 == 0 and torch.equal(scales[:, 0::2], scales[:, 1::2])
                and torch.equal(offsets[:, 0::2], offsets[:, 1::2])):
            self._block, nb = 2 * CBLOCK, nb // 2
            scales, offsets = scales[:, 0::2], offsets[:, 0::2]
        tiles = -(-out // TILE)
        pad = tiles * TILE - out

        def padded(t, fill):
            return t if not pad else torch.cat([t, t.new_full((pad, t.shape[1]), fill)])
        # (T*16, nb, 16) -> (T, 16, nb, 4, 4) -> (T, nb, 4, 16, 4): a quad of 16 rows per 64 bytes
        self.data = (padded(codes, 128).reshape(tiles, TILE, nb, self._block // 4, 4)
                     .permute(0, 2, 3, 1, 4).contiguous().reshape(-1))

        def by_tile(t):   # (T*16, nb) -> (T, nb, 16)
            t = padded(t.to(torch.float32), 0.0)
            return t.reshape(tiles, TILE, nb).permute(0, 2, 1).contiguous().reshape(-1)
        # no offsets where all are 0 (Q8_0, Q5_0, Q6_K): the kernel skips their multiply-add
        self.scales = by_tile(scales)
        self.offsets = by_tile(offsets) if bool(offsets.any()) else None
        return self

    @property
    def block(self) -> int:
        """Weights per block along a row: QBLOCK (int8), CBLOCK or 2 * CBLOCK (gguf)."""
        return self._block if self.weights == "gguf" else QBLOCK

    def codes(self) -> torch.Tensor:
        """int8 and gguf: the (out, in) codes q, w = q * scale (+ offset) of its block."""
        out, n = self.shape
        block = self.block
        tiles, nb = -(-out // TILE), n // block
        q = (self.data.reshape(tiles, nb, block // 4, TILE, 4).permute(0, 3, 1, 2, 4)
             .reshape(tiles * TILE, n)[:out])
        return (q.to(torch.int16) - 128).to(torch.int8)

    def _by_row(self, packed: torch.Tensor) -> torch.Tensor:
        out, n = self.shape
        tiles, nb = -(-out // TILE), n // self.block
        return packed.reshape(tiles, nb, TILE).permute(0, 2, 1).reshape(tiles * TILE, nb)[:out]

    def block_scales(self) -> torch.Tensor:
        """int8 and gguf: the (out, in / block) scale of each row's blocks."""
        return self._by_row(self.scales)

    def block_offsets(self) -> torch.Tensor:
        """gguf: the (out, in / block) offset of each row's blocks (zeros where it keeps none)."""
        if self.offsets is None:
            return torch.zeros_like(self.block_scales())
        return self._by_row(self.offsets)

    @property
    def nbytes(self) -> int:
        return sum(t.nbytes for t in (self.data, self.scales, self.offsets) if t is not None)

    def dequantize(self) -> torch.Tensor:
        """The fp32 values the kernel multiplies by (tests, and the quality measurements)."""
        out, n = self.shape
        if self.weights == "bf16":
            tiles = -(-out // TILE)
            return (self.data.reshape(tiles, n // 2, TILE, 2).permute(0, 2, 1, 3)
                    .reshape(tiles * TILE, n)[:out].to(torch.float32))
        block = self.block
        q = self.codes().reshape(out, n // block, block).to(torch.float32)
        w = q * self.block_scales()[..., None]
        if self.weights == "gguf":
            w = w + self.block_offsets()[..., None]
        return w.reshape(out, n)

    def __call__(self, x: torch.Tensor, bias: Optional[torch.Tensor] = None,
                 portable: Optional[bool] = None) -> torch.Tensor:
        out, n = self.shape
        if x.shape[-1] != n:
            raise ValueError(f"input of width {x.shape[-1]} for a weight of {n} columns")
        lead = x.shape[:-1]
        flat = x.reshape(-1, n).to(torch.float32).contiguous()
        y = torch.empty(flat.shape[0], out)
        b = bias.detach().to(torch.float32).contiguous() if bias is not None else None
        portable = portable_forced() if portable is None else portable
        status = _library().quant_linear(
            WTYPE[self.weights], int(portable), self.data.data_ptr(),
            self.scales.data_ptr() if self.scales is not None else None,
            self.offsets.data_ptr() if self.offsets is not None else None, self.block,
            b.data_ptr() if b is not None else None, flat.data_ptr(), flat.shape[0], n, out,
            y.data_ptr(), torch.get_num_threads())
        if status != 0:
            raise RuntimeError(f"the quantized product refused its arguments ({status})")
        return y.reshape(*lead, out).to(x.dtype)


class ModelWeights:
    """A model's matrices in one precision: {module: QuantWeight} for every Linear and
    {model: QuantWeight} for the LM head (the embedding when tied); empty for fp32. gguf reads
    the checkpoint's codes (models.loading.read_codes: a ValueError where it has none, or where
    they do not reproduce the model's weights)."""

    def __init__(self, model, weights: str):
        from models.layers import Linear
        self.weights = check_weights(weights)
        self.table: dict = {}
        if weights == "gguf":
            from models.loading import read_codes
            for module, (codes, scales, offsets) in read_codes(model).items():
                self.table[module] = QuantWeight.from_codes(codes, scales, offsets)
        elif weights != "fp32":
            for module in model.modules():
                if isinstance(module, Linear):
                    self.table[module] = QuantWeight(module.weight, weights)
            self.table[model] = QuantWeight(model.lm_head_weight(), weights)

    @property
    def nbytes(self) -> int:
        return sum(w.nbytes for w in self.table.values())


_COPIES_LOCK = threading.Lock()


def weights_of(model, weights: str) -> ModelWeights:
    """The model's copy in `weights`, made once and shared by every decoder of the model (the
    copies are read-only). Held by the model itself (its `_weight_copies`), so they are freed
    with it."""
    check_weights(weights)
    with _COPIES_LOCK:
        copies = model.__dict__.setdefault("_weight_copies", {})
        if weights not in copies:
            with torch.inference_mode(False), torch.no_grad():
                copies[weights] = ModelWeights(model, weights)
        return copies[weights]


def linear_bytes(model, weights: str) -> int:
    """Bytes of weights one decode token reads in this precision: every Linear and the head
    (gguf: a byte a code, a scale per block of the matrix's, and an offset per block only in
    the matrices that keep them, as the copy holds them)."""
    from models.layers import Linear
    if check_weights(weights) == "gguf":
        return int(sum(q.shape[0] * q.shape[1] * (1.0 + (8.0 if q.offsets is not None else 4.0) / q.block)
                       for q in weights_of(model, "gguf").table.values()))
    count = sum(m.weight.numel() for m in model.modules() if isinstance(m, Linear))
    count += model.lm_head_weight().numel()
    return int(count * BYTES_PER_WEIGHT[weights])
