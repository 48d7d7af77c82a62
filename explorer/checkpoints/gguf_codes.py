"""The GGUF's own integer codes of each weight matrix, kept beside the dequantized checkpoint.

The embedded checkpoints ship as 4-8-bit GGUF files (SmolLM2: Q4_1 and Q8_0; Gemma 3: Q4_K,
Q5_0, Q6_K and Q8_0), and conversion.py dequantizes them to fp32. Every one of those formats
stores a weight as an integer code times a scale plus an offset, the scale and offset shared by
a run of 16 or 32 weights along a row:

    w = scale * code + offset      code an integer in [-128, 127]

so the fp32 checkpoint holds at most 8 bits of information per weight. This module reads the
codes, scales and offsets back out of the GGUF (block layouts as llama.cpp's ggml-common.h and
gguf-py's quants.py define them), in runs of CODE_BLOCK = 16 along each row (a 32-run's scale
and offset repeated twice), under the Hugging Face names of the converted checkpoint, with the
same row order (llama's q/k rows un-permuted as transformers does). The decode kernels multiply
by them directly (engine/quantized.py, precision "gguf"): the fp32 checkpoint's exact
weights in 1.5 bytes each instead of 4. Written by conversion.py into models.code_format.CODES_FILE.

Stored per matrix NAME (e.g. "model.layers.0.self_attn.q_proj.weight") as
models/code_format.py says.
"""
from __future__ import annotations

from pathlib import Path
from typing import Iterator

import numpy as np

from models.code_format import CODE_BLOCK, CODE_SUFFIXES


# GGUF tensor name (per layer, after "blk.N.") -> the Hugging Face name (after "model.layers.N.")
LAYER_NAMES = {
    "attn_q.weight": "self_attn.q_proj.weight",
    "attn_k.weight": "self_attn.k_proj.weight",
    "attn_v.weight": "self_attn.v_proj.weight",
    "attn_output.weight": "self_attn.o_proj.weight",
    "ffn_gate.weight": "mlp.gate_proj.weight",
    "ffn_up.weight": "mlp.up_proj.weight",
    "ffn_down.weight": "mlp.down_proj.weight",
}
GLOBAL_NAMES = {"token_embd.weight": "model.embed_tokens.weight", "output.weight": "lm_head.weight"}


def _f16(raw: np.ndarray) -> np.ndarray:
    """(n, 2) bytes -> (n,) fp32 of the fp16 they hold."""
    return np.ascontiguousarray(raw).view(np.float16).astype(np.float32).reshape(-1)


def _nibbles(qs: np.ndarray) -> np.ndarray:
    """(n, k) bytes -> (n, 2k): the low nibbles of the k bytes, then their high nibbles."""
    return np.concatenate([qs & 0x0F, qs >> 4], axis=-1)


def _q8_0(b: np.ndarray):
    d = _f16(b[:, :2])
    codes = b[:, 2:34].view(np.int8).astype(np.int16)
    return codes, np.repeat(d[:, None], 2, 1), np.zeros((len(b), 2), np.float32)


def _q5_0(b: np.ndarray):
    d = _f16(b[:, :2])
    qh = np.ascontiguousarray(b[:, 2:6]).view(np.uint32).reshape(-1, 1)
    high = ((qh >> np.arange(32, dtype=np.uint32)) & 1).astype(np.int16) << 4
    codes = _nibbles(b[:, 6:22]).astype(np.int16) + high - 16
    return codes, np.repeat(d[:, None], 2, 1), np.zeros((len(b), 2), np.float32)


def _q4_1(b: np.ndarray):
    d, m = _f16(b[:, :2]), _f16(b[:, 2:4])
    codes = _nibbles(b[:, 4:20]).astype(np.int16)
    return codes, np.repeat(d[:, None], 2, 1), np.repeat(m[:, None], 2, 1)


def _q4_k(b: np.ndarray):
    # super-blocks of 256: d, dmin (fp16), 12 bytes of 6-bit scales and mins for 8 runs of 32,
    # 128 bytes of nibbles (each 32 bytes: the low nibbles are one run, the high the next)
    n = len(b)
    d, dmin = _f16(b[:, :2]), _f16(b[:, 2:4])
    s = b[:, 4:16].reshape(n, 3, 4)
    lo, mid, top = s[:, 0], s[:, 1], s[:, 2]
    sc = np.concatenate([lo & 0x3F, (top & 0x0F) | ((lo >> 2) & 0x30)], axis=-1).astype(np.float32)
    mn = np.concatenate([mid & 0x3F, (top >> 4) | ((mid >> 2) & 0x30)], axis=-1).astype(np.float32)
    qs = b[:, 16:144].reshape(n, 4, 32)
    codes = np.stack([qs & 0x0F, qs >> 4], axis=2).reshape(n, 256).astype(np.int16)
    scales = (d[:, None] * sc)          # (n, 8) runs of 32, as gguf-py computes them
    offsets = -(dmin[:, None] * mn)
    return codes, np.repeat(scales, 2, 1), np.repeat(offsets, 2, 1)


def _q6_k(b: np.ndarray):
    # super-blocks of 256: 128 bytes of low nibbles, 64 of 2-bit highs, 16 int8 scales (one per
    # run of 16), d (fp16)
    n = len(b)
    ql, qh = b[:, :128].reshape(n, 2, 64), b[:, 128:192].reshape(n, 2, 32)
    sc = b[:, 192:208].view(np.int8).astype(np.float32)
    d = _f16(b[:, 208:210])
    low = np.concatenate([ql & 0x0F, ql >> 4], axis=-1).reshape(n, 2, 4, 32)     # (n, half, 4, 32)
    high = np.stack([(qh >> s) & 3 for s in (0, 2, 4, 6)], axis=2)               # (n, half, 4, 32)
    codes = ((low | (high << 4)).astype(np.int16) - 32).reshape(n, 256)
    return codes, d[:, None] * sc, np.zeros((n, 16), np.float32)


# type name -> (weights per block, bytes per block, decoder)
FORMATS = {"Q8_0": (32, 34, _q8_0), "Q5_0": (32, 22, _q5_0), "Q4_1": (32, 20, _q4_1),
           "Q4_K": (256, 144, _q4_k), "Q6_K": (256, 210, _q6_k)}


def tensor_codes(kind: str, raw: np.ndarray, rows: int, cols: int):
    """One GGUF tensor's bytes -> (codes int16 (rows, cols), scales and offsets fp32 (rows,
    cols / 16)); ValueError for a format without integer codes."""
    if kind not in FORMATS:
        raise ValueError(f"GGUF type {kind} has no integer codes this app reads")
    per, size, decode = FORMATS[kind]
    blocks = np.ascontiguousarray(raw, dtype=np.uint8).reshape(-1, size)
    if blocks.shape[0] * per != rows * cols or cols % per:
        raise ValueError(f"GGUF type {kind}: {blocks.shape[0]} blocks do not make ({rows}, {cols})")
    codes, scales, offsets = decode(blocks)
    return (codes.reshape(rows, cols), scales.astype(np.float32).reshape(rows, cols // CODE_BLOCK),
            offsets.astype(np.float32).reshape(rows, cols // CODE_BLOCK))


def unpermute_rows(x: np.ndarray, n_head: int) -> np.ndarray:
    """llama.cpp's converter interleaves the two rotary halves of each q/k head's rows;
    transformers (modeling_gguf_pytorch_utils, reverse_permute) undoes it: the same here."""
    rows = x.shape[0]
    # (rows, ...) -> (heads, rows / heads / 2, 2, ...) -> (heads, 2, rows / heads / 2, ...)
    return x.reshape(n_head, rows // n_head // 2, 2, *x.shape[1:]).swapaxes(1, 2).reshape(x.shape)


def read_codes(gguf_path: Path) -> Iterator[tuple[str, np.ndarray, np.ndarray, np.ndarray]]:
    """(Hugging Face name, codes + 128 as uint8, scales, offsets) of every weight matrix of the
    GGUF at `gguf_path` that has integer codes; the norms (F32) and anything unnamed skipped."""
    import gguf

    reader = gguf.GGUFReader(str(gguf_path))
    arch = bytes(reader.fields["general.architecture"].parts[-1]).decode()

    def field(name):
        value = reader.fields.get(f"{arch}.{name}")
        return int(value.parts[-1][0]) if value is not None else None

    heads, kv_heads = field("attention.head_count"), field("attention.head_count_kv")
    permute = arch == "llama"
    for t in reader.tensors:
        if t.name in GLOBAL_NAMES:
            name = GLOBAL_NAMES[t.name]
        elif t.name.startswith("blk.") and t.name.split(".", 2)[2] in LAYER_NAMES:
            _, layer, rest = t.name.split(".", 2)
            name = f"model.layers.{int(layer)}.{LAYER_NAMES[rest]}"
        else:
            continue
        kind = t.tensor_type.name
        if kind not in FORMATS:
            continue
        cols, rows = (int(v) for v in t.shape[:2])     # GGUF lists the fastest dimension first
        codes, scales, offsets = tensor_codes(kind, t.data, rows, cols)
        if permute and name.endswith(("q_proj.weight", "k_proj.weight")):
            n = heads if "q_proj" in name else kv_heads
            codes, scales, offsets = (unpermute_rows(a, n) for a in (codes, scales, offsets))
        yield name, (codes + 128).astype(np.uint8), scales, offsets


def write_codes(gguf_path: Path, out: Path) -> int:
    """Every matrix's codes of the GGUF into the safetensors file `out`; how many matrices."""
    import torch
    from safetensors.torch import save_file

    tensors = {}
    for name, *arrays in read_codes(gguf_path):
        for suffix, array in zip(CODE_SUFFIXES, arrays):
            tensors[name + suffix] = torch.from_numpy(np.ascontiguousarray(array))
    out.parent.mkdir(parents=True, exist_ok=True)
    save_file(tensors, str(out), metadata={"format": "pt", "source": gguf_path.name,
                                           "block": str(CODE_BLOCK)})
    return len(tensors) // 3
