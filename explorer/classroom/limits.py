"""Rate limits of a live class, bounded in time and in size (no UI import).

`Window(limit, window_s)`: at most `limit` events per key in any `window_s` seconds. What it
remembers is bounded both ways: a key whose last event is older than the window is forgotten
(looked at least recently used first, so each call does amortised O(1) work), and past
`max_keys` keys the least recently used is forgotten. So 50,000 addresses that each started a
class once hold nothing an hour later, and at most `max_keys` deques of at most `limit` times
at any moment.

`address_key(address)`: what an address is counted as: an IPv4 address itself, an IPv6 address
by its /64 (one home or school network: a client may pick any of its 2**64 addresses), an
IPv4-mapped IPv6 address as the IPv4 it maps.
"""
from __future__ import annotations

import ipaddress
from collections import OrderedDict, deque
from typing import Any, Hashable

MAX_KEYS = 10_000


class Window:
    """Sliding-window counts per key (see the module). Not thread-safe: the caller's lock."""

    def __init__(self, limit: int, window_s: float, max_keys: int = MAX_KEYS):
        self.limit, self.window_s, self.max_keys = limit, window_s, max_keys
        self._times: OrderedDict[Hashable, deque] = OrderedDict()

    def _forget_old(self, now: float) -> None:
        while self._times:
            key, times = next(iter(self._times.items()))
            if times and now - times[-1] < self.window_s:
                break
            del self._times[key]
        while len(self._times) > self.max_keys:
            self._times.popitem(last=False)

    def _recent(self, key: Hashable, now: float) -> deque:
        times = self._times.get(key)
        if times is None:
            return deque()
        while times and now - times[0] >= self.window_s:
            times.popleft()
        return times

    def full(self, key: Hashable, now: float) -> bool:
        """Whether `key` has had `limit` events in the last window (nothing recorded)."""
        self._forget_old(now)
        return len(self._recent(key, now)) >= self.limit

    def add(self, key: Hashable, now: float) -> None:
        """Record an event of `key` (past the limit too: the oldest times are dropped)."""
        times = self._recent(key, now)
        self._times[key] = times
        self._times.move_to_end(key)
        times.append(now)
        while len(times) > self.limit:
            times.popleft()
        self._forget_old(now)

    def allow(self, key: Hashable, now: float) -> bool:
        """Record an event of `key` and say True, or say False (nothing recorded) when full."""
        if self.full(key, now):
            return False
        self.add(key, now)
        return True

    def __len__(self) -> int:
        return len(self._times)


def address_key(address: Any) -> str:
    """The key an address is counted under (see the module); a value that is no address is
    counted as itself, cut to 100 characters."""
    text = str(address or "")[:100]
    try:
        ip = ipaddress.ip_address(text.strip("[]"))
    except ValueError:
        return text
    if ip.version == 6:
        if ip.ipv4_mapped is not None:
            return str(ip.ipv4_mapped)
        return str(ipaddress.IPv6Network((ip, 64), strict=False))
    return str(ip)
