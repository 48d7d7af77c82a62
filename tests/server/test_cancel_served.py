"""Stop, cancel and a dropped connection end a served run and free the model (the unit tests:
tests/unit/test_cancel.py)."""
from __future__ import annotations


def _served_run(guarded, modes, times=2):
    from bench import cancel
    from explorer.ui.tabs import generate as tab

    handed = []   # what client_alive() gave each /generate handler
    original = tab.client_alive

    def recording():
        alive = original()
        handed.append(alive)
        return alive

    url, runtime = guarded.url, guarded.runtime
    forwards = cancel.Forwards(guarded.guard)
    tab.client_alive = recording
    try:
        runtime.get(runtime.default_name)
        # a stop lands at a step boundary: on a loaded CPU one step of the loop can outlast 1 s,
        # so here the run must have left by the end of the first step that started after the
        # stop, whichever is later (the bench's recorded run keeps the fixed 1 s and 2 s)
        summary = cancel.run(url, forwards, times=times, modes=modes, log=lambda line: None,
                             by_boundary=True)
    finally:
        tab.client_alive = original
        forwards.close()
    return cancel, summary, handed


def test_stop_cancel_and_a_dropped_connection_end_the_run_and_free_the_model(guarded):
    cancel, summary, handed = _served_run(guarded, ("stop", "cancel", "drop"))
    result = summary.as_dict()
    assert not summary.failures, result
    for mode in ("stop", "cancel", "drop"):
        assert result[mode]["times"] == 2
        assert result[mode]["max_extra_tokens"] <= cancel.MAX_EXTRA_TOKENS
        assert result[mode]["worker_not_gone"] == 0 and result[mode]["next_not_started"] == 0
    assert result["workers_end"] == 0 and result["threads_left"] == []
    # every served run read Gradio's event flag (a Gradio whose queue changed shape would hand
    # the constant fallback, and a dropped client would again be noticed a message late)
    from explorer.web import gradio_context
    assert handed and all(alive is not gradio_context.always_alive for alive in handed)
