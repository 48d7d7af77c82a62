"""Claims tab: the board of every claim of docs/CLAIMS.md, computed live on the loaded model
(explorer/claims/board.py), with a link per row that opens the tab and section showing it.

Thin wiring: the handler loads the model and asks the board, which answers from its
per-process cache or runs every claim's evidence function in a worker thread; the handler
streams its progress (one message per claim) and keeps the finished board in gr.State for the
language switch. The kept board is every visitor's: "Run again" replaces it at most once per
RERUN_INTERVAL_S (a board measured under a load the caller chose would be everyone's); one asked
sooner is answered with the kept board and a line saying when a new one may run. Stop (explorer/web/stopping.py) ends the stream at once with "Stopped."; the
claim being measured finishes in the worker, which stops before the next one (as on a closed
page).

EXPLORER_CLAIMS_REGISTRY="module:attribute" replaces the registry of evidence functions with
another sequence of explorer.claims.registry.ClaimEntry (the browser tests serve a board of
fast fake functions this way); unset, the board runs the real ones. Only a test run may replace
it: a served app whose board ran fake functions would show verdicts nobody measured, so outside
pytest the tab refuses to build, and a replaced registry is named on the page above the board.
"""
from __future__ import annotations

import importlib
import math
import os
import queue
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from typing import Any

import gradio as gr

from explorer.claims import board
from explorer.claims.registry import CLAIMS, ClaimEntry
from explorer.locales import normalize_language, text
from explorer.serving import start_worker
from explorer.ui import TabContext, bind, load_or_error, tab_id, visitor_errors
from explorer.web.stopping import Stops

TITLE = "claims.tab"
REGISTRY_ENV = "EXPLORER_CLAIMS_REGISTRY"
# the board's own limit, plus loading the model and drawing the table
EVENT_LIMIT_S = int(board.BOARD_LIMIT_S) + 60
COLUMN_WIDTHS = ["5%", "19%", "27%", "21%", "9%", "5%", "14%"]
# a kept board is replaced by "Run again" at most this often (per model, device and dtype)
RERUN_INTERVAL_S = 600.0
# the visitors' running boards, for the Stop button
STOPS = Stops()
_STOPPED = object()   # put on a run's queue by its Stop: wakes the handler


def registry_name() -> str:
    """REGISTRY_ENV's value ("" when the board runs CLAIMS); RuntimeError outside a test run."""
    named = os.environ.get(REGISTRY_ENV, "").strip()
    if named and "pytest" not in sys.modules:
        raise RuntimeError(f"{REGISTRY_ENV} is set ({named!r}): only the test suite may replace "
                           "the claims' evidence functions; unset it to serve the real board")
    return named


def board_registry() -> tuple[ClaimEntry, ...]:
    """The registry the tab runs: CLAIMS, or the one REGISTRY_ENV names (tests only)."""
    named = registry_name()
    if not named:
        return CLAIMS
    module, _, attribute = named.partition(":")
    return tuple(getattr(importlib.import_module(module), attribute))


def rerun_wait_s(loaded, registry: Sequence[ClaimEntry]) -> float:
    """Seconds until "Run again" may replace the kept board of `loaded` (0: it may now)."""
    kept = board.CACHE.cached(loaded, registry)
    if kept is None:
        return 0.0
    return max(0.0, RERUN_INTERVAL_S - (time.time() - kept.computed_at))


def draw(result: board.BoardResult, lang: str, tab_titles: Mapping[str, str] | None = None):
    """(table, summary) of a finished board in `lang` (no evidence runs again)."""
    return (*board.figures(result, lang, tab_titles), board.summary(result, lang))


@visitor_errors
def run_board(runtime, registry: Sequence[ClaimEntry], tab_titles: Mapping[str, str],
              rerun: bool, model_name, lang, progress=gr.Progress()):
    """Stream the board: after each claim the table so far and a progress line, then (table,
    summary, result)."""
    lang = normalize_language(lang)
    loaded = load_or_error(runtime, model_name, progress)
    wait = rerun_wait_s(loaded, registry) if rerun else 0.0
    rerun = rerun and wait == 0.0   # too soon: the kept board answers, with a line saying so
    updates: queue.Queue = queue.Queue()
    stop = threading.Event()

    def work() -> None:
        try:
            result = board.board(loaded, rerun=rerun, registry=registry, should_stop=stop.is_set,
                                 progress=lambda done, total, claim: updates.put((done, total, claim)),
                                 on_row=updates.put)
            updates.put(result)
        except BaseException as error:  # raised in the handler, where visitor_errors logs it
            updates.put(error)

    start_worker(work, "claims-board", stop)   # stopped between claims at interpreter exit
    STOPS.flag().on_set(lambda: updates.put(_STOPPED))
    rows: list[board.Row] = []
    try:
        while True:
            item = updates.get()
            if item is _STOPPED:   # Stop: the rows so far stay, the worker ends (finally)
                yield stopped_word(None, lang)
                return
            if isinstance(item, BaseException):
                raise item
            if isinstance(item, board.Row):
                rows.append(item)
                continue
            if isinstance(item, tuple):
                done, total, claim = item
                if claim:
                    line = text("claims.progress", lang, claim=claim, done=done + 1, total=total)
                    progress((done, total), desc=line)
                    # a message between claims (Gradio closes this generator on Stop): the rows
                    # measured so far, the others still to come
                    so_far = board.pending(registry, rows)
                    yield (*board.figures(so_far, lang, tab_titles), line, gr.skip())
                continue
            if item is None:  # stopped while another visitor's board was being computed
                yield gr.skip(), text("claims.stopped", lang), gr.skip()
                return
            table, summary = draw(item, lang, tab_titles)
            if wait:
                summary += "\n\n" + text("claims.rerun_kept", lang, interval=round(RERUN_INTERVAL_S / 60),
                                           n=math.ceil(wait / 60))
            yield table, summary, item
            return
    finally:
        stop.set()  # closed by Stop or a closed page: the board stops between claims


@visitor_errors
def show_cached(runtime, registry: Sequence[ClaimEntry], tab_titles: Mapping[str, str],
                model_name, lang):
    """On a change of model: that model's board if one is kept, else the board before a run.
    Runs and loads nothing."""
    lang = normalize_language(lang)
    result = None
    if isinstance(model_name, str) and model_name in runtime.names() and runtime.is_loaded(model_name):
        result = board.CACHE.cached(runtime.get(model_name), registry)
    result = result or board.pending(registry)
    return (*draw(result, lang, tab_titles), result)


def stopped_word(last, lang):
    """The last message of a stopped board: the rows measured so far stay, the board is not
    kept (a partial board would be redrawn as the model's board)."""
    return gr.skip(), text("claims.stopped", normalize_language(lang)), gr.skip()


def build(ctx: TabContext) -> None:
    t = ctx.t
    registry = board_registry()
    tab_titles = {tab_id(module): module.TITLE for module in ctx.tabs}
    gr.Markdown(t("claims.intro"))
    if registry is not CLAIMS:   # the page says that these verdicts are not the real evidence
        with gr.Row(elem_id="claims-registry"):
            gr.Markdown(t("claims.test_registry"))
            gr.Markdown(f"`{registry_name()}`")
    with gr.Row():
        run = gr.Button(t("claims.run"), variant="primary", elem_id="claims-run")
        rerun = gr.Button(t("claims.rerun"), elem_id="claims-rerun")
        stop = gr.Button(t("claims.stop"), variant="stop", elem_id="claims-stop")
    # before the first run: every claim with its statement and link, nothing measured
    blank = board.pending(registry)
    summary = gr.Markdown(t("claims.empty"), elem_id="claims-summary")
    table = gr.Dataframe(board.table(blank, "en", tab_titles), interactive=False, wrap=True,
                         elem_id="claims-board",
                         datatype=list(board.DATATYPES), column_widths=COLUMN_WIDTHS,
                         show_label=False, max_height=4000)  # all 19 rows, no inner scroll
    state = gr.State(blank)   # drawn again in the visitor's language by the language switch
    outputs = [table, summary, state]
    limits = {"time_limit": EVENT_LIMIT_S, **ctx.long_event}
    cached = STOPS.stoppable(bind(run_board, ctx.runtime, registry, tab_titles, False),
                             stopped_word)
    again = STOPS.stoppable(bind(run_board, ctx.runtime, registry, tab_titles, True),
                            stopped_word)
    event = run.click(cached, [ctx.model, ctx.lang], outputs, api_name="claims_board", **limits)
    rerun.click(again, [ctx.model, ctx.lang], outputs, api_visibility="private", **limits)
    stop.click(STOPS.on_stop, None, None, queue=False, api_visibility="private")
    # another model: its kept board, or the claims not yet run (a board names its model, but a
    # table of the previous model's numbers under the new model's name invites a misreading)
    ctx.model.change(bind(show_cached, ctx.runtime, registry, tab_titles),
                     [ctx.model, ctx.lang], outputs, api_visibility="private")
    ctx.redraw_on_language(state, [table, summary],
                           bind(draw, tab_titles=tab_titles))
    ctx.view("claims.board", [], run=run, event=event, state=state)
