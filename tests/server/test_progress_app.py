"""The built app: no event shows progress on a state, a layout block or a hidden helper, and
the events on a following page's path from a teacher's move to the new step (the class's
poll, the move itself, the listeners that follow a run's end) show none
(explorer/ui/progress.py)."""
from __future__ import annotations

import gradio as gr
from gradio.blocks import BlockContext

from explorer.ui.progress import MAX_TARGETS, hidden


def test_every_event_targets_few_light_components(full_app):
    named = {}
    for fn in full_app.fns.values():
        if fn.fn is None:
            continue
        assert fn.show_progress_on is not None, fn.name
        assert len(fn.show_progress_on) <= MAX_TARGETS, fn.name
        for block in fn.show_progress_on:
            assert not isinstance(block, (gr.State, BlockContext)) and not hidden(block), (fn.name, block)
        named[getattr(fn.fn, "__qualname__", "")] = fn
    for name in ("wire.<locals>.apply_move", "poll", "_after_run.<locals>.after_run",
                 "record_run.<locals>.record", "show_runs", "wire.<locals>.on_load",
                 "wire.<locals>.on_next"):
        assert named[name].show_progress_on == [], name

    def triggered_by(elem_id):
        return [fn for fn in full_app.fns.values() if fn.fn is not None and any(
            getattr(full_app.blocks.get(b), "elem_id", None) == elem_id for b, _ in fn.targets)]
    class_box = triggered_by("class-revision") + triggered_by("class-pending")
    assert len(class_box) >= 3 and all(fn.show_progress_on == [] for fn in class_box)
    generate = triggered_by("gen-start")
    assert [b.elem_id for b in generate[0].show_progress_on] == ["gen-output", "gen-status", "gen-evidence"]
