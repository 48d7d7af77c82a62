"""What the app's own small routes (ASGI middleware: exports.PlotlyScript, replica.ReplicaRoute)
share: the types of an ASGI call and a whole answer sent in one body."""
from __future__ import annotations

from typing import Any, Awaitable, Callable

Scope = dict[str, Any]
Send = Callable[[dict[str, Any]], Awaitable[None]]


def at_route(scope: Scope, route: str) -> bool:
    """Whether an HTTP request asks for `route` (under the app's root path too)."""
    path = scope.get("path", "") if scope.get("type") == "http" else ""
    return path in (route, scope.get("root_path", "") + route)


async def answer(send: Send, status: int, body: bytes, headers: list, length: int | None = None) -> None:
    """One response: `headers` plus its content-length (`length`, for a HEAD answering the
    size of the body it leaves out), then `body`."""
    size = len(body) if length is None else length
    await send({"type": "http.response.start", "status": status,
                "headers": [*headers, (b"content-length", str(size).encode())]})
    await send({"type": "http.response.body", "body": body})
