"""Issue 41, "A class no student can break": each attack a hostile student or visitor can make on
a live class, run against the room store (explorer/classroom/rooms.py) or the class's handlers
(explorer/ui/classroom.py), and what the class must do instead (docs/HARDENING.md, issue 41)."""
from __future__ import annotations

import json
import math
import sys

import pytest

from explorer.classroom.rooms import Rooms, histogram
from explorer.inputs import InputError

STEP = "?lesson=kv-cache&step=2"
TINY = 5e-324                      # the smallest subnormal float
HUGE = sys.float_info.max


class Clock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now


def store(**kwargs):
    clock = Clock()
    return Rooms(clock=clock, wall=lambda: 1_700_000_000.0, **kwargs), clock


def refusal(key, call, *args, **kwargs):
    with pytest.raises(InputError) as caught:
        call(*args, **kwargs)
    assert caught.value.key == key, caught.value.key
    return caught.value


# ----------------------------------------------------------------------------- 1. one answer


ODD_ANSWERS = [
    ([37.5], None), ([37.5], 37.5), ([0.0, TINY], None), ([TINY], None), ([-TINY, TINY], 0.0),
    ([-HUGE, HUGE], None), ([HUGE], HUGE), ([1e300], None), ([1e300, 1e300 * (1 + 2 ** -52)], None),
    ([0.1, 0.1 + 2 ** -55], None), ([2.0 ** 60], None), ([0.0, -0.0], None), ([7.0], 1e308),
    ([1.0, 2.0, 3.0], -HUGE), ([3.0] * 40, None), ([-1e-310, 1e-310, 5.0], None),
]


@pytest.mark.parametrize("values, measured", ODD_ANSWERS)
def test_a_histogram_of_any_finite_answers_is_drawn(values, measured):
    """One value, tiny and huge values, neighbouring floats: finite increasing edges that hold
    every answer and the measured value, and a figure that serialises without NaN or inf."""
    from explorer.classroom.answers import figure

    hist = histogram(values, measured)
    assert sum(hist.counts) == len(values) == hist.n
    assert all(math.isfinite(e) for e in hist.edges)
    assert all(a < b for a, b in zip(hist.edges, hist.edges[1:])), hist.edges
    for v in values + ([measured] if measured is not None else []):
        assert hist.edges[0] <= v <= hist.edges[-1], (v, hist.edges)
    for lang in ("en", "zh"):
        fig = figure(hist, lang)
        body = fig.to_json()
        assert "NaN" not in body and "Infinity" not in body
        low, high = fig.layout.xaxis.range
        assert math.isfinite(low) and math.isfinite(high) and low < high
        json.loads(body)


@pytest.mark.parametrize("values", [[37.5], [0.0, TINY]])
def test_one_odd_answer_and_a_reveal_leave_the_class_working(values):
    """The attack: a student answers 37.5 alone (or 0 and 5e-324), the teacher reveals. Before:
    ZeroDivisionError in the reveal, the step already marked revealed, so every member's view
    raised from then on."""
    rooms, _ = store()
    code, secret = rooms.create("a")
    rooms.follow(code, secret, STEP, (0, 1000))
    tokens = [rooms.join(code)[1] for i in range(len(values))]
    for token, value in zip(tokens, values):
        rooms.answer(code, token, STEP, value)
    hist = rooms.reveal(code, secret, None)
    assert sum(hist.counts) == len(values)
    assert rooms.student_view(code, tokens[0])["histogram"] == hist
    assert rooms.teacher_view(code, secret)["revealed"]


def test_a_reveal_that_fails_leaves_the_step_as_it_was(monkeypatch):
    """Build first, then mark: a histogram that raises leaves the step unrevealed and every view
    answering."""
    from explorer.classroom import rooms as module

    rooms, _ = store()
    code, secret = rooms.create("a")
    rooms.follow(code, secret, STEP, (0, 1000))
    _, token = rooms.join(code)
    rooms.answer(code, token, STEP, 5)
    monkeypatch.setattr(module, "histogram", lambda *a, **k: 1 / 0)
    with pytest.raises(ZeroDivisionError):
        rooms.reveal(code, secret, 5.0)
    monkeypatch.undo()
    assert not rooms.teacher_view(code, secret)["revealed"]
    assert rooms.student_view(code, token)["histogram"] is None
    assert rooms.answer(code, token, STEP, 6) == 1


@pytest.mark.parametrize("name, args", [
    ("poll", ({"role": "student", "code": "ABCDEF", "token": "t" * 22, "revision": None}, True, "zh")),
    ("relabel", ({"role": "student", "code": "ABCDEF", "token": "t" * 22}, True, "zh")),
])
def test_every_class_handler_answers_an_unexpected_error_in_words(name, args):
    """A store that raises something unexpected reaches the page as the generic sentence in the
    visitor's language, never a traceback (before: poll and relabel were not wrapped)."""
    import gradio as gr

    from explorer.ui import classroom

    class Broken(Rooms):
        def revision(self, *a, **k):
            raise RuntimeError("/srv/secret/path.py line 3")

        def student_view(self, *a, **k):
            raise RuntimeError("/srv/secret/path.py line 3")

    with pytest.raises(gr.Error) as caught:
        getattr(classroom, name)(*args, rooms=Broken())
    assert "/srv" not in str(caught.value.message)


def test_on_load_answers_an_unexpected_error_in_words():
    import gradio as gr
    from types import SimpleNamespace

    from explorer.ui import classroom

    class Broken(Rooms):
        def revision(self, *a, **k):
            raise RuntimeError("/srv/secret/path.py line 3")

    request = SimpleNamespace(query_params={"room": "ABCDEF"}, headers={}, client=None, session_hash="s")
    with pytest.raises(gr.Error):
        classroom.on_load(None, "en", request, rooms=Broken())
