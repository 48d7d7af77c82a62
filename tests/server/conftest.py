"""tests/server: tests that serve the app (in-process through the `serve` fixtures of
tests/conftest.py, or as a process) and talk to it over HTTP or gradio_client. Every test here
is marked `server` (tests/conftest.py); the served app loads the real checkpoints."""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

import pytest

ROPE = ("explorer.ui.tabs.rope",)
CLASSROOM = ("explorer.ui.tabs.classroom",)
# the sessions Gradio keeps on guarded_app's server: every fuzz case is a new session, and with
# the app's cap of 200 the quick fuzz grew the live heap 113 MB over 471 cases (docs/HARDENING.md)
GUARDED_SESSIONS = 20


@pytest.fixture(scope="module")
def served_rope(serve):
    """(demo, url) of the RoPE tab alone, served for the module."""
    with serve(ROPE) as served:
        yield served.demo, served.url


@pytest.fixture(scope="module")
def class_url(serve):
    """URL of the classroom tab alone, served for the module."""
    with serve(tabs=CLASSROOM) as served:
        yield served.url


@dataclass(frozen=True)
class Guarded:
    url: str
    demo: Any
    runtime: Any              # a Runtime of its own, both models loaded
    guard: Any                # bench.fuzz.ModelGuard on its models
    state_sessions: int       # the sessions Gradio keeps on this server


@pytest.fixture(scope="session")
def guarded_app():
    """The whole app served in-process with a Runtime of its own whose models a guard watches
    (bench.fuzz.serve), both models loaded: built once for the session's fuzz, cancel and
    out-of-memory tests (each build and load is ~40 s on a loaded 2-core machine), Gradio
    keeping GUARDED_SESSIONS sessions."""
    import app
    from bench import fuzz

    kept = app.WEB
    app.WEB = dataclasses.replace(kept, state_sessions=GUARDED_SESSIONS)
    try:
        url, demo, runtime, guard = fuzz.serve()
    finally:
        app.WEB = kept
    try:
        for name in runtime.names():
            runtime.get(name)
        yield Guarded(url, demo, runtime, guard, state_sessions=GUARDED_SESSIONS)
    finally:
        demo.close()


@pytest.fixture
def guarded(guarded_app):
    """guarded_app for one test: its guard let go and its own hook back, before and after (a
    test may replace the hook, test_memory_ceiling; a failed fuzz may leave it refusing)."""
    def reset():
        guarded_app.guard.active = False
        vars(guarded_app.guard).pop("hook", None)

    reset()
    yield guarded_app
    reset()
