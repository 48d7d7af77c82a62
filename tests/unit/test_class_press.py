"""The teacher's Next and Back over plain HTTP (explorer/web/class_press.py): only a well-formed
press reaches the page's handler, and a refusal says nothing of the room; the store moves the
class only from the step the press was made at (Rooms.follow_from). The handler on the real
page: tests/checkpoints/test_class_press_real.py; the teacher's page sending it:
tests/browser/test_browser_class_move.py."""
from __future__ import annotations

import json

import pytest

from explorer.classroom.rooms import Rooms
from explorer.inputs import InputError
from explorer.web import class_press
from tests.helpers import middleware_client

STEP2, STEP3 = "?lesson=kv-cache&step=2", "?lesson=kv-cache&step=3"


ROOMS = Rooms()
CODE, KEY = ROOMS.create("10.0.0.1")


def _client(rooms=ROOMS):
    from starlette.middleware import Middleware
    return middleware_client([Middleware(class_press.PressRoute, rooms=rooms)])


@pytest.fixture
def pressed(monkeypatch):
    """The presses the handler was given; it answers what `answers` holds (an exception: raised)."""
    monkeypatch.setattr(class_press, "_HANDLER", [])
    calls, answers = [], {"next": True}

    def handler(room, key, at, step):
        calls.append((room, key, at, step))
        if isinstance(answers["next"], Exception):
            raise answers["next"]
        return answers["next"]
    class_press.handle(handler)
    return calls, answers


def _post(body, raw=False, rooms=ROOMS):
    return _client(rooms).post("/class/press", content=body if raw else json.dumps(body))


def _press(**fields):
    return {"room": CODE, "key": KEY, "at": STEP2, "step": 1, **fields}


def test_a_well_formed_press_reaches_the_handler_and_its_answer_is_the_status(pressed):
    calls, answers = pressed
    assert _post(_press()).status_code == 204
    assert calls == [(CODE, KEY, STEP2, 1)]
    answers["next"] = False                          # the class is not at `at`
    assert _post(_press(step=-1)).status_code == 409
    answers["next"] = InputError("classroom.err.link")     # no step there
    assert _post(_press()).status_code == 403
    answers["next"] = RuntimeError("a bug")
    assert _post(_press()).status_code == 500


@pytest.mark.parametrize("body", [
    _press(step=2), _press(step=0), _press(step=True), _press(step="1"), _press(step=1.0),
    _press(room="abc234"), _press(room="ABC23"), _press(room="ABC2340"), _press(room="ABCDE1"),
    _press(key="short"), _press(key="k" * 65), _press(key="k" * 21 + "!"), _press(key=None),
    _press(at="lesson=kv-cache&step=2"), _press(at="?a b"), _press(at='?a"b'), _press(at="?a\\b"),
    _press(at="?" + "a" * 8392), _press(at="?é"), _press(at=["?x"]),
    _press(extra=1), {"room": "ABC234", "key": KEY, "at": STEP2}, [1, 2], "text", None,
])
def test_any_other_body_is_refused_before_the_handler(pressed, body):
    calls, _ = pressed
    assert _post(body).status_code == 400
    assert calls == []


def test_not_json_a_body_too_large_and_other_methods(pressed):
    calls, _ = pressed
    assert _post(b"{not json", raw=True).status_code == 400
    assert _post(b"\xff\xfe", raw=True).status_code == 400
    assert _post(b"x" * (class_press.MAX_BODY + 1), raw=True).status_code == 413
    client = _client()
    assert client.get("/class/press").status_code == 405
    assert client.put("/class/press", content=json.dumps(_press())).status_code == 405
    assert calls == []
    # the longest link a teacher's lesson step has is taken
    assert _post(_press(at="?" + "a" * (class_press.MAX_LINK - 1))).status_code == 204


def test_other_paths_go_to_the_app_and_no_handler_refuses(monkeypatch):
    monkeypatch.setattr(class_press, "_HANDLER", [])
    client = middleware_client(class_press.middleware())   # as the app adds it
    assert client.post("/class/pressed", content="{}").text == "app: /class/pressed"
    assert client.get("/").text == "app: /"
    assert _post(_press()).status_code == 403       # no page registered a handler


def test_a_key_is_checked_before_the_handler_and_guessing_one_is_bounded(pressed):
    """A wrong key, or a room that does not exist, is the same 403, and each counts against the
    client's address (MISSES_PER_ADDRESS a minute, then 429); the room's key is still taken."""
    calls, _ = pressed
    rooms = Rooms(misses_per_address=3)
    code, key = rooms.create("10.0.0.1")
    other, _ = rooms.create("10.0.0.1")
    near = key[:-1] + ("B" if key.endswith("A") else "A")
    refused = [_post(_press(room=room, key=k), rooms=rooms).status_code
               for room, k in [(code, "x" * 22), ("ZZZZZZ", key), (other, key), (code, near)]]
    assert refused[:3] == [403, 403, 403] and refused[3] == 429, refused
    assert calls == []
    assert _post(_press(room=code, key=key), rooms=rooms).status_code == 204
    assert calls == [(code, key, STEP2, 1)]


def test_the_store_moves_only_from_the_step_pressed_at():
    rooms = Rooms()
    code, secret = rooms.create("10.0.0.1")
    _, token = rooms.join(code, "ann", session="s1", address="10.0.0.2")
    assert rooms.follow_from(code, secret, STEP2, STEP3) is None       # the class is nowhere yet
    assert rooms.moves(code) == 0
    rooms.follow(code, secret, STEP2, bounds=(0.0, 1e6))
    assert rooms.follow_from(code, secret, STEP2, STEP3) == 2
    # a press sent from step 2 that arrives after the class moved on changes nothing
    assert rooms.follow_from(code, secret, STEP2, STEP3) is None
    assert rooms.follow_from(code, secret, STEP2, "?lesson=kv-cache&step=1") is None
    assert rooms.moves(code) == 2 and rooms.move_of(code, token) == (2, STEP3)
    # the same link twice is one move (Gradio's listener of the same press publishes it too)
    assert rooms.follow(code, secret, STEP3) == 2
    # back to a predict step asks its question once, with the bounds given
    assert rooms.follow_from(code, secret, STEP3, STEP2, (0.0, 1e6)) == 3
    for bad in [(code, "x" * 22, STEP2, STEP3), ("ZZZZZZ", secret, STEP2, STEP3),
                (code, secret, STEP2, "no query")]:
        with pytest.raises(InputError):
            rooms.follow_from(*bad)
    assert rooms.moves(code) == 3
