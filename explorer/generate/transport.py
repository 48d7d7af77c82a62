"""The thread and queue between a generation and the web framework that streams it."""
from __future__ import annotations

import queue
import threading
import time
from typing import Any, Callable, Iterator, Optional, Union

from explorer.generate.session import Session
from explorer.threads import start_worker

_DONE = object()


def in_background(make_stream: Callable[[Callable[[], bool]], Iterator[Session]], *,
                  idle_timeout_s: float = 5.0,
                  min_interval_s: Union[float, Callable[[Session], float]] = 0.0,
                  alive: Optional[Callable[[], bool]] = None,
                  stop_requested: Optional[Callable[[], bool]] = None) -> Iterator[Session]:
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
    the later phases go out as soon as they exist. A function of the last snapshot sent may
    stand for the number (a UI that spaces its messages by how many visitors share a step).
    alive: False once the consumer's client is gone (client_alive()). The web framework closes
    this generator only after the snapshot it waits for, up to min_interval_s and a step late;
    should_stop reads `alive` itself, so a run whose client vanished stops at the next step the
    worker receives (make_stream polls should_stop before every step), and this generator
    ends without yielding again (a run stopped before its first token has nothing to show,
    and nobody would see it).
    stop_requested: True once the visitor pressed Stop. The engine stops at its next step, and
    its last snapshot (phase "done", stopped "stop") is delivered like any other end."""
    updates: queue.Queue = queue.Queue()
    # set by the worker when something must go out at once (a snapshot that ends decoding, an
    # error, the end): a consumer holding decode steps back waits on this, not on the queue, so
    # it does not wake for every step it will merge anyway (each wake takes a core from the
    # decode, whose fused step uses both)
    urgent = threading.Event()
    stop = threading.Event()
    polled = [time.monotonic()]
    waiting = [False]   # the consumer is blocked on the queue, i.e. asking for more

    def should_stop() -> bool:
        return (stop.is_set() or (alive is not None and not alive())
                or (stop_requested is not None and stop_requested())
                or (not waiting[0] and time.monotonic() - polled[0] > idle_timeout_s))

    def work():
        try:
            for session in make_stream(should_stop):
                updates.put(session.snapshot())
                if not session.streaming:
                    urgent.set()
        except BaseException as error:  # handed to the consumer, raised there
            updates.put(error)
        finally:
            updates.put(_DONE)
            urgent.set()

    start_worker(work, "kv-generate", stop)   # stopped and waited for at interpreter exit

    hold_until = None  # monotonic time before which a decode step is held back
    try:
        while True:
            waiting[0] = True
            items = [updates.get()]
            if hold_until is not None and isinstance(items[-1], Session) and items[-1].streaming:
                urgent.wait(timeout=max(0.0, hold_until - time.monotonic()))
            # cleared before the queue is drained: a snapshot put after the drain sets it again,
            # and one put before is in this drain (a wake-up is never lost, at worst early)
            urgent.clear()
            while True:
                try:
                    items.append(updates.get_nowait())
                except queue.Empty:
                    break
            polled[0] = time.monotonic()
            waiting[0] = False
            if alive is not None and not alive():
                return   # nobody to send to: the finally stops the worker, no figure is built
            for item in items:
                if isinstance(item, BaseException):
                    raise item
            sessions = [item for item in items if isinstance(item, Session)]
            if sessions:
                yield sessions[-1]
                interval = min_interval_s(sessions[-1]) if callable(min_interval_s) else min_interval_s
                hold_until = time.monotonic() + interval if interval > 0 else None
            if items[-1] is _DONE:
                return
    finally:
        stop.set()


def client_alive() -> Callable[[], bool]:
    """Inside a Gradio event handler: a function that turns False once the event's client is
    gone. Gradio notices a closed event stream at once (the stream's task is cancelled and
    marks every event of that session not `alive`) but stops a generator only after its next
    yield; reading the flag lets the run stop at its next step instead. Outside an event (a
    test, the CLI), or where Gradio's queue does not have this shape, it is always True and
    Gradio's own close is what stops the run (tests/test_cancel.py drops a real connection and
    fails if this stops working)."""
    event = gradio_event()
    if event is None or not isinstance(getattr(event, "alive", None), bool):
        return always_alive
    return lambda: event.alive


def gradio_event() -> Any:
    """Gradio's queue entry (gradio.queueing.Event: its client's `alive`, its `enqueue_time`)
    of the event this thread is serving; None outside an event or where Gradio's queue does
    not have this shape. Gradio sets its context before every call into a handler, a
    generator's next() included."""
    try:
        from gradio.context import LocalContext
    except ImportError:
        return None
    blocks, event_id = LocalContext.blocks.get(None), LocalContext.event_id.get(None)
    events = getattr(getattr(blocks, "_queue", None), "event_ids_to_events", None)
    return events.get(event_id) if isinstance(events, dict) and event_id is not None else None


def always_alive() -> bool:
    """client_alive() where no Gradio event is known."""
    return True
