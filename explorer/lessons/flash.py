"""Lesson: FlashAttention (the notes' section on tiled attention; claims C16, C17).

Every number is read from the visitor's own run of a FlashAttention section through the
criteria the claims board uses (explorer/flash/evidence.py): schedule.tiled_exact and
online_softmax_exact on the real head, the schedule's skipped tiles against the mask
(FlashSchedule.skips_match_mask), the exactness table's tolerance (schedule.TOLERANCE, as the
section's summary reads it) and io.scaling's memory_holds. The predict step asks how many tiles
the causal mask lets FlashAttention skip, for the step's n and tile sizes."""
from __future__ import annotations

from typing import Optional

from explorer.flash import exactness, io, schedule
from explorer.flash.capture import DEFAULT_PROMPT
from explorer.lessons import Lesson, Predict, Step
from explorer.locales import Term

MARK = {True: "✓", False: "✗"}
# the predict step: 256 tokens cut into 4 query blocks of 64 and 8 key blocks of 32
N, BLOCK_Q, BLOCK_K = 256, 64, 32
# the traffic sweep: n = 128 ... 1,024 with the tab's default tiles (a second or two)
IO = {"mask": "causal", "block_q": 32, "block_k": 32, "d": 64, "sram": 64, "max_n": 1024}


def read_schedule(result: schedule.FlashSchedule) -> Optional[dict]:
    if not isinstance(result, schedule.FlashSchedule):
        return None
    status = result.status
    q_blocks, k_blocks = result.grid
    per_block = [int(((result.steps[:, 0] == i) & (status == schedule.SKIPPED)).sum())
                 for i in range(q_blocks)]
    row = result.row
    return {"n": result.n, "bq": result.block_q, "bk": result.block_k, "layer": result.capture.layer,
            "head": result.capture.head, "qb": q_blocks, "kb": k_blocks, "tiles": len(status),
            "answer": int((status == schedule.SKIPPED).sum()),
            "partial": int((status == schedule.PARTIAL).sum()),
            "full": int((status == schedule.FULL).sum()),
            "per_block": " + ".join(str(c) for c in per_block),
            "match": MARK[result.skips_match_mask], "diff": result.diff_tiled_naive,
            "tol": schedule.TOLERANCE, "exact": MARK[schedule.tiled_exact(result)],
            "row": row.row, "rises": row.rises, "online": MARK[schedule.online_softmax_exact(row)]}


def read_exact(cases: list) -> Optional[dict]:
    if not isinstance(cases, list) or not cases or not all(isinstance(c, exactness.ExactCase) for c in cases):
        return None
    worst = [max(c.tiled_vs_naive, c.tiled_vs_sdpa, c.naive_vs_sdpa) for c in cases]
    off = sum(w > schedule.TOLERANCE for w in worst)
    return {"cases": len(cases), "ns": ", ".join(str(n) for n in sorted({c.n for c in cases})),
            "blocks": len({(c.block_q, c.block_k) for c in cases}), "masks": len({c.mask for c in cases}),
            "tn": max(c.tiled_vs_naive for c in cases), "ts": max(c.tiled_vs_sdpa for c in cases),
            "off": off, "tol": schedule.TOLERANCE, "verdict": MARK[off == 0]}


def read_io(result: io.TrafficResult) -> Optional[dict]:
    if not isinstance(result, io.TrafficResult):
        return None
    counted, measured = result.counted, result.memory
    found = io.scaling(counted, measured)
    naive, tiled = counted.naive[-1], counted.counted[-1]
    return {"n": counted.ns[-1], "d": counted.d, "bq": counted.block_q, "bk": counted.block_k,
            "naive_mb": naive.total / 1e6, "tiled_mb": tiled.total / 1e6,
            "ratio": naive.total / tiled.total, "w_naive": found.written_naive,
            "w_tiled": found.written_tiled, "m0": measured.ns[0], "m1": measured.ns[-1],
            "mem_naive": found.memory_naive, "mem_tiled": found.memory_tiled,
            "quadratic": io.QUADRATIC_MIN, "linear": io.LINEAR_MAX,
            "verdict": MARK[found.memory_holds]}


LESSON = Lesson(
    key="flash", title="lesson.flash.title", summary="lesson.flash.summary", order=70,
    steps=(
        Step(view="flash.schedule", look="lesson.flash.s1.look", said="lesson.flash.s1.said",
             read=read_schedule,
             settings={"prompt": DEFAULT_PROMPT, "n": N, "layer": 2, "head": 0, "row": -1,
                       "mask": "causal", "block_q": BLOCK_Q, "block_k": BLOCK_K},
             fields={"n": N, "bq": BLOCK_Q, "bk": BLOCK_K},
             predict=Predict(question="lesson.flash.s1.ask", answer="answer",
                             unit=Term("lesson.flash.unit"), why="lesson.flash.s1.why",
                             low=0, high=(N // BLOCK_Q) * (N // BLOCK_K))),
        Step(view="flash.exact", look="lesson.flash.s2.look", said="lesson.flash.s2.said",
             read=read_exact),
        Step(view="flash.io", look="lesson.flash.s3.look", said="lesson.flash.s3.said", read=read_io,
             settings=IO),
    ),
)
