"""While tokens stream, each chart message of a Generate run redraws one of the charts that grow
with every token, in turn (a page draws a message as one task, and a press or a class's move
waits behind it); the first chart message and every one after decoding draw them all. A run
its class moved off ends with its text, its row and why, and draws no chart."""
from __future__ import annotations

from explorer.generate import request as req

MODEL = "smollm2-135m-instruct"
PROMPT = "Name a colour."


def _sessions(runtime, n):
    from explorer.generate.session import stream_generation

    loaded = runtime.get(MODEL)
    request = req.parse_request(PROMPT, n, compare_no_cache=False, check_full_forward=False)
    ids, chat = req.encode_prompt(loaded.tokenizer, PROMPT)
    return [s.snapshot() for s in stream_generation(loaded.model, loaded.tokenizer, ids, request, chat=chat)]


def _run(tab, runtime, n):
    return list(tab.run_generate(runtime, MODEL, "en", PROMPT, n, 0.0, 0, 1.0, 0, "full", 64, 4,
                                 False, False, []))


def test_streaming_chart_messages_redraw_one_growing_chart_in_turn(runtime, monkeypatch):
    from explorer.generate import figures
    from explorer.ui.tabs import generate as tab

    sessions = _sessions(runtime, 8)
    monkeypatch.setattr(tab, "in_background", lambda *args, **kwargs: iter(sessions))
    monkeypatch.setattr(tab, "CHART_INTERVAL_S", 0.0)    # every message after the first has charts
    drawn = []
    for name in tab.GROWING.values():
        original = getattr(figures, name)
        monkeypatch.setattr(figures, name, lambda session, lang, _n=name, _f=original:
                            drawn.append((_n, session.phase, len(session.records))) or _f(session, lang))
    messages = _run(tab, runtime, 8)
    decoding = [(n, k) for n, phase, k in drawn if phase == "decode"]
    first = decoding[:3]
    assert sorted(n for n, _ in first) == sorted(tab.GROWING.values()) and len({k for _, k in first}) == 1
    later = [n for n, _ in decoding[3:]]
    assert len(later) >= 4 and sorted(later[:3]) == sorted(tab.GROWING.values())   # one at a time,
    assert all(name == later[i % 3] for i, name in enumerate(later))                # in turn
    assert len({k for n, k in decoding[3:]}) == len(later)           # one chart per message
    assert sorted(n for n, phase, _ in drawn if phase == "done") == sorted(tab.GROWING.values())
    # every message still carries all three: the ones not redrawn are the held values, unchanged
    assert all(m[2] is not None and m[3] is not None and m[4] is not None for m in messages[2:])


def test_a_run_its_class_moved_off_ends_with_its_text_alone(runtime, monkeypatch):
    import gradio as gr

    from explorer.ui.tabs import generate as tab
    from explorer.web.stopping import MOVED, StopFlag

    sessions = _sessions(runtime, 4)
    sessions[-1].stopped = "stop"
    flag = StopFlag()
    flag.set(MOVED)
    monkeypatch.setattr(tab, "in_background", lambda *args, **kwargs: iter(sessions))
    monkeypatch.setattr(tab.STOPS, "flag", lambda: flag)
    final = tab.RunOutputs(*_run(tab, runtime, 4)[-1])
    assert final.status.startswith("**Stopped**: the class moved on") and final.text == sessions[-1].text
    skip = gr.skip()
    assert all(getattr(final, name) == skip for name in (*tab.CHARTS, "last_session", "strip"))
    assert final.runs[-1]["new"] == len(sessions[-1].records) and not final.runs[-1]["partial"]
