"""The batch view's timer in the whole app built on the real runtime (its unit tests:
tests/unit/test_batch_view.py)."""
from __future__ import annotations

def test_the_views_timer_stops_when_another_tab_opens(full_app):
    """The section's timer ticks only while it is on screen: the tab strip's select sets it
    active only for Generate's index and only if the section was the open sub-tab (`shown`)."""
    import gradio as gr

    timer = next(b for b in full_app.blocks.values()
                 if isinstance(b, gr.Timer) and b.value == 2.0 and not b.active)
    strip = next(b for b in full_app.blocks.values()
                 if isinstance(b, gr.Tabs) and b.elem_id == "explorer-tabs")
    tabs = [b for b in full_app.blocks.values() if isinstance(b, gr.Tab)
            and (b.elem_id or "").startswith("tab-")]
    generate = [b.elem_id for b in tabs].index("tab-generate")
    setting = [fn for fn in full_app.fns.values()
               if any(t[0] == strip._id and t[1] == "select" for t in fn.targets)
               and any(o is timer for o in fn.outputs)]
    assert len(setting) == 1
    fn = setting[0].fn

    def opened(index):
        return gr.SelectData(None, {"index": index, "value": "", "selected": True})

    assert fn(True, opened(generate)).active
    assert not fn(False, opened(generate)).active        # back on Generate, another sub-tab open
    for other in set(range(len(tabs))) - {generate}:
        assert not fn(True, opened(other)).active
