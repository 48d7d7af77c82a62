"""Stop, cancel and a dropped connection end a streaming /generate (bench/cancel.py, short run):
<= 2 tokens decoded after the stop, the run out of the shared decode loop within 1 s (or by the
end of the loop's first step that started after the stop, where a loaded CPU makes a step
longer), the next job decoding within 2 s, no worker left and no thread alive that was not there
before the trials. The 50-times run is `python -m bench.cancel`; its last result is in docs/HARDENING.md.

A dropped connection is a real one: the job is submitted as the browser does and its event
stream's socket is shut down, nothing else sent. Gradio marks the event not `alive` at once but
closes the handler's generator only after its next message; the handler reads the flag
(gradio_context.client_alive, tested here on its own as well), so the run's worker stops at the next
step it receives."""
from __future__ import annotations

import threading
import time
from types import SimpleNamespace

import pytest

from tests.helpers import decoding_snapshot

pytestmark = pytest.mark.timeout(600)


def test_client_alive_follows_the_events_flag_and_falls_back_outside_an_event():
    from gradio.context import LocalContext
    from explorer.web import gradio_context

    event = SimpleNamespace(alive=True)
    blocks = SimpleNamespace(_queue=SimpleNamespace(event_ids_to_events={"e1": event}))
    outside = gradio_context.client_alive()
    blocks_token, event_token = LocalContext.blocks.set(blocks), LocalContext.event_id.set("e1")
    try:
        alive = gradio_context.client_alive()
        assert alive() is True
        event.alive = False          # what Gradio does when the event's stream closes
        assert alive() is False
        LocalContext.event_id.set("unknown")
        assert gradio_context.client_alive() is gradio_context.always_alive
    finally:
        LocalContext.blocks.reset(blocks_token)
        LocalContext.event_id.reset(event_token)
    assert outside is gradio_context.always_alive


def test_in_background_stops_the_run_once_the_client_is_gone_without_being_closed():
    """The consumer is not closed and not idle: only `alive` turning False stops the stream."""
    from explorer.serving import transport

    polled_after_gone = []
    gone = threading.Event()

    def make(should_stop):
        for _ in range(10_000):
            if should_stop():
                return
            if gone.is_set():
                polled_after_gone.append(1)
            time.sleep(0.005)
            yield decoding_snapshot()

    stream = transport.in_background(make, alive=lambda: not gone.is_set())
    next(stream)
    gone.set()
    started = time.monotonic()
    for _ in stream:   # the worker ends: the stream ends by itself
        pass
    assert time.monotonic() - started < 1.0
    assert len(polled_after_gone) <= 1


def test_in_background_sends_nothing_more_once_the_client_is_gone():
    """Snapshots the worker made after the client left are not delivered (the last one would
    be, as the end of the run): the consumer would build figures for nobody, and a run stopped
    before its first token has none to build."""
    from explorer.serving import transport

    gone = threading.Event()

    def make(should_stop):
        for index in range(6):
            if index == 3:
                gone.set()
            yield decoding_snapshot(index)

    delivered = [snap.index for snap in transport.in_background(make, alive=lambda: not gone.is_set())]
    assert all(index < 3 for index in delivered), delivered


def test_threads_left_are_new_threads_still_alive_after_the_wait():
    """The end-of-run check compares thread identities with the baseline's: a thread started
    after it and still alive is named; one that ends within the wait is not (another test's
    thread ending no longer hides one left behind, as the count did)."""
    from bench import cancel

    baseline = {t.ident for t in cancel.counted_threads()}
    release = threading.Event()
    lingering = threading.Thread(target=release.wait, name="left-behind", daemon=True)
    finishing = threading.Thread(target=time.sleep, args=(0.3,), name="finishing", daemon=True)
    lingering.start()
    finishing.start()
    try:
        names = [t.name for t in cancel.threads_left(baseline, 1.0)]
        assert "left-behind" in names and "finishing" not in names
    finally:
        release.set()
        lingering.join()
    assert not {"left-behind", "finishing"} & {t.name for t in cancel.threads_left(baseline, 1.0)}


def test_a_dropped_jobs_reader_ends_at_drop_and_the_benchs_own_threads_are_not_counted():
    """The end-of-run check is about the server's threads: a reader of a dropped connection is
    the client side's (CI once named 'bench-dropped-reader' as left behind). drop() ends it
    within its one-second wake even when the peer keeps the connection open and silent."""
    import socket

    from bench import cancel

    baseline = {t.ident for t in cancel.counted_threads()}
    server = socket.create_server(("127.0.0.1", 0))
    accepted = []
    acceptor = threading.Thread(target=lambda: accepted.append(server.accept()[0]), daemon=True)
    acceptor.start()
    job = cancel.DroppedJob.__new__(cancel.DroppedJob)   # the reader alone, no app to join
    job.read(socket.create_connection(server.getsockname(), timeout=30))
    acceptor.join(5)
    try:
        assert job._reader.name not in {t.name for t in cancel.threads_left(baseline, 0.1)}
        started = time.monotonic()
        job.drop()
        assert not job._reader.is_alive() and time.monotonic() - started < 2.0
    finally:
        for s in accepted + [server]:
            s.close()
