"""The room's revision over plain HTTP: what a class page asks to learn that the teacher moved.

    GET /class/revision?room=CODE             ->  200 "17" | 404 (no such room here) | 400 (no code)
    GET /class/revision?room=CODE&since=17    ->  the same, once the revision is not 17 any more
                                                  (a long poll: at most WAIT_S, then "17")

A long poll answers within CHECK_S of the teacher's move, so a following page learns of it at
once instead of at its next timer tick; a waiting poll costs no thread (a coroutine that looks
at the counter every CHECK_S), and at most MAX_WAITING wait at once (past it a poll answers at
once, as without `since`).

A counter and nothing else (no member, answer or link), read under the store's lock (its
expiry sweep looks at MAX_ROOMS rooms at most) without Gradio's request handling: forty pages
asking it every second cost a fraction of what forty of Gradio's event calls would
(docs/SCALING.md, "A live class"); a page calls its Gradio poll (explorer/ui/classroom.py) only
when the number changed.
"""
from __future__ import annotations

import asyncio
import re
import time
from typing import Any

from explorer.classroom.rooms import ROOMS, Rooms
from explorer.ui.asgi import answer, at_route

REVISION_ROUTE = "/class/revision"
WAIT_S = 20.0        # a long poll answers at the latest after this; the page then asks again
CHECK_S = 0.1        # how often a waiting poll reads the room's revision
MAX_WAITING = 1024   # long polls held at once (100 rooms of 60 members would want 6,000)
QUERY = re.compile(r"room=([A-Z2-9]{6})(?:&since=(\d{1,12}))?")


class RevisionRoute:
    """ASGI middleware: GET REVISION_ROUTE?room=CODE answers the room's revision (text), 404 for
    a room this server does not hold, 400 for a malformed code; every other request goes to the
    app. Bounded work under the store's lock: nothing but a counter, nothing of any member."""

    def __init__(self, app: Any, rooms: Rooms = ROOMS, wait_s: float = WAIT_S):
        self.app, self.rooms, self.wait_s = app, rooms, wait_s
        self.waiting = 0     # long polls now held (one event loop: no lock needed)

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if not at_route(scope, REVISION_ROUTE):
            await self.app(scope, receive, send)
            return
        status, body = 405, b""
        if scope.get("method") == "GET":
            query = scope.get("query_string", b"")[:64].decode("latin-1")
            match = QUERY.fullmatch(query)
            revision = self.rooms.revision(match.group(1)) if match else None
            if match and match.group(2) is not None and revision is not None:
                revision = await self._changed(match.group(1), int(match.group(2)), revision)
            status, body = (400, b"") if not match else (404, b"") if revision is None \
                else (200, str(revision).encode())
        await answer(send, status, body, [(b"content-type", b"text/plain; charset=utf-8"),
                                          (b"cache-control", b"no-store")])

    async def _changed(self, code: str, since: int, revision: int) -> Any:
        """The room's revision once it is not `since` (or the room is gone: None), or after
        wait_s; at once when MAX_WAITING polls are already held."""
        if revision != since or self.waiting >= MAX_WAITING:
            return revision
        self.waiting += 1
        try:
            deadline = time.monotonic() + self.wait_s
            while revision == since and time.monotonic() < deadline:
                await asyncio.sleep(CHECK_S)
                revision = self.rooms.revision(code)
            return revision
        finally:
            self.waiting -= 1


def middleware() -> list:
    """FastAPI's `middleware` entries serving REVISION_ROUTE (for launch()'s `app_kwargs`)."""
    from starlette.middleware import Middleware
    return [Middleware(RevisionRoute)]
