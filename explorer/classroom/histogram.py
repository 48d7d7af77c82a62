"""The class's answers to one question (each round of it) as counts in equal bins: what the teacher's Reveal
publishes (explorer/classroom/rooms.py) and explorer/classroom/answers.py draws.

Any finite answers are drawn, whatever a student typed: one value alone (37.5), values closer
than a chart can tell apart (0 and 5e-324, neighbouring floats), values at the ends of the float
range (±1.8e308, whose difference overflows). Nothing here subtracts two values that may be far
apart or divides by a width that may be zero: bin edges are convex combinations of the two
ends, an answer's bin is its fraction of the span, and a span narrower than NARROWEST of its
magnitude is one bin around the values' centre. Edges are finite and strictly increasing.
"""
from __future__ import annotations

import math
import sys
from dataclasses import dataclass
from typing import Optional

HIST_BINS = 12
HUGE = sys.float_info.max
NARROWEST = 1e-9          # a span narrower than this fraction of its magnitude is one value
WHOLE_LIMIT = 2.0 ** 52   # whole numbers above this have no half-unit edges in a float


@dataclass(frozen=True)
class Histogram:
    edges: tuple[float, ...]         # len(counts) + 1 bin edges, finite, strictly increasing
    counts: tuple[int, ...]
    measured: Optional[float]
    n: int


def histogram(values: list[float], measured: Optional[float], bins: int = HIST_BINS) -> Histogram:
    """Counts of `values` (finite numbers) in up to `bins` equal bins spanning the answers and
    the measured value; whole-number answers get whole-number bins when they fit."""
    return histograms([values], measured, bins)[0]


def histograms(rounds: list[list[float]], measured: Optional[float],
               bins: int = HIST_BINS) -> tuple[Histogram, ...]:
    """One histogram per round of answers, all on the same bins (spanning every round's answers
    and the measured value), so that two rounds drawn side by side share their axis."""
    rounds = [[float(v) for v in values] for values in rounds]
    span = [v for values in rounds for v in values] + ([float(measured)] if measured is not None else [])
    if not span:
        return tuple(Histogram((0.0, 1.0), (0,), measured, 0) for _ in rounds)
    edges = _edges(span, bins)
    return tuple(Histogram(edges, _counts(values, edges), measured, len(values)) for values in rounds)


def _edges(span: list[float], bins: int) -> tuple[float, ...]:
    low, high = min(span), max(span)
    if all(v.is_integer() for v in span) and high - low < bins and max(-low, high) < WHOLE_LIMIT:
        return tuple(low - 0.5 + i for i in range(int(high - low) + 2))
    if high / 2 - low / 2 <= NARROWEST * max(-low, high, 1e-300) / 2:
        return _around(low / 2 + high / 2)
    return tuple(_between(low, high, i / bins) for i in range(bins + 1))


def _counts(values: list[float], edges: tuple[float, ...]) -> tuple[int, ...]:
    n_bins = len(edges) - 1
    first, half_span = edges[0], edges[-1] / 2 - edges[0] / 2
    counts = [0] * n_bins
    for v in values:
        share = (v / 2 - first / 2) / half_span        # in [0, 1]: no overflow, no zero width
        counts[min(n_bins - 1, max(0, int(share * n_bins)))] += 1
    return tuple(counts)


def _between(low: float, high: float, share: float) -> float:
    """The point `share` of the way from low to high, never past either end (no overflow)."""
    if share <= 0:
        return low
    if share >= 1:
        return high
    return min(high, max(low, low * (1 - share) + high * share))


def _around(centre: float) -> tuple[float, float]:
    """One bin around a single value: 10 % of its magnitude wide, or 1 for values near zero."""
    half = abs(centre) * 0.05 if abs(centre) >= 1e-8 else 0.5
    return (max(-HUGE, centre - half), min(HUGE, centre + half))


def axis_range(hist: Histogram) -> tuple[float, float]:
    """The chart's x range: half a bin of margin each side (an answer on the last edge stays in
    sight), within the float range."""
    width = hist.edges[1] / 2 - hist.edges[0] / 2   # half a bin
    low, high = hist.edges[0] - width, hist.edges[-1] + width
    return (low if math.isfinite(low) else -HUGE, high if math.isfinite(high) else HUGE)
