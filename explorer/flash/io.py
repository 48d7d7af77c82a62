"""Bytes moved between slow memory (HBM on a GPU, RAM on a CPU) and on-chip memory (SRAM, the
CPU's caches) by naive attention and by the tiled schedule, for one head.

Naive (the standard implementation, FlashAttention paper, Algorithm 0): read Q and K, write the
n x s scores S; read S, write P = softmax(S); read P and V, write O. The score matrix crosses
twice in each direction: 4ns + 2nd + 2sd elements.

Tiled (models.attention.tiled_attention, query blocks outer): a query block is read once, its
running max, normalizer and partial output stay on chip across the key blocks, and only its
n x d output block is written. Every computed tile reads one K block and one V block; a tile the
mask empties is skipped and reads nothing. `counted` adds this up over the tiles a trace
recorded; `formula` is the same schedule with no tile skipped: 2nd + 2sd * ceil(n / Bq), the
paper's Theta(n^2 d^2 / M) once Bq grows with the on-chip size M (paper_blocks)."""
from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Sequence

import torch

from explorer.flash import SweepSettings
from explorer.inputs import InputError, whole_number
from explorer.locales import Term
from models.attention import MaskSpec, TileTrace, TileVisibility, tiled_attention


@dataclass(frozen=True)
class Traffic:
    read: int        # bytes from slow memory onto the chip
    written: int     # bytes from the chip back to slow memory

    @property
    def total(self) -> int:
        return self.read + self.written


def naive_parts(n: int, s: int, d: int, elem: int = 4) -> dict[str, int]:
    """Algorithm 0's bytes by tensor: Q read; K and V read; O written; S and P each written
    once and read once (4ns elements)."""
    return {"q": elem * n * d, "kv": elem * 2 * s * d, "o": elem * n * d, "sp": elem * 4 * n * s}


def naive(n: int, s: int, d: int, elem: int = 4) -> Traffic:
    parts = naive_parts(n, s, d, elem)
    return Traffic(read=parts["q"] + parts["kv"] + parts["sp"] // 2, written=parts["o"] + parts["sp"] // 2)


def formula(n: int, s: int, d: int, block_q: int, elem: int = 4) -> Traffic:
    """The tiled schedule with every tile computed (no mask skipping)."""
    return Traffic(read=elem * (n * d + math.ceil(n / block_q) * 2 * s * d), written=elem * n * d)


def step_traffic(tiles: Sequence[tuple], n: int, s: int, d: int, block_q: int, block_k: int,
                 elem: int = 4) -> tuple[list[int], list[int]]:
    """Bytes read and written by each step of a recorded schedule (the trace's tiles, in order).
    A query block's first step reads its Q block, its last writes its output block; a computed
    tile reads its K and V blocks."""
    n_kb = math.ceil(s / block_k)
    read, written = [], []
    for qi, kj, status in tiles:
        rows = min(block_q, n - qi * block_q)
        cols = min(block_k, s - kj * block_k)
        r = (rows * d if kj == 0 else 0) + (2 * cols * d if status == "computed" else 0)
        w = rows * d if kj == n_kb - 1 else 0
        read.append(elem * r)
        written.append(elem * w)
    return read, written


def counted(tiles: Sequence[tuple], n: int, s: int, d: int, block_q: int, block_k: int,
            elem: int = 4) -> Traffic:
    read, written = step_traffic(tiles, n, s, d, block_q, block_k, elem)
    return Traffic(read=sum(read), written=sum(written))


def on_chip_bytes(block_q: int, block_k: int, d: int, elem: int = 4) -> dict[str, int]:
    """What one query block's loop holds on chip: its Q block, one K and one V block, the score
    tile, the running max and normalizer, and the partial output."""
    return {"q_block": elem * block_q * d, "kv_blocks": elem * 2 * block_k * d,
            "score_tile": elem * block_q * block_k, "running_stats": elem * 2 * block_q,
            "partial_out": elem * block_q * d}


def paper_blocks(sram_bytes: int, d: int, elem: int = 4) -> tuple[int, int]:
    """(Bq, Bk) the FlashAttention paper picks for M elements of on-chip memory:
    Bc = ceil(M / 4d) key rows, Br = min(Bc, d) query rows."""
    m = sram_bytes // elem
    bk = max(1, math.ceil(m / (4 * d)))
    return min(bk, d), bk


@dataclass(frozen=True)
class IOSweep(SweepSettings):
    elem: int
    naive: tuple          # Traffic per n
    counted: tuple        # Traffic per n, from the schedule the engine ran
    formula: tuple        # Traffic per n, no tile skipped
    computed_tiles: tuple
    total_tiles: tuple


def run_schedule(n: int, d: int, block_q: int, block_k: int, mask: MaskSpec,
                 seed: int = 0) -> TileTrace:
    """The engine's tiled path on random (1, 1, n, d) inputs, its schedule recorded."""
    gen = torch.Generator().manual_seed(seed)
    q, k, v = (torch.randn(1, 1, n, d, generator=gen) for _ in range(3))
    pos = torch.arange(n)
    trace = TileTrace(block_q, block_k)
    tiled_attention(q, k, v, TileVisibility(mask, pos, pos), d ** -0.5, block_q=block_q,
                    block_k=block_k, trace=trace)
    return trace


def sweep(ns: Sequence[int], d: int, block_q: int, block_k: int, mask: MaskSpec,
          elem: int = 4) -> IOSweep:
    """Naive, counted and formula traffic for a sequence length n = s per entry of ns."""
    naive_t, counted_t, formula_t, computed, total = [], [], [], [], []
    for n in ns:
        trace = run_schedule(n, d, block_q, block_k, mask)
        naive_t.append(naive(n, n, d, elem))
        counted_t.append(counted(trace.tiles, n, n, d, block_q, block_k, elem))
        formula_t.append(formula(n, n, d, block_q, elem))
        computed.append(sum(status == "computed" for _, _, status in trace.tiles))
        total.append(len(trace.tiles))
    return IOSweep(ns=tuple(ns), d=d, block_q=block_q, block_k=block_k, mask=mask, elem=elem,
                   naive=tuple(naive_t), counted=tuple(counted_t), formula=tuple(formula_t),
                   computed_tiles=tuple(computed), total_tiles=tuple(total))


# C16's scaling criterion, read as the growth exponent e of a quantity y over the lengths of a
# sweep, y ∝ n^e between the first and the last n: "linear" is e <= LINEAR_MAX, "quadratic"
# e >= QUADRATIC_MIN (naive's written bytes also hold the n x d output, so at small n their
# exponent sits a little under 2). The verdict rests on the peak extra memory, measured; the
# bytes written are fixed by construction (naive: Algorithm 0's formula; tiled: counted from the
# schedule the engine ran, which writes each output block once) and are a consistency check.
LINEAR_MAX = 1.2
QUADRATIC_MIN = 1.7


def growth_exponent(ns: Sequence[int], values: Sequence[float]) -> float:
    """log(y_last / y_first) / log(n_last / n_first); NaN for fewer than two lengths or a zero."""
    if len(ns) < 2 or ns[-1] == ns[0] or values[0] <= 0 or values[-1] <= 0:
        return float("nan")
    return math.log(values[-1] / values[0]) / math.log(ns[-1] / ns[0])


@dataclass(frozen=True)
class Scaling:
    """Growth exponents of what naive and tiled write back and of the extra memory they hold."""
    written_naive: float
    written_tiled: float
    memory_naive: float
    memory_tiled: float

    @property
    def memory_holds(self) -> bool:
        """The measured peak extra memory: tiled linear or flatter in n, naive quadratic (NaN
        fails). C16's verdict rests on this."""
        return bool(self.memory_tiled <= LINEAR_MAX and self.memory_naive >= QUADRATIC_MIN)

    @property
    def holds(self) -> bool:
        """The tab's sentence: the measured memory, and the written bytes consistent."""
        return self.memory_holds and self.written_consistent

    @property
    def written_consistent(self) -> bool:
        """Consistency: naive's written bytes (the formula) quadratic, tiled's (counted from the
        schedule) linear or flatter."""
        return bool(self.written_tiled <= LINEAR_MAX and self.written_naive >= QUADRATIC_MIN)


def scaling(io_sweep: "IOSweep", memory_sweep) -> Scaling:
    """The exponents from a traffic sweep (bytes written, counted from the engine's schedule)
    and a measured memory sweep (explorer.flash.memory.MemorySweep)."""
    return Scaling(
        written_naive=growth_exponent(io_sweep.ns, [t.written for t in io_sweep.naive]),
        written_tiled=growth_exponent(io_sweep.ns, [t.written for t in io_sweep.counted]),
        memory_naive=growth_exponent(memory_sweep.ns, memory_sweep.extra["naive"]),
        memory_tiled=growth_exponent(memory_sweep.ns, memory_sweep.extra["tiled"]))


MIN_SWEEP_N = 128
MAX_SWEEP_N = {"cpu": 4096, "cuda": 16384}
MAX_SWEEP_TILES = 4096     # tiles of the largest n: the tiled path's Python loop stays ~1 s


def sweep_lengths(max_n, block_q: int, block_k: int, device: torch.device | str = "cpu") -> list[int]:
    """n = 128, 256, ... up to max_n (validated: InputError when max_n is out of range or its
    tiles exceed MAX_SWEEP_TILES)."""
    top = MAX_SWEEP_N["cuda" if torch.device(device).type == "cuda" else "cpu"]
    max_n = whole_number(max_n, Term("flash.name.max_n"), MIN_SWEEP_N, top)
    tiles = math.ceil(max_n / block_q) * math.ceil(max_n / block_k)
    if tiles > MAX_SWEEP_TILES:
        raise InputError("flash.err.sweep_tiles", n=max_n, block_q=block_q, block_k=block_k,
                         tiles=tiles, cap=MAX_SWEEP_TILES)
    ns, n = [], MIN_SWEEP_N
    while n <= max_n:
        ns.append(n)
        n *= 2
    return ns


@dataclass(frozen=True)
class TrafficResult:
    """The Memory traffic section: bytes moved with the visitor's blocks and with the paper's
    blocks for an on-chip size, and the measured extra memory, all against n."""
    counted: IOSweep
    paper: IOSweep
    memory: "MemorySweep"
    sram_kib: int
    seconds: float


def run_traffic(ns: Sequence[int], d: int, block_q: int, block_k: int, mask: MaskSpec, sram_kib: int,
                device: torch.device | str = "cpu", memory_max_n: int = 1024) -> TrafficResult:
    """io sweeps for the given blocks and for paper_blocks(sram_kib), and the measured memory of
    every path for the n up to memory_max_n (the profiler's events grow with the tiles)."""
    from explorer.flash import memory

    paper_q, paper_k = paper_blocks(sram_kib * 1024, d)
    sweep_lengths(ns[-1], paper_q, paper_k, device)          # the paper's blocks fit the cap too
    start = time.perf_counter()
    counted = sweep(ns, d, block_q, block_k, mask)
    paper = sweep(ns, d, paper_q, paper_k, mask)
    measured = memory.sweep([n for n in ns if n <= memory_max_n], d, block_q, block_k, mask, device)
    return TrafficResult(counted, paper, measured, sram_kib, time.perf_counter() - start)
