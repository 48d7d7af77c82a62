"""Measured peak extra memory of one head's attention: the most memory the call held at once
beyond its inputs, minus its n x d output. On a GPU: torch.cuda.max_memory_allocated. On a CPU:
the allocation events torch's profiler records (profile_memory=True), each carrying the CPU
allocator's running total of bytes allocated since profiling began; the peak of that total is
the call's peak. Inputs (q, k, v, and the naive path's boolean mask) exist before the call and
do not count; the tiled path gets a TileVisibility, which makes each tile's mask from positions.

Every sweep runs on one long-lived thread (SWEEP_THREAD), whichever thread asks for it. The app
tunes glibc's malloc (models.device.tune_cpu_allocator: mmap threshold 32 MB), so the naive
path's n x n matrices (4 MB at n = 1024) come from the calling thread's malloc arena, not from
fresh mmaps; a server that runs each call in a new worker thread spreads them over up to 8 arenas
per core, each keeping its freed heap, and the live heap grew ~2 MB a call. On one thread they
reuse one arena. It also keeps two visitors' sweeps from overlapping: the profiler and CUDA's
peak counters are per process; two CPU sweeps profiling at once from two threads crash the
process (SIGSEGV in torch's profiler), and would in any case count each other's allocations.
"""
from __future__ import annotations

import json
import os
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Callable, Sequence

import torch

from explorer.flash import SweepSettings
from models.attention import (MaskSpec, TileVisibility, eager_attention, sdpa_attention,
                              sdpa_mask_for, tiled_attention)

PATHS = ("naive", "tiled", "sdpa", "compiled")   # compiled: where a C++ compiler is (CPU only)
# one worker: sweeps queue behind each other; the thread starts at the first sweep and then lives
# as long as the process
SWEEP_THREAD = ThreadPoolExecutor(max_workers=1, thread_name_prefix="flash-memory-sweep")


def device_name(device: torch.device) -> str:
    return torch.cuda.get_device_name(device) if device.type == "cuda" else "CPU"


def _cpu_peak(fn: Callable[[], torch.Tensor]) -> tuple[int, int]:
    """(peak bytes allocated during fn, bytes of its output) from the profiler's memory events."""
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        out = fn()
        out_bytes = out.numel() * out.element_size()
        del out
    handle, path = tempfile.mkstemp(suffix=".json")
    os.close(handle)
    try:
        prof.export_chrome_trace(path)
        with open(path) as f:
            events = json.load(f)["traceEvents"]
    finally:
        os.unlink(path)
    totals = [e["args"]["Total Allocated"] for e in events if e.get("name") == "[memory]"]
    return (max(totals) if totals else 0), out_bytes


def _cuda_peak(fn: Callable[[], torch.Tensor], device) -> tuple[int, int]:
    torch.cuda.synchronize(device)
    base = torch.cuda.memory_allocated(device)
    torch.cuda.reset_peak_memory_stats(device)
    out = fn()
    torch.cuda.synchronize(device)
    peak = torch.cuda.max_memory_allocated(device) - base
    return peak, out.numel() * out.element_size()


def peak_extra(fn: Callable[[], torch.Tensor], device: torch.device) -> int:
    """Peak bytes fn allocated beyond its inputs, minus its output's bytes."""
    peak, out_bytes = _cuda_peak(fn, device) if device.type == "cuda" else _cpu_peak(fn)
    return max(0, peak - out_bytes)


@dataclass(frozen=True)
class MemorySweep(SweepSettings):
    device: str
    extra: dict            # path -> tuple of peak extra bytes, one per n
    score_matrix: tuple    # bytes of one fp32 n x n matrix, per n (for scale)


def sweep(ns: Sequence[int], d: int, block_q: int, block_k: int, mask: MaskSpec,
          device: torch.device | str = "cpu", seed: int = 0, paths: Sequence[str] = PATHS) -> MemorySweep:
    """Peak extra memory of naive, tiled and SDPA for one fp32 head of each length n, measured on
    SWEEP_THREAD (the module docstring says why); the caller waits for it."""
    return SWEEP_THREAD.submit(_sweep, tuple(ns), d, block_q, block_k, mask, device, seed,
                               tuple(paths)).result()


@torch.inference_mode()     # per thread in torch, so on the function that SWEEP_THREAD runs
def _sweep(ns: tuple, d: int, block_q: int, block_k: int, mask: MaskSpec, device: torch.device | str,
           seed: int, paths: tuple) -> MemorySweep:
    device = torch.device(device)
    gen = torch.Generator().manual_seed(seed)
    from explorer.flash import compiled

    paths = [p for p in paths if p != "compiled" or (device.type == "cpu" and compiled.available())]
    extra = {path: [] for path in paths}
    for n in ns:
        q, k, v = (torch.randn(1, 1, n, d, generator=gen).to(device) for _ in range(3))
        pos = torch.arange(n, device=device)
        visible = mask.visible(pos, pos)                                      # (n, n) input
        lazy = TileVisibility(mask, pos, pos)
        sdpa_mask = sdpa_mask_for(visible, pos, pos)
        scale = d ** -0.5
        calls = {
            "naive": lambda: eager_attention(q, k, v, visible, scale)[0],
            "tiled": lambda: tiled_attention(q, k, v, lazy, scale, block_q=block_q, block_k=block_k)[0],
            "sdpa": lambda: sdpa_attention(q, k, v, sdpa_mask, scale),
            # its per-thread scratch is a torch tensor allocated inside the call: measured too
            "compiled": lambda: compiled.attention(q[0, 0], k[0, 0], v[0, 0], pos, pos, mask, scale,
                                                   block_q, block_k)[0],
        }
        for path in paths:
            extra[path].append(peak_extra(calls[path], device))
    return MemorySweep(ns=tuple(ns), d=d, block_q=block_q, block_k=block_k, mask=mask,
                       device=device_name(device), extra={p: tuple(v) for p, v in extra.items()},
                       score_matrix=tuple(4 * n * n for n in ns))
