"""A stream paced by what its page has drawn (explorer/serving/pacing.py): a decode step waits
for the page's report of the last message, a client that never reports is never waited for,
the end goes out at once, and the route takes reports without saying which runs exist."""
from __future__ import annotations

import threading
import time

from explorer.serving import transport
from explorer.serving.pacing import Paces
from explorer.web.drawn_route import DrawnRoute, mark_html
from tests.helpers import call_route, decoding_snapshot


def _ended(index: int):
    snap = decoding_snapshot(index)
    snap.phase = "done"
    return snap


def _steps(n: int, step_s: float, end: bool = True):
    """A worker that decodes n steps, one every step_s, then ends."""
    def make(should_stop):
        for i in range(n):
            if should_stop():
                return
            time.sleep(step_s)
            yield decoding_snapshot(i)
        if end:
            yield _ended(n)
    return make


def test_a_page_that_reports_gets_the_next_step_only_after_drawing_the_last():
    paces = Paces()
    pace = paces.open()
    stream = transport.in_background(_steps(60, 0.005), pace=pace)
    first = next(stream)
    assert pace.sent == 1 and first.index == 0
    pace.mark(1)                                    # the page drew message 1: it reports
    second = next(stream)
    assert pace.sent == 2
    # message 2 not drawn: the next decode step waits (up to MAX_WAIT_S), merging what the
    # worker decodes meanwhile into one fresher snapshot
    got = {}

    def take():
        got["snap"] = next(stream)
        got["at"] = time.monotonic()

    taker = threading.Thread(target=take)
    taker.start()
    time.sleep(0.25)
    assert "snap" not in got, "a decode step went out before the page drew the last message"
    marked = time.monotonic()
    pace.mark(2)
    taker.join(5)
    assert got["at"] - marked < 0.2
    assert got["snap"].index > second.index + 1, "the steps decoded while waiting were not merged"
    list(stream)
    assert len(paces) == 0, "the stream's pace outlives it"


def test_a_client_that_never_reports_is_never_waited_for():
    paces = Paces()
    pace = paces.open()
    start = time.monotonic()
    delivered = list(transport.in_background(_steps(40, 0.01), pace=pace))
    assert time.monotonic() - start < 2.0
    assert delivered[-1].phase == "done" and pace.sent == len(delivered) and not pace.heard


def test_the_end_of_decoding_goes_out_while_the_page_is_behind():
    paces = Paces()
    pace = paces.open()
    stream = transport.in_background(_steps(3, 0.05), pace=pace)
    next(stream)
    pace.mark(1)
    start = time.monotonic()
    rest = list(stream)          # the page never reports message 2: only the end may pass
    assert rest[-1].phase == "done"
    assert time.monotonic() - start < 1.5   # not MAX_WAIT_S per message


def test_a_page_that_stops_reporting_still_gets_a_message_every_max_wait():
    paces = Paces()
    pace = paces.open()
    pace.next_message()
    pace.mark(1)
    pace.next_message()          # message 2 sent, never reported
    waited = pace.wait_drawn(threading.Event(), max_wait_s=0.3)
    assert 0.25 <= waited < 1.0 and pace.timeouts == 1


def test_reports_never_count_a_message_not_sent_and_a_full_registry_forgets_the_oldest():
    paces = Paces(capacity=2)
    old, mid = paces.open(), paces.open()
    old.next_message()
    paces.mark(old.token, 5)                     # not sent yet: ignored
    assert old.drawn == 0 and not old.heard
    paces.mark(old.token, 1)
    assert old.drawn == 1 and old.heard
    paces.open()                                 # the third: the oldest is forgotten
    assert len(paces) == 2 and not old.heard
    old.next_message()
    assert old.wait_drawn(threading.Event(), max_wait_s=1.0) < 0.1
    paces.mark(old.token, 2)
    assert old.drawn == 1                        # a forgotten run takes no report
    assert mid.token != old.token and len(mid.token) == 22


async def _app(scope, receive, send):      # the rest of the app: never reached here
    raise AssertionError(scope)


def _post(route: DrawnRoute, query: str, method: str = "POST") -> int:
    sent = call_route(route, method, "/drawn", query)
    assert sent[1]["body"] == b""
    return sent[0]["status"]


def test_the_route_takes_a_report_and_says_nothing_of_which_runs_exist():
    paces = Paces()
    pace = paces.open()
    pace.next_message()
    route = DrawnRoute(_app, paces=paces)
    assert _post(route, f"run={pace.token}&seq=1") == 204 and pace.drawn == 1
    assert _post(route, "run=" + "A" * 22 + "&seq=1") == 204          # no such run: the same
    for bad in ("", "run=short&seq=1", f"run={pace.token}&seq=-1", f"run={pace.token}&seq=1&x=1",
                f"run={pace.token}&seq=" + "9" * 10, "x" * 5000):
        assert _post(route, bad) == 400, bad
    assert _post(route, f"run={pace.token}&seq=1", method="GET") == 405


def test_the_mark_is_a_hidden_span_whose_title_is_token_and_number():
    pace = Paces().open()
    assert mark_html(pace, 7) == f'<span class="pace" title="{pace.token}.7" hidden></span>'
    assert all(c.isalnum() or c in "-_" for c in pace.token)


def test_a_page_that_said_it_reports_is_waited_for_from_its_first_message():
    paces = Paces()
    pace = paces.open(reports=True)
    stream = transport.in_background(_steps(200, 0.005), pace=pace)
    next(stream)
    got = {}
    taker = threading.Thread(target=lambda: got.setdefault("snap", next(stream)))
    taker.start()
    time.sleep(0.3)
    assert "snap" not in got, "the second message left before the page drew the first"
    pace.mark(1)
    taker.join(5)
    assert got["snap"].index > 1
    stream.close()


def test_a_page_that_said_it_reports_and_never_does_is_waited_for_twice_only():
    pace = Paces().open(reports=True)
    waits = []
    for _ in range(4):
        pace.next_message()
        waits.append(pace.wait_drawn(threading.Event(), max_wait_s=0.2))
    assert all(w >= 0.15 for w in waits[:2]) and all(w < 0.05 for w in waits[2:]), waits
    assert pace.timeouts == 2 and not pace.heard


def test_the_paced_cookie_is_read_from_the_events_request():
    from types import SimpleNamespace

    from gradio.context import LocalContext
    from explorer.web.gradio_context import event_cookie

    assert event_cookie("explorer_paced") is None            # outside an event
    request = SimpleNamespace(headers={"cookie": "a=b; explorer_paced=1; explorer_room=ABCDEF"})
    token = LocalContext.request.set(request)
    try:
        assert event_cookie("explorer_paced") == "1" and event_cookie("explorer_room") == "ABCDEF"
        assert event_cookie("explorer") is None
    finally:
        LocalContext.request.reset(token)


def test_one_cookie_reader_for_the_pacing_cookie_and_the_room_link():
    """explorer/web/asgi.cookie_value: the last pair of the name, split on ";" alone (HAProxy's
    reading), which the replica's room (replica.request_room) and event_cookie both use."""
    from explorer.web.asgi import cookie_value
    from explorer.web.replica import request_room

    assert cookie_value("a=b; explorer_paced=1", "explorer_paced") == "1"
    assert cookie_value('x="odd; explorer_room=ABCDEF; explorer_room=GHJKMN', "explorer_room") == "GHJKMN"
    assert cookie_value("explorer_roomy=1", "explorer_room") is None and cookie_value("", "a") is None
    headers = [(b"cookie", b"explorer_room=ABCDEF"), (b"cookie", b"other=1; explorer_room=GHJKMN")]
    assert request_room({"headers": headers}) == "GHJKMN"
    assert request_room({"headers": [(b"cookie", b"explorer_room=ABCDEF; explorer_room=")]}) == ""
    assert request_room({"query_string": b"room=mnpqrs", "headers": headers}) == "MNPQRS"
