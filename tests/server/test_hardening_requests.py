"""Issue 27 finding 2: a request body has a size limit, enforced before Gradio reads it, and a
session keeps no long raw input. The attack: an anonymous client posts a body of several MB
(with its Content-Length, or chunked with none) to an event's route; Gradio used to accept it
(200), parse it in the event loop and keep the value in the session until eviction."""
from __future__ import annotations

import threading
import time

import gradio as gr
import httpx
import pytest

from explorer.web import body_limit

FIVE_MB = 5 * 1000 * 1000


def _post(url: str, content, headers=None) -> tuple[int, float]:
    """(status, seconds) of one POST; a server that answers before reading the whole body
    may close the connection while the client still sends (then the status is read if it came)."""
    started = time.perf_counter()
    with httpx.Client(timeout=10) as client:
        response = client.post(url, content=content,
                               headers={"content-type": "application/json", **(headers or {})})
    return response.status_code, time.perf_counter() - started


def _five_mb_json() -> bytes:
    return b'{"data": ["en", "' + b"1" * FIVE_MB + b'", 64, 8192]}'


def _chunks(data: bytes, size: int = 64 * 1024):
    for start in range(0, len(data), size):
        yield data[start:start + size]


@pytest.mark.parametrize("route", ["gradio_api/call/rope_frequencies", "gradio_api/queue/join"])
@pytest.mark.parametrize("how", ["content-length", "chunked"])
def test_a_five_mb_body_is_refused_with_413_within_a_second(served_rope, route, how):
    _, url = served_rope
    body = _five_mb_json()
    content = body if how == "content-length" else _chunks(body)
    status, seconds = _post(url + route, content)
    assert status == 413 and seconds < 1.0, (status, seconds)


def _through_limit(chunks: list[bytes], declared: int | None, max_bytes: int = 100):
    """(what the app received or None if never called, what was sent back) for a body in
    `chunks` passed through BodyLimit directly, as an ASGI server would hand it over."""
    import asyncio

    received, sent = [], []
    messages = [{"type": "http.request", "body": c, "more_body": i < len(chunks) - 1}
                for i, c in enumerate(chunks)]

    async def app(scope, receive, send):
        while True:
            message = await receive()
            received.append(message.get("body", b""))
            if not message.get("more_body"):
                break

    async def receive():
        return messages.pop(0)

    async def send(message):
        sent.append(message)

    headers = [] if declared is None else [(b"content-length", str(declared).encode())]
    call = body_limit.BodyLimit(app, max_bytes)({"type": "http", "headers": headers}, receive, send)
    # in a thread of its own: a session fixture (Playwright's sync API) may hold an event loop
    # running in this one, where asyncio.run refuses to start
    worker = threading.Thread(target=asyncio.run, args=(call,))
    worker.start()
    worker.join(timeout=30)
    return (b"".join(received) if received else None), sent


def test_the_bytes_are_counted_as_they_come_whatever_the_header_says():
    """An ASGI server that does not hold a body to its Content-Length (or a chunked body,
    which declares none) still cannot pass more than the bound to the app."""
    for declared in (None, 10):
        body, sent = _through_limit([b"x" * 60, b"y" * 60], declared)
        assert body is None and sent[0]["status"] == 413, declared
    body, sent = _through_limit([b"x" * 60], 1000)        # declared over the bound: not read
    assert body is None and sent[0]["status"] == 413
    body, sent = _through_limit([b"x" * 60, b"y" * 40], None)   # within: handed on whole
    assert body == b"x" * 60 + b"y" * 40 and sent == []


def test_a_normal_call_still_works(served_rope):
    from gradio_client import Client

    _, url = served_rope
    plot, text, table = Client(url, verbose=False).predict("en", "10000, 500000", 64, 8192,
                                                           api_name="/rope_frequencies")
    assert plot and [row[0] for row in table["data"]] == ["10k", "500k"]


def _holds(root, needle: str) -> list[str]:
    """Where under `root` (containers, the session's attributes and Gradio blocks' attributes)
    a string containing `needle` sits."""
    found, seen = [], set()
    stack = [(root, "session")]
    while stack:
        obj, where = stack.pop()
        if id(obj) in seen:
            continue
        seen.add(id(obj))
        if isinstance(obj, str):
            if needle in obj:
                found.append(where)
        elif isinstance(obj, dict):
            stack.extend((v, f"{where}[{k!r}]") for k, v in obj.items())
            stack.extend((k, f"{where} key") for k in obj)
        elif isinstance(obj, (list, tuple, set, frozenset)):
            stack.extend((v, f"{where}[{i}]") for i, v in enumerate(obj))
        elif obj is root or isinstance(obj, gr.blocks.Block) or type(obj).__name__ == "BlocksConfig":
            stack.extend((v, f"{where}.{k}") for k, v in vars(obj).items())
    return found


def test_a_session_keeps_no_copy_of_a_900_kb_input(served_rope):
    from gradio_client import Client

    demo, url = served_rope
    needle = "a visitor's 900 KB text "
    text = needle + "7" * (900 * 1000 - len(needle))
    client = Client(url, verbose=False)
    client.predict("en", "10000", 64, 8192, api_name="/rope_frequencies")  # short: kept
    session = demo.state_holder.session_data[client.session_hash]
    assert "10000" in [c["props"].get("value") for c in session.components if "props" in c]
    with pytest.raises(Exception, match="900,000 characters long"):   # the tab refuses it
        client.predict("en", text, 64, 8192, api_name="/rope_frequencies")
    assert _holds(session, needle) == []
    assert _holds(demo._queue.event_ids_to_events, needle) == []
    assert "10000" not in [c["props"].get("value") for c in session.components if "props" in c]
