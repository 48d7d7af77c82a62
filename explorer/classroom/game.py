"""The class game "what will the model say next": the round store of a live class, no UI import.

A teacher opens a round in their room: a prompt, the model it runs on, greedy or sampled (with
a temperature and a seed). The teacher's handler runs the prompt's forward once, before the
round opens (explorer/nexttoken/distribution.py `predict`; a sampled round's token drawn by the
Generate tab's sampler with the round's seed), and hands the store the distribution, the
recorded residual streams (for the logit lens at the reveal) and the tokenizer: every guess is
matched against them (explorer/nexttoken/guesses.py `match`), never another forward.

Each member guesses the next token (typed; a new guess replaces theirs until the reveal); the
guess is kept as the matched token, with the member's typed text for that member (and the
teacher's CSV) only. The reveal is computed once: the class's tally under the model's
distribution (`guesses.tally`, with its privacy rule: a token is named only if two students
chose it or the model has it among its top 20) and the lens's ranks of the class's top guess,
the model's own top token and the drawn one, handed in by the teacher's handler (`reveal_plan`,
then `reveal`, so the lens's forward runs outside the store's lock).

Who is who comes from the room store (explorer/classroom/rooms.py): the teacher by the room's
secret (`Rooms.check_teacher`), a member by their token (`Rooms.member_id`); a round's change
wakes the pages through `Rooms.bump` (a guess wakes the teacher's page only). Every check is
here, as a hostile client calls the handlers through the HTTP API:
- the prompt at most MAX_PROMPT_CHARS, the mode one of MODES, the temperature within
  [MIN_TEMPERATURE, MAX_TEMPERATURE], the seed a whole number in [0, MAX_SEED];
- GUESSES_PER_MINUTE guesses a member a minute; a guess only in the room's open round, by one
  of its members, of at most guesses.MAX_GUESS_CHARS characters;
- ROUNDS_KEPT rounds a room (the oldest go), one open at a time; a room the room store no longer
  holds loses its rounds (checked every SWEEP_S). Only the open round holds its distribution (V
  floats: 1 MB for Gemma's 262,144 tokens) and its recorded residuals (until the reveal, under
  1 MB on both models); a closed round keeps its guesses (each with its probability) alone.
"""
from __future__ import annotations

import csv
import io
import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Optional

import torch

from explorer.classroom.limits import Window
from explorer.classroom.questions import _csv_safe
from explorer.classroom.rooms import ROOMS, Rooms, clean_code
from explorer.inputs import InputError
from explorer.nexttoken import guesses
from explorer.nexttoken.guesses import Match, Tally

MAX_PROMPT_CHARS = 400
MODES = ("greedy", "sampled")
MIN_TEMPERATURE, MAX_TEMPERATURE = 0.1, 2.0
MAX_SEED = 2**31 - 1
GUESSES_PER_MINUTE = 6
ROUNDS_KEPT = 12
TOP_SHOWN = 8          # the model's top tokens the reveal draws (the class's named ones beside)
SWEEP_S = 5.0


@dataclass(frozen=True)
class Setup:
    prompt: str
    model: str
    mode: str
    temperature: float    # a greedy round: 0 (the argmax)
    seed: int


def check_setup(prompt: Any, model: Any, mode: Any, temperature: Any, seed: Any,
                models: Any) -> Setup:
    """A round's settings, checked (InputError in words otherwise); `models` the names the
    server serves."""
    if not isinstance(prompt, str) or not prompt.strip() or len(prompt) > MAX_PROMPT_CHARS:
        raise InputError("game.err.prompt", limit=MAX_PROMPT_CHARS)
    if not isinstance(model, str) or model not in models:
        raise InputError("game.err.model")
    if mode not in MODES:
        raise InputError("game.err.mode")
    if mode == "greedy":
        return Setup(prompt, model, mode, 0.0, 0)
    if isinstance(temperature, bool) or not isinstance(temperature, (int, float)) or \
            not math.isfinite(temperature) or not MIN_TEMPERATURE <= temperature <= MAX_TEMPERATURE:
        raise InputError("game.err.temperature", low=MIN_TEMPERATURE, high=MAX_TEMPERATURE)
    if isinstance(seed, bool) or not isinstance(seed, (int, float)) or not math.isfinite(seed) or \
            seed != int(seed) or not 0 <= seed <= MAX_SEED:
        raise InputError("game.err.seed", high=MAX_SEED)
    return Setup(prompt, model, mode, float(temperature), int(seed))


@dataclass(frozen=True)
class Guess:
    member: str           # the member's id (the teacher's handle)
    typed: str            # as the member typed it (cleaned): theirs and the teacher's CSV only
    match: Match
    pieces: tuple[str, ...]   # the matched spelling's tokens, as text
    wall: float
    p: float = 0.0        # the token's probability under the model


@dataclass(frozen=True)
class Lens:
    """The logit lens at the prompt's last position (lens.ranks), for the tokens the reveal
    names: rank[l][i] and prob[l][i] after l blocks, lead[i] = Ranks.lead_layer(i)."""
    tokens: tuple[int, ...]
    rank: tuple[tuple[int, ...], ...]
    prob: tuple[tuple[float, ...], ...]
    lead: tuple[Optional[int], ...]

    @property
    def n_layers(self) -> int:
        return len(self.rank) - 1

    def of(self, token: int) -> Optional[int]:
        return self.tokens.index(token) if token in self.tokens else None


@dataclass(frozen=True)
class Reveal:
    tally: Tally
    top: tuple[tuple[int, float], ...]    # the model's TOP_SHOWN tokens and probabilities
    lens: Lens
    labels: dict                          # token -> its text, for every token the reveal names


@dataclass
class Round:
    number: int
    setup: Setup
    probs: Any                    # (V,) the model's distribution after the prompt (None once
                                  # closed: a round kept for the CSV holds its guesses only)
    tokenizer: Any
    prediction: Any               # distribution.Prediction until the reveal (the lens reads it)
    greedy: int                   # the model's most likely token
    drawn: Optional[int]          # a sampled round's token (the Generate tab's sampler, the seed)
    drawn_p: float                # its probability under the sampler's distribution
    started: float
    guesses: dict[str, Guess] = field(default_factory=dict)   # member token -> guess
    reveal: Optional[Reveal] = None
    closed: bool = False


@dataclass
class Game:
    rounds: list[Round] = field(default_factory=list)
    version: int = 0              # bumped on every change a page shows

    @property
    def current(self) -> Optional[Round]:
        return self.rounds[-1] if self.rounds and not self.rounds[-1].closed else None


@dataclass(frozen=True)
class Plan:
    """What the reveal's lens reads: the open round's forward and the tokens to rank."""
    number: int
    model: str
    prediction: Any
    tokens: tuple[int, ...]
    tally: Tally
    labelled: tuple[int, ...]     # every token the reveal names (its text is looked up)


class Games:
    """The rounds of every room of `rooms` (see the module doc)."""

    def __init__(self, rooms: Rooms = ROOMS, *, guesses_per_minute: int = GUESSES_PER_MINUTE,
                 rounds_kept: int = ROUNDS_KEPT, clock: Callable[[], float] = time.monotonic,
                 wall: Callable[[], float] = time.time):
        self.rooms, self.rounds_kept, self.clock, self.wall = rooms, rounds_kept, clock, wall
        self._games: dict[str, Game] = {}
        self._guesses = Window(guesses_per_minute, 60.0, 10_000)     # member token -> guesses
        self._swept = -math.inf
        self._lock = threading.Lock()

    def _sweep(self) -> None:
        now = self.clock()
        if now - self._swept < SWEEP_S:
            return
        self._swept = now
        for code in [c for c in self._games if self.rooms.revision(c) is None]:
            del self._games[code]

    def _game(self, code: str) -> Game:
        self._sweep()
        return self._games.setdefault(code, Game())

    # ------------------------------------------------------------------ teacher

    def start(self, code: Any, secret: Any, setup: Setup, prediction: Any, tokenizer: Any,
              drawn: Optional[tuple[int, float]] = None) -> int:
        """Open a round (the open one, if any, closes); returns its number."""
        code = self.rooms.check_teacher(code, secret)
        if not isinstance(setup, Setup) or (setup.mode == "sampled") != (drawn is not None):
            raise InputError("game.err.mode")
        probs = prediction.probs
        with self._lock:
            game = self._game(code)
            number = game.rounds[-1].number + 1 if game.rounds else 1
            for old in game.rounds:
                old.closed, old.prediction, old.probs, old.tokenizer = True, None, None, None
            game.rounds.append(Round(number, setup, probs, tokenizer, prediction,
                                     int(torch.argmax(probs)), drawn[0] if drawn else None,
                                     float(drawn[1]) if drawn else 0.0, self.wall()))
            del game.rounds[:-self.rounds_kept]
            game.version += 1
        self.rooms.bump(code)
        return number

    def reveal_plan(self, code: Any, secret: Any) -> Plan:
        """The open round's forward and the tokens the lens ranks: the class's top guess (when
        it is named), the model's own top token, the drawn one."""
        code = self.rooms.check_teacher(code, secret)
        with self._lock:
            now = self._open(code)
            tally = guesses.tally([g.match.token for g in now.guesses.values()], now.probs)
            tokens = [now.greedy]
            for extra in (tally.class_top, now.drawn):
                if extra is not None and extra not in tokens:
                    tokens.append(extra)
            top = torch.topk(now.probs, min(TOP_SHOWN, now.probs.numel())).indices.tolist()
            labelled = set(top) | set(tokens) | {t for t, _, _ in tally.named}
            return Plan(now.number, now.setup.model, now.prediction, tuple(tokens), tally,
                        tuple(sorted(labelled)))

    def reveal(self, code: Any, secret: Any, plan: Plan, lens: Lens, labels: dict) -> Reveal:
        """Publish the reveal of the round `plan` was made for (still open, not revealed)."""
        code = self.rooms.check_teacher(code, secret)
        with self._lock:
            now = self._open(code)
            if now.number != plan.number:
                raise InputError("game.err.no_round")
            values, order = torch.topk(now.probs, min(TOP_SHOWN, now.probs.numel()))
            now.reveal = Reveal(plan.tally, tuple((int(t), float(p)) for t, p in zip(order, values)),
                                lens, dict(labels))
            now.prediction = None
            self._games[code].version += 1
        self.rooms.bump(code)
        return now.reveal

    def _open(self, code: str) -> Round:
        now = self._game(code).current
        if now is None:
            raise InputError("game.err.no_round")
        if now.reveal is not None:
            raise InputError("game.err.revealed")
        return now

    def close(self, code: Any, secret: Any) -> None:
        """End the open round (revealed or not): no more guesses; kept for the CSV."""
        code = self.rooms.check_teacher(code, secret)
        with self._lock:
            game = self._game(code)
            now = game.current
            if now is None:
                raise InputError("game.err.no_round")
            now.closed, now.prediction, now.probs, now.tokenizer = True, None, None, None
            game.version += 1
        self.rooms.bump(code)

    # ------------------------------------------------------------------ members

    def guess(self, code: Any, token: Any, number: Any, typed: Any) -> Guess:
        """A member's guess in round `number` (the open one): matched to the round's tokenizer;
        a new guess replaces the member's until the reveal."""
        typed = guesses.clean_guess(typed)
        code = clean_code(code)
        member = self.rooms.member_id(code, token)
        with self._lock:
            now = self._game(code).current
            if now is None or isinstance(number, bool) or number != now.number:
                raise InputError("game.err.no_round")
            if now.reveal is not None:
                raise InputError("game.err.revealed")
            if not self._guesses.allow(token, self.clock()):
                raise InputError("game.err.rate", n=self._guesses.limit)
            match = guesses.match(now.tokenizer, typed, now.probs)
            pieces = tuple(now.tokenizer.decode([p]) for p in match.pieces[:8])
            mine = now.guesses[token] = Guess(member, typed, match, pieces, self.wall(),
                                              float(now.probs[match.token]))
        self.rooms.bump(code, everyone=False)
        return mine

    # ------------------------------------------------------------------ views

    def _view(self, game: Optional[Game], token: Optional[str]) -> dict:
        """The round as every page may show it; `token`: the member whose own guess is added."""
        last = game.rounds[-1] if game and game.rounds else None
        if last is None or last.closed:
            return {"round": None, "version": game.version if game else 0}
        view = {"round": last.number, "version": game.version, "setup": last.setup,
                "guessed": len(last.guesses), "reveal": last.reveal, "greedy": last.greedy,
                "drawn": last.drawn, "drawn_p": last.drawn_p, "mine": None}
        if last.reveal is not None:
            view["probs"] = {t: float(last.probs[t]) for t in (last.greedy, last.drawn) if t is not None}
        if token is not None:
            view["mine"] = last.guesses.get(token)
        return view

    def student_view(self, code: Any, token: Any) -> dict:
        """A member's view: the round, their own guess, the reveal once published; how many
        guessed only after the reveal (it is in the tally); never another member's text."""
        code = clean_code(code)
        self.rooms.member_id(code, token)
        with self._lock:
            self._sweep()
            view = self._view(self._games.get(code), token)
        if view["round"] is not None and view["reveal"] is None:
            view["guessed"] = None
        return view

    def teacher_view(self, code: Any, secret: Any) -> dict:
        code = self.rooms.check_teacher(code, secret)
        with self._lock:
            self._sweep()
            return self._view(self._games.get(code), None)

    def csv_text(self, code: Any, secret: Any) -> str:
        """Every guess of the room's kept rounds: round, prompt, model, mode, temperature,
        seed, member's nickname (or id), typed, the token it was scored as, its probability
        under the model, time (UTC)."""
        code = self.rooms.check_teacher(code, secret)
        names = {m: nick for m, nick, _ in self.rooms.teacher_view(code, secret)["roster"]}
        out = io.StringIO()
        writer = csv.writer(out)
        writer.writerow(["round", "prompt", "model", "mode", "temperature", "seed", "member",
                         "guess", "token", "probability", "time"])
        with self._lock:
            game = self._games.get(code)
            for r in game.rounds if game else ():
                for g in sorted(r.guesses.values(), key=lambda g: g.wall):
                    writer.writerow([r.number, _csv_safe(r.setup.prompt), r.setup.model, r.setup.mode,
                                     f"{r.setup.temperature:g}", r.setup.seed,
                                     _csv_safe(names.get(g.member) or g.member), _csv_safe(g.typed),
                                     _csv_safe(g.match.spelled), f"{g.p:.6g}",
                                     time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(g.wall))])
        return out.getvalue()


GAMES = Games()


# ---------------------------------------------------------------------- the round's computation


def run_start(loaded: Any, setup: Setup) -> tuple[Any, Optional[tuple[int, float]]]:
    """The round's forward (distribution.predict: one forward of the prompt on our modules,
    every block's residual recorded for the lens) and, in a sampled round, its token drawn by
    the Generate tab's sampler (models.generate, seed `setup.seed`, temperature, no top-k or
    top-p cut) with its probability under that sampler."""
    from explorer.nexttoken import distribution
    from explorer.prompts import encode

    ids = encode(loaded.tokenizer, setup.prompt, distribution.MAX_PROMPT_TOKENS)
    prediction = distribution.predict(loaded.model, ids)
    if setup.mode == "greedy":
        return prediction, None
    params = distribution.sampling(setup.temperature, 0, 1.0, seed=setup.seed)
    sample = distribution.samples(loaded.model, prediction, params, 1, setup.seed)[0]
    return prediction, (sample.tokens[0], sample.first_p)


def run_lens(model: Any, plan: Plan) -> Lens:
    """The logit lens (lens.ranks) of the plan's tokens at the prompt's last position."""
    from explorer.nexttoken import lens

    ranks = lens.ranks(model, plan.prediction, plan.tokens)
    return Lens(ranks.tokens, tuple(tuple(int(r) for r in row) for row in ranks.rank),
                tuple(tuple(float(p) for p in row) for row in ranks.prob),
                tuple(ranks.lead_layer(i) for i in range(len(ranks.tokens))))
