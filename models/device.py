"""Where and in what precision models run: CUDA with bf16 when available, else CPU with fp32
(this CPU has no fast bf16 matmul, so fp32 is its fastest path). EXPLORER_DEVICE and
EXPLORER_DTYPE override."""
from __future__ import annotations

import contextlib
import ctypes
import os
import sys

import torch

DTYPES = {"float32": torch.float32, "fp32": torch.float32, "bfloat16": torch.bfloat16,
          "bf16": torch.bfloat16, "float16": torch.float16, "fp16": torch.float16}


def default_device() -> torch.device:
    name = os.environ.get("EXPLORER_DEVICE")
    if name:
        return torch.device(name)
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def default_dtype(device: torch.device) -> torch.dtype:
    name = os.environ.get("EXPLORER_DTYPE")
    if name:
        if name not in DTYPES:
            raise ValueError(f"EXPLORER_DTYPE={name!r}; choose from {sorted(DTYPES)}")
        return DTYPES[name]
    return torch.bfloat16 if torch.device(device).type == "cuda" else torch.float32


def describe(device: torch.device, dtype: torch.dtype) -> str:
    device = torch.device(device)
    if device.type == "cuda":
        return f"{torch.cuda.get_device_name(device)} ({str(dtype).replace('torch.', '')})"
    return f"CPU, {torch.get_num_threads()} threads ({str(dtype).replace('torch.', '')})"


# glibc mallopt parameters (malloc.h)
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3
MMAP_THRESHOLD = 32 << 20    # glibc's upper limit for this parameter on 64-bit
TRIM_THRESHOLD = 1 << 30


def libc():
    """glibc through ctypes, or None (another libc, another OS)."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        lib = ctypes.CDLL("libc.so.6")
        lib.mallopt, lib.madvise  # noqa: B018 -- both must exist
    except (OSError, AttributeError):
        return None
    return lib


def tune_cpu_allocator() -> bool:
    """Keep freed activation memory in the process instead of returning it to the OS.

    PyTorch's CPU tensors come from plain malloc. glibc hands memory above its trim threshold
    back to the kernel (and serves blocks above its mmap threshold with fresh mmaps), both
    thresholds adapting to the largest block freed so far. A prefill frees tens of MB per
    layer (SmolLM2 at 2048 tokens: a 25 MB gate/up product, several 5-13 MB activations), so
    the next layer's allocations fault the same pages in again: ~380,000 page faults in one
    2048-token SmolLM2 prefill, ~1.5 GB zeroed by the kernel, measured at 20-30% of its time
    on a 2-core CPU (docs/BENCHMARKS.md). Fixing the thresholds (what the PyTorch CPU tuning guide
    gets from jemalloc/tcmalloc) cuts that to a few thousand. The cost: the process keeps up
    to TRIM_THRESHOLD of freed memory mapped for reuse.

    Process-wide, so entry points call it (app, CLI, benchmarks, tests), not the library on
    import. Returns False where glibc's mallopt is not available (other libcs, other OSes)."""
    lib = libc()
    if lib is None:
        return False
    mallopt = lib.mallopt
    mallopt.argtypes, mallopt.restype = (ctypes.c_int, ctypes.c_int), ctypes.c_int
    # mallopt returns 1 on success, 0 on error
    return bool(mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD)) and bool(mallopt(_M_TRIM_THRESHOLD, TRIM_THRESHOLD))


@contextlib.contextmanager
def intra_op_threads(n: int):
    """torch's intra-op threads set to n (0: unchanged) for the block, then restored."""
    before = torch.get_num_threads()
    if n and n != before:
        torch.set_num_threads(n)
    try:
        yield
    finally:
        if n and n != before:
            torch.set_num_threads(before)
