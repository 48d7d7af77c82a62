"""The class follows only the links the whole app (built on the real runtime) takes (the rooms
themselves: tests/unit/test_classroom_rooms.py)."""
from __future__ import annotations

from tests.unit.test_classroom_rooms import STEP, refusal  # noqa: F401 -- refusal: a fixture


def test_the_class_follows_only_links_read_link_takes(full_page, runtime):
    from explorer.ui.page.classroom import class_link

    views = full_page.views
    assert class_link("http://host/?lesson=kv-cache&step=2&room=ABCDEF", views, runtime)[0] == STEP
    link, bounds = class_link(STEP, views, runtime)
    assert bounds is not None and bounds[0] < bounds[1]
    assert class_link("?lesson=kv-cache&step=1", views, runtime)[1] is None
    link, _ = class_link("?view=rope.scale&factor=4", views, runtime)
    assert link.startswith("?view=rope.scale") and "factor=4" in link and "context=" in link
    for bad in ("?lesson=nope&step=1", "?lesson=kv-cache&step=99", "?view=nope",
                "?view=rope.scale&factor=NaN", "?view=rope.scale&evil=1", "no query", 5, "?" + "a=1&" * 5000):
        refusal("classroom.err.link", class_link, bad, views, runtime)
