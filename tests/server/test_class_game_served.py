"""The class game's endpoints through Gradio's HTTP API (gradio_client), as a hostile client
reaches them, on the Class tab served with the real SmolLM2: a round's forward and reveal run
for the teacher's session only; a student's session opens, reveals, closes and downloads
nothing; a stranger guesses nothing; odd guesses and settings are refused in words; a student's
view holds their own guess and the published tally, never another student's text."""
from __future__ import annotations

import csv

import pytest

from tests.server.test_classroom_attacks_served import fresh_limits  # noqa: F401 (autouse)
from tests.server.test_classroom_endpoints import _file, client, outputs_of, start

MODEL = "smollm2-135m-instruct"


def _text(result) -> str:
    return "\n".join(str(o) for o in outputs_of(result))


def _round(teacher, mode="greedy", temperature=1.0, seed=0, prompt="The capital of France is"):
    return _text(teacher.predict(MODEL, prompt, mode, temperature, seed, "en", api_name="/game_start"))


def test_a_round_through_the_api_and_its_hostile_calls(class_url):
    from gradio_client.exceptions import AppError

    teacher, code = start(class_url)
    students = [client(class_url) for _ in range(3)]
    for i, s in enumerate(students):
        s.predict(code, f"nick{i}", "en", api_name="/class_join")
    stranger = client(class_url)
    # nobody but the teacher's session runs a round
    for s in (students[0], stranger):
        for api in ("/game_reveal", "/game_close", "/game_csv"):
            with pytest.raises(AppError, match="Only the teacher"):
                s.predict("en", api_name=api)
        with pytest.raises(AppError, match="Only the teacher"):
            s.predict(MODEL, "Hi", "greedy", 1.0, 0, "en", api_name="/game_start")
    # the teacher's settings are checked before any forward
    for prompt, mode, temperature, seed, message in (
            ("x" * 401, "greedy", 1.0, 0, "at most 400"),
            ("   ", "greedy", 1.0, 0, "at most 400"),
            ("Hi", "sampled", 5.0, 0, "maximum"),       # the slider's bound, Gradio's words
            ("Hi", "sampled", 1.0, -3, "minimum")):
        with pytest.raises(AppError, match=message):
            teacher.predict(MODEL, prompt, mode, temperature, seed, "en", api_name="/game_start")
    with pytest.raises(AppError):
        teacher.predict(MODEL, "Hi", "beam", 1.0, 0, "en", api_name="/game_start")
    with pytest.raises(AppError, match="Join the class"):
        stranger.predict("Paris", "en", api_name="/game_guess")
    # a student whose page never drew the round has no round to guess in
    with pytest.raises(AppError, match="no open round"):
        students[0].predict("Paris", "en", api_name="/game_guess")

    said = _round(teacher)
    assert "Round 1" in said and "0 guesses so far" in said
    for s in students:
        view = _text(s.predict("en", api_name="/game_view"))
        assert "The capital of France is" in view and "guess the next token" in view
    for bad in ("x" * 10_000, "", None):
        with pytest.raises(AppError, match="A guess is one word"):
            students[0].predict(bad, "en", api_name="/game_guess")
    mine = [_text(s.predict(w, "en", api_name="/game_guess"))
            for s, w in zip(students, ("Paris", "Paris", "Strasbourg"))]
    assert "Your guess: Paris" in mine[0] and "“␣Paris”" in mine[0]
    assert "3 tokens" in mine[2] and "“␣St” + “ras” + “bourg”" in mine[2] and "the next step decides only the first" in mine[2], mine[2]
    assert "3 guesses so far" in _text(teacher.predict("en", api_name="/game_view"))
    with pytest.raises(AppError, match="Only the teacher"):
        students[1].predict("en", api_name="/game_reveal")
    revealed = _text(teacher.predict("en", api_name="/game_reveal"))
    assert "Logit lens" in revealed and "chosen by 2 of 3 students" in revealed, revealed
    seen = _text(students[0].predict("en", api_name="/game_view"))
    assert "Logit lens" in seen and "Strasbourg" not in seen and "nick2" not in seen
    with pytest.raises(AppError, match="was revealed"):
        students[2].predict("London", "en", api_name="/game_guess")
    rows = list(csv.reader(open(_file(teacher.predict("en", api_name="/game_csv")), encoding="utf-8")))
    assert rows[0][:4] == ["round", "prompt", "model", "mode"]
    assert sorted((r[6], r[7]) for r in rows[1:]) == [("nick0", "Paris"), ("nick1", "Paris"),
                                                      ("nick2", "Strasbourg")]

    # a sampled round: the drawn token and its probability under the sampler
    said = _round(teacher, "sampled", 0.8, 7)
    assert "Round 2" in said and "temperature 0.8 (seed 7)" in said
    students[0].predict("en", api_name="/game_view")
    students[0].predict("Paris", "en", api_name="/game_guess")
    revealed = _text(teacher.predict("en", api_name="/game_reveal"))
    assert "**Drawn** by the sampler at temperature 0.8 (seed 7)" in revealed
    teacher.predict("en", api_name="/game_close")
    assert "No round now" in _text(students[1].predict("en", api_name="/game_view"))
