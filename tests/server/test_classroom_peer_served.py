"""Peer instruction and pacing through Gradio's HTTP API (gradio_client), as a hostile client
reaches them: a student's session calling the teacher's close, vote again, reveal, pause and
release changes nothing (its session holds no secret); answering from the bar while the vote is
closed is refused in words, and so is a second close; the second round and the reveal of both
rounds go through for the teacher; a held class's line reaches the student's poll."""
from __future__ import annotations

import pytest
from gradio_client.exceptions import AppError

from explorer.classroom.rooms import ROOMS
from explorer.locales import text
from tests.server.test_classroom_attacks_served import fresh_limits  # noqa: F401 (autouse)
from tests.server.test_classroom_endpoints import STEP, client, outputs_of, poll_view, start


def _token_of(code, index):
    with ROOMS._lock:
        return list(ROOMS._rooms[code].members)[index]


def test_the_vote_and_the_pause_through_the_api(class_url):
    teacher, code = start(class_url)
    ada, bob = client(class_url), client(class_url)
    for i, s in enumerate((ada, bob)):
        outputs_of(s.predict(code, f"p{i}", "en", api_name="/class_join"))
    teacher.predict(STEP, "en", api_name="/class_move")
    for s in (ada, bob):
        poll_view(s)                      # the page reads the class's link (its state keeps it)
    assert "is in" in str(ada.predict(3000, "en", api_name="/class_send"))
    assert "is in" in str(bob.predict(STEP, 9000, "en", api_name="/class_answer"))
    # a student's session is no teacher: none of the teacher's controls does anything
    for name in ("/class_close", "/class_revote", "/class_reveal", "/class_pause", "/class_release"):
        ada.predict("en", api_name=name)
    view = ROOMS.teacher_view(code, ROOMS._rooms[code].secret)
    assert view["phase"] == "vote" and not view["paused"] and view["voted"] == [2]
    teacher.predict("en", api_name="/class_close")
    with pytest.raises(AppError, match="vote is closed"):
        ada.predict(3500, "en", api_name="/class_send")
    with pytest.raises(AppError, match="not the next step"):
        teacher.predict("en", api_name="/class_close")
    assert any(text("classroom.bar.discuss", "en") in line for line in poll_view(ada))
    teacher.predict("en", api_name="/class_revote")
    poll_view(ada)
    assert "is in" in str(ada.predict(5000, "en", api_name="/class_send"))
    with pytest.raises(AppError, match="between 0 and"):
        bob.predict(1e12, "en", api_name="/class_send")
    teacher.predict("en", api_name="/class_pause")
    assert any(text("classroom.bar.paused", "en") in line for line in poll_view(bob))
    teacher.predict("en", api_name="/class_release")
    teacher.predict("en", api_name="/class_reveal")
    seen = ROOMS.student_view(code, _token_of(code, 1))
    assert len(seen["histograms"]) == 2 and [h.n for h in seen["histograms"]] == [2, 1]
    assert seen["mine_first"] == 9000 and seen["mine"] is None and not seen["paused"]
