"""The lesson framework (explorer/lessons, explorer/ui/lessons.py) without a browser: a step's
plan, the panel's texts in both languages, a guess refused or compared, the numbers read from a
real run through the claims' criteria, and a result of another section never read."""
from __future__ import annotations

import json
import math

import gradio as gr
import pytest

from explorer.generate.evidence import run_session, prompt_ids
from explorer.generate.session import c3_verdict, c9_verdict
from explorer.lessons import LESSONS, compare, comparison_text, reading
from explorer.lessons import kv_cache
from explorer.locales import LANGUAGES, text
from explorer.ui import lessons as panel


def test_every_lesson_has_its_texts_in_both_languages():
    assert LESSONS, "no lesson found"
    orders = [lesson.order for lesson in LESSONS.values()]
    assert orders == sorted(orders)
    for lesson in LESSONS.values():
        for lang in LANGUAGES:
            assert text(lesson.title, lang) and text(lesson.summary, lang)
            for index, step in enumerate(lesson.steps):
                state = {"lesson": lesson.key, "step": index, "guess": None, "fields": None}
                progress, look, asks, label = panel.step_texts(state, lang)
                assert f"{index + 1}" in progress and look
                assert asks == (step.predict is not None)


def test_the_comparison_says_how_far_off_and_in_which_direction():
    en = comparison_text(compare(40, 45), "KiB", "en")
    assert "40 KiB" in en and "45 KiB" in en and "5 KiB more" in en and "0.889×" in en
    assert "less" in comparison_text(compare(50, 45), "KiB", "en")
    assert "5%" in comparison_text(compare(44, 45), "KiB", "en")
    zh = comparison_text(compare(40, 45), "KiB", "zh")
    assert "多了" in zh and "45 KiB" in zh
    assert compare(3, 0).ratio is None and comparison_text(compare(3, 0), "%", "en")


@pytest.mark.parametrize("guess", [None, "12", math.nan, math.inf, -1, 2e7, True])
def test_a_guess_outside_the_steps_bounds_runs_nothing(guess):
    state = {"lesson": "kv-cache", "step": 1, "guess": None, "fields": None}
    new_state, said, command = panel.check_guess(state, guess, "en", views=None)
    assert new_state == gr.skip() and command == gr.skip()     # no state change, no run
    assert "between" in said


def test_a_guess_runs_the_step_and_is_kept(full_app):
    registry = full_app.explorer_views
    state = {"lesson": "kv-cache", "step": 1, "guess": None, "fields": None}
    new_state, said, command = panel.check_guess(state, 500, "en", registry)
    assert new_state["guess"] == 500.0 and new_state["fields"] is None
    command = json.loads(command)
    assert command["run"] == "gen-start" and command["target"].startswith("generate/")
    assert said == text("lesson.running", "en")


def test_go_sets_the_steps_controls_and_nothing_else(full_app):
    registry = full_app.explorer_views
    components = registry.components()
    out = panel.go("kv-cache", 2, "zh", "smollm2-135m-instruct", registry)
    assert len(out) == 10 + 1 + len(components) + 1
    state = out[0]
    assert state == {"lesson": "kv-cache", "step": 2, "guess": None, "fields": None, "lang": "zh"}
    view = registry.get("generate.run")
    by_id = {id(c): value for c, value in zip(components, out[11:-1])}
    for control in view.controls:
        value = by_id[id(control.component)]
        if control.name in LESSONS["kv-cache"].steps[2].settings:
            assert value["value"] == LESSONS["kv-cache"].steps[2].settings[control.name]
    others = [v for c, v in zip(components, out[11:-1])
              if all(c is not k.component for k in view.controls)]
    assert others and all(v == gr.skip() for v in others)
    assert "第 3 步" in out[2]
    # out of range or unknown: the panel closes, nothing is set
    assert panel.go("kv-cache", 3, "en", None, registry)[0] is None
    assert panel.go("../x", 0, "en", None, registry)[0] is None


@pytest.fixture(scope="module")
def full_run(runtime):
    loaded = runtime.get(runtime.default_name)
    return run_session(loaded, prompt_ids(loaded), max_new_tokens=6, compare_no_cache=False,
                       check_full_forward=True)


def test_the_kv_lesson_reads_the_run_through_c3(full_run):
    fields = reading(LESSONS["kv-cache"].steps[0], full_run)
    last = full_run.records[-1]
    assert fields["tokens"] == last.context
    assert fields["per_token"] * last.context == sum(last.cache_bytes)
    assert fields["formula"] == ("✓" if c3_verdict(full_run).used_equal else "✗") == "✓"
    said = panel.said_text({"lesson": "kv-cache", "step": 0, "guess": None, "fields": fields}, "en")
    assert f"{fields['kib']:.1f} KiB" in said and str(fields["per_token"]) in said
    # a run that never reached 200 tokens: the measured bytes per token times 200
    at = reading(LESSONS["kv-cache"].steps[1], full_run)
    assert at["reached"] == "✗" and at["answer"] == pytest.approx(fields["per_token"] * 200 / 1024)


def test_the_window_step_reads_c9_and_refuses_a_run_without_a_window(runtime, full_run):
    assert reading(LESSONS["kv-cache"].steps[2], full_run) is None
    loaded = runtime.get(runtime.default_name)
    windowed = run_session(loaded, prompt_ids(loaded), max_new_tokens=4, policy="window",
                           window=8, compare_no_cache=False, check_full_forward=True)
    fields = reading(LESSONS["kv-cache"].steps[2], windowed)
    verdict = c9_verdict(windowed)
    assert fields["cap"] == verdict.cap == 8 and fields["held"] == 8
    assert fields["verdict"] == "✓"
    assert fields["kib"] < fields["full_kib"]


def test_observe_reads_only_its_own_views_result(full_run):
    state = {"lesson": "kv-cache", "step": 0, "guess": None, "fields": None}
    assert panel.observe("attention.map", state, full_run, "en") == (gr.skip(), gr.skip())
    assert panel.observe("generate.run", None, full_run, "en") == (gr.skip(), gr.skip())
    assert panel.observe("generate.run", state, "not a session", "en") == (gr.skip(), gr.skip())
    new_state, said = panel.observe("generate.run", state, full_run, "zh")
    assert new_state["fields"]["tokens"] == full_run.records[-1].context and "字节" in said


def test_a_language_change_redraws_only_a_panel_in_another_language(full_run):
    """A link's language change may be handled after the step's run was read: a panel already
    in that language keeps its reading; one in the other language is redrawn and says so."""
    state = {"lesson": "kv-cache", "step": 0, "guess": None, "fields": None}
    opened = panel.panel_values(state, "zh")[0]
    assert opened["lang"] == "zh"
    choices, *rest = panel.redraw(opened, "zh")
    assert rest == [gr.skip()] * 4
    assert [label for label, _ in choices["choices"]] == [label for label, _ in panel.lesson_choices("zh")]
    read, said = panel.observe("generate.run", opened, full_run, "zh")
    assert read["lang"] == "zh" and "字节" in said
    _, progress, look, said_en, moved = panel.redraw(read, "en")
    assert moved["lang"] == "en" and moved["fields"] == read["fields"]
    assert "bytes per token" in said_en and text("lesson.kv.s1.look", "en")[:12] in look
    assert panel.redraw(None, "en")[1:] == [gr.skip()] * 4
