"""Reads of Gradio's per-event context, for the handlers and the web layer: which session and
client the event this thread serves belongs to, when it was queued, whether its client is still
there. Gradio's internals, like explorer/web/gradio_patches.py (written for the same pinned
version): each read answers None, or "always alive", where Gradio does not have the shape it
expects, and Gradio's own behaviour (a close at the next yield) then stops a run."""
from __future__ import annotations

from typing import Any, Callable, Optional

from explorer.web.admission import client_address, counted_address, trust_proxy_setting


def current_event() -> Any:
    """Gradio's queue entry (gradio.queueing.Event: its client's `alive`, its `enqueue_time`)
    of the event this thread is serving; None outside an event or where Gradio's queue does
    not have this shape. Gradio sets its context before every call into a handler, a
    generator's next() included."""
    try:
        from gradio.context import LocalContext
    except ImportError:
        return None
    blocks, event_id = LocalContext.blocks.get(None), LocalContext.event_id.get(None)
    events = getattr(getattr(blocks, "_queue", None), "event_ids_to_events", None)
    return events.get(event_id) if isinstance(events, dict) and event_id is not None else None


def event_context() -> tuple[Optional[str], Optional[str], Optional[float]]:
    """(session hash, event id, time the event was queued) of the Gradio event this thread is
    serving, Nones outside one (a test calling a handler, the CLI)."""
    try:
        from gradio.context import LocalContext
    except ImportError:
        return None, None, None
    request = LocalContext.request.get(None)
    queued = getattr(current_event(), "enqueue_time", None)
    return (getattr(request, "session_hash", None), LocalContext.event_id.get(None),
            queued if isinstance(queued, float) else None)


def event_client() -> tuple[Optional[str], Optional[str]]:
    """(session hash, client address) of the Gradio event this thread is serving, Nones
    outside one. The address is the connection's peer, or behind reverse proxies the operator
    trusts (EXPLORER_TRUST_PROXY=N, see admission.client_address) the one they were reached
    from."""
    try:
        from gradio.context import LocalContext
    except ImportError:
        return None, None
    request = LocalContext.request.get(None)
    if request is None:
        return None, None
    session = getattr(request, "session_hash", None)
    return session if isinstance(session, str) else None, request_address(request)


def event_cookie(name: str) -> Optional[str]:
    """The value of cookie `name` on the request that sent the Gradio event this thread serves
    (None outside one, or without it)."""
    try:
        from gradio.context import LocalContext
    except ImportError:
        return None
    from explorer.web.asgi import cookie_value

    request = LocalContext.request.get(None)
    try:
        header = request.headers.get("cookie") or ""
    except (AttributeError, KeyError, TypeError):
        return None
    return cookie_value(header, name)


def request_address(request: Any) -> Optional[str]:
    """The client address of a request (Gradio's or Starlette's): its connection's peer, or
    the one client_address reads behind the proxies trusted (one on a Space), as counted (IPv6: /64)."""
    try:
        peer = request.client.host
        headers = request.headers
        forwarded = (headers.getlist("x-forwarded-for") if hasattr(headers, "getlist")
                     else [headers.get("x-forwarded-for") or ""])
    except (AttributeError, KeyError, TypeError):   # a request without a connection (a test)
        peer, forwarded = None, []
    return counted_address(client_address(peer, forwarded, trust_proxy_setting()))


def client_alive() -> Callable[[], bool]:
    """Inside a Gradio event handler: a function that turns False once the event's client is
    gone. Gradio notices a closed event stream at once (the stream's task is cancelled and
    marks every event of that session not `alive`) but stops a generator only after its next
    yield; reading the flag lets the run stop at its next step instead. Outside an event (a
    test, the CLI), or where Gradio's queue does not have this shape, it is always True and
    Gradio's own close is what stops the run (tests/unit/test_cancel.py drops a real connection and
    fails if this stops working)."""
    event = current_event()
    if event is None or not isinstance(getattr(event, "alive", None), bool):
        return always_alive
    return lambda: event.alive


def always_alive() -> bool:
    """client_alive() where no Gradio event is known."""
    return True
