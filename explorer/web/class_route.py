"""The room's revision over plain HTTP: what a class page asks to learn that the teacher moved.

    GET /class/revision?room=CODE             ->  200 "17" | 404 (no such room here) | 400 (no code)
                                                  | 429 (this address asked for too many codes
                                                  that do not exist: codes are not guessed here)
    GET /class/revision?room=CODE&member=TOKEN&since=17
                                              ->  the same, once the revision is not 17 any more
                                                  (a long poll: at most WAIT_S, then "17")

`member` is the page's member token (a student's; the teacher page's watch token, which also
reads the answers and joins only the teacher's page shows): a request that holds one of the
room's is never throttled (a class behind one school address), marks its member seen (so the
member keeps counting toward the room, and the room does not expire while a page is open), and
a token that is not the room's answers 404 (a removed member's page then learns it). Without a
token, every code that does not exist counts against the client's address (the store's
MISSES_PER_ADDRESS a minute, shared with joins by code), past which the address's token-less
requests answer 429 for the rest of the minute: before, 868 codes a second could be tried.

A long poll answers as soon as the room's revision changes (the store tells the route of every
change, `Rooms.listen`, and the route wakes the polls waiting on that room), so a following
page learns of the teacher's move at once instead of at its next timer tick; a waiting poll
costs no thread (a coroutine, which also reads the counter every CHECK_S), and at most
MAX_WAITING wait at once (past it a poll answers at once, as without `since`).

To a request with a member token (a page of the room, the answer being 200), a header
`X-Class-Moves: 5` adds the room's move counter (the teacher went to another step or link; a
reveal or a join leaves it): a following page's script learns from a new one that the class
moved, before any Gradio event (static/classroom.js). To a member of the room (its token
checked), a header `X-Class-Link: ?lesson=kv-cache&step=3` adds the link the class follows
(the teacher's, the same for every member; never a member's or an answer): a following page
applies the move from it at once (one Gradio event, classroom.py's apply_move) instead of asking
its Gradio poll first. A token-less request gets the revision only.

Counters and the teacher's link, nothing else (no member or answer), read under the store's lock (its
expiry sweep looks at MAX_ROOMS rooms at most) without Gradio's request handling: forty pages
asking it every second cost a fraction of what forty of Gradio's event calls would
(docs/SCALING.md, "A live class"); a page calls its Gradio poll (explorer/ui/page/classroom.py) only
when the number changed.
"""
from __future__ import annotations

import asyncio
import re
import time
from typing import Any

from explorer.classroom.rooms import ROOMS, Rooms
from explorer.inputs import InputError
from explorer.web.asgi import answer, at_route

REVISION_ROUTE = "/class/revision"
WAIT_S = 20.0        # a long poll answers at the latest after this; the page then asks again
CHECK_S = 0.5        # how often a waiting poll reads the room's revision unwoken
MAX_WAITING = 1024   # long polls held at once (100 rooms of 60 members would want 6,000)
QUERY = re.compile(r"room=([A-Z2-9]{6})(?:&member=([A-Za-z0-9_-]{16,64}))?(?:&since=(\d{1,12}))?")
MAX_QUERY = 128
MOVES_HEADER = b"x-class-moves"
LINK_HEADER = b"x-class-link"
LINK = re.compile(r"\?[!#-\[\]-~]{1,8191}")   # printable ASCII without space, quote or backslash


class RevisionRoute:
    """ASGI middleware: GET REVISION_ROUTE?room=CODE answers the room's revision (text), 404 for
    a room this server does not hold, 400 for a malformed code; every other request goes to the
    app. Bounded work under the store's lock: nothing but a counter, nothing of any member."""

    def __init__(self, app: Any, rooms: Rooms = ROOMS, wait_s: float = WAIT_S):
        self.app, self.rooms, self.wait_s = app, rooms, wait_s
        self.waiting = 0     # long polls now held (one event loop: no lock needed)
        self._loop: Any = None              # the event loop the polls wait on
        self._changes: dict[str, asyncio.Event] = {}   # room -> its next change (set once)
        self._held: dict[str, int] = {}                # room -> polls waiting on it
        rooms.listen(self)

    def room_changed(self, code: str) -> None:
        """The store's call, from any thread, under its lock: wake the polls waiting on `code`."""
        loop = self._loop
        if loop is not None and code in self._held:
            try:
                loop.call_soon_threadsafe(self._wake, code)
            except RuntimeError:   # the loop is closed: no poll waits on it
                pass

    def _wake(self, code: str) -> None:
        change = self._changes.pop(code, None)
        if change is not None:
            change.set()

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if not at_route(scope, REVISION_ROUTE):
            await self.app(scope, receive, send)
            return
        status, body, headers = 405, b"", [(b"content-type", b"text/plain; charset=utf-8"),
                                           (b"cache-control", b"no-store")]
        if scope.get("method") == "GET":
            query = scope.get("query_string", b"")[:MAX_QUERY].decode("latin-1")
            match = QUERY.fullmatch(query)
            status, body = (400, b"") if not match else await self._revision(scope, *match.groups())
            if status == 200 and match.group(2):
                headers += self._move_headers(match.group(1), match.group(2))
        await answer(send, status, body, headers)

    def _move_headers(self, code: str, member: str) -> list:
        """X-Class-Moves for a request with a member token; X-Class-Link too when the token is
        one of the room's and the link is plain ASCII (a header's bytes; the page then reads
        its move from the Gradio poll instead)."""
        move = self.rooms.move_of(code, member)
        moves = self.rooms.moves(code) if move is None else move[0]
        headers = [] if moves is None else [(MOVES_HEADER, str(moves).encode())]
        if move is not None and LINK.fullmatch(move[1]):
            headers.append((LINK_HEADER, move[1].encode()))
        return headers

    async def _revision(self, scope: dict, code: str, member: Any, since: Any) -> tuple[int, bytes]:
        try:
            revision = self.rooms.revision(code, member, _address(scope))
        except InputError:                      # too many codes that do not exist
            return 429, b""
        if since is not None and revision is not None:
            revision = await self._changed(code, member, int(since), revision)
        return (404, b"") if revision is None else (200, str(revision).encode())

    async def _changed(self, code: str, member: Any, since: int, revision: int) -> Any:
        """The room's revision once it is not `since` (or the room is gone: None), or after
        wait_s; at once when MAX_WAITING polls are already held."""
        if revision != since or self.waiting >= MAX_WAITING:
            return revision
        self.waiting += 1
        self._loop = asyncio.get_running_loop()
        self._held[code] = self._held.get(code, 0) + 1
        try:
            deadline = time.monotonic() + self.wait_s
            while revision == since and time.monotonic() < deadline:
                change = self._changes.setdefault(code, asyncio.Event())
                try:
                    await asyncio.wait_for(change.wait(), min(CHECK_S, max(0.0, deadline - time.monotonic())))
                except asyncio.TimeoutError:
                    pass
                revision = self.rooms.revision(code, member)
            return revision
        finally:
            self.waiting -= 1
            self._held[code] -= 1
            if not self._held[code]:
                del self._held[code]
                self._changes.pop(code, None)


def _address(scope: dict) -> Any:
    """The client's address as every other bound reads it (EXPLORER_TRUST_PROXY)."""
    from starlette.requests import Request

    from explorer.web.gradio_context import request_address
    return request_address(Request(scope)) or ""


def middleware() -> list:
    """FastAPI's `middleware` entries serving REVISION_ROUTE (for launch()'s `app_kwargs`)."""
    from starlette.middleware import Middleware
    return [Middleware(RevisionRoute)]
