"""What a page has drawn of a stream, over plain HTTP: the reports that pace it
(explorer/serving/pacing.py).

    POST /drawn?run=TOKEN&seq=7     ->  204, always (an unknown or ended run is ignored: the
                                        answer says nothing of which runs exist)

A page whose script reports sets the cookie PACED_COOKIE=1, so that its runs wait for its
reports from the first message on (pacing.py). A paced stream's status line carries its mark,
`mark_html(pace, seq)`: a hidden span whose title is "TOKEN.SEQ" (a class and a title are what
Gradio's Markdown sanitizer keeps). The page's
script (static/pace.js) reports each mark it sees drawn, from a task queued behind everything
the page was already given to draw, so the report means "drawn, and nothing left behind it".
The token is a secret of the run's own page (128 random bits): another visitor can neither
guess it nor learn anything from the answer, and a report only lets the stream send its next
message sooner. Each report is one dictionary read and a counter under a lock, answered without
Gradio's request handling, with no body read and nothing kept per client.
"""
from __future__ import annotations

import re
from typing import Any

from explorer.serving.pacing import PACES, Pace, Paces
from explorer.web.asgi import answer, at_route

DRAWN_ROUTE = "/drawn"
PACED_COOKIE = "explorer_paced"   # "1": this browser's pages run static/pace.js (they report)
QUERY = re.compile(r"run=([A-Za-z0-9_-]{22})&seq=(\d{1,9})")
MAX_QUERY = 64


def mark_html(pace: Pace, seq: int) -> str:
    """The status line's hidden mark of message `seq` (the token is URL-safe base64: no quote,
    no angle bracket)."""
    return f'<span class="pace" title="{pace.token}.{seq}" hidden></span>'


class DrawnRoute:
    """ASGI middleware: POST DRAWN_ROUTE?run=TOKEN&seq=N marks message N of that run drawn
    (204); any other method 405; every other request goes to the app."""

    def __init__(self, app: Any, paces: Paces = PACES):
        self.app, self.paces = app, paces

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if not at_route(scope, DRAWN_ROUTE):
            await self.app(scope, receive, send)
            return
        status = 405
        if scope.get("method") == "POST":
            query = scope.get("query_string", b"")[:MAX_QUERY + 1].decode("latin-1")
            match = QUERY.fullmatch(query) if len(query) <= MAX_QUERY else None
            status = 400 if match is None else 204
            if match is not None:
                self.paces.mark(match.group(1), int(match.group(2)))
        await answer(send, status, b"", [(b"cache-control", b"no-store")])


def middleware() -> list:
    """FastAPI's `middleware` entries serving DRAWN_ROUTE (for launch()'s `app_kwargs`)."""
    from starlette.middleware import Middleware
    return [Middleware(DrawnRoute)]
