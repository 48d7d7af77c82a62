"""What the app's own small routes (ASGI middleware: exports.PlotlyScript, replica.ReplicaRoute)
share: the types of an ASGI call and a whole answer sent in one body."""
from __future__ import annotations

from typing import Any, Awaitable, Callable, Optional

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


def cookie_value(header: str, name: str) -> Optional[str]:
    """The value of the last `name=` pair of a Cookie header, None without one. Split on ";"
    alone, as HAProxy's req.cook reads it: a strict parser gives up on the whole header at one
    odd cookie of another app of the same host."""
    found = None
    for pair in header.split(";"):
        key, _, value = pair.partition("=")
        if key.strip() == name:
            found = value
    return found
