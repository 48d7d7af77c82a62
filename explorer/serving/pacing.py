"""A stream paced by what its page has drawn.

A server that decodes faster than a page draws (a class's shared step decodes 200 tokens in a
few seconds; a phone, or a laptop beside three other pages, draws a chart message in 100-600 ms)
fills the page with messages it draws one after the other, seconds after the server sent them.
Whatever the page must do next waits behind that backlog: a teacher's move, the Stop button, a
click. So a page reports each message it has drawn (static/pace.js, through
explorer/web/drawn_route.py), and the stream takes its next decode step only once the page has
drawn the last one it was sent (the checks after decoding too): a step merges everything
decoded meanwhile (serving.transport), so a slow page gets fewer, fresher messages, and what it
must do next never waits behind more than one message.

A page that reports says so before its run (a cookie its script sets): its stream waits for the
page's report from the first message on, since a slow page's first draw is its longest and the
backlog would build while it lasts. Any other client (an API client, a page without its script)
is waited for only once it has reported; a page that said it reports and has not, after two
waits, is not waited for again. No message waits more than MAX_WAIT_S (a page that stopped
reporting still gets one message that often), and the run's last message goes out at once.
"""
from __future__ import annotations

import secrets
import threading
import time
from collections import OrderedDict
from typing import Optional

MAX_WAIT_S = 5.0      # the longest a message waits for the page to draw the one before
SLICE_S = 0.05        # how often a waiting stream looks whether something urgent came
MAX_PACES = 4096      # streams paced at once (each run of the shared loop holds one)


class Pace:
    """One stream's messages: how many were sent, the last one its page has drawn."""

    def __init__(self, token: str, paces: "Paces", reports: bool = False):
        self.token, self._paces = token, paces
        self.sent = 0          # messages sent (the n-th carries n)
        self.drawn = 0         # the last message the page said it has drawn
        self.heard = reports   # the page reports what it draws (said so, or has reported)
        self.timeouts = 0      # messages sent after MAX_WAIT_S without the page's report
        self._drawn = threading.Condition()

    def next_message(self) -> int:
        """The number of the message about to be sent."""
        with self._drawn:
            self.sent += 1
            return self.sent

    def mark(self, seq: int) -> None:
        """The page has drawn message `seq` (a number never sent is ignored)."""
        with self._drawn:
            if self.drawn < seq <= self.sent:
                self.drawn, self.heard = seq, True
                self._drawn.notify_all()

    def wait_drawn(self, wake: threading.Event, max_wait_s: float = MAX_WAIT_S) -> float:
        """Block until the page has drawn every message sent (or `wake` is set, or max_wait_s
        passed, or the page never reported); returns the seconds waited."""
        start = time.monotonic()
        deadline = start + max_wait_s
        with self._drawn:
            while self.heard and self.drawn < self.sent and not wake.is_set():
                left = deadline - time.monotonic()
                if left <= 0:
                    self.timeouts += 1
                    if self.drawn == 0 and self.timeouts >= 2:
                        self.heard = False   # said it reports, never did: wait no more
                    break
                self._drawn.wait(min(left, SLICE_S))
        return time.monotonic() - start

    def forget(self) -> None:
        """No report can reach this stream any more: it stops waiting for them."""
        with self._drawn:
            self.heard = False
            self._drawn.notify_all()

    def close(self) -> None:
        self._paces.close(self)


class Paces:
    """The streams now paced, by token (a secret only the stream's page reads): bounded, the
    oldest forgotten past MAX_PACES (its stream then simply stops waiting for reports)."""

    def __init__(self, capacity: int = MAX_PACES):
        self.capacity = capacity
        self._paces: OrderedDict[str, Pace] = OrderedDict()
        self._lock = threading.Lock()

    def open(self, reports: bool = False) -> Pace:
        """A new stream's pace; `reports`: its page said it reports what it draws."""
        pace = Pace(secrets.token_urlsafe(16), self, reports)
        with self._lock:
            self._paces[pace.token] = pace
            while len(self._paces) > self.capacity:
                _, old = self._paces.popitem(last=False)
                old.forget()
        return pace

    def close(self, pace: Pace) -> None:
        with self._lock:
            if self._paces.get(pace.token) is pace:
                del self._paces[pace.token]

    def mark(self, token: str, seq: int) -> None:
        """A page's report; an unknown token (a run that ended, a guess) changes nothing."""
        with self._lock:
            pace = self._paces.get(token)
        if pace is not None:
            pace.mark(seq)

    def __len__(self) -> int:
        return len(self._paces)


PACES = Paces()
