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
