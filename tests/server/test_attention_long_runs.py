"""The Attention tab's long runs (sink grid, StreamingLLM, receptive field) stop between forward
passes: a handler closed after its first forward makes no other forward (counted on the real
model), a deadline ends a run with a clear message, each event has a Stop that ends it and a
Gradio time limit, and a client that cancels through the API stops the work on the server."""
from __future__ import annotations

import contextlib
import time

import gradio as gr
import pytest

from explorer.attention import streaming

SMOL = "smollm2-135m-instruct"


@contextlib.contextmanager
def counted_forwards(model):
    """Count the model's forward passes (the shared model is restored afterwards)."""
    calls = []
    original = model.forward

    def forward(*args, **kwargs):
        calls.append(time.monotonic())
        return original(*args, **kwargs)

    model.forward = forward
    try:
        yield calls
    finally:
        del model.forward         # back to the class's forward


def handlers():
    from explorer.ui.tabs.attention import receptive_field, sink_grid, streaming_ppl

    return {
        # name: (handler, args after (loaded, lang), forwards the whole run would make)
        "sinks": (sink_grid, (300, 2, False, 0.0), 3),                    # 128-token chunks
        "stream": (streaming_ppl, (200, 32, 2, streaming.StreamingCache()), 3),
        "probe": (receptive_field, ("forced", 4, 40, 0), None),
    }


@pytest.mark.parametrize("name", ["sinks", "stream", "probe"])
def test_closed_after_the_first_forward_makes_no_other(smol, name):
    handler, args, _ = handlers()[name]
    with counted_forwards(smol.model) as calls:
        run = handler(smol, "en", *args)
        first = next(run)                         # inputs checked, no forward yet
        assert calls == [] and first[-2] .startswith("Running: forward pass 0 of")
        second = next(run)                        # after the first forward
        total = int(second[-2].split(" of ")[1].rstrip("…").split()[0])
        assert len(calls) == 1 and total > 1 and "forward pass 1 of" in second[-2]
        run.close()                               # what Gradio does on Stop or a closed client
        assert len(calls) == 1


@pytest.mark.parametrize("name", ["sinks", "stream", "probe"])
def test_the_deadline_ends_the_run_with_a_clear_message(smol, name):
    handler, args, _ = handlers()[name]
    with counted_forwards(smol.model) as calls:
        with pytest.raises(gr.Error, match=r"reached its time limit of 0 s after 0 of \d+ forward passes"):
            list(handler(smol, "en", *args, time_limit_s=0))
        assert calls == []
        with pytest.raises(gr.Error, match="时间上限"):
            list(handler(smol, "zh", *args, time_limit_s=0))


def test_a_run_that_finishes_reports_every_forward(smol):
    handler, args, expected = handlers()["stream"]
    with counted_forwards(smol.model) as calls:
        outputs = list(handler(smol, "en", *args))
    assert len(calls) == expected and len(outputs) == expected + 2     # 0 .. 3, then the result
    assert [o[-2] for o in outputs[:-1]][-1].startswith(f"Running: forward pass {expected} of {expected}")
    assert outputs[-1][-2] == "" and outputs[-1][-1] is False


def test_each_long_event_has_a_stop_and_a_time_limit(runtime):
    from app import build_app
    from explorer.ui.tabs import attention as tab
    from tests.helpers import stop_buttons

    demo = build_app(runtime, ("explorer.ui.tabs.attention",))
    events = {fn.api_name: fn for fn in demo.fns.values() if fn.api_name}
    limits = {"sink_grid": tab.SINK_TIME_LIMIT_S, "streaming_ppl": tab.STREAM_TIME_LIMIT_S,
              "receptive_field": tab.PROBE_TIME_LIMIT_S}
    config = demo.get_config_file()
    for api_name, deadline in limits.items():
        event = events[api_name]
        assert event.time_limit == deadline + tab.TIME_LIMIT_MARGIN_S
        [stop] = stop_buttons(demo, event.fn)
        assert stop.queue is False and not stop.cancels   # a flag: the run ends itself


def test_a_client_cancel_stops_the_forwards_on_the_server(app_url, runtime):
    """Through the app's API: cancel a StreamingLLM run after its first forward; the server
    makes at most one more forward (the one under way) and none after."""
    from gradio_client import Client

    loaded = runtime.get(SMOL)
    # the server answers a cancel once the generator is closed, i.e. after the forward under way:
    # give that request time on a busy machine
    client = Client(app_url, verbose=False, httpx_kwargs={"timeout": 120})
    with counted_forwards(loaded.model) as calls:
        job = client.submit(SMOL, "en", 1024, 48, 2, api_name="/streaming_ppl")
        deadline = time.monotonic() + 240
        while not calls and time.monotonic() < deadline:
            time.sleep(0.05)
        assert calls, "the run never started"
        cancelled_at = len(calls)
        job.cancel()                       # returns once the server has closed the generator
        closed_at = len(calls)
        time.sleep(8)
        assert closed_at <= cancelled_at + 1 and len(calls) == closed_at, (cancelled_at, closed_at,
                                                                            len(calls))
        # 1024 tokens, 4 chunks per policy, 3 policies: far from done
        assert len(calls) < 12
    client.close()
