"""Which sessions a page holds open right now: the sessions with a heartbeat stream open.

An open page of the app (and a gradio_client Client) keeps one request open to Gradio's
`/gradio_api/heartbeat/<session>` for as long as it is open; Gradio ends that stream when the
page goes. This middleware counts the open streams of each session, so that the session gate
(explorer/web/admission.py `SessionGate.idle`) drops a session idle past its bound only when no
page holds it: a student reading a lesson for an hour keeps their runs, a closed page or an API
call's session is forgotten. The count lives only while a stream is open (an entry is removed
at zero), so it holds one entry per open connection at most.

Process-wide (`OPEN`): a process serves one app, and session hashes are random, so the
in-process servers of the tests never share one. Added through FastAPI's `middleware`
argument (app.launch_options), like explorer/web/body_limit.py.
"""
from __future__ import annotations

import collections
import threading
from typing import Any, Awaitable, Callable

from explorer.web.asgi import Scope, Send

HEARTBEAT = "/gradio_api/heartbeat/"


class OpenPages:
    """Open heartbeat streams per session."""

    def __init__(self) -> None:
        self._open: collections.Counter[str] = collections.Counter()
        self._lock = threading.Lock()

    def opened(self, session: str) -> None:
        with self._lock:
            self._open[session] += 1

    def closed(self, session: str) -> None:
        with self._lock:
            self._open[session] -= 1
            if self._open[session] <= 0:
                del self._open[session]

    def __contains__(self, session: object) -> bool:
        return session in self._open

    def __len__(self) -> int:
        return len(self._open)


OPEN = OpenPages()


def heartbeat_session(scope: Scope) -> str | None:
    """The session an HTTP request's heartbeat stream is for, or None for any other request."""
    if scope.get("type") != "http":
        return None
    path = scope.get("path", "")
    root = scope.get("root_path", "")
    if root and path.startswith(root + HEARTBEAT):
        path = path[len(root):]
    if not path.startswith(HEARTBEAT):
        return None
    session = path[len(HEARTBEAT):]
    return session if session and "/" not in session else None


class TrackHeartbeats:
    """ASGI middleware: a heartbeat request counts as an open page of its session until the
    request ends (the page left, or the server stops the stream)."""

    def __init__(self, app: Callable, pages: OpenPages = OPEN):
        self.app = app
        self.pages = pages

    async def __call__(self, scope: Scope, receive: Callable[[], Awaitable[Any]], send: Send) -> None:
        session = heartbeat_session(scope)
        if session is None:
            await self.app(scope, receive, send)
            return
        self.pages.opened(session)
        try:
            await self.app(scope, receive, send)
        finally:
            self.pages.closed(session)


def middleware() -> list:
    """FastAPI's `middleware` entry tracking open pages (for launch()'s `app_kwargs`)."""
    from starlette.middleware import Middleware

    return [Middleware(TrackHeartbeats)]
