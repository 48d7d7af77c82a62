"""Request bodies in time and in total (explorer/web/body_limit.py, issue 41 item 7): a body
that never arrives whole is answered 408 within the read timeout instead of holding its request
for as long as the connection lives, and the bodies held at once stay within a budget (503
past it). Each case runs BodyLimit directly, as an ASGI server would call it, on a thread of
its own bounded in time."""
from __future__ import annotations

import asyncio
import json
import threading
import time

from explorer.web import body_limit

BOUND_S = 10.0     # no case may take longer: before the fix the first one never ended


def run(coro_factory) -> None:
    """Run an async case on a thread of its own (a Playwright session fixture may hold an
    event loop in this one), at most BOUND_S."""
    errors = []

    def main():
        try:
            asyncio.run(coro_factory())
        except BaseException as error:   # noqa: BLE001 - reported below
            errors.append(error)

    worker = threading.Thread(target=main, daemon=True)
    worker.start()
    worker.join(timeout=BOUND_S)
    assert not worker.is_alive(), f"the request was still held after {BOUND_S} s"
    if errors:
        raise errors[0]


def test_a_body_that_never_arrives_whole_is_answered_408():
    sent, reached = [], []

    async def app(scope, receive, send):
        reached.append(True)

    async def case():
        first = [{"type": "http.request", "body": b"x" * 10, "more_body": True}]

        async def receive():
            if first:
                return first.pop()
            await asyncio.Event().wait()          # the rest never comes

        async def send(message):
            sent.append(message)

        limit = body_limit.BodyLimit(app, 1000, read_timeout_s=0.3)
        started = time.monotonic()
        await limit({"type": "http", "headers": [(b"content-length", b"500")]}, receive, send)
        assert time.monotonic() - started < 2.0
        assert limit.in_flight == 0

    run(case)
    assert sent[0]["status"] == 408 and not reached
    detail = json.loads(sent[1]["body"])["detail"]
    assert "seconds" in detail
    assert "秒" in detail                                # both languages


def test_the_bodies_held_at_once_stay_within_a_budget():
    """Two uploads at once under a budget of 150 bytes: the first holds 60 bytes and waits for
    the rest; the second's 120 would pass the budget and is answered 503 at once; the first
    then completes and reaches the app, and nothing is held afterwards."""
    sent: dict[str, list] = {"a": [], "b": []}
    reached = []

    async def app(scope, receive, send):
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        reached.append(body)

    async def case():
        limit = body_limit.BodyLimit(app, 1000, read_timeout_s=5, in_flight_bytes=150)
        go_on = asyncio.Event()
        a_messages = [{"type": "http.request", "body": b"a" * 60, "more_body": True},
                      {"type": "http.request", "body": b"a" * 40, "more_body": False}]
        b_messages = [{"type": "http.request", "body": b"b" * 60, "more_body": True},
                      {"type": "http.request", "body": b"b" * 60, "more_body": False}]

        async def receive_a():
            if len(a_messages) == 1:
                await go_on.wait()
            return a_messages.pop(0)

        async def receive_b():
            return b_messages.pop(0)

        def sender(name):
            async def send(message):
                sent[name].append(message)
            return send

        scope = {"type": "http", "headers": []}
        first = asyncio.create_task(limit(scope, receive_a, sender("a")))
        await asyncio.sleep(0.05)
        assert limit.in_flight == 60
        await limit(scope, receive_b, sender("b"))
        go_on.set()
        await first
        assert limit.in_flight == 0

    run(case)
    assert sent["b"][0]["status"] == 503 and sent["a"] == []
    assert reached == [b"a" * 100]


def test_an_expensive_public_measurement_is_kept_not_repeated(monkeypatch):
    """/precision_measure costs 20-40 s of the machine's long group; a script called it back to
    back. Now one result per model, device and dtype is kept for KEEP_S: a repeat is answered
    from it at once, with a message that says so (both languages); another model measures."""
    from types import SimpleNamespace

    from explorer.generate import precision
    from explorer.locales import text
    from explorer.ui.tabs import generate_precision

    class Loop:
        def load(self):
            return 0

    runs, said = [], []
    monkeypatch.setattr(generate_precision, "_KEPT", {})
    monkeypatch.setattr(generate_precision, "load_or_error",
                        lambda runtime, name, progress: SimpleNamespace(name=name, model=object(),
                                                                        device="cpu", dtype="float32"))
    monkeypatch.setattr(generate_precision, "scheduler_for", lambda model: Loop())
    monkeypatch.setattr(generate_precision.device_roof, "cached", lambda *a: "roof")
    monkeypatch.setattr(precision, "run",
                        lambda loaded, **k: runs.append(loaded.name) or f"result of {loaded.name}")
    monkeypatch.setattr(generate_precision, "draw", lambda result, lang: ("speed", "price", result))
    monkeypatch.setattr(generate_precision.gr, "Info", lambda message: said.append(message))
    for lang in ("en", "zh", "en"):
        out = generate_precision.measure.__wrapped__(None, "smollm2-135m-instruct", lang)
        assert out[-1] == "result of smollm2-135m-instruct"
    assert runs == ["smollm2-135m-instruct"] and len(said) == 2
    assert "秒" in said[0] and said[1].startswith(text("shell.kept_result", "en", ago=0, left=600)[:30])
    generate_precision.measure.__wrapped__(None, "gemma-3-270m-it", "en")
    assert runs == ["smollm2-135m-instruct", "gemma-3-270m-it"]
