"""A bound on the size of every request body, applied before Gradio sees the request.

Gradio reads a whole body, parses its JSON and walks the payload in the event loop (a 1M-element
list took 0.29 s, every stream stalling meanwhile), and keeps the event's data while it waits
in the queue. No input of the app needs more than a few kilobytes, so a body over MAX_BODY_BYTES
is answered 413 at once: refused on its Content-Length when it declares one, otherwise counted
as it streams in (a chunked body, or one whose header lies) and refused as soon as the count
passes the bound, before any of it reaches Gradio. A body within the bound is read whole
(at most MAX_BODY_BYTES held per request) and handed on unchanged.

Two more bounds (issue 41, docs/HARDENING.md): a body must arrive whole within
READ_TIMEOUT_S (a client that declares a body and trickles it, or never sends it, held its
request and its buffer for as long as the connection lived: answered 408 now), and the bodies
held at once, by every request together, stay within MAX_IN_FLIGHT_BYTES (held from the first
byte until the app has answered; past the budget a request is answered 503 at once, so that
many slow uploads of just under 1 MiB cannot fill the memory).

Added through FastAPI's `middleware` argument, which Gradio's launch() passes on
(`app_kwargs`, app.launch_options), so it wraps every route Gradio serves.
"""
from __future__ import annotations

import asyncio
import json
from typing import Any, Awaitable, Callable

MAX_BODY_BYTES = 1 << 20   # 1 MiB
READ_TIMEOUT_S = 30.0      # a whole body, from its request's start
MAX_IN_FLIGHT_BYTES = 64 << 20   # bodies held at once, every request together

Scope = dict[str, Any]
Message = dict[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]


class BodyLimit:
    """ASGI middleware: HTTP requests whose body exceeds `max_bytes` get 413 (see the module)."""

    def __init__(self, app: Callable, max_bytes: int = MAX_BODY_BYTES,
                 read_timeout_s: float = READ_TIMEOUT_S, in_flight_bytes: int = MAX_IN_FLIGHT_BYTES):
        self.app = app
        self.max_bytes = max_bytes
        self.read_timeout_s, self.in_flight_bytes = read_timeout_s, in_flight_bytes
        self.in_flight = 0     # bytes of bodies held now (one event loop: no lock)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = _content_length(scope)
        if declared is not None and declared > self.max_bytes:
            await self._refuse(send)
            return
        messages: list[Message] = []
        size = held = 0
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.read_timeout_s
        try:
            while True:
                try:
                    message = await asyncio.wait_for(receive(), max(0.0, deadline - loop.time()))
                except asyncio.TimeoutError:
                    await self._refuse(send, 408, "shell.refused.body_slow", int(self.read_timeout_s))
                    return
                messages.append(message)
                if message["type"] != "http.request":   # the client left: the app hears it too
                    break
                size += len(message.get("body", b""))
                if size > self.max_bytes:
                    await self._refuse(send)
                    return
                if self.in_flight + size - held > self.in_flight_bytes:
                    await self._refuse(send, 503, "shell.refused.bodies_busy", self.in_flight_bytes)
                    return
                self.in_flight += size - held
                held = size
                if not message.get("more_body", False):
                    break
            await self.app(scope, _replay(messages, receive), send)
        finally:
            self.in_flight -= held

    async def _refuse(self, send: Send, status: int = 413, key: str = "", limit: int = 0) -> None:
        if key:
            from explorer.web.admission import refusal_text
            detail = refusal_text(key, limit)
        else:
            detail = f"The request body is larger than {self.max_bytes} bytes."
        body = json.dumps({"detail": detail}).encode()
        await send({"type": "http.response.start", "status": status,
                    "headers": [(b"content-type", b"application/json"),
                                (b"content-length", str(len(body)).encode()),
                                (b"connection", b"close")]})
        await send({"type": "http.response.body", "body": body})


def _content_length(scope: Scope) -> int | None:
    """The declared Content-Length, or None (absent, or not a number: then counted as it comes)."""
    for name, value in scope.get("headers", ()):
        if name.lower() == b"content-length":
            try:
                return int(value)
            except ValueError:
                return None
    return None


def _replay(messages: list[Message], receive: Receive) -> Receive:
    """A receive() that answers the messages already read, then the client's own."""
    pending = list(messages)

    async def replayed() -> Message:
        if pending:
            return pending.pop(0)
        return await receive()

    return replayed


def middleware(max_bytes: int = MAX_BODY_BYTES) -> list:
    """FastAPI's `middleware` argument holding the bound (for launch()'s `app_kwargs`)."""
    from starlette.middleware import Middleware

    return [Middleware(BodyLimit, max_bytes=max_bytes)]
