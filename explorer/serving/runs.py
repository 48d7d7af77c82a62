"""One visitor's run inside the decode loop, and the handle its consumer holds.

The loop thread alone touches a run's engine state (its pooled row, its cache); the consumer
sees the run through a RunHandle: the steps as they come (a queue), and stop()."""
from __future__ import annotations

import collections
import queue
import secrets
import threading
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Optional

from models.generate import Step, new_generator

if TYPE_CHECKING:
    from explorer.serving.scheduler import Scheduler

# A run decodes while its consumer holds at most this many of its steps not yet taken: a
# visitor's stream is never computed far ahead of what it shows, and a consumer that stopped
# reading (a closed tab not yet noticed) stops costing the batch anything.
AHEAD = 8
# Sessions whose prefix-reuse savings a loop keeps (Savings): the least recently counted
# beyond this are forgotten (a few hundred kB at most, whatever the traffic).
SAVINGS_SESSIONS = 4096


@dataclass(frozen=True)
class Visitor:
    """Who submitted a run, as the web framework knows them. Runs are capped per session and
    per client address (Scheduler.max_per_session, max_per_address); a run copies keys and
    values beyond its prompt's public prefix only from a run of its own session. None: not
    known (a test, the CLI, the claims board): no cap counts it, and it shares nothing beyond
    its public prefix."""
    session: Optional[str] = None
    address: Optional[str] = None


class TooManyRuns(RuntimeError):
    """One visitor (`scope`: "session" or "address") already has `limit` runs decoding or
    waiting: refused at once, so that one client cannot take the batch and the queue from
    everyone else. Neutral (no visitor text here): a UI translates it."""

    def __init__(self, scope: str, limit: int):
        self.scope, self.limit = scope, limit
        super().__init__(f"too many runs: this {scope} already has {limit} decoding or waiting")


class Busy(RuntimeError):
    """Every place in the batch and the queue is taken: try again in a minute. Neutral (no
    visitor text here): a UI translates it, with `capacity` (runs in the batch and queue)."""

    def __init__(self, capacity: int):
        self.capacity = capacity
        super().__init__(f"busy: {capacity} runs are decoding or waiting")


@dataclass
class SharedStep(Step):
    """models.generate.Step of a run decoded in a shared batch."""
    batch_size: int = 1       # runs whose tokens this step's forward computed, this one included
    # prompt tokens whose keys and values were copied from another run's cache, not computed
    # (only on the prefill step; tokens_processed counts the ones this run's forwards fed)
    shared_prefix: int = 0
    # the run they were copied from is one of the same session's; otherwise they are the public
    # prefix alone (the chat template's tokens every prompt begins with)
    shared_own: bool = False
    # ... or they were copied from a kept prompt: the app's own text (Scheduler.keep_prompts)
    shared_kept: bool = False


@dataclass(frozen=True)
class StepRecord:
    """One decode step of the loop: when it ended (time.time()), how many runs it decoded, its
    wall time, and the mean tokens each run's cache held after it."""
    at: float
    runs: int
    seconds: float
    context: float


@dataclass(frozen=True)
class RunState:
    """One run in the loop as Scheduler.snapshot shows it: lengths and counts only (no text, no
    token ids, no session): `uid` is a random id of the run alone, `own` whether the run is of
    the session the snapshot was asked for; `seat` its place number in the loop, kept while the
    run is in it (the lowest free one when it was submitted: a run leaving renumbers no other)."""
    uid: str
    own: bool
    state: str                # "waiting" | "prefilling" | "decoding"
    prompt: int               # prompt tokens
    generated: int            # tokens generated so far
    held: tuple               # per layer, the tokens its cache holds (0 while waiting)
    allocated: tuple          # per layer, the slots its buffers have: its pooled row's width,
                              # or its own cache's capacity outside the pool (0 while waiting)
    pooled: bool              # its buffers are a row of the pooled store
    shared: int               # prompt tokens copied from another run's cache (prefix reuse)
    seat: int = 0             # 1, 2, ...: its place number, stable while it is in the loop


@dataclass(frozen=True)
class LoopSnapshot:
    """Scheduler.snapshot: the runs in the loop (admission order, then the queue), the recent
    decode steps (oldest first), and the prompt tokens prefix reuse saved the runs of the
    session the snapshot was asked for (Savings; 0 for no session): never another's."""
    runs: tuple
    steps: tuple
    shared_tokens: int
    max_batch: int


class Savings:
    """The prompt tokens prefix reuse saved each session's runs in one loop (copied, not
    computed), for the batch view: a visitor reads their own count, never a sum over visitors
    (a total rose by exactly what another visitor's prompt shared with the app's kept prompts,
    issue 40). At most `limit` sessions are kept, the least recently counted forgotten first,
    and a session the app drops (idle: registry.forget_sessions) is forgotten at once."""

    def __init__(self, limit: int = SAVINGS_SESSIONS):
        self.limit = limit
        self._tokens: collections.OrderedDict = collections.OrderedDict()
        self._lock = threading.Lock()

    def add(self, session: Optional[str], tokens: int) -> None:
        if session is None or tokens <= 0:
            return
        with self._lock:
            self._tokens[session] = self._tokens.pop(session, 0) + int(tokens)
            while len(self._tokens) > self.limit:
                self._tokens.popitem(last=False)

    def of(self, session: Optional[str]) -> int:
        with self._lock:
            return self._tokens.get(session, 0) if session is not None else 0

    def forget(self, sessions) -> None:
        with self._lock:
            for session in sessions:
                self._tokens.pop(session, None)

    def __len__(self) -> int:
        with self._lock:
            return len(self._tokens)


@dataclass(frozen=True)
class End:
    """Put on a run's queue instead of a step: it ended without a last step."""
    reason: str               # "eos" | "length" | "stop" | "deadline"


class Run:
    """One visitor's run inside the scheduler (the loop thread alone touches its engine state)."""

    def __init__(self, ids, params, options, eos, deadline, keep_logits,
                 visitor: Optional[Visitor] = None, public: int = 0):
        self.prompt = [int(i) for i in ids]
        self.visitor = visitor if visitor is not None else Visitor()
        self.public = public      # leading prompt tokens every visitor's prompt has (see submit)
        self.params, self.options, self.eos = params, options, eos
        self.deadline, self.keep_logits = deadline, keep_logits
        self.out: queue.Queue = queue.Queue()
        self.stop = threading.Event()
        self.batch = None         # engine.batched.BatchRun once admitted
        self.fed = 0              # prompt tokens in its cache so far (fed or shared)
        self.shared = 0           # of them, copied from another run's cache (share_prefix)
        self.shared_own = False   # ... from a run of the same session
        self.shared_kept = False  # ... from a kept prompt (Scheduler.keep_prompts)
        self.kept = False         # this is a kept prompt: fed by the loop, never decoded
        self.prefill_s = 0.0      # wall time of the forwards that fed the prompt
        self.tokens: list = []
        self.pending = 0          # steps handed to the consumer and not yet taken
        self.generator = new_generator(params)
        self.submitted = time.perf_counter()
        self.uid = secrets.token_hex(6)   # names the run in a snapshot, and nothing else
        self.seat = 0             # its place number in the loop (Scheduler.submit sets it)

    def sequence(self) -> list:
        """The tokens in the run's cache, in position order: its prompt, then its output."""
        held = self.batch.pos
        return self.prompt[:held] if held <= len(self.prompt) else (self.prompt + self.tokens)[:held]


class RunHandle:
    """A submitted run, seen from its consumer: its steps as they come, and stop()."""

    def __init__(self, run: Run, scheduler: "Scheduler"):
        self._run, self._scheduler = run, scheduler
        self.end: Optional[str] = None   # why it ended, once it has

    def stop(self) -> None:
        """Leave the batch before the next step (idempotent)."""
        self._run.stop.set()
        self._scheduler._wake()

    def next(self, timeout: Optional[float] = None):
        """The next Step; None on timeout, or once the run has ended (see `end`)."""
        if self.end is not None:
            return None
        try:
            item = self._run.out.get(timeout=timeout)
        except queue.Empty:
            return None
        if isinstance(item, BaseException):
            self.end = "error"
            raise item
        if isinstance(item, End):
            self.end = item.reason
            return None
        with self._scheduler._lock:
            self._run.pending -= 1
            if self._run.pending == AHEAD - 1:   # the run may decode again
                self._scheduler._lock.notify_all()
        if item.finished:
            self.end = item.finished
        return item


def run_state(run: Run, state: Optional[str], session: Optional[str], decoder) -> RunState:
    """`run` as Scheduler.snapshot shows it (state None: prefilling or decoding, read off the
    run); `decoder` the loop's BatchedDecoder, whose pooled store may hold the run's row."""
    batch = run.batch   # the loop may drop it meanwhile: read it once
    held = allocated = ()
    pooled = False
    if batch is not None and state is None:
        layers = batch.cache.layers
        held = tuple(layer.length for layer in layers)
        pooled = batch.row is not None
        widths = decoder.pool.widths
        allocated = (tuple(widths) if pooled and len(widths) == len(layers)
                     else tuple(layer.capacity for layer in layers))
    if state is None:
        state = "decoding" if run.tokens else "prefilling"
    own = session is not None and run.visitor.session == session
    return RunState(uid=run.uid, own=own, state=state, prompt=len(run.prompt),
                    generated=len(run.tokens), held=held, allocated=allocated,
                    pooled=pooled, shared=run.shared, seat=run.seat)
