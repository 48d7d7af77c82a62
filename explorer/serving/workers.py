"""Daemon worker threads that leave torch before the interpreter exits.

A daemon thread still inside a torch call when Python finalizes is stopped in a way torch's C++
code cannot unwind through: the process aborts ("terminate called without an active
exception", exit status 134; reproduced with a Generate run's no-cache replay (C1) under way
at exit, tests/unit/test_threads.py). A worker started here has its stop event set at exit (its
work polls it between two forwards) and is waited for, up to EXIT_WAIT_S for all of them
together; one without a stop event (a claim's evidence function) is only waited for. The
decode loops, which wait on a condition of their own, have their own exit hook
(explorer/serving/registry.py).
"""
from __future__ import annotations

import atexit
import threading
import time
from typing import Callable, Optional

EXIT_WAIT_S = 10.0

_LOCK = threading.Lock()
_LIVE: dict[threading.Thread, Optional[threading.Event]] = {}   # worker -> its stop event


def start_worker(target: Callable[[], None], name: str,
                 stop: Optional[threading.Event] = None) -> threading.Thread:
    """Run `target` on a daemon thread named `name`; at interpreter exit `stop` is set and the
    thread is waited for."""
    def run() -> None:
        try:
            target()
        finally:
            with _LOCK:
                _LIVE.pop(threading.current_thread(), None)

    thread = threading.Thread(target=run, name=name, daemon=True)
    with _LOCK:   # registered before it runs, so that its own removal comes after
        _LIVE[thread] = stop
    try:
        thread.start()
    except BaseException:
        with _LOCK:
            _LIVE.pop(thread, None)
        raise
    return thread


@atexit.register
def stop_workers(wait_s: float = EXIT_WAIT_S) -> None:
    """Set every live worker's stop event and wait for them, up to `wait_s` in all."""
    with _LOCK:
        live = list(_LIVE.items())
    for _, stop in live:
        if stop is not None:
            stop.set()
    deadline = time.monotonic() + wait_s
    for thread, _ in live:
        thread.join(timeout=max(0.0, deadline - time.monotonic()))
