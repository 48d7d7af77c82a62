"""One thread owns a loaded model and decodes every visitor's run together, step by step.

Why: a classroom presses Start within the same minute. Run one after another, the last visitor
waits for everyone before; run side by side in threads, the forwards fight for two cores. Here
(iteration-level batching, Orca; "continuous batching" in vLLM and TGI) each iteration of one
loop does:
1. leave: stopped, disconnected (their consumer closed the stream) or past-deadline runs drop
   out, their cache freed, before the next forward;
2. join: waiting runs are admitted (up to `max_batch` in the batch; past `max_batch +
   max_waiting` a submit is refused at once with Busy, a clear "busy" answer, and so is a
   submit of a visitor who already has `max_per_session` runs in the loop from one session or
   `max_per_address` from one client address, with TooManyRuns: one client cannot fill the
   batch and the queue);
3. prefill: prompts are fed in chunks of at most `prefill_chunk` tokens, at most
   `prefill_tokens` tokens per iteration in all, so a joining prompt never stalls the decoding
   runs for long; a run's own cache is allocated only when its prefill is about to begin
   (`_start`), so a class admitted at once does not hold forty caches at once; chunks of equal
   length from several runs go through one forward; a prompt that begins like what another run
   was fed, or like one of the app's own prompts the loop keeps (`keep_prompts`), copies those
   keys and values instead of computing them again (prefix reuse: prefixes.py says what a run
   may copy, never depending on another visitor's text);
4. decode: every decoding run's next token (a run whose prompt went in during step 3
   included) in one forward (engine.batched): the weights are read once for all of
   them (claim C2's memory-bound step, shared), and the runs' caches share one pooled store,
   so each layer's attention is one call for all of them. A run alone takes the fused C++
   step (the engine's fastest path for one sequence).
A run that leaves gives its row of the pooled store back at once (BatchedDecoder.release).

Each run's telemetry stays its own and exact: its tokens, positions, scores and cache bytes
(read from its own cache) are those of the same run decoded alone (tests/unit/test_batched.py,
tests/unit/test_scheduler.py); its latency is the shared step's wall time, and `batch_size` says
how many runs that step served.

    sched = scheduler_for(model)              # one per loaded model, started on first use
    for step in sched.generate(ids, SamplingParams(...), options=RunOptions(...),
                               should_stop=lambda: False, deadline=time.perf_counter() + 60):
        step.token_id, step.batch_size, step.cache_bytes, ...   # models.generate.Step fields
"""
from __future__ import annotations

import collections
import threading
import time
from typing import Callable, Iterator, Optional, Sequence

import torch

from explorer.serving import registry
from explorer.serving.runs import (AHEAD, Busy, End, LoopSnapshot, Run, RunHandle, Savings, SharedStep,
                                   StepRecord, TooManyRuns, Visitor, run_state)
from explorer.serving.limits import MAX_BATCH, MAX_RUNS_PER_ADDRESS, MAX_RUNS_PER_SESSION, MAX_WAITING
from explorer.serving.prefixes import KEPT_MIN, SHARE_MIN, best_source, same_session, worth_waiting
from explorer.serving.thread_choice import FIXED_BATCH_THREADS, ThreadChoice, batch_threads
from explorer.serving.workers import start_worker
from models.device import intra_op_threads
from models.generate import check_prompt, greedy_choices, next_step

PREFILL_CHUNK = 64        # tokens of one prompt per forward
PREFILL_TOKENS = 256      # prompt tokens per iteration, all joining runs together
POLL_S = 2.0              # a consumer waiting for its next step checks its stop flag this often
IDLE_EXIT_S = 60.0        # a loop with nothing to do this long ends (and frees its packed weights)
STEP_RECORDS = 256        # recent decode steps kept for Scheduler.snapshot (the batch view)


class Scheduler:
    """The decode loop of one model (see the module doc)."""

    def __init__(self, model, *, max_batch: int = MAX_BATCH, max_waiting: int = MAX_WAITING,
                 prefill_chunk: int = PREFILL_CHUNK, prefill_tokens: int = PREFILL_TOKENS,
                 max_per_session: int = MAX_RUNS_PER_SESSION,
                 max_per_address: int = MAX_RUNS_PER_ADDRESS, solo: Optional[str] = "fused"):
        from engine.batched import BatchedDecoder

        if max_batch < 1 or max_waiting < 0 or prefill_chunk < 1 or prefill_tokens < prefill_chunk:
            raise ValueError("max_batch >= 1, max_waiting >= 0, prefill_tokens >= prefill_chunk >= 1")
        if max_per_session < 1 or max_per_address < 1:
            raise ValueError("max_per_session >= 1, max_per_address >= 1")
        self.model = model
        self.decoder = BatchedDecoder(model, solo=solo)
        self.max_batch, self.max_waiting = max_batch, max_waiting
        self.max_per_session, self.max_per_address = max_per_session, max_per_address
        self.prefill_chunk, self.prefill_tokens = prefill_chunk, prefill_tokens
        self._lock = threading.Condition()
        self._waiting: collections.deque = collections.deque()
        self._active: list = []
        self._thread: Optional[threading.Thread] = None
        self._packer: Optional[threading.Thread] = None   # _pack_ahead's
        # what the loop did, for tests and the benchmark: largest batch, steps, refusals (busy,
        # and past one visitor's cap)
        self.stats = {"max_batch": 0, "decode_steps": 0, "prefill_forwards": 0, "refused": 0,
                      "refused_visitor": 0, "prefill_tokens": 0, "shared_tokens": 0}
        self._steps: collections.deque = collections.deque(maxlen=STEP_RECORDS)   # under _lock
        self._savings = Savings()     # prompt tokens copied, per session (the batch view's count)
        self._kept: list = []         # kept prompts' runs, fed (keep_prompts), for the loop alone
        self._kept_ids: set = set()   # every prompt asked to be kept (under _lock)
        # a run alone keeps torch's setting (the fused step splits its products over every thread)
        fixed = FIXED_BATCH_THREADS is not None
        self.threads = ThreadChoice((batch_threads(),) if fixed else (1, batch_threads()))
        registry.track(self)

    # ----- the consumer's side ----------------------------------------------------------------
    @property
    def capacity(self) -> int:
        return self.max_batch + self.max_waiting

    def load(self) -> int:
        """Runs in the batch or waiting for it."""
        with self._lock:
            return self._visitors_runs()

    def kept_pending(self) -> int:
        """Kept prompts asked for and not yet fed (keep_prompts). One whose forward failed is
        dropped, not retried: keeping is a saving, never a visitor's result."""
        with self._lock:
            return sum(run.kept for run in (*self._active, *self._waiting))

    def _visitors_runs(self) -> int:
        """Visitors' runs in the batch or waiting (a kept prompt being fed is none). Called with
        the lock held."""
        return sum(not run.kept for run in (*self._active, *self._waiting))

    def keep_prompts(self, prompts: Sequence[Sequence[int]]) -> None:
        """Keep the keys and values of these prompts: the app's own texts (the Generate tab's
        default prompt, a lesson's, explorer.generate.kept), the same for every visitor. The
        loop feeds each once, ahead of the visitors' runs, in the default options, like any
        prompt, and keeps its cache for as long as this scheduler lives; a run whose prompt
        begins like one (same options) copies those positions instead of computing them. A
        kept prompt is computed by the loop itself, never copied from a visitor's run, so what
        a run copies from it depends on its own prompt alone. Asking again for a prompt is a
        no-op. At most the positions every layer can hold in place are kept (a sliding
        window's: a ring that wrapped holds no prefix)."""
        from models.decoder import decode_options
        from models.generate import SamplingParams

        options = decode_options(None)
        with self._lock:
            for prompt in prompts:
                ids = tuple(int(i) for i in prompt)
                if len(ids) <= KEPT_MIN or ids in self._kept_ids:   # a copy leaves one to feed
                    continue
                try:
                    check_prompt(self.model, len(ids), 1)
                except ValueError:   # past the model's context: no run could begin like it
                    continue
                self._kept_ids.add(ids)
                run = Run(list(ids), SamplingParams(max_new_tokens=1), options, set(), None, False)
                run.kept = True
                self._waiting.appendleft(run)   # fed before the visitors' runs that wait
            if self._waiting:
                self._run_loop()

    def submit(self, prompt_ids: Sequence[int], params, *, options=None,
               eos_ids: Optional[Sequence[int]] = None, deadline: Optional[float] = None,
               keep_logits: bool = False, visitor: Optional[Visitor] = None,
               public_prefix: int = 0) -> RunHandle:
        """Queue a run; TooManyRuns when its visitor has as many runs in the loop as one may,
        Busy when batch and queue are full, ValueError for a prompt that does not fit the model
        (models.generate.check_prompt). `visitor`: who sent it (caps, and which runs it may copy
        any prefix from). `public_prefix`: how many leading prompt tokens are ones every
        visitor's prompt begins with by construction (explorer.prompts.public_prefix: the chat
        template's), the only ones copied from or to another visitor's run. The caller
        guarantees that every run's public prefix is the same tokens."""
        from models.decoder import decode_options

        ids = [int(i) for i in prompt_ids]
        check_prompt(self.model, len(ids), params.max_new_tokens)
        if not 0 <= public_prefix <= len(ids):
            raise ValueError(f"public_prefix {public_prefix} outside the prompt's {len(ids)} tokens")
        eos = set(self.model.config.eos_token_ids if eos_ids is None else eos_ids)
        run = Run(ids, params, decode_options(options), eos, deadline, keep_logits,
                  visitor, public_prefix)
        with self._lock:
            self._refuse_past_cap(run.visitor)
            if self._visitors_runs() >= self.capacity:
                self.stats["refused"] += 1
                raise Busy(self.capacity)
            # the lowest place number no run in the loop holds: read from the live runs, so no
            # way out of the loop can leak one
            taken = {other.seat for other in (*self._active, *self._waiting) if not other.kept}
            run.seat = next(k for k in range(1, len(taken) + 2) if k not in taken)
            self._waiting.append(run)
            if self._visitors_runs() >= 2:
                self._pack_ahead()
            self._run_loop()
        return RunHandle(run, self)

    def generate(self, prompt_ids: Sequence[int], params, *, options=None,
                 eos_ids: Optional[Sequence[int]] = None, keep_logits: bool = False,
                 should_stop: Optional[Callable[[], bool]] = None,
                 deadline: Optional[float] = None, visitor: Optional[Visitor] = None,
                 public_prefix: int = 0) -> Iterator:
        """models.generate.generate's iterator, served by the shared loop: one Step (with
        `batch_size`) per token. `should_stop` is polled before every step; closing the
        iterator, a stop or the deadline takes the run out of the batch before its next step;
        while waiting long for a step (queued, a long prefill) it is polled every POLL_S.
        `visitor`, `public_prefix`: as for submit."""
        handle = self.submit(prompt_ids, params, options=options, eos_ids=eos_ids,
                             deadline=deadline, keep_logits=keep_logits, visitor=visitor,
                             public_prefix=public_prefix)
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

    def snapshot(self, session: Optional[str] = None) -> LoopSnapshot:
        """The runs in the loop and its recent decode steps (runs.LoopSnapshot): lengths and
        counts only. `session`: a RunState is `own` when its run is of this session, and the
        prompt tokens prefix reuse saved are this session's runs' alone (the session itself
        never leaves the scheduler). Costs O(runs x layers) under the lock."""
        with self._lock:
            runs = [run_state(run, "waiting" if run in self._waiting else None, session, self.decoder)
                    for run in (*self._active, *self._waiting) if not run.kept]
            return LoopSnapshot(runs=tuple(runs), steps=tuple(self._steps),
                                shared_tokens=self._savings.of(session), max_batch=self.max_batch)

    def forget_sessions(self, sessions: Sequence[str]) -> None:
        """The app dropped these sessions (idle): their counts go (runs.Savings)."""
        self._savings.forget(sessions)

    def _refuse_past_cap(self, visitor: Visitor) -> None:
        """TooManyRuns when `visitor`'s session or address already has as many runs decoding or
        waiting as one may (a run stopped but not yet out counts no more). Called with the lock
        held."""
        runs = [run for run in (*self._active, *self._waiting) if not run.stop.is_set()]
        for scope, key, limit in (("session", visitor.session, self.max_per_session),
                                  ("address", visitor.address, self.max_per_address)):
            if key is not None and sum(getattr(run.visitor, scope) == key for run in runs) >= limit:
                self.stats["refused_visitor"] += 1
                raise TooManyRuns(scope, limit)

    def _pack_ahead(self) -> None:
        """Runs are about to decode together: make the batched steps' packed weights now, on a
        thread of their own, while the runs' prompts go in: made by the first pooled step,
        they would hold up every visitor's first token of a burst (about 0.36 s of SmolLM2's
        with 30 visitors); a lone visitor, decoding through the fused step, never makes them.
        Called with the lock held."""
        if not self.decoder.unpacked or (self._packer is not None and self._packer.is_alive()):
            return
        self._packer = start_worker(self.decoder.pack, "kv-pack")

    def _run_loop(self) -> None:
        """Start the loop's thread unless it runs (it ends once idle), and wake it for the
        runs just queued. Called with the lock held."""
        if self._thread is None or not self._thread.is_alive():
            self._thread = threading.Thread(target=self._loop, name="kv-scheduler", daemon=True)
            self._thread.start()
        self._lock.notify_all()

    def _wake(self) -> None:
        with self._lock:
            self._lock.notify_all()

    # ----- the loop -------------------------------------------------------------------------
    def _loop(self) -> None:
        torch.set_grad_enabled(False)
        while True:
            with self._lock:
                while not self._waiting and not self._active:
                    if registry.EXITING.is_set() or (not self._lock.wait(timeout=IDLE_EXIT_S)
                                                     and not self._waiting and not self._active):
                        # idle for a while: the next submit restarts the loop, and the packed
                        # weights of the batched steps (540 MB for SmolLM2) are given back
                        self._thread = None
                        self.decoder.drop_packed()
                        return
            if registry.EXITING.is_set():
                for run in list(self._active) + list(self._waiting):
                    run.out.put(End("stop"))
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
                    run.out.put(End("stop" if run.stop.is_set() else "deadline"))
                    continue
                self._active.append(run)   # its cache comes when its prefill does (_start)
        joining = self._start([run for run in self._active if not run.tokens])
        self._prefill(joining)                                            # 3. prefill
        # the runs whose prompts just went in decode in this step too: alone, the runs that
        # were decoding would take a step without them (the 29 of a class waiting for it)
        decoding = [run for run in self._active if run.tokens and run.pending < AHEAD]
        if decoding:                                                      # 4. decode
            self._decode(decoding)
        self.stats["max_batch"] = max(self.stats["max_batch"], len(decoding))
        return bool(decoding or joining)

    def _start(self, joining: list) -> list:
        """The joining runs this iteration's prefill may feed, each with its own cache: those
        started before, then more (in the order they were admitted) until their next chunks
        fill the iteration's prefill budget. A run's cache (its prompt and new tokens at full
        capacity, ~60 MB for SmolLM2 at 1,024 + 256) is allocated here, not at admission: a
        class of 40 admitted together held 40 caches while the budget fed a few prompts an
        iteration; now at most about budget / chunk of them (4 of 1,024-token prompts) exist
        before their runs move into the pooled store (docs/HARDENING.md, finding 9)."""
        fill = sum(min(self.prefill_chunk, len(run.prompt) - run.fed)
                   for run in joining if run.batch is not None)
        for run in joining:
            if run.batch is not None:
                continue
            if fill >= self.prefill_tokens:
                break
            try:
                run.batch = self.decoder.start(len(run.prompt) + run.params.max_new_tokens, run.options)
            except Exception as error:      # e.g. out of memory for its cache
                self._remove(run)
                run.out.put(error)
                continue
            if run.kept:   # a ring layer that wrapped holds no prefix: keep what all hold in place
                del run.prompt[min(layer.capacity for layer in run.batch.cache.layers):]
            # what it will likely feed: the public prefix is usually copied (_share_prefixes)
            public = run.public if run.public >= SHARE_MIN else 0
            fill += min(self.prefill_chunk, max(1, len(run.prompt) - public))
        return [run for run in joining if run.batch is not None]   # in the order admitted

    def _share_prefixes(self, joining: list) -> list:
        """Start each joining run that has nothing in its cache yet with the longest prefix of
        its prompt another run already holds and may give it (_share_limit; at least SHARE_MIN
        tokens, same options; one token at least is left to feed, whose logits give its first
        token). A run whose prompt shares a longer such prefix with a run that is still being
        fed waits for it (it is left out of this iteration's prefill) instead of computing the
        same keys twice. Returns the runs to prefill now."""
        ready, feeding = [], []
        for run in joining:
            if run.fed:
                ready.append(run)
                feeding.append(run)
                continue
            limit = min(len(run.prompt) - 1, min(layer.capacity for layer in run.batch.cache.layers))
            best, best_n = best_source(run, (*self._active, *self._kept), limit)
            if worth_waiting(run, feeding, limit, best_n):
                continue   # wait for it: next iteration its keys are there to copy
            if best is not None:
                try:
                    self.decoder.share_prefix(run.batch, best.batch, best_n)
                except ValueError:   # the caches disagree after all: it feeds its whole prompt
                    pass
                else:
                    run.fed = run.shared = best_n
                    run.shared_own = same_session(run, best)
                    run.shared_kept = best.kept
                    if not run.kept:   # what visitors' runs copied: in all, and per session
                        self.stats["shared_tokens"] += best_n
                        self._savings.add(run.visitor.session, best_n)
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
            # the visitors' runs this forward served (a kept prompt fed beside them is no visitor)
            served = sum(not run.kept for run in group)
            for row, run in enumerate(group):
                run.fed += n
                run.prefill_s += elapsed
                if run.fed == len(run.prompt):
                    joining.remove(run)
                    if run.kept:   # kept for the runs to come: it never decodes
                        with self._lock:
                            self._active.remove(run)
                        self._kept.append(run)
                        continue
                    self._emit(run, logits[row, -1], phase="prefill", latency=run.prefill_s,
                               n_fed=len(run.prompt) - run.shared, batch_size=served)

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
        context = sum(run.batch.pos for run in runs) / len(runs)
        with self._lock:
            self._steps.append(StepRecord(time.time(), len(runs), latency, context))
        # the greedy runs' tokens and alternatives in one call over the batch, not one row at a
        # time (for a vocabulary of Gemma's size, the rows one at a time took half as long as
        # the step); each run's latency counts the step and this
        greedy = [row for row, run in enumerate(runs) if run.params.greedy]
        choices: dict = {}
        if len(greedy) > 1:
            t1 = time.perf_counter()
            choices = dict(zip(greedy, greedy_choices(logits[greedy, -1])))
            latency += time.perf_counter() - t1
        for row, run in enumerate(runs):
            self._emit(run, logits[row, -1], phase="decode", latency=latency, n_fed=1,
                       batch_size=len(runs), choice=choices.get(row))

    def _emit(self, run: Run, logits: torch.Tensor, *, phase: str, latency: float, n_fed: int,
              batch_size: int, choice: Optional[tuple] = None) -> None:
        """Sample the run's next token from its logits (V,) (or take `choice`, made for the
        batch: models.generate.greedy_choices) and hand its Step to its consumer; a finished
        run leaves the batch at once."""
        step = next_step(logits, run.params, run.generator, run.eos, index=len(run.tokens),
                         n_prompt=len(run.prompt), phase=phase, forward_s=latency,
                         tokens_processed=n_fed, score_entries=run.batch.scores,
                         cache=run.batch.cache, keep_logits=run.keep_logits, step_type=SharedStep,
                         batch_size=batch_size, shared_prefix=run.shared if phase == "prefill" else 0,
                         shared_own=run.shared_own and phase == "prefill",
                         shared_kept=run.shared_kept and phase == "prefill", choice=choice)
        run.tokens.append(step.token_id)
        if step.finished:   # out of the batch before its consumer hears of the last token
            self._remove(run)
        with self._lock:
            run.pending += 1
        run.out.put(step)

    def _leave(self, run: Run, reason: str) -> None:
        self._remove(run)
        run.out.put(End(reason))

    def _fail(self, run: Run, error: BaseException) -> None:
        self._remove(run)
        run.out.put(error)

    def _remove(self, run: Run) -> None:
        with self._lock:
            if run in self._active:
                self._active.remove(run)
        if run.batch is not None:   # its row of the pooled store: free for the next run now
            self.decoder.release(run.batch)
        run.batch = None   # its cache: freed with the last reference


def scheduler_for(model) -> Scheduler:
    """The one scheduler of a loaded model (made on first use)."""
    return registry.shared(model, Scheduler)
