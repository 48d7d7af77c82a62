"""Instant first answers: the default view of every section computed at start-up, in the
background, so that the first press on a cold server answers at once.

At start-up (`Warm.start`), each view's run handler is called once with its inputs' initial
values (the default model, English), one after another in a background thread, and its last
output kept; the Chinese outputs are drawn from the same result by the section's own language
redraw (no second run). A press whose inputs are exactly those values gets the kept outputs; any
other press runs as always. The header's banner says how many sections are ready while it warms.

Not warmed: the Generate run (its point is watching tokens stream, and each run joins the
shared decode loop live), and a handler that reads a gr.State or the event's request (its
answer depends on the visitor). Every kept answer is the real computation on this server, made
at start-up: deterministic runs give what a press would; measured times are those of start-up.
"""
from __future__ import annotations

import functools
import inspect
import logging
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Callable, Optional

import gradio as gr

from explorer.locales import normalize_language, text
from explorer.web.groups import LONG_CONCURRENCY_ID

log = logging.getLogger(__name__)

NOT_WARMED = ("generate.run",)
LANGS = ("en", "zh")
QUIET_S = 2.0        # seconds the decode loops must have been idle before the next section
LOOK_S = 0.25        # how often a waiting warm-up looks again


def _loops_busy() -> bool:
    from explorer.serving.registry import live_runs
    return live_runs() > 0


@dataclass
class _Job:
    key: str                    # the view's key
    block_fn: Any               # Gradio's BlockFunction of the view's run event
    original: Any               # its handler before wrapping
    defaults: list              # the inputs' initial values (lang at lang_at)
    lang_at: int
    redraw: Any = None          # the section's Redraw (state, outputs, draw), for the other language
    seconds: Optional[float] = None
    failed: bool = False
    title: str = ""             # locale key of its section's title (the banner names it)
    long: bool = False          # a run of minutes (the "long" group): warmed after the others


@dataclass
class Warm:
    jobs: list = field(default_factory=list)
    kept: dict = field(default_factory=dict)      # (view key, lang) -> the outputs
    lock: threading.Lock = field(default_factory=threading.Lock)
    started: bool = False
    finished: bool = False
    busy: Callable[[], bool] = _loops_busy      # visitors' work that warming waits for
    waited_s: float = 0.0                       # seconds spent waiting for them, in all

    # ----------------------------------------------------------------- install
    def install(self, demo: gr.Blocks, views: Any, redraws: Sequence[Any], lang: gr.Radio) -> None:
        """Wrap each warmable view's run handler (see the module's doc)."""
        by_fn = {}
        for block_fn in demo.fns.values():
            by_fn.setdefault(id(block_fn.fn), block_fn)
        for view in views.items:
            if view.key in NOT_WARMED or view.run is None or view.event is None:
                continue
            event = view.event[0] if isinstance(view.event, tuple) else view.event
            block_fn = by_fn.get(id(event.fn))
            if block_fn is None or not _warmable(block_fn, lang):
                continue
            lang_at = next(i for i, c in enumerate(block_fn.inputs) if c is lang)
            redraw = next((r for r in redraws if r.state is view.state), None)
            job = _Job(view.key, block_fn, block_fn.fn, [c.value for c in block_fn.inputs],
                       lang_at, redraw, title=view.title,
                       long=block_fn.concurrency_id == LONG_CONCURRENCY_ID)
            block_fn.fn = self._wrap(job)
            self.jobs.append(job)
        # the short answers first: most sections are ready in the first minute
        self.jobs.sort(key=lambda job: job.long)

    def _wrap(self, job: _Job):
        original = job.original
        warm = self

        def hit(args) -> Optional[tuple]:
            if len(args) != len(job.defaults):
                return None
            lang = normalize_language(args[job.lang_at])
            expected = list(job.defaults)
            expected[job.lang_at] = args[job.lang_at]
            if list(args) != expected:
                return None
            with warm.lock:
                return warm.kept.get((job.key, lang))

        if inspect.isgeneratorfunction(original):
            @functools.wraps(original)
            def streaming(*args, **kwargs):
                kept = hit(args)
                if kept is not None:
                    yield kept
                    return
                yield from original(*args, **kwargs)
            return streaming

        @functools.wraps(original)
        def plain(*args, **kwargs):
            kept = hit(args)
            return kept if kept is not None else original(*args, **kwargs)
        return plain

    # ----------------------------------------------------------------- warming
    def start(self) -> threading.Thread:
        thread = threading.Thread(target=self.run, name="warm-first-answers", daemon=True)
        thread.start()
        return thread

    def wait_quiet(self) -> None:
        """Return at once when `busy()` is False; else once it has been False for QUIET_S
        seconds in a row (a class's runs end and new ones start within a second)."""
        quiet_s, look_s = QUIET_S, LOOK_S
        if not self.busy():
            return
        began = time.perf_counter()
        quiet_since = None
        while True:
            time.sleep(look_s)
            now = time.perf_counter()
            if self.busy():
                quiet_since = None
            elif quiet_since is None:
                quiet_since = now
            elif now - quiet_since >= quiet_s:
                break
        self.waited_s += time.perf_counter() - began

    def run(self) -> None:
        self.started = True
        for job in self.jobs:
            self.wait_quiet()
            started = time.perf_counter()
            try:
                outputs = _last_output(job.original, job.defaults)
                kept = {"en": outputs}
                if job.redraw is not None:
                    kept["zh"] = _redrawn(job, outputs, "zh")
                with self.lock:
                    for lang, values in kept.items():
                        self.kept[(job.key, lang)] = values
            except Exception:   # a section that cannot warm answers live, as before
                job.failed = True
                log.exception("could not warm %s", job.key)
            job.seconds = time.perf_counter() - started
        self.finished = True

    def ready(self) -> int:
        return sum(1 for job in self.jobs if job.seconds is not None)

    def banner(self, lang: Any) -> tuple:
        """(banner update, timer update) for the header."""
        lang = normalize_language(lang)
        if not self.started or self.finished or not self.jobs:
            return gr.update(visible=False, value=""), gr.Timer(active=False)
        waiting = [job for job in self.jobs if job.seconds is None]
        now = text(waiting[0].title, lang) if waiting and waiting[0].title else ""
        return (gr.update(visible=True, value=text("shell.warming", lang, ready=self.ready(),
                                                   n=len(self.jobs), next=now)),
                gr.Timer(active=True))


def _warmable(block_fn: Any, lang: gr.Radio) -> bool:
    """A handler whose answer depends on its inputs alone: no gr.State input, the language
    among its inputs, and no gr.Request parameter."""
    if any(isinstance(c, gr.State) for c in block_fn.inputs):
        return False
    if not any(c is lang for c in block_fn.inputs):
        return False
    try:
        parameters = inspect.signature(block_fn.fn).parameters.values()
    except (TypeError, ValueError):
        return False
    return not any(p.annotation in (gr.Request, "gr.Request") for p in parameters)


def _last_output(fn, args: Sequence[Any]) -> Any:
    result = fn(*args)
    if inspect.isgenerator(result):
        last = None
        for last in result:
            pass
        if last is None:
            raise RuntimeError("the handler yielded nothing")
        return last
    return result


def _redrawn(job: _Job, outputs: Any, lang: str) -> tuple:
    """The outputs in `lang`: the positions the section's redraw draws, drawn again from the
    result kept in its state; every other output as it is."""
    values = list(outputs) if isinstance(outputs, (tuple, list)) else [outputs]
    components = list(job.block_fn.outputs)
    result = values[next(i for i, c in enumerate(components) if c is job.redraw.state)]
    drawn = job.redraw.draw(result, lang)
    drawn = drawn if isinstance(drawn, (tuple, list)) else (drawn,)
    for component, value in zip(job.redraw.outputs, drawn):
        for i, c in enumerate(components):
            if c is component:
                values[i] = value
    return tuple(values)
