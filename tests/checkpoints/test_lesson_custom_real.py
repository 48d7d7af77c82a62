"""A teacher's lesson against the app's real views and a real run (SmolLM2): the example file of
docs/LESSONS.md passes every check, the quantities read a real stored result through the
lessons' own readers, the builder's handlers refuse hostile values with a sentence, and a class
follows a custom step with its question's bounds."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from explorer.classroom.rooms import MAX_LINK
from explorer.generate.evidence import prompt_ids, run_session
from explorer.inputs import InputError
from explorer.lessons import custom, kv_cache, quantities
from explorer.locales import text
from explorer.ui.page import lessons as panel
from explorer.ui.page.class_teacher import class_link
from explorer.ui.page.lesson_builder import Handlers
from explorer.ui.page.lesson_links import lesson_link, step_reader

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "docs" / "example-lesson.json"


@pytest.fixture(scope="module")
def checked(full_page, runtime):
    read = step_reader(full_page.views, runtime.names(), runtime.default_name,
                       lambda name: runtime.get(name).config)
    return custom.check(custom.parse_file(EXAMPLE.read_bytes()), read)


@pytest.fixture(scope="module")
def session(runtime):
    loaded = runtime.get(runtime.default_name)
    return run_session(loaded, prompt_ids(loaded), max_new_tokens=4, compare_no_cache=False,
                       check_full_forward=False)


def test_the_example_lesson_passes_the_real_views_checks(checked):
    assert checked == json.loads(EXAMPLE.read_text(encoding="utf-8"))


def test_the_kv_quantities_read_a_real_run_through_the_lessons_reader(session):
    growth = kv_cache.read_growth(session)
    values = quantities.read_all("generate.run", session)
    assert values["generate.run/kib"] == (pytest.approx(growth["kib"]), False)
    assert values["generate.run/per_token"][0] == growth["per_token"] == 2 * 30 * 3 * 64 * 4
    assert values["generate.run/at_200"] == (pytest.approx(growth["per_token"] * 200 / 1024), True)
    # a result of another section holds none of them
    assert quantities.read_all("flash.schedule", session) == {}


def test_a_custom_step_reads_the_run_and_a_class_follows_it_with_its_bounds(checked, session,
                                                                           full_page, runtime):
    state = {"lesson": "custom", "step": 0, "guess": 40000.0, "fields": None, "custom": checked}
    state, said = panel.observe("generate.run", state, session, "en")
    assert state["fields"]["answer"] == 46080 and "46,080" in said and "You guessed" in said
    link = lesson_link(checked)
    query, bounds = class_link(link, full_page.views, runtime)
    per_token = quantities.get("generate.run/per_token")
    assert query == link and len(query) <= MAX_LINK and bounds == (per_token.low, per_token.high)
    second = link.replace("step=1", "step=2")
    assert class_link(second, full_page.views, runtime)[1] == (0, 100)   # attention.sinks/first
    with pytest.raises(InputError):
        class_link(link[:-12] + "AAAAAAAAAAAA", full_page.views, runtime)


def test_the_builders_handlers_refuse_hostile_values(full_page, runtime, checked, tmp_path):
    h = Handlers(full_page.views, runtime)
    values = [None] * len(full_page.views.components())
    out = h.add(None, "t", "text", "link-nowhere", "en", runtime.default_name, *values)
    assert "No section is open" in out[-1]
    view = full_page.views.get("rope.freq")
    for body, key in (("x" * (1024 * 1024), "step_text"), (12, None)):
        try:
            out = h.add(None, "t", body, view.box_id, "zh", runtime.default_name, *values)
        except InputError as error:
            assert error.key == f"lesson.builder.err.{key}"
        else:
            assert key is None and out[0]["steps"][0]["text"] == ""
    with pytest.raises(InputError):
        h.add(None, "t" * 5000, "", view.box_id, "en", None, *values)
    with pytest.raises(InputError):
        h.apply(checked, "t", 99, "x", None, "en")
    with pytest.raises(InputError) as raised:
        h.apply(checked, "t", 0, "x", "flash.schedule/skipped", "en")
    assert raised.value.key == "lesson.builder.err.step_question"
    big = tmp_path / "big.json"
    big.write_text(json.dumps({**checked, "title": "x" * (1024 * 1024)}), encoding="utf-8")
    with pytest.raises(InputError) as raised:
        h.load(str(big), "en")
    assert raised.value.key == "lesson.builder.err.file_size"
    with pytest.raises(InputError):
        h.load("/etc/passwd", "en")
    good = tmp_path / "good.json"
    good.write_text(custom.to_json(checked), encoding="utf-8")
    assert h.load(str(good), "en")[0] == checked


def test_a_class_follows_a_custom_step_students_answer_within_its_bounds_and_see_its_text(
        checked, session, full_page, runtime):
    from explorer.classroom.rooms import Rooms
    from explorer.ui.page.class_peer import record_run, reveal_handler
    from explorer.ui.page.class_teacher import publish

    rooms = Rooms()
    code, secret = rooms.create("teacher")
    teacher = {"role": "teacher", "code": code, "secret": secret}
    link = lesson_link(checked)
    publish(teacher, "http://host/" + link, None, full_page.views, runtime, rooms=rooms)
    _, token = rooms.join(code, "ana", session="s1", address="a")
    with pytest.raises(InputError):           # outside the question's bounds (0 .. 1e7 B)
        rooms.answer(code, token, link, 1e12)
    assert rooms.answer(code, token, link, 40000) == 1
    # the student's page: the move's link opens the teacher's step, text and question
    values = panel.restore(link, "zh", None, full_page.views, runtime.names(), runtime.default_name,
                           lambda name: runtime.get(name).config)
    state, look = values[3], values[6]
    assert state["custom"] == checked and "Each new token adds" in look and "请预测" in look
    # the teacher's reveal: the class's answers beside the value the teacher's run read, the
    # page's record of a run at the step's settings (class_peer.record_run; the fixture's shorter
    # run holds the same bytes per token)
    state = {**state, "fields": custom.read_step_values("generate.run", "generate.run/per_token",
                                                        session)}
    step = checked["steps"][0]
    section = full_page.views.get("generate.run")
    runs = record_run(section, runtime)({}, session, step["model"], "en",
                                        *[step["settings"].get(c.name, c.default) for c in section.controls])
    shown = reveal_handler(full_page.views, runtime)(teacher, state, "en", runs, rooms=rooms)
    assert shown[0] != text("classroom.measured_none", "en")   # the measured value was found
    assert rooms.teacher_view(code, secret)["histograms"][-1].measured == 46080
