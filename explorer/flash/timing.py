"""Wall time of one head's attention by the naive, tiled and SDPA paths at several n, the
median of a few runs each (after one warm-up), and where the tiled path overtakes naive."""
from __future__ import annotations

import statistics
import time
from dataclasses import dataclass
from typing import Optional, Sequence

import torch

from explorer.flash import SweepSettings, compiled
from explorer.flash.memory import device_name
from models.attention import (MaskSpec, TileVisibility, eager_attention, sdpa_attention,
                              sdpa_mask_for, tiled_attention)

PATHS = ("naive", "tiled", "sdpa", "compiled")   # compiled: where a C++ compiler is (CPU only)


@dataclass(frozen=True)
class TimingSweep(SweepSettings):
    device: str
    seconds: dict              # path -> tuple of median seconds, one per n
    tiles: tuple               # tiles the tiled path visits per n (its Python loop's length)

    @property
    def crossover(self) -> Optional[int]:
        """The first n at which tiled is no slower than naive (None: it never is here)."""
        for n, tiled, naive in zip(self.ns, self.seconds["tiled"], self.seconds["naive"]):
            if tiled <= naive:
                return n
        return None


def _median_seconds(call, device: torch.device, repeats: int) -> float:
    call()  # warm-up: first-call allocations and kernel selection
    times = []
    for _ in range(repeats):
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        start = time.perf_counter()
        call()
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


@torch.inference_mode()
def sweep(ns: Sequence[int], d: int, block_q: int, block_k: int, mask: MaskSpec,
          device: torch.device | str = "cpu", repeats: int = 3, seed: int = 0,
          paths: Sequence[str] = PATHS) -> TimingSweep:
    device = torch.device(device)
    gen = torch.Generator().manual_seed(seed)
    paths = [p for p in paths if p != "compiled" or (device.type == "cpu" and compiled.available())]
    seconds = {path: [] for path in paths}
    tiles = []
    for n in ns:
        q, k, v = (torch.randn(1, 1, n, d, generator=gen).to(device) for _ in range(3))
        pos = torch.arange(n, device=device)
        visible = mask.visible(pos, pos)
        lazy = TileVisibility(mask, pos, pos)
        sdpa_mask = sdpa_mask_for(visible, pos, pos)
        scale = d ** -0.5
        calls = {
            "naive": lambda: eager_attention(q, k, v, visible, scale),
            "tiled": lambda: tiled_attention(q, k, v, lazy, scale, block_q=block_q, block_k=block_k),
            "sdpa": lambda: sdpa_attention(q, k, v, sdpa_mask, scale),
            "compiled": lambda: compiled.attention(q[0, 0], k[0, 0], v[0, 0], pos, pos, mask, scale,
                                                   block_q, block_k),
        }
        for path in paths:
            seconds[path].append(_median_seconds(calls[path], device, repeats))
        tiles.append(-(-n // block_q) * -(-n // block_k))
    return TimingSweep(ns=tuple(ns), d=d, block_q=block_q, block_k=block_k, mask=mask,
                       device=device_name(device), seconds={p: tuple(v) for p, v in seconds.items()},
                       tiles=tuple(tiles))
