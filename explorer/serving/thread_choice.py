"""Which intra-op thread count the decode loop's batched steps use: chosen by measuring both as
the loop runs (ThreadChoice), unless EXPLORER_BATCH_THREADS fixes it."""
from __future__ import annotations

import collections
import os
from typing import Optional, Sequence

import torch

# Intra-op threads of a step that decodes several runs: chosen by measuring (ThreadChoice),
# unless EXPLORER_BATCH_THREADS fixes them. A batched step is a few packed products of B rows
# and, per layer, a dozen small ops; their OpenMP regions wait for every thread at each barrier.
# On a quiet 2-core CPU two threads stream more tokens in all than one; with a second busy
# process on the machine one thread stalls each barrier and two lose by about half (both A/B
# measurements in docs/BENCHMARKS.md). Neither holds for every machine and moment, so the loop
# measures both as it runs.
_THREADS_ENV = os.environ.get("EXPLORER_BATCH_THREADS", "auto").strip().lower()
FIXED_BATCH_THREADS = None if _THREADS_ENV == "auto" else int(_THREADS_ENV)


def batch_threads() -> int:
    """The most intra-op threads a batched step uses: EXPLORER_BATCH_THREADS, or torch's count
    now (in a process forked for a ZeroGPU call, 1: explorer/web/zerogpu.py). Where one number
    is needed (the roofline measures steps as the loop runs them at their best) it is this."""
    return FIXED_BATCH_THREADS or torch.get_num_threads()   # 0: torch's own


class ThreadChoice:
    """Which intra-op thread count the loop's batched steps use, chosen by their measured time.

    Costs are kept per batch size class (1, 2-3, 4-7, ... runs: a step's time grows slower than
    its rows): each option's last `window` steps, in seconds per run, and its estimate is their
    lower median. A class tries every option once, then takes the cheapest, and now and then
    runs the next other option once (a probe), so a change of the machine's load (another
    process taking a core makes two threads stall at every barrier) is seen. Probes come every
    `probe_every` steps of the class; a probe no cheaper than the best's estimate doubles the
    gap (up to `max_gap`), a cheaper one sets it back, and so does a change of the best: a
    probe of the losing option costs that step its difference.

    Why a median and not an average: one step can be held up by something outside it. In the
    app, the first chart messages of a class that pressed Start together take the GIL for
    ~0.4 s; the two-thread step that ran beside them took 1.1 s instead of ~0.12 s, and a moving
    average (0.3 of each new step) made two threads look dearer than one for the rest of the
    level, whose one-thread steps took ~0.2 s (docs/BENCHMARKS.md). The lower median of
    the last three steps ignores one such step and follows a lasting change within two.

    Thread counts change only the order of fp32 sums (SmolLM2's logits at 1 against 2 threads:
    max |difference| 8e-5); every run still equals the same run alone within the tests'
    tolerance, its greedy tokens identical (tests/unit/test_scheduler.py)."""

    def __init__(self, options: Sequence[int], probe_every: int = 8, max_gap: int = 64,
                 window: int = 3):
        self.options = tuple(dict.fromkeys(options))
        self.probe_every, self.max_gap, self.window = probe_every, max_gap, window
        self.samples: dict = {}   # (class, option) -> deque of its last steps' seconds per run
        self.due: dict = {}       # class -> (steps since the last probe, gap to the next)
        self.taken: collections.Counter = collections.Counter()   # option -> steps (stats)

    @staticmethod
    def size_class(rows: int) -> int:
        return max(rows, 1).bit_length()

    def cost(self, rows: int, option: int) -> Optional[float]:
        """The option's estimated seconds per run for this many rows (None before any step)."""
        return self._estimate(self.size_class(rows), option)

    def _estimate(self, size: int, option: int) -> Optional[float]:
        held = self.samples.get((size, option))
        return sorted(held)[(len(held) - 1) // 2] if held else None

    def _best_of(self, size: int) -> Optional[int]:
        """The cheapest option measured in this size class, None before any."""
        known = [n for n in self.options if self._estimate(size, n) is not None]
        return min(known, key=lambda n: self._estimate(size, n)) if known else None

    def best(self, rows: int) -> int:
        """The cheapest option measured for this many rows (the first one before any)."""
        best = self._best_of(self.size_class(rows))
        return self.options[0] if best is None else best

    def for_rows(self, rows: int) -> int:
        """The count for a forward of `rows` rows that is not a decode step (a prefill chunk
        of several prompts, G runs x n tokens: rows = G * n): the best of the largest size
        class measured up to `rows`, or, none measured, the last option, torch's own count
        (on which a prompt alone is prefilled too). Its products have as many rows as a decode
        step of that many runs: the nearest evidence of how the cores behave now. Such
        forwards are not measured themselves (their shapes vary too much to compare)."""
        for size in range(self.size_class(rows), 0, -1):
            best = self._best_of(size)
            if best is not None:
                return best
        return self.options[-1]

    def pick(self, rows: int) -> int:
        """The thread count for the next step of `rows` runs: an untried option, a probe, or
        the best."""
        size = self.size_class(rows)
        untried = [n for n in self.options if self.cost(rows, n) is None]
        if untried:
            return untried[0]
        since, gap = self.due.get(size, (0, self.probe_every))
        best = self.best(rows)
        others = [n for n in self.options if n != best]
        if others and since + 1 >= gap:
            self.due[size] = (0, gap)
            return others[self.taken[best] % len(others)]
        self.due[size] = (since + 1, gap)
        return best

    def record(self, threads: int, rows: int, seconds: float) -> None:
        size = self.size_class(rows)
        before = self.best(rows)
        best_cost = self.cost(rows, before)
        probe = best_cost is not None and threads != before
        per_run = seconds / max(rows, 1)
        self.samples.setdefault((size, threads), collections.deque(maxlen=self.window)).append(per_run)
        self.taken[threads] += 1
        since, gap = self.due.get(size, (0, self.probe_every))
        if self.best(rows) != before:
            self.due[size] = (since, self.probe_every)     # the old best is probed again soon
        elif probe:
            self.due[size] = (since, min(gap * 2, self.max_gap) if per_run >= best_cost else self.probe_every)
