"""The thread and queue between a generation and the web framework that streams it."""
from __future__ import annotations

import queue
import threading
import time
from typing import Callable, Iterator

from explorer.generate.session import Session

_DONE = object()


def in_background(make_stream: Callable[[Callable[[], bool]], Iterator[Session]], *,
                  idle_timeout_s: float = 5.0, min_interval_s: float = 0.0) -> Iterator[Session]:
    """Run `make_stream(should_stop)` in a worker thread and yield snapshots of its Session.

    Why: a web framework's work between two yields (Gradio: postprocess, diff, send: ~2-4 ms
    here) would otherwise add to every decode step; on a fast device it would dominate. Here
    the worker decodes without waiting, and when the consumer is slower than decoding the
    steps it missed are merged into the next snapshot (the final one is always delivered).
    Stopping: closing this generator (Gradio does on Stop, on a closed tab and at the end of
    every event) sets the flag the engine polls between two steps; a consumer that stops
    asking for idle_timeout_s also stops the worker (a consumer waiting for the next snapshot,
    e.g. during a long prefill, is not idle).
    min_interval_s: after a snapshot, wait this long before taking the next one (the steps
    decoded meanwhile arrive merged). Every message costs the server and the browser CPU time
    that a 2-core machine takes from the decode itself; ~10 messages a second still read as a
    live stream. Only decode steps are held back: the first snapshot, the end of decoding and
    the later phases go out as soon as they exist."""
    updates: queue.Queue = queue.Queue()
    stop = threading.Event()
    polled = [time.monotonic()]
    waiting = [False]   # the consumer is blocked on the queue, i.e. asking for more

    def should_stop() -> bool:
        return stop.is_set() or (not waiting[0] and time.monotonic() - polled[0] > idle_timeout_s)

    def work():
        try:
            for session in make_stream(should_stop):
                updates.put(session.snapshot())
        except BaseException as error:  # handed to the consumer, raised there
            updates.put(error)
        finally:
            updates.put(_DONE)

    threading.Thread(target=work, name="kv-generate", daemon=True).start()

    hold_until = None  # monotonic time before which a decode step is held back
    try:
        while True:
            waiting[0] = True
            items = [updates.get()]
            while hold_until is not None and isinstance(items[-1], Session) and items[-1].streaming:
                try:
                    items.append(updates.get(timeout=max(0.0, hold_until - time.monotonic())))
                except queue.Empty:
                    break
            while True:
                try:
                    items.append(updates.get_nowait())
                except queue.Empty:
                    break
            polled[0] = time.monotonic()
            waiting[0] = False
            for item in items:
                if isinstance(item, BaseException):
                    raise item
            sessions = [item for item in items if isinstance(item, Session)]
            if sessions:
                yield sessions[-1]
                hold_until = time.monotonic() + min_interval_s if min_interval_s > 0 else None
            if items[-1] is _DONE:
                return
    finally:
        stop.set()
