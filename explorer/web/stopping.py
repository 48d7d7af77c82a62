"""Stop buttons that end a run with the run's own last message, not with Gradio's cancel.

Why not `cancels=`: it ends a stream from outside. The page drops the event at once while the
server cancels its task, and the run's last messages race the page's bookkeeping. In Gradio 6
the page then at times puts its "Error" badge on the cancelled event's outputs (CI saw
"Error / Stopped." on the Claims board), and what the Stop handler writes can disagree with
the last message that landed: Generate once said "Stopped after 64 new tokens" above a table
row, a C3 line and charts of 80.

Here Stop only raises a flag for the visitor's session (`Stops.stop`); the run's handler is
wrapped by `Stops.stoppable`. A handler that reads its flag (`Stops.flag()`, which can wake it
when blocked between messages) ends itself with a last message drawn from its final state, so
the page's last word, the run's record and every chart come from one message, and the event
ends as a success. Where the flag cannot reach the handler (in a ZeroGPU call's process), the wrapper
closes the handler's generator at its next message (which stops its worker, as any close
does) and sends a last message built from the last one it sent.

A run still waiting in Gradio's queue when Stop is pressed is stopped too: Stop records the
time, and a run of that session queued before it ends at once when it starts, doing no work.
Gradio's own cancels still happen (a closed tab, an API client's job.cancel()): the handlers
handle a close as before.
"""
from __future__ import annotations

import functools
import inspect
import threading
import time
import typing
import weakref
from collections import OrderedDict
from typing import Any, Callable, Iterator, Optional

from explorer.web.gradio_context import event_context

# Sessions whose last Stop time is kept (for runs still in the queue): the oldest go first.
MAX_SESSIONS = 4096


def argument_reader(handler: Callable, name: str) -> Callable[[tuple, dict], Any]:
    """reader(args, kwargs) -> the value `handler` would get for its parameter `name` in a call
    with those arguments (None when it gets none, or the call would not bind). A handler that
    takes its inputs as `*values: SomeInputs` (a NamedTuple naming them in order) has `name`
    read from the field of that name."""
    signature = inspect.signature(handler)
    fields = _named_values(handler, signature)

    def reader(args: tuple, kwargs: dict) -> Any:
        try:
            arguments = signature.bind_partial(*args, **kwargs).arguments
        except TypeError:
            return None
        if name in arguments or fields is None or name not in fields[1]:
            return arguments.get(name)
        values = arguments.get(fields[0], ())
        index = fields[1].index(name)
        return values[index] if index < len(values) else None
    return reader


def _named_values(handler: Callable, signature: inspect.Signature) -> Optional[tuple[str, tuple]]:
    """(the name of `handler`'s *values parameter, the fields of the NamedTuple it is annotated
    with), or None."""
    variadic = next((p for p in signature.parameters.values() if p.kind is p.VAR_POSITIONAL), None)
    if variadic is None:
        return None
    target = inspect.unwrap(handler.func if isinstance(handler, functools.partial) else handler)
    try:
        hint = typing.get_type_hints(target).get(variadic.name)
    except (NameError, TypeError):
        return None
    names = getattr(hint, "_fields", None)
    return (variadic.name, tuple(names)) if names else None


# Why a run was stopped, when not by its own page's Stop: its class moved on (stop_sessions,
# stop_every_run with `once_for`). The page is leaving the step: the run ends with its text
# alone (no chart for a step no longer shown), and no lesson or class reads it afterwards.
MOVED = "moved"


class StopFlag:
    """One run's stop flag. `on_set(callback)`: call back (once) when it is raised, at once if
    it already is: how a handler blocked on a queue wakes. `reason`: None (a Stop press) or
    MOVED, as the first raise gave it."""

    def __init__(self) -> None:
        self.watched = False   # the handler reads this flag itself (Stops.flag)
        self.reason: Optional[str] = None
        self._event = threading.Event()
        self._lock = threading.Lock()
        self._callbacks: list[Callable[[], None]] = []

    def is_set(self) -> bool:
        return self._event.is_set()

    def moved(self) -> bool:
        """Raised because the run's class moved on (MOVED)."""
        return self._event.is_set() and self.reason == MOVED

    def set(self, reason: Optional[str] = None) -> None:
        with self._lock:
            if self._event.is_set():
                return
            self.reason = reason
            self._event.set()
            callbacks, self._callbacks = self._callbacks, []
        for callback in callbacks:
            callback()

    def on_set(self, callback: Callable[[], None]) -> None:
        with self._lock:
            if not self._event.is_set():
                self._callbacks.append(callback)
                return
        callback()


_EVERY: "weakref.WeakSet[Stops]" = weakref.WeakSet()   # every kind of run with a Stop


_ONCE: OrderedDict = OrderedDict()   # (session, key) that stop_every_run was already called for
_ONCE_LOCK = threading.Lock()


_ALONE: OrderedDict = OrderedDict()   # sessions whose runs a class's move leaves running

def explore_alone(alone: bool) -> None:
    """The session of this event explores on its own (True: a class's moves leave its runs
    running) or follows its class again (False)."""
    session, _, _ = event_context()
    if session is None:
        return
    with _ONCE_LOCK:
        _ALONE.pop(session, None)
        if alone:
            _ALONE[session] = True
            while len(_ALONE) > MAX_SESSIONS:
                _ALONE.popitem(last=False)


def stop_sessions(sessions: Any, once_for: Any = None) -> int:
    """A live class's move, at the teacher's press: stop every run of each session in
    `sessions` (the class's pages) that follows its class (not exploring on its own), as their
    Stop buttons would, so that no following page still streams the step it leaves. `once_for`
    marks each session stopped for that move (stop_every_run then leaves it). How many of them
    had a run running."""
    stopped = 0
    for session in sessions:
        with _ONCE_LOCK:
            if not isinstance(session, str) or session in _ALONE:
                continue
            if once_for is not None:
                _ONCE[(session, once_for)] = True
                while len(_ONCE) > MAX_SESSIONS:
                    _ONCE.popitem(last=False)
        stopped += any([stops.stop(session, reason=MOVED) for stops in list(_EVERY)])
    return stopped


def stop_every_run(once_for: Any = None, moved: bool = False) -> bool:
    """Stop, as its Stop button would, every run the session of the event this thread serves
    has running or queued, of every kind (a live class's move: a following page goes to the
    teacher's step at once, and the step it was running ends within a step with its own last
    message instead of streaming on). `once_for`: a key (the move) this session is stopped for
    once only, so that a second poll carrying the same move, answered before the first one's
    new state reached the page, does not stop the new step's run; `moved` (a page applying its
    class's move) stops as a move does, every time. True when one was running."""
    if once_for is not None:
        session, _, _ = event_context()
        with _ONCE_LOCK:
            if session is None or (session, once_for) in _ONCE:
                return False
            _ONCE[(session, once_for)] = True
            while len(_ONCE) > MAX_SESSIONS:
                _ONCE.popitem(last=False)
    reason = MOVED if once_for is not None or moved else None
    return any([stops.stop(reason=reason) for stops in list(_EVERY)])


class Stops:
    """The running runs of one kind (one tab's Stop button), by session."""

    def __init__(self, max_sessions: int = MAX_SESSIONS) -> None:
        self._lock = threading.Lock()
        self._running: dict[str, dict[str, StopFlag]] = {}   # session -> event id -> flag
        self._stopped_at: OrderedDict[str, tuple] = OrderedDict()   # session -> (last Stop, reason)
        self._max_sessions = max_sessions
        self._moved_end: OrderedDict[str, bool] = OrderedDict()   # last run ended by a move
        _EVERY.add(self)

    def stop(self, session: Optional[str] = None, reason: Optional[str] = None) -> bool:
        """The Stop button's handler (queue=False, no outputs: its reply could land after the
        run's last message): raise the flag of the session's running runs, and stop those it
        has still queued. True when a run was running. `session`: another session's runs
        (a live class's move, stop_sessions), else the event's own; `reason`: the flag's
        (MOVED for a class's move)."""
        if session is None:
            session, _, _ = event_context()
        if session is None:
            return False
        with self._lock:
            self._stopped_at[session] = (time.monotonic(), reason)
            self._stopped_at.move_to_end(session)
            while len(self._stopped_at) > self._max_sessions:
                self._stopped_at.popitem(last=False)
            flags = list(self._running.get(session, {}).values())
        for flag in flags:
            flag.set(reason)
        return bool(flags)

    def on_stop(self) -> None:
        """`stop` as a Stop button's listener: `button.click(stops.on_stop, None, None,
        queue=False)`. No outputs: the run says it stopped."""
        self.stop()

    def ended_by_move(self) -> bool:
        """Whether the last run of this kind of this event's session ended because its class
        moved on (and none began since): for the listeners that follow a run's end (a
        lesson's reading of it, a class's record), which leave such a run alone. The page has
        left the step the run was for, and may already show the next one."""
        session, _, _ = event_context()
        with self._lock:
            return session is not None and session in self._moved_end

    def _note_end(self, session: Optional[str], moved: bool) -> None:
        if session is None:
            return
        with self._lock:
            self._moved_end.pop(session, None)
            if moved:
                self._moved_end[session] = True
                while len(self._moved_end) > self._max_sessions:
                    self._moved_end.popitem(last=False)

    def running(self, session: Optional[str] = None) -> int:
        """How many runs are registered (of a session, or in all): for tests and bounds."""
        with self._lock:
            if session is not None:
                return len(self._running.get(session, {}))
            return sum(len(runs) for runs in self._running.values())

    def flag(self) -> StopFlag:
        """The flag of the run this thread is serving (a fresh one, never raised, outside a
        stoppable run, e.g. in a ZeroGPU call's process, which the Stop cannot reach)."""
        session, event_id, _ = event_context()
        with self._lock:
            flag = self._running.get(session, {}).get(event_id) if session else None
        if flag is None:
            return StopFlag()
        flag.watched = True   # the handler ends itself: the wrapper sends what it sends
        return flag

    def _begin(self) -> tuple[Optional[str], Optional[str], StopFlag]:
        session, event_id, queued = event_context()
        flag = StopFlag()
        if session is None or event_id is None:
            return None, None, flag
        with self._lock:
            stopped_at, reason = self._stopped_at.get(session, (None, None))
            self._running.setdefault(session, {})[event_id] = flag
            self._moved_end.pop(session, None)   # a new run: the last one's end is past
        if stopped_at is not None and queued is not None and stopped_at >= queued:
            flag.set(reason)   # Stop was pressed (or the class moved) while this run waited
        return session, event_id, flag

    def _end(self, session: Optional[str], event_id: Optional[str]) -> None:
        if session is None:
            return
        with self._lock:
            runs = self._running.get(session, {})
            runs.pop(event_id, None)
            if not runs:
                self._running.pop(session, None)

    def stoppable(self, handler: Callable[..., Iterator[Any]],
                  last_word: Callable[[Optional[Any], Any], Any]) -> Callable[..., Iterator[Any]]:
        """`handler` (a streaming event handler) made stoppable by `stop`. A handler that reads
        its flag (`flag()`) ends itself, with a last message of its own, and every message it
        sends goes out. Otherwise (a handler in a ZeroGPU call, which the flag cannot reach),
        once the flag is up its next message is dropped, it is closed, and `last_word(the last
        message sent or None, the handler's `lang` argument)` goes out instead. A run stopped
        while queued sends only `last_word(None, lang)`, without calling the handler. The
        wrapper keeps the handler's signature (Gradio reads gr.Progress defaults from it) and
        shows `.stoppable = (handler, rewrap)`, so ZeroGPU can move the handler into its GPU
        call and keep the stop outside it, and `.stops` (its Stops)."""
        lang_of = argument_reader(handler, "lang")

        @functools.wraps(handler)
        def run(*args, **kwargs):
            session, event_id, flag = self._begin()
            try:
                if flag.is_set():
                    yield last_word(None, lang_of(args, kwargs))
                    return
                last = None
                messages = handler(*args, **kwargs)
                try:
                    for message in messages:
                        if flag.is_set() and not flag.watched:
                            break
                        yield message
                        last = message
                finally:
                    close = getattr(messages, "close", None)   # a generator: its finally runs
                    if close is not None:
                        close()
                if flag.is_set() and not flag.watched:
                    yield last_word(last, lang_of(args, kwargs))
            finally:
                self._end(session, event_id)
                self._note_end(session, flag.moved())

        run.stoppable = (handler, lambda inner: self.stoppable(inner, last_word))
        run.stops = self
        return run


def unwrap(fn: Callable) -> tuple[Callable, Optional[Callable[[Callable], Callable]]]:
    """(the handler inside a stoppable wrapper, a function that wraps a replacement the same
    way), or (fn, None) for any other function."""
    parts = getattr(fn, "stoppable", None)
    return parts if parts is not None else (fn, None)


def ended_by_move(event: Any) -> bool:
    """Whether the last run of the event `event` (a Gradio event listener's return: its `fn`
    is the handler) of this event's session ended because its class moved on: False for a
    run without a Stop."""
    stops = getattr(getattr(event, "fn", None), "stops", None)
    return isinstance(stops, Stops) and stops.ended_by_move()
