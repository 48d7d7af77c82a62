"""The room store of a live class (explorer/classroom/rooms.py): codes and secrets per the room
link contract, rejoining by token, limits with their messages, expiry on a monotonic clock,
answers checked and private until the reveal, the histogram and the CSV; and the link a class
may follow, checked by views.read_link (explorer/ui/classroom.class_link)."""
from __future__ import annotations

import itertools

import csv
import io
import re
import threading

import pytest

from explorer.classroom.rooms import (ALPHABET, MAX_NICKNAME, Rooms, clean_code, clean_nickname,
                                      histogram)
from explorer.inputs import InputError

_SESSIONS = itertools.count()


def fresh():
    """A new session id, as Gradio gives each page."""
    return f"session-{next(_SESSIONS)}"


STEP = "?lesson=kv-cache&step=2"


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


def test_codes_and_secrets_follow_the_contract():
    rooms, _ = store(per_address_hour=100)
    made = [rooms.create("10.0.0.1") for _ in range(30)]
    codes = [code for code, _ in made]
    assert len(set(codes)) == 30
    for code, secret in made:
        assert re.fullmatch(f"[{ALPHABET}]{{6}}", code) and not set(code) & set("0O1IL")
        assert len(secret) >= 20 and re.fullmatch(r"[A-Za-z0-9_-]+", secret)
    assert len({secret for _, secret in made}) == 30
    # typed codes are forgiven case, spaces and a dash; anything else is no code
    assert clean_code(" " + codes[0][:3].lower() + "-" + codes[0][3:] + " ") == codes[0]
    for bad in ("ABC", "ABCDE0", "ABCDEFG", 123456, None, "x" * 1000):
        refusal("classroom.err.code", clean_code, bad)


def test_teacher_actions_need_the_secret():
    rooms, _ = store()
    code, secret = rooms.create("a")
    other_code, other_secret = rooms.create("b")
    for wrong in ("", secret[:-1] + ("A" if secret[-1] != "A" else "B"), other_secret, None, 12, "x" * 500):
        refusal("classroom.err.secret", rooms.follow, code, wrong, STEP, (0, 100))
        refusal("classroom.err.secret", rooms.reveal, code, wrong, 1.0)
        refusal("classroom.err.secret", rooms.csv_text, code, wrong)
        refusal("classroom.err.secret", rooms.teacher_view, code, wrong)
    assert rooms.follow(code, secret, STEP, (0, 100)) == 1
    refusal("classroom.err.gone", rooms.follow, "ZZZZZZ", secret, STEP)


def test_a_reload_rejoins_the_same_member_and_nicknames_are_cleaned():
    rooms, _ = store()
    code, _ = rooms.create("a")
    _, token = rooms.join(code.lower(), "  Ada\x00\u202e Lovelace\n ", session=fresh())
    assert rooms.join(code, None, token, session=fresh()) == (code, token)
    assert rooms.student_view(code, token)["members"] == 1
    _, other = rooms.join(code, None, "not-a-token-of-this-room-xxxxxx", session=fresh())
    assert other != token and rooms.student_view(code, other)["members"] == 2
    assert clean_nickname("  Ada\x00\u202e Lovelace\n ") == "Ada Lovelace"
    assert clean_nickname(None) == "" and clean_nickname("") == ""
    refusal("classroom.err.nickname", clean_nickname, "x" * (MAX_NICKNAME + 1))
    refusal("classroom.err.nickname", clean_nickname, ["list"])
    refusal("classroom.err.not_member", rooms.student_view, code, "forged-token-forged-token")


def test_limits_answer_with_clear_messages():
    rooms, clock = store(max_rooms=3, max_members=2, per_address_hour=2)
    rooms.create("school")
    rooms.create("school")
    error = refusal("classroom.err.address_limit", rooms.create, "school")
    assert "2" in error.message("en") and "小时" in error.message("zh")
    code, _ = rooms.create("home")
    refusal("classroom.err.server_full", rooms.create, "elsewhere")
    rooms.join(code, session=fresh())
    rooms.join(code, session=fresh())
    error = refusal("classroom.err.room_full", rooms.join, code, "late", session=fresh())
    assert "full" in error.message("en")
    # an hour later the school may start classes again (the server still has room after expiry)
    clock.now += 3601
    rooms.expire_s = 3600
    assert len(rooms) == 0
    rooms.create("school")


def test_rooms_expire_after_hours_of_quiet_but_not_while_used():
    rooms, clock = store(expire_s=4 * 3600)
    code, secret = rooms.create("a")
    _, token = rooms.join(code, session=fresh())
    for _ in range(5):   # a poll every 3 hours keeps it
        clock.now += 3 * 3600
        rooms.student_view(code, token)
    assert rooms.revision(code) is not None
    clock.now += 4 * 3600 + 1
    assert rooms.revision(code) is None
    refusal("classroom.err.gone", rooms.student_view, code, token)
    error = refusal("classroom.err.gone", rooms.join, code, session=fresh())
    assert "Ask your teacher for a new code" in error.message("en")


def test_answers_are_checked_private_until_the_reveal_and_revealed_as_counts():
    rooms, _ = store()
    code, secret = rooms.create("a")
    ada = rooms.join(code, "Ada", session=fresh())[1]
    bob = rooms.join(code, session=fresh())[1]
    refusal("classroom.err.not_now", rooms.answer, code, ada, STEP, 5)   # no question yet
    rooms.follow(code, secret, STEP, (0, 1000))
    for bad in (float("nan"), float("inf"), True, "5", None, [5]):
        refusal("classroom.err.answer_number", rooms.answer, code, ada, STEP, bad)
    refusal("classroom.err.answer_range", rooms.answer, code, ada, STEP, 1001)
    refusal("classroom.err.not_now", rooms.answer, code, ada, "?lesson=kv-cache&step=3", 5)
    refusal("classroom.err.not_member", rooms.answer, code, "x" * 22, STEP, 5)
    assert rooms.answer(code, ada, STEP, 40) == 1
    assert rooms.answer(code, ada, STEP, 45) == 1          # overwritten, still one answer
    assert rooms.answer(code, bob, STEP, 300) == 2
    seen = rooms.student_view(code, bob)
    assert seen["answered"] == 2 and seen["mine"] == 300 and seen["histogram"] is None
    assert "45" not in repr(seen) and "Ada" not in repr(seen)    # counts only, no other answer
    assert rooms.teacher_view(code, secret)["answered"] == 2
    hist = rooms.reveal(code, secret, 45.0)
    assert sum(hist.counts) == 2 and hist.measured == 45.0 and hist.n == 2
    assert hist.edges[0] <= 45 <= hist.edges[-1] and hist.edges[0] <= 300 <= hist.edges[-1]
    refusal("classroom.err.revealed", rooms.answer, code, bob, STEP, 1)
    after = rooms.student_view(code, ada)
    assert after["revealed"] and after["histogram"] == hist and "Ada" not in repr(after)
    # a step without a question cannot be revealed
    rooms.follow(code, secret, "?lesson=kv-cache&step=1")
    refusal("classroom.err.no_question", rooms.reveal, code, secret, None)


def test_moves_count_link_changes_only():
    rooms, _ = store()
    code, secret = rooms.create("a")
    assert rooms.follow(code, secret, STEP) == 1
    assert rooms.follow(code, secret, STEP) == 1
    assert rooms.follow(code, secret, "?view=rope.freq") == 2
    for bad in ("lesson=x", "", None, "?" + "x" * 9000):   # past MAX_LINK
        refusal("classroom.err.link", rooms.follow, code, secret, bad)


def test_csv_has_step_answer_measured_time_and_only_given_nicknames():
    rooms, _ = store()
    code, secret = rooms.create("a")
    ada = rooms.join(code, "=cmd|Ada", session=fresh())[1]
    anon = rooms.join(code, session=fresh())[1]
    rooms.follow(code, secret, STEP, (0, 1e9))
    rooms.answer(code, ada, STEP, 12.5)
    rooms.answer(code, anon, STEP, 7)
    before = list(csv.reader(io.StringIO(rooms.csv_text(code, secret))))
    assert before[0] == ["question", "link", "transfer_of", "round 1", "round 2", "measured",
                         "time", "nickname"]
    assert {row[3] for row in before[1:]} == {"12.5", "7"} and all(row[5] == "" for row in before[1:])
    rooms.reveal(code, secret, 10.0)
    rows = list(csv.reader(io.StringIO(rooms.csv_text(code, secret))))[1:]
    by_answer = {row[3]: row for row in rows}
    assert by_answer["12.5"][:3] == ["q1", STEP, ""] and by_answer["12.5"][5] == "10"
    assert by_answer["12.5"][4] == ""                   # no second round ran
    assert by_answer["12.5"][6] == "2023-11-14T22:13:20Z"
    assert by_answer["12.5"][7] == "'=cmd|Ada"        # never a formula in a spreadsheet
    assert by_answer["7"][7] == ""


def test_histogram_bins_whole_numbers_and_spans_the_measured_value():
    whole = histogram([3, 4, 4, 5], 8.0)
    assert whole.edges[0] == 2.5 and whole.edges[-1] == 8.5 and sum(whole.counts) == 4
    assert whole.counts[1] == 2                     # the two 4s share the bin [3.5, 4.5)
    spread = histogram([0.1, 250.0, 1000.0], None)
    assert len(spread.counts) == 12 and sum(spread.counts) == 3
    assert histogram([], None).n == 0 and histogram([7.0], 7.0).counts == (1,)


def test_the_store_is_thread_safe():
    rooms, _ = store(max_members=200)
    code, secret = rooms.create("a")
    rooms.follow(code, secret, STEP, (0, 1000))
    tokens = []

    def student(i):
        token = rooms.join(code, f"s{i}", session=fresh())[1]
        tokens.append(token)
        rooms.answer(code, token, STEP, i)

    threads = [threading.Thread(target=student, args=(i,)) for i in range(120)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(set(tokens)) == 120 and rooms.teacher_view(code, secret)["answered"] == 120


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_histogram_figure_shows_counts_and_the_measured_value_in_sight(lang):
    from explorer.classroom.answers import figure

    fig = figure(histogram([3000.0, 9000.0, 9000.0], 9000.0), lang)
    bars = next(t for t in fig.data if t.type == "bar")
    line = next(t for t in fig.data if t.type == "scatter")
    assert sum(bars.y) == 3 and list(line.x) == [9000.0, 9000.0]
    low, high = fig.layout.xaxis.range
    assert low < 3000 and high > 9000          # the last edge's value is not on the frame
    assert fig.layout.yaxis.dtick == 1
    assert ("9000" in fig.layout.meta["alt"]) and (lang == "en" or "答案" in fig.layout.title.text)
    from explorer.locales import text
    assert figure(None, lang).layout.annotations[0].text == text("classroom.fig.none", lang)
