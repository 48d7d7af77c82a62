"""The status of a handler's refusal on Gradio's direct route: 400 with its message, not 500.

An event with queue=False (Stop, a tab title, a link section's controls) is called by the page,
or by any client that reads the page's config, through `POST /gradio_api/run/<name>` with its
fn_index. Gradio answers every exception of the handler there with status 500 and
`{"error": message}`: a visitor's value refused in words (a choice outside the options, a text
a Slider cannot take) reads to a client, a proxy and a monitor as a server failure. Every
handler of the app goes through `explorer.ui.visitor_errors`, so what reaches that route is a
gr.Error with its message (an unexpected exception is logged with its traceback and answered
with the generic "inputs.internal" sentence); such an answer becomes 400, body unchanged. A 500
without a message (Gradio's own failure) stays 500. The page reads both alike: any status but
200 shows the message (Gradio's client, `submit`'s direct branch, which the app serves patched
to pass the answer's `visible` on: explorer/web/gradio_frontend.py).

Added through FastAPI's `middleware` argument (app.launch_options), like explorer/ui/body_limit.
"""
from __future__ import annotations

import json
import re
from typing import Any, Awaitable, Callable

DIRECT_ROUTE = re.compile(r"/gradio_api/(?:run|api)/[^/]+/?$")
MAX_HELD_BYTES = 64 * 1024   # an error body is a few hundred bytes; a longer one passes as is

Scope = dict[str, Any]
Receive = Callable[[], Awaitable[dict]]
Send = Callable[[dict], Awaitable[None]]


def has_message(body: bytes) -> bool:
    try:
        payload = json.loads(body)
    except ValueError:
        return False
    return isinstance(payload, dict) and isinstance(payload.get("error"), str) and bool(payload["error"].strip())


class DirectErrors:
    """ASGI middleware: a 500 with an error message on the direct route becomes 400."""

    def __init__(self, app: Callable):
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope.get("method") != "POST" or \
                not DIRECT_ROUTE.search(scope.get("path", "")):
            await self.app(scope, receive, send)
            return
        held: dict = {"start": None, "body": b""}

        async def send_checked(message: dict) -> None:
            if message["type"] == "http.response.start" and message.get("status") == 500:
                held["start"] = message
                return
            if held["start"] is None or message["type"] != "http.response.body":
                await send(message)
                return
            held["body"] += message.get("body", b"")
            if message.get("more_body", False) and len(held["body"]) <= MAX_HELD_BYTES:
                return
            start, held["start"] = held["start"], None
            if not message.get("more_body", False) and has_message(held["body"]):
                start = {**start, "status": 400}
            await send(start)
            await send({**message, "body": held["body"]})

        await self.app(scope, receive, send_checked)


def middleware() -> list:
    """FastAPI's `middleware` entry (for launch()'s `app_kwargs`)."""
    from starlette.middleware import Middleware

    return [Middleware(DirectErrors)]
