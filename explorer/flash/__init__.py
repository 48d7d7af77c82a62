"""FlashAttention, live (claims C16, C17): one real attention head of the loaded model run by
the naive path (the n x n score matrix written, softmaxed, read back) and by the engine's tiled
online-softmax path, whose recorded tile trace drives the pictures.

    capture.py    the real q, k, v of one layer and head, through the model's recording points
    schedule.py   run(capture, block sizes, row) -> FlashSchedule: the tiles the engine computed
                  or skipped, classified by the layer's own MaskSpec; one row's running state;
                  exactness against naive and SDPA; bytes moved per step
    io.py         bytes between slow and on-chip memory, counted from the schedule a run
                  actually took and from the FlashAttention paper's formula, swept over n
    memory.py     measured peak extra memory of naive, tiled and SDPA on this device
    timing.py     wall time of naive, tiled and SDPA at several n
    exactness.py  tiled vs naive vs SDPA on random inputs across n, block sizes and masks
    figures.py    figures(result, lang): Plotly figures in the visitor's language
    evidence.py   the claims board's rows for C16 and C17, through the criteria the summaries use
"""
from __future__ import annotations

from dataclasses import dataclass

from models.attention import MaskSpec


@dataclass(frozen=True)
class SweepSettings:
    """What each sweep over n (io, memory, timing) records of the inputs it ran."""
    ns: tuple
    d: int
    block_q: int
    block_k: int
    mask: MaskSpec
