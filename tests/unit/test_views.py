"""Links to a view (explorer/ui/page/views.py): every value of a link checked on the server, refused
values named in notes and defaulted, links written from a section's settings read back the
same; every view of the built app links and every lesson step's settings are values its view's
controls take."""
from __future__ import annotations

import math
from types import SimpleNamespace

import gradio as gr
import pytest

from explorer.ui.page import views
from explorer.ui.page.views import MAX_PARAMETERS, MAX_QUERY_CHARS, View, Views, link_of, read_link

CONFIG = SimpleNamespace(n_layers=4, n_heads=2)


def _view() -> Views:
    with gr.Blocks():
        layer = gr.Slider(0, 29, value=3, step=1)
        scale = gr.Slider(-5, 10, value=1.0, step=0.1)
        mask = gr.Radio([("causal", "causal"), ("window", "window")], value="causal")
        prompt = gr.Textbox("hello", max_length=50)
        flag = gr.Checkbox(True)
        window = gr.Number(8, precision=0)
    controls = (views.control("layer", layer, check=lambda v, c: v < c.n_layers),
                views.control("scale", scale), views.control("mask", mask),
                views.control("prompt", prompt), views.control("flag", flag),
                views.control("window", window, low=1, high=64))
    registry = Views()
    registry.add(View("t.map", "t", "section-t-map", controls))
    return registry


def _read(query, **kw):
    return read_link(query, _view(), ["small", "big"], "small", lambda name: CONFIG, **kw)


def test_controls_take_kind_and_bounds_from_their_component():
    kinds = {c.name: c for c in _view().get("t.map").controls}
    assert kinds["layer"].kind == "int" and (kinds["layer"].low, kinds["layer"].high) == (0, 29)
    assert kinds["scale"].kind == "float"
    assert kinds["mask"].choices == ("causal", "window")
    assert kinds["prompt"].max_chars == 50
    assert kinds["flag"].kind == "bool"
    with gr.Blocks():
        unbounded = gr.Number(1)
    with pytest.raises(TypeError, match="bounds"):
        views.control("n", unbounded)


def test_a_good_link_gives_its_values():
    plan = _read("?view=t.map&model=big&layer=2&scale=2.5&mask=window&prompt=hi%20there&flag=0"
                 "&window=16&present=1&lang=zh&run=0")
    assert plan.notes == ()
    assert plan.view == "t.map" and plan.model == "big" and plan.present and plan.lang == "zh"
    assert not plan.run
    assert plan.values == {"layer": 2, "scale": 2.5, "mask": "window", "prompt": "hi there",
                           "flag": False, "window": 16}


@pytest.mark.parametrize("name,value", [
    ("layer", "4"),            # past the model's layers (check with its config)
    ("layer", "30"), ("layer", "-1"), ("layer", "1.5"), ("layer", "nan"), ("layer", "1e400"),
    ("layer", "x"), ("scale", "inf"), ("scale", "11"), ("mask", "sinks"), ("mask", ""),
    ("prompt", "x" * 51), ("flag", "yes"), ("window", "0"), ("window", "65"),
    ("window", "9" * 40),
])
def test_a_refused_value_is_named_and_left_to_its_default(name, value):
    plan = _read({"view": "t.map", name: value, "mask": "window"} if name != "mask"
                 else {"view": "t.map", name: value})
    assert name not in plan.values
    assert [key for key, _ in plan.notes] == ["link.bad_value"]
    assert plan.notes[0][1]["name"] == name
    assert len(plan.notes[0][1]["value"]) <= 40        # the note never repeats a long value


def test_unknown_names_view_model_and_lesson_are_noted():
    plan = _read("?view=nope&model=../etc&lesson=zzz&foo=1")
    keys = [key for key, _ in plan.notes]
    assert keys == ["link.bad_model", "link.bad_lesson", "link.bad_view"]
    assert plan.view is None and plan.model is None and plan.lesson is None
    plan = _read("?view=t.map&foo=1&bar=2")
    assert plan.notes[0] == ("link.unknown", {"names": "bar, foo"})


def test_a_link_past_its_bounds_is_not_read_at_all():
    long = "?view=t.map&prompt=" + "a" * MAX_QUERY_CHARS
    assert [k for k, _ in _read(long).notes] == ["link.too_long"] and _read(long).view is None
    many = "&".join(f"p{i}=1" for i in range(MAX_PARAMETERS + 1))
    assert [k for k, _ in _read(many).notes] == ["link.too_long"]


def test_lesson_steps_are_checked_against_the_lesson():
    lessons = {"kv": 3}
    assert _read("?lesson=kv&step=3", lessons=lessons).step == 2
    for bad in ("0", "4", "-1", "x", "1.5"):
        plan = _read(f"?lesson=kv&step={bad}", lessons=lessons)
        assert plan.lesson == "kv" and plan.step == 0
        assert [k for k, _ in plan.notes] == ["link.bad_step"]


def test_link_of_reads_back_the_same_values():
    registry = _view()
    view = registry.get("t.map")
    values = [2, 2.5, "window", "a b&c=d?", False, 16]
    plan = read_link(link_of(view, "big", values), registry, ["small", "big"], "small",
                     lambda name: CONFIG)
    assert plan.notes == () and plan.model == "big"
    assert [plan.values[c.name] for c in view.controls] == values
    # a value a link cannot carry is left out (it opens at its default), never written past a bound
    link = link_of(view, "big", [99, math.nan, "other", "x" * 80, True, 1000])
    assert read_link(link, registry, ["small", "big"], "small", lambda n: CONFIG).values == {"flag": True}


