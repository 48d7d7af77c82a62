"""The logit lens's cell texts (explorer/nexttoken/figures.py): each token cut to what its cell
holds on a phone, its cut marked; a short token kept whole."""
from __future__ import annotations

from explorer.nexttoken import figures


def test_a_token_is_cut_to_its_cells_room_with_an_ellipsis():
    room = figures.cell_room(6)
    assert figures.fit_cell("Paris", room) == "Paris"
    cut = figures.fit_cell("obviously", room)
    assert cut.endswith("…") and "obviously".startswith(cut[:-1]) and len(cut) < len("obviously")
    assert sum(figures._em(c) for c in cut) <= room
    wide = figures.fit_cell("的小的小的小", room)           # a CJK character counts its full width
    assert wide.endswith("…") and sum(figures._em(c) for c in wide) <= room


def test_fewer_positions_leave_more_room():
    assert figures.cell_room(1) > figures.cell_room(6) > figures.cell_room(12) >= figures.MIN_CELL_EM
    assert figures.fit_cell("obviously", figures.cell_room(1)) == "obviously"


def test_the_heatmap_carries_a_cut_for_each_width_the_phones_first():
    """layout.meta.fit: the cell texts cut for each plot width (ascending), the trace's own text
    the phone's; a wider plot's cut is never shorter, and a token that fits is whole."""
    import numpy as np
    from types import SimpleNamespace
    cells = [["obviously", " Paris", "的小的小的小"], ["a", "Northwestern", " cold"]]
    result = SimpleNamespace(n_layers=1, positions=["x", "y", "z"], cells=cells, title="m",
                             chart=SimpleNamespace(top_p=np.full((2, 3), 0.5)))
    figure = figures.lens_heatmap(result, "en")
    fit = figure.layout.meta["fit"]
    assert fit["px"] == sorted(fit["px"]) and fit["px"][0] == figures.LENS_PHONE_PLOT_PX
    assert [list(row) for row in figure.data[0].text] == fit["text"][0]
    for narrow, wide in zip(fit["text"], fit["text"][1:]):
        for a_row, b_row in zip(narrow, wide):
            assert all(len(b) >= len(a) for a, b in zip(a_row, b_row))
    assert fit["text"][-1][0][1] == " Paris" and fit["text"][-1][1][1] == "Northwestern"
    assert "alt" in figure.layout.meta          # the text alternative kept beside it
