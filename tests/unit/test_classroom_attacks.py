"""Issue 41, "A class no student can break": each attack a hostile student or visitor can make on
a live class, run against the room store (explorer/classroom/rooms.py) or the class's handlers
(explorer/ui/page/classroom.py), and what the class must do instead (docs/HARDENING.md,
"The class")."""
from __future__ import annotations

import itertools

import json
import math
import re
import sys

import pytest

from explorer.classroom.rooms import Rooms, histogram
from explorer.inputs import InputError
from tests.unit.test_classroom_rooms import Clock, refusal, store  # noqa: F401 (the rooms' own test doubles)

_SESSIONS = itertools.count()


def fresh():
    """A new session id, as Gradio gives each page."""
    return f"session-{next(_SESSIONS)}"


STEP = "?lesson=kv-cache&step=2"
TINY = 5e-324                      # the smallest subnormal float
HUGE = sys.float_info.max


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
    tokens = [rooms.join(code, session=fresh())[1] for i in range(len(values))]
    for token, value in zip(tokens, values):
        rooms.answer(code, token, STEP, value)
    hist = rooms.reveal(code, secret, None)
    assert sum(hist.counts) == len(values)
    assert rooms.student_view(code, tokens[0])["histogram"] == hist
    assert rooms.teacher_view(code, secret)["revealed"]


def test_a_reveal_that_fails_leaves_the_step_as_it_was(monkeypatch):
    """Build first, then mark: a histogram that raises leaves the step unrevealed and every view
    answering."""
    from explorer.classroom import questions as module

    rooms, _ = store()
    code, secret = rooms.create("a")
    rooms.follow(code, secret, STEP, (0, 1000))
    _, token = rooms.join(code, session=fresh())
    rooms.answer(code, token, STEP, 5)
    monkeypatch.setattr(module, "histograms", lambda *a, **k: 1 / 0)
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

    from explorer.ui.page import classroom

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

    from explorer.ui.page import classroom

    class Broken(Rooms):
        def revision(self, *a, **k):
            raise RuntimeError("/srv/secret/path.py line 3")

    request = SimpleNamespace(query_params={"room": "ABCDEF"}, headers={}, client=None, session_hash="s")
    with pytest.raises(gr.Error):
        classroom.on_load(None, "en", "", request, rooms=Broken())


# ----------------------------------------------------------------------------- 2. one student


def request(session="page-1", host="10.9.8.7", query=None):
    from types import SimpleNamespace
    return SimpleNamespace(query_params=query or {}, headers={"host": "class.example"},
                           client=SimpleNamespace(host=host), session_hash=session)


def test_a_code_typed_with_a_dash_joins_the_same_member_again():
    """The attack: the typed code was compared with the page's room before normalisation, so
    `abc-def` made a new member at every press (before: 5 members from one page)."""
    from explorer.ui.page import classroom

    rooms, _ = store()
    code, secret = rooms.create("a")
    state = None
    for _ in range(5):
        typed = code[:3].lower() + "-" + code[3:]
        state = classroom.join(typed, "Ada", state, "en", request(), rooms=rooms)[0]
    assert rooms.teacher_view(code, secret)["members"] == 1


def test_joining_needs_a_session_and_a_session_is_one_member():
    rooms, clock = store()
    code, secret = rooms.create("a")
    for missing in (None, "", 5, "x" * 1000):
        refusal("classroom.err.no_session", rooms.join, code, session=missing)
    first = rooms.join(code, session="page", address="10.0.0.1")
    assert rooms.join(code, "Ada", session="page", address="10.0.0.1") == first   # the same member
    for _ in range(8):
        rooms.join(code, session="page", address="10.0.0.1")
    refusal("classroom.err.join_rate", rooms.join, code, session="page", address="10.0.0.1")
    clock.now += 61
    assert rooms.join(code, session="page", address="10.0.0.1") == first
    assert rooms.teacher_view(code, secret)["members"] == 1


def test_a_class_survives_a_student_who_joins_1000_times():
    """One address, 1,000 joins, each from a new session (a script): the address adds a bounded
    number of members, the room holds a bounded number, and once those members are not seen
    (no page polls for them) the class's own students join again and the teacher's view
    answers. Before: the first 60 filled the room until it expired, 4 hours later."""
    rooms, clock = store()
    code, secret = rooms.create("teacher")
    made = refused = 0
    for i in range(1000):
        try:
            rooms.join(code, session=f"bot-{i}", address="203.0.113.9")
            made += 1
        except InputError as error:
            assert error.key in ("classroom.err.room_full", "classroom.err.address_joins"), error.key
            refused += 1
    assert made <= 60 and refused >= 940
    refusal("classroom.err.room_full", rooms.join, code, session="real-student", address="198.51.100.1")
    clock.now += 121                          # the script's members are not seen for 2 minutes
    for i in range(60):
        rooms.join(code, f"student {i}", session=f"real-{i}", address="198.51.100.1")
    view = rooms.teacher_view(code, secret)
    assert view["members"] == 60 and len(view["roster"]) <= 4 * 60
    # the same script again, once the address's window has passed: still bounded
    clock.now += 601
    for i in range(1000):
        try:
            rooms.join(code, session=f"bot2-{i}", address="203.0.113.9")
        except InputError:
            pass
    with rooms._lock:
        assert len(rooms._rooms[code].members) <= 4 * 60


def test_the_teacher_removes_a_member_and_locks_the_class():
    rooms, _ = store()
    code, secret = rooms.create("a")
    rooms.follow(code, secret, STEP, (0, 100))
    _, ada = rooms.join(code, "Ada", session="ada")
    _, bot = rooms.join(code, "bot", session="bot")
    rooms.answer(code, bot, STEP, 99)
    bot_id = next(mid for mid, nick, _ in rooms.teacher_view(code, secret)["roster"] if nick == "bot")
    refusal("classroom.err.secret", rooms.remove, code, "wrong", bot_id)
    assert rooms.remove(code, secret, bot_id) == "bot"
    refusal("classroom.err.no_member", rooms.remove, code, secret, bot_id)
    refusal("classroom.err.not_member", rooms.student_view, code, bot)
    view = rooms.teacher_view(code, secret)
    assert view["members"] == 1 and view["answered"] == 0
    assert rooms.lock(code, secret, True) is True
    refusal("classroom.err.locked", rooms.join, code, session="late")
    assert rooms.join(code, None, ada, session="ada-reload") == (code, ada)   # a member's reload
    assert rooms.lock(code, secret, False) is False
    rooms.join(code, session="late")


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_teachers_remove_and_lock_controls(lang):
    from explorer.locales import text
    from explorer.ui.page import classroom

    rooms, _ = store()
    out = classroom.start(lang, request("teacher-page"), rooms=rooms)
    state = out[0]
    members, remove, lock = out[-3:]
    assert members["visible"] and remove["visible"] and lock["visible"]
    _, token = rooms.join(state["code"], "[x](http://evil.example)", session="bot")
    choices = classroom.poll(state, True, lang, rooms=rooms)[9]["choices"]     # members
    (label, member_id), = choices
    said, after = classroom.remove_member(state, member_id, lang, rooms=rooms)
    assert "](" not in said and "http:" not in said     # a nickname is no link in the message
    assert after["choices"] == []
    assert classroom.lock_class(state, True, lang, rooms=rooms) == text("classroom.locked_now", lang)
    import gradio as gr
    with pytest.raises(gr.Error):
        classroom.join(state["code"], "", None, lang, request("late-page"), rooms=rooms)


# ----------------------------------------------------------------------------- 3. the room table


def test_a_room_nobody_looks_at_expires_and_a_watched_one_lives():
    """A room whose pages are gone is dropped after half an hour (before: 4 hours, so 100
    abandoned rooms filled the server for an afternoon); one whose member's page polls lives
    on, past 4 hours."""
    rooms, clock = store()
    idle, _ = rooms.create("a")
    watched, secret = rooms.create("b")
    _, token = rooms.join(watched, session="page")
    for _ in range(5 * 60):           # 5 hours, the page's poll every minute
        clock.now += 60
        rooms.student_view(watched, token)
        if clock.now - 1000 > 31 * 60:
            assert rooms.revision(idle) is None
    assert rooms.revision(watched) is not None and len(rooms) == 1


def test_the_creation_log_is_bounded_in_size_and_time():
    """50,000 addresses each start a class: the log keeps at most 10,000 addresses, the limit
    still holds for the next address (before: past 10,000 a new address's log was dropped at
    once, so it could start any number), and an hour later the log is empty."""
    rooms, clock = store(per_address_hour=2, max_rooms=100)
    for i in range(50_000):
        rooms.create(f"10.{i >> 16}.{(i >> 8) & 255}.{i & 255}")
        with rooms._lock:
            rooms._rooms.clear()      # as if each class ended at once
    assert len(rooms._created) <= 10_000
    rooms.create("192.0.2.1")
    rooms.create("192.0.2.1")
    refusal("classroom.err.address_limit", rooms.create, "192.0.2.1")
    clock.now += 3601
    rooms.create("192.0.2.2")
    assert len(rooms._created) == 1


# ----------------------------------------------------------------------------- 5. answers


def test_a_flood_of_answers_is_refused_and_wakes_no_student_page():
    """The attack: one member sends 1,000 answers (914 accepted in 5 s were measured), each
    bumping the revision every member's page long-polls, so every page in the class called
    its poll each time. Now a member sends 6 a minute, and an answer wakes only the teacher's
    page (its watch token reads the answers; a member's reads moves and reveals)."""
    rooms, clock = store()
    code, secret = rooms.create("a")
    rooms.follow(code, secret, STEP, (0, 1000))
    _, bot = rooms.join(code, session="bot")
    _, ada = rooms.join(code, session="ada")
    watch = rooms.watch_token(code, secret)
    public, teachers = rooms.revision(code, ada), rooms.revision(code, watch)
    accepted = 0
    for i in range(1000):
        try:
            rooms.answer(code, bot, STEP, i % 1000)
            accepted += 1
        except InputError as error:
            assert error.key == "classroom.err.answer_rate"
    assert accepted == 6
    assert rooms.revision(code, ada) == public           # no member's page woken
    assert rooms.revision(code, watch) == teachers + 6   # the teacher's page counts them
    rooms.answer(code, ada, STEP, 5)                     # another member is not limited by it
    clock.now += 61
    rooms.answer(code, bot, STEP, 7)                     # a minute later, the bot may change its mind
    assert rooms.teacher_view(code, secret)["answered"] == 2


# ----------------------------------------------------------------------------- 6. smaller


def test_the_answers_file_is_private_unique_and_removed(monkeypatch, tmp_path):
    """The answers CSV (nicknames and answers) was written to a fixed path in the shared temp
    folder (/tmp/explorer-class/class-CODE-answers.csv), readable by every user of the machine,
    and never deleted. Now: a unique name, mode 0600, in a folder only this user reads, removed
    a short while after it was handed to Gradio (which serves its own copy)."""
    import os
    import stat
    import tempfile

    from explorer.ui.page import class_teacher

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    rooms, _ = store()
    code, secret = rooms.create("a")
    state = {"role": "teacher", "code": code, "secret": secret}
    paths = [class_teacher.download(state, "en", rooms=rooms)["value"] for _ in range(2)]
    assert paths[0] != paths[1]
    for path in paths:
        assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
        folder = os.path.dirname(path)
        assert stat.S_IMODE(os.stat(folder).st_mode) == 0o700 and os.stat(folder).st_uid == os.getuid()
        assert open(path, encoding="utf-8").read().startswith("question,link,transfer_of,round 1,round 2")
    class_teacher.sweep_answer_files(now=time_after(paths[0], class_teacher.CSV_KEEP_S + 1))
    assert not any(os.path.exists(p) for p in paths)


def time_after(path, seconds):
    import os
    return os.stat(path).st_mtime + seconds


def test_the_teacher_key_is_kept_for_the_tab_only_and_the_class_can_end():
    """The teacher's secret was kept in the browser's lasting storage (gr.BrowserState, i.e.
    localStorage): on a shared PC the next visitor of ?room=CODE became the teacher. Now the
    page keeps it in sessionStorage (the page command's `teacher`), a secret left in lasting
    storage by an older version is no key and is cleared, and "End the class" drops the room
    and tells the tab to forget."""
    from explorer.ui.page import classroom

    rooms, _ = store()
    out = classroom.start("en", request("teacher-tab"), rooms=rooms)
    state, stored, command = out[0], out[1], json.loads(out[4])
    code, secret = state["code"], state["secret"]
    assert stored is None and command["teacher"] == secret     # the tab keeps it, not the browser
    # the same tab reloads: its sessionStorage gives the key back
    kept = json.dumps({"code": code, "secret": secret})
    again = classroom.on_load(None, "en", kept, request("teacher-tab", query={"room": code}), rooms=rooms)
    assert again[0]["role"] == "teacher"
    # a later visit on the same PC, whose lasting storage an older version wrote the key into
    later = classroom.on_load({"code": code, "secret": secret}, "en", "",
                              request("next-visitor", query={"room": code}), rooms=rooms)
    assert not (isinstance(later[0], dict) and later[0].get("role") == "teacher")
    assert later[1] is None                                    # the old key is cleared there
    _, token = rooms.join(code, session="student")
    ended = classroom.end_class(state, "zh", rooms=rooms)
    assert ended[0] is None and json.loads(ended[3])["end"] is True
    assert re.search(r"[\u4e00-\u9fff]", ended[2])
    refusal("classroom.err.gone", rooms.student_view, code, token)
    assert len(rooms) == 0


# ----------------------------------------------------------------------------- 7. who a visitor is


def test_a_space_trusts_its_one_proxy_and_ipv6_counts_by_its_64(monkeypatch):
    """On a Space every request reaches the app from the Space's proxy: with no
    EXPLORER_TRUST_PROXY every visitor was that one address to every per-address bound (6
    classes an hour for the whole Space, 20 code misses a minute for all). Now SPACE_ID trusts
    one proxy unless EXPLORER_TRUST_PROXY says otherwise; and an IPv6 client, which may take
    any address of its /64, is counted by the /64."""
    from types import SimpleNamespace

    from explorer.web.gradio_context import request_address

    def asked(peer, forwarded):
        return request_address(SimpleNamespace(client=SimpleNamespace(host=peer),
                                               headers={"x-forwarded-for": forwarded}))

    monkeypatch.delenv("EXPLORER_TRUST_PROXY", raising=False)
    monkeypatch.delenv("SPACE_ID", raising=False)
    assert asked("10.0.0.9", "6.6.6.6, 1.2.3.4") == "10.0.0.9"
    monkeypatch.setenv("SPACE_ID", "someone/transformer-explorer")
    assert asked("10.0.0.9", "6.6.6.6, 1.2.3.4") == "1.2.3.4"
    monkeypatch.setenv("EXPLORER_TRUST_PROXY", "0")
    assert asked("10.0.0.9", "6.6.6.6, 1.2.3.4") == "10.0.0.9"
    monkeypatch.delenv("EXPLORER_TRUST_PROXY")
    one = asked("10.0.0.9", "2001:db8:1:2:aaaa::1")
    assert one == asked("10.0.0.9", "2001:db8:1:2:ffff:1234:5678:9abc") == "2001:db8:1:2::/64"
    assert asked("10.0.0.9", "2001:db8:1:3::1") != one
    assert asked("::ffff:192.0.2.7", "") == asked("10.0.0.9", "::ffff:192.0.2.7") == "192.0.2.7"


# ----------------------------------------------------------------------------- 7. a prober beside the class


def test_a_prober_beside_the_class_locks_out_no_student_with_the_link():
    """The siege's finding: the class shares an address with a script guessing codes (the
    projected code, one school NAT, a Space's proxy). Once the address has used its misses,
    every lookup from it was refused, so a student joining late or reloading their page was
    turned away. Now a request that proves it belongs to the room (the student link's invite,
    a member token) is no probe; a typed code alone is still refused, and a wrong invite is a
    probe like any guess."""
    from explorer.ui.page import classroom
    from explorer.ui.page.class_teacher import teacher_values

    rooms, clock = store()
    code, secret = rooms.create("teacher")
    school = "203.0.113.50"
    early = rooms.join(code, "Ada", session="early", address=school)[1]
    for i in range(30):                                   # the prober's guesses, then more
        try:
            rooms.revision(f"ZZZZZ{'23456789'[i % 8]}", address=school)
        except InputError as error:
            assert error.key == "classroom.err.probes"
    refusal("classroom.err.probes", rooms.join, code, session="typed", address=school)
    refusal("classroom.err.probes", rooms.revision, code, address=school, invite="x" * 16)
    refusal("classroom.err.probes", rooms.join, code, session="t", address=school, invite="x" * 16)
    # the link the teacher's page shows (and its QR code) carries the invite
    info = teacher_values(code, secret, request(), "en", rooms)[0]
    link = re.search(r"\?room=\w+&invite=[\w-]+", info).group(0)
    invite = link.split("invite=")[1]
    assert invite == rooms.invite(code, secret) and len(invite) >= 16
    # a late student opens the link and joins, through the handlers a page calls
    late = request(session="late", host=school, query={"room": code, "invite": invite})
    loaded = classroom.on_load(None, "en", None, request=late, rooms=rooms)
    assert loaded[0] == {"role": "invited", "code": code, "invite": invite}, loaded[4]
    joined = classroom.join(code, "Bea", loaded[0], "en", late, rooms=rooms)
    assert joined[0]["role"] == "student" and code in joined[3]
    # a student who joined before reloads their page: their stored token proves them
    again = request(session="early-reloaded", host=school, query={"room": code})
    reloaded = classroom.on_load({"code": code, "token": early}, "en", None, request=again, rooms=rooms)
    assert reloaded[0]["token"] == early, reloaded[4]
    assert rooms.teacher_view(code, secret)["members"] == 2
    # the invite opens its own room only: it is no key to another room's lookups
    other, _ = rooms.create("elsewhere")
    refusal("classroom.err.probes", rooms.join, other, session="x", address=school, invite=invite)
    clock.now += 61                                       # a minute on, typing works again
    assert rooms.join(code, "Cy", session="typed", address=school)[0] == code
