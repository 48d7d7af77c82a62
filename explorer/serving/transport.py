"""The thread and queue between a generation and the web framework that streams it.

No web framework here: what a client's liveness is (Gradio's per-event flag) is read by the UI
(explorer/web/gradio_context.py, client_alive) and handed in as `alive`."""
from __future__ import annotations

import queue
import threading
import time
from typing import Callable, Iterator, Optional, Protocol, TypeVar, Union

from explorer.serving.pacing import Pace
from explorer.serving.workers import start_worker

_DONE = object()


class Snapshot(Protocol):
    """What a stream yields (explorer.generate.session.Session): a copy of it to hand over,
    and whether it is still decoding (its decode steps may be merged)."""
    streaming: bool

    def snapshot(self) -> "Snapshot": ...


S = TypeVar("S", bound=Snapshot)


def in_background(make_stream: Callable[[Callable[[], bool]], Iterator[S]], *,
                  idle_timeout_s: float = 5.0,
                  min_interval_s: Union[float, Callable[[S], float]] = 0.0,
                  alive: Optional[Callable[[], bool]] = None,
                  stop_requested: Optional[Callable[[], bool]] = None,
                  pace: Optional[Pace] = None) -> Iterator[S]:
    """Run `make_stream(should_stop)` in a worker thread and yield snapshots of what it yields.

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
    its last snapshot (phase "done", stopped "stop") is delivered like any other end.
    pace: the stream's page reports what it has drawn (serving.pacing): every snapshot but the
    last (a decode step after min_interval_s, a later phase's at once) also waits until the page
    has drawn the one before (pace.next_message() counts each one yielded; the pace is closed
    with this generator)."""
    feed = _Feed(idle_timeout_s, alive, stop_requested)
    start_worker(lambda: feed.work(make_stream), "kv-generate", feed.stop)   # stopped at exit
    hold_until = None  # monotonic time before which a decode step is held back
    try:
        while True:
            items = feed.take(hold_until, pace)
            if alive is not None and not alive():
                return   # nobody to send to: the finally stops the worker, no figure is built
            for item in items:
                if isinstance(item, BaseException):
                    raise item
            snapshots = [item for item in items if item is not _DONE]
            if snapshots:
                if pace is not None:
                    pace.next_message()
                yield snapshots[-1]
                interval = min_interval_s(snapshots[-1]) if callable(min_interval_s) else min_interval_s
                hold_until = time.monotonic() + interval if interval > 0 else None
            if items[-1] is _DONE:
                return
    finally:
        feed.stop.set()
        if pace is not None:
            pace.close()


class _Feed:
    """The queue between in_background's worker and its consumer, and the worker's stop flag."""

    def __init__(self, idle_timeout_s: float, alive: Optional[Callable[[], bool]],
                 stop_requested: Optional[Callable[[], bool]]):
        self.idle_timeout_s, self.alive, self.stop_requested = idle_timeout_s, alive, stop_requested
        self.updates: queue.Queue = queue.Queue()
        # set by the worker when something must go out at once (a snapshot that ends decoding,
        # an error, the end): a consumer holding decode steps back waits on this, not on the
        # queue, so it does not wake for every step it will merge anyway (each wake takes a
        # core from the decode, whose fused step uses both)
        self.urgent = threading.Event()
        self.ended = threading.Event()   # the worker has put its last item
        self.stop = threading.Event()
        self.polled = time.monotonic()
        self.waiting = False   # the consumer is blocked on the queue, i.e. asking for more

    def should_stop(self) -> bool:
        return (self.stop.is_set() or (self.alive is not None and not self.alive())
                or (self.stop_requested is not None and self.stop_requested())
                or (not self.waiting and time.monotonic() - self.polled > self.idle_timeout_s))

    def work(self, make_stream: Callable[[Callable[[], bool]], Iterator[Snapshot]]) -> None:
        """The worker: every item the stream yields, snapshotted, then _DONE (an error raised
        by the stream is handed over too, and raised by the consumer)."""
        try:
            for item in make_stream(self.should_stop):
                self.updates.put(item.snapshot())
                if not item.streaming:
                    self.urgent.set()
        except BaseException as error:  # handed to the consumer, raised there
            self.updates.put(error)
        finally:
            self.updates.put(_DONE)
            self.ended.set()
            self.urgent.set()

    def take(self, hold_until: Optional[float], pace: Optional[Pace] = None) -> list:
        """The consumer: wait for the next item, then (a decode step held back until
        `hold_until`) for something urgent or that time, then (any snapshot, with `pace`) until
        the page has drawn the last one sent or the worker ended, then everything queued
        meanwhile."""
        self.waiting = True
        items = [self.updates.get()]
        last = items[-1]
        if last is not _DONE and not isinstance(last, BaseException):
            if hold_until is not None and last.streaming:
                self.urgent.wait(timeout=max(0.0, hold_until - time.monotonic()))
            # the later phases (the checks' steps) wait for the page as well: only the end
            # goes out at once
            if pace is not None:
                pace.wait_drawn(self.ended)
        # cleared before the queue is drained: a snapshot put after the drain sets it again,
        # and one put before is in this drain (a wake-up is never lost, at worst early)
        self.urgent.clear()
        while True:
            try:
                items.append(self.updates.get_nowait())
            except queue.Empty:
                break
        self.polled = time.monotonic()
        self.waiting = False
        return items
