"""Issue 27 findings 1, 5, 10 and 14: one client cannot fill the queue, the worker pool or the
session store that every visitor shares, and no handler lets a raw exception reach the page.
Each served test performs the attack at a small scale (distinct clients are distinct
X-Forwarded-For addresses, with EXPLORER_TRUST_PROXY=1) and failed before the fix."""
from __future__ import annotations

import json
import threading
import time

import gradio as gr
import httpx
import pytest

from explorer.locales import text
from explorer.web.admission import Admission, GroupLimits, SessionGate, Waiting

SMOL = "smollm2-135m-instruct"
ATTACKER, VISITOR = "10.0.0.66", "10.0.0.7"


# ------------------------------------------------------------------------- the policy alone
def test_admission_bounds_a_group_a_session_and_an_address():
    admission = Admission({"long": GroupLimits(1, waiting=3, per_session=1, per_address=2),
                           "cheap": GroupLimits(4)}, per_session=3, per_address=4)
    waiting = [Waiting("long", "s1", "a")]
    assert admission.refusal(waiting, Waiting("long", "s1", "a")) == ("shell.refused.group_yours", 1)
    assert admission.refusal(waiting, Waiting("long", "s2", "a")) is None     # per address: 2
    waiting.append(Waiting("long", "s2", "a"))
    assert admission.refusal(waiting, Waiting("long", "s3", "a")) == ("shell.refused.group_yours", 2)
    assert admission.refusal(waiting, Waiting("long", "s4", "b")) is None
    waiting.append(Waiting("long", "s4", "b"))
    assert admission.refusal(waiting, Waiting("long", "s5", "c")) == ("shell.refused.group_full", 3)
    # across groups: the cheap group has no bound of its own, the session's and address's apply
    assert admission.refusal(waiting, Waiting("cheap", "s1", "a")) is None
    waiting += [Waiting("cheap", "s1", "a"), Waiting("cheap", "s1", "a")]
    assert admission.refusal(waiting, Waiting("cheap", "s1", "a")) == ("shell.refused.yours", 3)
    assert admission.refusal(waiting, Waiting("cheap", "s9", "a")) == ("shell.refused.yours", 4)
    assert admission.refusal(waiting, Waiting("cheap", None, None)) is None


def test_the_session_gate_bounds_new_sessions_per_address_and_minute():
    now = [0.0]
    gate = SessionGate(per_minute=3, held=2, clock=lambda: now[0])
    assert gate.admit("a1", "A") == [] and gate.admit("a2", "A") == []
    gate.used("a1")
    assert gate.admit("a3", "A") == ["a2"]        # its own least recently used goes, nobody else's
    assert gate.admit("a4", "A") is None          # the fourth within a minute is refused
    assert gate.admit("b1", "B") == []            # another address is not affected
    now[0] = 60.0
    assert gate.admit("a5", "A") == ["a1"]
    assert gate.admit("t", None) == []


def test_the_session_gate_drops_idle_sessions_no_page_holds_open():
    gate = SessionGate(per_minute=10, held=10, idle_s=600)
    for session in ("reader", "left", "busy", "fresh"):
        assert gate.admit(session, "A") == []
    idle = {"reader": 900.0, "left": 600.0, "busy": 3600.0, "fresh": 599.0}
    assert gate.idle(idle, lambda s: s in ("reader", "busy")) == ["left"]
    # the dropped session no longer counts for its address
    assert "left" not in gate._owner and "left" not in gate._seen["A"][1]
    assert gate.admit("a", "A") == []
    del idle["left"]   # Gradio's table no longer holds it
    assert gate.idle(idle, lambda s: s == "busy") == ["reader"]
    assert SessionGate(per_minute=10, held=10).idle(idle, lambda s: False) == []   # no bound set


def test_open_pages_counts_each_sessions_heartbeat_streams_while_they_last():
    import asyncio

    from explorer.web.open_pages import OpenPages, TrackHeartbeats, heartbeat_session

    assert heartbeat_session({"type": "http", "path": "/gradio_api/heartbeat/abc"}) == "abc"
    assert heartbeat_session({"type": "http", "path": "/x/gradio_api/heartbeat/abc", "root_path": "/x"}) == "abc"
    for path in ("/gradio_api/heartbeat/", "/gradio_api/heartbeat/a/b", "/gradio_api/queue/join"):
        assert heartbeat_session({"type": "http", "path": path}) is None
    assert heartbeat_session({"type": "websocket", "path": "/gradio_api/heartbeat/abc"}) is None
    pages, seen = OpenPages(), []

    async def inner(scope, receive, send):
        seen.append("abc" in pages)
        if scope["path"].endswith("fails"):
            raise RuntimeError("the stream broke")

    tracked = TrackHeartbeats(inner, pages)

    def call(path):   # in a thread of its own: a session fixture (Playwright's) may hold a loop here
        errors = []
        thread = threading.Thread(target=lambda: _catch(errors, asyncio.run, tracked(
            {"type": "http", "path": path}, None, None)))
        thread.start()
        thread.join(10)
        if errors:
            raise errors[0]

    call("/gradio_api/heartbeat/abc")
    with pytest.raises(RuntimeError, match="the stream broke"):
        call("/gradio_api/heartbeat/fails")
    call("/gradio_api/queue/join")
    assert seen == [True, False, False] and len(pages) == 0   # open while it lasted, then gone


def _catch(errors: list, fn, *args) -> None:
    try:
        fn(*args)
    except Exception as error:   # handed to the test's thread
        errors.append(error)


# ------------------------------------------------------------- the groups of the built app
def test_every_queued_event_is_in_a_named_group_and_has_a_thread(runtime):
    import app

    demo = app.build_app(runtime)
    queued = [f for f in demo.fns.values() if f.queue and f.fn is not None]
    groups = {f.concurrency_id for f in queued}
    assert groups <= set(app.GROUPS), groups - set(app.GROUPS)
    for f in queued:
        assert f.concurrency_limit == app.GROUPS[f.concurrency_id].concurrency, f.api_name
    by_name = {f.api_name: f.concurrency_id for f in queued}
    assert by_name["streaming_ppl"] == by_name["claims_board"] == by_name["rope_perplexity"] == "long"
    assert by_name["precision_measure"] == "long"    # 20-40 s idle: ends by its own deadline
    assert by_name["attention_map"] == "model" and by_name["load_model"] == "cheap"
    # one worker thread for every event the groups let run at once, and the unqueued ones
    running = sum(app.GROUPS[g].concurrency for g in groups)
    unqueued = sum(1 for f in demo.fns.values() if not f.queue and f.fn is not None)
    assert app.MAX_THREADS >= running + unqueued
    assert app.GROUPS["cheap"].concurrency <= 4


# --------------------------------------------------------------------------- the flood
def _call(http: httpx.Client, url: str, api: str, data: list, address: str) -> httpx.Response:
    return http.post(f"{url}gradio_api/call/{api}", json={"data": data},
                     headers={"x-forwarded-for": address})


def _result(http: httpx.Client, url: str, api: str, event_id: str, timeout: float) -> str:
    """The last event type of the call's stream ("complete" or "error")."""
    last = None
    with http.stream("GET", f"{url}gradio_api/call/{api}/{event_id}", timeout=timeout) as stream:
        for line in stream.iter_lines():
            if line.startswith("event:"):
                last = line.split(":", 1)[1].strip()
    return last


@pytest.fixture
def held_long_runs(monkeypatch):
    """StreamingLLM's run replaced by one that holds its place until released: a long run
    that costs no CPU."""
    from explorer.ui.tabs import attention

    release = threading.Event()

    def hold(*args, **kwargs):
        release.wait(120)
        yield from ()

    monkeypatch.setattr(attention, "streaming_ppl", hold)
    yield release
    release.set()


def test_one_client_with_long_runs_posted_holds_no_other_visitor(runtime, serve, monkeypatch, held_long_runs):
    monkeypatch.setenv("EXPLORER_TRUST_PROXY", "1")
    runtime.get(SMOL)
    with serve(("explorer.ui.tabs.attention",)) as served, httpx.Client(timeout=30) as http:
        demo, url = served.demo, served.url
        answers = [_call(http, url, "streaming_ppl", [SMOL, "en", 512 + 64 * i, 256, 4], ATTACKER)
                   for i in range(8)]
        accepted = [a for a in answers if a.status_code == 200]
        refused = [a for a in answers if a.status_code != 200]
        # one running and one waiting (or one waiting, if the first had not started yet); the
        # rest refused at once, with the reason
        assert 1 <= len(accepted) <= 2 and {a.status_code for a in refused} == {429}
        assert text("shell.refused.group_yours", "en", limit=1) in refused[0].json()["detail"]
        started = time.monotonic()
        loaded = _call(http, url, "load_model", [SMOL, "en"], VISITOR)
        assert _result(http, url, "load_model", loaded.json()["event_id"], 30) == "complete"
        page_s = time.monotonic() - started
        mapped = _call(http, url, "attention_map",
                       [SMOL, "en", "The cat sat on the mat.", 2, "all", "causal", 8, 2, 1.0, "eager", 0],
                       VISITOR)
        assert mapped.status_code == 200
        assert _result(http, url, "attention_map", mapped.json()["event_id"], 60) == "complete"
        map_s = time.monotonic() - started - page_s
        held_long_runs.set()
    assert page_s < 10 and map_s < 30, (page_s, map_s)


# --------------------------------------------------------------------------- the sessions
def test_one_address_opening_many_sessions_evicts_no_one_else(runtime, serve, monkeypatch):
    import dataclasses

    import app
    monkeypatch.setenv("EXPLORER_TRUST_PROXY", "1")
    monkeypatch.setattr(app, "WEB", dataclasses.replace(app.WEB, state_sessions=8, new_sessions_per_minute=5,
                                                        sessions_per_address=4))
    calculator = [SMOL, "en", 1024, 2]
    with serve(("explorer.ui.tabs.generate",)) as served, httpx.Client(timeout=30) as http:
        demo, url = served.demo, served.url
        fn_index = next(i for i, f in demo.fns.items() if f.api_name == "kv_calculator")
        joined = http.post(f"{url}gradio_api/queue/join",
                           json={"data": calculator, "fn_index": fn_index, "session_hash": "visitor"},
                           headers={"x-forwarded-for": VISITOR})
        assert joined.status_code == 200
        with http.stream("GET", f"{url}gradio_api/queue/data?session_hash=visitor") as stream:
            for line in stream.iter_lines():
                if "process_completed" in line:
                    break
        assert "visitor" in demo.state_holder.session_data
        statuses = []
        for _ in range(20):
            answer = _call(http, url, "kv_calculator", calculator, ATTACKER)
            statuses.append(answer.status_code)
            if answer.status_code == 200:
                assert _result(http, url, "kv_calculator", answer.json()["event_id"], 30) == "complete"
            else:
                detail = answer.json()["detail"]
        assert statuses.count(200) == 5 and statuses.count(429) == 15
        assert text("shell.refused.sessions", "zh", limit=5) in detail
        assert "visitor" in demo.state_holder.session_data   # the visitor's state survived
        held = [s for s in demo.state_holder.session_data if s != "visitor"]
        assert len(held) <= 4


def _join(http: httpx.Client, url: str, fn_index: int, data: list, session: str, address: str) -> None:
    """One event of `session` through the queue, as a page sends it, read to its completion."""
    joined = http.post(f"{url}gradio_api/queue/join",
                       json={"data": data, "fn_index": fn_index, "session_hash": session},
                       headers={"x-forwarded-for": address})
    assert joined.status_code == 200, joined.text
    with http.stream("GET", f"{url}gradio_api/queue/data?session_hash={session}") as stream:
        for line in stream.iter_lines():
            if "process_completed" in line:
                return
    raise AssertionError(f"{session}: no completion")


def test_a_session_no_page_holds_open_is_dropped_once_idle(runtime, serve, monkeypatch):
    """A closed page's session (and an API call's) is dropped SESSION_IDLE_S after its last
    request; a page still open (its heartbeat stream) keeps its own however long it is idle.
    Before, both stayed until Gradio's cap of 200 evicted them."""
    import dataclasses

    import app
    monkeypatch.setenv("EXPLORER_TRUST_PROXY", "1")
    monkeypatch.setattr(app, "WEB", dataclasses.replace(app.WEB, session_idle_s=1.0))
    monkeypatch.setenv("GRADIO_HEARTBEAT_INTERVAL", "1")   # a closed stream is seen within 1 s
    calculator = [SMOL, "en", 1024, 2]
    with serve(("explorer.ui.tabs.generate",)) as served, httpx.Client(timeout=30) as http:
        demo, url = served.demo, served.url
        held = demo.state_holder.session_data
        fn_index = next(i for i, f in demo.fns.items() if f.api_name == "kv_calculator")
        reading = threading.Event()
        leave = threading.Event()

        def open_page():   # the reader's page: its heartbeat stream stays open until it leaves
            with httpx.Client(timeout=30) as own, \
                    own.stream("GET", f"{url}gradio_api/heartbeat/reader") as beat:
                for _ in beat.iter_lines():
                    reading.set()
                    if leave.wait(0.1):
                        return

        page = threading.Thread(target=open_page, daemon=True)
        page.start()
        assert reading.wait(10)
        _join(http, url, fn_index, calculator, "reader", VISITOR)
        _join(http, url, fn_index, calculator, "left", VISITOR)
        assert {"reader", "left"} <= set(held)
        time.sleep(1.5)
        _join(http, url, fn_index, calculator, "newcomer", ATTACKER)   # a new session: the sweep
        assert "left" not in held and {"reader", "newcomer"} <= set(held)
        leave.set()
        page.join(10)
        deadline = time.monotonic() + 20     # the server sees the stream end at its next beat
        while time.monotonic() < deadline:
            time.sleep(1.5)
            _join(http, url, fn_index, calculator, f"later-{time.monotonic_ns()}", ATTACKER)
            if "reader" not in held:
                break
        assert "reader" not in held   # the page closed: its session went idle like any other


# ------------------------------------------------------------ raw exceptions never shown
def _fn(demo, name):
    return next(f.fn for f in demo.fns.values()
                if f.api_name == name or getattr(f.fn, "__name__", None) == name)


def _refused_generically(call, lang: str) -> None:
    with pytest.raises(gr.Error) as refused:
        call()
    assert refused.value.message == text("inputs.internal", lang)
    assert "/srv/secret" not in str(refused.value)


def test_the_four_header_and_setup_handlers_hide_a_raw_exception(runtime, monkeypatch):
    import app
    from explorer.ui import TabContext
    from explorer.ui.page import shell
    from explorer.ui.tabs import about

    demo = app.build_app(runtime)

    def broken(*args, **kwargs):
        raise RuntimeError("cannot open /srv/secret/weights")

    monkeypatch.setattr(shell, "load_or_error", broken)
    _refused_generically(lambda: _fn(demo, "load_model")(SMOL, "zh"), "zh")
    monkeypatch.setattr(shell, "normalize_language", broken)
    _refused_generically(lambda: _fn(demo, "redraw_all")("en", None), "en")
    monkeypatch.setattr(TabContext, "load", broken)
    _refused_generically(lambda: _fn(demo, "on_controls")(SMOL, "zh"), "zh")
    monkeypatch.setattr(about, "model_info", broken)
    _refused_generically(lambda: _fn(demo, "model_info")(SMOL), "en")
