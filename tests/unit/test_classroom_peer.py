"""Peer instruction and pacing in the room store (explorer/classroom/questions.py): a vote alone,
closed for the discussion, a vote again, a reveal of both rounds on the same bins with how many
moved toward the measured value; a transfer question of its own; the CSV with both rounds;
the class held on its step; pages following, exploring, gone; privacy of a student's view;
bounds; and the hostile calls (a student calling a teacher's action, answering while closed,
a phase out of order)."""
from __future__ import annotations

import csv
import io
import itertools

import pytest

from explorer.classroom.questions import MAX_LINK, MAX_QUESTIONS, moved_toward
from explorer.inputs import InputError
from tests.unit.test_classroom_rooms import refusal, store

STEP = "?lesson=kv-cache&step=2"
OTHER = "?view=kv.cache&model=gemma-3-270m-it"
_S = itertools.count()


def fresh():
    return f"peer-session-{next(_S)}"


def _class(n=3):
    rooms, clock = store()
    code, secret = rooms.create("a")
    tokens = [rooms.join(code, f"s{i}", session=fresh())[1] for i in range(n)]
    rooms.follow(code, secret, STEP, (0, 10_000))
    return rooms, clock, code, secret, tokens


def test_vote_discuss_revote_reveal_shows_two_rounds_on_the_same_bins():
    rooms, _, code, secret, (a, b, c) = _class()
    for token, value in ((a, 1000), (b, 3000), (c, 9000)):
        rooms.answer(code, token, STEP, value)
    view = rooms.teacher_view(code, secret)
    assert view["phase"] == "vote" and view["voted"] == [3] and view["histograms"] == ()
    # round 1 shows counts only, to everyone
    seen = rooms.student_view(code, a)
    assert seen["histogram"] is None and seen["histograms"] == () and seen["mine"] == 1000
    assert "3000" not in repr(seen) and "9000" not in repr(seen) and "s1" not in repr(seen)
    assert rooms.close_vote(code, secret) == "discuss"
    refusal("classroom.err.closed", rooms.answer, code, a, STEP, 5000)
    assert rooms.student_view(code, a)["phase"] == "discuss"
    assert rooms.revote(code, secret) == "revote"
    seen = rooms.student_view(code, a)
    assert seen["round"] == 2 and seen["mine_first"] == 1000 and seen["mine"] is None
    assert seen["voted"] == [3, 0]
    rooms.answer(code, a, STEP, 4500)        # toward 5000
    rooms.answer(code, b, STEP, 3000)        # stays
    rooms.answer(code, c, STEP, 9500)        # away
    assert rooms.teacher_view(code, secret)["voted"] == [3, 3]
    last = rooms.reveal(code, secret, 5000.0)
    view = rooms.student_view(code, b)
    first, second = view["histograms"]
    assert view["histogram"] == second == last and first.edges == second.edges
    assert sum(first.counts) == 3 == sum(second.counts) and first.counts != second.counts
    assert first.edges[0] <= 1000 and second.edges[-1] >= 9500 and first.measured == 5000.0
    assert view["moved"] == (1, 3)
    assert view["mine_first"] == 3000 and view["mine"] == 3000 and "4500" not in repr(view)
    refusal("classroom.err.revealed", rooms.answer, code, a, STEP, 1)
    refusal("classroom.err.revealed", rooms.reveal, code, secret, 5000.0)


def test_a_reveal_straight_after_round_one_shows_one_histogram():
    rooms, _, code, secret, (a, b, _c) = _class()
    rooms.answer(code, a, STEP, 10)
    rooms.answer(code, b, STEP, 20)
    hist = rooms.reveal(code, secret, 15.0)
    view = rooms.student_view(code, a)
    assert view["histograms"] == (hist,) and view["moved"] is None and hist.n == 2
    # closed for the discussion, then revealed without a second round: one histogram too
    rooms2, _, code2, secret2, (x, _y, _z) = _class()
    rooms2.answer(code2, x, STEP, 10)
    rooms2.close_vote(code2, secret2)
    rooms2.reveal(code2, secret2, None)
    assert len(rooms2.student_view(code2, x)["histograms"]) == 1


def test_phases_out_of_order_and_a_students_token_are_refused():
    rooms, _, code, secret, (a, _b, _c) = _class()
    refusal("classroom.err.phase", rooms.revote, code, secret)           # not closed yet
    rooms.close_vote(code, secret)
    refusal("classroom.err.phase", rooms.close_vote, code, secret)       # closed twice
    rooms.revote(code, secret)
    refusal("classroom.err.phase", rooms.revote, code, secret)           # a third round
    refusal("classroom.err.phase", rooms.close_vote, code, secret)       # round 2 is revealed, not closed
    # a student's token is no secret: every teacher action is refused, nothing changes
    for action, args in ((rooms.close_vote, ()), (rooms.revote, ()), (rooms.reveal, (1.0,)),
                         (rooms.transfer, (OTHER,)), (rooms.pause, (True,)), (rooms.csv_text, ())):
        refusal("classroom.err.secret", action, code, a, *args)
    view = rooms.teacher_view(code, secret)
    assert view["phase"] == "revote" and not view["paused"] and not view["revealed"]
    # no question at the class's link: nothing to close, reopen or reveal
    rooms.follow(code, secret, "?lesson=kv-cache&step=1")
    for action in (rooms.close_vote, rooms.revote):
        refusal("classroom.err.no_question", action, code, secret)
    refusal("classroom.err.no_question", rooms.reveal, code, secret, None)
    # an answer to the question the class left is not now
    refusal("classroom.err.not_now", rooms.answer, code, a, STEP, 5)


def test_a_transfer_question_is_its_own_question_linked_to_the_first():
    rooms, _, code, secret, (a, b, _c) = _class()
    rooms.answer(code, a, STEP, 100)
    refusal("classroom.err.transfer_first", rooms.transfer, code, secret, OTHER)
    rooms.reveal(code, secret, 90.0)
    refusal("classroom.err.transfer_same", rooms.transfer, code, secret, STEP)
    for bad in ("view=x", "", None, "?" + "x" * (MAX_LINK + 1)):
        refusal("classroom.err.link", rooms.transfer, code, secret, bad)
    moves = rooms.teacher_view(code, secret)["moves"]
    assert rooms.transfer(code, secret, OTHER) == "q2"
    view = rooms.student_view(code, b)
    assert view["link"] == OTHER and view["moves"] == moves + 1 and view["qid"] == "q2"
    assert view["transfer_of"] == "q1" and view["origin"] == STEP and view["phase"] == "vote"
    assert view["histograms"] == () and view["mine"] is None
    refusal("classroom.err.answer_range", rooms.answer, code, b, OTHER, 10_001)   # the first's bounds
    rooms.answer(code, b, OTHER, 200)
    rooms.close_vote(code, secret)
    rooms.revote(code, secret)
    rooms.answer(code, b, OTHER, 150)
    rooms.reveal(code, secret, 140.0)
    assert rooms.student_view(code, a)["moved"] == (1, 1)
    # a transfer of the transfer names its own parent, and the chain's first question's link
    rooms.transfer(code, secret, OTHER + "&x=1")
    view = rooms.teacher_view(code, secret)
    assert view["transfer_of"] == "q2" and view["origin"] == STEP
    rows = list(csv.reader(io.StringIO(rooms.csv_text(code, secret))))
    assert rows[0] == ["question", "link", "transfer_of", "round 1", "round 2", "measured", "time",
                       "nickname"]
    by = {(r[0], r[7]): r for r in rows[1:]}
    assert by[("q1", "s0")][1:6] == [STEP, "", "100", "", "90"]
    assert by[("q2", "s1")][1:6] == [OTHER, "q1", "200", "150", "140"]
    assert not any(r[0] == "q3" for r in rows[1:])       # no answers yet


def test_questions_per_room_are_bounded():
    rooms, _, code, secret, _tokens = _class(1)
    for i in range(MAX_QUESTIONS - 1):
        rooms.follow(code, secret, f"?lesson=x&step={i}", (0, 1))
    refusal("classroom.err.questions", rooms.follow, code, secret, "?lesson=y&step=1", (0, 1))
    rooms.follow(code, secret, f"?lesson=x&step={MAX_QUESTIONS - 2}")   # one it holds: fine
    rooms.reveal(code, secret, None)
    refusal("classroom.err.questions", rooms.transfer, code, secret, OTHER)
    with rooms._lock:
        room = rooms._rooms[code]
        assert len(room.questions) == MAX_QUESTIONS
        assert all(len(q.rounds) <= 2 for q in room.questions.values())


def test_answers_per_question_are_one_per_member_a_round():
    rooms, clock, code, secret, (a, _b, _c) = _class()
    for value in range(6):
        rooms.answer(code, a, STEP, value)
    refusal("classroom.err.answer_rate", rooms.answer, code, a, STEP, 7)    # 6 a minute
    clock.now += 61
    rooms.close_vote(code, secret)
    rooms.revote(code, secret)
    rooms.answer(code, a, STEP, 8)
    rooms.answer(code, a, STEP, 9)
    with rooms._lock:
        question = rooms._rooms[code].questions[STEP]
        assert [len(r) for r in question.rounds] == [1, 1]


def test_the_class_is_held_on_its_step_and_a_student_cannot_leave():
    rooms, _, code, secret, (a, b, _c) = _class()
    rev = rooms.student_view(code, a)["revision"]
    assert rooms.pause(code, secret, True) is True
    view = rooms.student_view(code, a)
    assert view["paused"] and view["revision"] == rev + 1     # every page learns it
    refusal("classroom.err.paused", rooms.set_following, code, a, False)
    assert rooms.student_view(code, a)["following"] is True
    assert rooms.set_following(code, a, True) is True         # coming back is always allowed
    assert rooms.pause(code, secret, "yes") is False           # only True holds
    assert rooms.set_following(code, b, False) is False
    assert rooms.teacher_view(code, secret)["exploring"] == 1
    rooms.pause(code, secret, True)
    assert rooms.set_following(code, b, True) is True         # an explorer may still come back
    refusal("classroom.err.not_member", rooms.set_following, code, "x" * 22, False)


def test_the_teacher_sees_pages_follow_explore_and_go_live():
    rooms, clock, code, secret, (a, b, c) = _class()
    watch = rooms.watch_token(code, secret)
    rooms.set_following(code, b, False)
    view = rooms.teacher_view(code, secret)
    assert (view["following"], view["exploring"], view["gone"]) == (2, 1, 0)
    before = rooms.revision(code, watch)
    assert rooms.revision(code, watch) == before
    clock.now += 121                      # nobody seen for MEMBER_IDLE_S ...
    rooms.revision(code, a)               # ... but a's page polls
    woke = rooms.revision(code, watch)    # the teacher's page wakes: two pages have gone
    assert woke > before
    view = rooms.teacher_view(code, secret)
    assert (view["following"], view["exploring"], view["gone"]) == (1, 0, 2)
    # a student's poll does not wake for presence (their revision is the class's)
    assert rooms.revision(code, a) == rooms.student_view(code, a)["revision"]
    assert "following" not in rooms.student_view(code, c) or \
        rooms.student_view(code, c)["following"] in (True, False)


def test_a_students_view_holds_no_other_answer_or_nickname_in_any_phase():
    rooms, _, code, secret, tokens = _class(3)
    rooms.answer(code, tokens[1], STEP, 7777)
    views = []
    for act in (lambda: None, lambda: rooms.close_vote(code, secret),
                lambda: rooms.revote(code, secret),
                lambda: rooms.answer(code, tokens[1], STEP, 6666),
                lambda: rooms.reveal(code, secret, 5000.0)):
        act()
        views.append(rooms.student_view(code, tokens[0]))
    for view in views:
        shown = repr(view)
        assert "s1" not in shown and "s2" not in shown and tokens[1] not in shown
        assert "roster" not in view
    for view in views[:-1]:              # before the reveal, no trace of another's answer
        assert "7777" not in repr(view) and "6666" not in repr(view)
    assert views[-1]["histograms"]      # then counts in bins (an edge may sit on an answer)


def test_a_removed_students_unrevealed_answers_go_in_both_rounds():
    rooms, _, code, secret, (a, b, _c) = _class()
    rooms.answer(code, a, STEP, 1)
    rooms.close_vote(code, secret)
    rooms.revote(code, secret)
    rooms.answer(code, a, STEP, 2)
    member = next(mid for mid, nick, _ in rooms.teacher_view(code, secret)["roster"] if nick == "s0")
    rooms.remove(code, secret, member)
    assert rooms.teacher_view(code, secret)["voted"] == [0, 0]


@pytest.mark.parametrize("measured, expected", [(None, None), (10.0, (1, 2)),
                                                (1.7e308, (0, 2))])
def test_moved_toward_counts_members_of_both_rounds(measured, expected):
    first = {"a": (0.0, 0), "b": (5.0, 0), "c": (1.0, 0)}
    second = {"a": (9.0, 0), "b": (-1.7e308, 0)}
    assert moved_toward(first, second, measured) == expected


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_two_rounds_are_drawn_side_by_side_on_one_axis(lang):
    from explorer.classroom.answers import figure
    from explorer.classroom.histogram import histograms
    from explorer.locales import text

    first, second = histograms([[1000.0, 3000.0, 9000.0], [4500.0, 3000.0, 9500.0]], 5000.0)
    fig = figure((first, second), lang, parent="q1")
    bars = [t for t in fig.data if t.type == "bar"]
    assert len(bars) == 2 and [sum(b.y) for b in bars] == [3, 3]
    assert bars[0].xaxis in (None, "x") and bars[1].xaxis == "x2"
    assert list(bars[0].x) == list(bars[1].x)                       # the same bins
    layout = fig.layout
    assert list(layout.xaxis.range) == list(layout.xaxis2.range)
    assert list(layout.yaxis.range) == list(layout.yaxis2.range)
    lines = [t for t in fig.data if t.type == "scatter"]
    assert len(lines) == 2 and all(list(t.x) == [5000.0, 5000.0] for t in lines)
    title = layout.title.text
    assert text("classroom.fig.title_transfer", lang, parent="q1", n=3).split("q1")[0] in title
    assert layout.meta["alt"]
    one = figure(first, lang)
    assert len([t for t in one.data if t.type == "bar"]) == 1


def test_refusals_are_input_errors_in_both_languages():
    from explorer.locales import text

    for key in ("phase", "closed", "transfer_first", "transfer_same", "transfer_view", "paused"):
        for lang in ("en", "zh"):
            assert text(f"classroom.err.{key}", lang)
    assert isinstance(InputError("classroom.err.paused"), Exception)


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_bar_handlers_check_the_role_and_say_what_happened(lang):
    """The page's handlers (explorer/ui/page/class_peer.py): a student's session (no secret)
    gets nothing from a teacher's control; the teacher's close, vote again, pause and release
    reach the store; a student's answer from the bar goes to the question the page last read;
    a following student's lesson move while the class is held is taken back to its step."""
    import json

    import gradio as gr

    from explorer.locales import text
    from explorer.ui.page import class_peer
    from explorer.ui.page.class_bar import bar_text, bar_values

    rooms, _, code, secret, (a, _b, _c) = _class()
    teacher = {"role": "teacher", "code": code, "secret": secret}
    student = {"role": "student", "code": code, "token": a, "link": STEP}
    for handler in (class_peer.close_vote, class_peer.revote, class_peer.pause, class_peer.release):
        assert handler(student, lang, rooms=rooms) == gr.skip()
    assert rooms.teacher_view(code, secret)["phase"] == "vote"
    said = class_peer.send(student, 4000, lang, rooms=rooms)
    assert said == text("classroom.answer_in", lang, value="4000", answered=1)
    assert class_peer.close_vote(teacher, lang, rooms=rooms) == text("classroom.closed_now", lang)
    with pytest.raises(gr.Error):                       # answering while closed, in words
        class_peer.send(student, 4100, lang, rooms=rooms)
    line = bar_text(rooms.student_view(code, a), {**student, "following": True}, lang)
    assert text("classroom.bar.discuss", lang) in line
    # the vote closed for the discussion: the bar's box is cleared for the revote
    assert bar_values({**student, "following": True}, rooms.student_view(code, a), lang)[-1] == ""
    class_peer.revote(teacher, lang, rooms=rooms)
    line = bar_text(rooms.student_view(code, a), {**student, "following": True}, lang)
    assert text("classroom.bar.mine_first", lang, mine="4000") in line
    # the revote is open: the student's box is left as she typed it
    assert bar_values({**student, "following": True}, rooms.student_view(code, a), lang)[-1] == gr.skip()
    assert class_peer.hold(student, True, rooms=rooms) == gr.skip()      # not held: no pull
    class_peer.pause(teacher, lang, rooms=rooms)
    pulled = json.loads(class_peer.hold(student, True, rooms=rooms))
    assert pulled["link"] == STEP
    values = bar_values({**student, "following": True}, rooms.student_view(code, a), lang)
    assert values[2]["interactive"] is False and values[-3] == "paused"     # Explore held
    teacher_values = bar_values(teacher, rooms.teacher_view(code, secret), lang)
    assert teacher_values[-3] == "" and teacher_values[10]["visible"]        # Release shown
    line = bar_text(rooms.teacher_view(code, secret), teacher, lang)
    assert text("classroom.bar.presence", lang, following=3, exploring=0, gone=0) in line
    class_peer.release(teacher, lang, rooms=rooms)
    assert not rooms.teacher_view(code, secret)["paused"]
    # the measured value a reveal quotes: tests/unit/test_class_measured.py


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_bars_answer_box_starts_empty_and_an_empty_answer_is_refused(lang):
    """The bar's answer box is drawn empty, not "0" (Gradio's Number draws None as 0), and
    Send pressed on the empty box answers nothing: the store refuses it in words."""
    import gradio as gr

    from explorer.i18n import Translator
    from explorer.locales import text
    from explorer.ui.page import class_peer
    from explorer.ui.page.class_bar import NO_ANSWER, build_bar

    with gr.Blocks():
        bar = build_bar(Translator())
    assert bar.guess.get_config()["value"] == NO_ANSWER == ""
    rooms, _, code, _secret, (a, _b, _c) = _class()
    student = {"role": "student", "code": code, "token": a, "link": STEP}
    with pytest.raises(gr.Error) as refused:
        class_peer.send(student, bar.guess.preprocess(NO_ANSWER), lang, rooms=rooms)
    assert str(refused.value.message) == text("classroom.err.answer_number", lang)
    assert rooms.student_view(code, a)["voted"] == [0]
