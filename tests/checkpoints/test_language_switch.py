"""The app's one language switch, tested once for every section that registers a redraw
(explorer/ui/page/shell.py wire_language_redraw): each section is run once in English through the
very handler its button calls, with its controls' default values except that every slider
stands at its minimum (the smallest valid run; sizes live on sliders), falling back to the
defaults if the handler refuses that combination; then its stored result is redrawn in Chinese
and in English. The redraw must not run the model, must speak Chinese
when asked, and must draw the same numbers in both languages."""
from __future__ import annotations

import inspect
import json
import re

import gradio as gr
import pandas as pd
import plotly.graph_objects as go
import pytest

from explorer.ui.tabs import claims as claims_tab
from explorer.ui.page import shell
from tests.unit.test_a11y_alt import check_alternatives

CJK = re.compile(r"[\u4e00-\u9fff]")
FAST_BOARD = "tests.claims_fakes:FAST_REGISTRY"


@pytest.fixture(scope="module")
def built(runtime):
    """(demo, redraws, header language component) of the whole app, its claims board made of
    the fast fake evidence functions (tests/claims_fakes.py): the real board is
    tests/checkpoints/test_claims_real.py's, and this test does not wait for it or for another test to
    have cached it."""
    from bench.serve import build

    captured = {}
    original = shell.wire_language_redraw

    def capture(header, redraws):
        captured["redraws"], captured["lang"] = list(redraws), header.lang
        original(header, redraws)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(shell, "wire_language_redraw", capture)
        demo = build(runtime, env={claims_tab.REGISTRY_ENV: FAST_BOARD})
    return demo, captured["redraws"], captured["lang"]


def _producer(demo, state):
    """The event function that writes `state` (the section's run button); None for a section
    whose result is fixed when the app is built (its state's initial value)."""
    for block_fn in demo.fns.values():
        if any(output is state for output in block_fn.outputs) and block_fn.fn is not None:
            return block_fn
    assert state.value is not None, f"no event writes the state registered for {state}"
    return None


def _value(component, lang_component, smallest: bool):
    if component is lang_component:
        return "en"
    if smallest and isinstance(component, gr.Slider):
        return component.minimum
    return getattr(component, "value", None)


def _run_with_defaults(block_fn, lang_component, state):
    try:
        return _run(block_fn, [_value(c, lang_component, True) for c in block_fn.inputs], state)
    except gr.Error:
        return _run(block_fn, [_value(c, lang_component, False) for c in block_fn.inputs], state)


def _run(block_fn, values, state):
    result = block_fn.fn(*values)
    if inspect.isgenerator(result):
        last = None
        for last in result:
            pass
        result = last
    result = result if isinstance(result, (tuple, list)) else (result,)
    index = next(i for i, output in enumerate(block_fn.outputs) if output is state)
    return result[index]


def _numbers(value):
    """The data a visitor reads off an output, language aside: trace arrays of a figure,
    numeric columns of a table, the numbers in a text."""
    if isinstance(value, go.Figure):
        data = []
        for trace in value.to_plotly_json()["data"]:
            arrays = json.loads(json.dumps({key: trace[key] for key in ("x", "y", "z") if key in trace},
                                           default=lambda array: array.tolist()))
            # category labels are words (token or layer names in the visitor's language)
            data.append({key: array for key, array in arrays.items() if _numeric(array)})
        return data
    if isinstance(value, pd.DataFrame):
        return value.select_dtypes("number").to_numpy().tolist()
    if isinstance(value, str):
        return re.findall(r"\d+(?:\.\d+)?", value)
    return None


def _numeric(value) -> bool:
    if isinstance(value, list):
        return all(_numeric(item) for item in value)
    return value is None or isinstance(value, (int, float))


def _words(value) -> str:
    if isinstance(value, go.Figure):
        return value.to_json()
    if isinstance(value, pd.DataFrame):
        return " ".join(map(str, value.columns))
    return value if isinstance(value, str) else ""


@pytest.mark.slow
def test_every_section_redraws_in_both_languages_without_a_forward(built, runtime, monkeypatch):
    demo, redraws, lang = built
    assert redraws, "no section registers a language redraw"
    alternatives = 0   # figures with data, each with its text alternative (tests/unit/test_a11y_alt.py)
    for entry in redraws:
        block_fn = _producer(demo, entry.state)
        name = block_fn.name if block_fn else [getattr(o, "elem_id", None) for o in entry.outputs]
        result = _run_with_defaults(block_fn, lang, entry.state) if block_fn else entry.state.value
        assert result is not None, f"{name} stored no result"
        # from here on, any forward pass of a loaded model is an error
        for name in runtime.names():
            if runtime.is_loaded(name):
                # into the instance's own dict, so that undo removes it (setattr would leave the
                # model's bound forward behind as an instance attribute, which a shallow copy
                # such as explorer.moe.routing.routing_view would then call on the original)
                monkeypatch.setitem(vars(runtime.get(name).model), "forward", _no_forward)
        zh = entry.draw(result, "zh")
        en = entry.draw(result, "en")
        zh, en = [v if isinstance(v, (tuple, list)) else (v,) for v in (zh, en)]
        assert len(zh) == len(en) == len(entry.outputs), name
        assert any(CJK.search(_words(v)) for v in zh), f"{name}: nothing in Chinese"
        for z, e in zip(zh, en):
            assert _numbers(z) == _numbers(e) or isinstance(z, str), \
                f"{name}: the numbers differ between languages"
        alternatives += check_alternatives(zh, "zh", name) + check_alternatives(en, "en", name)
        monkeypatch.undo()
    assert alternatives >= 2 * 20, f"only {alternatives} figures with data were drawn"


def _no_forward(*args, **kwargs):
    raise AssertionError("a language switch ran the model")
