"""What a load balancer in front of several replicas needs from each (deploy/haproxy.cfg,
docs/SCALING.md "Several replicas, one class"): which replica answered, and which rooms it holds.

- REPLICA_ROUTE answers the replica's name as JSON, so that an operator (and
  tests/server/test_replicas.py) sees which replica a request reached. The name is the operator's
  own
  label, read from EXPLORER_REPLICA at each request and checked against NAME (a label, never a
  path or a host name); without it, or with a name outside NAME, the route answers "".
- ROOM_HEADER: an answer to a request that names a room (the url parameter `room`, else the
  cookie `explorer_room`, the room link contract) carries `X-Explorer-Room: CODE` when this
  replica holds that room (explorer/classroom/rooms.py). A room is made on the replica the
  teacher's page happens to be on; the balancer learns from this header where each room lives
  and sends the room's later requests there.

Nothing of a visitor is in either (a room's code is told only to a request that already names
it). But ROOM_HEADER says whether a code exists, so it is sent only by a named replica (ENV set:
behind the balancer, deploy/replicas.py): on a single server or a Space it would be a way to
guess class codes around the revision route's limit (issue 41, docs/HARDENING.md); behind it,
deploy/haproxy.cfg deletes the header once its table has stored it.
Added through FastAPI's `middleware` argument (app.launch_options), like
explorer/web/closed_routes.py.
"""
from __future__ import annotations

import json
import os
import re
from typing import Any, Callable

from explorer.web.asgi import Scope, Send, answer, at_route, cookie_value

REPLICA_ROUTE = "/explorer/replica"
ENV = "EXPLORER_REPLICA"
NAME = re.compile(r"[A-Za-z0-9_-]{1,32}")
ROOM_HEADER = b"x-explorer-room"
ROOM_PARAMETER, ROOM_COOKIE = "room", "explorer_room"



def replica_name() -> str:
    """EXPLORER_REPLICA when it is a label of NAME, else ""."""
    name = os.environ.get(ENV, "").strip()
    return name if NAME.fullmatch(name) else ""


def request_room(scope: Scope) -> str:
    """The room code a request names (its url parameter, else its cookie), uppercase, or ""
    when it names none or something that is not a code."""
    from urllib.parse import parse_qs

    from explorer.classroom.rooms import CODE_PATTERN

    raw = scope.get("query_string", b"")
    query = raw.decode("latin-1") if b"room=" in raw else ""
    try:
        values = parse_qs(query, max_num_fields=64).get(ROOM_PARAMETER) if query else None
    except ValueError:   # past 64 fields: names no room (Gradio answers the request itself)
        values = None
    code = values[0] if values else ""
    if not code:
        # as HAProxy's req.cook reads it: the last `explorer_room=` pair of the Cookie headers
        # (a room left unmarked otherwise)
        for name, value in scope.get("headers") or ():
            if name == b"cookie" and ROOM_COOKIE.encode() in value:
                found = cookie_value(value.decode("latin-1"), ROOM_COOKIE)
                code = code if found is None else found
    code = code.strip().upper()
    return code if CODE_PATTERN.fullmatch(code) else ""


def holds_room(code: str) -> bool:
    """Whether this replica's room store has the room (explorer/classroom/rooms.py)."""
    from explorer.classroom.rooms import ROOMS

    return ROOMS.revision(code) is not None


class ReplicaRoute:
    """ASGI middleware: GET/HEAD of REPLICA_ROUTE (under the app's root path) answers
    {"replica": name}, never cached; every other request goes to the app, its answer marked
    with ROOM_HEADER when the request names a room this replica holds."""

    def __init__(self, app: Callable, holds: Callable[[str], bool] = holds_room):
        self.app, self.holds = app, holds

    async def __call__(self, scope: Scope, receive: Callable, send: Send) -> None:
        if scope.get("type") != "http":
            await self.app(scope, receive, send)
            return
        room = request_room(scope) if replica_name() else ""
        if room:
            send = self._marking(send, room)
        if not at_route(scope, REPLICA_ROUTE):
            await self.app(scope, receive, send)
            return
        if scope.get("method") not in ("GET", "HEAD"):
            await answer(send, 405, b"", [(b"allow", b"GET, HEAD")])
            return
        body = json.dumps({"replica": replica_name()}).encode()
        await answer(send, 200, b"" if scope["method"] == "HEAD" else body,
                      [(b"content-type", b"application/json"),
                       (b"cache-control", b"no-store")], length=len(body))

    def _marking(self, send: Send, room: str) -> Send:
        """`send` with ROOM_HEADER added to the answer's start when this replica holds `room`
        (asked then, so that the answer that made the room already carries it)."""
        async def marked(message: dict[str, Any]) -> None:
            if message.get("type") == "http.response.start" and self.holds(room):
                message = {**message, "headers": [*message.get("headers", ()),
                                                  (ROOM_HEADER, room.encode())]}
            await send(message)
        return marked


def middleware() -> list:
    """FastAPI's `middleware` entries serving REPLICA_ROUTE and marking a held room's answers
    (for launch()'s `app_kwargs`)."""
    from starlette.middleware import Middleware

    return [Middleware(ReplicaRoute)]
