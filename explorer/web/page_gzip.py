"""The page itself, sent compressed: GET/HEAD of the app's page ("/", under the app's root path
too) goes through Starlette's GZipMiddleware when the browser accepts gzip; every other request
goes to the app unchanged.

Gradio sends its scripts and styles gzipped already, but the page's HTML holds the whole app's
config (every component and event): 1.45 MB, sent as it is to every visitor, a phone on a
classroom's Wi-Fi included. Compressed at level 1 it is 261 KB (5.6x less) for 11 ms of the
server's time; level 5 gives 215 KB for 22 ms, level 9 208 KB for 45 ms (measured on this
repo's 2-core CPU, 2026-12-08): a class opening its pages together pays that per page, so the
fastest level. Only the page: an API answer can hold a visitor's own secret (a teacher's key)
beside text another visitor chose, which compression would let the length betray (BREACH);
the page holds neither.
"""
from __future__ import annotations

from typing import Any, Callable

from explorer.web.asgi import Scope, Send, at_route

LEVEL = 1
MINIMUM_BYTES = 1024


class PageGZip:
    """ASGI middleware: the page through GZipMiddleware, the rest straight to the app."""

    def __init__(self, app: Callable, level: int = LEVEL):
        from starlette.middleware.gzip import GZipMiddleware

        self.app = app
        self.gzip = GZipMiddleware(app, minimum_size=MINIMUM_BYTES, compresslevel=level)

    async def __call__(self, scope: Scope, receive: Callable, send: Send) -> None:
        if scope.get("method") in ("GET", "HEAD") and at_route(scope, "/"):
            await self.gzip(scope, receive, send)
        else:
            await self.app(scope, receive, send)


def middleware() -> list[Any]:
    """FastAPI's `middleware` entry compressing the page (for launch()'s `app_kwargs`)."""
    from starlette.middleware import Middleware

    return [Middleware(PageGZip)]
