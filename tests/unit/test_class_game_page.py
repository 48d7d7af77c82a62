"""The class game as the pages draw it: the reveal's figures and sentences
(explorer/nexttoken/game_figures.py) read the round's own numbers in both languages, and the
panel's handlers (explorer/ui/page/class_game.py) show a student their own guess and the
published tally only, never another student's text."""
from __future__ import annotations

import json

import gradio as gr
import pytest

from explorer.nexttoken import game_figures
from explorer.ui.page import class_game
from tests.unit.test_class_game import Tok, lens_for, open_round, reveal, room  # noqa: F401 (fixture)


def _texts(values) -> str:
    """Every text and figure a handler's outputs hold, as one string."""
    out = []
    for value in values:
        if isinstance(value, dict):
            value = value.get("value")
        if hasattr(value, "to_plotly_json"):
            value = json.dumps(value.to_plotly_json(), default=str)
        out.append(str(value))
    return "\n".join(out)


def _guesses(r):
    a, b, c, d = r.members
    for token, word in ((a, "Paris"), (b, "Paris"), (c, "Washington"), (d, "the")):
        r.games.guess(r.code, token, 1, word)


def student(r, i):
    return {"role": "student", "code": r.code, "token": r.members[i]}


def teacher(r):
    return {"role": "teacher", "code": r.code, "secret": r.secret}


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_reveal_figures_read_the_rounds_numbers(room, lang):  # noqa: F811
    open_round(room)
    _guesses(room)
    reveal(room)
    view = room.games.teacher_view(room.code, room.secret)
    fig = game_figures.tally_figure(view, lang)
    model, klass = fig.data
    top = dict(view["reveal"].top)
    assert list(model.y[:len(top)]) == pytest.approx([100 * p for p in top.values()])
    counts = dict(zip(model.x, klass.y))
    assert counts["␣Paris"] == 2 and counts["␣the"] == 1 and sum(klass.y) == 3   # " Wash": other
    assert "␣Wash" not in fig.to_plotly_json()["data"][0]["x"]
    assert "4 guesses, 1 other" in fig.layout.title.text if lang == "en" else "4 个猜测，1 个其他" in fig.layout.title.text
    lens = game_figures.lens_figure(view, lang)
    assert len(lens.data) == 1 and list(lens.data[0].y) == [r[0] + 1 for r in view["reveal"].lens.rank]
    assert lens.layout.shapes[0].x0 == 2                 # the layer the class's top leads from
    said = game_figures.summary(view, lang)
    if lang == "en":
        assert "from layer 2 of 4 on" in said and "2 of 4 students" in said and "other guesses" in said.lower()
    else:
        assert "从第 2 层（共 4 层）起" in said and "Paris" in said


def test_the_lens_sentence_says_never_and_no_top(room):  # noqa: F811
    open_round(room, "sampled", drawn=(10, 0.25))
    a, b, c, d = room.members
    room.games.guess(room.code, a, 1, "London")
    room.games.guess(room.code, b, 1, "London")
    plan = room.games.reveal_plan(room.code, room.secret)
    assert plan.tokens == (5, 10)                         # the model's top; the class's = drawn
    lens = lens_for(plan)                                # the model's top leads, London never
    room.games.reveal(room.code, room.secret, plan, lens, {t: Tok().decode([t]) for t in plan.labelled})
    view = room.games.teacher_view(room.code, room.secret)
    said = game_figures.summary(view, "en")
    assert "never agrees with the class" in said and "the guess ranks 16," in said
    assert "**Drawn**" in said and "temperature 0.8 (seed 3)" in said and "25 %" in said
    # no guesses at all: no top to compare
    open_round(room)
    plan = room.games.reveal_plan(room.code, room.secret)
    room.games.reveal(room.code, room.secret, plan, lens_for(plan), {t: "x" for t in plan.labelled})
    said = game_figures.summary(room.games.teacher_view(room.code, room.secret), "zh")
    assert "本轮没有人猜" in said and "没有可以列名的首选" in said


def test_a_token_is_shown_as_text():
    assert game_figures.said(" <b>*x*") == "“␣\\<b\\>\\*x\\*”"
    assert game_figures._labels([12], {12: " <b>x"}) == ["␣&lt;b&gt;x"]
    assert game_figures._labels([5, 6], {5: "a", 6: "a"}) == ["a #5", "a #6"]


def test_a_students_page_shows_their_guess_and_the_published_tally_only(room):  # noqa: F811
    open_round(room)
    _guesses(room)
    values = class_game.refresh(student(room, 0), True, None, "en", games=room.games)
    column, teacher_box, status, guess_row, mine, tally, lens, said, shown, opener = values
    assert column["visible"] and not teacher_box["visible"] and guess_row["visible"]
    assert "The capital of France is" in status and "Round 1" in status
    assert "Your guess: Paris" in mine and "“␣Paris”" in mine and "space" in mine
    assert not tally["visible"] and said == "" and opener == "open:1"
    seen = _texts(values)
    assert "Washington" not in seen and "guesses so far" not in seen
    # the same view again: nothing redrawn, the page not opened again
    assert class_game.refresh(student(room, 0), True, shown, "en", games=room.games) == [gr.skip()] * 9 + [""]
    # Washington's student sees their own note: two tokens, the first counts
    mine_c = class_game.refresh(student(room, 2), True, None, "en", games=room.games)[4]
    assert "2 tokens" in mine_c and "“␣Wash” + “ington”" in mine_c
    # the teacher sees the count; a student exploring on their own is not moved
    assert "4 guesses so far" in class_game.refresh(teacher(room), True, None, "en", games=room.games)[2]
    assert class_game.refresh(student(room, 1), False, None, "en", games=room.games)[9] == ""
    reveal(room)
    after = class_game.refresh(student(room, 0), True, shown, "zh", games=room.games)
    assert after[5]["visible"] and after[6]["visible"] and "逻辑透镜" in after[7]
    assert "模型给你的猜测 “␣Paris” 的概率为 40.1 %" in after[4]
    seen = _texts(after)
    assert "Washington" not in seen and "␣Wash" not in seen and "\\u2423Wash" not in seen


def test_the_panels_handlers_refuse_who_is_not_in_the_class(room):  # noqa: F811
    open_round(room)
    assert class_game.refresh(None, True, None, "en", games=room.games) == [gr.skip()] * 9 + [""]
    hidden = class_game.refresh({"role": "student", "code": room.code, "token": "x" * 22}, True,
                                {"key": 1}, "en", games=room.games)
    assert hidden[0]["visible"] is False and hidden[8] is None
    for call in (lambda: class_game.send_guess(None, "Paris", {"round": 1}, "en", games=room.games),
                 lambda: class_game.send_guess(teacher(room), "Paris", {"round": 1}, "en", games=room.games),
                 lambda: class_game.send_guess(student(room, 0), "x" * 500, {"round": 1}, "en", games=room.games),
                 lambda: class_game.send_guess(student(room, 0), "Paris", None, "en", games=room.games),
                 lambda: class_game.close_round(student(room, 0), True, "en", games=room.games),
                 lambda: class_game.download(student(room, 0), "en", games=room.games),
                 lambda: class_game.reveal_round(None, student(room, 0), True, "en", games=room.games)):
        with pytest.raises(gr.Error):
            call()
    said = class_game.send_guess(student(room, 0), "Paris", {"round": 1}, "zh", games=room.games)
    assert "你的猜测：Paris" in said
