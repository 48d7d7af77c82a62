"""The revision route tells a page of the room the room's move counter (header X-Class-Moves),
which a following page's script reads to stop its own runs the moment the teacher moves on
(static/classroom.js): a move bumps it, a reveal does not, a request without a member token
(or with a token that is not the room's) never gets it."""
from __future__ import annotations

import asyncio

from explorer.classroom.rooms import Rooms
from explorer.web.class_route import RevisionRoute


async def _app(scope, receive, send):      # the rest of the app: never reached here
    raise AssertionError(scope)


def _get(route: RevisionRoute, query: str) -> tuple[int, dict, bytes]:
    sent = []

    async def send(message):
        sent.append(message)

    scope = {"type": "http", "method": "GET", "path": "/class/revision", "root_path": "",
             "query_string": query.encode(), "headers": [], "client": ("10.0.0.9", 5000)}
    asyncio.run(route(scope, None, send))
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
