"""The sessions whose runs' checks wait for the shared loop instead of being declined: a live
class's teacher pages, the screen the class reads (explorer/generate/session.py,
stream_generation's checks_wait_s).

A session is granted by the class's own handlers on the server, once the teacher's secret was
checked against the room (explorer/ui/page/class_teacher.py, classroom.py), with a function that
says whether that still holds (the room lives, the secret is its teacher's): nothing a client
sends names a teacher, and a grant whose room ended answers False and is dropped. No Gradio,
no class here: a session is a string, the test is the caller's."""
from __future__ import annotations

import threading
from typing import Callable, Optional

MAX_HELD = 1024          # sessions held at once (a server has at most a few hundred rooms)
MAX_SESSION = 128        # characters of a session id


class Priority:
    """session -> the test that it still teaches; thread-safe and bounded (past MAX_HELD, the
    grants whose test fails go first, then the oldest)."""

    def __init__(self, limit: int = MAX_HELD):
        self.limit = limit
        self._held: dict[str, Callable[[], bool]] = {}
        self._lock = threading.Lock()

    def grant(self, session: Optional[str], still: Callable[[], bool]) -> None:
        if not isinstance(session, str) or not 0 < len(session) <= MAX_SESSION:
            return
        with self._lock:
            self._held.pop(session, None)
            if len(self._held) >= self.limit:
                for key, test in list(self._held.items()):
                    if not _holds(test):
                        del self._held[key]
            while len(self._held) >= self.limit:
                del self._held[next(iter(self._held))]
            self._held[session] = still

    def holds(self, session: Optional[str]) -> bool:
        """The session was granted and its test still holds (one that fails is dropped)."""
        if not isinstance(session, str):
            return False
        with self._lock:
            test = self._held.get(session)
        if test is None:
            return False
        if _holds(test):
            return True
        with self._lock:
            if self._held.get(session) is test:
                del self._held[session]
        return False

    def revoke(self, session: Optional[str]) -> None:
        with self._lock:
            self._held.pop(session, None)

    def __len__(self) -> int:
        return len(self._held)


def _holds(test: Callable[[], bool]) -> bool:
    try:
        return test() is True
    except Exception:   # a test that cannot answer grants nothing
        return False


# the server's one registry (the class's handlers grant, the Generate tab asks)
CHECKS_FIRST = Priority()
