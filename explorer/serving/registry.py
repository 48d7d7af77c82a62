"""Which decode loops this process has, and their end: one loop per loaded model (`shared`),
every loop told to leave torch at interpreter exit, and none inherited through a fork.

Why at exit: a daemon thread still inside a torch call when the process exits aborts it (the
same reason as explorer/serving/workers.py; a loop waits on its own condition, so it is woken
rather than only flagged). Why at a fork: a forked child (a ZeroGPU call, explorer/ui/
zerogpu.py) has none of its parent's threads, and this registry's lock may have been held at
the fork by one of them; the child makes loops of its own on first use.
"""
from __future__ import annotations

import atexit
import os
import threading
import weakref
from typing import Any, Callable, Sequence

EXIT_WAIT_S = 5.0          # per loop, at interpreter exit

EXITING = threading.Event()   # set at interpreter exit: every loop ends its runs and returns
_SCHEDULERS: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()   # model -> its loop
_REGISTRY_LOCK = threading.Lock()
_LOOPS: "weakref.WeakSet" = weakref.WeakSet()   # every loop of this process, shared or not


def track(loop: Any) -> None:
    """Stop `loop` (a Scheduler) at interpreter exit."""
    _LOOPS.add(loop)


def live_runs() -> int:
    """Runs decoding or waiting in every loop of this process (0 when no loop exists): what
    background work (warming the first answers) waits on, so that visitors come first."""
    total = 0
    for loop in list(_LOOPS):
        try:
            total += loop.load()
        except Exception:   # a loop being torn down counts as idle
            pass
    return total


def forget_sessions(sessions: Sequence[str]) -> None:
    """The app dropped these sessions (idle, explorer/web/gradio_patches.py): every loop of this
    process forgets what it kept of them (their prefix-reuse counts, runs.Savings)."""
    sessions = list(sessions)
    if not sessions:
        return
    for loop in list(_LOOPS):
        try:
            loop.forget_sessions(sessions)
        except Exception:   # a loop being torn down keeps nothing worth forgetting
            pass


def shared(model: Any, make: Callable[[Any], Any]) -> Any:
    """The one loop of a loaded model: made by `make(model)` on first use."""
    with _REGISTRY_LOCK:
        loop = _SCHEDULERS.get(model)
        if loop is None:
            loop = _SCHEDULERS[model] = make(model)
        return loop


def existing(model: Any) -> Any:
    """The loop of a loaded model if one was made, else None (a look makes none)."""
    with _REGISTRY_LOCK:
        return _SCHEDULERS.get(model)


_FORGET_HOOKS: list = []   # callables(model) run by forget: other holders of a model's loops


def on_forget(hook: Callable[[Any], None]) -> None:
    """Have `hook(model)` run whenever a model's loops are forgotten (the claims board keeps a
    loop of its own per model, explorer/generate/evidence.py)."""
    _FORGET_HOOKS.append(hook)


def forget(model: Any) -> None:
    """Drop the loop of a model being unloaded (and, through on_forget's hooks, every other
    loop kept for it): a loop holds the model, so the model's memory could never go
    otherwise. Runs still in it finish; the next `shared` of a model makes a new one."""
    with _REGISTRY_LOCK:
        _SCHEDULERS.pop(model, None)
    for hook in list(_FORGET_HOOKS):
        hook(model)


@atexit.register
def _stop_loops() -> None:
    """At interpreter exit, let every loop thread leave torch before the runtime is torn down."""
    EXITING.set()
    for loop in list(_LOOPS):
        loop._wake()
        thread = loop._thread
        if thread is not None:
            thread.join(timeout=EXIT_WAIT_S)


def forget_loops() -> None:
    """Start with no decode loop, in a process just forked from one that may have had some:
    their threads do not exist in the child, and the registry's lock may have been held at
    the fork. The next `shared` makes a loop of this process's own. No import here: the fork
    may have happened while another thread held the import lock."""
    global _SCHEDULERS, _REGISTRY_LOCK, _LOOPS
    _SCHEDULERS = weakref.WeakKeyDictionary()
    _REGISTRY_LOCK = threading.Lock()
    _LOOPS = weakref.WeakSet()   # nothing to stop at exit: their threads are not here


os.register_at_fork(after_in_child=forget_loops)
