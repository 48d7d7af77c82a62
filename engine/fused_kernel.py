"""The compiled fused-decode library (kernels/fused_decode.cpp): its ctypes structs, field for
field, and its loading, shared by the fused step (engine.fused), the fused batched step
(engine.fused_batch) and the quantized products (engine.quantized), which all live in the one
compiled file. Loaded once per process, after native's build and check."""
from __future__ import annotations

import ctypes
from pathlib import Path
from typing import Optional

import torch

from . import native

SOURCE = Path(__file__).with_name("kernels") / "fused_decode.cpp"

_P = ctypes.POINTER(ctypes.c_float)


class _QMat(ctypes.Structure):
    """struct QMat of fused_decode.cpp: a matrix's elements, its block scales (int8, gguf),
    offsets (gguf) and block (read for gguf only), or nulls and 0."""
    _fields_ = [("w", ctypes.c_void_p), ("scales", _P), ("offsets", _P), ("block", ctypes.c_int64)]

    @classmethod
    def of(cls, weight: Optional[torch.Tensor] = None, q=None) -> "_QMat":
        """The model's own fp32 `weight`, or the copy `q` (a quantized.QuantWeight)."""
        if q is None:
            return cls(ctypes.c_void_p(weight.data_ptr()), _P(), _P(), 0)
        return cls(ctypes.c_void_p(q.data.data_ptr()), _ptr(q.scales), _ptr(q.offsets), q.block)


class _Layer(ctypes.Structure):
    """struct FusedLayer of fused_decode.cpp, field for field."""
    _fields_ = [("wqkv", _QMat), ("bqkv", _P), ("wo", _QMat), ("bo", _P), ("w_gate_up", _QMat),
                ("w_down", _QMat),
                ("attn_norm", _P), ("attn_post_norm", _P), ("mlp_norm", _P), ("mlp_post_norm", _P),
                ("q_norm", _P), ("k_norm", _P), ("k_cache", _P), ("v_cache", _P),
                ("capacity", ctypes.c_int64), ("slot", ctypes.c_int64), ("rope", _P), ("mask", _P)]


class _Model(ctypes.Structure):
    """struct FusedModel of fused_decode.cpp, field for field."""
    _fields_ = [(name, ctypes.c_int64) for name in
                ("n_layers", "d_model", "n_heads", "n_kv_heads", "head_dim", "d_ff", "vocab",
                 "n_threads", "activation")] + \
               [(name, ctypes.c_float) for name in
                ("norm_eps", "attn_scale", "embed_scale", "attn_softcap", "final_softcap")] + \
               [("embed", _P), ("final_norm", _P), ("lm_head", _QMat), ("sinks", _P),
                ("layers", ctypes.POINTER(_Layer)), ("wtype", ctypes.c_int64), ("portable", ctypes.c_int64)]


def _ptr(t: Optional[torch.Tensor], kind=_P):
    return ctypes.cast(t.data_ptr(), kind) if t is not None else kind()


_LIB = None


def library():
    global _LIB
    if _LIB is None:
        lib = native.load(SOURCE, "fused decode")
        lib.fused_decode_step.argtypes = [ctypes.POINTER(_Model), ctypes.c_int64, _P]
        lib.fused_decode_step.restype = ctypes.c_int
        _setup_quantized(lib)
        _LIB = lib
    return _LIB


def _setup_quantized(lib) -> None:
    """ctypes signatures of the quantized entry points (quantized.QuantWeight, quantized.simd_paths)."""
    lib.fused_simd_paths.argtypes, lib.fused_simd_paths.restype = [], ctypes.c_int
    lib.quant_linear.argtypes = [ctypes.c_int64, ctypes.c_int64, ctypes.c_void_p, ctypes.c_void_p,
                                 ctypes.c_void_p, ctypes.c_int64, ctypes.c_void_p, ctypes.c_void_p,
                                 ctypes.c_int64, ctypes.c_int64, ctypes.c_int64, ctypes.c_void_p, ctypes.c_int64]
    lib.quant_linear.restype = ctypes.c_int
