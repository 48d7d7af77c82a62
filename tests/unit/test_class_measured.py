"""A class question's measured value (explorer/ui/page/class_peer.py): a step link of our lessons
or of a teacher's own names its step (every other link none); a transfer question's value is
quoted only from a run at the question's settings (the model and every control of its section),
recorded after each run that ended well and forgotten when a run fails or the section's model
or a control changes; a lesson step's only from the panel's reading and a last run at the step's
settings; otherwise the
reveal says, in both languages, that the run had other settings and what to do."""
from __future__ import annotations

from types import SimpleNamespace

import gradio as gr
import pytest

from explorer.lessons import LESSONS, custom, quantities
from explorer.lessons.quantities import Quantity
from explorer.locales import LANGUAGES, text
from explorer.ui.page import class_peer
from explorer.ui.page import lessons as panel
from explorer.ui.page import views
from explorer.ui.page.lesson_links import lesson_link, step_link, step_of_link, step_reader
from explorer.ui.page.views import View, Views
from tests.unit.test_classroom_rooms import store

CONFIG = SimpleNamespace(n_layers=4)
RUNTIME = SimpleNamespace(names=lambda: ["small", "big"], default_name="small",
                          get=lambda name: SimpleNamespace(config=CONFIG))
TOY = Quantity("toy.run/value", "lesson.setting", "B", 0, 1000,
               lambda result: {"value": result["value"]}, "value")


def _views() -> Views:
    with gr.Blocks():
        layer = gr.Slider(0, 29, value=2, step=1)
        layer.label = SimpleNamespace(key="attention.layer")    # as t("attention.layer") gives
        mode = gr.Radio(["full", "window"], value="full")
        other = gr.Slider(1, 9, value=1, step=1)
    registry = Views()
    registry.add(View("toy.run", "toy", "section-toy",
                      (views.control("layer", layer, check=lambda v, c: v < c.n_layers),
                       views.control("mode", mode)), state=gr.State()))
    registry.add(View("toy.other", "toy", "section-other", (views.control("n", other),),
                      state=gr.State()))
    return registry


VIEWS = _views()
TOY_VIEW = VIEWS.get("toy.run")


@pytest.fixture(autouse=True)
def toy_quantity(monkeypatch):
    """The toy view's one quantity, beside the app's: a result {"value": v} reads v."""
    found, none = quantities.registry()
    monkeypatch.setattr(quantities, "registry", lambda: ({**found, TOY.key: TOY}, none))


def _lesson() -> dict:
    read = step_reader(VIEWS, RUNTIME.names(), RUNTIME.default_name, lambda name: CONFIG)
    return custom.check({"format": custom.FORMAT, "version": 1, "title": "Toy",
                         "steps": [{"view": "toy.run", "model": "small", "settings": {"layer": 1},
                                    "text": "Guess.", "question": "toy.run/value"},
                                   {"view": "toy.other", "model": None, "settings": {},
                                    "text": "No question.", "question": None}]}, read)


def _step_of(link):
    return step_of_link(link, VIEWS, RUNTIME.names(), RUNTIME.default_name, lambda name: CONFIG)


def test_a_step_link_of_our_lessons_or_a_teachers_own_names_its_step_and_no_other_does():
    lesson = _lesson()
    assert _step_of("?lesson=kv-cache&step=2") is LESSONS["kv-cache"].steps[1]
    step = _step_of(lesson_link(lesson))
    assert step.view == "toy.run" and step.predict is not None and step.settings == {"layer": 1}
    assert _step_of(step_link(custom.KEY, 1, lesson)).predict is None
    link = lesson_link(lesson)
    for hostile in (None, 12, "", "?view=toy.run&layer=3", link[:-8] + "AAAAAAAA",
                    link.replace("step=1", "step=9"), "?lesson=kv-cache&step=99",
                    "?lesson=nothing&step=1", "?lesson=custom&step=1", link + "&x=" + "y" * 9000,
                    "?lesson=kv-cache&step=2&model=nobody"):
        assert _step_of(hostile) is None, hostile


RESULT = {"value": 17}      # a section's stored result (a dict: held as it is, no weak reference)


def _record(layer, mode="full", model="small", result=RESULT, runs=None):
    return class_peer.record_run(TOY_VIEW, RUNTIME)(runs or {}, result, model, "en", layer, mode)


def _link(runs):
    return runs["toy.run"][0] if runs["toy.run"] else None


def test_a_run_is_recorded_with_its_result_only_when_a_link_can_say_its_settings():
    runs = _record(3)
    assert _link(runs) == "?view=toy.run&model=small&layer=3&mode=full"
    assert runs["toy.run"][1]() is RESULT
    assert _link(_record(3.0)) == "?view=toy.run&model=small&layer=3&mode=full"
    assert _record(3, mode="<b>")["toy.run"] is None            # not one of the choices
    assert _record(3, model="nobody")["toy.run"] is None        # not a model of the app
    assert _record(99)["toy.run"] is None                       # past the slider
    assert _record(3, result=None)["toy.run"] is None           # no result
    assert class_peer.record_run(TOY_VIEW, RUNTIME)("junk", RESULT, "small", "en", 3)["toy.run"] is None
    # a run that left the stored result as it was keeps the record of the run that drew it
    assert _link(_record(2, runs=_record(3))) == "?view=toy.run&model=small&layer=3&mode=full"
    assert _link(_record(2, runs=_record(3), result={"value": 5})).endswith("layer=2&mode=full")
    # a result that takes a weak reference is not kept alive by the record
    import gc
    import weakref

    class Result:
        value = 9
    result = Result()
    runs = _record(3, result=result)
    assert isinstance(runs["toy.run"][1], weakref.ref)
    del result
    gc.collect()
    assert runs["toy.run"][1]() is None


def _class_at_transfer(layer=3):
    """A class at the teacher's step, revealed, then its transfer at `layer` (the handler)."""
    rooms, _ = store()
    code, secret = rooms.create("a")
    teacher = {"role": "teacher", "code": code, "secret": secret}
    link = lesson_link(_lesson())
    rooms.follow(code, secret, link, (0, 1000))
    _, token = rooms.join(code, "ana", session="s-measured")
    rooms.answer(code, token, link, 40)
    rooms.reveal(code, secret, 42.0)
    values = [layer if c is TOY_VIEW.controls[0].component else c.value for c in VIEWS.components()]
    said, pending = class_peer.transfer_handler(VIEWS, RUNTIME)(teacher, "en", "small", *values,
                                                                rooms=rooms)
    assert said == text("classroom.transfer_now", "en") and "toy.run" in pending
    return rooms, teacher, rooms.teacher_view(code, secret)


def _measured(view, runs, result=RESULT, lesson_state=None):
    return class_peer.measured_value(view, lesson_state, {"toy.run": result}, runs, VIEWS, RUNTIME)


def test_a_transfer_from_a_teachers_step_quotes_only_a_run_at_its_settings():
    _, _, view = _class_at_transfer(layer=3)
    assert view["origin"] == lesson_link(_lesson())
    assert view["link"] == "?view=toy.run&model=small&layer=3&mode=full"
    assert _measured(view, _record(3)) == class_peer.Measured(17.0)
    # the run at another layer, mode or model: nothing quoted, what differs named
    for runs, names in ((_record(2), ("attention.layer",)),
                        (_record(3, model="big"), ("shell.model",)),
                        (_record(3, mode="window"), ("lesson.setting",)),
                        (_record(2, model="big"), ("shell.model", "attention.layer"))):
        measured = _measured(view, runs)
        assert measured == class_peer.Measured(None, "classroom.measured_settings", names)
    # the stored result is not the recorded run's (redrawn since: another head, another
    # model; or left by a failed run), no run recorded, a record of another section
    other = {"toy.run": ("?view=toy.other&n=2", lambda: RESULT)}
    for runs, result in ((_record(3), {"value": 17}), ({}, RESULT), ({"toy.run": None}, RESULT),
                         ("junk", RESULT), (other, RESULT), (_record(3), None)):
        assert _measured(view, runs, result).why == "classroom.measured_other"


def test_a_reveal_at_other_settings_says_so_in_both_languages_and_quotes_nothing():
    for lang in LANGUAGES:
        rooms, teacher, _ = _class_at_transfer(layer=3)
        reveal = class_peer.reveal_handler(VIEWS, RUNTIME)
        results = [RESULT, None]
        shown = reveal(teacher, None, lang, _record(2), *results, rooms=rooms)
        view = rooms.teacher_view(teacher["code"], teacher["secret"])
        assert view["histograms"][-1].measured is None
        names = text("attention.layer", lang)
        assert shown[0] == text("classroom.measured_settings", lang, names=names)
        assert "{" not in shown[0]
        # the same class, revealed again after the run at the question's settings, is quoted
        rooms2, teacher2, _ = _class_at_transfer(layer=3)
        assert reveal(teacher2, None, lang, _record(3), *results, rooms=rooms2)[0] == gr.skip()
        view = rooms2.teacher_view(teacher2["code"], teacher2["secret"])
        assert view["histograms"][-1].measured == 17.0


def test_a_lesson_steps_value_is_the_panels_reading_of_a_run_at_the_steps_settings():
    lesson = _lesson()
    step = custom.to_lesson(lesson).steps[0]
    state = {"lesson": "custom", "step": 0, "guess": 40.0, "fields": None, "custom": lesson}
    here = {"origin": None}
    # the panel keeps no reading of a run at other settings (lessons.observe, after
    # lessons.differing): such a run leaves nothing to quote
    other = panel.differing(step, TOY_VIEW, "small", [2, "full"])
    assert other == ["attention.layer"]
    kept, _ = panel.observe("toy.run", state, {"value": 17}, "en", other)
    assert kept["fields"] is None
    assert _measured(here, _record(2), lesson_state=kept).why == "classroom.measured_none"
    # a run at the step's settings: the panel's reading, the same reader's value
    assert panel.differing(step, TOY_VIEW, "small", [1, "window"]) == []   # mode: the step's free
    kept, _ = panel.observe("toy.run", state, {"value": 17}, "en", [])
    assert kept["fields"]["answer"] == 17
    assert _measured(here, _record(1, mode="window"), lesson_state=kept) == class_peer.Measured(17.0)
    # a reading kept from an earlier run, and the last run (ended well) at other settings or
    # none recorded (a failed one): not quoted
    assert _measured(here, _record(2), lesson_state=kept).why == "classroom.measured_settings"
    assert _measured(here, _record(1, model="big"), lesson_state=kept).other == ("shell.model",)
    assert _measured(here, {}, lesson_state=kept).why == "classroom.measured_none"
    assert _measured(here, {"toy.run": None}, lesson_state=kept).why == "classroom.measured_none"


def test_our_lessons_step_quotes_its_panel_reading_after_a_run_at_its_settings():
    step = LESSONS["kv-cache"].steps[1]          # generate.run, max_new 200, policy full, ...
    state = {"lesson": "kv-cache", "step": 1, "fields": {step.predict.answer: 42.0}}
    with gr.Blocks():
        max_new = gr.Slider(1, 512, value=48, step=1)
        policy = gr.Radio(["full", "window"], value="full")
    registry = Views()
    section = registry.add(View("generate.run", "generate", "section-run",
                                (views.control("max_new", max_new), views.control("policy", policy)),
                                state=gr.State()))
    record = class_peer.record_run(section, RUNTIME)

    def measured(runs):
        return class_peer.measured_value({"origin": None}, state, {}, runs, registry, RUNTIME)

    assert measured(record({}, RESULT, "big", "en", 200, "full")) == class_peer.Measured(42.0)
    assert measured(record({}, RESULT, "small", "en", 100, "full")).why == "classroom.measured_settings"
    assert measured({}).why == "classroom.measured_none"
    assert measured(record({}, RESULT, "small", "en", 200, "full")).value == 42.0


def test_the_page_records_each_run_that_ended_well():
    """wire_runs: each run event of a section with a result is followed, on success only, by
    the record (the section's result and link inputs), queued behind the run like the lessons'
    reading."""
    with gr.Blocks() as blocks:
        model = gr.Dropdown(["small", "big"], value="small")
        layer = gr.Slider(0, 9, value=1, step=1)
        button = gr.Button()
        registry = Views()
        view = View("a.one", "t", "a", (views.control("layer", layer),), state=gr.State(), run=button)
        view.link_inputs = [model, gr.State("en"), layer]
        view.event = button.click(lambda: None, None, None)
        registry.add(view)
        registry.add(View("b.two", "t", "b", ()))          # no result: nothing to record
        runs = class_peer.wire_runs(registry, RUNTIME)
    fns = list(blocks.fns.values())
    run = next(f for f in fns if (button._id, "click") in [tuple(t) for t in f.targets])
    after = [f for f in fns if f.trigger_after is not None]
    assert [f.name for f in after] == ["record"] and after[0].trigger_after == run._id
    assert after[0].trigger_only_on_success and after[0].queue
    assert after[0].inputs == [runs, view.state, *view.link_inputs] and after[0].outputs == [runs]
