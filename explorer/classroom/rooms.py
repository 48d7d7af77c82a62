"""The room store of a live class: in-process, thread-safe, no UI import.

A teacher creates a room and gets its CODE (6 characters of ALPHABET: no 0/O/1/I/L) and a
SECRET (secrets.token_urlsafe(16), compared with hmac.compare_digest); students join with an
optional nickname and get a member token, which a reload presents again to be the same member.
The teacher's state is the *link query* the class follows (a lesson step's or a view's, checked
by the caller through explorer.ui.views.read_link before it reaches `follow`), with the bounds of
its prediction when it asks one. Each member may answer the current step once (a finite number
within the bounds; a new answer replaces theirs until the reveal); the reveal publishes the
step's answers as a histogram of counts beside the measured value.

Privacy: a member's view (`student_view`) holds counts only, and the histogram once revealed;
answers with times and nicknames go to the teacher only (`teacher_view`, `csv_text`, both behind
the secret). Limits: rooms per server, members per room, rooms created per client address per
hour; a room quiet for `expire_s` (a monotonic clock, injectable) is dropped. Every refusal is
an InputError whose locale key (explorer/locales/*/classroom.py) says why in plain words.
"""
from __future__ import annotations

import csv
import hmac
import io
import math
import re
import secrets
import threading
import time
import unicodedata
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Optional

from explorer.classroom.histogram import HIST_BINS, Histogram, histogram  # noqa: F401 (re-exported)
from explorer.inputs import InputError

ALPHABET = "ABCDEFGHJKMNPQRSTUVWXYZ23456789"
CODE_LENGTH = 6
CODE_PATTERN = re.compile(f"^[{ALPHABET}]{{{CODE_LENGTH}}}$")
TOKEN_PATTERN = re.compile(r"^[A-Za-z0-9_-]{16,64}$")
MAX_NICKNAME = 24
MAX_LINK = 2200          # a stored link query (a view's longest, a prompt of MAX_LINK_TEXT, fits)
MAX_ROOMS = 100
MAX_MEMBERS = 60
ROOMS_PER_ADDRESS_HOUR = 6
EXPIRE_S = 4 * 3600.0
MAX_ADDRESSES = 10_000   # client addresses remembered for the per-hour limit


@dataclass
class Member:
    token: str
    nickname: str
    joined: float


@dataclass
class Step:
    """The class's answers at one link: {member token: (answer, wall time)}."""
    link: str
    low: float
    high: float
    answers: dict[str, tuple[float, float]] = field(default_factory=dict)
    revealed: bool = False
    measured: Optional[float] = None
    histogram: Optional[Histogram] = None   # built once, at the reveal (answers are closed then)


@dataclass
class Room:
    code: str
    secret: str
    created: float
    touched: float
    members: dict[str, Member] = field(default_factory=dict)
    link: str = ""                   # the query the class follows ("" before the first move)
    moves: int = 0                   # bumped when the link changes: followers apply it
    revision: int = 0                # bumped on any change a page shows (answers, reveal)
    steps: dict[str, Step] = field(default_factory=dict)   # predict steps, by link


def clean_nickname(value: Any) -> str:
    """A nickname: control and format characters removed, spaces collapsed, at most
    MAX_NICKNAME characters; "" for none."""
    if value is None:
        return ""
    if not isinstance(value, str) or len(value) > 10 * MAX_NICKNAME:
        raise InputError("classroom.err.nickname", limit=MAX_NICKNAME)
    kept = "".join(ch for ch in value if unicodedata.category(ch)[0] not in ("C", "Z") or ch == " ")
    kept = " ".join(kept.split())
    if len(kept) > MAX_NICKNAME:
        raise InputError("classroom.err.nickname", limit=MAX_NICKNAME)
    return kept


def clean_code(value: Any) -> str:
    """A room code as typed (spaces, lower case and dashes forgiven); InputError otherwise."""
    if not isinstance(value, str) or len(value) > 32:
        raise InputError("classroom.err.code")
    code = value.strip().upper().replace(" ", "").replace("-", "")
    if not CODE_PATTERN.match(code):
        raise InputError("classroom.err.code")
    return code


def _token(value: Any) -> Optional[str]:
    return value if isinstance(value, str) and TOKEN_PATTERN.match(value) else None


class Rooms:
    """The rooms of one server (see the module doc). Every method takes the lock for a bounded
    amount of work: at most MAX_MEMBERS answers are read for a view or a CSV."""

    def __init__(self, *, max_rooms: int = MAX_ROOMS, max_members: int = MAX_MEMBERS,
                 per_address_hour: int = ROOMS_PER_ADDRESS_HOUR, expire_s: float = EXPIRE_S,
                 clock: Callable[[], float] = time.monotonic, wall: Callable[[], float] = time.time):
        self.max_rooms, self.max_members = max_rooms, max_members
        self.per_address_hour, self.expire_s = per_address_hour, expire_s
        self.clock, self.wall = clock, wall
        self._rooms: dict[str, Room] = {}
        self._created: dict[str, deque] = {}       # client address -> creation times
        self._lock = threading.Lock()

    # ------------------------------------------------------------------ lookups (under the lock)

    def _expire(self, now: float) -> None:
        for code in [c for c, r in self._rooms.items() if now - r.touched > self.expire_s]:
            del self._rooms[code]

    def _room(self, code: Any, now: float) -> Room:
        code = clean_code(code)
        self._expire(now)
        room = self._rooms.get(code)
        if room is None:
            raise InputError("classroom.err.gone")
        return room

    def _teacher(self, code: Any, secret: Any, now: float) -> Room:
        room = self._room(code, now)
        if not isinstance(secret, str) or len(secret) > 64 or \
                not hmac.compare_digest(secret.encode(), room.secret.encode()):
            raise InputError("classroom.err.secret")
        return room

    def _member(self, room: Room, token: Any) -> Member:
        member = room.members.get(_token(token) or "")
        if member is None:
            raise InputError("classroom.err.not_member")
        return member

    # ------------------------------------------------------------------ teacher

    def create(self, address: Any = "") -> tuple[str, str]:
        """(code, secret) of a new room; refused past the server's rooms or the address's
        rooms this hour."""
        address = str(address or "")[:100]
        with self._lock:
            now = self.clock()
            self._expire(now)
            made = self._created.setdefault(address, deque())
            while made and now - made[0] > 3600:
                made.popleft()
            if len(made) >= self.per_address_hour:
                raise InputError("classroom.err.address_limit", n=self.per_address_hour)
            if len(self._rooms) >= self.max_rooms:
                raise InputError("classroom.err.server_full")
            if len(self._created) > MAX_ADDRESSES:
                for key in [k for k, times in self._created.items() if not times]:
                    del self._created[key]
            code = "".join(secrets.choice(ALPHABET) for _ in range(CODE_LENGTH))
            while code in self._rooms:
                code = "".join(secrets.choice(ALPHABET) for _ in range(CODE_LENGTH))
            secret = secrets.token_urlsafe(16)
            self._rooms[code] = Room(code, secret, now, now)
            made.append(now)
            return code, secret

    def check_teacher(self, code: Any, secret: Any) -> str:
        """The room's code when `secret` is its teacher's; InputError otherwise."""
        with self._lock:
            room = self._teacher(code, secret, self.clock())
            room.touched = self.clock()
            return room.code

    def follow(self, code: Any, secret: Any, link: str,
               bounds: Optional[tuple[float, float]] = None) -> int:
        """The class follows `link` (a query the caller checked), asking a number within
        `bounds` when given. Returns the room's move count (unchanged for the same link)."""
        if not isinstance(link, str) or not link.startswith("?") or len(link) > MAX_LINK:
            raise InputError("classroom.err.link")
        with self._lock:
            now = self.clock()
            room = self._teacher(code, secret, now)
            room.touched = now
            if bounds is not None and link not in room.steps and len(room.steps) < 200:
                low, high = float(bounds[0]), float(bounds[1])
                room.steps[link] = Step(link, low, high)
            if link != room.link:
                room.link = link
                room.moves += 1
                room.revision += 1
            return room.moves

    def reveal(self, code: Any, secret: Any, measured: Optional[float]) -> Histogram:
        """Reveal the current step's answers beside `measured` (None: not measured)."""
        with self._lock:
            now = self.clock()
            room = self._teacher(code, secret, now)
            step = room.steps.get(room.link)
            if step is None:
                raise InputError("classroom.err.no_question")
            if measured is not None and not (isinstance(measured, (int, float)) and math.isfinite(measured)):
                measured = None
            # build first, then mark: a histogram that raises leaves the step as it was
            drawn = histogram([a for a, _ in step.answers.values()], measured)
            step.revealed, step.measured, step.histogram = True, measured, drawn
            room.touched = now
            room.revision += 1
            return drawn

    def teacher_view(self, code: Any, secret: Any) -> dict:
        with self._lock:
            room = self._teacher(code, secret, self.clock())
            step = room.steps.get(room.link)
            view = {"code": room.code, "members": len(room.members), "link": room.link,
                    "moves": room.moves, "revision": room.revision, "question": step is not None,
                    "answered": len(step.answers) if step else 0,
                    "revealed": bool(step and step.revealed), "histogram": None}
            if step and step.revealed:
                view["histogram"] = step.histogram
            return view

    def csv_text(self, code: Any, secret: Any) -> str:
        """Every answer of the room: step, answer, measured value, time (UTC, ISO 8601), and
        the nickname where the member gave one."""
        with self._lock:
            room = self._teacher(code, secret, self.clock())
            out = io.StringIO()
            writer = csv.writer(out)
            writer.writerow(["step", "answer", "measured", "time", "nickname"])
            for step in room.steps.values():
                for token, (answer, when) in sorted(step.answers.items(), key=lambda kv: kv[1][1]):
                    nick = room.members[token].nickname if token in room.members else ""
                    writer.writerow([step.link, f"{answer:g}",
                                     "" if step.measured is None or not step.revealed else f"{step.measured:g}",
                                     time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(when)),
                                     _csv_safe(nick)])
            return out.getvalue()

    # ------------------------------------------------------------------ students

    def join(self, code: Any, nickname: Any = None, token: Any = None) -> tuple[str, str]:
        """(code, member token): the member holding `token` again when it is one of the room's
        (a reload), else a new member, refused past the room's members."""
        nickname = clean_nickname(nickname)
        with self._lock:
            now = self.clock()
            room = self._room(code, now)
            room.touched = now
            known = room.members.get(_token(token) or "")
            if known is not None:
                if nickname:
                    known.nickname = nickname
                return room.code, known.token
            if len(room.members) >= self.max_members:
                raise InputError("classroom.err.room_full", n=self.max_members)
            member = Member(secrets.token_urlsafe(16), nickname, now)
            room.members[member.token] = member
            room.revision += 1
            return room.code, member.token

    def answer(self, code: Any, token: Any, link: Any, value: Any) -> int:
        """Record a member's answer to the step at `link` (the class's current one); returns
        how many have answered it."""
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            raise InputError("classroom.err.answer_number")
        with self._lock:
            now = self.clock()
            room = self._room(code, now)
            member = self._member(room, token)
            step = room.steps.get(link) if isinstance(link, str) else None
            if step is None or link != room.link:
                raise InputError("classroom.err.not_now")
            if step.revealed:
                raise InputError("classroom.err.revealed")
            if not step.low <= value <= step.high:
                raise InputError("classroom.err.answer_range", low=f"{step.low:g}", high=f"{step.high:g}")
            step.answers[member.token] = (float(value), self.wall())
            room.touched = now
            room.revision += 1
            return len(step.answers)

    def student_view(self, code: Any, token: Any) -> dict:
        """What a member's page may show: the link to follow and counts; the histogram once the
        teacher revealed it; their own answer. No other member's answer or nickname."""
        with self._lock:
            now = self.clock()
            room = self._room(code, now)
            member = self._member(room, token)
            room.touched = now
            step = room.steps.get(room.link)
            mine = step.answers.get(member.token) if step else None
            view = {"code": room.code, "link": room.link, "moves": room.moves,
                    "revision": room.revision, "members": len(room.members),
                    "question": step is not None, "answered": len(step.answers) if step else 0,
                    "mine": mine[0] if mine else None, "revealed": bool(step and step.revealed),
                    "histogram": None}
            if step and step.revealed:
                view["histogram"] = step.histogram
            return view

    def revision(self, code: Any) -> Optional[int]:
        """The room's revision (the cheap poll), None when there is no such room."""
        try:
            with self._lock:
                return self._room(code, self.clock()).revision
        except InputError:
            return None

    def __len__(self) -> int:
        with self._lock:
            self._expire(self.clock())
            return len(self._rooms)


def _csv_safe(value: str) -> str:
    """A cell a spreadsheet shows as text, never runs as a formula."""
    return "'" + value if value[:1] in ("=", "+", "-", "@") else value


# The rooms of this server: one store per process, as the class meets on one replica
# (docs/SCALING.md, "A live class").
ROOMS = Rooms()
