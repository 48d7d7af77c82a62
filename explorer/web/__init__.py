"""The web layer: everything between the network and the page's handlers, behind one call.

    demo = build the page (gr.Blocks)
    harden(demo, settings)                  # before launch: groups, queue, patches, admission, ZeroGPU
    demo.launch(**server_options(settings), ...)   # the routes and bounds of the server itself

`harden` puts every queued event in its concurrency group (`groups.py`) with the group's
limit, queues the app, applies the Gradio patches (`gradio_patches.py`, the one place that
touches Gradio's internals, behind the pinned-version check), asks the app's own admission
(`admission.py`) before an event waits or a session is created, and on a ZeroGPU Space runs
each model event in a GPU call (`zerogpu.py`). `server_options` gives launch() the ASGI
middlewares, outermost first: which replica answered and which rooms it holds, for a school's
load balancer (`replica.py`, outermost so that it sees every answer); Gradio's deep-link route
answered 404 (`closed_routes.py`); a handler's refusal in words on the direct route answered
400, not 500 (`direct_errors.py`); a body over 1 MiB refused (413) before Gradio reads it
(`body_limit.py`); the plotly.js that exported HTML files inline (`exports.py`); the page
itself gzipped (`page_gzip.py`: 1.45 MB of config, 5.6x less); Gradio's page scripts with two
patches (`gradio_frontend.py`: status writes, unqueued refusals); a room's
revision for the class page's timer (`class_route.py`); what a page has drawn of a stream, which
paces it (`drawn_route.py`); innermost, which sessions a page holds
open (`open_pages.py`), so that only others go idle.

Also here, for the tabs: the groups' names (`groups.py`), Stop buttons that end a run with its
own last message (`stopping.py`), and reads of the event's context (`gradio_context.py`).
Nothing in this package imports the page or a tab.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import gradio as gr

from explorer.web import (body_limit, class_route, closed_routes, direct_errors, drawn_route,
                          exports, gradio_frontend, gradio_patches, open_pages, page_gzip, replica,
                          zerogpu)
from explorer.web.admission import Admission, GroupLimits, SessionGate


@dataclass(frozen=True)
class Settings:
    """The bounds of one server (app.py holds the values and why)."""
    groups: Mapping[str, GroupLimits]   # concurrency group -> how many run and wait
    default_group: str                  # the group of every queued event that names none
    queue_max_size: int                 # Gradio's bound on all waiting events at once
    waiting_per_session: int            # waiting events of one page, every group together
    waiting_per_address: int            # ... and of one client address
    new_sessions_per_minute: int        # sessions one address may open a minute
    sessions_per_address: int           # sessions one address may hold
    session_idle_s: float               # a session no page holds open is dropped after this
    state_sessions: int                 # sessions Gradio keeps (the oldest dropped past it)
    max_threads: int                    # Gradio's worker threads


def harden(demo: gr.Blocks, settings: Settings) -> gr.Blocks:
    """Groups, queue, patches, admission and ZeroGPU on a built page; returns it."""
    gradio_patches.group_events(demo, {name: group.concurrency for name, group in settings.groups.items()},
                                settings.default_group)
    demo.queue(default_concurrency_limit=settings.groups[settings.default_group].concurrency,
               max_size=settings.queue_max_size)
    # lean sessions, short input refusals, a calmer queue (each patch's why is in the module)
    gradio_patches.apply(demo)
    gradio_patches.admit_events(
        demo, Admission(settings.groups, settings.waiting_per_session, settings.waiting_per_address),
        SessionGate(settings.new_sessions_per_minute, settings.sessions_per_address,
                    idle_s=settings.session_idle_s))
    zerogpu.attach_gpu(demo)   # on a ZeroGPU Space, each model event runs in its own GPU call
    return demo


def middleware() -> list:
    """The server's ASGI middlewares, outermost first (the order is the module's docstring's)."""
    return (replica.middleware() + closed_routes.middleware() + direct_errors.middleware()
            + body_limit.middleware() + exports.middleware() + page_gzip.middleware()
            + gradio_frontend.middleware()
            + class_route.middleware() + drawn_route.middleware() + open_pages.middleware())


def server_options(settings: Settings) -> dict[str, Any]:
    """Keyword arguments of demo.launch() that bound the server."""
    return {
        "state_session_capacity": settings.state_sessions,
        "max_threads": settings.max_threads,
        "ssr_mode": False,
        "share": False,
        # Gradio's own input checks (e.g. a NaN sent to a number field) raise plain exceptions:
        # show their message instead of a generic "the upstream app raised an exception"
        "show_error": True,
        "app_kwargs": {"middleware": middleware()},
    }
