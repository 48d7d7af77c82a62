"""Every place the app touches Gradio's internals, each patch with why. One module, so that a
Gradio upgrade is checked here and nowhere else.

The patches were written against Gradio GRADIO_VERSION (the version requirements.txt pins;
tests/server/test_gradio_patches.py holds the two equal). `apply(demo)`, called once the app is
built
and queued (app.build_app), first checks the installed version: another version leaves Gradio
exactly as it is, with one log line saying so. Each patch also checks the attributes it
replaces, and where one is missing leaves its part of Gradio as it is, with one log line.

Patches (`apply`):
1. `lean_sessions`: sessions build each component's config only on demand and keep no long
   input or output value (LeanSessionState);
2. `short_choice_errors`: a value outside a Dropdown's, Radio's or CheckboxGroup's choices is
   refused in one short sentence, not quoted back whole;
3. `short_number_errors`: text, a list or NaN sent to a Number or a Slider is refused likewise;
4. `poll_queue_less`: the queue looks for waiting events every 10 ms, not every 1 ms;
5. `skip_absent_plot_backends`: Gradio's `import matplotlib` around every message fails at once;
6. `fast_skips` (explorer/web/gradio_skips.py): an output an event skips costs no Python.
7., 8. in the page, not here: Gradio's page scripts are served with the loading-status writer
   writing only what changed, and an unqueued event's refusal shown in words
   (explorer/web/gradio_frontend.py, a route of its own, on the same version check).

Also here, not behind the version check:
- `group_events` and `admit_events`: every queued event in one of the app's concurrency groups
  with the group's limit, and the app's own bounds (explorer/web/admission.py) asked before an
  event joins Gradio's queue or a session is created; a refusal is an HTTP 429 whose detail the
  page shows. When a session is created, the sessions the gate finds idle (no page holds them
  open, explorer/web/open_pages.py) are dropped first. Each checks the shape it relies on and
  leaves Gradio as it is where it differs.
- `wrap_events`: the function of chosen events replaced by a wrapper (ZeroGPU's spaces.GPU,
  explorer/web/zerogpu.py). A ZeroGPU Space serves nothing without it, and its only contact
  with Gradio is the event table `spaces` itself relies on; it checks that table's shape.
- reads of Gradio's per-event context (explorer/web/gradio_context.py: `current_event`,
  `event_context`, `event_client`, `client_alive`): None, or "always alive", where it does not
  have the shape they expect;
  Gradio's own behaviour (a close at the next yield) then stops a run.
"""
from __future__ import annotations

import datetime
import logging
import os
import sys
import time
from copy import copy
from typing import Any, Callable, Iterator, Optional, Sequence

from explorer.inputs import InputError, check_choice_payload, not_a_number
from explorer.web.gradio_context import request_address
from explorer.web.gradio_skips import fast_skips
from explorer.web.open_pages import OPEN

log = logging.getLogger(__name__)

GRADIO_VERSION = "6.31.0"


def version_problem() -> Optional[str]:
    """Why the patches do not apply to the installed Gradio (None: they do)."""
    import gradio

    installed = getattr(gradio, "__version__", None)
    if installed != GRADIO_VERSION:
        return f"Gradio {installed} is installed, the patches are for {GRADIO_VERSION}"
    return None


def apply(demo: Any) -> dict[str, bool]:
    """Apply every patch of the module doc to Gradio and to `demo` (built and queued): which
    applied. With another Gradio version, none, and one log line."""
    import gradio as gr

    problem = version_problem()
    if problem is not None:
        log.warning("%s: Gradio's own behaviour kept (explorer/web/gradio_patches.py)", problem)
        return dict.fromkeys(("lean_sessions", "short_choice_errors", "short_number_errors",
                              "poll_queue_less", "skip_absent_plot_backends", "fast_skips"), False)
    return {
        "lean_sessions": lean_sessions(),
        # a component's check runs before the handler and knows no visitor's language: English
        "short_choice_errors": short_choice_errors((gr.Dropdown, gr.Radio, gr.CheckboxGroup), gr.Error),
        # a Slider too: its own check compares the payload with its bounds (a text or a list:
        # TypeError, answered with ~400 characters naming the handler; found by bench.fuzz_all)
        "short_number_errors": all([short_number_errors(gr.Number, gr.Error),
                                    short_number_errors(gr.Slider, gr.Error)]),
        "poll_queue_less": poll_queue_less(demo),
        "skip_absent_plot_backends": skip_absent_plot_backends(),
        "fast_skips": fast_skips(type(demo)),
    }


# ----------------------------------------------------------------------------- 1. lean sessions
# Gradio 6 keeps, for every session, a copy of every component's config (`SessionState.
# config_values`) so that a "deep link" can rebuild the page as that visitor saw it. It builds
# all of them when the session's first event arrives (one `get_config()` per block: 463 blocks
# here, ~30 ms of Python on an idle core), and again for a component each time an event writes
# a gr.State or answers `gr.skip()`. The app has no deep-link button, so nobody reads them, but
# the work holds the GIL that the shared decode loop needs between its ops: a classroom of 30
# opening sessions together took seconds of every visitor's first token (py-spy, docs/
# BENCHMARKS.md). `LeanSessionState` builds a component's config only when `components` (the
# deep-link route) asks for it, with the last value written where that value is short.
# Gradio's own keeps every value an event reads or writes (a visitor's raw input, a figure) until
# the session is evicted, 200 sessions here (app.STATE_SESSIONS): 200 API clients sending a
# 100 MB prompt once would have held ~20 GB. Nobody reads these values but the deep-link route,
# which the page offers no button for, so only a short one is kept (a number, a choice, a text
# of at most KEPT_VALUE_CHARS characters); for any other the route answers the component's
# config as the page built it.
KEPT_VALUE_CHARS = 1000


def _short_value(value: Any) -> bool:
    """Whether a component's value is small enough to keep for the deep-link route."""
    if value is None or isinstance(value, (bool, int, float)):
        return True
    return isinstance(value, str) and len(value) <= KEPT_VALUE_CHARS


_NEEDED = ("__setitem__", "_update_config", "_update_value_in_config", "components",
           "state_components", "__getitem__", "__contains__")


def _lean_class(base: type) -> type:
    class LeanSessionState(base):  # type: ignore[misc, valid-type]
        """SessionState whose per-component configs are built on demand (see the module)."""

        def __init__(self, blocks):
            self.blocks_config = copy(blocks.default_config)
            # the ids Gradio's own __init__ builds a config for, in its order
            self._config_ids = [k for k in self.blocks_config.blocks if k in blocks.blocks]
            self._built: dict[int, dict] = {}     # id -> config built since its block last changed
            self._values: dict[int, Any] = {}     # id -> last short value written to it
            # the rest as Gradio's __init__ sets it
            self.state_data: dict[int, Any] = {}
            self._state_ttl: dict = {}
            self.is_closed = False
            self.STATE_TTL_WHEN_CLOSED = 1 if os.getenv("GRADIO_IS_E2E_TEST", None) else 3600

        @property
        def config_values(self) -> dict:
            """Every component's config as Gradio's eager version holds it (built now)."""
            return {k: self._config(k) for k in self._config_ids}

        def _config(self, key: int) -> dict:
            if key not in self._built:
                self._built[key] = self.blocks_config.config_for_block(
                    key, [], self.blocks_config.blocks[key])
            config = self._built[key]
            if key in self._values and "props" in config:
                config["props"]["value"] = self._values[key]
            return config

        def __setitem__(self, key: int, value: Any):
            from gradio.components import State

            block = self.blocks_config.blocks.get(key)
            if isinstance(block, State):
                self._state_ttl[key] = (block.time_to_live, datetime.datetime.now())
                self.state_data[key] = value
            else:
                self.blocks_config.blocks[key] = value
            if block:
                self._built.pop(key, None)
                if key not in self._config_ids:
                    self._config_ids.append(key)

        def _update_config(self, key: int):
            if self[key] is not None:
                self._built.pop(key, None)

        def _update_value_in_config(self, key: int, value: Any):
            if key not in self._config_ids:
                self._config_ids.append(key)
            if _short_value(value):
                self._values[key] = value
            else:
                self._values.pop(key, None)
                self._built.pop(key, None)   # its config may carry the previous value

        @property
        def components(self) -> Iterator[dict]:
            for key in list(self._config_ids):
                config = self._config(key)
                if config:
                    yield config

    return LeanSessionState


def lean_sessions() -> bool:
    """Make Gradio's StateHolder create LeanSessionState sessions; True if installed (or
    already). Leaves Gradio untouched if its SessionState lacks what the subclass overrides."""
    from gradio import state_holder

    current = state_holder.SessionState
    if getattr(current, "_explorer_lean", False):
        return True
    if not all(hasattr(current, name) for name in _NEEDED):
        log.warning("gradio.state_holder.SessionState has changed shape: sessions left eager")
        return False
    lean = _lean_class(current)
    lean._explorer_lean = True
    state_holder.SessionState = lean
    return True


# ----------------------------------------------------------------- 2, 3. short input refusals
def short_choice_errors(component_classes: tuple, error_class: type) -> bool:
    """Make the choice components (Gradio's Dropdown, Radio, CheckboxGroup: classes with
    `choices` as (label, value) pairs) refuse a value outside their choices with the short
    "inputs.not_option" text (explorer.inputs.check_choice_payload), raised as `error_class`
    (gr.Error: Gradio shows its message as it is), before their own check: that one quotes the
    whole value back ("Value: ... is not in the list of choices"), so an API client's 2 MB
    value came back as 2 MB of error text. Patched on the classes, not on the app's
    instances: Gradio answers a gr.update() by building a new instance for the session. A
    component that allows custom values is left to its own check; None passes, as in Gradio.
    Idempotent; False (and one log line) where a class has no `preprocess`."""
    if not all(callable(getattr(cls, "preprocess", None)) for cls in component_classes):
        log.warning("a Gradio choice component has no preprocess: its own check of choices kept")
        return False
    for cls in component_classes:
        original = cls.preprocess
        if getattr(original, "checks_choices_first", False):
            continue

        def preprocess(self, payload, _original=original):
            try:
                check_choice_payload(self, payload)
            except InputError as refused:
                raise error_class(str(refused), print_exception=False) from None
            return _original(self, payload)

        preprocess.checks_choices_first = True
        preprocess.original = original
        preprocess.__doc__ = original.__doc__
        cls.preprocess = preprocess
    return True


def short_number_errors(number_class: type, error_class: type) -> bool:
    """The same for Gradio's Number: a value its own conversion cannot take (text, a list, a
    dict, NaN or ±inf where it rounds) was answered with Gradio's processing error, ~1,100
    characters naming the event's components, and a traceback in the server log; it is
    answered with the short "inputs.not_number" text instead. Idempotent; False (and one log
    line) where the class has no `preprocess`."""
    original = getattr(number_class, "preprocess", None)
    if not callable(original):
        log.warning("Gradio's Number has no preprocess: its own check of numbers kept")
        return False
    if getattr(original, "checks_numbers_first", False):
        return True

    def preprocess(self, payload, _original=original):
        try:
            return _original(self, payload)
        except error_class:
            raise   # Gradio's own short answer, e.g. "Value 0 is less than minimum value 1."
        except (TypeError, ValueError, OverflowError):
            raise error_class(str(not_a_number(self, payload)), print_exception=False) from None

    preprocess.checks_numbers_first = True
    preprocess.original = original
    preprocess.__doc__ = original.__doc__
    number_class.preprocess = preprocess
    return True


# ----------------------------------------------------------------------- 4. queue polling
# Gradio's queue looks for a waiting event every `sleep_when_free` seconds: 1 ms on Linux, so an
# idle app wakes its event loop 1,000 times a second (5-8% of a core here, measured with top),
# and while visitors generate each wake takes the GIL the decode loop needs between its ops and
# a core from the fused step, which uses both. Every 10 ms, an event waits at most 10 ms longer
# to start, against a first token of 0.2 s or more.
QUEUE_POLL_S = 0.01


def poll_queue_less(demo: Any, seconds: float = QUEUE_POLL_S) -> bool:
    """After demo.queue(): the queue polls for waiting events every `seconds` at most; True if
    set. Leaves Gradio as it is (False) if its queue lacks the attribute this relies on."""
    queue = getattr(demo, "_queue", None)
    current = getattr(queue, "sleep_when_free", None)
    if isinstance(current, bool) or not isinstance(current, (int, float)):
        log.warning("Gradio's queue has changed shape: its idle polling left as it is")
        return False
    queue.sleep_when_free = max(float(current), seconds)
    return True


# --------------------------------------------------------------------- 5. absent plot backends
def skip_absent_plot_backends(names: Sequence[str] = ("matplotlib", "bokeh")) -> bool:
    """Gradio tries `import matplotlib` twice around every message it sends (to switch the
    backend) whether or not the app uses it. When the package is not installed, each failed
    import searches sys.path again: 200 µs a message, measured, against 21 µs once the name is
    marked absent (None in sys.modules makes the import fail at once, as Python documents).
    Only names that no installed package provides are marked."""
    import importlib.util

    for name in names:
        if name not in sys.modules and importlib.util.find_spec(name) is None:
            sys.modules[name] = None  # type: ignore[assignment]
    return True


# ------------------------------------------------------------------------- wrapped events
def _event_table(demo: Any, attributes: Sequence[str], fallback: str) -> Optional[list]:
    """The Blocks' events (BlockFunction objects); None and one log line ending in `fallback`
    where the table is not a dict of objects that each have `attributes`."""
    fns = getattr(demo, "fns", None)
    functions = list(fns.values()) if isinstance(fns, dict) else None
    if functions is None or not all(hasattr(f, name) for f in functions for name in attributes):
        log.warning("Gradio's event table has changed shape: %s", fallback)
        return None
    return functions


def wrap_events(demo: Any, groups: Sequence[str],
                wrap: Callable[[Callable, Optional[float]], Callable]) -> int:
    """Replace the function of every event of `demo` in the concurrency groups `groups` by
    `wrap(function, the event's time limit)` (after the Blocks are built, before launch); how
    many were replaced. Gradio calls an event's `BlockFunction.fn`; 0 (and one log line) where
    its event table has another shape."""
    functions = _event_table(demo, ("fn", "concurrency_id", "time_limit"), "no event wrapped")
    if functions is None:
        return 0
    wrapped = 0
    for block_fn in functions:
        if block_fn.fn is None or block_fn.concurrency_id not in groups:
            continue
        block_fn.fn = wrap(block_fn.fn, block_fn.time_limit)
        wrapped += 1
    return wrapped


# ------------------------------------------------------------------ groups and admission
def group_events(demo: Any, limits: dict[str, int], default_group: str) -> int:
    """After the Blocks are built, before launch: every queued event in a group of `limits`
    ({group: events running at once}) runs under that limit, and every other queued event
    joins `default_group` (Gradio gives each event a group of its own, with the default limit
    each: 21 groups x 4 here, more than the worker threads). How many events were moved to
    the default group; 0 (and one log line) where the event table has another shape."""
    functions = _event_table(demo, ("queue", "concurrency_id", "concurrency_limit"),
                             "its concurrency groups left as they are")
    if functions is None:
        return 0
    moved = 0
    for block_fn in functions:
        if not block_fn.queue or block_fn.fn is None:
            continue
        if block_fn.concurrency_id not in limits:
            block_fn.concurrency_id = default_group
            moved += 1
        block_fn.concurrency_limit = limits[block_fn.concurrency_id]
    return moved


def _waiting(queue: Any) -> list:
    from explorer.web.admission import Waiting

    return [Waiting(group, event.session_hash, request_address(event.request))
            for group, events in queue.event_queue_per_concurrency_id.items()
            for event in events.queue]


# Gradio's queue keeps, per session, the ids of its events not yet delivered
# (`pending_event_ids_session`): an id leaves when its completion is read from the session's
# stream, but the session's (then empty) set is never removed, nor the ids of a session whose
# message queue Gradio's LRU (2,000 sessions) has dropped. A day of a class leaves one entry per
# session that ever queued an event (~0.2 KB each; the 10-minute soak ended with 1,217). The
# sweep below drops both kinds every SWEEP_S, from inside the event loop (the queue's push), so
# no route sees the dict change under it.
SWEEP_S = 30.0


def sweep_event_ids(queue: Any) -> int:
    """Drop the queue's per-session id sets that can never be read again: empty ones, and those
    of a session without a message queue none of whose events is still held. How many."""
    pending = getattr(queue, "pending_event_ids_session", None)
    messages = getattr(queue, "pending_messages_per_session", None)
    events = getattr(queue, "event_ids_to_events", None)
    if not isinstance(pending, dict) or messages is None or not isinstance(events, dict):
        return 0
    gone = [session for session, ids in pending.items()
            if not ids or (session not in messages and not any(i in events for i in ids))]
    for session in gone:
        pending.pop(session, None)
    return len(gone)


def admit_events(demo: Any, admission: Any, gate: Any) -> bool:
    """After demo.queue(): `admission.refusal` (explorer.web.admission) is asked before an
    event joins the queue, `gate.admit` before a session is created (a page's first event, or
    an API call: Gradio gives each a session), and the sessions it names are dropped. A refusal
    is an HTTP 429, the reason its detail. False (and one log line) where Gradio's queue or
    route helpers have another shape."""
    import uuid

    from fastapi import HTTPException
    from gradio import route_utils

    from explorer.web.admission import Waiting, refusal_text

    queue = getattr(demo, "_queue", None)
    if (not callable(getattr(queue, "push", None))
            or not isinstance(getattr(queue, "event_queue_per_concurrency_id", None), dict)
            or not callable(getattr(route_utils, "get_fn", None))):
        log.warning("Gradio's queue has changed shape: no bound on waiting events or sessions")
        return False
    original_push = queue.push
    swept = {"at": time.monotonic()}

    async def push(body, request, username):
        if time.monotonic() - swept["at"] >= SWEEP_S:
            swept["at"] = time.monotonic()
            sweep_event_ids(queue)
        block_fn = demo.fns.get(getattr(body, "fn_index", None))
        if block_fn is not None:
            if body.session_hash is None:   # an API call: Gradio would name its session now
                body.session_hash = uuid.uuid4().hex
            new = Waiting(block_fn.concurrency_id, body.session_hash, request_address(request))
            refused = admission.refusal(_waiting(queue), new)
            if refused is not None:
                raise HTTPException(status_code=429, detail=refusal_text(*refused))
        return await original_push(body, request, username)

    queue.push = push
    demo._explorer_session_gate = gate
    _gate_new_sessions(route_utils, HTTPException, refusal_text)
    return True


def _gate_new_sessions(route_utils: Any, http_error: type, refusal_text: Callable) -> None:
    """Make route_utils.get_fn (which creates a request's session when it names one Gradio
    does not hold: the queue's join, the direct /run route) ask the gate of its Blocks first."""
    original = route_utils.get_fn
    if getattr(original, "gates_sessions", False):
        return

    def get_fn(blocks, api_name, body):
        gate, holder = getattr(blocks, "_explorer_session_gate", None), getattr(blocks, "state_holder", None)
        session, data = getattr(body, "session_hash", None), getattr(holder, "session_data", None)
        if gate is None or not session or not isinstance(data, dict):
            pass
        elif session in data:
            gate.used(session)
        else:
            _drop_sessions(holder, _idle_sessions(blocks, holder, gate))
            dropped = gate.admit(session, request_address(getattr(body, "request", None)))
            if dropped is None:
                raise http_error(status_code=429, detail=refusal_text(
                    "shell.refused.sessions", gate.per_minute))
            _drop_sessions(holder, dropped)
        return original(blocks, api_name, body)

    get_fn.gates_sessions, get_fn.original = True, original
    route_utils.get_fn = get_fn


def _idle_sessions(blocks: Any, holder: Any, gate: Any) -> list[str]:
    """The sessions the gate drops as idle (SessionGate.idle): Gradio's time of each session's
    last request; held open while a page's heartbeat is open (explorer/web/open_pages.py) or an
    event of the session is still queued, running or undelivered."""
    last_used = getattr(holder, "time_last_used", None)
    if not isinstance(last_used, dict) or getattr(gate, "idle_s", None) is None:
        return []
    now = datetime.datetime.now()
    idle_for = {session: (now - at).total_seconds() for session, at in list(last_used.items())}
    pending = getattr(getattr(blocks, "_queue", None), "pending_event_ids_session", None) or {}
    return gate.idle(idle_for, lambda session: session in OPEN or bool(pending.get(session)))


def _drop_sessions(holder: Any, sessions: Sequence[str]) -> None:
    """Drop `sessions` from Gradio's StateHolder: each gr.State's delete callback, then the
    session itself (its block table and state), as Gradio's own eviction does; and what the
    decode loops kept of them (their prefix-reuse counts, explorer/serving/registry.py)."""
    from explorer.serving import registry

    for session in sessions:
        try:
            holder.delete_state(session)
        except (KeyError, AttributeError):   # already gone, or a holder without callbacks
            pass
        with holder.lock:
            holder.session_data.pop(session, None)
            holder.time_last_used.pop(session, None)
    registry.forget_sessions(sessions)
