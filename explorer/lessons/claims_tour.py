"""Lesson: the claims board (a tour of docs/CLAIMS.md, measured live).

The board's run keeps its finished BoardResult (explorer/claims/board.py; the kept board of the
model answers a second press at once). Its numbers are the board's own: the verdict of each row
(Row.verdict: "pass" only when the evidence ran, its criterion held and no consistency check
failed) counted as the board's summary counts them (BoardResult.count). A board not yet run, or
stopped before every claim had its turn, is not read."""
from __future__ import annotations

from typing import Optional

from explorer.claims import board
from explorer.lessons import Lesson, Step


def _ids(result: board.BoardResult, verdicts: tuple[str, ...]) -> str:
    return ", ".join(row.claim for row in result.rows if row.verdict in verdicts) or "—"


def read_board(result: board.BoardResult) -> Optional[dict]:
    if not isinstance(result, board.BoardResult) or not result.complete or not result.rows:
        return None
    slowest = max(result.rows, key=lambda row: row.seconds)
    return {"title": result.title, "device": result.device, "dtype": result.dtype,
            "seconds": result.seconds, "total": len(result.rows), "passed": result.count("pass"),
            "failed": result.count("fail"), "missing": result.count("missing"),
            "pass_ids": _ids(result, ("pass",)), "fail_ids": _ids(result, ("fail",)),
            "missing_ids": _ids(result, ("missing",)), "slowest": slowest.claim,
            "slowest_s": slowest.seconds}


LESSON = Lesson(
    key="claims-tour", title="lesson.claims.title", summary="lesson.claims.summary", order=90,
    steps=(
        Step(view="claims.board", look="lesson.claims.s1.look", said="lesson.claims.s1.said",
             read=read_board),
        Step(view="claims.board", look="lesson.claims.s2.look", said="lesson.claims.s2.said",
             read=read_board),
    ),
)
