"""Quantities a question can ask about (explorer/lessons/quantities.py): every view the tabs
register has its quantities or is listed as having none (with why), each label in both
languages, each quantity a field of a lesson's own reader; and the example lesson file of
docs/LESSONS.md is a lesson this app takes."""
from __future__ import annotations

import json
import re
from pathlib import Path

from explorer.lessons import LESSONS, custom, quantities
from explorer.locales import LANGUAGES, has, text

ROOT = Path(__file__).resolve().parents[2]


def registered_views() -> set[str]:
    """Every view key a tab registers (ctx.view("key", ...) in explorer/ui/tabs/*.py)."""
    found = set()
    for path in (ROOT / "explorer" / "ui" / "tabs").glob("*.py"):
        found |= set(re.findall(r'ctx\.view\(\s*"([\w.]+)"', path.read_text(encoding="utf-8")))
    return found


def test_every_view_has_quantities_or_says_why_not():
    by_key, none = quantities.registry()
    with_quantities = {q.view for q in by_key.values()}
    views = registered_views()
    assert len(views) >= 30
    missing = sorted(views - with_quantities - set(none))
    assert not missing, (
        "these views declare no quantities: add them to QUANTITIES (or NO_QUANTITIES with why) "
        f"next to their readers in explorer/lessons/: {missing}")
    assert not with_quantities & set(none)
    assert all(why.strip() for why in none.values())


def test_the_issues_named_quantities_are_there():
    for key in ("generate.run/kib", "generate.run/per_token", "attention.sinks/first",
                "attention.rf/first_layer", "moe.load/busiest", "flash.schedule/skipped",
                "rope.freq/wavelength"):
        assert quantities.get(key) is not None, key


def test_each_quantity_is_a_field_of_a_lesson_reader_with_its_texts():
    readers = {step.read for lesson in LESSONS.values() for step in lesson.steps}
    for q in quantities.registry()[0].values():
        assert q.read in readers, f"{q.key}: not a reader our lessons use"
        assert q.low < q.high
        assert has(q.label), q.label
        if q.unit.startswith("lesson."):
            assert has(q.unit)
        for lang in LANGUAGES:
            assert text(q.label, lang)


def test_a_quantity_reads_its_field_and_nothing_else():
    q = quantities.Quantity("t.v/x", "lesson.qty.unit.tiles", "", 0, 1,
                            lambda r: {"x": r, "computed": True}, "x")
    assert q.value(3) == (3.0, True)
    assert q.value(None) is None
    assert q.value("text") is None and q.value(float("nan")) is None and q.value(True) is None
    broken = quantities.Quantity("t.v/y", "lesson.qty.unit.tiles", "", 0, 1, lambda r: r.missing, "y")
    assert broken.value(object()) is None


def test_the_example_lesson_is_a_lesson_this_app_takes():
    raw = (ROOT / "docs" / "example-lesson.json").read_bytes()
    data = custom.parse_file(raw)
    seen = []

    def read(view, model, settings):          # views and settings: tests/checkpoints checks them
        seen.append(view)
        return model, dict(settings)
    checked = custom.check(data, read)
    assert checked == data and len(checked["steps"]) == 3
    assert sum(step["question"] is not None for step in checked["steps"]) == 3
    assert len({view.split(".")[0] for view in seen}) >= 2
    assert json.loads(custom.to_json(checked)) == data
