"""The room store of a live class: in-process, thread-safe, no UI import.

A teacher creates a room and gets its CODE (6 characters of ALPHABET: no 0/O/1/I/L) and a
SECRET (secrets.token_urlsafe(16), compared with hmac.compare_digest); students join with an
optional nickname and get a member token, which a reload presents again to be the same member.
The teacher's state is the *link query* the class follows (a lesson step's or a view's, checked
by the caller through explorer.ui.page.views.read_link before it reaches `follow`), with the bounds of
its prediction when it asks one. The questions (answers in rounds, the discussion, the reveal,
transfer questions) and the pacing (a class held on its step; pages following, exploring, gone)
are explorer/classroom/questions.py's, whose methods `Rooms` takes.

Privacy: a member's view (`student_view`) holds counts only, and the histogram once revealed;
answers with times and nicknames go to the teacher only (`teacher_view`, `csv_text`, both behind
the secret). Every refusal is an InputError whose locale key (explorer/locales/*/classroom.py)
says why in plain words.

Limits (docs/HARDENING.md, "The class"), on a monotonic clock
(injectable), each bounded in time and size (explorer/classroom/limits.py):
- rooms per server; rooms created per client address per hour;
- joining needs a session (Gradio's); a session joins a room as one member (a second join is
  that member again) and at most JOINS_PER_SESSION times a minute; an address adds at most
  NEW_MEMBERS_PER_ADDRESS members in NEW_MEMBERS_WINDOW_S; the teacher may remove a member
  and lock the room (no new members);
- a member counts toward the room's MAX_MEMBERS while seen (a view, an answer, or the page's
  revision poll with its token) in the last MEMBER_IDLE_S; past MAX_HELD members the least
  recently seen unseen one is forgotten;
- codes that do not exist, asked for by an address (a join, the revision route without a
  member token): at most MISSES_PER_ADDRESS a minute, then every such lookup is refused,
  except one that proves it belongs to the room: a member's token (a reload) or the room's
  INVITE, the unguessable part of the student link and its QR code. A prober who shares the
  class's address (the projected code, one school NAT, a Space's proxy) can then lock out only
  students who type the code, never those who scan or click the link or reload their page;
- questions: MAX_QUESTIONS per room, ROUNDS rounds each, one answer per member a round
  (questions.py);
- answers: ANSWERS_PER_MEMBER a minute per member; an answer or a join wakes only the
  teacher's page (`roster`), never every member's (`revision`);
- a room where nobody (teacher or member) was seen for `expire_s` is dropped.
"""
from __future__ import annotations

import hmac
import re
import secrets
import threading
import time
import unicodedata
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Optional

from explorer.classroom.limits import Window, address_key
from explorer.classroom.histogram import HIST_BINS, Histogram, histogram  # noqa: F401 (re-exported)
from explorer.classroom.questions import MAX_LINK, MAX_QUESTIONS, Question, Questions  # noqa: F401
from explorer.inputs import InputError

ALPHABET = "ABCDEFGHJKMNPQRSTUVWXYZ23456789"
CODE_LENGTH = 6
CODE_PATTERN = re.compile(f"^[{ALPHABET}]{{{CODE_LENGTH}}}$")
TOKEN_PATTERN = re.compile(r"^[A-Za-z0-9_-]{16,64}$")
MAX_NICKNAME = 24
MAX_ROOMS = 100
MAX_MEMBERS = 60
ROOMS_PER_ADDRESS_HOUR = 6
EXPIRE_S = 30 * 60.0     # a room where no page (teacher or member) was seen this long goes
MAX_ADDRESSES = 10_000   # keys each limit remembers at most
MEMBER_IDLE_S = 120.0    # a member unseen this long stops counting (a page polls every <= 20 s)
MAX_HELD = 4             # members kept per room, as a multiple of its max_members
JOINS_PER_SESSION = 10   # joins a minute by one session
NEW_MEMBERS_PER_ADDRESS = 2 * MAX_MEMBERS   # new members from one address in ...
NEW_MEMBERS_WINDOW_S = 600.0                # ... this many seconds (a school behind one NAT)
MISSES_PER_ADDRESS = 20  # lookups of codes that do not exist, a minute, by one address
ANSWERS_PER_MEMBER = 6   # answers a minute by one member
MAX_SESSION = 128        # characters of a session id


@dataclass
class Member:
    token: str
    nickname: str
    joined: float
    session: str = ""
    seen: float = 0.0
    id: str = field(default_factory=lambda: secrets.token_hex(3))   # the teacher's handle
    following: bool = True           # the page applies the teacher's moves (not exploring)


@dataclass
class Room:
    code: str
    secret: str
    created: float
    touched: float
    members: dict[str, Member] = field(default_factory=dict)
    link: str = ""                   # the query the class follows ("" before the first move)
    moves: int = 0                   # bumped when the link changes: followers apply it
    revision: int = 0                # bumped on a change every page shows (a move, a reveal)
    roster: int = 0                  # bumped on a change only the teacher's page shows
    locked: bool = False             # no new members
    watch: str = field(default_factory=lambda: secrets.token_urlsafe(16))   # the teacher's
                                     # page's token for the revision route (reads a counter)
    invite: str = field(default_factory=lambda: secrets.token_urlsafe(12))  # in the student
                                     # link and QR code: a lookup holding it is no probe
    questions: dict[str, Question] = field(default_factory=dict)   # by link (questions.py)
    asked: int = 0                   # questions asked: the next one's id is q<asked + 1>
    paused: bool = False             # the teacher holds the class on its step
    presence: tuple = (0, 0, 0)      # (following, exploring, gone) as the teacher last read it

    def __setattr__(self, name: str, value: Any) -> None:
        # a page waiting on the room's revision (the revision route's long poll) is woken by
        # every write of it, wherever the store or a module of it makes the change
        object.__setattr__(self, name, value)
        if name in ("revision", "roster"):
            wake = self.__dict__.get("wake")
            if wake is not None:
                wake(self.code)


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


class Rooms(Questions):
    """The rooms of one server (see the module doc). Every method takes the lock for a bounded
    amount of work: at most MAX_HELD * max_members members are read for a view or a CSV."""

    def __init__(self, *, max_rooms: int = MAX_ROOMS, max_members: int = MAX_MEMBERS,
                 per_address_hour: int = ROOMS_PER_ADDRESS_HOUR, expire_s: float = EXPIRE_S,
                 member_idle_s: float = MEMBER_IDLE_S, joins_per_session: int = JOINS_PER_SESSION,
                 new_members_per_address: int = NEW_MEMBERS_PER_ADDRESS,
                 misses_per_address: int = MISSES_PER_ADDRESS,
                 answers_per_member: int = ANSWERS_PER_MEMBER, max_addresses: int = MAX_ADDRESSES,
                 clock: Callable[[], float] = time.monotonic, wall: Callable[[], float] = time.time):
        self.max_rooms, self.max_members = max_rooms, max_members
        self.per_address_hour, self.expire_s = per_address_hour, expire_s
        self.member_idle_s = member_idle_s
        self.clock, self.wall = clock, wall
        self._rooms: dict[str, Room] = {}
        self._created = Window(per_address_hour, 3600.0, max_addresses)   # address -> creations
        self._joins = Window(joins_per_session, 60.0, max_addresses)       # session -> joins
        self._new_members = Window(new_members_per_address, NEW_MEMBERS_WINDOW_S, max_addresses)
        self._misses = Window(misses_per_address, 60.0, max_addresses)     # address -> misses
        self._answers = Window(answers_per_member, 60.0, max_addresses)    # member -> answers
        self._lock = threading.Lock()
        self._listeners: "weakref.WeakSet" = weakref.WeakSet()

    def listen(self, listener: Any) -> None:
        """`listener.room_changed(code)` is called (under the store's lock: it must return at
        once and not call the store) each time a room's revision changes. Held weakly."""
        self._listeners.add(listener)

    def _wake(self, code: str) -> None:
        for listener in list(self._listeners):
            listener.room_changed(code)

    # ------------------------------------------------------------------ lookups (under the lock)

    def _expire(self, now: float) -> None:
        for code in [c for c, r in self._rooms.items() if now - r.touched > self.expire_s]:
            del self._rooms[code]

    def _room(self, code: Any, now: float, address: Any = None, *, token: Any = None,
              invite: Any = None) -> Room:
        """The room of `code`; InputError when there is none. With an `address`, a miss counts
        against that address, and an address past its misses is refused, unless the request
        proves it belongs to the room (`token`: one of its members; `invite`: its invite)."""
        code = clean_code(code)
        self._expire(now)
        key = address_key(address) if address is not None else None
        room = self._rooms.get(code)
        if room is not None and _belongs(room, token, invite):
            return room
        if key is not None and self._misses.full(key, now):
            raise InputError("classroom.err.probes")
        if room is None:
            if key is not None:
                self._misses.add(key, now)
            raise InputError("classroom.err.gone")
        return room

    def _teacher(self, code: Any, secret: Any, now: float) -> Room:
        room = self._room(code, now)
        if not isinstance(secret, str) or len(secret) > 64 or \
                not hmac.compare_digest(secret.encode(), room.secret.encode()):
            raise InputError("classroom.err.secret")
        room.touched = now
        return room

    def _member(self, room: Room, token: Any, now: float) -> Member:
        member = room.members.get(_token(token) or "")
        if member is None:
            raise InputError("classroom.err.not_member")
        member.seen = room.touched = now
        return member

    def _active(self, room: Room, now: float) -> int:
        return sum(now - m.seen <= self.member_idle_s for m in room.members.values())

    # ------------------------------------------------------------------ teacher

    def create(self, address: Any = "") -> tuple[str, str]:
        """(code, secret) of a new room; refused past the server's rooms or the address's
        rooms this hour."""
        key = address_key(address)
        with self._lock:
            now = self.clock()
            self._expire(now)
            if self._created.full(key, now):
                raise InputError("classroom.err.address_limit", n=self.per_address_hour)
            if len(self._rooms) >= self.max_rooms:
                raise InputError("classroom.err.server_full")
            code = "".join(secrets.choice(ALPHABET) for _ in range(CODE_LENGTH))
            while code in self._rooms:
                code = "".join(secrets.choice(ALPHABET) for _ in range(CODE_LENGTH))
            secret = secrets.token_urlsafe(16)
            self._rooms[code] = Room(code, secret, now, now)
            self._rooms[code].wake = self._wake
            self._created.add(key, now)
            return code, secret

    def check_teacher(self, code: Any, secret: Any) -> str:
        """The room's code when `secret` is its teacher's; InputError otherwise."""
        with self._lock:
            return self._teacher(code, secret, self.clock()).code

    def watch_token(self, code: Any, secret: Any) -> str:
        """The token the teacher's page reads the room's revision with (answers and joins
        included): a counter only, never the secret in a URL."""
        with self._lock:
            return self._teacher(code, secret, self.clock()).watch

    def remove(self, code: Any, secret: Any, member_id: Any) -> str:
        """The teacher removes a member (by its id in `teacher_view`) and their answers to steps
        not revealed yet; returns the nickname (or "")."""
        with self._lock:
            room = self._teacher(code, secret, self.clock())
            member = next((m for m in room.members.values() if m.id == member_id), None)
            if member is None:
                raise InputError("classroom.err.no_member")
            self._drop(room, member)
            return member.nickname

    def _drop(self, room: Room, member: Member) -> None:
        del room.members[member.token]
        for question in room.questions.values():
            if not question.revealed:
                for answers in question.rounds:
                    answers.pop(member.token, None)
        room.roster += 1

    def lock(self, code: Any, secret: Any, locked: Any) -> bool:
        """Lock (no new members) or open the room; returns whether it is locked."""
        with self._lock:
            room = self._teacher(code, secret, self.clock())
            room.locked = bool(locked)
            room.roster += 1
            return room.locked

    def end(self, code: Any, secret: Any) -> None:
        """The teacher ends the class: the room is dropped (its members' pages read it gone)."""
        with self._lock:
            room = self._teacher(code, secret, self.clock())
            del self._rooms[room.code]

    def teacher_view(self, code: Any, secret: Any) -> dict:
        with self._lock:
            now = self.clock()
            room = self._teacher(code, secret, now)
            follow, explore, gone = room.presence = self._presence(room, now)
            return {"code": room.code, "members": self._active(room, now), "link": room.link,
                    "moves": room.moves, "revision": room.revision + room.roster,
                    "locked": room.locked, "following": follow, "exploring": explore, "gone": gone,
                    "roster": [(m.id, m.nickname, now - m.seen <= self.member_idle_s)
                               for m in sorted(room.members.values(), key=lambda m: m.joined)],
                    **self._question_view(room, None)}

    # ------------------------------------------------------------------ students

    def join(self, code: Any, nickname: Any = None, token: Any = None, *, session: Any = None,
             address: Any = "", invite: Any = None) -> tuple[str, str]:
        """(code, member token): the member holding `token` again when it is one of the room's
        (a reload), or the member `session` joined as before, else a new member: refused
        without a session, past the session's joins this minute, in a locked or full room, and
        past the address's new members (see the module). `invite` (the student link's) lets
        the lookup through an address past its misses."""
        nickname = clean_nickname(nickname)
        with self._lock:
            now = self.clock()
            room = self._room(code, now, address, token=token, invite=invite)
            known = room.members.get(_token(token) or "")
            if known is None:
                if not isinstance(session, str) or not 0 < len(session) <= MAX_SESSION:
                    raise InputError("classroom.err.no_session")
                if not self._joins.allow(session, now):
                    raise InputError("classroom.err.join_rate")
                known = next((m for m in room.members.values() if m.session == session), None)
            if known is not None:
                known.nickname = nickname or known.nickname
                self._member(room, known.token, now)
                return room.code, known.token
            if room.locked:
                raise InputError("classroom.err.locked")
            if self._active(room, now) >= self.max_members:
                raise InputError("classroom.err.room_full", n=self.max_members)
            if len(room.members) >= MAX_HELD * self.max_members:
                unseen = min(room.members.values(), key=lambda m: m.seen)
                if now - unseen.seen <= self.member_idle_s:
                    raise InputError("classroom.err.room_full", n=self.max_members)
                self._drop(room, unseen)
            key = address_key(address)
            if not self._new_members.allow(key, now):
                raise InputError("classroom.err.address_joins")
            member = Member(secrets.token_urlsafe(16), nickname, now, session, now)
            room.members[member.token] = member
            room.touched = now
            room.roster += 1
            return room.code, member.token

    def student_view(self, code: Any, token: Any) -> dict:
        """What a member's page may show: the link to follow and counts; the histograms once
        the teacher revealed them; their own answers. No other member's answer or nickname."""
        with self._lock:
            now = self.clock()
            room = self._room(code, now)
            member = self._member(room, token, now)
            return {"code": room.code, "link": room.link, "moves": room.moves,
                    "revision": room.revision, "members": self._active(room, now),
                    "following": member.following, **self._question_view(room, member.token)}

    def invite(self, code: Any, secret: Any) -> str:
        """The room's invite, for the student link the teacher's page shows (and its QR)."""
        with self._lock:
            return self._teacher(code, secret, self.clock()).invite

    def revision(self, code: Any, member: Any = None, address: Any = None,
                 invite: Any = None) -> Optional[int]:
        """The room's revision (the cheap poll), None when there is no such room or `member`
        (a member token, or the teacher page's watch token: answers and joins included) is not
        one of it. With an `address` and no member, a miss counts against the address (see the
        module); InputError("classroom.err.probes") once it has too many, unless `invite` is the
        room's."""
        try:
            with self._lock:
                now = self.clock()
                room = self._room(code, now, None if member else address, invite=invite)
                if member is None:
                    return room.revision
                if isinstance(member, str) and hmac.compare_digest(member.encode(), room.watch.encode()):
                    room.touched = now
                    presence = self._presence(room, now)   # a page gone wakes the teacher's
                    if presence != room.presence:
                        room.presence = presence
                        room.roster += 1
                    return room.revision + room.roster
                self._member(room, member, now)
                return room.revision
        except InputError as error:
            if error.key == "classroom.err.probes":
                raise
            return None

    def member_id(self, code: Any, token: Any) -> str:
        """The id (the teacher's handle) of the member holding `token` in room `code`, who is
        marked seen; InputError when the room or the member is none."""
        with self._lock:
            now = self.clock()
            return self._member(self._room(code, now), token, now).id

    def bump(self, code: Any, everyone: bool = True) -> None:
        """Wake the room's pages for a change a caller made after its own checks (the class
        game, explorer/classroom/game.py): every page, or the teacher's only."""
        with self._lock:
            room = self._room(code, self.clock())
            room.revision, room.roster = room.revision + bool(everyone), room.roster + (not everyone)

    def moves(self, code: Any) -> Optional[int]:
        """The room's move counter (bumped when the teacher's link changes; a reveal leaves it),
        None when there is no such room: what the revision route tells a member's page, whose
        script learns from it that the class moved on (static/classroom.js)."""
        with self._lock:
            room = self._rooms.get(code)
            return None if room is None else room.moves

    def move_of(self, code: Any, token: Any) -> Optional[tuple[int, str]]:
        """(the move counter, the class's link) for a member of the room (its token checked),
        None for anyone else: what the revision route hands a following page with its answer,
        so that the page applies the teacher's move without asking the server again."""
        with self._lock:
            room = self._rooms.get(code)
            if room is None or _token(token) not in room.members or not room.link:
                return None
            return room.moves, room.link

    def sessions(self, code: Any, secret: Any) -> list:
        """The page sessions of the room's members (the teacher's secret checked): the pages
        whose runs the teacher's move stops at once."""
        with self._lock:
            room = self._teacher(code, secret, self.clock())
            return [member.session for member in room.members.values() if member.session]

    def __len__(self) -> int:
        with self._lock:
            self._expire(self.clock())
            return len(self._rooms)


def _belongs(room: Room, token: Any, invite: Any) -> bool:
    """Whether a request holds one of `room`'s member tokens or its invite."""
    if _token(token) in room.members:
        return True
    return isinstance(invite, str) and 0 < len(invite) <= 64 and \
        hmac.compare_digest(invite.encode(), room.invite.encode())


# The rooms of this server: one store per process, as the class meets on one replica
# (docs/SCALING.md, "A live class").
ROOMS = Rooms()
