"""One thread owns a loaded model and decodes every visitor's run together, step by step.

Why: a classroom presses Start within the same minute. Run one after another, the last visitor
waits for everyone before; run side by side in threads, the forwards fight for two cores. Here
(iteration-level batching, Orca; "continuous batching" in vLLM and TGI) each iteration of one
loop does:
1. leave: stopped, disconnected (their consumer closed the stream) or past-deadline runs drop
   out, their cache freed, before the next forward;
2. join: waiting runs are admitted (up to `max_batch` in the batch; past `max_batch +
   max_waiting` a submit is refused at once with SchedulerBusy, a clear "busy" answer);
3. prefill: prompts are fed in chunks of at most `prefill_chunk` tokens, at most
   `prefill_tokens` tokens per iteration in all, so a joining prompt never stalls the decoding
   runs for long; chunks of equal length from several runs go through one forward; a prompt
   that begins like what another run was fed copies those keys and values instead of computing
   them again (prefix reuse, `SHARE_MIN`);
4. decode: every decoding run's next token (a run whose prompt went in during step 3
   included) in one forward (models.decoders.batched): the
   weights are read once for all of them (claim C2's memory-bound step, shared), and the
   runs' caches share one pooled store, so each layer's attention is one call for all of
   them. A run alone takes the fused C++ step (the engine's fastest path for one sequence).
A run that leaves gives its row of the pooled store back at once (BatchedDecoder.release).

Each run's telemetry stays its own and exact: its tokens, positions, scores and cache bytes
(read from its own cache) are those of the same run decoded alone (tests/test_batched.py,
tests/test_scheduler.py); its latency is the shared step's wall time, and `batch_size` says
how many runs that step served.

    sched = scheduler_for(model)              # one per loaded model, started on first use
    for step in sched.generate(ids, SamplingParams(...), options=RunOptions(...),
                               should_stop=lambda: False, deadline=time.perf_counter() + 60):
        step.token_id, step.batch_size, step.cache_bytes, ...   # models.generate.Step fields
"""
from __future__ import annotations

import atexit
import collections
import os
import queue
import threading
import time
import weakref
from dataclasses import dataclass
from typing import Callable, Iterator, Optional, Sequence

import torch

from explorer.inputs import InputError
from explorer.threads import start_worker
from models.device import intra_op_threads
from models.generate import Step, check_prompt, sample_next

# A classroom is ~30 visitors; past 32 in one step the per-visitor rate on a 2-core CPU falls
# under ~5 tokens/s (bench/classroom.py), so further runs wait, and past the queue are refused.
MAX_BATCH = int(os.environ.get("EXPLORER_MAX_BATCH", "32"))
MAX_WAITING = int(os.environ.get("EXPLORER_MAX_WAITING", "32"))
# Intra-op threads of a step that decodes several runs: chosen by measuring (ThreadChoice),
# unless EXPLORER_BATCH_THREADS fixes them. A batched step is a few packed products of B rows
# and, per layer, a dozen small ops; their OpenMP regions wait for every thread at each barrier.
# On a quiet 2-core CPU two threads win: 30 clients streamed 138-172 tokens/s in all against
# 111-128 with one (A/B, two servers alternating, docs/BENCHMARKS.md run 12). With a second
# busy process on the machine one thread stalls each barrier and two lose badly: 47-52 against
# 94-101 (same A/B with a one-core busy loop beside it). Neither number holds for every machine
# and moment, so the loop measures both as it runs.
_THREADS_ENV = os.environ.get("EXPLORER_BATCH_THREADS", "auto").strip().lower()
FIXED_BATCH_THREADS = None if _THREADS_ENV == "auto" else int(_THREADS_ENV)


def batch_threads() -> int:
    """The most intra-op threads a batched step uses: EXPLORER_BATCH_THREADS, or torch's count
    now (in a process forked for a ZeroGPU call, 1: explorer/ui/zerogpu.py). Where one number
    is needed (the roofline measures steps as the loop runs them at their best) it is this."""
    return FIXED_BATCH_THREADS or torch.get_num_threads()   # 0: torch's own


PREFILL_CHUNK = 64        # tokens of one prompt per forward
PREFILL_TOKENS = 256      # prompt tokens per iteration, all joining runs together
# A run decodes while its consumer holds at most this many of its steps not yet taken: a
# visitor's stream is never computed far ahead of what it shows, and a consumer that stopped
# reading (a closed tab not yet noticed) stops costing the batch anything.
AHEAD = 8
POLL_S = 2.0              # a consumer waiting for its next step checks its stop flag this often
IDLE_EXIT_S = 60.0        # a loop with nothing to do this long ends (and frees its packed weights)
# A joining prompt whose first SHARE_MIN tokens or more equal what another run in the loop was
# fed (same options) starts with a copy of that run's keys and values for them and feeds only
# the rest (BatchedDecoder.share_prefix): a classroom pressing Start on the same prompt pays for
# one prefill, not thirty. Shorter common prefixes are not worth a copy and a wait.
SHARE_MIN = 16


class SchedulerBusy(InputError):
    """Every place in the batch and the queue is taken: try again in a minute."""

    def __init__(self, capacity: int):
        super().__init__("generate.error.busy", capacity=capacity)


@dataclass
class SharedStep(Step):
    """models.generate.Step of a run decoded in a shared batch."""
    batch_size: int = 1       # runs whose tokens this step's forward computed, this one included
    # prompt tokens whose keys and values were copied from another run's cache, not computed
    # (only on the prefill step; tokens_processed counts the ones this run's forwards fed)
    shared_prefix: int = 0


@dataclass(frozen=True)
class _End:
    reason: str               # "eos" | "length" | "stop" | "deadline"


class _Run:
    """One visitor's run inside the scheduler (the loop thread alone touches its engine state)."""

    def __init__(self, ids, params, options, eos, deadline, keep_logits):
        self.prompt = [int(i) for i in ids]
        self.params, self.options, self.eos = params, options, eos
        self.deadline, self.keep_logits = deadline, keep_logits
        self.out: queue.Queue = queue.Queue()
        self.stop = threading.Event()
        self.batch = None         # models.decoders.batched.BatchRun once admitted
        self.fed = 0              # prompt tokens in its cache so far (fed or shared)
        self.shared = 0           # of them, copied from another run's cache (share_prefix)
        self.prefill_s = 0.0      # wall time of the forwards that fed the prompt
        self.tokens: list = []
        self.pending = 0          # steps handed to the consumer and not yet taken
        self.generator = None
        if not params.greedy:
            seed = params.seed if params.seed is not None else int(torch.seed() % 2**31)
            self.generator = torch.Generator().manual_seed(seed)
        self.submitted = time.perf_counter()


class RunHandle:
    """A submitted run, seen from its consumer: its steps as they come, and stop()."""

    def __init__(self, run: _Run, scheduler: "Scheduler"):
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
        if isinstance(item, _End):
            self.end = item.reason
            return None
        with self._scheduler._lock:
            self._run.pending -= 1
            if self._run.pending == AHEAD - 1:   # the run may decode again
                self._scheduler._lock.notify_all()
        if item.finished:
            self.end = item.finished
        return item


class ThreadChoice:
    """Which intra-op thread count the loop's batched steps use, chosen by their measured time.

    Costs are kept per batch size class (1, 2-3, 4-7, ... runs: a step's time grows slower than
    its rows): each option's last `window` steps, in seconds per run, and its estimate is their
    lower median. A class tries every option once, then takes the cheapest, and now and then
    runs the next other option once (a probe), so a change of the machine's load (another
    process taking a core makes two threads stall at every barrier) is seen. Probes come every
    `probe_every` steps of the class; a probe no cheaper than the best's estimate doubles the
    gap (up to `max_gap`), a cheaper one sets it back, and so does a change of the best: a
    probe of the losing option costs that step its difference.

    Why a median and not an average: one step can be held up by something outside it. In the
    app, the first chart messages of a class that pressed Start together take the GIL for
    ~0.4 s; the two-thread step that ran beside them took 1.1 s instead of ~0.12 s, and a moving
    average (0.3 of each new step) made two threads look dearer than one for the rest of the
    level, whose one-thread steps took ~0.2 s (docs/BENCHMARKS.md run 16). The lower median of
    the last three steps ignores one such step and follows a lasting change within two.

    Thread counts change only the order of fp32 sums (SmolLM2's logits at 1 against 2 threads:
    max |difference| 8e-5); every run still equals the same run alone within the tests'
    tolerance, its greedy tokens identical (tests/test_scheduler.py)."""

    def __init__(self, options: Sequence[int], probe_every: int = 8, max_gap: int = 64,
                 window: int = 3):
        self.options = tuple(dict.fromkeys(options))
        self.probe_every, self.max_gap, self.window = probe_every, max_gap, window
        self.samples: dict = {}   # (class, option) -> deque of its last steps' seconds per run
        self.due: dict = {}       # class -> (steps since the last probe, gap to the next)
        self.taken: collections.Counter = collections.Counter()   # option -> steps (stats)

    @staticmethod
    def size_class(rows: int) -> int:
        return max(rows, 1).bit_length()

    def cost(self, rows: int, option: int) -> Optional[float]:
        """The option's estimated seconds per run for this many rows (None before any step)."""
        return self._estimate(self.size_class(rows), option)

    def _estimate(self, size: int, option: int) -> Optional[float]:
        held = self.samples.get((size, option))
        return sorted(held)[(len(held) - 1) // 2] if held else None

    def _best_of(self, size: int) -> Optional[int]:
        """The cheapest option measured in this size class, None before any."""
        known = [n for n in self.options if self._estimate(size, n) is not None]
        return min(known, key=lambda n: self._estimate(size, n)) if known else None

    def best(self, rows: int) -> int:
        """The cheapest option measured for this many rows (the first one before any)."""
        best = self._best_of(self.size_class(rows))
        return self.options[0] if best is None else best

    def for_rows(self, rows: int) -> int:
        """The count for a forward of `rows` rows that is not a decode step (a prefill chunk
        of several prompts, G runs x n tokens: rows = G * n): the best of the largest size
        class measured up to `rows`, or, none measured, the last option, torch's own count
        (on which a prompt alone is prefilled too). Its products have as many rows as a decode
        step of that many runs: the nearest evidence of how the cores behave now. Such
        forwards are not measured themselves (their shapes vary too much to compare)."""
        for size in range(self.size_class(rows), 0, -1):
            best = self._best_of(size)
            if best is not None:
                return best
        return self.options[-1]

    def pick(self, rows: int) -> int:
        """The thread count for the next step of `rows` runs: an untried option, a probe, or
        the best."""
        size = self.size_class(rows)
        untried = [n for n in self.options if self.cost(rows, n) is None]
        if untried:
            return untried[0]
        since, gap = self.due.get(size, (0, self.probe_every))
        best = self.best(rows)
        others = [n for n in self.options if n != best]
        if others and since + 1 >= gap:
            self.due[size] = (0, gap)
            return others[self.taken[best] % len(others)]
        self.due[size] = (since + 1, gap)
        return best

    def record(self, threads: int, rows: int, seconds: float) -> None:
        size = self.size_class(rows)
        before = self.best(rows)
        best_cost = self.cost(rows, before)
        probe = best_cost is not None and threads != before
        per_run = seconds / max(rows, 1)
        self.samples.setdefault((size, threads), collections.deque(maxlen=self.window)).append(per_run)
        self.taken[threads] += 1
        since, gap = self.due.get(size, (0, self.probe_every))
        if self.best(rows) != before:
            self.due[size] = (since, self.probe_every)     # the old best is probed again soon
        elif probe:
            self.due[size] = (since, min(gap * 2, self.max_gap) if per_run >= best_cost else self.probe_every)


class Scheduler:
    """The decode loop of one model (see the module doc)."""

    def __init__(self, model, *, max_batch: int = MAX_BATCH, max_waiting: int = MAX_WAITING,
                 prefill_chunk: int = PREFILL_CHUNK, prefill_tokens: int = PREFILL_TOKENS,
                 solo: Optional[str] = "fused"):
        from models.decoders.batched import BatchedDecoder

        if max_batch < 1 or max_waiting < 0 or prefill_chunk < 1 or prefill_tokens < prefill_chunk:
            raise ValueError("max_batch >= 1, max_waiting >= 0, prefill_tokens >= prefill_chunk >= 1")
        self.model = model
        self.decoder = BatchedDecoder(model, solo=solo)
        self.max_batch, self.max_waiting = max_batch, max_waiting
        self.prefill_chunk, self.prefill_tokens = prefill_chunk, prefill_tokens
        self._lock = threading.Condition()
        self._waiting: collections.deque = collections.deque()
        self._active: list = []
        self._thread: Optional[threading.Thread] = None
        self._packer: Optional[threading.Thread] = None   # _pack_ahead's
        # what the loop did, for tests and the benchmark: largest batch, steps, refusals
        self.stats = {"max_batch": 0, "decode_steps": 0, "prefill_forwards": 0, "refused": 0,
                      "prefill_tokens": 0, "shared_tokens": 0}
        # a run alone keeps torch's setting (the fused step splits its products over every thread)
        fixed = FIXED_BATCH_THREADS is not None
        self.threads = ThreadChoice((batch_threads(),) if fixed else (1, batch_threads()))
        _LOOPS.add(self)

    # ----- the consumer's side ----------------------------------------------------------------
    @property
    def capacity(self) -> int:
        return self.max_batch + self.max_waiting

    def load(self) -> int:
        """Runs in the batch or waiting for it."""
        with self._lock:
            return len(self._active) + len(self._waiting)

    def submit(self, prompt_ids: Sequence[int], params, *, options=None,
               eos_ids: Optional[Sequence[int]] = None, deadline: Optional[float] = None,
               keep_logits: bool = False) -> RunHandle:
        """Queue a run; SchedulerBusy when batch and queue are full, ValueError for a prompt
        that does not fit the model (models.generate.check_prompt)."""
        from models.decoders import decode_options

        ids = [int(i) for i in prompt_ids]
        check_prompt(self.model, len(ids), params.max_new_tokens)
        eos = set(self.model.config.eos_token_ids if eos_ids is None else eos_ids)
        run = _Run(ids, params, decode_options(options), eos, deadline, keep_logits)
        with self._lock:
            if len(self._active) + len(self._waiting) >= self.capacity:
                self.stats["refused"] += 1
                raise SchedulerBusy(self.capacity)
            self._waiting.append(run)
            if len(self._active) + len(self._waiting) >= 2:
                self._pack_ahead()
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._loop, name="kv-scheduler", daemon=True)
                self._thread.start()
            self._lock.notify_all()
        return RunHandle(run, self)

    def generate(self, prompt_ids: Sequence[int], params, *, options=None,
                 eos_ids: Optional[Sequence[int]] = None, keep_logits: bool = False,
                 should_stop: Optional[Callable[[], bool]] = None,
                 deadline: Optional[float] = None) -> Iterator:
        """models.generate.generate's iterator, served by the shared loop: one Step (with
        `batch_size`) per token. `should_stop` is polled before every step; closing the
        iterator, a stop or the deadline takes the run out of the batch before its next step;
        while waiting long for a step (queued, a long prefill) it is polled every POLL_S."""
        handle = self.submit(prompt_ids, params, options=options, eos_ids=eos_ids,
                             deadline=deadline, keep_logits=keep_logits)
        try:
            while True:
                # polled once before every step, as models.generate.generate does
                if should_stop is not None and should_stop():
                    return
                step = handle.next(timeout=POLL_S)
                while step is None and handle.end is None:
                    # a long wait (queued, a long prefill): poll now and then as well
                    if should_stop is not None and should_stop():
                        return
                    step = handle.next(timeout=POLL_S)
                if step is None:
                    return
                yield step
                if step.finished:
                    return
        finally:
            handle.stop()

    def _pack_ahead(self) -> None:
        """Runs are about to decode together: make the batched steps' packed weights now, on a
        thread of their own, while the runs' prompts go in. Made by the first pooled step,
        they held up every visitor's first token of a burst (0.36 s of SmolLM2's, measured in
        the app with 30 visitors); a lone visitor, decoding through the fused step, never
        makes them. Called with the lock held."""
        if not self.decoder.unpacked or (self._packer is not None and self._packer.is_alive()):
            return
        self._packer = start_worker(self.decoder.pack, "kv-pack")

    def _wake(self) -> None:
        with self._lock:
            self._lock.notify_all()

    # ----- the loop -------------------------------------------------------------------------
    def _loop(self) -> None:
        torch.set_grad_enabled(False)
        while True:
            with self._lock:
                while not self._waiting and not self._active:
                    if _EXITING.is_set() or (not self._lock.wait(timeout=IDLE_EXIT_S)
                                             and not self._waiting and not self._active):
                        # idle for a while: the next submit restarts the loop, and the packed
                        # weights of the batched steps (540 MB for SmolLM2) are given back
                        self._thread = None
                        self.decoder.drop_packed()
                        return
            if _EXITING.is_set():
                for run in list(self._active) + list(self._waiting):
                    run.out.put(_End("stop"))
                return
            try:
                with torch.inference_mode():
                    worked = self._iteration()
            except BaseException as error:   # never leave a consumer waiting forever
                for run in list(self._active):
                    self._fail(run, error)
                continue
            if not worked:   # every run waits for its consumer to take a step
                with self._lock:
                    self._lock.wait(timeout=0.05)

    def _iteration(self) -> bool:
        """One iteration (see the module doc); False when it found nothing to compute."""
        now = time.perf_counter()
        for run in list(self._active):                                    # 1. leave
            if run.stop.is_set():
                self._leave(run, "stop")
            elif run.deadline is not None and now > run.deadline:
                self._leave(run, "deadline")
        with self._lock:                                                  # 2. join
            while self._waiting and len(self._active) < self.max_batch:
                run = self._waiting.popleft()
                if run.stop.is_set() or (run.deadline is not None and now > run.deadline):
                    run.out.put(_End("stop" if run.stop.is_set() else "deadline"))
                    continue
                try:
                    run.batch = self.decoder.start(len(run.prompt) + run.params.max_new_tokens, run.options)
                except Exception as error:      # e.g. out of memory for its cache
                    run.out.put(error)
                    continue
                self._active.append(run)
        joining = [run for run in self._active if not run.tokens]
        self._prefill(joining)                                            # 3. prefill
        # the runs whose prompts just went in decode in this step too: alone, the runs that
        # were decoding would take a step without them (the 29 of a class waiting for it)
        decoding = [run for run in self._active if run.tokens and run.pending < AHEAD]
        if decoding:                                                      # 4. decode
            self._decode(decoding)
        self.stats["max_batch"] = max(self.stats["max_batch"], len(decoding))
        return bool(decoding or joining)

    def _sequence(self, run: _Run) -> list:
        """The tokens in the run's cache, in position order: its prompt, then its output."""
        held = run.batch.pos
        return run.prompt[:held] if held <= len(run.prompt) else (run.prompt + run.tokens)[:held]

    def _share_prefixes(self, joining: list) -> list:
        """Start each joining run that has nothing in its cache yet with the longest prefix of
        its prompt another run already holds (at least SHARE_MIN tokens, same options; one
        token at least is left to feed, whose logits give its first token). A run whose prompt
        shares a longer prefix with a run that is still being fed waits for it (it is left
        out of this iteration's prefill) instead of computing the same keys twice. Returns
        the runs to prefill now."""
        ready, feeding = [], []
        for run in joining:
            if run.fed:
                ready.append(run)
                feeding.append(run)
                continue
            cache = run.batch.cache
            limit = min(len(run.prompt) - 1, min(layer.capacity for layer in cache.layers))
            best, best_n = None, SHARE_MIN - 1
            for other in self._active:
                if other is run or other.batch is None or not other.batch.pos or other.options != run.options:
                    continue
                n = _common_prefix(self._sequence(other), run.prompt, limit)
                if n > best_n and other.batch.cache.holds_prefix(n):
                    best, best_n = other, n
            # a run being fed whose prompt would give more once it is in
            ahead = max((_common_prefix(other.prompt, run.prompt, limit) for other in feeding
                         if other.options == run.options), default=0)
            if ahead >= SHARE_MIN and ahead > max(best_n, 0):
                continue   # wait for it: next iteration its keys are there to copy
            if best is not None:
                try:
                    self.decoder.share_prefix(run.batch, best.batch, best_n)
                except ValueError:   # the caches disagree after all: it feeds its whole prompt
                    pass
                else:
                    run.fed = run.shared = best_n
                    self.stats["shared_tokens"] += best_n
            ready.append(run)
            feeding.append(run)
        return ready

    def _prefill(self, joining: list) -> None:
        joining = self._share_prefixes(joining)
        budget = self.prefill_tokens
        while joining and budget > 0:
            # One forward feeds n tokens to every joining run with n or more left (up to its
            # next chunk), n chosen to feed the most tokens: prompts of different lengths share
            # a forward instead of one forward each (every forward reads all the weights).
            left = [min(self.prefill_chunk, len(run.prompt) - run.fed) for run in joining]
            n = max(set(left), key=lambda c: (c * sum(x >= c for x in left), -c))
            group = [run for run, x in zip(joining, left) if x >= n][:max(1, budget // n)]
            budget -= n * len(group)
            ids = torch.tensor([run.prompt[run.fed:run.fed + n] for run in group], dtype=torch.long,
                               device=self.model.embed.weight.device)             # (G, n)
            t0 = time.perf_counter()
            try:
                with intra_op_threads(self.threads.for_rows(n * len(group)) if len(group) > 1 else 0):
                    logits = self.decoder.forward_many(ids, [run.batch for run in group])  # (G, 1, V)
            except Exception as error:
                for run in group:
                    self._fail(run, error)
                    joining.remove(run)
                continue
            elapsed = time.perf_counter() - t0
            self.stats["prefill_forwards"] += 1
            self.stats["prefill_tokens"] += n * len(group)
            for row, run in enumerate(group):
                run.fed += n
                run.prefill_s += elapsed
                if run.fed == len(run.prompt):
                    joining.remove(run)
                    self._emit(run, logits[row, -1], phase="prefill", latency=run.prefill_s,
                               n_fed=len(run.prompt) - run.shared, batch_size=len(group))

    def _decode(self, runs: list) -> None:
        threads = self.threads.pick(len(runs)) if len(runs) > 1 else 0
        t0 = time.perf_counter()
        try:
            with intra_op_threads(threads):
                logits = self.decoder.step_many([run.tokens[-1] for run in runs],
                                                [run.batch for run in runs])
        except Exception as error:
            for run in runs:
                self._fail(run, error)
            return
        self.stats["decode_steps"] += 1
        latency = time.perf_counter() - t0
        if threads:
            self.threads.record(threads, len(runs), latency)
        for row, run in enumerate(runs):
            self._emit(run, logits[row, -1], phase="decode", latency=latency, n_fed=1,
                       batch_size=len(runs))

    def _emit(self, run: _Run, logits: torch.Tensor, *, phase: str, latency: float, n_fed: int,
              batch_size: int) -> None:
        """Sample the run's next token from its logits (V,) and hand its Step to its consumer;
        a finished run leaves the batch at once."""
        t0 = time.perf_counter()
        last = logits.float().cpu()
        token = sample_next(last, run.params, run.generator)
        latency += time.perf_counter() - t0
        run.tokens.append(token)
        index = len(run.tokens) - 1
        cache, scores = run.batch.cache, run.batch.scores
        finished = "eos" if token in run.eos else ("length" if index == run.params.max_new_tokens - 1 else None)
        if finished:   # out of the batch before its consumer hears of the last token
            self._remove(run)
        with self._lock:
            run.pending += 1
        run.out.put(SharedStep(
            index=index, token_id=token, position=len(run.prompt) + index, phase=phase,
            latency_s=latency, tokens_processed=n_fed, score_entries=scores,
            cache_bytes=cache.used_bytes(), cache_lengths=cache.lengths(),
            logits=last if run.keep_logits else None, finished=finished, batch_size=batch_size,
            shared_prefix=run.shared if phase == "prefill" else 0))

    def _leave(self, run: _Run, reason: str) -> None:
        self._remove(run)
        run.out.put(_End(reason))

    def _fail(self, run: _Run, error: BaseException) -> None:
        self._remove(run)
        run.out.put(error)

    def _remove(self, run: _Run) -> None:
        with self._lock:
            if run in self._active:
                self._active.remove(run)
        if run.batch is not None:   # its row of the pooled store: free for the next run now
            self.decoder.release(run.batch)
        run.batch = None   # its cache: freed with the last reference


def _common_prefix(a: Sequence[int], b: Sequence[int], limit: int) -> int:
    """How many leading tokens a and b share, at most `limit`."""
    n = 0
    for x, y in zip(a, b):
        if n >= limit or x != y:
            break
        n += 1
    return n


_SCHEDULERS: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()
_REGISTRY_LOCK = threading.Lock()
_EXITING = threading.Event()
_LOOPS: "weakref.WeakSet" = weakref.WeakSet()


@atexit.register
def _stop_loops() -> None:
    """At interpreter exit, let every loop thread leave torch before the runtime is torn down
    (a daemon thread still inside a torch call when the process exits aborts it)."""
    _EXITING.set()
    for sched in list(_LOOPS):
        sched._wake()
        thread = sched._thread
        if thread is not None:
            thread.join(timeout=5.0)


def forget_loops() -> None:
    """Start with no decode loop, in a process just forked from one that may have had some
    (a ZeroGPU call, explorer/ui/zerogpu.py): their threads do not exist in the child, and the
    registry's lock may have been held at the fork by a thread of the parent. The next
    scheduler_for makes a loop of this process's own."""
    global _SCHEDULERS, _REGISTRY_LOCK, _LOOPS
    _SCHEDULERS = weakref.WeakKeyDictionary()
    _REGISTRY_LOCK = threading.Lock()
    _LOOPS = weakref.WeakSet()   # nothing to stop at exit: their threads are not here


def scheduler_for(model) -> Scheduler:
    """The one scheduler of a loaded model (made on first use)."""
    with _REGISTRY_LOCK:
        sched = _SCHEDULERS.get(model)
        if sched is None:
            sched = _SCHEDULERS[model] = Scheduler(model)
        return sched
