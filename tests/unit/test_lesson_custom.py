"""A teacher's own lesson (explorer/lessons/custom.py, explorer/ui/page/lesson_links.py): the file
and the link round-trip, every refusal of a hostile file is a clear sentence in both languages,
and the panel shows a teacher's text as text."""
from __future__ import annotations

import json
import zlib
import base64
from types import SimpleNamespace

import gradio as gr
import pytest

from explorer.inputs import InputError
from explorer.lessons import custom
from explorer.locales import LANGUAGES, text
from explorer.ui.page import lessons as panel
from explorer.ui.page import views
from explorer.ui.page.lesson_links import (MAX_LESSON_LINK, lesson_link, lesson_of, read_lesson_link,
                                           refusal_text, step_link, step_reader)
from explorer.ui.page.views import View, Views

CONFIG = SimpleNamespace(n_layers=4)


def _views() -> Views:
    with gr.Blocks():
        max_new = gr.Slider(1, 512, value=48, step=1)
        policy = gr.Radio(["full", "window"], value="full")
        prompt = gr.Textbox("hello", max_length=2000)
        check = gr.Checkbox(True)
        layer = gr.Slider(0, 29, value=2, step=1)
    registry = Views()
    registry.add(View("generate.run", "generate", "section-run",
                      (views.control("max_new", max_new), views.control("policy", policy),
                       views.control("prompt", prompt), views.control("check", check))))
    registry.add(View("flash.schedule", "flash", "section-schedule",
                      (views.control("layer", layer, check=lambda v, c: v < c.n_layers),)))
    return registry


VIEWS = _views()
READ = step_reader(VIEWS, ["small", "big"], "small", lambda name: CONFIG)


def _lesson(**change) -> dict:
    lesson = {"format": custom.FORMAT, "version": 1, "title": "Memory — 记忆",
              "steps": [{"view": "generate.run", "model": "small",
                         "settings": {"max_new": 32, "policy": "full", "check": False},
                         "text": "Look at the cache.\n\n看缓存。", "question": "generate.run/per_token"},
                        {"view": "flash.schedule", "model": None, "settings": {"layer": 3},
                         "text": "Tiles.", "question": None}]}
    lesson.update(change)
    return lesson


def _refused(data, key: str) -> InputError:
    with pytest.raises(InputError) as raised:
        custom.check(data, READ)
    assert raised.value.key == f"lesson.builder.err.{key}"
    for lang in LANGUAGES:
        said = refusal_text(raised.value, lang)
        assert said and "{" not in said and "Traceback" not in said
    return raised.value


def test_a_lesson_round_trips_through_its_file_and_its_link():
    checked = custom.check(_lesson(), READ)
    assert checked["steps"][0]["settings"] == {"max_new": 32, "policy": "full", "check": False}
    assert custom.check(custom.parse_file(custom.to_json(checked).encode()), READ) == checked
    assert custom.check(custom.decode(custom.encode(checked)), READ) == checked
    link = lesson_link(checked)
    assert link.startswith("?lesson=custom&step=1&custom=") and len(link) <= MAX_LESSON_LINK
    plan, data = read_lesson_link(link, VIEWS, ["small"], "small", lambda name: CONFIG)
    assert plan.notes == () and plan.lesson == "custom" and plan.step == 0 and data == checked
    plan, data = read_lesson_link(step_link("custom", 1, checked), VIEWS, ["small"], "small",
                                  lambda name: CONFIG)
    assert plan.step == 1 and data == checked


@pytest.mark.parametrize("change, key", [
    ({"steps": []}, "steps"),
    ({"steps": "x"}, "steps"),
    ({"format": "other"}, "format"),
    ({"version": 2}, "format"),
    ({"title": 5}, "title"),
    ({"title": "t" * (custom.MAX_TITLE + 1)}, "title"),
    ({"extra": 1}, "extra"),
    ({"steps": [1]}, "step_shape"),
])
def test_a_tampered_lesson_is_refused_with_its_reason(change, key):
    _refused(_lesson(**change), key)


@pytest.mark.parametrize("step_change, key", [
    ({"view": "nope.view"}, "step_link"),
    ({"view": 7}, "step_view"),
    ({"model": "giant"}, "step_link"),
    ({"model": 3}, "step_model"),
    ({"settings": {"max_new": 100000}}, "step_link"),
    ({"settings": {"policy": "<script>"}}, "step_link"),
    ({"settings": {"unknown": 1}}, "step_link"),
    ({"settings": {"max_new": [1]}}, "step_settings"),
    ({"settings": "max_new=3"}, "step_settings"),
    ({"text": 12}, "step_text_type"),
    ({"text": "x" * (custom.MAX_TEXT + 1)}, "step_text"),
    ({"question": "flash.schedule/skipped"}, "step_question"),
    ({"question": "generate.run/made_up"}, "step_question"),
    ({"onclick": "x"}, "step_extra"),
])
def test_a_tampered_step_is_refused_with_its_number(step_change, key):
    lesson = _lesson()
    lesson["steps"][0] = {**lesson["steps"][0], **step_change}
    error = _refused(lesson, key)
    assert "1" in refusal_text(error, "en")


def test_a_layer_past_the_models_layers_is_refused_as_a_link_would_be():
    lesson = _lesson()
    lesson["steps"][1]["settings"] = {"layer": 9}        # CONFIG has 4 layers
    error = _refused(lesson, "step_link")
    assert "layer" in refusal_text(error, "en")


def test_too_many_steps_and_bad_files_are_refused():
    _refused(_lesson(steps=[_lesson()["steps"][1]] * (custom.MAX_STEPS + 1)), "too_many")
    for raw in (b"{not json", b"\xff\xfe", b"[1, NaN]", "null"):
        with pytest.raises(InputError) as raised:
            custom.check(custom.parse_file(raw), READ)
        assert raised.value.key in ("lesson.builder.err.json", "lesson.builder.err.shape")


def test_a_one_megabyte_text_is_refused_by_its_size_before_it_is_parsed():
    lesson = _lesson()
    lesson["steps"][0]["text"] = "x" * (1024 * 1024)
    with pytest.raises(InputError) as raised:
        custom.parse_file(json.dumps(lesson).encode())
    assert raised.value.key == "lesson.builder.err.file_size"
    assert "1.0 MB" in refusal_text(raised.value, "en") and "64 KB" in refusal_text(raised.value, "zh")


def test_a_link_cannot_unpack_into_more_than_a_file_holds():
    bomb = base64.urlsafe_b64encode(zlib.compress(b" " * (10 * 1024 * 1024), 9)).decode().rstrip("=")
    with pytest.raises(InputError) as raised:
        custom.decode(bomb)
    assert raised.value.key == "lesson.builder.err.file_size"
    for blob in ("", "!!", "abc", "a" * 20000, None):
        with pytest.raises(InputError):
            custom.decode(blob)
    plan, data = read_lesson_link("?lesson=custom&step=1&custom=AAAA", VIEWS, ["small"], "small",
                                  lambda name: CONFIG)
    assert data is None and plan.lesson is None
    assert [key for key, _ in plan.notes] == ["link.bad_lesson", "lesson.builder.err.in_link"]
    assert "damaged" in panel.link_note(list(plan.notes), "en")


def test_a_lesson_too_long_for_a_link_is_refused_clearly():
    steps = [{"view": "generate.run", "model": "small", "settings": {"prompt": f"{i} " + "ab" * 990},
              "text": "".join(chr(0x4e00 + (i * 977 + k * 131) % 20000) for k in range(900)),
              "question": None} for i in range(custom.MAX_STEPS)]
    checked = custom.check(_lesson(steps=steps), READ)
    with pytest.raises(InputError) as raised:
        lesson_link(checked)
    assert raised.value.key == "lesson.builder.err.link_long"
    assert "file" in refusal_text(raised.value, "en")


def test_the_panel_shows_a_teachers_text_as_text():
    lesson = _lesson()
    lesson["title"] = "<b>title</b>"
    lesson["steps"][0]["text"] = "<img src=x onerror=alert(1)> **bold** [a](http://x)"
    checked = custom.check(lesson, READ)
    state = {"lesson": "custom", "step": 0, "guess": None, "fields": None, "custom": checked}
    assert lesson_of(state).steps[0].predict.low == 0
    for lang in LANGUAGES:
        progress, look, asks, label = panel.step_texts(state, lang)
        assert asks and "\\<img src\\=x onerror\\=alert\\(1\\)\\>" in look and "\\*\\*bold\\*\\*" in look
        assert "\\<b\\>title\\<\\/b\\>" in progress
        assert text("lesson.qty.generate_run.per_token", lang) in look


def test_a_custom_step_quotes_its_views_quantities_and_compares_the_guess():
    checked = custom.check(_lesson(), READ)
    fields = {"values": {"generate.run/per_token": 9216.0, "generate.run/kib": 300.5},
              "answer": 9216.0, "computed": False}
    state = {"lesson": "custom", "step": 0, "guess": 9000.0, "fields": fields, "custom": checked}
    said = panel.said_text(state, "en")
    assert "9,216" in said and "300" in said and "You guessed **9,000 B**" in said
    assert "9,216" in panel.said_text(state, "zh")


def test_a_custom_steps_reading_names_nothing_without_its_question():
    assert custom.read_step_values("generate.run", "generate.run/per_token", object()) is None
    assert custom.read_step_values("flash.schedule", None, object()) == {"values": {}}


def test_a_reading_records_its_runs_link_and_a_run_with_other_settings_is_not_quoted():
    checked = custom.check(_lesson(), READ)
    state = {"lesson": "custom", "step": 1, "guess": None, "fields": None, "custom": checked}
    link = "?view=flash.schedule&layer=3"
    read, said = panel.observe("flash.schedule", state, object(), "en", None, link)
    assert read["fields"]["run_link"] == link and said.startswith(text("lesson.builder.said_none", "en"))
    other, said = panel.observe("flash.schedule", state, object(), "en", ["lesson.setting"], link)
    assert other["fields"] is None and "other settings" in said
    step = lesson_of(state).steps[1]
    view = VIEWS.get("flash.schedule")
    assert panel.differing(step, view, None, [3]) == [] and panel.differing(step, view, None, [2])
