"""The claims board: every claim of docs/CLAIMS.md checked live on the loaded model.

    run(loaded) -> BoardResult        each claim's evidence function (registry.py), in order,
                                      timed, under a per-claim and a whole-board time limit
    board(loaded, rerun=False)        the same, answered from a per-process cache keyed by model,
                                      device and dtype (a revisit is instant; rerun recomputes)
    table(result, lang), summary(result, lang)

A row passes only when its evidence function ran, returned an Evidence for that claim and the
claim's criterion held. Everything else is a visible non-pass with a reason in the visitor's
language: the function raised (the traceback goes to the server log, never to the page), ran out
of time, was not run (stopped, or the board's time ran out), or does not exist yet ("not
available").

Time limits: Python cannot interrupt a running function, so each one runs in a worker thread
and the board stops waiting for it at its limit. A function still running from an earlier
board is not started again beside itself (its row says so), so a function that hangs costs at
most one thread.
"""
from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Optional

import pandas as pd

from explorer.claims.evidence import Consistency, Evidence, Measure
from explorer.claims.registry import CLAIMS, ClaimEntry, resolve
from explorer.locales import has, text
from explorer.serving import start_worker

log = logging.getLogger(__name__)

# One evidence function takes a few seconds on SmolLM2 and about twice that on Gemma with the
# cores to itself; on a shared 2-core CPU the slowest (C1, C2) took 15-17 s on SmolLM2 and past
# 30 s on Gemma. The limits bound a hung function, not a slow machine.
CLAIM_LIMIT_S = 90.0
BOARD_LIMIT_S = 420.0    # the whole board (the goal for SmolLM2 is 60 s on a 2-core CPU)
POLL_S = 0.05            # how often a wait for a function looks at the stop flag and the clock

# Why a row has no verdict from its evidence (locale keys; None: the evidence gave one).
MISSING = "claims.err.missing"          # the evidence function does not exist yet
FAILED = "claims.err.failed"            # it raised
BAD_RESULT = "claims.err.bad_result"    # it returned something other than this claim's Evidence
TIMEOUT = "claims.err.timeout"          # it ran past its limit
BUSY = "claims.err.busy"                # it is still running from an earlier board
BOARD_TIME = "claims.err.board_time"    # not started: the board's time limit was reached
STOPPED = "claims.err.stopped"          # not started or abandoned: the visitor stopped the board
NOT_RUN = "claims.verdict.pending"      # the board before its first run (the tab's first view)

Progress = Callable[[int, int, str], None]   # (claims done, claims in all, claim starting now)


@dataclass(frozen=True)
class Row:
    claim: str
    statement: str                 # locale key of the claim's statement
    evidence: Optional[Evidence]   # None when the function did not return one
    error: Optional[str]           # None, or one of the reasons above (a locale key)
    error_fields: Mapping[str, Any] = field(default_factory=dict)
    seconds: float = 0.0           # wall time of the evidence function (0 if not started)
    tab: str = ""                  # tab id that shows the claim
    section: str = ""              # elem_id of the section ("" when unknown: the tab opens)

    @property
    def passed(self) -> bool:
        """The criterion held on the evidence, and no consistency check found the computation
        broken."""
        return (self.error is None and self.evidence is not None and self.evidence.passed
                and self.evidence.consistent)

    @property
    def verdict(self) -> str:
        """"pass", "fail" (criterion not met, or no evidence because something broke),
        "missing" (no evidence function yet) or "pending" (the board has not run)."""
        if self.passed:
            return "pass"
        return {MISSING: "missing", NOT_RUN: "pending"}.get(self.error, "fail")

    @property
    def link(self) -> str:
        """The page anchor that opens the tab and section (explorer/ui/page/shell.py handles it)."""
        return f"#open={self.tab}/{self.section}" if self.section else f"#open={self.tab}"


@dataclass(frozen=True)
class BoardResult:
    model: str                 # registry name
    title: str                 # the model's display title
    device: str
    dtype: str
    rows: tuple[Row, ...]
    computed_at: float         # time.time() when the board finished
    seconds: float             # wall time of the whole board
    complete: bool             # False when stopped before every claim had its turn

    def count(self, verdict: str) -> int:
        return sum(row.verdict == verdict for row in self.rows)


def _no_verdict(entry: ClaimEntry, reason: str, seconds: float = 0.0, **fields: Any) -> Row:
    """A row without evidence: `reason` says why (a locale key, formatted with `fields`)."""
    return Row(entry.claim, entry.statement, None, reason, fields, seconds, entry.places[0], "")


# Evidence functions abandoned at their time limit and still running, by target.
_ABANDONED: dict[str, threading.Thread] = {}
_ABANDONED_LOCK = threading.Lock()


def _run_one(entry: ClaimEntry, loaded: Any, limit_s: float,
             should_stop: Callable[[], bool]) -> Row:
    try:
        function = resolve(entry)
    except Exception:
        log.exception("claims board: importing %s failed", entry.target)
        return _no_verdict(entry, FAILED)
    if function is None:
        return _no_verdict(entry, MISSING)
    with _ABANDONED_LOCK:
        earlier = _ABANDONED.get(entry.target)
        if earlier is not None and earlier.is_alive():
            return _no_verdict(entry, BUSY)
        _ABANDONED.pop(entry.target, None)

    outcome: dict[str, Any] = {}
    done = threading.Event()

    def work() -> None:
        try:
            outcome["value"] = function(loaded)
        except BaseException as error:  # noqa: BLE001 - handed to the board, logged there
            outcome["error"] = error
        finally:
            done.set()

    started = time.perf_counter()
    worker = start_worker(work, f"claim-{entry.claim}")   # waited for at interpreter exit
    while not done.wait(POLL_S):
        elapsed = time.perf_counter() - started
        if should_stop() or elapsed > limit_s:
            with _ABANDONED_LOCK:
                _ABANDONED[entry.target] = worker
            if should_stop():
                return _no_verdict(entry, STOPPED, elapsed)
            log.warning("claims board: %s ran past its limit of %.0f s", entry.target, limit_s)
            return _no_verdict(entry, TIMEOUT, elapsed, limit=limit_s)
    seconds = time.perf_counter() - started
    if "error" in outcome:
        error = outcome["error"]
        log.error("claims board: %s raised", entry.target, exc_info=(type(error), error,
                                                                      error.__traceback__))
        return _no_verdict(entry, FAILED, seconds)
    evidence = outcome.get("value")
    if not isinstance(evidence, Evidence) or evidence.claim != entry.claim:
        log.error("claims board: %s returned %r, not the Evidence of %s", entry.target,
                  type(evidence).__name__, entry.claim)
        return _no_verdict(entry, BAD_RESULT, seconds)
    return Row(entry.claim, entry.statement, evidence, None, {}, seconds,
               evidence.tab or entry.places[0], evidence.section)


def run(loaded: Any, progress: Optional[Progress] = None,
        should_stop: Optional[Callable[[], bool]] = None,
        registry: Sequence[ClaimEntry] = CLAIMS, *, on_row: Optional[Callable[[Row], None]] = None,
        claim_limit_s: float = CLAIM_LIMIT_S, board_limit_s: float = BOARD_LIMIT_S) -> BoardResult:
    """Every claim's evidence on `loaded` (an explorer.runtime.LoadedModel), in registry order.
    `progress(done, total, claim)` hears before each claim and `on_row(row)` after it;
    `should_stop()` is polled while waiting (True: the running function is abandoned and the
    rest are marked stopped)."""
    should_stop = should_stop or (lambda: False)
    started = time.perf_counter()
    rows: list[Row] = []
    complete = True
    for index, entry in enumerate(registry):
        if progress is not None:
            progress(index, len(registry), entry.claim)
        left = board_limit_s - (time.perf_counter() - started)
        if should_stop():
            complete = False
            rows.append(_no_verdict(entry, STOPPED))
        elif left <= 0:
            rows.append(_no_verdict(entry, BOARD_TIME, limit=board_limit_s))
        else:
            row = _run_one(entry, loaded, min(claim_limit_s, left), should_stop)
            if row.error == TIMEOUT and row.error_fields["limit"] < claim_limit_s:
                # the board's limit, not the function's own, cut it off
                row = _no_verdict(entry, BOARD_TIME, row.seconds, limit=board_limit_s)
            complete = complete and row.error != STOPPED
            rows.append(row)
        if on_row is not None:
            on_row(rows[-1])
    if progress is not None:
        progress(len(registry), len(registry), "")
    spec = getattr(loaded, "spec", None)
    return BoardResult(
        model=loaded.name, title=getattr(spec, "title", None) or loaded.name,
        device=str(loaded.device), dtype=str(loaded.dtype).replace("torch.", ""),
        rows=tuple(rows), computed_at=time.time(), seconds=time.perf_counter() - started,
        complete=complete)


def pending(registry: Sequence[ClaimEntry] = CLAIMS, done: Sequence[Row] = ()) -> BoardResult:
    """The board before it runs (every claim with its statement and link, nothing measured),
    or while it runs: the rows `done` so far, then the claims still to come."""
    rows = (*done, *(_no_verdict(entry, NOT_RUN) for entry in registry[len(done):]))
    return BoardResult(model="", title="", device="", dtype="", rows=rows, computed_at=0.0,
                       seconds=0.0, complete=False)


# ----------------------------------------------------------------------------- the cache

class BoardCache:
    """Finished boards per (registry, model, device, dtype), shared by every visitor of the
    process. One board at a time per key: a second visitor asking meanwhile waits for it and
    gets the same result (a rerun asked while one was running is answered by that run)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._results: dict[tuple, BoardResult] = {}
        self._key_locks: dict[tuple, threading.Lock] = {}

    @staticmethod
    def key(loaded: Any, registry: Sequence[ClaimEntry]) -> tuple:
        return (tuple(entry.target for entry in registry), loaded.name, str(loaded.device),
                str(loaded.dtype))

    def cached(self, loaded: Any, registry: Sequence[ClaimEntry] = CLAIMS) -> Optional[BoardResult]:
        with self._lock:
            return self._results.get(self.key(loaded, registry))

    def forget(self, loaded: Any, registry: Sequence[ClaimEntry] = CLAIMS) -> None:
        with self._lock:
            self._results.pop(self.key(loaded, registry), None)

    def get(self, loaded: Any, *, rerun: bool = False, progress: Optional[Progress] = None,
            should_stop: Optional[Callable[[], bool]] = None,
            registry: Sequence[ClaimEntry] = CLAIMS, on_row: Optional[Callable[[Row], None]] = None,
            **limits: float) -> Optional[BoardResult]:
        """The cached board, or a new one (rerun=True: always new unless one finished after
        this call began). None when stopped while waiting for another visitor's board."""
        should_stop = should_stop or (lambda: False)
        asked = time.time()
        key = self.key(loaded, registry)
        with self._lock:
            key_lock = self._key_locks.setdefault(key, threading.Lock())
        while not key_lock.acquire(timeout=POLL_S):
            if should_stop():
                return None
        try:
            with self._lock:
                cached = self._results.get(key)
            if cached is not None and (not rerun or cached.computed_at >= asked):
                return cached
            result = run(loaded, progress, should_stop, registry, on_row=on_row, **limits)
            if result.complete:   # a stopped board is shown, not kept
                with self._lock:
                    self._results[key] = result
            return result
        finally:
            key_lock.release()


CACHE = BoardCache()


def board(loaded: Any, *, rerun: bool = False, progress: Optional[Progress] = None,
          should_stop: Optional[Callable[[], bool]] = None,
          registry: Sequence[ClaimEntry] = CLAIMS, on_row: Optional[Callable[[Row], None]] = None,
          **limits: float) -> Optional[BoardResult]:
    """run() through the process's cache (see BoardCache.get)."""
    return CACHE.get(loaded, rerun=rerun, progress=progress, should_stop=should_stop,
                     registry=registry, on_row=on_row, **limits)


# ----------------------------------------------------------------------------- words

COLUMNS = ("id", "claim", "evidence", "criterion", "verdict", "seconds", "link")
# gr.Dataframe datatypes of COLUMNS: the statement, evidence and link cells are Markdown
DATATYPES = ("str", "markdown", "markdown", "markdown", "str", "str", "markdown")


def _text(key: str, lang: str, **fields: Any) -> str:
    """A locale text; a key an evidence author has not added yet shows as the key itself
    (logged) rather than breaking the whole board."""
    if not has(key):
        log.warning("claims board: no locale text %r", key)
        return key
    try:
        return text(key, lang, **fields)
    except (KeyError, IndexError, ValueError):
        log.warning("claims board: locale text %r does not format with %s", key, sorted(fields))
        return key


def format_value(value: float, digits: int = 3) -> str:
    """A measured number with `digits` significant digits; whole numbers of any size in full
    (46,080), tiny or huge ones in scientific notation (3.1e-06)."""
    value = float(value)
    if not math.isfinite(value):
        return str(value)
    if value == 0:
        return "0"
    magnitude = abs(value)
    if 1e-3 <= magnitude < 1e15:
        whole = len(str(int(magnitude)))     # digits before the point
        if value == int(value) and whole >= digits:
            return f"{value:,.0f}"
        if magnitude < 1e6:
            return f"{value:,.{max(digits, whole)}g}"
    return f"{value:.{max(digits - 1, 0)}e}"


def format_measure(measure: Measure, lang: str) -> str:
    number = format_value(measure.value, measure.digits)
    unit = measure.unit
    amount = f"{number}{unit}" if unit in ("%", "×", "") else f"{number} {unit}"
    return f"{_text(measure.label, lang)} = {amount}"


def format_consistency(check: Consistency, lang: str) -> str:
    mark = "✓" if check.holds else "✗"
    numbers = "; ".join(format_measure(m, lang) for m in check.measures)
    return f"{mark} {_text(check.label, lang)}" + (f" ({numbers})" if numbers else "")


def _evidence_cell(row: Row, lang: str) -> str:
    """The measures the verdict rests on; on a line under them (the table's markdown cells
    break lines at a newline), apart, the consistency checks."""
    if row.error == NOT_RUN:
        return "—"
    if row.evidence is None:
        return _text(row.error or FAILED, lang, **row.error_fields)
    cell = "; ".join(format_measure(m, lang) for m in row.evidence.measures)
    if row.evidence.consistency:
        cell += "\n" + _text("claims.consistency", lang) + " " + "; ".join(
            format_consistency(check, lang) for check in row.evidence.consistency)
    return cell


def _criterion_cell(row: Row, lang: str) -> str:
    if row.evidence is None:
        return "—"
    return _text(row.evidence.criterion, lang, **row.evidence.fields)


def _link_cell(row: Row, lang: str, tab_titles: Mapping[str, str]) -> str:
    title_key = tab_titles.get(row.tab, f"{row.tab}.tab")
    tab_title = _text(title_key, lang) if has(title_key) else row.tab
    return f"[{_text('claims.open', lang, tab=tab_title)}]({row.link})"


def table(result: BoardResult, lang: str,
          tab_titles: Optional[Mapping[str, str]] = None) -> pd.DataFrame:
    """One row per claim, headers and words in `lang`. `tab_titles`: tab id -> locale key of
    its title, for the links (default "<id>.tab")."""
    tab_titles = tab_titles or {}
    cells = [[row.claim, _text(row.statement, lang), _evidence_cell(row, lang),
              _criterion_cell(row, lang), _text(f"claims.verdict.{row.verdict}", lang),
              f"{row.seconds:.1f}", _link_cell(row, lang, tab_titles)] for row in result.rows]
    return pd.DataFrame(cells, columns=[_text(f"claims.col.{c}", lang) for c in COLUMNS])


def summary(result: BoardResult, lang: str) -> str:
    """"n of 19 pass on <model>, computed at <time> in <s>", with the other verdicts counted."""
    if all(row.verdict == "pending" for row in result.rows):
        return _text("claims.empty", lang)
    at = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(result.computed_at))
    line = _text("claims.summary", lang, passed=result.count("pass"), total=len(result.rows),
                 model=result.title, device=result.device, dtype=result.dtype, time=at,
                 seconds=result.seconds, failed=result.count("fail"),
                 missing=result.count("missing"))
    if not result.complete:
        line += " " + _text("claims.summary_stopped", lang)
    return line


def figures(result: BoardResult, lang: str,
            tab_titles: Optional[Mapping[str, str]] = None) -> tuple[pd.DataFrame]:
    return (table(result, lang, tab_titles),)
