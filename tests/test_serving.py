"""Gradio's per-session bookkeeping made lazy (explorer/ui/serving.py): the same answers as
Gradio's eager SessionState, without building every component's config per session."""
from __future__ import annotations

import time

import gradio as gr
import pytest

import app
from explorer.ui import serving


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

    assert serving.install() and serving.install()
    assert not getattr(state_holder.SessionState.__mro__[1], "_explorer_lean", False)

    class Unknown:   # a SessionState without the methods the lean one overrides
        pass

    monkeypatch.setattr(state_holder, "SessionState", Unknown)
    assert serving.install() is False and state_holder.SessionState is Unknown


def test_the_queue_polls_for_waiting_events_every_10_ms_not_every_1():
    """Gradio's queue loop sleeps `sleep_when_free` between looks at its queues (1 ms on
    Linux): the app sets 10 ms (serving.poll_queue_less), never less than Gradio's own, and
    leaves a queue of another shape alone."""
    import gradio as gr

    with gr.Blocks() as demo:
        gr.Button("x").click(lambda: None)
    demo.queue()
    assert demo._queue.sleep_when_free < serving.QUEUE_POLL_S   # Gradio's own default
    assert serving.poll_queue_less(demo)
    assert demo._queue.sleep_when_free == serving.QUEUE_POLL_S == 0.01
    demo._queue.sleep_when_free = 0.05
    assert serving.poll_queue_less(demo) and demo._queue.sleep_when_free == 0.05

    class Other:
        _queue = object()
    assert serving.poll_queue_less(Other()) is False


def test_the_app_polls_its_queue_every_10_ms(runtime):
    import app

    demo = app.build_app(runtime, ("explorer.ui.about",))
    assert demo._queue.sleep_when_free == serving.QUEUE_POLL_S
