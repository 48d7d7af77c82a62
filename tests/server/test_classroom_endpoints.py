"""The class's endpoints through Gradio's HTTP API (gradio_client), as a hostile client reaches
them: a teacher's session starts a class and moves it; students join, poll and answer; bad
codes, nicknames, links and answers are refused with the store's message; a session without the
teacher's secret (a student's, a stranger's) moves, reveals and downloads nothing; the poll
tells a student counts only before the reveal. And the teacher link's secret checked on load."""
from __future__ import annotations

import itertools

import csv
import json
import re
import time
from types import SimpleNamespace

import pytest

from explorer.classroom.rooms import ROOMS
from explorer.ui.page import classroom
from tests.helpers import run_coroutine

_SESSIONS = itertools.count()


def fresh():
    """A new session id, as Gradio gives each page."""
    return f"session-{next(_SESSIONS)}"


STEP = "?lesson=kv-cache&step=2"     # the KV-cache lesson's predict step


def client(url):
    from gradio_client import Client
    return Client(url, verbose=False)


def outputs_of(result):
    return result if isinstance(result, (list, tuple)) else [result]


def start(url):
    teacher = client(url)
    out = outputs_of(teacher.predict("en", api_name="/class_start"))
    info = next(o for o in out if isinstance(o, str) and "Class code" in o)
    code = info.split("`")[1]
    return teacher, code


def poll_view(c):
    """The bar's status line after a poll (what the page would show)."""
    out = outputs_of(c.predict("en", api_name="/class_poll"))
    return [o for o in out if isinstance(o, str)]


def test_a_class_through_the_api(class_url):
    teacher, code = start(class_url)
    assert len(code) == 6
    students = [client(class_url) for _ in range(3)]
    for i, s in enumerate(students):
        out = outputs_of(s.predict(code.lower(), f"s{i}", "en", api_name="/class_join"))
        assert any(isinstance(o, str) and code in o for o in out), out
    teacher.predict(STEP, "en", api_name="/class_move")
    first = poll_view(students[0])
    moved = [o for o in first if o.startswith("{")]
    assert moved and json.loads(moved[0])["link"] == STEP, first
    assert not any("answered" in o for o in first), first     # the class-wide count: the teacher's
    assert any("0 of 3 answered" in o for o in poll_view(teacher)), "the teacher sees the count"
    for value, s in zip((4000, 4500, 5000), students):
        said = s.predict(STEP, value, "en", api_name="/class_answer")
        assert "is in" in str(said), said
    # answers wake the teacher's page only; a student's poll carries nobody else's answer
    assert any("3 of 3 answered" in o for o in poll_view(teacher))
    line = " ".join(poll_view(students[0]))
    assert "4500" not in line and "5000" not in line
    assert ROOMS.student_view(code, _token_of(code, 0))["mine"] == 4000
    # a student's session holds no secret: reveal, move and the CSV do nothing
    students[1].predict("en", api_name="/class_reveal")
    students[1].predict("?lesson=kv-cache&step=3", "en", api_name="/class_move")
    assert not isinstance(students[1].predict("en", api_name="/class_csv"), str)   # no file
    view = ROOMS.student_view(code, _token_of(code, 0))
    assert not view["revealed"] and view["link"] == STEP and view["moves"] == 1
    teacher.predict("en", api_name="/class_reveal")
    path = _file(teacher.predict("en", api_name="/class_csv"))
    rows = list(csv.reader(open(path, encoding="utf-8")))
    assert rows[0] == ["question", "link", "transfer_of", "round 1", "round 2", "measured",
                       "time", "nickname"]
    assert sorted(r[3] for r in rows[1:]) == ["4000", "4500", "5000"]
    assert {r[7] for r in rows[1:]} == {"s0", "s1", "s2"}
    assert ROOMS.student_view(code, _token_of(code, 0))["revealed"]


def _file(value):
    """The local path of a file output (gradio_client downloads it), however it is wrapped."""
    while isinstance(value, dict):
        value = value.get("value") or value.get("path")
    assert isinstance(value, str), value
    return value


def _token_of(code, index):
    with ROOMS._lock:
        return list(ROOMS._rooms[code].members)[index]


@pytest.mark.parametrize("code, nickname, message", [
    ("NOPE", "", "not a class code"),
    ("ZZZZZZ", "", "not on this server any more"),
    (None, "", "not a class code"),
])
def test_join_refuses_bad_codes_in_words(class_url, code, nickname, message):
    from gradio_client.exceptions import AppError
    with pytest.raises(AppError, match=message):
        client(class_url).predict(code, nickname, "en", api_name="/class_join")


def test_bad_nicknames_links_and_answers_are_refused(class_url):
    from gradio_client.exceptions import AppError
    teacher, code = start(class_url)
    with pytest.raises(AppError, match="at most 24 characters"):
        client(class_url).predict(code, "x" * 60, "en", api_name="/class_join")
    for bad in ("?lesson=kv-cache&step=99", "?view=../../etc", "?view=rope.scale&factor=1e999", "plain"):
        with pytest.raises(AppError, match="lesson step or a section"):
            teacher.predict(bad, "en", api_name="/class_move")
    teacher.predict(STEP, "en", api_name="/class_move")
    s = client(class_url)
    s.predict(code, "", "en", api_name="/class_join")
    for bad, message in (("abc", "number"), (-5, "between"), (10 ** 12, "between")):
        with pytest.raises(AppError, match=message):
            s.predict(STEP, bad, "en", api_name="/class_answer")
    with pytest.raises(AppError, match="current prediction step"):
        s.predict("?lesson=kv-cache&step=3", 1, "en", api_name="/class_answer")


def test_a_stranger_session_gets_nothing_from_the_poll(class_url):
    out = outputs_of(client(class_url).predict("en", api_name="/class_poll"))
    assert not any(isinstance(o, str) and o for o in out), out


def request(query):
    return SimpleNamespace(query_params=query, headers={"host": "class.example:7860"},
                           client=SimpleNamespace(host="10.1.2.3"))


def test_the_teacher_link_is_checked_on_load_and_the_key_never_reaches_a_student():
    code, secret = ROOMS.create("loader")
    wrong = classroom.on_load(None, "zh", request=request({"room": code, "key": secret[:-2] + "xx"}))
    assert wrong[0] is None and "教师链接" in wrong[4]
    right = classroom.on_load(None, "en", request=request({"room": code, "key": secret}))
    assert right[0]["role"] == "teacher" and secret not in repr(right[1])   # no lasting storage
    command = json.loads(right[5])
    assert command["address"] is True       # the page drops the key from its address
    assert command["teacher"] == secret     # ... and keeps it for the tab (sessionStorage)
    assert "http://class.example:7860/?room=" + code in right[6]
    # a student's link: the code is filled in and the Class tab opened; nothing secret in it
    student = classroom.on_load(None, "en", request=request({"room": code}))
    assert student[3] == code and secret not in repr(student)
    gone = classroom.on_load(None, "en", request=request({"room": "ZZZZZZ"}))
    assert "not on this server any more" in gone[4]
    # a reload of a joined student: the same member from the browser's storage
    _, token = ROOMS.join(code, "Ada", session=fresh())
    again = classroom.on_load({"code": code, "token": token}, "en", request=request({"room": code}))
    assert again[0]["token"] == token and again[0]["role"] == "student"


def test_the_revision_route_answers_a_counter_and_nothing_else(class_url):
    import httpx
    teacher, code = start(class_url)
    first = httpx.get(f"{class_url}class/revision?room={code}")
    assert first.status_code == 200 and first.text.isdigit()
    assert first.headers["cache-control"] == "no-store"
    s = client(class_url)
    s.predict(code, "Ada", "en", api_name="/class_join")
    teacher.predict(STEP, "en", api_name="/class_move")
    second = httpx.get(f"{class_url}class/revision?room={code}")
    assert int(second.text) > int(first.text) and "Ada" not in second.text
    assert httpx.get(f"{class_url}class/revision?room=ZZZZZZ").status_code == 404
    for bad in ("room=abc", "room=" + code + "&x=1", "room=" + "A" * 5000, ""):
        assert httpx.get(f"{class_url}class/revision?{bad}").status_code == 400
    assert httpx.post(f"{class_url}class/revision?room={code}").status_code == 405


def test_the_revision_long_poll_answers_when_the_teacher_moves(class_url):
    """since=N waits while the revision is N and answers within a tick of the change; a poll
    whose N is already stale answers at once; a bad `since` is refused."""
    import threading

    import httpx
    teacher, code = start(class_url)
    now = httpx.get(f"{class_url}class/revision?room={code}").text
    started = time.perf_counter()
    stale = httpx.get(f"{class_url}class/revision?room={code}&since={int(now) + 5}")
    assert stale.text == now and time.perf_counter() - started < 5
    answered = {}

    def wait():
        began = time.perf_counter()
        answer = httpx.get(f"{class_url}class/revision?room={code}&since={now}", timeout=60)
        answered.update(text=answer.text, seconds=time.perf_counter() - began, at=time.perf_counter())

    poll = threading.Thread(target=wait)
    poll.start()
    time.sleep(1.0)
    assert poll.is_alive(), "the long poll answered before anything changed"
    moved = time.perf_counter()
    teacher.predict(STEP, "en", api_name="/class_move")
    poll.join(timeout=30)
    assert int(answered["text"]) > int(now) and answered["seconds"] >= 1.0
    # the join's own call returns after the change: the poll answered within a few ticks of it
    assert answered["at"] - moved < 10
    for bad in (f"room={code}&since=x", f"room={code}&since=", f"room={code}&since=1&since=2"):
        assert httpx.get(f"{class_url}class/revision?{bad}").status_code == 400


def test_a_teachers_copy_link_moves_the_class_and_a_students_does_not(full_page, runtime):
    views = full_page.views
    view = views.get("rope.scale")
    code, secret = ROOMS.create("copier")
    teacher = {"role": "teacher", "code": code, "secret": secret}
    _, token = ROOMS.join(code, session=fresh())
    student = {"role": "student", "code": code, "token": token}
    copied = classroom._copied(view, views, runtime)
    values = [c.default for c in view.controls]
    copied(student, "en", runtime.default_name, "en", *values)
    assert ROOMS.student_view(code, token)["moves"] == 0
    copied(teacher, "en", runtime.default_name, "en", *values)
    seen = ROOMS.student_view(code, token)
    assert seen["moves"] == 1 and seen["link"].startswith("?view=rope.scale")


def test_the_class_bar_follows_the_language_switch():
    """The bar's line is drawn again in the new language from the room as it stands; a page
    in no class, or of a room that is gone, is told so or left alone."""
    code, secret = ROOMS.create("relabel")
    _, token = ROOMS.join(code, "Ada", session=fresh())
    student = {"role": "student", "code": code, "token": token}
    en = classroom.relabel(student, True, "en")
    zh = classroom.relabel(student, True, "zh")
    assert len(en) == len(zh) == classroom.N_BAR + 1     # the bar's values and the roster
    assert en[1] == classroom.bar_text(classroom._view(student, ROOMS), {**student, "following": True}, "en")
    assert re.search(r"[\u4e00-\u9fff]", zh[1]) and not re.search(r"[\u4e00-\u9fff]", en[1])
    assert classroom.relabel(None, True, "zh") == [classroom.gr.skip()] * (classroom.N_BAR + 1)
    gone = classroom.relabel({"role": "student", "code": "ZZZZZZ", "token": token}, True, "zh")
    assert re.search(r"[\u4e00-\u9fff]", gone[1])


def test_the_follow_bench_speaks_the_pages_protocol(class_url):
    """bench/class_follow.py's students call the raw routes as the page does; when an input is
    added to the poll (as `follow` was), the bench must change with it or it measures nothing."""
    import asyncio

    import httpx

    from bench.class_follow import Student

    teacher, code = start(class_url)

    async def one_student():
        async with httpx.AsyncClient(timeout=30) as http:
            student = Student(http, class_url, 0)
            await student.join(code)
            stop = asyncio.Event()
            task = asyncio.create_task(student.poll_forever(code, 0.2, stop))
            await asyncio.sleep(0.5)
            await asyncio.to_thread(teacher.predict, STEP, "en", api_name="/class_move")
            for _ in range(100):
                if STEP in student.seen:
                    break
                await asyncio.sleep(0.1)
            stop.set()
            await task
            await student.answer(4000)
            return student

    student = run_coroutine(one_student(), timeout=60)
    assert student.errors == 0 and STEP in student.seen
