"""Gradio's internals, touched in one module (explorer/web/gradio_patches.py): written for the
version requirements.txt pins, and left alone (one log line) under another; a session the
served app really creates is the lean one, which answers what Gradio's eager SessionState
would without building every component's config per session."""
from __future__ import annotations

import logging
import re
import sys
import time

import gradio as gr
import pytest

import app
from explorer.web import gradio_patches
from tests.conftest import ROOT


@pytest.fixture(scope="module")
def demo(full_app):
    return full_app


def _classes():
    from gradio import state_holder

    lean = state_holder.SessionState
    assert getattr(lean, "_explorer_lean", False), "build_app did not install the lean sessions"
    return lean.__mro__[1], lean


def _touch(session, demo):
    """What events do to a session: write a State, a component's new value, a prop update."""
    state = next(b for b in demo.blocks.values() if isinstance(b, gr.State))
    text = next(b for b in demo.blocks.values() if isinstance(b, gr.Textbox))
    markdown = next(b for b in demo.blocks.values() if isinstance(b, gr.Markdown))
    session[state._id] = [{"run": 1}]
    session._update_value_in_config(text._id, "typed by the visitor")
    updated = markdown.__class__(**{**markdown.constructor_args, "visible": False, "render": False})
    session[markdown._id] = updated
    session._update_config(markdown._id)
    session._update_value_in_config(markdown._id, "**new**")
    return state, text, markdown


def test_lean_sessions_answer_what_gradios_own_would(demo):
    eager_class, lean_class = _classes()
    eager, lean = eager_class(demo), lean_class(demo)
    assert list(lean.components) == list(eager.components)   # every block, same configs
    state, text, markdown = _touch(eager, demo)
    _touch(lean, demo)
    assert lean[state._id] == eager[state._id] == [{"run": 1}]
    by_id = {c["id"]: c for c in lean.components}
    assert by_id[text._id]["props"]["value"] == "typed by the visitor"
    assert by_id[markdown._id]["props"]["value"] == "**new**"
    assert by_id[markdown._id]["props"]["visible"] is False
    assert list(lean.components) == list(eager.components)
    assert [s[:2] for s in lean.state_components] == [s[:2] for s in eager.state_components]


def test_a_new_session_costs_a_small_part_of_gradios_own(demo):
    eager_class, lean_class = _classes()

    def best(make) -> float:
        times = []
        for _ in range(5):
            t0 = time.perf_counter()
            make(demo)
            times.append(time.perf_counter() - t0)
        return min(times)

    eager_s, lean_s = best(eager_class), best(lean_class)
    # eager builds one config per block (hundreds); lean none until asked
    assert lean_s * 20 < eager_s, (lean_s, eager_s)


def test_install_is_idempotent_and_refuses_an_unknown_shape(monkeypatch):
    from gradio import state_holder

    assert gradio_patches.lean_sessions() and gradio_patches.lean_sessions()
    assert not getattr(state_holder.SessionState.__mro__[1], "_explorer_lean", False)

    class Unknown:   # a SessionState without the methods the lean one overrides
        pass

    monkeypatch.setattr(state_holder, "SessionState", Unknown)
    assert gradio_patches.lean_sessions() is False and state_holder.SessionState is Unknown


def test_the_queue_polls_for_waiting_events_every_10_ms_not_every_1():
    """Gradio's queue loop sleeps `sleep_when_free` between looks at its queues (1 ms on
    Linux): the app sets 10 ms (gradio_patches.poll_queue_less), never less than Gradio's own, and
    leaves a queue of another shape alone."""
    import gradio as gr

    with gr.Blocks() as demo:
        gr.Button("x").click(lambda: None)
    demo.queue()
    assert demo._queue.sleep_when_free < gradio_patches.QUEUE_POLL_S   # Gradio's own default
    assert gradio_patches.poll_queue_less(demo)
    assert demo._queue.sleep_when_free == gradio_patches.QUEUE_POLL_S == 0.01
    demo._queue.sleep_when_free = 0.05
    assert gradio_patches.poll_queue_less(demo) and demo._queue.sleep_when_free == 0.05

    class Other:
        _queue = object()
    assert gradio_patches.poll_queue_less(Other()) is False


def test_the_app_polls_its_queue_every_10_ms(runtime):
    import app

    demo = app.build_app(runtime, ("explorer.ui.tabs.about",))
    assert demo._queue.sleep_when_free == gradio_patches.QUEUE_POLL_S


def test_the_patches_are_for_the_version_requirements_txt_pins():
    pinned = re.search(r"^gradio==([\w.]+)", (ROOT / "requirements.txt").read_text(), re.M)
    assert pinned and pinned.group(1) == gradio_patches.GRADIO_VERSION == gr.__version__
    assert gradio_patches.version_problem() is None


def test_a_session_the_served_app_creates_is_the_lean_one(runtime, serve):
    """Through a real server and a gradio_client call, as a visitor's page does: the session
    Gradio made for it is a LeanSessionState, with every instance attribute Gradio's own
    SessionState sets (a Gradio that added one would leave it missing here)."""
    from gradio_client import Client

    with serve(("explorer.ui.tabs.about",)) as served:
        demo, url = served.demo, served.url
        Client(url, verbose=False).predict(runtime.default_name, "en", api_name="/header_status")
        sessions = list(demo.state_holder.session_data.values())
        assert sessions, "the call made no session"
        for session in sessions:
            assert getattr(type(session), "_explorer_lean", False), type(session)
            eager = type(session).__mro__[1](demo)
            missing = [name for name in vars(eager) if not hasattr(session, name)]
            assert not missing, missing


def test_another_gradio_version_keeps_gradios_own_behaviour_with_one_log_line(runtime, monkeypatch,
                                                                             caplog):
    from gradio import state_holder

    eager = state_holder.SessionState
    eager = eager.__mro__[1] if getattr(eager, "_explorer_lean", False) else eager
    monkeypatch.setattr(state_holder, "SessionState", eager)
    classes = (gr.Dropdown, gr.Radio, gr.CheckboxGroup, gr.Number)
    own = {cls: getattr(cls.preprocess, "original", cls.preprocess) for cls in classes}
    for cls, preprocess in own.items():
        monkeypatch.setattr(cls, "preprocess", preprocess)
    monkeypatch.delitem(sys.modules, "matplotlib", raising=False)
    monkeypatch.setattr(gr, "__version__", "5.0.0")
    with caplog.at_level(logging.INFO, logger=gradio_patches.__name__):
        demo = app.build_app(runtime, ("explorer.ui.tabs.about",))
    records = [r for r in caplog.records if r.name == gradio_patches.__name__]
    assert len(records) == 1 and records[0].levelno == logging.WARNING
    assert "5.0.0" in records[0].getMessage() and gradio_patches.GRADIO_VERSION in records[0].getMessage()
    assert state_holder.SessionState is eager
    assert all(cls.preprocess is own[cls] for cls in classes)
    assert demo._queue.sleep_when_free < gradio_patches.QUEUE_POLL_S   # Gradio's own 1 ms
    assert "matplotlib" not in sys.modules
    # and with the pinned version, the same build patches them all
    monkeypatch.setattr(gr, "__version__", gradio_patches.GRADIO_VERSION)
    assert all(gradio_patches.apply(demo).values())
    assert getattr(state_holder.SessionState, "_explorer_lean", False)
    assert all(getattr(cls.preprocess, "original", None) is own[cls] for cls in classes)


def test_a_patch_whose_attribute_is_missing_leaves_gradio_alone_with_one_log_line(caplog):
    class NoPreprocess:
        pass

    with caplog.at_level(logging.WARNING, logger=gradio_patches.__name__):
        assert gradio_patches.short_choice_errors((NoPreprocess,), gr.Error) is False
        assert gradio_patches.short_number_errors(NoPreprocess, gr.Error) is False
        assert gradio_patches.wrap_events(object(), ("model",), lambda fn, limit: fn) == 0
    assert len(caplog.records) == 3 and not hasattr(NoPreprocess, "preprocess")


def test_sweep_drops_id_sets_no_stream_can_read():
    class Queue:
        pending_messages_per_session = {"alive": object(), "busy": object()}
        event_ids_to_events = {"e-running": object()}
        pending_event_ids_session = {"alive": set(), "busy": {"e-running"}, "evicted": {"e-done"},
                                     "evicted-running": {"e-running"}}

    queue = Queue()
    assert gradio_patches.sweep_event_ids(queue) == 2
    assert set(queue.pending_event_ids_session) == {"busy", "evicted-running"}
    assert gradio_patches.sweep_event_ids(object()) == 0      # another shape: left alone


def test_the_served_queue_forgets_finished_sessions(runtime, serve, monkeypatch):
    """Gradio keeps an (empty) id set for every session that ever queued an event; through a
    real server, 12 visitors' calls leave 12, and the next event after SWEEP_S sweeps them."""
    from gradio_client import Client

    with serve(("explorer.ui.tabs.about",)) as served:
        queue = served.demo._queue
        for _ in range(12):
            client = Client(served.url, verbose=False)
            client.predict(runtime.default_name, "en", api_name="/header_status")
            client.close()
        left = dict(queue.pending_event_ids_session)
        assert len(left) >= 12 and not any(left.values()), left      # Gradio's own: never removed
        monkeypatch.setattr(gradio_patches, "SWEEP_S", 0.0)
        Client(served.url, verbose=False).predict(runtime.default_name, "en", api_name="/header_status")
        assert len(queue.pending_event_ids_session) <= 1, queue.pending_event_ids_session
