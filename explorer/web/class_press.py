"""The teacher's Next and Back over plain HTTP, sent by the teacher page's script at the press.

    POST /class/press   {"room": "ABC234", "key": SECRET, "at": "?lesson=kv-cache&step=2", "step": 1}
        ->  204   the class follows the step after (step -1: before) `at`
        ->  409   the class is not at `at` (it already moved, or follows a section's link):
                  nothing changed
        ->  403   refused: no such room, not its teacher's key, or no lesson step there (one
                  answer for all: a client without the key learns nothing, not even whether
                  the room exists)
        ->  429   this address was refused a key too often this minute (below)
        ->  400   not such a body; 413 a body over MAX_BODY; 405 any other method

Why a route of its own: Gradio's page sends a press to the server only once it has dispatched
it, and a teacher's page that has just drawn the end of its own run dispatches that run's
listeners first (a profile of the teacher's page: 91-439 ms from the click to the request;
docs/BENCHMARKS.md, "A teacher's move against busy pages", measures press to the store's move).
The page's script (static/classroom.js) sends this at the click instead; Gradio's own
listener of the same press (explorer/ui/page/classroom.py, early_move) publishes the same step
after it, and the store counts one move for the same link. The store moves the class only from
`at`, so a press that arrives after a later one cannot take the class back.

The key is the room's teacher secret, which the teacher's tab keeps (sessionStorage) and sends
in the body, never in an address. Before the key is checked the route does no more than read
at most MAX_BODY bytes, parse them and match four fields; the store then checks the key
(Rooms.check_press: a refused key counts against the client's address as a code that does not
exist does, MISSES_PER_ADDRESS a minute, then 429 for the minute), a dictionary read under its
lock, as the revision route's. Only past the key does the page's handler read the link: the
teacher's own move (the work of Gradio's /class_move), on a worker thread.

The page registers the handler (`handle`): this layer knows no page.
"""
from __future__ import annotations

import json
import logging
import re
from typing import Any, Callable, Optional

import anyio

from explorer.classroom.rooms import ROOMS, Rooms
from explorer.inputs import InputError
from explorer.web.asgi import answer, at_route
from explorer.web.class_route import client_address

PRESS_ROUTE = "/class/press"
MAX_LINK = 8192 + 200            # a step link of a teacher's own lesson (views.MAX_QUERY_CHARS)
MAX_BODY = MAX_LINK + 512
CODE = re.compile(r"[A-Z2-9]{6}")
KEY = re.compile(r"[A-Za-z0-9_-]{16,64}")
LINK = re.compile(r"\?[!#-\[\]-~]{1,%d}" % (MAX_LINK - 1))   # printable ASCII, no space, quote, backslash

Handler = Callable[[str, str, str, int], bool]   # (room, key, at, step) -> moved; InputError: refused
_HANDLER: list[Handler] = []
log = logging.getLogger(__name__)


def handle(handler: Handler) -> None:
    """The page's move for a press (explorer/ui/page/class_teacher.py, press_move)."""
    _HANDLER[:] = [handler]


def read_press(body: bytes) -> Optional[tuple[str, str, str, int]]:
    """(room, key, at, step) of a well-formed body, else None."""
    try:
        press = json.loads(body)
    except (ValueError, UnicodeDecodeError):
        return None
    if not isinstance(press, dict) or set(press) != {"room", "key", "at", "step"}:
        return None
    room, key, at, step = press["room"], press["key"], press["at"], press["step"]
    if not (isinstance(room, str) and CODE.fullmatch(room) and isinstance(key, str)
            and KEY.fullmatch(key) and isinstance(at, str) and LINK.fullmatch(at)
            and type(step) is int and step in (-1, 1)):
        return None
    return room, key, at, step


async def _body(receive: Any) -> Optional[bytes]:
    """The request's body, None past MAX_BODY (the rest is not read)."""
    body = b""
    while True:
        message = await receive()
        if message.get("type") != "http.request":
            return None
        body += message.get("body", b"")
        if len(body) > MAX_BODY:
            return None
        if not message.get("more_body"):
            return body


class PressRoute:
    """ASGI middleware: POST PRESS_ROUTE (see the module); every other request goes to the app."""

    def __init__(self, app: Any, rooms: Rooms = ROOMS):
        self.app, self.rooms = app, rooms

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if not at_route(scope, PRESS_ROUTE):
            await self.app(scope, receive, send)
            return
        status = 405
        if scope.get("method") == "POST":
            body = await _body(receive)
            press = read_press(body) if body is not None else None
            status = 413 if body is None else 400 if press is None else await self._press(scope, press)
        await answer(send, status, b"", [(b"cache-control", b"no-store")])

    async def _press(self, scope: dict, press: tuple[str, str, str, int]) -> int:
        try:
            self.rooms.check_press(press[0], press[1], client_address(scope))
        except InputError as refused:
            return 429 if refused.key == "classroom.err.probes" else 403
        if not _HANDLER:
            return 403
        try:
            moved = await anyio.to_thread.run_sync(_HANDLER[0], *press)
        except InputError:
            return 403
        except Exception:   # the page's handler failed: the press's Gradio listener still runs
            log.exception("a teacher's press was not published here")
            return 500
        return 204 if moved else 409


def middleware() -> list:
    """FastAPI's `middleware` entries serving PRESS_ROUTE (for launch()'s `app_kwargs`)."""
    from starlette.middleware import Middleware
    return [Middleware(PressRoute)]
