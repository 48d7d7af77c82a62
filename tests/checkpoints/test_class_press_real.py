"""The teacher's press over plain HTTP on the whole app (built on the real runtime): the page
registers its handler with the route (explorer/web/class_press.py), which moves a class from
the step pressed at to the lesson's next or previous one, asks the step's question, stops the
following pages' runs, and refuses anything but its teacher's key and a lesson step with a step
there. The route's own checks: tests/unit/test_class_press.py."""
from __future__ import annotations

import json

import pytest

from explorer.classroom.rooms import ROOMS
from explorer.inputs import InputError
from explorer.lessons import custom
from explorer.ui.page import class_teacher
from explorer.ui.page.class_teacher import press_move
from explorer.ui.page.lesson_links import lesson_link, step_link
from explorer.web import class_press
from tests.checkpoints.test_lesson_custom_real import checked  # noqa: F401 -- a fixture
from tests.helpers import middleware_client

STEP = "?lesson=kv-cache&step={}".format


def _post(code, key, at, step):
    client = middleware_client(class_press.middleware())
    body = {"room": code, "key": key, "at": at, "step": step}
    return client.post("/class/press", content=json.dumps(body)).status_code


@pytest.fixture
def stopped(monkeypatch):
    calls = []
    monkeypatch.setattr(class_teacher, "stop_sessions", lambda sessions, once_for: calls.append(
        (sorted(sessions), once_for)))
    return calls


def test_the_pages_handler_moves_its_class_through_the_route(full_page, stopped):
    assert class_press._HANDLER, "the page registers its handler when it is built"
    code, secret = ROOMS.create("10.1.2.3")
    try:
        ROOMS.join(code, "ann", session="s-ann", address="10.1.2.4")
        ROOMS.follow(code, secret, STEP(1))
        assert _post(code, secret, STEP(1), 1) == 204
        watch = ROOMS.watch_token(code, secret)
        assert ROOMS.moves(code) == 2 and ROOMS.teacher_view(code, secret)["link"] == STEP(2)
        assert stopped == [(["s-ann"], (code, 2))]
        # step 2 is a prediction: its question was asked with the step's bounds
        assert ROOMS.answer(code, ROOMS.join(code, "bo", session="s-bo", address="10.1.2.5")[1], STEP(2), 500) >= 1
        assert _post(code, secret, STEP(1), 1) == 409      # sent late: the class is at step 2
        assert _post(code, secret, STEP(2), -1) == 204 and ROOMS.moves(code) == 3
        for key, at, step in [("x" * 22, STEP(1), 1),         # not the teacher's key
                              (secret, STEP(1), -1),         # no step before the first
                              (secret, STEP(1), 2),          # not a press (400, never the handler)
                              (secret, "?view=rope.scale&factor=4", 1)]:   # not a lesson step
            assert _post(code, key, at, step) in (400, 403)
        assert _post("ZZZZZZ", secret, STEP(1), 1) == 403
        assert ROOMS.moves(code) == 3 and watch
    finally:
        ROOMS.end(code, secret)


def test_a_teachers_own_lesson_moves_with_its_steps(full_page, runtime, checked, stopped):  # noqa: F811
    code, secret = ROOMS.create("10.1.2.6")
    try:
        first = lesson_link(checked)
        ROOMS.follow(code, secret, first)
        assert press_move(code, secret, first, 1, full_page.views, runtime)
        second = step_link(custom.KEY, 1, checked)
        assert ROOMS.teacher_view(code, secret)["link"] == second
        last = step_link(custom.KEY, len(checked["steps"]) - 1, checked)
        with pytest.raises(InputError):                 # no step after the last
            press_move(code, secret, last, 1, full_page.views, runtime)
        with pytest.raises(InputError):                 # a lesson that is not a valid lesson
            press_move(code, secret, first[:-12] + "AAAAAAAAAAAA", 1, full_page.views, runtime)
        with pytest.raises(InputError):
            press_move(code, secret, first, True, full_page.views, runtime)
    finally:
        ROOMS.end(code, secret)
