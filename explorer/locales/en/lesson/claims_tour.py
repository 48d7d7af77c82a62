"""The claims-board lesson (explorer/lessons/claims_tour.py), in English."""
STRINGS = {
    "lesson.claims.title": "The claims board",
    "lesson.claims.summary": "Every claim of the notes checked live on the loaded model: what a verdict means and where to see it.",
    "lesson.claims.s1.look": "The board runs one evidence function per claim of the notes on the loaded model: the same code the tabs run, with small fixed inputs. Each row shows the numbers measured, the criterion they were judged by, and the **verdict**. The first run takes a while; later presses answer from the board kept for this model.",
    "lesson.claims.s1.said": "Your board ran every claim on **{title}** ({device}, {dtype}) in {seconds:.0f} s: **{passed} of {total} pass**, {failed} fail, {missing} not available. A row passes only when its evidence function ran on this model, its criterion held on the numbers in the evidence column, and no consistency check beside them found the computation broken; anything else (a criterion missed, an error, a time limit) is a visible fail with its reason.",
    "lesson.claims.s2.look": "Read the board row by row: the evidence column names each number, the criterion column says what it must satisfy, and the link opens the tab and section where you can run the same measurement with your own settings.",
    "lesson.claims.s2.said": "Passed: **{pass_ids}**. Failed: **{fail_ids}**. Not available: {missing_ids}. The slowest row was {slowest} ({slowest_s:.1f} s). A fail is a result too: the row says which number missed which threshold, and its link shows the section where to look.",
}
