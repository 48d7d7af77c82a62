"""A teacher's move reaches a following page whatever it is doing: the page's poll that carries
the move also stops the step the page still runs (explorer/web/stopping.stop_every_run: every
kind of run of that session, as its Stop button would), so its stream no longer holds the page
and the new step's run can start. A student exploring on her own, the teacher's page and a poll
without a move stop nothing."""
from __future__ import annotations

import threading
import time
import types

from explorer.classroom.rooms import Rooms
from explorer.ui.page import class_teacher, classroom
from explorer.web import stopping
from explorer.web.stopping import Stops
from tests.unit.test_stopping import event, last_word


class Request:
    def __init__(self, session):
        self.session_hash, self.headers, self.query_params = session, {}, {}
        self.client = type("Client", (), {"host": "10.0.0.2"})()


def _streaming(stops: Stops, session: str, event_id: str) -> tuple[threading.Thread, list]:
    """A run of `stops` for `session` streaming on a thread until its flag is raised, once it
    runs: (the thread, what it noted when its flag stopped it)."""
    started, ended = threading.Event(), []

    def long_run(lang):
        flag = stops.flag()
        started.set()
        while not flag.is_set():
            time.sleep(0.01)
            yield "token"
        ended.append("stopped by its flag")

    handler = stops.stoppable(long_run, last_word)

    def consume():
        with event(session, event_id):
            for _ in handler("en"):
                pass

    worker = threading.Thread(target=consume)
    worker.start()
    assert started.wait(10)
    return worker, ended


def test_stop_every_run_stops_each_kind_of_this_sessions_runs_and_no_other():
    first, second = Stops(), Stops()
    worker, seen = _streaming(first, "student", "gen-1")
    with event("someone-else", "poll-1"):
        assert not stopping.stop_every_run()         # another session's poll: nothing of hers
    assert first.running("student") == 1
    with event("student", "poll-2"):
        assert stopping.stop_every_run()
    worker.join(10)
    assert not worker.is_alive() and seen == ["stopped by its flag"]
    assert first.running() == 0 and second.running() == 0


def test_a_move_stops_a_session_once_only():
    """Two polls that carry the same move (the second answered before the first's new state
    reached the page): the second stops nothing, so the new step's run is left alone."""
    stops = Stops()
    with event("ada", "poll-1"):
        stopping.stop_every_run(once_for=("ROOM22", 3))
        first = stops._stopped_at.get("ada")
    assert first is not None
    with event("ada", "poll-2"):
        assert not stopping.stop_every_run(once_for=("ROOM22", 3))
        assert stops._stopped_at.get("ada") == first          # no second stop time
        stopping.stop_every_run(once_for=("ROOM22", 4))       # the next move stops again
        assert stops._stopped_at.get("ada")[0] > first[0]


def _run_until_stopped(stops, session, stop):
    """A stoppable run of `session` that streams until its flag is raised, stopped by
    `stop()` (called from the test's thread): (its flag's reason, its last messages,
    ended_by_move() as a listener that follows the run would then read it)."""
    started = threading.Event()
    seen, flags = [], []

    def long_run(lang):
        flag = stops.flag()
        flags.append(flag)
        started.set()
        while not flag.is_set():
            threading.Event().wait(0.01)
            yield "token"
        yield "moved" if flag.moved() else "stopped"

    def consume():
        with event(session, "gen-1"):
            seen.extend(stops.stoppable(long_run, last_word)("en"))

    worker = threading.Thread(target=consume)
    worker.start()
    assert started.wait(10)
    stop()
    worker.join(10)
    assert not worker.is_alive()
    with event(session, "after-1"):
        return flags[0].reason, seen[-1], stops.ended_by_move()


def test_a_run_its_class_moved_off_says_so_and_its_followers_leave_it():
    """A class's move (at the teacher's press, or the page's poll) raises the flag with the
    reason MOVED: the run knows to end with its text alone, and the listeners that follow a
    run's end (a lesson's reading, a class's record) read ended_by_move(). A Stop press is no
    move, and the session's next run clears the mark."""
    stops = Stops()
    assert _run_until_stopped(stops, "mei", lambda: stopping.stop_sessions(["mei"], once_for=("R", 1))) \
        == (stopping.MOVED, "moved", True)
    assert _run_until_stopped(stops, "mei", lambda: stops.stop("mei")) == (None, "stopped", False)

    def by_poll():
        with event("lin", "poll-1"):
            assert stopping.stop_every_run(once_for=("R", 2))
    assert _run_until_stopped(stops, "lin", by_poll) == (stopping.MOVED, "moved", True)
    with event("lin", "gen-2"):     # the next run begins: the last one's end is past
        list(stops.stoppable(lambda lang: iter(["a"]), last_word)("en"))
    with event("lin", "after-2"):
        assert not stops.ended_by_move()
    with event("noone", "after-3"):
        assert not stops.ended_by_move()


def test_the_listeners_after_a_run_find_its_stops_from_the_event():
    """ended_by_move(event): what a lesson's reading and a class's record ask of the run event
    they follow (Gradio's listener return: its .fn is the handler)."""
    stops = Stops()
    handler = stops.stoppable(lambda lang: iter(["a"]), last_word)
    listener = types.SimpleNamespace(fn=handler)
    plain = types.SimpleNamespace(fn=lambda: None)
    stopping.stop_sessions(["kim"], once_for=("R", 5))
    with event("kim", "gen-1", queued=0.0):
        list(handler("en"))
    with event("kim", "after-1"):
        assert stopping.ended_by_move(listener) and not stopping.ended_by_move(plain)
        assert not stopping.ended_by_move(None)


def test_a_run_queued_when_its_class_moved_ends_as_moved():
    stops = Stops()
    stopping.stop_sessions(["ada"], once_for=("R", 3))
    with event("ada", "gen-1", queued=0.0):    # queued before the move
        out = list(stops.stoppable(lambda lang: iter(["never"]), last_word)("en"))
    assert out == [("stopped", None, "en")]
    with event("ada", "after-1"):
        assert stops.ended_by_move()


def test_a_page_applying_a_move_stops_a_run_it_pressed_after_the_teachers_press():
    """The teacher's press stops the class's runs (stop_sessions), and a run a page starts just
    after it, before the page learned of the move, is one of the step the page leaves: the
    page's apply_move stops it (stop_every_run(moved=True)), each time, as a move, although the
    move's once-only mark is set; its listeners then leave it (ended_by_move)."""
    stops = Stops()
    stopping.stop_sessions(["bea"], once_for=("R", 5))      # the teacher's press
    worker, ended = _streaming(stops, "bea", "gen-late")     # queued after the press
    assert stops.running("bea") == 1
    with event("bea", "poll-1"):                             # the poll's stop: once, already done
        assert not stopping.stop_every_run(once_for=("R", 5))
    assert stops.running("bea") == 1
    with event("bea", "apply-1"):
        assert stopping.stop_every_run(moved=True)
    worker.join(10)
    assert not worker.is_alive() and ended == ["stopped by its flag"] and stops.running("bea") == 0
    with event("bea", "after-1"):
        assert stops.ended_by_move()


def _class(monkeypatch):
    rooms = Rooms()
    stops = []
    monkeypatch.setattr(classroom, "stop_every_run", lambda once_for: stops.append(once_for) or False)
    teacher = class_teacher.start("en", Request("teacher"), rooms=rooms)[0]
    student = classroom.join(teacher["code"], "Ada", None, "en", Request("ada"), rooms=rooms)[0]
    return rooms, teacher, student, stops


def test_a_poll_that_carries_a_move_stops_the_following_pages_run(monkeypatch):
    rooms, teacher, student, stops = _class(monkeypatch)
    student = classroom.poll(student, True, "en", rooms=rooms)[0]   # caught up: no move yet
    assert stops == []
    rooms.follow(teacher["code"], teacher["secret"], "?lesson=kv-cache&step=2")
    values = classroom.poll(student, True, "en", rooms=rooms)
    assert values[8] == classroom.move_value(1, "?lesson=kv-cache&step=2")   # the move to apply
    assert stops == [(teacher["code"], 1)]                             # once for that move
    assert not isinstance(classroom.poll(values[0], True, "en", rooms=rooms)[8], str)   # no move again
    assert len(stops) == 1


def test_an_exploring_page_and_the_teachers_page_are_not_stopped(monkeypatch):
    rooms, teacher, student, stops = _class(monkeypatch)
    rooms.follow(teacher["code"], teacher["secret"], "?lesson=kv-cache&step=2")
    classroom.poll(student, False, "en", rooms=rooms)       # exploring on her own
    classroom.poll(teacher, None, "en", rooms=rooms)        # the teacher's own page
    assert stops == []


def test_a_teachers_press_publishes_the_step_its_handler_opens_and_a_students_computes_nothing(monkeypatch):
    """early_move: the teacher's lesson press publishes the link the lesson's own handler gives
    the step (lessons.LINK_AT of its values), at the press; on a student's page it returns
    without calling the handler."""
    from explorer.ui.page.lessons import LINK_AT
    rooms, teacher, student, stops = _class(monkeypatch)
    called, published = [], []

    def step(*values):
        called.append(values)
        out = [None] * (LINK_AT + 3)
        out[LINK_AT] = "?lesson=kv-cache&step=3"
        return out

    monkeypatch.setattr(classroom, "publish", lambda state, link, lesson, views, runtime:
                        published.append((state["role"], link)) or "said")
    move = classroom.early_move(step, views=None, runtime=None)
    assert move(student, {"lesson": "kv-cache", "step": 1}, "en", "m") is not None
    assert called == [] and published == []
    assert move(teacher, {"lesson": "kv-cache", "step": 1}, "en", "m") == "said"
    assert called == [({"lesson": "kv-cache", "step": 1}, "en", "m")]
    assert published == [("teacher", "?lesson=kv-cache&step=3")]


def test_the_lessons_reading_leaves_a_run_its_class_moved_off(monkeypatch):
    """The lesson's listener after a run (lessons._after_run) answers nothing for a run its
    class moved off (the page may already show the next step), and reads any other."""
    from explorer.ui.page import lessons

    stops = Stops()
    handler = stops.stoppable(lambda lang: iter(["a"]), last_word)
    event_of_run = types.SimpleNamespace(fn=handler)
    view = types.SimpleNamespace(link_inputs=[None, None], make_link=lambda *values: "?x=1", key="toy.run")
    monkeypatch.setattr(lessons, "observe", lambda *args: ("read", "said"))
    after = lessons._after_run(view, event_of_run)
    stopping.stop_sessions(["zoe"], once_for=("R", 7))
    with event("zoe", "gen-1", queued=0.0):
        list(handler("en"))
    with event("zoe", "after-1"):
        skip = lessons.gr.skip()
        assert after("m", "en", {}, None, "en") == (skip, skip, skip)
    with event("zoe", "gen-2"):
        list(handler("en"))
    with event("zoe", "after-2"):
        assert after("m", "en", {}, None, "en") == ("?x=1", "read", "said")
