"""The lesson framework (explorer/lessons, explorer/ui/page/lessons.py) without a browser: a step's
plan, the panel's texts in both languages, a guess refused or compared, the numbers read from a
real run through the claims' criteria, and a result of another section never read."""
from __future__ import annotations

import json
import math
import re

import gradio as gr
import pytest

from explorer.generate.evidence import run_session, prompt_ids
from explorer.generate.session import c3_verdict, c9_verdict
from explorer.lessons import LESSONS, compare, comparison_text, reading
from explorer.lessons import kv_cache
from explorer.locales import LANGUAGES, text
from explorer.ui.page import lessons as panel
from explorer.ui.page.views import label_key


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


def test_a_computed_answer_is_never_called_measured():
    """A formula of the run's numbers (RoPE's 2π/θ, GQA's ratio to MHA) or a rate carried past
    the run's end is "computed from your run", in both languages, never "your run measured"."""
    for lang, measured in (("en", "measured"), ("zh", "运行测得")):
        for guess in (40, 45, 50):
            said = comparison_text(compare(guess, 45), "KiB", lang, computed=True)
            assert measured not in said and "45" in said
            assert ("computed from your run" if lang == "en" else "计算得到") in said
        assert measured in comparison_text(compare(40, 45), "KiB", lang)
    assert LESSONS["rope"].steps[0].predict.computed
    assert LESSONS["gqa-mla"].steps[1].predict.computed
    assert not LESSONS["kv-cache"].steps[1].predict.computed   # its reading decides


@pytest.mark.parametrize("guess", [None, "12", math.nan, math.inf, -1, 2e7, True])
def test_a_guess_outside_the_steps_bounds_runs_nothing(guess):
    state = {"lesson": "kv-cache", "step": 1, "guess": None, "fields": None}
    new_state, said, command = panel.check_guess(state, guess, "en", views=None)
    assert new_state == gr.skip() and command == gr.skip()     # no state change, no run
    assert "between" in said


def test_a_guess_runs_the_step_and_is_kept(full_page):
    registry = full_page.views
    state = {"lesson": "kv-cache", "step": 1, "guess": None, "fields": None}
    new_state, said, command = panel.check_guess(state, 500, "en", registry)
    assert new_state["guess"] == 500.0 and new_state["fields"] is None
    command = json.loads(command)
    assert command["run"] == "gen-start" and command["target"].startswith("generate/")
    assert said == text("lesson.running", "en")


def test_go_sets_the_steps_controls_and_nothing_else(full_page):
    registry = full_page.views
    components = registry.components()
    out = panel.go("kv-cache", 2, "zh", "smollm2-135m-instruct", registry)
    assert len(out) == 10 + 1 + len(components) + 1
    state = out[0]
    assert state == {"lesson": "kv-cache", "step": 2, "guess": None, "fields": None, "lang": "zh",
                     "run": "generate.start"}
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
    # a run that never reached 200 tokens: the measured bytes per token times 200, computed
    step = LESSONS["kv-cache"].steps[1]
    at = reading(step, full_run)
    assert at["computed"] is True and at["answer"] == pytest.approx(fields["per_token"] * 200 / 1024)
    for lang, measured in (("en", "your run measured"), ("zh", "你的运行测得")):
        said = panel.said_text({"lesson": "kv-cache", "step": 1, "guess": 40, "fields": at}, lang)
        assert ("is computed, not measured" if lang == "en" else "是计算得到的") in said
        assert measured not in said
        assert text("lesson.kv.s2.said", lang, **at) not in said
    # what the browser's walk (in English, tests/browser/test_browser_lessons.py) reads on the
    # page, quoted here in both languages from the same readings
    for lang in LANGUAGES:
        first = panel.said_text({"lesson": "kv-cache", "step": 0, "guess": None, "fields": fields}, lang)
        assert str(fields["per_token"]) in first, first
        second = panel.said_text({"lesson": "kv-cache", "step": 1, "guess": 4000, "fields": at}, lang)
        assert "4000" in second or "4,000" in second
        assert f"{200 * fields['per_token'] / 1024:.1f}" in second and ("Why:" if lang == "en" else "原因") in second


def test_the_kv_why_gives_a_layers_bytes_and_all_layers_total(full_run):
    """Each token adds 2 × H_kv × d × bytes to every layer (1,536 B for SmolLM2), the per-token
    figure being that times the layers (46,080 B): the why gives both, each where it belongs."""
    at = reading(LESSONS["kv-cache"].steps[1], full_run)
    config = full_run.config
    assert at["per_layer"] == 2 * config.n_kv_heads * config.head_dim * full_run.element_bytes
    assert at["per_layer"] * config.n_layers == at["per_token"]
    last = full_run.records[-1]
    assert all(b == at["per_layer"] * last.context for b in last.cache_bytes)   # measured, every layer
    en = text("lesson.kv.s2.why", "en", **at)
    assert f"adds {at['per_layer']} B to each of the {config.n_layers} layers" in en
    assert f"{at['per_token']} B over all {config.n_layers} layers" in en
    assert f"same {at['per_token']} B in every layer" not in en
    zh = text("lesson.kv.s2.why", "zh", **at)
    assert f"每一层增加 {at['per_layer']} B" in zh and f"合计 {at['per_token']} B" in zh


def test_a_run_that_reached_the_steps_length_is_read_there_and_measured(runtime):
    loaded = runtime.get(runtime.default_name)
    ids = prompt_ids(loaded)
    run = run_session(loaded, ids, max_new_tokens=3, compare_no_cache=False, check_full_forward=False)
    middle = run.records[-2].context
    step = LESSONS["kv-cache"].steps[1]
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(kv_cache, "PREDICT_TOKENS", middle)
        at = reading(step, run)
    assert at["computed"] is False and at["answer"] == sum(run.records[-2].cache_bytes) / 1024
    said = panel.said_text({"lesson": "kv-cache", "step": 1, "guess": 40, "fields": at}, "en")
    assert "read at that very step" in said and "your run measured" in said


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
    for lang in LANGUAGES:
        third = panel.said_text({"lesson": "kv-cache", "step": 2, "guess": None, "fields": fields}, lang)
        assert str(fields["held"]) in third and "✓" in third and text("lesson.done", lang)[:3] in third
        assert bool(re.search(r"[\u4e00-\u9fff]", third)) == (lang == "zh"), third


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


def test_the_waiting_line_names_the_button_the_page_shows(full_page):
    """Before a run the panel names the button to press, the same one in both languages: the
    step's section's own run button (the page presses it), or the panel's "Run and compare" on a
    predict step; each name is the text that button shows in that language."""
    registry = full_page.views
    for key, lesson in LESSONS.items():
        for index, step in enumerate(lesson.steps):
            view = registry.get(step.view)
            button = "lesson.check" if step.predict else label_key(view.run.value)
            assert button, (key, step.view)
            for lang in LANGUAGES:
                said = panel.go(key, index, lang, None, registry)[6]
                assert f"**{text(button, lang)}**" in said, (key, index, lang, said)
    assert label_key(registry.get("generate.run").run.value) == "generate.start"


def test_a_run_with_other_settings_than_the_steps_is_not_quoted(full_page, full_run):
    """The panel quotes a run only when it had the step's model and settings: one with another
    (a slider moved, another model) is named as such and none of its numbers is shown."""
    registry = full_page.views
    view = registry.get("generate.run")
    step = LESSONS["kv-cache"].steps[0]
    values = [step.settings.get(c.name, c.default) for c in view.controls]
    assert panel.differing(step, view, "any-model", values) == []       # the step names no model
    sent = [float(v) if isinstance(v, int) and not isinstance(v, bool) else v for v in values]
    assert panel.differing(step, view, None, sent) == []                # a slider's 32.0 is 32
    moved = [33 if c.name == "max_new" else v for c, v in zip(view.controls, values)]
    assert panel.differing(step, view, None, moved) == ["generate.max_new"]
    lg = LESSONS["windows-depth"].steps[2]
    assert panel.differing(lg, registry.get("attention.lg"), "smollm2-135m-instruct", []) == ["shell.model"]
    assert panel.differing(lg, registry.get("attention.lg"), lg.model, []) == []
    # the run event's follow-up: the link, and the panel's reading or the line naming the change
    state = {"lesson": "kv-cache", "step": 0, "guess": None, "fields": None}
    after = panel._after_run(view)
    link, read, said = after("smollm2-135m-instruct", "en", *values, state, full_run, "en")
    assert "max_new=32" in link and read["fields"] is not None and read["other"] is None
    for lang in LANGUAGES:
        link, other, said = after("smollm2-135m-instruct", lang, *moved, read, full_run, lang)
        assert other["fields"] is None and other["other"] == ["generate.max_new"]
        assert text("generate.max_new", lang) in said
        assert said == panel.said_text(other, lang)                    # redrawn the same way
        assert f"{full_run.records[-1].context}" not in said
    _, again, _ = after("smollm2-135m-instruct", "en", *values, other, full_run, "en")
    assert again["fields"] == read["fields"]                             # the step's settings: read
    # a guess after such a run: the panel says the step runs, not the last run's settings
    guessing = {"lesson": "kv-cache", "step": 1, "guess": None, "fields": None,
                "other": ["generate.max_new"]}
    assert text("generate.max_new", "en") in panel.said_text(guessing, "en")
    new_state, said, _ = panel.check_guess(guessing, 500, "en", registry)
    assert new_state["other"] is None and said == text("lesson.running", "en")
