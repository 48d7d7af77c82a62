"""The class game's round store (explorer/classroom/game.py) on an injectable clock, with a toy
tokenizer and a made-up distribution: rounds, guesses matched to tokens (a word of several
tokens, the leading-space spelling), limits, hostile calls, what a student's view holds; and
the round's computation on a tiny random model (the lens's last layer is the model's own)."""
from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch

from explorer.classroom import game as store
from explorer.classroom.game import Games, Lens, check_setup
from explorer.classroom.rooms import Rooms
from explorer.inputs import InputError

V = 97


class Tok:
    """A toy tokenizer: a few words (with and without their leading space), else characters."""
    WORDS = {" Paris": 5, "Paris": 6, " Wash": 7, "ington": 8, "Wash": 9, " the": 3, " a": 4,
             " London": 10, "London": 11, " <b>x": 12}

    def __init__(self):
        self.back = {i: w for w, i in self.WORDS.items()}

    def __call__(self, text, add_special_tokens=True):
        ids, i = [], 0
        while i < len(text):
            word = max((w for w in self.WORDS if text.startswith(w, i)), key=len, default=None)
            if word:
                ids.append(self.WORDS[word])
                i += len(word)
            else:
                ids.append(30 + ord(text[i]) % 60)
                i += 1
        return {"input_ids": ids}

    def decode(self, ids):
        return "".join(self.back.get(i, chr(i)) for i in ids)


def distribution():
    """" Paris" first (40 %), " London" (20 %), " the" (10 %), " Wash" next to last, "Wash" last."""
    p = torch.full((V,), 0.3 / (V - 4))
    p[5], p[10], p[3] = 0.4, 0.2, 0.1
    p[7], p[9] = 1e-6, 1e-7
    return p / p.sum()


class Clock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now


@pytest.fixture
def room():
    clock = Clock()
    rooms = Rooms(clock=clock, wall=lambda: 1.7e9)
    games = Games(rooms, clock=clock, wall=lambda: 1.7e9)
    code, secret = rooms.create("10.0.0.1")
    members = [rooms.join(code, f"s{i}", session=f"session-{i}", address="10.0.0.2")[1] for i in range(4)]
    return SimpleNamespace(rooms=rooms, games=games, code=code, secret=secret, members=members, clock=clock)


def open_round(r, mode="greedy", drawn=None, temperature=0.8, seed=3):
    setup = check_setup("The capital of France is", "toy", mode, temperature, seed, ["toy"])
    prediction = SimpleNamespace(probs=distribution())
    return r.games.start(r.code, r.secret, setup, prediction, Tok(), drawn)


def lens_for(plan, layers=4, lead=2):
    """A made-up lens of the plan's tokens: the first token leads from `lead` on, the rest never."""
    rank = tuple(tuple((0 if (i == 0 and layer >= lead) else 5 + i * 10 + layers - layer)
                       for i in range(len(plan.tokens))) for layer in range(layers + 1))
    prob = tuple(tuple(0.5 if r == 0 else 0.01 for r in row) for row in rank)
    return Lens(plan.tokens, rank, prob, tuple(lead if i == 0 else None for i in range(len(plan.tokens))))


def reveal(r):
    plan = r.games.reveal_plan(r.code, r.secret)
    lens = lens_for(plan)
    return r.games.reveal(r.code, r.secret, plan, lens, {t: Tok().decode([t]) for t in plan.labelled})


def refused(key, call, *args, **kwargs):
    with pytest.raises(InputError) as caught:
        call(*args, **kwargs)
    assert caught.value.key == key, caught.value.key


def test_a_greedy_round_from_start_to_reveal(room):
    assert open_round(room) == 1
    a, b, c, d = room.members
    # "Paris" is tried as " Paris" and "Paris": the spaced one is the likelier, so it counts
    first = room.games.guess(room.code, a, 1, "Paris")
    assert first.match.token == 5 and first.match.spelled == " Paris" and first.pieces == (" Paris",)
    room.games.guess(room.code, b, 1, " Paris")
    # a word of two tokens counts as its first, " Wash"; its pieces say so
    wash = room.games.guess(room.code, c, 1, "Washington")
    assert wash.match.token == 7 and wash.match.pieces == (7, 8) and wash.pieces == (" Wash", "ington")
    room.games.guess(room.code, d, 1, "London")
    room.games.guess(room.code, d, 1, "the")            # a new guess replaces the member's
    # a student's view before the reveal: the prompt, their own guess, no count, no tally
    view = room.games.student_view(room.code, c)
    assert view["round"] == 1 and view["setup"].prompt == "The capital of France is"
    assert view["mine"].typed == "Washington" and view["guessed"] is None and view["reveal"] is None
    assert room.games.teacher_view(room.code, room.secret)["guessed"] == 4
    done = reveal(room)
    # " Paris" twice (named), " the" once but in the model's top 20 (named), " Wash" once and
    # far down the distribution: counted in "other guesses", never named
    assert [(t, n) for t, n, _ in done.tally.named] == [(5, 2), (3, 1)]
    assert done.tally.others == 1 and done.tally.total == 4 and done.tally.class_top == 5
    assert done.lens.tokens == (5,)         # the class's top is the model's own: ranked once
    assert 7 not in done.labels              # a token nobody may see is not even labelled
    view = room.games.student_view(room.code, a)
    assert view["reveal"] is done and view["guessed"] == 4 and view["mine"].typed == "Paris"
    # after the reveal no guess counts
    refused("game.err.revealed", room.games.guess, room.code, b, 1, "London")
    refused("game.err.revealed", room.games.reveal_plan, room.code, room.secret)


def test_a_sampled_round_ranks_the_drawn_token_too(room):
    open_round(room, "sampled", drawn=(10, 0.25))
    a, b, *_ = room.members
    room.games.guess(room.code, a, 1, "the")
    room.games.guess(room.code, b, 1, "the")
    plan = room.games.reveal_plan(room.code, room.secret)
    assert plan.tokens == (5, 3, 10)        # the model's top, the class's top, the drawn token
    reveal(room)
    view = room.games.teacher_view(room.code, room.secret)
    assert view["drawn"] == 10 and view["drawn_p"] == 0.25 and view["setup"].temperature == 0.8
    # a sampled round without its drawn token (or a greedy one with one) is refused
    setup = check_setup("x", "toy", "sampled", 1.0, 0, ["toy"])
    refused("game.err.mode", room.games.start, room.code, room.secret, setup,
            SimpleNamespace(probs=distribution()), Tok(), None)


def test_the_settings_are_checked(room):
    for args, key in [(("", "toy", "greedy", 1, 0), "game.err.prompt"),
                      (("x" * 401, "toy", "greedy", 1, 0), "game.err.prompt"),
                      ((b"x", "toy", "greedy", 1, 0), "game.err.prompt"),
                      (("x", "other", "greedy", 1, 0), "game.err.model"),
                      (("x", ["toy"], "greedy", 1, 0), "game.err.model"),
                      (("x", "toy", "beam", 1, 0), "game.err.mode"),
                      (("x", "toy", "sampled", float("nan"), 0), "game.err.temperature"),
                      (("x", "toy", "sampled", 0.0, 0), "game.err.temperature"),
                      (("x", "toy", "sampled", True, 0), "game.err.temperature"),
                      (("x", "toy", "sampled", 1.0, -1), "game.err.seed"),
                      (("x", "toy", "sampled", 1.0, 1.5), "game.err.seed"),
                      (("x", "toy", "sampled", 1.0, 2**31), "game.err.seed"),
                      (("x", "toy", "sampled", 1.0, "7"), "game.err.seed")]:
        refused(key, check_setup, *args, ["toy"])
    assert check_setup("x", "toy", "greedy", float("nan"), "junk", ["toy"]).temperature == 0.0


def test_hostile_calls_are_refused(room):
    a, b, *_ = room.members
    refused("game.err.no_round", room.games.guess, room.code, a, 1, "Paris")   # none open
    open_round(room)
    # a student is no teacher: their token as the secret opens, reveals and closes nothing
    refused("classroom.err.secret", room.games.reveal_plan, room.code, a)
    refused("classroom.err.secret", room.games.close, room.code, a)
    refused("classroom.err.secret", room.games.csv_text, room.code, None)
    refused("classroom.err.secret", open_round, SimpleNamespace(**{**vars(room), "secret": a}))
    # guesses: another round's number, a bool, text too long or no text at all
    refused("game.err.no_round", room.games.guess, room.code, a, 2, "Paris")
    refused("game.err.no_round", room.games.guess, room.code, a, True, "Paris")
    refused("game.err.no_round", room.games.guess, room.code, a, None, "Paris")
    for bad in ("x" * 41, "x" * 10_000_000, "", "   \u200b\n", None, 12, ["Paris"], {"a": 1}, b"Paris"):
        refused("next.err.guess", room.games.guess, room.code, a, 1, bad)
    # a stranger's token, a teacher's secret as a token, a member of another room
    refused("classroom.err.not_member", room.games.guess, room.code, "x" * 22, 1, "Paris")
    refused("classroom.err.not_member", room.games.guess, room.code, room.secret, 1, "Paris")
    other, _ = room.rooms.create("10.0.0.9")
    stranger = room.rooms.join(other, None, session="elsewhere", address="10.0.0.3")[1]
    refused("classroom.err.not_member", room.games.guess, room.code, stranger, 1, "Paris")
    refused("classroom.err.not_member", room.games.student_view, room.code, stranger)
    refused("game.err.no_round", room.games.guess, other, stranger, 1, "Paris")
    refused("classroom.err.code", room.games.guess, "x" * 10_000, a, 1, "Paris")
    # the rate: GUESSES_PER_MINUTE a member a minute, another member unaffected
    for _ in range(store.GUESSES_PER_MINUTE):
        room.games.guess(room.code, a, 1, "Paris")
    refused("game.err.rate", room.games.guess, room.code, a, 1, "Paris")
    room.games.guess(room.code, b, 1, "Paris")
    room.clock.now += 61
    room.games.guess(room.code, a, 1, "London")
    # a closed round takes no guess; a second close says there is none
    room.games.close(room.code, room.secret)
    refused("game.err.no_round", room.games.guess, room.code, b, 1, "Paris")
    refused("game.err.no_round", room.games.close, room.code, room.secret)
    assert room.games.student_view(room.code, a)["round"] is None


def test_a_guess_wakes_the_teacher_only_and_a_round_everyone(room):
    a = room.members[0]
    before = room.rooms.revision(room.code, a)
    open_round(room)
    after_start = room.rooms.revision(room.code, a)
    assert after_start == before + 1
    watch = room.rooms.watch_token(room.code, room.secret)
    teacher_before = room.rooms.revision(room.code, watch)
    room.games.guess(room.code, a, 1, "Paris")
    assert room.rooms.revision(room.code, a) == after_start
    assert room.rooms.revision(room.code, watch) == teacher_before + 1
    reveal(room)
    assert room.rooms.revision(room.code, a) == after_start + 1


def test_rounds_are_bounded_and_the_csv_has_every_guess(room):
    a, b, *_ = room.members
    for n in range(1, store.ROUNDS_KEPT + 4):
        assert open_round(room) == n
        room.games.guess(room.code, a, n, "Paris")
        room.clock.now += 11          # the rate: 6 guesses a minute
    assert len(room.games._games[room.code].rounds) == store.ROUNDS_KEPT
    room.rooms.join(room.code, "=HYPERLINK(1)", session="session-1", address="10.0.0.2")
    room.games.guess(room.code, b, store.ROUNDS_KEPT + 3, "=cmd")
    rows = room.games.csv_text(room.code, room.secret).splitlines()
    assert rows[0].startswith("round,prompt,model,mode")
    assert len(rows) == 1 + store.ROUNDS_KEPT + 1
    assert "s0" in rows[1] and " Paris" in rows[1]
    assert "'=HYPERLINK(1)" in rows[-1] and "'=cmd" in rows[-1]


def test_a_room_that_ends_takes_its_rounds_with_it(room):
    open_round(room)
    room.rooms.end(room.code, room.secret)
    room.clock.now += store.SWEEP_S + 1
    code, secret = room.rooms.create("10.0.0.5")
    assert room.games.teacher_view(code, secret)["round"] is None
    assert room.code not in room.games._games


def test_the_round_runs_on_a_tiny_model(tiny_llama):
    """run_start's forward and drawn token, run_lens's ranks: the last layer's ranks are the
    model's own (its top token ranks first there), a sampled round's token is the sampler's."""
    from explorer.nexttoken import distribution

    loaded = SimpleNamespace(model=tiny_llama, tokenizer=Tok())
    greedy = check_setup("The capital of France is", "toy", "greedy", 1, 0, ["toy"])
    prediction, drawn = store.run_start(loaded, greedy)
    assert drawn is None and prediction.probs.shape == (V,)
    sampled = check_setup("The capital of France is", "toy", "sampled", 1.5, 11, ["toy"])
    prediction2, (token, p) = store.run_start(loaded, sampled)
    params = distribution.sampling(1.5, 0, 1.0, seed=11)
    expected = distribution.samples(tiny_llama, prediction2, params, 1, 11)[0]
    assert (token, p) == (expected.tokens[0], expected.first_p) and 0 < p <= 1
    top = int(torch.argmax(prediction.probs))
    other = (top + 1) % V
    plan = store.Plan(1, "toy", prediction, (top, other), None, (top, other))
    lens = store.run_lens(tiny_llama, plan)
    assert lens.n_layers == tiny_llama.config.n_layers
    assert lens.rank[-1][0] == 0 and lens.lead[0] is not None and lens.lead[1] is None
    assert lens.prob[-1][0] == pytest.approx(float(prediction.probs[top]), rel=1e-5)
