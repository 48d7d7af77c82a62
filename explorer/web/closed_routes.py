"""Routes of Gradio that the app does not use, answered 404 before Gradio sees the request.

`/gradio_api/deep_link` (Gradio's DeepLinkButton) copies a session's component values into
`<temp folder>/deep_links/<hash>/state.json` for every session that asks: ~0.26 s of CPU in the
event loop and a file of 0.3-5 MB each, never deleted (Gradio's `delete_cache` cleans only the
files components made, not that folder). No component of the app is a DeepLinkButton: the
app's own links are query parameters read by explorer/ui/page/views.py, which write nothing. So the
route is closed, and with it every file it would write.

Added through FastAPI's `middleware` argument (app.launch_options), like explorer/ui/body_limit.
"""
from __future__ import annotations

import json
from typing import Any, Awaitable, Callable

# Paths under any root path (a Space or a proxy may mount the app below one).
CLOSED_SUFFIXES = ("/gradio_api/deep_link",)

Scope = dict[str, Any]
Receive = Callable[[], Awaitable[dict]]
Send = Callable[[dict], Awaitable[None]]


def is_closed(path: str) -> bool:
    path = path.rstrip("/")
    return any(path == suffix or path.endswith(suffix) for suffix in CLOSED_SUFFIXES)


class ClosedRoutes:
    """ASGI middleware: HTTP requests to a closed route get 404 (see the module)."""

    def __init__(self, app: Callable):
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not is_closed(scope.get("path", "")):
            await self.app(scope, receive, send)
            return
        body = json.dumps({"detail": "Not Found"}).encode()
        await send({"type": "http.response.start", "status": 404,
                    "headers": [(b"content-type", b"application/json"),
                                (b"content-length", str(len(body)).encode())]})
        await send({"type": "http.response.body", "body": body})


def middleware() -> list:
    """FastAPI's `middleware` entries closing the routes (for launch()'s `app_kwargs`)."""
    from starlette.middleware import Middleware

    return [Middleware(ClosedRoutes)]
