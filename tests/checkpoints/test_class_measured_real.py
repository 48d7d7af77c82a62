"""A transfer question's measured value against the real app (its views, the RoPE frequencies
section run for real on the default model): a class at a step of a teacher's own lesson, a
transfer at another context length; the teacher's run at the transfer's setting is quoted at
the reveal and equals that run's reading; a run at another setting afterwards is not quoted, and
the reveal says so. The page records each run that ended well (its wiring is checked too)."""
from __future__ import annotations

import json

import gradio as gr
import pytest

from explorer.classroom.rooms import Rooms
from explorer.lessons import custom, reading
from explorer.locales import text
from explorer.rope import frequencies as frequencies_experiment
from explorer.ui.page import class_peer
from explorer.ui.page import lessons as panel
from explorer.ui.page.class_teacher import publish
from explorer.ui.page.lesson_links import lesson_link, step_reader
from explorer.ui.tabs.rope import DEFAULT_BASES, frequencies

STEP_CONTEXT, TRANSFER_CONTEXT, LATER_CONTEXT = 8192, 512, 2048


@pytest.fixture(scope="module")
def page(full_page, runtime):
    """(views, the default model's name, a run of rope.freq at settings -> its stored result)."""
    name = runtime.default_name
    loaded = runtime.get(name)
    bases = frequencies_experiment.model_bases(loaded.config, getattr(loaded.spec, "title", name))

    def run(settings: dict):
        return frequencies("en", settings["bases"], loaded.config.head_dim, settings["context"],
                           bases)[-1]
    return full_page.views, name, run


def _lesson(views, runtime) -> dict:
    read = step_reader(views, runtime.names(), runtime.default_name,
                       lambda name: runtime.get(name).config)
    return custom.check({"format": custom.FORMAT, "version": 1, "title": "Wavelengths",
                         "steps": [{"view": "rope.freq", "model": runtime.default_name,
                                    "settings": {"context": STEP_CONTEXT},
                                    "text": "How many pairs never turn once within the context?",
                                    "question": "rope.freq/never"}]}, read)


def _values(views, context):
    """views.components()'s values of a page whose RoPE frequencies section is at `context`."""
    box = views.get("rope.freq").control("context").component
    return [context if c is box else c.value for c in views.components()]


def _class_at_transfer(page, runtime):
    """A class at the lesson's step, its run read and revealed, then the transfer at
    TRANSFER_CONTEXT: (rooms, teacher, the transfer's settings, record, reveal)."""
    views, name, run = page
    section = views.get("rope.freq")
    record = class_peer.record_run(section, runtime)
    reveal = class_peer.reveal_handler(views, runtime)
    lesson = _lesson(views, runtime)
    link = lesson_link(lesson)
    rooms = Rooms()
    code, secret = rooms.create("teacher")
    teacher = {"role": "teacher", "code": code, "secret": secret}
    publish(teacher, "http://host/" + link, None, views, runtime, rooms=rooms)
    _, token = rooms.join(code, "ana", session="s-measured", address="a")
    rooms.answer(code, token, link, 10)
    # the teacher's page at the step: its settings, its run, the panel's reading
    state = panel.restore(link, "en", name, views, runtime.names(), runtime.default_name,
                          lambda n: runtime.get(n).config)[3]
    step = custom.to_lesson(lesson).steps[0]
    at_step = {c.name: step.settings.get(c.name, c.default) for c in section.controls}
    result = run(at_step)
    other = panel.differing(step, section, name, list(at_step.values()))
    state, _ = panel.observe("rope.freq", state, result, "en", other)
    runs = record({}, result, name, "en", *at_step.values())
    reveal(teacher, state, "en", runs, *_results(views, result), rooms=rooms)
    first = rooms.teacher_view(code, secret)["histograms"][-1].measured
    assert first == reading(step, result)["answer"] == state["fields"]["answer"]
    # the transfer at another context length: the class follows it, the page runs its link
    said, pending = class_peer.transfer_handler(views, runtime)(
        teacher, "en", name, *_values(views, TRANSFER_CONTEXT), rooms=rooms)
    question = json.loads(pending)["link"]
    assert rooms.teacher_view(code, secret)["link"] == question
    rooms.answer(code, token, question, 15)
    wanted = class_peer.settings_of(question, views, runtime)
    assert wanted.model == name and wanted.settings["context"] == TRANSFER_CONTEXT
    return rooms, teacher, wanted, state, record, reveal


def _results(views, freq_result):
    """The reveal's results input: every section's stored result, rope.freq's the given one."""
    return [freq_result if v.key == "rope.freq" else None for v in views.items if v.state is not None]


def test_the_run_at_the_transfers_setting_is_quoted_and_a_later_run_elsewhere_is_not(page, runtime):
    views, name, run = page
    step = custom.to_lesson(_lesson(views, runtime)).steps[0]
    # quoted: the teacher's run of the transfer's link, read by the step's reader
    rooms, teacher, wanted, state, record, reveal = _class_at_transfer(page, runtime)
    result = run(wanted.settings)
    runs = record({}, result, name, "en", *wanted.settings.values())
    shown = reveal(teacher, state, "en", runs, *_results(views, result), rooms=rooms)
    measured = rooms.teacher_view(teacher["code"], teacher["secret"])["histograms"][-1].measured
    never = reading(step, result)["answer"]
    assert measured == never and never != reading(step, run({**wanted.settings,
                                                            "context": STEP_CONTEXT}))["answer"]
    assert shown[0] == gr.skip()           # no line: the value is quoted
    # not quoted: the same transfer, then the teacher changes the context length and runs
    for lang in ("en", "zh"):
        rooms, teacher, wanted, state, record, reveal = _class_at_transfer(page, runtime)
        run(wanted.settings)
        later = {**wanted.settings, "context": LATER_CONTEXT}
        result = run(later)
        runs = record({}, result, name, "en", *later.values())
        shown = reveal(teacher, state, lang, runs, *_results(views, result), rooms=rooms)
        revealed = rooms.teacher_view(teacher["code"], teacher["secret"])
        assert revealed["histograms"][-1].measured is None and revealed["revealed"]
        assert shown[0] == text("classroom.measured_settings", lang,
                                names=text("rope.freq.context", lang))


def test_the_page_records_each_run_that_ended_well(full_page):
    fns = list(full_page.blocks.fns.values())
    run_button = full_page.views.get("rope.freq").run
    runs = [f for f in fns if any(t[0] == run_button._id and t[1] == "click" for t in f.targets)]
    assert runs
    record = [f for f in fns if f.trigger_after in {r._id for r in runs} and f.name == "record"]
    assert len(record) == 1 and record[0].trigger_only_on_success
    assert record[0].inputs[1] is full_page.views.get("rope.freq").state
    assert record[0].outputs == [record[0].inputs[0]]


def test_a_lesson_reads_only_a_run_that_ended_well(full_page):
    """lessons.wire: the panel's reading of a section's run (after_run) follows the run on
    success only: a failed run after a good one at other settings leaves no reading of the
    earlier result as the step's (the reveal quotes the panel's reading)."""
    fns = list(full_page.blocks.fns.values())
    for view in full_page.views.items:
        if view.run is None:
            continue
        runs = {f._id for f in fns if any(t[0] == view.run._id and t[1] == "click" for t in f.targets)}
        after = [f for f in fns if f.trigger_after in runs and f.name == "after_run"]
        assert after, view.key
        assert all(f.trigger_only_on_success for f in after), view.key


def test_a_press_of_a_lessons_run_button_is_never_dropped(full_page):
    """lessons.presses_run_after_pending: each run button a lesson presses runs a press made
    while its last run is still pending once that run ends (a class moving between two steps of
    one section), in the config the page gets too."""
    fns = list(full_page.blocks.fns.values())
    config = {d["id"]: d for d in full_page.blocks.config["dependencies"]}
    pressed = 0
    for view in full_page.views.items:
        if view.run is None:
            continue
        runs = [f for f in fns if any(t[0] == view.run._id and t[1] == "click" for t in f.targets)]
        assert runs, view.key
        for fn in runs:
            assert fn.trigger_mode == "always_last", (view.key, fn.name, fn.trigger_mode)
            assert config[fn._id]["trigger_mode"] == "always_last", view.key
            pressed += 1
    assert pressed >= 25, pressed
