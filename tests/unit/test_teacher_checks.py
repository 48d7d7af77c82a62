"""A live class's teacher page keeps its Generate checks (C4, the cache read back: the mask) while
the class generates: the run waits for the shared loop ("checks wait for the class's runs: n
ahead"), bounded in time, then checks. Only a session the class's own handlers granted, after
checking the teacher's secret against the room, waits; any other run keeps today's rule (the
checks are declined while anyone else generates)."""
from __future__ import annotations

import threading
import time

from explorer.classroom.rooms import Rooms
from explorer.generate import checks, figures, request as req, session as sess
from explorer.serving import Scheduler
from explorer.serving.priority import Priority
from models.generate import SamplingParams
from tests.unit.test_scheduler import Digits, prompt


def _busy_loop(model, read=True):
    """A loop with another visitor's run of 200 tokens in it, still decoding when ours joins;
    `read`: a thread reads it to its end (else nobody reads it, and it stays in the loop,
    AHEAD steps ahead of its reader, until it is stopped)."""
    loop = Scheduler(model)
    other = loop.submit(prompt(4, 6), SamplingParams(max_new_tokens=200), eos_ids=[])
    assert other.next(timeout=60) is not None

    def drain():
        while other.next(timeout=60) is not None:
            time.sleep(0.005)   # a visitor's page: its run outlasts ours

    reader = threading.Thread(target=drain if read else (lambda: None), daemon=True)
    reader.start()
    return loop, other, reader


def test_a_teachers_run_waits_for_the_class_then_checks(tiny):
    model = tiny["llama"]
    # the other run leaves a while after ours ends: ours waits for it, then checks
    loop, other, reader = _busy_loop(model)
    request = req.Request(prompt="x", max_new_tokens=8, compare_no_cache=False, check_full_forward=True)
    seen = []
    try:
        for snapshot in sess.stream_generation(model, Digits(), [1, 2, 3], request, scheduler=loop,
                                               eos_ids=[], checks_wait_s=60.0):
            seen.append((snapshot.phase, snapshot.ahead, figures.status(snapshot, "en"),
                         figures.status(snapshot, "zh")))
        session = snapshot
    finally:
        other.stop()
        reader.join(timeout=60)
    assert session.max_batch() == 2, "the run shared steps with the other visitor's"
    waiting = [s for s in seen if s[0] == "waiting"]
    assert waiting and all(s[1] == 1 for s in waiting), seen
    assert "Checks wait for the class's runs: **1** ahead" in waiting[0][2]
    assert "前面还有 **1** 个" in waiting[0][3]
    # the checks ran after the wait: every generated token's C4 difference, within the bound
    assert session.replay_note == "" and session.phase == "done"
    assert session.logit_diffs is not None and len(session.logit_diffs) == 8
    assert checks.c4_holds(session.logit_diffs, checks.c4_tolerance(session.weights))
    assert session.cache_reading is not None and session.cache_reading.masks
    assert [p for p, *_ in seen].index("waiting") < [p for p, *_ in seen].index("checking")
    assert "Declined" not in figures.summary(session, "en")


def test_the_wait_is_bounded_and_the_checks_run_all_the_same(tiny):
    model = tiny["llama"]
    loop, other, reader = _busy_loop(model, read=False)   # a run that does not leave
    request = req.Request(prompt="x", max_new_tokens=5, compare_no_cache=False, check_full_forward=True)
    try:
        started = time.perf_counter()
        *_, session = sess.stream_generation(model, Digits(), [1, 2, 3], request, scheduler=loop,
                                             eos_ids=[], checks_wait_s=0.5)
        took = time.perf_counter() - started
        still_there = loop.load()
    finally:
        other.stop()
        reader.join(timeout=60)
    assert still_there == 1, "the other run was still in the loop when ours checked"
    assert session.logit_diffs is not None and len(session.logit_diffs) == 5
    assert session.cache_reading is not None
    assert took < 60


def test_any_other_run_keeps_todays_rule(tiny):
    model = tiny["llama"]
    loop, other, reader = _busy_loop(model)
    request = req.Request(prompt="x", max_new_tokens=6, compare_no_cache=False, check_full_forward=True)
    try:
        *_, session = sess.stream_generation(model, Digits(), [1, 2, 3], request, scheduler=loop,
                                             eos_ids=[])
    finally:
        other.stop()
        reader.join(timeout=60)
    assert session.replay_note == "busy" and session.logit_diffs is None
    assert session.cache_reading is None


def test_priority_holds_only_while_its_test_does_and_is_bounded():
    held = Priority(limit=3)
    live = {"a": True}
    held.grant("a", lambda: live["a"])
    held.grant(None, lambda: True)            # a request without a session is never granted
    held.grant("x" * 500, lambda: True)       # nor an oversized id
    assert held.holds("a") and not held.holds(None) and not held.holds("b") and len(held) == 1
    live["a"] = False
    assert not held.holds("a") and len(held) == 0   # a failing test is dropped
    held.grant("b", lambda: 1 / 0)             # a test that raises grants nothing
    assert not held.holds("b")
    for name in "cdefg":
        held.grant(name, lambda: True)
    assert len(held) == 3 and held.holds("g") and not held.holds("c")   # the oldest went first
    held.revoke("g")
    assert not held.holds("g")


def test_the_class_grants_the_teachers_session_and_no_other(monkeypatch):
    """Starting a class grants the starting page's session (the server's request, not a value
    the client sends); a student's join grants nothing; the grant ends with the class."""
    from explorer.serving import priority
    from explorer.ui.page import class_teacher, classroom

    fresh = Priority()
    monkeypatch.setattr(class_teacher, "CHECKS_FIRST", fresh)
    monkeypatch.setattr(priority, "CHECKS_FIRST", fresh)
    rooms = Rooms()

    class Request:
        def __init__(self, session):
            self.session_hash, self.headers, self.query_params = session, {}, {}
            self.client = type("Client", (), {"host": "10.0.0.1"})()

    state = class_teacher.start("en", Request("teacher-session"), rooms=rooms)[0]
    assert fresh.holds("teacher-session")
    classroom.join(state["code"], "Ada", None, "en", Request("student-session"), rooms=rooms)
    assert not fresh.holds("student-session")
    # the teacher's link opened in another tab (its own session): granted once the key checks;
    # a page that brings a wrong key is not
    opened = Request("second-tab")
    opened.query_params = {"room": state["code"], "key": state["secret"]}
    assert classroom.on_load(None, "en", None, opened, rooms=rooms)[0]["role"] == "teacher"
    assert fresh.holds("second-tab")
    guessed = Request("guesser")
    guessed.query_params = {"room": state["code"], "key": "x" * 22}
    assert classroom.on_load(None, "en", None, guessed, rooms=rooms)[0] is None
    assert not fresh.holds("guesser")
    class_teacher.end_class(state, "en", rooms=rooms)
    assert not fresh.holds("second-tab")
    assert not fresh.holds("teacher-session")
