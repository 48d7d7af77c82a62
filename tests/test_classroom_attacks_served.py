"""Issue 41's attacks on a served class (loopback only; every request loop bounded in count
and in time): what a hostile script can do through the HTTP routes a page uses."""
from __future__ import annotations

import time

import pytest

from explorer.classroom.rooms import ROOMS

STEP = "?lesson=kv-cache&step=2"
LOOP_S = 60.0          # no attack loop runs longer than this


@pytest.fixture(scope="module")
def class_url(serve):
    with serve(tabs=("explorer.ui.classroom",)) as served:
        yield served.url


def start(url):
    from gradio_client import Client
    teacher = Client(url, verbose=False)
    out = teacher.predict("en", api_name="/class_start")
    info = next(o for o in out if isinstance(o, str) and "Class code" in o)
    return teacher, info.split("`")[1]


def members(code):
    with ROOMS._lock:
        return len(ROOMS._rooms[code].members)


def test_a_served_class_survives_a_student_who_joins_1000_times(class_url):
    """POST /gradio_api/run/class_join 1,000 times from one page's session, then without any
    session: one member, the rest refused in words; a real student then joins. Before: a new
    member at every call until the room was full (60), then every student refused."""
    import httpx

    teacher, code = start(class_url)
    url = f"{class_url}gradio_api/run/class_join"
    outcomes: dict[str, int] = {}
    deadline = time.monotonic() + LOOP_S
    with httpx.Client(timeout=10) as http:
        for i in range(1000):
            if time.monotonic() > deadline:
                break
            body = {"data": [code[:3].lower() + "-" + code[3:], "bot", None, "en"]}
            if i < 500:
                body["session_hash"] = "one-hostile-page"
            answer = http.post(url, json=body)
            key = "ok" if answer.status_code == 200 else str(answer.json().get("error"))[:40]
            outcomes[key] = outcomes.get(key, 0) + 1
    assert sum(outcomes.values()) == 1000, outcomes
    assert members(code) == 1, outcomes
    assert not any("Traceback" in k for k in outcomes), outcomes
    from gradio_client import Client
    out = Client(class_url, verbose=False).predict(code, "Ada", "en", api_name="/class_join")
    assert any(isinstance(o, str) and code in o for o in out)
    assert members(code) == 2
