"""One generation, recorded: the cache layout the engine builds for the visitor's policy, every
step's telemetry, and the streaming run (`stream_generation`, the experiment's `run`) that
yields the Session after every token, then after the C4 check and each no-cache replay step.

Every number comes from the real run: bytes are read from the cache tensors
(`Step.cache_bytes`: the rows holding tokens), score counts from the forward
(`Step.score_entries`: what the path computed), latencies are wall times of the engine's own
steps; beside them, the scores the mask needs (`StepRecord.visible_pairs`, the engine's MaskSpec
over the positions) and ModelConfig's formula, never instead. After the run the checks
(explorer/generate/checks.py) add the engine's cache read back (allocated and used bytes, the
(T, S) mask over its real slots), the C4 logit differences and the C1 replay.
The Session is the result the figures and summaries are drawn from (explorer/generate/figures.py);
it grows while the run streams, and `snapshot()` hands a reader a copy that does not.
"""
from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Generator, Iterator, Optional, Sequence

from explorer.generate.checks import (REPLAY_BUDGET_S, WAIT_POLL_S, CacheReading, logit_differences,
                                      needed_scores, read_engine_cache, replay_targets,
                                      replay_without_cache)
from explorer.generate.request import DEADLINE_S, Request
from explorer import masks
from explorer.prompts import visible_token
from explorer.locales import text
from models.attention import MaskSpec
from engine.quantized import configured_weights


# ----- cache layout and the formula (C3, C9) ------------------------------------------------
@dataclass(frozen=True)
class LayerLayout:
    layer: int
    mask: MaskSpec            # the layer's mask in this run (model.layer_masks: its own, restricted)

    @property
    def kind(self) -> str:
        """"full" | "window" | "sinks+window": the cache the engine builds (its LayerKV.kind)."""
        if self.mask.window is None:
            return "full"
        return "sinks+window" if self.mask.sinks else "window"

    @property
    def window(self) -> Optional[int]:
        return self.mask.window

    @property
    def sinks(self) -> int:
        return self.mask.sinks

    @property
    def capacity(self) -> Optional[int]:
        """Tokens this layer's cache can hold (None: grows with the sequence)."""
        return None if self.window is None else self.window + self.sinks

    def describe(self, lang: Optional[str] = "en") -> str:
        """The layer's cache in `lang`: "full (global)", or its mask (explorer.masks)."""
        if self.kind == "full":
            return text("generate.fig.kind.full", lang)
        return masks.describe(self.mask, lang)


def cache_layout(model, mask=None) -> list[LayerLayout]:
    """Per layer: the cache the engine builds for this mask (from the same layer_masks list)."""
    return [LayerLayout(i, spec) for i, spec in enumerate(model.layer_masks(mask))]


def formula_layer_bytes(config, layouts: Sequence[LayerLayout], tokens: int,
                        element_bytes: int) -> list[int]:
    """Per layer, ModelConfig's formula for the tokens that layer holds: min(t, capacity)."""
    return [config.kv_layer_bytes(tokens, element_bytes, lay.capacity) for lay in layouts]


# ----- one generation, recorded -------------------------------------------------------------
@dataclass
class StepRecord:
    index: int
    token_id: int
    piece: str
    position: int              # position of the new token == tokens in context at this step
    phase: str
    latency_s: float
    tokens_processed: int
    score_entries: int
    cache_bytes: list
    cache_lengths: list
    # runs whose tokens this step's forward computed, this one included (the shared decode
    # loop, explorer/serving/scheduler.py); latency_s is that shared step's wall time
    batch_size: int = 1
    # query-key pairs the step's mask leaves visible, all layers and heads: what attention
    # needs (score_entries: what the path computed, t x S per head on the eager path)
    visible_pairs: int = 0
    # prompt tokens whose keys and values were copied from another run's cache in the shared
    # loop (prefix reuse; prefill step only): tokens_processed counts the rest. From another
    # visitor's run only the chat template's tokens are copied; shared_own: from a run of the
    # same session, any prefix; shared_kept: from one of the app's own prompts, which the loop
    # computed itself and keeps (explorer.generate.kept)
    shared_prefix: int = 0
    shared_own: bool = False
    shared_kept: bool = False
    # the most likely tokens of the distribution this token was drawn from, with the chosen
    # one's probability (models.generate.Alternatives: computed by the step that chose it),
    # and each of them readable (explorer.prompts.visible_token), the chosen token's last
    alternatives: Any = None
    alternative_labels: tuple = ()

    @property
    def context(self) -> int:
        """Tokens the step's forward attended over (all of them are in the cache afterwards)."""
        return self.position


@dataclass
class Session:
    """Everything one request produced; figures and tables are built from it."""
    model_name: str
    config: Any
    element_bytes: int
    layouts: list
    prompt_ids: list
    chat: bool
    request: Request
    # the RunOptions the run decoded with: its mask is request.mask(), made once and handed on
    # to the checks (None only for a Session built by hand, which runs no check)
    options: Any = None
    records: list = field(default_factory=list)
    text: str = ""
    phase: str = "prefill"     # prefill | decode | waiting | checking | replay | done
    stopped: Optional[str] = None  # None | "eos" | "length" | "stop" | "deadline"
    started: float = field(default_factory=time.perf_counter)
    first_token_s: Optional[float] = None
    decode_s: float = 0.0      # wall time from the first token to the last one
    logit_diffs: Optional[list] = None  # per generated token, max |cached - full| (C4)
    weights: str = "fp32"               # the precision its decode steps read (C4's bound)
    fused: bool = False                 # a step with this run alone is the fused C++ step
    bytes_per_weight: float = 4.0       # of the matrices the decode steps read (step_cost)
    replay: list = field(default_factory=list)
    replay_note: str = ""      # "" | "budget" (the replay ran out of time) | "busy" (C1 and C4
                               # declined: other visitors were generating, see stream_generation)
    others_at_end: int = 0     # runs of other visitors in the shared loop when decoding ended
    ahead: int = 0             # phase "waiting": other visitors' runs the checks wait behind
    cache_reading: Optional[CacheReading] = None   # the engine's cache after the run's tokens

    @property
    def max_len(self) -> int:
        """The tokens the run's cache is made for: prompt + max new tokens."""
        return self.n_prompt + self.request.max_new_tokens

    @property
    def masks(self) -> list:
        """Each layer's MaskSpec in this run."""
        return [lay.mask for lay in self.layouts]

    @property
    def streaming(self) -> bool:
        """Still decoding: more tokens may follow (a UI may merge this step with the next)."""
        return self.phase == "decode" and self.stopped is None

    @property
    def n_prompt(self) -> int:
        return len(self.prompt_ids)

    @property
    def generated_ids(self) -> list:
        return [r.token_id for r in self.records]

    def decode_rate(self) -> Optional[float]:
        """Tokens per second after the first token, as the visitor saw them arrive."""
        if len(self.records) < 2 or self.decode_s <= 0:
            return None
        return (len(self.records) - 1) / self.decode_s

    def formula_bytes(self, tokens: int) -> list[int]:
        """ModelConfig's formula, per layer of this run's layout, at `tokens` tokens."""
        return formula_layer_bytes(self.config, self.layouts, tokens, self.element_bytes)

    def bytes_match_formula(self) -> bool:
        """C3 at every step: measured per-layer bytes == formula per layer."""
        return bool(self.records) and all(r.cache_bytes == self.formula_bytes(r.context)
                                          for r in self.records)

    def formula_allocated(self) -> Optional[list]:
        """ModelConfig's formula for every slot of each layer's buffers (capacity tokens)."""
        reading = self.cache_reading
        if reading is None:
            return None
        return [self.config.kv_layer_bytes(c, self.element_bytes) for c in reading.capacity]

    def reading_matches_run(self) -> Optional[bool]:
        """The engine's cache read back holds what the run's own cache reported at its last
        step: the same tokens, per layer the same rows and bytes (None before the reading)."""
        reading = self.cache_reading
        if reading is None or not self.records:
            return None
        last = self.records[-1]
        return (reading.tokens == last.context and list(reading.held) == last.cache_lengths
                and list(reading.used_bytes) == last.cache_bytes)

    def max_batch(self) -> int:
        """The most runs one of this run's steps served (1: it decoded alone)."""
        return max((r.batch_size for r in self.records), default=1)

    def max_logit_diff(self) -> Optional[float]:
        return max(self.logit_diffs) if self.logit_diffs else None

    def snapshot(self) -> "Session":
        """A copy whose lists no longer grow (for a reader in another thread)."""
        return dataclasses.replace(self, records=list(self.records), replay=list(self.replay),
                                   logit_diffs=None if self.logit_diffs is None else list(self.logit_diffs))


# ----- the criteria of C3 and C9, read from a Session (the summary and the claims board) ------
@dataclass(frozen=True)
class C3Verdict:
    """C3 on one run: the used bytes against the formula at every step, the allocated buffers
    against the formula at their capacity, and the read-back cache against the run's own."""
    steps: int
    used_equal: bool                  # every step, every layer: used bytes == formula
    allocated_equal: Optional[bool]   # every layer: allocated bytes == formula at capacity
    reading_equal: Optional[bool]     # the read-back cache == the run's last step
    passed: bool                      # all three hold (the reading is needed)


def c3_verdict(session: Session) -> C3Verdict:
    used = session.bytes_match_formula()
    reading = session.cache_reading
    allocated = None if reading is None else list(reading.allocated_bytes) == session.formula_allocated()
    matches = session.reading_matches_run()
    return C3Verdict(steps=len(session.records), used_equal=used, allocated_equal=allocated,
                     reading_equal=matches, passed=bool(used and allocated and matches))


@dataclass(frozen=True)
class C9Verdict:
    """C9 on one run: layers with a window hold min(t, capacity) tokens at every step, their
    buffers have capacity slots and no more, while full layers hold every token."""
    capped_layers: int
    full_layers: int
    cap: Optional[int]                # the smallest capacity (window + sinks) of a capped layer
    tokens: int                       # t at the last step
    capped_held: Optional[int]        # the most tokens a capped layer held at the last step
    capped_slots: Optional[int]       # the most slots a capped layer's buffers have (read back)
    full_held: Optional[int]          # the fewest tokens a full layer held at the last step
    every_step: bool                  # held == min(t, capacity) on every layer at every step
    passed: bool                      # capped layers exist, t passed the cap, all of the above


def c9_verdict(session: Session) -> C9Verdict:
    capped = [lay for lay in session.layouts if lay.capacity is not None]
    full = [lay for lay in session.layouts if lay.capacity is None]
    every_step = bool(session.records) and all(
        r.cache_lengths[lay.layer] == (r.context if lay.capacity is None else min(r.context, lay.capacity))
        for r in session.records for lay in session.layouts)
    last = session.records[-1] if session.records else None
    reading = session.cache_reading
    cap = min((lay.capacity for lay in capped), default=None)
    capped_held = max((last.cache_lengths[lay.layer] for lay in capped), default=None) if last else None
    full_held = min((last.cache_lengths[lay.layer] for lay in full), default=None) if last else None
    slots = None
    if reading is not None and capped:
        slots = max(reading.capacity[lay.layer] for lay in capped)
    tokens = last.context if last else 0
    passed = bool(capped and last and tokens > cap and every_step and slots is not None
                  and all(reading.capacity[lay.layer] == lay.capacity for lay in capped)
                  and all(reading.held[lay.layer] == lay.capacity for lay in capped)
                  and all(reading.held[lay.layer] == tokens for lay in full))
    return C9Verdict(capped_layers=len(capped), full_layers=len(full), cap=cap, tokens=tokens,
                     capped_held=capped_held, capped_slots=slots, full_held=full_held,
                     every_step=every_step, passed=passed)


def step_account(model, decoder, options, weights: str) -> tuple[bool, float]:
    """(a step of this run alone is the fused C++ step, bytes a matrix weight the steps read)."""
    from explorer.generate.step_cost import step_shape
    from models.decoder import decode_options

    fused = decoder is not None and decoder.fused_for(decode_options(options)) is not None
    try:
        return fused, step_shape(model, weights).bytes_per_weight
    except (ValueError, RuntimeError):   # a precision this model has no copy in: none was read
        return fused, float(model.element_size())


def stream_generation(model, tokenizer, ids: Sequence[int], request: Request, *, model_name: str = "",
                      chat: bool = False, should_stop: Callable[[], bool] = lambda: False,
                      started: Optional[float] = None, deadline: Optional[float] = None,
                      scheduler=None, eos_ids: Optional[Sequence[int]] = None,
                      visitor=None, public_prefix: int = 0,
                      checks_wait_s: float = 0.0) -> Iterator[Session]:
    """Decode through the model's shared loop (explorer/serving/scheduler.py: this run's
    tokens batched with other visitors', each run's numbers its own) and yield the Session
    after every token (so a UI can stream and a cancel lands within one step), then after the
    C4 check and each no-cache replay step. The checks run one forward after another outside
    the shared loop, and only while no other visitor is generating; otherwise they are
    declined (replay_note "busy"), and a replay stops when someone arrives.
    `started` (time.perf_counter() when the request arrived) is where time to first token counts
    from; `deadline` is a perf_counter value past which the run ends with stopped="deadline".
    `scheduler`: the decode loop to run in (default: the model's shared one; the claims board
    passes a loop of its own, so that its checks are not declined while visitors generate).
    `eos_ids`: the tokens that end the run (default: the model's; the board passes none, so
    that its runs reach the length it needs). `visitor`, `public_prefix`: who sent the run and
    how many of its prompt's tokens are the template's (explorer.serving's Scheduler.submit).
    `checks_wait_s` > 0 (a live class's teacher page, the screen the class reads: the caller
    decides, from the server's own state): the checks are not declined. The run keeps its
    logits rows for C4 even from shared steps, and after decoding it waits (phase "waiting",
    `ahead` the runs still in the loop) until the loop is empty or checks_wait_s has passed,
    then runs C4 and the cache reading all the same; its C1 replay stops when a visitor
    arrives, as any run's."""
    from explorer.serving import scheduler_for
    from models.forward import RunOptions

    deadline = deadline if deadline is not None else time.perf_counter() + DEADLINE_S
    options = RunOptions(mask=request.mask())
    session = Session(model_name=model_name, config=model.config, element_bytes=model.element_size(),
                      layouts=cache_layout(model, options.mask), prompt_ids=list(ids), chat=chat,
                      request=request, options=options)
    if started is not None:
        session.started = started

    def halt() -> bool:
        if should_stop():
            session.stopped = "stop"
            return True
        if time.perf_counter() > deadline:
            session.stopped = "deadline"
            return True
        return False

    shared = scheduler if scheduler is not None else scheduler_for(model)
    # the precision the loop's steps read (its decoder's; C4 compares like with like)
    decoder = getattr(shared, "decoder", None)
    session.weights = getattr(decoder, "weights", None) or configured_weights(model)
    session.fused, session.bytes_per_weight = step_account(model, decoder, options, session.weights)
    first = checks_wait_s > 0
    cached_logits = yield from _decode(session, shared, tokenizer, ids, halt, deadline, eos_ids,
                                       visitor, public_prefix, keep_shared=first)
    if session.stopped is None and not halt():
        session.stopped = "stop"   # the shared loop ended the run early (the process exits)
    if session.stopped in ("stop", "deadline") or not session.records:
        session.phase = "done"
        yield session
        return
    session.others_at_end = shared.load()
    asked = request.check_full_forward or request.compare_no_cache
    if first and asked:
        yield from _wait_for_loop(session, shared, min(deadline, time.perf_counter() + checks_wait_s), halt)
        if session.stopped in ("stop", "deadline"):
            session.phase = "done"
            yield session
            return
    elif (session.others_at_end or session.max_batch() > 1) and asked:
        # the checks are whole forwards without a cache: run now they would stall every other
        # visitor's stream, so they are declined while anyone else is generating; a run whose
        # steps were shared did not keep its logits rows for C4 (_decode) and is declined too
        session.replay_note = "busy"
        session.phase = "done"
        yield session
        return
    yield from _check(session, model, cached_logits, deadline, halt, shared)


def _wait_for_loop(session: Session, shared, until: float, halt: Callable[[], bool]) -> Iterator[Session]:
    """Phase "waiting" while other visitors' runs are in the loop, until `until`: the Session
    is yielded when the number ahead changes (the page says how many)."""
    while not halt():
        ahead = shared.load()
        if not ahead or time.perf_counter() >= until:
            break
        if session.phase != "waiting" or ahead != session.ahead:
            session.phase, session.ahead = "waiting", ahead
            yield session
        time.sleep(WAIT_POLL_S)
    session.ahead = 0


def _decode(session: Session, shared, tokenizer, ids: Sequence[int], halt: Callable[[], bool],
            deadline: float, eos_ids, visitor, public_prefix: int,
            keep_shared: bool = False) -> Generator[Session, None, Optional[list]]:
    """The run's steps in the shared loop: a StepRecord per token, the Session yielded after
    each. Returns the cached logits rows C4 compares (None once a step was shared, unless
    `keep_shared`: a run whose checks wait for the loop keeps them). visitor and
    public_prefix: who sent the run and how many of its prompt tokens any visitor may share
    (explorer/serving/scheduler.py)."""
    request = session.request
    cached_logits = []
    first_at = None
    masks, heads = session.masks, session.config.n_heads
    for step in shared.generate(ids, request.sampling(), options=session.options, eos_ids=eos_ids,
                                keep_logits=request.check_full_forward, should_stop=halt,
                                deadline=deadline, visitor=visitor, public_prefix=public_prefix):
        now = time.perf_counter()
        if first_at is None:
            first_at = now
            session.first_token_s = now - session.started
        session.decode_s = now - first_at
        if step.logits is not None and cached_logits is not None:
            if step.batch_size > 1 and not keep_shared:
                # another visitor's tokens shared this step: the checks will be declined
                # (stream_generation), so the rows (V floats a token: 1 MB for Gemma) are not
                # kept for nothing; 32 runs of 256 tokens kept them all (8.6 GB, bench/ceilings.py)
                cached_logits = None
            else:
                cached_logits.append(step.logits)
        session.records.append(StepRecord(
            index=step.index, token_id=step.token_id,
            piece=tokenizer.decode([step.token_id]), position=step.position, phase=step.phase,
            latency_s=step.latency_s, tokens_processed=step.tokens_processed,
            score_entries=step.score_entries, cache_bytes=list(step.cache_bytes),
            cache_lengths=list(step.cache_lengths), batch_size=step.batch_size,
            shared_prefix=getattr(step, "shared_prefix", 0),
            shared_own=getattr(step, "shared_own", False),
            shared_kept=getattr(step, "shared_kept", False), alternatives=step.alternatives,
            alternative_labels=_labels(tokenizer, step),
            visible_pairs=needed_scores(masks, heads, step.tokens_processed, step.position)))
        session.text = tokenizer.decode(session.generated_ids, skip_special_tokens=True)
        session.phase = "decode"
        if step.finished:
            session.stopped = step.finished
        yield session
    return cached_logits


def _labels(tokenizer, step) -> tuple:
    """The step's alternatives and then its own token, each as visible_token shows it."""
    if step.alternatives is None:
        return ()
    return tuple(visible_token(tokenizer, i) for i in (*step.alternatives.ids, step.token_id))


def _check(session: Session, model, cached_logits: Optional[list], deadline: float,
           halt: Callable[[], bool], shared) -> Iterator[Session]:
    """The checks after the run, one forward after another outside the shared loop: C4 (the
    cached logits against one full forward), the engine's cache read back (C3, C4's mask) and
    the C1 replay, which stops when a visitor arrives or its budget runs out."""
    request, options = session.request, session.options
    everything = session.prompt_ids + session.generated_ids
    if request.check_full_forward and cached_logits:
        session.phase = "checking"
        session.logit_diffs = logit_differences(model, everything, session.n_prompt,
                                                cached_logits, options, session.weights)
        cached_logits.clear()   # the rows are compared: their memory goes back now
        yield session
    if request.check_full_forward or request.compare_no_cache:
        # C3's allocated bytes and C4's mask: the engine's cache holding the run's tokens
        session.phase = "checking"
        session.cache_reading = read_engine_cache(model, everything, session.records[-1].context,
                                                  options, session.max_len,
                                                  layer_masks=session.masks)
        yield session
    if request.compare_no_cache:
        session.phase = "replay"
        budget_end = min(deadline, time.perf_counter() + REPLAY_BUDGET_S)
        for point in replay_without_cache(model, everything, session.records, options, budget_end,
                                          greedy=request.temperature == 0.0,
                                          max_len=session.max_len, layer_masks=session.masks):
            session.replay.append(point)
            yield session
            if halt():
                break
            if shared.load():   # a visitor arrived: the shared loop gets the CPU back
                session.replay_note = "busy"
                break
        if (session.stopped != "stop" and not session.replay_note
                and len(session.replay) < len(replay_targets(session.records))):
            session.replay_note = "budget"
    session.phase = "done"
    yield session
