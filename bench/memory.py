"""The server's memory as the benchmarks read it (bench/fuzz.py, bench/soak.py,
bench/class_siege.py): this process's RSS from /proc/self/status, RSS once freed heap is given
back, and the least-squares growth of a series of samples."""
from __future__ import annotations

import gc
from typing import Optional

MB = 1 << 20


def rss_bytes() -> int:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return 0


def rss_mb() -> float:
    return rss_bytes() / MB


def live_rss_bytes() -> int:
    """RSS after a garbage collection and glibc's malloc_trim(0): the app keeps up to 1 GB of
    freed heap mapped for reuse (models.device.tune_cpu_allocator), which is not growth."""
    import ctypes

    gc.collect()
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):   # not glibc: RSS as it is
        pass
    return rss_bytes()


def slope_mb_per_min(samples: list[tuple[float, float]]) -> Optional[float]:
    """Least-squares slope of (seconds, MB) in MB per minute; None under 3 points or when every
    sample has the same time."""
    if len(samples) < 3:
        return None
    n = len(samples)
    mean_t = sum(t for t, _ in samples) / n
    mean_m = sum(m for _, m in samples) / n
    var = sum((t - mean_t) ** 2 for t, _ in samples)
    if var == 0:
        return None
    return 60 * sum((t - mean_t) * (m - mean_m) for t, m in samples) / var
