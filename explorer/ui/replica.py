"""Which replica answered: one route, REPLICA_ROUTE, answering the replica's name as JSON.

A school may run several copies of the app (replicas) behind one load balancer
(deploy/haproxy.cfg, docs/SCALING.md "Several replicas, one class"). The balancer sends a
class's requests to one replica; this route lets an operator (and tests/test_replicas.py) see
which one a request reached. The name is the operator's own label, read from EXPLORER_REPLICA at
each request and checked against NAME (a label, never a path or a host name); without it, or
with a name outside NAME, the route answers an empty name. Nothing of a visitor is in the
answer, so the route is harmless in public. Added through FastAPI's `middleware` argument
(app.launch_options), like explorer/ui/closed_routes.py.
"""
from __future__ import annotations

import json
import os
import re
from typing import Any, Awaitable, Callable

REPLICA_ROUTE = "/explorer/replica"
ENV = "EXPLORER_REPLICA"
NAME = re.compile(r"[A-Za-z0-9_-]{1,32}")

Scope = dict[str, Any]
Send = Callable[[dict[str, Any]], Awaitable[None]]


def replica_name() -> str:
    """EXPLORER_REPLICA when it is a label of NAME, else ""."""
    name = os.environ.get(ENV, "").strip()
    return name if NAME.fullmatch(name) else ""


class ReplicaRoute:
    """ASGI middleware: GET/HEAD of REPLICA_ROUTE (under the app's root path) answers
    {"replica": name}, never cached; every other request goes to the app unchanged."""

    def __init__(self, app: Callable):
        self.app = app

    async def __call__(self, scope: Scope, receive: Callable, send: Send) -> None:
        path = scope.get("path", "") if scope.get("type") == "http" else ""
        if path not in (REPLICA_ROUTE, scope.get("root_path", "") + REPLICA_ROUTE):
            await self.app(scope, receive, send)
            return
        if scope.get("method") not in ("GET", "HEAD"):
            await _answer(send, 405, b"", [(b"allow", b"GET, HEAD")])
            return
        body = json.dumps({"replica": replica_name()}).encode()
        await _answer(send, 200, b"" if scope["method"] == "HEAD" else body,
                      [(b"content-type", b"application/json"),
                       (b"cache-control", b"no-store")], length=len(body))


async def _answer(send: Send, status: int, body: bytes, headers: list, length: int | None = None) -> None:
    size = len(body) if length is None else length
    await send({"type": "http.response.start", "status": status,
                "headers": [*headers, (b"content-length", str(size).encode())]})
    await send({"type": "http.response.body", "body": body})


def middleware() -> list:
    """FastAPI's `middleware` entries serving REPLICA_ROUTE (for launch()'s `app_kwargs`)."""
    from starlette.middleware import Middleware

    return [Middleware(ReplicaRoute)]
