"""The naive and the tiled path on one captured head, side by side.

`run` computes the head three ways with the engine's own functions (eager_attention: the n x n
matrix; tiled_attention with a TileTrace: online softmax over tiles; sdpa_attention: torch's
fused kernel), classifies every tile of the recorded schedule by the layer's MaskSpec (empty:
the engine must skip it; partly masked; fully visible) and follows one query row block by block
through the trace's running max, normalizer and rescale factors."""
from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any, Optional

import numpy as np
import torch

from explorer.flash import io
from explorer.flash.capture import HeadCapture
from explorer.inputs import InputError, whole_number
from explorer.locales import Term
from models.attention import (TileTrace, TileVisibility, eager_attention, sdpa_attention,
                              sdpa_mask_for, tiled_attention)

MAX_FRAMES = 512          # tiles in one schedule: each is a frame the browser's player holds
SKIPPED, PARTIAL, FULL = 0, 1, 2
TOLERANCE = 1e-5          # fp32: tiled and naive sum the same terms in another order


def check_blocks(n: int, block_q: Any, block_k: Any) -> tuple[int, int]:
    """Block sizes in [1, n] whose schedule fits the player (InputError otherwise)."""
    block_q = whole_number(block_q, Term("flash.name.block_q"), 1)
    block_k = whole_number(block_k, Term("flash.name.block_k"), 1)
    for block, name in ((block_q, "flash.name.block_q"), (block_k, "flash.name.block_k")):
        if block > n:
            raise InputError("flash.err.block_gt_n", name=Term(name), block=block, n=n)
    frames = math.ceil(n / block_q) * math.ceil(n / block_k)
    if frames > MAX_FRAMES:
        raise InputError("flash.err.frames", n=n, block_q=block_q, block_k=block_k, frames=frames,
                         cap=MAX_FRAMES)
    return block_q, block_k


@dataclass(frozen=True)
class RowTrace:
    """One query row through its query block's loop over key blocks (one entry per key block)."""
    row: int                     # query index (= its position in the prompt)
    q_block: int
    computed: np.ndarray         # (n_kb,) bool: the block's tile was computed (not skipped)
    running_max: np.ndarray      # (n_kb,) m after the step (-inf until a key is visible)
    normalizer: np.ndarray       # (n_kb,) l after the step
    rescale: np.ndarray          # (n_kb,) exp(m_old - m_new) applied to l and the partial output
    partial_error: np.ndarray    # (n_kb,) max |partial output / l - final output| after the step
    full_max: float              # the max of the whole row of scores (naive)
    full_normalizer: float       # sum of exp(score - full_max) over the whole row (naive)
    max_diff: float              # |m at the end - full_max|
    normalizer_rel_diff: float   # |l at the end - full_normalizer| / full_normalizer
    out_diff: float              # max |tiled output row - full-softmax output row|

    @property
    def rises(self) -> int:
        """Key blocks after the first visible one that raised the running max (rescale < 1)."""
        return int(np.sum(rises_per_step(self.running_max[None])))

    @property
    def rise_rescales(self) -> np.ndarray:
        """The factors exp(m_old - m_new) of the steps that raised a finite running max."""
        return self.rescale[1:][rises_per_step(self.running_max[None])[0]]


@dataclass(frozen=True)
class FlashSchedule:
    capture: HeadCapture
    block_q: int
    block_k: int
    scores: np.ndarray           # (n, n) fp32 naive scores, NaN where masked
    probs: np.ndarray            # (n, n) fp32 naive probabilities
    steps: np.ndarray            # (n_steps, 2) (q block, k block) in the engine's order
    status: np.ndarray           # (n_steps,) SKIPPED / PARTIAL / FULL from the layer's MaskSpec
    traced_skipped: np.ndarray   # (n_steps,) bool: the engine's trace says "skipped"
    step_read: np.ndarray        # (n_steps,) bytes read from slow memory by each step
    step_written: np.ndarray     # (n_steps,) bytes written back by each step
    naive_traffic: io.Traffic
    tiled_traffic: io.Traffic    # counted from the trace
    formula_traffic: io.Traffic  # no tile skipped
    on_chip: dict                # bytes held on chip per item (io.on_chip_bytes)
    diff_tiled_naive: float
    diff_tiled_sdpa: Optional[float]   # None when SDPA cannot run this head (a logit softcap)
    diff_naive_sdpa: Optional[float]
    row: RowTrace
    seconds: float               # wall time of run(): the three paths, the trace, the row

    @property
    def n(self) -> int:
        return self.capture.n

    @property
    def grid(self) -> tuple[int, int]:
        """(query blocks, key blocks)."""
        return math.ceil(self.n / self.block_q), math.ceil(self.n / self.block_k)

    @property
    def skips_match_mask(self) -> bool:
        """The engine skipped exactly the tiles the mask empties."""
        return bool(np.array_equal(self.traced_skipped, self.status == SKIPPED))


def tiled_exact(result: "FlashSchedule", tol: float = TOLERANCE) -> bool:
    """C16's exactness: max |tiled − naive| <= tol on the head."""
    return bool(result.diff_tiled_naive <= tol)


def online_softmax_exact(row: RowTrace, tol: float = TOLERANCE) -> bool:
    """C17: the row's running max rose at least once after the first visible block (so a
    rescale happened), and after its last block the running max (relative to the row's
    largest score), the normalizer (relative) and the output equal the full softmax's within tol."""
    return bool(row.rises >= 1 and row.max_diff <= tol * max(1.0, abs(row.full_max))
                and row.normalizer_rel_diff <= tol and row.out_diff <= tol)


def rises_per_step(running_max: np.ndarray) -> np.ndarray:
    """(rows, n_kb) running maxes -> (rows, n_kb - 1) bool: the max rose at that step, from a
    finite value (the first visible key sets m; it does not raise it)."""
    before, after = running_max[:, :-1], running_max[:, 1:]
    return np.isfinite(before) & (after > before)


def most_rescaled_row(trace: TileTrace, block_q: int) -> int:
    """The query row whose running max rises most often (the last such row on a tie)."""
    counts = np.concatenate([rises_per_step(m[:, 0, 0].T.numpy()).sum(axis=1) for m in trace.row_max])
    return int(len(counts) - 1 - np.argmax(counts[::-1]))


def tile_status(visible: torch.Tensor, steps: np.ndarray, block_q: int, block_k: int) -> np.ndarray:
    """SKIPPED / PARTIAL / FULL per (q block, k block) from the (n, s) visibility matrix."""
    out = np.empty(len(steps), dtype=np.int8)
    for i, (qi, kj) in enumerate(steps):
        tile = visible[qi * block_q:(qi + 1) * block_q, kj * block_k:(kj + 1) * block_k]
        out[i] = SKIPPED if not bool(tile.any()) else FULL if bool(tile.all()) else PARTIAL
    return out


def _max_abs(a: torch.Tensor, b: torch.Tensor) -> float:
    return float((a.float() - b.float()).abs().max()) if a.numel() else 0.0


@torch.inference_mode()
def follow_row(cap: HeadCapture, trace: TileTrace, row: int, block_q: int, block_k: int,
               scores: torch.Tensor, out_tiled: torch.Tensor, out_naive: torch.Tensor) -> RowTrace:
    """The row's running max, normalizer and rescale from the trace of the whole head; its
    partial output after every key block from the engine run again on this one row with
    keep_partial (a query row's online-softmax state depends on that row alone)."""
    qi, r = divmod(row, block_q)
    m = trace.row_max[qi][:, 0, 0, r].numpy()                                  # (n_kb,)
    l = trace.row_norm[qi][:, 0, 0, r].numpy()
    rescale = trace.rescale[qi][:, 0, 0, r].numpy()
    n_kb = m.shape[0]
    computed = np.array([status == "computed" for q_, _, status in trace.tiles if q_ == qi])
    one = TileTrace(1, block_k, keep_partial=True)
    pos = cap.positions
    q = cap.q[None, None, row:row + 1]                                          # (1, 1, 1, D)
    k, v = cap.k[None, None], cap.v[None, None]                                 # (1, 1, n, D)
    final, _ = tiled_attention(q, k, v, TileVisibility(cap.mask, pos[row:row + 1], pos), cap.scale,
                               softcap=cap.softcap, block_q=1, block_k=block_k, trace=one)
    acc = one.partial_out[0][:, 0, 0, 0]                                        # (n_kb, D)
    norm = one.row_norm[0][:, 0, 0, 0]                                          # (n_kb,)
    with np.errstate(invalid="ignore", divide="ignore"):
        partial = (acc / norm[:, None]).numpy()                                 # (n_kb, D)
        err = np.abs(partial - final[0, 0, 0].numpy()[None]).max(axis=1)
    err = np.where(norm.numpy() > 0, err, np.nan)   # nothing visible yet: no partial output
    srow = scores[row]
    full_max = float(srow.max())
    full_norm = float(torch.exp(srow - full_max).sum())
    return RowTrace(row=row, q_block=qi, computed=computed[:n_kb], running_max=m, normalizer=l,
                    rescale=rescale, partial_error=err, full_max=full_max,
                    full_normalizer=full_norm, max_diff=abs(float(m[-1]) - full_max),
                    normalizer_rel_diff=abs(float(l[-1]) - full_norm) / full_norm,
                    out_diff=_max_abs(out_tiled[row], out_naive[row]))


@torch.inference_mode()
def run(cap: HeadCapture, block_q: Any, block_k: Any, row: Any = None) -> FlashSchedule:
    """Naive, tiled and SDPA on the captured head; the tiled schedule, classified; one row
    followed (default: the row whose running max rises most often, so rescaling shows)."""
    n, d = cap.n, cap.head_dim
    block_q, block_k = check_blocks(n, block_q, block_k)
    row = None if row is None else whole_number(row, Term("flash.name.row"), 0, n - 1)
    start = time.perf_counter()
    pos = cap.positions
    visible = cap.mask.visible(pos, pos).expand(n, n)                           # (n, n) bool
    q, k, v = cap.q[None, None], cap.k[None, None], cap.v[None, None]           # (1, 1, n, D)
    out_naive, probs = eager_attention(q, k, v, visible, cap.scale, softcap=cap.softcap)
    trace = TileTrace(block_q, block_k)
    out_tiled, _ = tiled_attention(q, k, v, TileVisibility(cap.mask, pos, pos), cap.scale,
                                   softcap=cap.softcap, block_q=block_q, block_k=block_k, trace=trace)
    out_sdpa = None
    if cap.softcap is None:
        out_sdpa = sdpa_attention(q, k, v, sdpa_mask_for(visible, pos, pos), cap.scale)
    scores = (cap.q @ cap.k.T) * cap.scale                                      # (n, n)
    if cap.softcap is not None:
        scores = cap.softcap * torch.tanh(scores / cap.softcap)
    scores = scores.masked_fill(~visible, float("-inf"))
    steps = np.array([(qi, kj) for qi, kj, _ in trace.tiles], dtype=np.int32)
    if row is None:
        row = most_rescaled_row(trace, block_q)
    read, written = io.step_traffic(trace.tiles, n, n, d, block_q, block_k)
    follow = follow_row(cap, trace, row, block_q, block_k, scores, out_tiled[0, 0], out_naive[0, 0])
    return FlashSchedule(
        capture=cap, block_q=block_q, block_k=block_k,
        scores=scores.masked_fill(~visible, float("nan")).numpy(), probs=probs[0, 0].numpy(),
        steps=steps, status=tile_status(visible, steps, block_q, block_k),
        traced_skipped=np.array([s == "skipped" for _, _, s in trace.tiles]),
        step_read=np.array(read, dtype=np.int64), step_written=np.array(written, dtype=np.int64),
        naive_traffic=io.naive(n, n, d), tiled_traffic=io.counted(trace.tiles, n, n, d, block_q, block_k),
        formula_traffic=io.formula(n, n, d, block_q), on_chip=io.on_chip_bytes(block_q, block_k, d),
        diff_tiled_naive=_max_abs(out_tiled, out_naive),
        diff_tiled_sdpa=None if out_sdpa is None else _max_abs(out_tiled, out_sdpa),
        diff_naive_sdpa=None if out_sdpa is None else _max_abs(out_naive, out_sdpa),
        row=follow, seconds=time.perf_counter() - start)
