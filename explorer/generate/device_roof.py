"""This device's roof, measured: the memory bandwidth and the matmul FLOP rate that the decode
roofline (explorer/generate/roofline.py, claim C2) is drawn against.

- bandwidth: the faster of two reads of a matrix much larger than the last-level cache
  (128 MiB on a CPU, 4x a 32 MiB L3; 1 GiB on a GPU), in the model's dtype on the model's
  device: a matrix-vector product (the access pattern of a decode step, which streams every
  weight once per token) and a plain sum of it. Bytes read / time. Both are needed: on this
  2-core CPU torch.mv streams at ~19 GB/s where a sum (and the fused decode step's own
  products) reach ~29-32 GB/s, so a roof from torch.mv alone put the real steps above it.
- FLOP rate: the product that the decode steps run, big enough to saturate the device. For the
  model's own tensors a square matmul in its dtype (n = 768 on a CPU, 8192 on a GPU); for the
  CPU's bf16 / int8 / gguf copies (engine.quantized) the compiled product of
  PRODUCT_ROWS rows against an n x n weight in that format (AVX512_BF16 or VNNI dot products
  where the CPU has them). 2·rows·n² / time.

Each is the best of several repeats after a warm-up: the roof is what the device can do, and a
shared machine only ever makes a repeat slower. On CUDA the time is read from CUDA events
after a synchronize (kernels launch asynchronously).

`measure(device, dtype, threads, weights)` measures on demand and keeps the result per
(device, dtype, threads, weights) in process memory with the wall-clock time it was measured; one measurement runs at a
time (a lock), so concurrent callers wait and then share it. About two seconds on a 2-core CPU.

The kept roof is every visitor's, and a measurement taken while the caller loads the machine
comes out low: a refresh (refresh=True) replaces it at most once per REFRESH_INTERVAL_S per
key; one asked sooner is answered with the kept roof, its `refresh_in_s` saying when a new
measurement may be taken (the page says so under the roof).
"""
from __future__ import annotations

import math
import threading
import time
from dataclasses import dataclass, replace
from typing import Optional

import torch

from models.device import intra_op_threads

# a kept roof is replaced by a new measurement at most this often (per device, dtype, threads,
# weights)
REFRESH_INTERVAL_S = 600.0
# rows of the quantized products' peak: as many as a class's batched step at most, and enough
# that each weight block is reused from the cache (the dot products, not the weight read, bound)
PRODUCT_ROWS = 64


@dataclass(frozen=True)
class RoofSettings:
    """How the roof is measured on one kind of device."""
    bandwidth_bytes: int      # size of the streamed matrix (>> last-level cache)
    matmul_n: int             # the square matmul is n x n @ n x n
    repeats: int              # best of at least this many, after one warm-up ...
    min_seconds: float = 0.0  # ... and of as many more as fit in this time (at most 10x repeats):
                              # on a shared CPU a repeat that no other process interrupted
                              # comes more surely from many short tries


CPU_SETTINGS = RoofSettings(bandwidth_bytes=128 << 20, matmul_n=768, repeats=5, min_seconds=0.75)
GPU_SETTINGS = RoofSettings(bandwidth_bytes=1 << 30, matmul_n=8192, repeats=10)


@dataclass(frozen=True)
class DeviceRoof:
    device: str               # "cpu", "cuda:0"
    dtype: str                # "float32", "bfloat16"
    threads: int              # torch intra-op threads it ran with (CPU); 0 on a GPU
    bandwidth: float          # bytes/s, best repeat
    flops: float              # FLOP/s, best repeat
    measured_at: float        # time.time() when the measurement ended
    seconds: float            # wall time the measurement took
    settings: RoofSettings
    tries: tuple = (0, 0)     # timed calls of the matrix-vector product and of the matmul
    refresh_in_s: float = 0.0  # > 0: a refresh was asked and refused; seconds until one may run
    weights: str = "fp32"     # the products' weight format: the model's own ("fp32"), bf16, int8, gguf
    product: str = ""         # the product timed for `flops`, e.g. "torch.mm", "gguf (AVX512_VNNI)"

    @property
    def ridge(self) -> float:
        """FLOP per byte where the roof turns from bandwidth-bound to compute-bound."""
        return self.flops / self.bandwidth


_LOCK = threading.Lock()
_CACHE: dict[tuple[str, str, int, str], DeviceRoof] = {}


def settings_for(device: torch.device) -> RoofSettings:
    return GPU_SETTINGS if device.type == "cuda" else CPU_SETTINGS


def _key(device: torch.device, dtype: torch.dtype, threads: int,
         weights: str = "fp32") -> tuple[str, str, int, str]:
    return str(device), str(dtype).replace("torch.", ""), threads, weights


def best_time(fn, device: torch.device, repeats: int, min_seconds: float = 0.0) -> tuple[float, int]:
    """(seconds of the fastest call of fn, calls timed), after one warm-up call: at least
    `repeats` calls, more while fewer than `min_seconds` have passed (at most 10 x repeats)."""
    fn()
    times: list[float] = []
    started = time.perf_counter()
    while len(times) < repeats or (len(times) < 10 * repeats
                                   and time.perf_counter() - started < min_seconds):
        if device.type == "cuda":
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            torch.cuda.synchronize(device)
            start.record()
            fn()
            end.record()
            torch.cuda.synchronize(device)
            times.append(start.elapsed_time(end) / 1e3)
        else:
            t0 = time.perf_counter()
            fn()
            times.append(time.perf_counter() - t0)
    return min(times), len(times)


def quantized_product(weights: str, n: int, rows: int = PRODUCT_ROWS, seed: int = 0):
    """(the compiled product of `rows` inputs against an n x n weight in `weights`, its label):
    random values, the copy made as the model's are (gguf: codes + 128 with one scale and one
    offset per block of 32, the layout of Q4_1 and Q4_K)."""
    from engine import quantized

    generator = torch.Generator().manual_seed(seed)
    if weights == "gguf":
        blocks = n // (2 * quantized.CBLOCK)
        codes = torch.randint(128, 144, (n, n), dtype=torch.uint8, generator=generator)
        scales = torch.rand(n, blocks, generator=generator).repeat_interleave(2, dim=1) * 0.01
        offsets = torch.rand(n, blocks, generator=generator).repeat_interleave(2, dim=1) * -0.08
        weight = quantized.QuantWeight.from_codes(codes, scales, offsets)
    else:
        weight = quantized.QuantWeight(torch.randn(n, n, generator=generator) * 0.05, weights)
    x = torch.randn(rows, n, generator=generator)                                 # (rows, n)
    return (lambda: weight(x)), quantized.path_label(weights)


@torch.inference_mode()
def _measure(device: torch.device, dtype: torch.dtype, threads: int,
             settings: RoofSettings, weights: str = "fp32") -> DeviceRoof:
    started = time.perf_counter()
    element = torch.empty((), dtype=dtype).element_size()
    cols = 4096
    rows = settings.bandwidth_bytes // (element * cols)
    matrix = torch.ones(rows, cols, device=device, dtype=dtype)                 # (rows, cols)
    # values from a generator of this measurement's own: the shared one is other threads'
    generator = torch.Generator(device=device).manual_seed(0)
    vector = torch.randn(cols, device=device, dtype=dtype, generator=generator)  # (cols,)
    seconds, mv_tries = best_time(lambda: torch.mv(matrix, vector), device, settings.repeats,
                                  settings.min_seconds)
    summed, sum_tries = best_time(lambda: matrix.sum(), device, settings.repeats, settings.min_seconds)
    seconds = min(seconds, summed)
    mv_tries += sum_tries
    bandwidth = matrix.numel() * element / seconds
    del matrix, vector
    n = settings.matmul_n
    if weights == "fp32":
        a = torch.randn(n, n, device=device, dtype=dtype, generator=generator)
        b = torch.randn(n, n, device=device, dtype=dtype, generator=generator)
        product, label, rows = (lambda: torch.mm(a, b)), "torch.mm", n
    else:
        product, label = quantized_product(weights, n)
        rows = PRODUCT_ROWS
    seconds, mm_tries = best_time(product, device, settings.repeats, settings.min_seconds)
    flops = 2.0 * rows * n * n / seconds
    return DeviceRoof(*_key(device, dtype, threads)[:3], bandwidth=bandwidth, flops=flops,
                      measured_at=time.time(), seconds=time.perf_counter() - started,
                      settings=settings, tries=(mv_tries, mm_tries), weights=weights, product=label)


def measure(device, dtype: torch.dtype, threads: int = 0, *, refresh: bool = False,
            settings: Optional[RoofSettings] = None, weights: str = "fp32") -> DeviceRoof:
    """The roof of `device` in `dtype` with `threads` intra-op threads (0: torch's current
    setting; ignored on a GPU), its peak that of the product on `weights` (the decode
    precision: step_cost.served_weights; a CPU's copies only), measured now or taken from this
    process's cache. refresh=True
    measures again and replaces the cached one, unless that one is less than
    REFRESH_INTERVAL_S old: then a copy of it comes back with refresh_in_s set."""
    device = torch.device(device)
    if device.type == "cuda":
        threads = 0
    elif not threads:
        threads = torch.get_num_threads()
    if weights != "fp32" and device.type != "cpu":
        raise ValueError(f"{weights} copies are the CPU's: the roof of {device} is its own dtype's")
    key = _key(device, dtype, threads, weights)
    with _LOCK:
        kept = _CACHE.get(key)
        if kept is not None:
            wait = REFRESH_INTERVAL_S - (time.time() - kept.measured_at)
            if not refresh:
                return kept
            if wait > 0:
                return replace(kept, refresh_in_s=wait)
        with intra_op_threads(threads):
            roof = _measure(device, dtype, threads, settings or settings_for(device), weights)
        _CACHE[key] = roof
        return roof


def cached(device, dtype: torch.dtype, threads: int = 0, weights: str = "fp32") -> Optional[DeviceRoof]:
    """The cached roof of (device, dtype, threads, weights), or None when it was never measured."""
    device = torch.device(device)
    if device.type == "cuda":
        threads = 0
    elif not threads:
        threads = torch.get_num_threads()
    with _LOCK:
        return _CACHE.get(_key(device, dtype, threads, weights))
