"""explorer/web/stopping.py: Stop raises a flag for the visitor's session; a stoppable run ends
itself on it (its own last message) or, where it cannot see the flag, is closed at its next
message and answered with a last word; a run still queued when Stop was pressed does no work.
The Gradio event context is set here as Gradio sets it before every call into a handler."""
from __future__ import annotations

import contextlib
import time
import types

from gradio.context import LocalContext

from explorer.web import stopping
from explorer.web.stopping import StopFlag, Stops


@contextlib.contextmanager
def event(session: str, event_id: str, queued: float | None = None):
    """Gradio's context of one event of `session`, queued at `queued` (monotonic)."""
    queue_events = {event_id: types.SimpleNamespace(enqueue_time=queued if queued is not None
                                                    else time.monotonic())}
    blocks = types.SimpleNamespace(_queue=types.SimpleNamespace(event_ids_to_events=queue_events))
    tokens = [(LocalContext.request, LocalContext.request.set(types.SimpleNamespace(session_hash=session))),
              (LocalContext.event_id, LocalContext.event_id.set(event_id)),
              (LocalContext.blocks, LocalContext.blocks.set(blocks))]
    try:
        yield
    finally:
        for var, token in reversed(tokens):
            var.reset(token)


def last_word(last, lang):
    return ("stopped", last, lang)


def test_a_run_that_cannot_see_its_flag_is_closed_at_its_next_message():
    stops = Stops()
    closed = []

    def handler(n, lang):
        try:
            for i in range(n):
                yield i
        finally:
            closed.append(True)

    run = stops.stoppable(handler, last_word)
    with event("a", "e1"):
        messages = run(10, lang="zh")
        assert [next(messages), next(messages)] == [0, 1]
        assert stops.running("a") == 1
        with event("a", "stop-click"):
            assert stops.stop()
        rest = list(messages)
    # message 2 was dropped: the last word repeats what the page last got, in its language
    assert rest == [("stopped", 1, "zh")] and closed == [True]
    assert stops.running() == 0


def test_a_run_that_reads_its_flag_ends_itself_and_every_message_goes_out():
    stops = Stops()

    def handler(lang):
        flag = stops.flag()
        woken = []
        flag.on_set(lambda: woken.append(True))
        i = 0
        while not flag.is_set():
            yield i
            i += 1
        yield ("own last", i, woken)

    run = stops.stoppable(handler, last_word)
    with event("a", "e1"):
        messages = run("en")
        assert next(messages) == 0 and next(messages) == 1
        with event("a", "stop-click"):
            stops.stop()
        assert list(messages) == [("own last", 2, [True])]


def test_stop_reaches_only_its_own_session_and_only_runs_queued_before_it():
    stops = Stops()
    run = stops.stoppable(lambda lang: iter(range(3)), last_word)
    calls = []

    def counted(lang):
        calls.append(lang)
        yield from range(3)

    counted_run = stops.stoppable(counted, last_word)
    queued = time.monotonic()
    with event("a", "stop-click"):
        assert not stops.stop()   # nothing running: False, but the time is kept
    # a run of "a" queued before that Stop ends at once, without running the handler
    with event("a", "e1", queued=queued):
        assert list(counted_run("en")) == [("stopped", None, "en")] and calls == []
    # one queued after it runs; so does another session's run queued before it
    with event("a", "e2"):
        assert list(counted_run("en")) == [0, 1, 2]
    with event("b", "e3", queued=queued):
        assert list(run("en")) == [0, 1, 2]
    assert stops.running() == 0


def test_outside_an_event_a_run_is_not_stoppable_and_nothing_is_kept():
    stops = Stops()
    run = stops.stoppable(lambda lang: iter(range(3)), last_word)
    assert list(run("en")) == [0, 1, 2]
    assert not stops.stop() and stops.running() == 0
    assert not stops.flag().is_set()


def test_the_stop_times_kept_are_bounded():
    stops = Stops(max_sessions=3)
    for i in range(10):
        with event(f"s{i}", "click"):
            stops.stop()
    assert list(stops._stopped_at) == ["s7", "s8", "s9"]


def test_a_flag_calls_back_once_and_at_once_when_already_raised():
    flag, calls = StopFlag(), []
    flag.on_set(lambda: calls.append(1))
    flag.set()
    flag.set()
    flag.on_set(lambda: calls.append(2))
    assert calls == [1, 2] and flag.is_set()


def test_zerogpu_can_move_the_handler_and_keep_the_stop_outside():
    stops = Stops()

    def handler(lang, progress=None):
        yield from range(2)

    run = stops.stoppable(handler, last_word)
    inner, rewrap = stopping.unwrap(run)
    assert inner is handler and stopping.unwrap(handler) == (handler, None)
    again = rewrap(lambda lang, progress=None: iter("xy"))
    assert list(again("en")) == ["x", "y"] and stopping.unwrap(again)[1] is not None
    # Gradio reads the handler's parameters (a gr.Progress default) through the wrapper
    import inspect
    assert list(inspect.signature(run).parameters) == ["lang", "progress"]
