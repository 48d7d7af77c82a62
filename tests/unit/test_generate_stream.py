"""The worker thread between a generation and the page (explorer/serving/transport.py): the same
run delivered, steps merged within the interval, a closed or abandoned stream stops its worker,
a worker's error reaches the consumer."""
from __future__ import annotations

import time
import types

import pytest

from explorer.generate import checks, request as req, session as sess
from explorer.serving import transport
from tests.helpers import DigitTokenizer, run


# ----- the worker thread behind the UI ------------------------------------------------------
def _background(model, request, idle_timeout_s=5.0, step_delay_s=0.0):
    """in_background over a run of `model`; step_delay_s slows each step, so that a tiny model's
    run outlasts a short idle timeout however fast the machine."""
    seen = []

    def make(should_stop):
        for session in sess.stream_generation(model, DigitTokenizer(), [1, 2], request,
                                                 should_stop=should_stop):
            seen.append(session)
            yield session
            time.sleep(step_delay_s)

    return transport.in_background(make, idle_timeout_s=idle_timeout_s), seen


def _wait_for_end(seen, timeout=10.0):
    end = time.monotonic() + timeout
    while time.monotonic() < end and not (seen and seen[-1].phase == "done"):
        time.sleep(0.02)
    return seen[-1]


def test_background_stream_delivers_the_same_run(tiny_llama):
    request = req.Request(prompt="x", max_new_tokens=12)
    stream, _ = _background(tiny_llama, request)
    snapshots = list(stream)
    _, direct = run(tiny_llama, [1, 2], max_new_tokens=12)
    final = snapshots[-1]
    assert final.phase == "done" and final.generated_ids == direct.generated_ids
    assert max(final.logit_diffs) <= checks.C4_TOLERANCE and len(final.replay) == 11
    # snapshots are copies: what the consumer holds does not grow under it
    counts = [len(s.records) for s in snapshots]
    assert counts == sorted(counts) and counts[0] < 12


def test_background_stream_merges_decode_steps_within_the_interval(tiny_llama):
    """min_interval_s: the first step goes out at once, decode steps that arrive within the
    interval are merged into one snapshot, and the end of the run is never held back."""
    request = req.Request(prompt="x", max_new_tokens=16, compare_no_cache=False,
                              check_full_forward=False)

    def make(should_stop):
        for session in sess.stream_generation(tiny_llama, DigitTokenizer(), [1, 2], request,
                                                 should_stop=should_stop):
            time.sleep(0.02)   # ~50 steps a second
            yield session

    arrivals = []
    for snapshot in transport.in_background(make, min_interval_s=0.1):
        arrivals.append((time.monotonic(), snapshot))
    counts = [len(s.records) for _, s in arrivals]
    assert counts[0] == 1                                  # the first token alone
    assert arrivals[-1][1].phase == "done" and counts[-1] == 16
    decode = [(at, s) for at, s in arrivals if s.phase == "decode" and s.stopped is None]
    assert len(decode) < 10                                # 16 steps, merged
    gaps = [b[0] - a[0] for a, b in zip(decode, decode[1:])]
    assert all(gap >= 0.09 for gap in gaps)
    assert counts == sorted(counts)


def test_background_stream_interval_may_follow_the_snapshot(tiny_llama):
    """min_interval_s as a function of the last snapshot sent: its value holds back the next."""
    request = req.Request(prompt="x", max_new_tokens=12, compare_no_cache=False,
                          check_full_forward=False)

    def make(should_stop):
        for session in sess.stream_generation(tiny_llama, DigitTokenizer(), [1, 2], request,
                                              should_stop=should_stop):
            time.sleep(0.02)
            yield session

    asked = []

    def interval(snapshot):
        asked.append(len(snapshot.records))
        return 0.0 if len(snapshot.records) < 6 else 10.0   # hold everything after 6 tokens

    counts = [len(s.records) for s in transport.in_background(make, min_interval_s=interval)]
    assert counts[:6] == [1, 2, 3, 4, 5, 6]    # no interval: every step alone
    assert counts[6:] and counts[6] == 12      # then held until decoding ended: merged
    assert asked[:6] == [1, 2, 3, 4, 5, 6]


def test_generate_tab_spaces_text_by_the_visitors_sharing_a_step():
    from explorer.ui.tabs import generate as tab

    def session_with(batch):
        return types.SimpleNamespace(records=[types.SimpleNamespace(batch_size=batch)])

    assert tab.text_interval(types.SimpleNamespace(records=[])) == tab.TEXT_INTERVAL_S
    assert tab.text_interval(session_with(1)) == tab.TEXT_INTERVAL_S
    assert tab.text_interval(session_with(30)) == pytest.approx(30 / tab.MESSAGES_PER_S)


def test_closing_the_background_stream_stops_the_worker(tiny_llama):
    request = req.Request(prompt="x", max_new_tokens=4000 // 16, compare_no_cache=False)
    stream, seen = _background(tiny_llama, request)
    for _, snapshot in zip(range(3), stream):
        pass
    stream.close()   # what Gradio does on Stop, on a closed tab and at the end of an event
    final = _wait_for_end(seen)
    assert final.stopped == "stop" and len(final.records) < request.max_new_tokens


def test_an_abandoned_background_stream_stops_after_the_idle_timeout(tiny_llama):
    request = req.Request(prompt="x", max_new_tokens=250, compare_no_cache=False)
    # 250 steps of >= 10 ms: the run would last 2.5 s, far past the 0.2 s idle timeout
    stream, seen = _background(tiny_llama, request, idle_timeout_s=0.2, step_delay_s=0.01)
    next(stream)    # then never asked again, never closed
    final = _wait_for_end(seen)
    assert final.stopped == "stop" and len(final.records) < 250
    stream.close()


def test_a_consumer_waiting_through_a_long_first_step_is_not_idle(tiny_llama):
    """A prefill longer than the idle timeout (a long prompt on a busy CPU) must not stop the
    run: the consumer is waiting for it, not gone."""
    request = req.Request(prompt="x", max_new_tokens=4, compare_no_cache=False,
                          check_full_forward=False)

    def make(should_stop):
        time.sleep(0.4)   # the first step takes longer than idle_timeout_s
        yield from sess.stream_generation(tiny_llama, DigitTokenizer(), [1, 2], request,
                                          should_stop=should_stop)

    final = list(transport.in_background(make, idle_timeout_s=0.2))[-1]
    assert final.stopped == "length" and len(final.records) == 4


def test_background_stream_raises_the_workers_error():
    def make(should_stop):
        raise ValueError("prompt too long")
        yield

    with pytest.raises(ValueError, match="prompt too long"):
        list(transport.in_background(make))
