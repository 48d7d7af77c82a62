"""The tiled forward compiled (engine/kernels/flash_tiled.cpp): the same schedule as the
engine's tiled_attention without Python's per-tile overhead, OpenMP over query blocks, the CPU
cache in SRAM's role. Its working memory is one scratch buffer per thread, allocated here as a
torch tensor, so memory.py measures it like any other path: linear in nothing but the block
sizes, while naive attention's grows with n^2.

Built once per (source, compiler, CPU) into the private kernels folder and checked before
loading, as every kernel of the engine is (engine/native.py)."""
from __future__ import annotations

import ctypes
from pathlib import Path
from typing import Optional

import torch

from models.attention import MaskSpec
from engine import native

SOURCE = Path(__file__).resolve().parents[2] / "engine" / "kernels" / "flash_tiled.cpp"
# the MaskSpec terms flash_tiled.cpp's `visible` evaluates (tests/unit/test_seams.py fails when
# MaskSpec has a term not in this list)
KERNEL_TERMS = ("causal", "window", "sinks")
_F = ctypes.POINTER(ctypes.c_float)
_I = ctypes.POINTER(ctypes.c_int64)
_LIB = None


def available() -> bool:
    return native.compiler() is not None


def _library():
    global _LIB
    if _LIB is None:
        lib = native.load(SOURCE, "compiled tiled attention")
        lib.flash_tiled_scratch_floats.argtypes = [ctypes.c_int64] * 3
        lib.flash_tiled_scratch_floats.restype = ctypes.c_int64
        lib.flash_tiled_forward.argtypes = [_F, _F, _F, _F, ctypes.c_int64, ctypes.c_int64, ctypes.c_int64,
                                            _I, _I, ctypes.c_int, ctypes.c_int64, ctypes.c_int64,
                                            ctypes.c_float, ctypes.c_int64, ctypes.c_int64, _F, ctypes.c_int64]
        lib.flash_tiled_forward.restype = ctypes.c_int64
        _LIB = lib
    return _LIB


def attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, q_pos: torch.Tensor,
              kv_pos: torch.Tensor, mask: MaskSpec, scale: float, block_q: int = 64, block_k: int = 64,
              n_threads: Optional[int] = None) -> tuple[torch.Tensor, int]:
    """One head: q (n, d), k and v (s, d) fp32 on the CPU -> (out (n, d), tiles computed)."""
    lib = _library()
    q, k, v = (t.float().contiguous() for t in (q, k, v))
    q_pos, kv_pos = q_pos.to(torch.int64).contiguous(), kv_pos.to(torch.int64).contiguous()
    n, d = q.shape
    threads = n_threads or torch.get_num_threads()
    scratch = torch.empty(threads * lib.flash_tiled_scratch_floats(block_q, block_k, d))
    out = torch.empty(n, d)
    window = -1 if mask.window is None else mask.window
    ptr = lambda t, kind=_F: ctypes.cast(t.data_ptr(), kind)   # noqa: E731
    tiles = lib.flash_tiled_forward(ptr(q), ptr(k), ptr(v), ptr(out), n, k.shape[0], d,
                                    ptr(q_pos, _I), ptr(kv_pos, _I), int(mask.causal), window,
                                    mask.sinks, float(scale), block_q, block_k, ptr(scratch), threads)
    return out, int(tiles)
