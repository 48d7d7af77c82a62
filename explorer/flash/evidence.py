"""The claims board's evidence for the FlashAttention tab (C16, C17): each function runs the tab's
own experiments with small fixed inputs and reads the verdict through the criterion the tab's
summaries use (explorer/claims/evidence.py describes the shape).

    evidence_c16(loaded)   one real head of the loaded model, tiled vs naive (schedule.tiled_exact);
                           peak extra memory measured at n = 128, 256, 512 on random inputs (the
                           memory does not depend on the values): naive quadratic, tiled linear or
                           flatter (io.scaling); apart, as a consistency check, the bytes written
                           (tiled: counted from the schedule; naive: the paper's formula)
    evidence_c17(loaded)   one row of that head followed block by block: running max, normalizer
                           and output against the full softmax (schedule.online_softmax_exact)

Total traffic is not among C16's linear quantities: the tiled schedule re-reads K and V once per
query block, 2sd·ceil(n/Bq) bytes, which grows as n² for fixed blocks (the FlashAttention paper's
Θ(n²d²/M)); what stays linear is what it writes back (the n×d output) and what it holds.
"""
from __future__ import annotations

from explorer.claims.evidence import Consistency, Evidence, Measure
from explorer.flash import capture as flash_capture
from explorer.flash import io, memory, schedule
from models.attention import MaskSpec

TAB = "flash"
SECTION = "section-flash-sec-schedule"
LAYER, HEAD = 2, 0
HEAD_N, HEAD_BLOCK = 128, 32      # C16: the real head, 4 x 4 tiles
ROW_N, ROW_BLOCK = 128, 16        # C17: 8 key blocks, so the row's max has room to rise
SWEEP_NS = (128, 256, 512)
SWEEP_D, SWEEP_BLOCK = 64, 32     # the tab's defaults for the traffic and memory section
SWEEP_PATHS = ("naive", "tiled")


def head_schedule(loaded, n: int, block: int) -> schedule.FlashSchedule:
    """The tab's run on LAYER, HEAD of the loaded model, its default prompt filled to n tokens,
    causal (each layer's own mask)."""
    ids = flash_capture.prompt_ids(loaded.tokenizer, flash_capture.DEFAULT_PROMPT, n)
    captured = flash_capture.capture(loaded.model, ids, LAYER, HEAD)
    return schedule.run(captured, block, block)


def evidence_c16(loaded) -> Evidence:
    head = head_schedule(loaded, HEAD_N, HEAD_BLOCK)
    traffic = io.sweep(SWEEP_NS, SWEEP_D, SWEEP_BLOCK, SWEEP_BLOCK, MaskSpec())
    measured = memory.sweep(SWEEP_NS, SWEEP_D, SWEEP_BLOCK, SWEEP_BLOCK, MaskSpec(), loaded.device,
                            paths=SWEEP_PATHS)
    found = io.scaling(traffic, measured)
    # the verdict: exactness on the model's own head and the measured peak extra memory; the
    # bytes written are counted from the schedule (naive: the paper's formula), shown apart
    written = Consistency("claims.k.flash_written", found.written_consistent,
                          (Measure("claims.m.written_naive_exp", found.written_naive),
                           Measure("claims.m.written_tiled_exp", found.written_tiled),
                           Measure("claims.m.traffic_ratio",
                                   traffic.naive[-1].total / traffic.counted[-1].total, "×")))
    return Evidence(
        claim="C16", passed=schedule.tiled_exact(head) and found.memory_holds,
        measures=(Measure("claims.m.flash_diff", head.diff_tiled_naive, digits=2),
                  Measure("claims.m.memory_naive_exp", found.memory_naive),
                  Measure("claims.m.memory_tiled_exp", found.memory_tiled)),
        criterion="claims.C16.criterion", tab=TAB, section=SECTION, model=loaded.name, consistency=(written,),
        fields={"tol": schedule.TOLERANCE, "n0": SWEEP_NS[0], "n1": SWEEP_NS[-1],
                "quadratic": io.QUADRATIC_MIN, "linear": io.LINEAR_MAX})


def evidence_c17(loaded) -> Evidence:
    row = head_schedule(loaded, ROW_N, ROW_BLOCK).row
    return Evidence(
        claim="C17", passed=schedule.online_softmax_exact(row),
        measures=(Measure("claims.m.row_blocks", len(row.running_max)),
                  Measure("claims.m.row_rises", row.rises),
                  Measure("claims.m.row_max_diff", row.max_diff, digits=2),
                  Measure("claims.m.row_norm_diff", row.normalizer_rel_diff, digits=2),
                  Measure("claims.m.row_out_diff", row.out_diff, digits=2)),
        criterion="claims.C17.criterion", tab=TAB, section=SECTION, model=loaded.name,
        fields={"tol": schedule.TOLERANCE})
