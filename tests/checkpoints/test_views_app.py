"""Every section and view of the whole app (built on the real runtime) has a link, its defaults,
and every lesson step is a value its view takes (the views themselves:
tests/unit/test_views.py)."""
from __future__ import annotations

from explorer.lessons import LESSONS, steps_of
from explorer.ui.page.views import link_of, read_link


def test_every_section_of_the_app_has_a_link(full_page):
    """Every section (and a tab without sections) has a view, so every one has "copy link"."""
    import re

    config = full_page.blocks.config
    sections = {c["props"].get("elem_id") for c in config["components"]
                if c.get("type") == "tabitem" and str(c["props"].get("elem_id", "")).startswith("section-")}
    linked = {view.section for view in full_page.views.items}
    assert sections and sections <= linked, sorted(sections - linked)
    boxes = [c["props"]["elem_id"] for c in config["components"]
             if re.match(r"link-(section|tab)-", str(c["props"].get("elem_id", "")))]
    assert len(boxes) == len(set(boxes)) == len(full_page.views.items)


def test_every_view_of_the_app_links_its_defaults(full_page):
    registry = full_page.views
    keys = [v.key for v in registry.items]
    assert len(keys) >= 30 and len(set(keys)) == len(keys)
    for view in registry.items:
        assert view.state is not None and view.link_box is not None, view.key
        assert view.run is not None or view.event is not None or not view.controls, view.key
        defaults = [c.default for c in view.controls]
        plan = read_link(link_of(view, None, defaults), registry, ["x"], "x", lambda n: None)
        assert plan.notes == (), (view.key, plan.notes)
        assert plan.values == {c.name: c.default for c in view.controls}, view.key


def test_every_lesson_step_is_a_value_its_view_takes(full_page, runtime):
    registry = full_page.views
    assert steps_of() == {key: len(lesson.steps) for key, lesson in LESSONS.items()}
    for lesson in LESSONS.values():
        for number, step in enumerate(lesson.steps, 1):
            view = registry.get(step.view)
            assert view is not None, (lesson.key, number, step.view)
            if step.run:
                assert view.run is not None or view.event is not None
            model = step.model or runtime.default_name
            assert model in runtime.names()
            config = runtime.get(model).config
            names = {c.name for c in view.controls}
            assert set(step.settings) <= names, (lesson.key, number, set(step.settings) - names)
            for name, value in step.settings.items():
                control = view.control(name)
                raw = control.write(value)
                assert raw is not None and control.parse(raw, config) == value, (lesson.key, number, name)


def test_every_public_endpoint_is_described_by_its_own_handler(full_page):
    """The API page describes an endpoint with its function's docstring: a handler bound with a
    bare functools.partial would show the partial class's ("new function with partial
    application ..."), which is why tabs bind with explorer.ui.bind."""
    import functools

    endpoints = full_page.blocks.get_api_info()["named_endpoints"]
    assert len(endpoints) >= 40
    partial_doc = functools.partial.__doc__.strip().splitlines()[0]
    for name, info in endpoints.items():
        description = info.get("description") or ""
        assert partial_doc not in description and "partial application" not in description, name
    assert "Stream one generation" in endpoints["/generate"]["description"]
