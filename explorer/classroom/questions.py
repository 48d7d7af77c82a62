"""A live class's questions, peer instruction and pacing: the part of the room store
(explorer/classroom/rooms.py, whose `Rooms` takes these methods) that asks, answers and reveals.

A question lives at a link (a lesson's predict step, or a transfer question's view link) with
the bounds of its answers. Peer instruction (Smith et al. 2009; Vickrey et al. 2015) runs as
phases of that question:

    vote      round 1: each member answers alone; every page shows only how many voted
    discuss   the teacher closed the vote: answering is closed, pages say "discuss with your
              neighbour"; nothing of the answers is shown to anyone
    revote    round 2: each member answers again (their round-1 answer is shown to them only)
    revealed  the teacher revealed: one histogram per round that ran, on the same bins, beside
              the value the teacher's run measured, and how many moved toward it

Reveal straight after round 1 (the plain flow) shows one histogram. After a reveal the teacher
may ask a **transfer question**: the same question's bounds at another link (the section at
another model, layer or setting), a question of its own (its own rounds, its own reveal)
that names the one it is the transfer of.

Pacing: the teacher may pause the class on the current step: a member cannot stop following
(the store refuses it), and a following page's lesson moves are held by its UI and pulled back
by the server (explorer/ui/page/class_peer.py). The teacher's view counts the pages that follow,
explore on their own, or have gone (not seen for MEMBER_IDLE_S); a change of those counts wakes
the teacher's page only (rooms.py's `revision` with the watch token).

Bounds: MAX_QUESTIONS questions per room (a transfer counts as one), ROUNDS rounds each, and
per round one answer per member (at most MAX_HELD * max_members members are held): a room's
answers are bounded by MAX_QUESTIONS * ROUNDS * MAX_HELD * max_members. Privacy as rooms.py's:
a member's view holds counts, their own answers, and histograms once revealed.
"""
from __future__ import annotations

import csv
import io
import math
import time
from dataclasses import dataclass, field
from typing import Any, Optional

from explorer.classroom.histogram import Histogram, histograms
from explorer.inputs import InputError

MAX_QUESTIONS = 200      # questions per room (predict steps and transfer questions)
ROUNDS = 2               # a vote alone, then a vote after the discussion
PHASES = ("vote", "discuss", "revote", "revealed")
MAX_LINK = 8192          # a stored link query (a teacher's lesson step carries its lesson: MAX_QUERY_CHARS)


@dataclass
class Question:
    """The class's answers at one link: per round, {member token: (answer, wall time)}."""
    id: str                          # "q1", "q2", ... in the order the room asked them
    link: str
    low: float
    high: float
    parent: Optional[str] = None     # the id of the question this is the transfer of
    phase: str = "vote"
    rounds: list[dict[str, tuple[float, float]]] = field(default_factory=lambda: [{}])
    measured: Optional[float] = None
    histograms: tuple[Histogram, ...] = ()   # built at the reveal (answers are closed then)
    moved: Optional[tuple[int, int]] = None  # (moved toward the measured value, answered both)

    @property
    def answers(self) -> dict[str, tuple[float, float]]:
        """The current round's answers."""
        return self.rounds[-1]

    @property
    def revealed(self) -> bool:
        return self.phase == "revealed"

    @property
    def histogram(self) -> Optional[Histogram]:
        """The last round's histogram once revealed."""
        return self.histograms[-1] if self.histograms else None


def _finite(value: Any) -> bool:
    return not isinstance(value, bool) and isinstance(value, (int, float)) and math.isfinite(value)


def moved_toward(first: dict, second: dict, measured: Optional[float]) -> Optional[tuple[int, int]]:
    """(members whose round-2 answer is closer to `measured` than their round-1 answer, members
    who answered both); None without a measured value. Differences of finite floats may be inf,
    never NaN: the comparison holds for any answers."""
    if measured is None:
        return None
    both = [t for t in second if t in first]
    closer = sum(abs(second[t][0] - measured) < abs(first[t][0] - measured) for t in both)
    return closer, len(both)


class Questions:
    """The question methods of `Rooms` (see the module): each takes the store's lock and calls
    its lookups (`_teacher`, `_room`, `_member`), so a student's token is never a teacher's
    secret and a refusal is an InputError in words."""

    # ------------------------------------------------------------------ the teacher

    def follow(self, code: Any, secret: Any, link: str,
               bounds: Optional[tuple[float, float]] = None) -> int:
        """The class follows `link` (a query the caller checked), asking a number within
        `bounds` when given. Returns the room's move count (unchanged for the same link)."""
        _check_link(link)
        with self._lock:
            room = self._teacher(code, secret, self.clock())
            if bounds is not None and link not in room.questions:
                self._ask(room, link, bounds, None)
            self._move(room, link)
            return room.moves

    def _ask(self, room: Any, link: str, bounds: tuple[float, float], parent: Optional[str]) -> None:
        low, high = float(bounds[0]), float(bounds[1])
        if len(room.questions) >= MAX_QUESTIONS:
            raise InputError("classroom.err.questions", n=MAX_QUESTIONS)
        if not (math.isfinite(low) and math.isfinite(high) and low <= high):
            raise InputError("classroom.err.link")
        room.asked += 1
        room.questions[link] = Question(f"q{room.asked}", link, low, high, parent)

    @staticmethod
    def _move(room: Any, link: str) -> None:
        if link != room.link:
            room.link = link
            room.moves += 1
            room.revision += 1

    def _current(self, room: Any) -> Question:
        question = room.questions.get(room.link)
        if question is None:
            raise InputError("classroom.err.no_question")
        return question

    def close_vote(self, code: Any, secret: Any) -> str:
        """Round 1 ends: answering is closed while the class discusses. Returns the phase."""
        with self._lock:
            room = self._teacher(code, secret, self.clock())
            question = self._current(room)
            if question.phase != "vote":
                raise InputError("classroom.err.phase")
            question.phase = "discuss"
            room.revision += 1
            return question.phase

    def revote(self, code: Any, secret: Any) -> str:
        """Round 2 opens after the discussion (each member answers again)."""
        with self._lock:
            room = self._teacher(code, secret, self.clock())
            question = self._current(room)
            if question.phase != "discuss" or len(question.rounds) >= ROUNDS:
                raise InputError("classroom.err.phase")
            question.rounds.append({})
            question.phase = "revote"
            room.revision += 1
            return question.phase

    def reveal(self, code: Any, secret: Any, measured: Optional[float]) -> Histogram:
        """Reveal the current question's answers (each round that ran, on the same bins) beside
        `measured` (None: not measured); returns the last round's histogram."""
        with self._lock:
            room = self._teacher(code, secret, self.clock())
            question = self._current(room)
            if question.revealed:
                raise InputError("classroom.err.revealed")
            if not _finite(measured):
                measured = None
            rounds = question.rounds
            # build first, then mark: a histogram that raises leaves the question as it was
            drawn = histograms([[a for a, _ in r.values()] for r in rounds], measured)
            moved = moved_toward(question.rounds[0], question.rounds[1], measured) \
                if len(rounds) == 2 else None
            question.phase, question.measured = "revealed", measured
            question.histograms, question.moved = drawn, moved
            room.revision += 1
            return drawn[-1]

    def transfer(self, code: Any, secret: Any, link: str) -> str:
        """After a reveal, the same question at `link` (a query the caller checked: the
        section at another model, layer or setting): a question of its own, naming the one
        it is the transfer of; the class follows it. Returns its id."""
        _check_link(link)
        with self._lock:
            room = self._teacher(code, secret, self.clock())
            first = self._current(room)
            if not first.revealed:
                raise InputError("classroom.err.transfer_first")
            if link in room.questions:
                raise InputError("classroom.err.transfer_same")
            self._ask(room, link, (first.low, first.high), first.id)
            self._move(room, link)
            return room.questions[link].id

    def pause(self, code: Any, secret: Any, paused: Any) -> bool:
        """Hold the class on the current step (or release it); returns whether it is held."""
        with self._lock:
            room = self._teacher(code, secret, self.clock())
            if room.paused != (paused is True):
                room.paused = paused is True
                room.revision += 1
            return room.paused

    def csv_text(self, code: Any, secret: Any) -> str:
        """Every answer of the room, a row per member and question: question id, link, the id
        of the question it is the transfer of, round 1, round 2, the measured value (once
        revealed), time of the last answer (UTC, ISO 8601), and the nickname where given."""
        with self._lock:
            room = self._teacher(code, secret, self.clock())
            out = io.StringIO()
            writer = csv.writer(out)
            writer.writerow(["question", "link", "transfer_of", "round 1", "round 2", "measured",
                             "time", "nickname"])
            for q in room.questions.values():
                first, second = q.rounds[0], q.rounds[1] if len(q.rounds) > 1 else {}
                tokens = sorted(set(first) | set(second),
                                key=lambda t: max(first.get(t, (0, 0))[1], second.get(t, (0, 0))[1]))
                for token in tokens:
                    nick = room.members[token].nickname if token in room.members else ""
                    when = max(first.get(token, (0, 0))[1], second.get(token, (0, 0))[1])
                    writer.writerow([q.id, q.link, q.parent or "", _cell(first.get(token)),
                                     _cell(second.get(token)),
                                     "" if q.measured is None or not q.revealed else f"{q.measured:g}",
                                     time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(when)),
                                     _csv_safe(nick)])
            return out.getvalue()

    # ------------------------------------------------------------------ members

    def answer(self, code: Any, token: Any, link: Any, value: Any) -> int:
        """Record a member's answer to the question at `link` (the class's current one) in its
        open round; returns how many have answered that round. Only the teacher's page is woken
        (`roster`)."""
        if not _finite(value):
            raise InputError("classroom.err.answer_number")
        with self._lock:
            now = self.clock()
            room = self._room(code, now)
            member = self._member(room, token, now)
            question = room.questions.get(link) if isinstance(link, str) else None
            if question is None or link != room.link:
                raise InputError("classroom.err.not_now")
            if question.revealed:
                raise InputError("classroom.err.revealed")
            if question.phase == "discuss":
                raise InputError("classroom.err.closed")
            if not question.low <= value <= question.high:
                raise InputError("classroom.err.answer_range", low=f"{question.low:g}",
                                 high=f"{question.high:g}")
            if not self._answers.allow(member.token, now):
                raise InputError("classroom.err.answer_rate")
            question.answers[member.token] = (float(value), self.wall())
            room.roster += 1
            return len(question.answers)

    def set_following(self, code: Any, token: Any, following: Any) -> bool:
        """A member's page follows the class, or explores on its own: refused while the
        teacher holds the class. Returns whether it follows."""
        with self._lock:
            now = self.clock()
            room = self._room(code, now)
            member = self._member(room, token, now)
            if following is not True and room.paused:
                raise InputError("classroom.err.paused")
            if member.following != (following is True):
                member.following = following is True
                room.roster += 1
            return member.following

    # ------------------------------------------------------------------ views (under the lock)

    def _presence(self, room: Any, now: float) -> tuple[int, int, int]:
        """(pages following, exploring on their own, gone: unseen for member_idle_s)."""
        follow = explore = gone = 0
        for m in room.members.values():
            if now - m.seen > self.member_idle_s:
                gone += 1
            elif m.following:
                follow += 1
            else:
                explore += 1
        return follow, explore, gone

    def _question_view(self, room: Any, token: Optional[str]) -> dict:
        """The current question as a page may show it: counts per round; the histograms and
        how many moved once revealed; `token`'s own answers (None: the teacher's view)."""
        q = room.questions.get(room.link)
        view = {"question": q is not None, "qid": q.id if q else None,
                "transfer_of": q.parent if q else None, "phase": q.phase if q else None,
                "round": len(q.rounds) if q else 0, "voted": [len(r) for r in q.rounds] if q else [],
                "answered": len(q.answers) if q else 0, "revealed": bool(q and q.revealed),
                "histogram": q.histogram if q and q.revealed else None,
                "histograms": q.histograms if q and q.revealed else (),
                "moved": q.moved if q and q.revealed else None, "paused": room.paused,
                "origin": None}
        if q is not None and q.parent is not None:
            root = q
            for _ in range(MAX_QUESTIONS):      # the first question of the chain of transfers
                parent = next((p for p in room.questions.values() if p.id == root.parent), None)
                if parent is None:
                    break
                root = parent
            view["origin"] = root.link if root is not q else None
        if token is not None:
            mine = q.answers.get(token) if q else None
            first = q.rounds[0].get(token) if q and len(q.rounds) > 1 else None
            view["mine"] = mine[0] if mine else None
            view["mine_first"] = first[0] if first else None
        return view


def _check_link(link: Any) -> None:
    if not isinstance(link, str) or not link.startswith("?") or len(link) > MAX_LINK:
        raise InputError("classroom.err.link")


def _cell(answer: Optional[tuple[float, float]]) -> str:
    return "" if answer is None else f"{answer[0]:g}"


def _csv_safe(value: str) -> str:
    """A cell a spreadsheet shows as text, never runs as a formula."""
    return "'" + value if value[:1] in ("=", "+", "-", "@") else value
