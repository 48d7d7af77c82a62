"""Who may queue another event, and who may open another session: the app's own bounds on
what one visitor or one client address can hold, so that no client fills the queue or the
session store that every visitor shares (docs/HARDENING.md, issue 27 findings 1, 5 and 10).

Plain policy, no Gradio: explorer/web/gradio_patches.py reads the waiting events and the
sessions from Gradio's queue and asks `Admission.refusal` before each event joins the queue
and `SessionGate.admit` before a session is created; a refusal is answered at once, with the
locale text named here (both languages: the queue does not know the visitor's language).

Every event belongs to one concurrency group (app.py: the model group, the long runs, the
shared decode loop, the cheap group); a group's limits bound the events *waiting* in it (the
running ones are bounded by its concurrency limit):
- `waiting`: all visitors together;
- `per_session`, `per_address`: one page (Gradio's session), one client address.
And across every group, `per_session` / `per_address` of the Admission itself.
"""
from __future__ import annotations

import collections
import os
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Callable, NamedTuple, Optional

from explorer.locales import text


@dataclass(frozen=True)
class GroupLimits:
    concurrency: int                   # events of the group running at once
    waiting: Optional[int] = None      # events waiting in the group, all visitors
    per_session: Optional[int] = None  # ... of one session
    per_address: Optional[int] = None  # ... of one client address


class Waiting(NamedTuple):
    """One event waiting in the queue."""
    group: str
    session: Optional[str]
    address: Optional[str]


class Admission:
    """Bounds on waiting events, per group and across groups (see the module)."""

    def __init__(self, groups: Mapping[str, GroupLimits], per_session: int, per_address: int):
        self.groups = dict(groups)
        self.per_session = per_session
        self.per_address = per_address

    def refusal(self, waiting: Iterable[Waiting], new: Waiting) -> Optional[tuple[str, int]]:
        """(locale key, the bound reached) of why `new` may not join the queue, given the
        events `waiting` there now; None: it may. An event without a session or address (an
        API call that named none) counts only against the bounds it has."""
        counts: collections.Counter = collections.Counter()
        for event in waiting:
            same_group = event.group == new.group
            counts["group"] += same_group
            if new.session is not None and event.session == new.session:
                counts["session"] += 1
                counts["group_session"] += same_group
            if new.address is not None and event.address == new.address:
                counts["address"] += 1
                counts["group_address"] += same_group
        limits = self.groups.get(new.group, GroupLimits(concurrency=1))
        checks = (("shell.refused.group_full", limits.waiting, "group"),
                  ("shell.refused.group_yours", limits.per_session, "group_session"),
                  ("shell.refused.group_yours", limits.per_address, "group_address"),
                  ("shell.refused.yours", self.per_session, "session"),
                  ("shell.refused.yours", self.per_address, "address"))
        for key, limit, count in checks:
            if limit is not None and counts[count] >= limit:
                return key, limit
        return None


class SessionGate:
    """New sessions per client address: at most `per_minute` opened in any 60 s (more are
    refused), and at most `held` kept (opening one more makes Gradio drop that address's own
    least recently used one, `admit`'s answer, rather than the oldest of anyone's). Addresses
    are forgotten least recently seen first past `addresses`.

    And a session no page holds open is dropped `idle_s` after its last request (`idle`):
    Gradio keeps every session until its cap evicts the least recently used, so a class's
    memory would otherwise grow with every page closed and every API call made until the cap
    is full, about an hour into a busy lesson (docs/HARDENING.md, the 2-hour soak)."""

    WINDOW_S = 60.0

    def __init__(self, per_minute: int, held: int, addresses: int = 10_000, clock=time.monotonic,
                 idle_s: Optional[float] = None):
        self.per_minute = per_minute
        self.held = held
        self.addresses = addresses
        self.clock = clock
        self.idle_s = idle_s
        # address -> (times of its recent openings, its sessions least recently used first)
        self._seen: collections.OrderedDict[str, tuple[collections.deque, collections.OrderedDict]] = (
            collections.OrderedDict())
        self._owner: dict[str, str] = {}   # session -> its address

    def admit(self, session: str, address: Optional[str]) -> Optional[list[str]]:
        """A new session `session` from `address`: None if refused, else the sessions of the
        same address to drop now. No address (a test, no connection): admitted."""
        if address is None:
            return []
        now = self.clock()
        opened, sessions = self._seen.setdefault(address, (collections.deque(), collections.OrderedDict()))
        self._seen.move_to_end(address)
        while opened and now - opened[0] >= self.WINDOW_S:
            opened.popleft()
        if len(opened) >= self.per_minute:
            return None
        opened.append(now)
        sessions[session] = None
        self._owner[session] = address
        dropped = []
        while len(sessions) > self.held:
            dropped.append(sessions.popitem(last=False)[0])
            self._owner.pop(dropped[-1], None)
        while len(self._seen) > self.addresses:
            for old in self._seen.popitem(last=False)[1][1]:
                self._owner.pop(old, None)
        return dropped

    def used(self, session: str) -> None:
        """`session` (admitted before) served another request: its address drops it last."""
        address = self._owner.get(session)
        if address in self._seen:
            self._seen[address][1].move_to_end(session)

    def idle(self, idle_for: Mapping[str, float], held_open: Callable[[str], bool]) -> list[str]:
        """The sessions to drop now: those of `idle_for` (session -> seconds since its last
        request) idle `idle_s` or longer that no page holds open (`held_open`: a page's
        heartbeat stream, or an event of the session still queued or running). Each is
        forgotten here too."""
        if self.idle_s is None:
            return []
        gone = [session for session, seconds in idle_for.items()
                if seconds >= self.idle_s and not held_open(session)]
        for session in gone:
            self.forget(session)
        return gone

    def forget(self, session: str) -> None:
        """`session` is gone (dropped by the app): it no longer counts for its address."""
        address = self._owner.pop(session, None)
        if address in self._seen:
            self._seen[address][1].pop(session, None)


def refusal_text(key: str, limit: int) -> str:
    """A refusal in both languages, English first (the queue does not know which the
    visitor reads)."""
    return f"{text(key, 'en', limit=limit)} / {text(key, 'zh', limit=limit)}"


def trust_proxy_setting(environ: Mapping[str, str] = os.environ) -> str:
    """How many reverse proxies stand in front of the app (client_address's `trust_proxy`):
    EXPLORER_TRUST_PROXY when set; else "1" on a Hugging Face Space (SPACE_ID set), whose one
    proxy appends the visitor's address to X-Forwarded-For, so that every visitor of a Space
    is not one address (the proxy's) to every per-address bound; else "" (none). "0" turns it
    off on a Space."""
    value = environ.get("EXPLORER_TRUST_PROXY")
    if value is not None and value.strip():
        return value
    return "1" if environ.get("SPACE_ID") else ""


def counted_address(address: Optional[str]) -> Optional[str]:
    """The address every per-address bound counts: an IPv6 address by its /64 (one home or
    school network, whose client may take any of its 2**64 addresses), an IPv4-mapped one as
    its IPv4 (explorer/classroom/limits.address_key)."""
    from explorer.classroom.limits import address_key

    return address_key(address) if address else address


def client_address(peer: Optional[str], forwarded_for: Sequence[str], trust_proxy: str) -> Optional[str]:
    """The client's address: the connection's `peer`, unless the operator says N reverse
    proxies stand in front of the app (`trust_proxy` "N", from EXPLORER_TRUST_PROXY), each
    appending the address it was reached from to X-Forwarded-For: then the N-th address from
    the end of that list (what the outermost trusted proxy saw). The entries before it are
    whatever the client wrote, so they are never read; a list shorter than N (a request
    that did not come through them) leaves the peer."""
    try:
        hops = int(trust_proxy) if trust_proxy.strip() else 0
    except ValueError:
        hops = 0
    if hops < 1:
        return peer
    addresses = [part.strip() for value in forwarded_for for part in str(value).split(",")]
    addresses = [address for address in addresses if address]
    return addresses[-hops] if len(addresses) >= hops else peer
