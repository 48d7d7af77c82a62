"""The revision route tells a page of the room the room's move counter (header X-Class-Moves),
which a following page's script reads to stop its own runs the moment the teacher moves on
(static/classroom.js): a move bumps it, a reveal does not, a request without a member token
(or with a token that is not the room's) never gets it."""
from __future__ import annotations

import threading
import time

from explorer.classroom.rooms import Rooms
from explorer.web.class_route import RevisionRoute
from tests.helpers import call_route


async def _app(scope, receive, send):      # the rest of the app: never reached here
    raise AssertionError(scope)


def _get(route: RevisionRoute, query: str) -> tuple[int, dict, bytes]:
    sent = call_route(route, "GET", "/class/revision", query)
    headers = {k.decode(): v.decode() for k, v in sent[0]["headers"]}
    return sent[0]["status"], headers, sent[1]["body"]


def test_a_members_answer_carries_the_rooms_moves_and_a_reveal_leaves_them():
    rooms = Rooms()
    code, secret = rooms.create("10.0.0.1")
    _, token = rooms.join(code, "ann", session="s1", address="10.0.0.2")
    route = RevisionRoute(_app, rooms=rooms, wait_s=0.5)
    status, headers, body = _get(route, f"room={code}&member={token}")
    assert status == 200 and body.decode().isdigit() and headers["x-class-moves"] == "0"
    rooms.follow(code, secret, "?lesson=kv-cache&step=2", bounds=(0.0, 1e6))
    status, headers, moved = _get(route, f"room={code}&member={token}&since={body.decode()}")
    assert status == 200 and int(moved) > int(body) and headers["x-class-moves"] == "1"
    rooms.reveal(code, secret, None)
    status, headers, _ = _get(route, f"room={code}&member={token}")
    assert status == 200 and headers["x-class-moves"] == "1"


def test_a_members_answer_carries_the_classs_link_and_no_one_elses_does():
    """X-Class-Link: the link the class follows, to a member of the room only (a following page
    applies the move from it); the teacher's watch token is a member too, a stranger is not."""
    rooms = Rooms()
    code, secret = rooms.create("10.0.0.1")
    _, token = rooms.join(code, "ann", session="s1", address="10.0.0.2")
    route = RevisionRoute(_app, rooms=rooms, wait_s=0.5)
    status, headers, body = _get(route, f"room={code}&member={token}")
    assert status == 200 and "x-class-link" not in headers          # the class is nowhere yet
    rooms.follow(code, secret, "?lesson=kv-cache&step=2", bounds=(0.0, 1e6))
    status, headers, _ = _get(route, f"room={code}&member={token}&since={body.decode()}")
    assert headers["x-class-link"] == "?lesson=kv-cache&step=2" and headers["x-class-moves"] == "1"
    assert rooms.move_of(code, token) == (1, "?lesson=kv-cache&step=2")
    assert rooms.move_of(code, "z" * 22) is None and rooms.move_of("ZZZZZZ", token) is None
    status, headers, _ = _get(route, f"room={code}")
    assert status == 200 and "x-class-link" not in headers
    status, headers, _ = _get(route, f"room={code}&member={'x' * 22}")
    assert status == 404 and "x-class-link" not in headers


def test_a_link_a_header_cannot_carry_is_left_to_the_poll():
    """A link outside printable ASCII (no space, quote or backslash) is not sent as a header:
    the page then applies the move its Gradio poll reads (classroom.poll)."""
    from explorer.web.class_route import LINK
    assert LINK.fullmatch("?lesson=kv-cache&step=2&custom=eJyrVkrLz1eyUkpKLFKqBQA-")
    for bad in ('?a="b"', "?a=b c", "?a=\\b", "?a=\u00e9", "?a=\nb", "lesson=x", "?" + "a" * 8192):
        assert not LINK.fullmatch(bad), bad


def test_no_moves_without_the_rooms_token():
    rooms = Rooms()
    code, secret = rooms.create("10.0.0.1")
    rooms.follow(code, secret, "?lesson=kv-cache&step=2")
    route = RevisionRoute(_app, rooms=rooms, wait_s=0.5)
    status, headers, body = _get(route, f"room={code}")
    assert status == 200 and body.decode().isdigit() and "x-class-moves" not in headers
    status, headers, _ = _get(route, f"room={code}&member={'x' * 22}")
    assert status == 404 and "x-class-moves" not in headers
    status, headers, _ = _get(route, "room=ZZZZZZ&member=" + "y" * 22)
    assert status == 404 and "x-class-moves" not in headers


def test_a_teachers_move_stops_the_following_sessions_runs_and_not_an_exploring_ones():
    """stopping.stop_sessions (the teacher's move, explorer/ui/page/class_teacher.publish):
    each following session's runs are stopped from the teacher's event; a session that
    explores on its own (explore_alone) is left running until it follows again."""
    import threading

    from explorer.web import stopping
    from explorer.web.stopping import Stops
    from tests.unit.test_stopping import event, last_word

    stops = Stops()
    started = {name: threading.Event() for name in ("ann", "bo")}
    ended = []

    def long_run(lang):
        flag = stops.flag()
        started[lang].set()
        while not flag.is_set():
            time.sleep(0.01)
            yield "token"
        ended.append(lang)

    run = stops.stoppable(long_run, last_word)

    def consume(session):
        with event(session, f"gen-{session}"):
            for _ in run(session):
                pass

    with event("bo", "explore-1"):
        stopping.explore_alone(True)
    workers = [threading.Thread(target=consume, args=(name,), daemon=True) for name in ("ann", "bo")]
    for worker in workers:
        worker.start()
    assert all(flag.wait(10) for flag in started.values())
    with event("teacher", "move-1"):
        assert stopping.stop_sessions(["ann", "bo", None], once_for=("ABCDEF", 1)) == 1
    workers[0].join(10)
    assert ended == ["ann"] and stops.running("bo") == 1
    with event("bo", "back-1"):
        stopping.explore_alone(False)
    with event("teacher", "move-2"):
        assert stopping.stop_sessions(["bo"], once_for=("ABCDEF", 2)) == 1
    workers[1].join(10)
    assert sorted(ended) == ["ann", "bo"] and stops.running() == 0


def test_a_waiting_poll_is_woken_by_the_move_not_by_its_next_check(monkeypatch):
    """The store tells the route of every change of a room's revision (Rooms.listen): a poll
    waiting on the room answers at once, not at its next read of the counter (CHECK_S). A change
    of another room leaves it waiting."""
    from explorer.web import class_route

    monkeypatch.setattr(class_route, "CHECK_S", 5.0)  # unwoken, the poll would answer in 5 s
    rooms = Rooms()
    code, secret = rooms.create("10.0.0.1")
    other, other_secret = rooms.create("10.0.0.3")
    _, token = rooms.join(code, "ann", session="s1", address="10.0.0.2")
    route = RevisionRoute(_app, rooms=rooms, wait_s=10.0)
    _, _, body = _get(route, f"room={code}&member={token}")
    answered = {}

    def poll():
        started = time.monotonic()
        status, headers, revision = _get(route, f"room={code}&member={token}&since={body.decode()}")
        answered.update(after=time.monotonic() - started, revision=revision, moves=headers["x-class-moves"])

    worker = threading.Thread(target=poll)
    worker.start()
    time.sleep(0.3)                                   # the poll is waiting
    rooms.follow(other, other_secret, "?lesson=rope&step=1", bounds=(0.0, 1e6))
    time.sleep(0.1)
    assert not answered                               # another room's move: still waiting
    moved_at = time.monotonic()
    rooms.follow(code, secret, "?lesson=kv-cache&step=2", bounds=(0.0, 1e6))
    worker.join(5)
    assert answered and answered["moves"] == "1" and int(answered["revision"]) > int(body)
    assert time.monotonic() - moved_at < 1.0, answered
    assert route._held == {} and route._changes == {}   # nothing kept once the poll answered
