"""The room's revision over plain HTTP: what a class page's timer asks every second.

    GET /class/revision?room=CODE   ->  200 "17" | 404 (no such room here) | 400 (no code)

A counter and nothing else (no member, answer or link), read under the store's lock (its
expiry sweep looks at MAX_ROOMS rooms at most) without Gradio's request handling: forty pages
asking it every second cost a fraction of what forty of Gradio's event calls would
(docs/SCALING.md, "A live class"); a page calls its Gradio poll (explorer/ui/classroom.py) only
when the number changed.
"""
from __future__ import annotations

import re
from typing import Any

from explorer.classroom.rooms import ROOMS, Rooms

REVISION_ROUTE = "/class/revision"


class RevisionRoute:
    """ASGI middleware: GET REVISION_ROUTE?room=CODE answers the room's revision (text), 404 for
    a room this server does not hold, 400 for a malformed code; every other request goes to the
    app. Bounded work under the store's lock: nothing but a counter, nothing of any member."""

    def __init__(self, app: Any, rooms: Rooms = ROOMS):
        self.app, self.rooms = app, rooms

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        path = scope.get("path", "") if scope.get("type") == "http" else ""
        if path not in (REVISION_ROUTE, scope.get("root_path", "") + REVISION_ROUTE):
            await self.app(scope, receive, send)
            return
        status, body = 405, b""
        if scope.get("method") == "GET":
            query = scope.get("query_string", b"")[:64].decode("latin-1")
            match = re.fullmatch(r"room=([A-Z2-9]{6})", query)
            revision = self.rooms.revision(match.group(1)) if match else None
            status, body = (400, b"") if not match else (404, b"") if revision is None \
                else (200, str(revision).encode())
        await send({"type": "http.response.start", "status": status,
                    "headers": [(b"content-type", b"text/plain; charset=utf-8"),
                                (b"cache-control", b"no-store"),
                                (b"content-length", str(len(body)).encode())]})
        await send({"type": "http.response.body", "body": body})


def middleware() -> list:
    """FastAPI's `middleware` entries serving REVISION_ROUTE (for launch()'s `app_kwargs`)."""
    from starlette.middleware import Middleware
    return [Middleware(RevisionRoute)]
