"""The Generate & KV-cache tab as plain functions: request validation, a streaming generation
session with its telemetry, the evidence for claims C1 (cache vs no cache), C3 (bytes ==
formula), C4 (cached logits == full forward), C5/C6 (calculator of published shapes), C9 (local
layers capped at their window) and C2 (decode roofline), and the Plotly figures. No Gradio here.

Every number shown comes from the real run: bytes are read from the cache tensors
(`Step.cache_bytes`), score counts from the forward (`Step.score_entries`), latencies are wall
times of the engine's own steps; the formula is computed beside them, never instead of them.
"""
from __future__ import annotations

import dataclasses
import math
import queue
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, Optional, Sequence

import plotly.graph_objects as go

from explorer import plotting
from explorer.locales import text as locale_text
from explorer.plotting import Fig
from explorer.inputs import InputError, finite_number, whole_number

# ----- limits (CPU-sized; every one is checked server-side) ---------------------------------
MAX_PROMPT_TOKENS = 1024        # prompt after the chat template
MAX_NEW_TOKENS = 256
MAX_WINDOW = 4096
MAX_SINKS = 64
MAX_TOP_K = 1000
MAX_TEMPERATURE = 2.0
MAX_SEED = 2**31 - 1
DEADLINE_S = 120.0              # wall-clock budget of one request, generation + checks
REPLAY_BUDGET_S = 20.0          # the no-cache replay stops after this (points measured so far stay)
REPLAY_MAX_POINTS = 24          # no-cache steps replayed, spread evenly over the generated ones
C4_TOLERANCE = 1e-4             # fp32; the engine's tests hold the same bound
C4_PLOT_FLOOR = 1e-9            # bottom of the C4 chart's log axis
POLICIES = ("full", "window", "sinks")

# Colour-blind-safe, from viridis: one colour per kind of layer cache.
KIND_COLOURS = {"full": "#440154", "window": "#21918c", "sinks+window": "#5ec962"}
CACHED_COLOUR, UNCACHED_COLOUR = "#3b528b", "#e5a000"  # viridis blue vs a cividis-safe amber



def label(key: str, lang: Optional[str] = "en", **fields) -> str:
    return locale_text(key, lang, **fields)


# ----- validation ---------------------------------------------------------------------------
def _flag(name: str, value: Any) -> bool:
    if value is None:
        return False
    if not isinstance(value, bool):
        raise InputError(f"{name} must be true or false, got {value!r}.")
    return value


@dataclass(frozen=True)
class Request:
    prompt: str
    max_new_tokens: int = 32
    temperature: float = 0.0
    top_k: int = 0
    top_p: float = 1.0
    seed: Optional[int] = None
    policy: str = "full"          # "full" | "window" | "sinks"
    window: int = 64
    sinks: int = 4
    compare_no_cache: bool = True
    check_full_forward: bool = True

    def mask(self):
        """The user's cache policy as a MaskSpec (None: the model's own layers, unchanged)."""
        from models.attention import MaskSpec

        if self.policy == "full":
            return None
        return MaskSpec(window=self.window, sinks=self.sinks if self.policy == "sinks" else 0)

    def sampling(self):
        from models.generate import SamplingParams

        return SamplingParams(max_new_tokens=self.max_new_tokens, temperature=self.temperature,
                              top_k=self.top_k, top_p=self.top_p, seed=self.seed)


def parse_request(prompt: Any, max_new_tokens: Any = 32, temperature: Any = 0.0, top_k: Any = 0,
                  top_p: Any = 1.0, seed: Any = None, policy: Any = "full", window: Any = 64,
                  sinks: Any = 4, compare_no_cache: Any = True,
                  check_full_forward: Any = True) -> Request:
    """Check every field (types, finiteness, ranges, cross-field rules); InputError in plain
    words otherwise. The prompt's length in tokens is checked once it is tokenized."""
    if not isinstance(prompt, str) or not prompt.strip():
        raise InputError("Type a prompt first.")
    if len(prompt) > 40 * MAX_PROMPT_TOKENS:
        raise InputError(f"The prompt is too long: keep it under {MAX_PROMPT_TOKENS} tokens.")
    n_new = whole_number(max_new_tokens, "Max new tokens", 1, MAX_NEW_TOKENS)
    temp = finite_number(temperature, "Temperature")
    if not 0.0 <= temp <= MAX_TEMPERATURE:
        raise InputError(f"Temperature must be between 0 and {MAX_TEMPERATURE:g}, got {temp:g}.")
    k = whole_number(top_k, "Top-k", 0, MAX_TOP_K)
    p = finite_number(top_p, "Top-p")
    if not 0.0 < p <= 1.0:
        raise InputError(f"Top-p must be greater than 0 and at most 1, got {p:g}.")
    seed_value = None
    if seed is not None and not (isinstance(seed, str) and not seed.strip()):
        seed_value = whole_number(seed, "Seed", 0, MAX_SEED)
    if policy not in POLICIES:
        raise InputError(f"Cache policy must be one of {', '.join(POLICIES)}, got {policy!r}.")
    w = whole_number(window, "Window", 1, MAX_WINDOW)
    s = whole_number(sinks, "Sinks", 0, MAX_SINKS)
    if policy == "sinks":
        if s < 1:
            raise InputError("Sinks + window needs at least one sink token.")
        if s >= w:
            raise InputError(f"Sinks ({s}) must be fewer than the window ({w}).")
    return Request(prompt=prompt, max_new_tokens=n_new, temperature=temp, top_k=k, top_p=p,
                   seed=seed_value, policy=policy, window=w, sinks=s,
                   compare_no_cache=_flag("Compare with no cache", compare_no_cache),
                   check_full_forward=_flag("Check against a full forward", check_full_forward))


def prompt_ids(tokenizer, text: str) -> tuple[list[int], bool]:
    """Token ids the model is fed, and whether the chat template was used: instruct models
    (a tokenizer with a chat template) get one user turn, base models the plain text."""
    if getattr(tokenizer, "chat_template", None):
        encoded = tokenizer.apply_chat_template([{"role": "user", "content": text}],
                                                add_generation_prompt=True, tokenize=True)
        if not isinstance(encoded, list):  # transformers 5 returns a BatchEncoding
            encoded = encoded["input_ids"]
        return [int(i) for i in encoded], True
    return [int(i) for i in tokenizer(text)["input_ids"]], False


def check_prompt_length(n_prompt: int, request: Request, context: int) -> None:
    if n_prompt > MAX_PROMPT_TOKENS:
        raise InputError(f"The prompt is {n_prompt} tokens; the limit here is {MAX_PROMPT_TOKENS}. "
                         "Shorten it.")
    if n_prompt + request.max_new_tokens > context:
        raise InputError(f"Prompt ({n_prompt} tokens) + max new tokens ({request.max_new_tokens}) "
                         f"exceeds the model's context of {context} tokens.")


# ----- cache layout and the formula (C3, C9) ------------------------------------------------
@dataclass(frozen=True)
class LayerLayout:
    layer: int
    kind: str                 # "full" | "window" | "sinks+window" (the engine's LayerKV.kind)
    window: Optional[int]     # None for a full cache
    sinks: int

    @property
    def capacity(self) -> Optional[int]:
        """Tokens this layer's cache can hold (None: grows with the sequence)."""
        return None if self.window is None else self.window + self.sinks

    def describe(self, lang: str = "en") -> str:
        if self.kind == "full":
            return label("generate.fig.kind.full", lang)
        if self.kind == "window":
            return label("generate.fig.kind.window", lang, w=self.window)
        return label("generate.fig.kind.sinks+window", lang, s=self.sinks, w=self.window)


def cache_layout(model, mask=None) -> list[LayerLayout]:
    """Per layer: the cache the engine builds for this mask (from the same layer_masks list)."""
    layouts = []
    for i, spec in enumerate(model.layer_masks(mask)):
        if spec.window is None:
            layouts.append(LayerLayout(i, "full", None, 0))
        else:
            layouts.append(LayerLayout(i, "sinks+window" if spec.sinks else "window",
                                       spec.window, spec.sinks))
    return layouts


def formula_bytes_per_token(n_layers: int, n_kv_heads: int, head_dim: int, element_bytes: int) -> int:
    """2 (K and V) × n_layers × n_kv_heads × d_head × bytes: query heads do not appear (C3)."""
    return 2 * n_layers * n_kv_heads * head_dim * element_bytes


def formula_layer_bytes(config, layouts: Sequence[LayerLayout], tokens: int,
                        element_bytes: int) -> list[int]:
    """Per layer, the formula with one layer and the tokens that layer holds: min(t, capacity)."""
    per_token = formula_bytes_per_token(1, config.n_kv_heads, config.head_dim, element_bytes)
    return [per_token * (tokens if lay.capacity is None else min(tokens, lay.capacity))
            for lay in layouts]


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

    @property
    def context(self) -> int:
        """Tokens the step's forward attended over (all of them are in the cache afterwards)."""
        return self.position


@dataclass
class ReplayPoint:
    context: int               # t: tokens fed to the no-cache forward (same t as the cached step)
    latency_s: float
    score_entries: int
    same_token: bool           # its next-token argmax equals the cached step's (greedy runs)


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
    records: list = field(default_factory=list)
    text: str = ""
    phase: str = "prefill"     # prefill | decode | checking | replay | done
    stopped: Optional[str] = None  # None | "eos" | "length" | "stop" | "deadline"
    started: float = field(default_factory=time.perf_counter)
    first_token_s: Optional[float] = None
    decode_s: float = 0.0      # wall time from the first token to the last one
    logit_diffs: Optional[list] = None  # per generated token, max |cached - full| (C4)
    replay: list = field(default_factory=list)
    replay_note: str = ""

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

    def bytes_match_formula(self) -> bool:
        """C3 at every step: measured per-layer bytes == formula per layer."""
        return all(r.cache_bytes == formula_layer_bytes(self.config, self.layouts, r.context,
                                                        self.element_bytes)
                   for r in self.records)

    def max_logit_diff(self) -> Optional[float]:
        return max(self.logit_diffs) if self.logit_diffs else None

    def snapshot(self) -> "Session":
        """A copy whose lists no longer grow (for a reader in another thread)."""
        return dataclasses.replace(self, records=list(self.records), replay=list(self.replay),
                                   logit_diffs=None if self.logit_diffs is None else list(self.logit_diffs))


def element_size(model) -> int:
    return model.embed.weight.element_size()


def stream_generation(model, tokenizer, ids: Sequence[int], request: Request, *, model_name: str = "",
                      chat: bool = False, should_stop: Callable[[], bool] = lambda: False,
                      started: Optional[float] = None,
                      deadline: Optional[float] = None) -> Iterator[Session]:
    """Run the engine's generate() and yield the Session after every token (so a UI can stream
    and a cancel lands within one step), then after the C4 check and each no-cache replay step.
    `started` (time.perf_counter() when the request arrived) is where time to first token counts
    from; `deadline` is a perf_counter value past which the run ends with stopped="deadline"."""
    from models.forward import RunOptions
    from models.generate import generate

    deadline = deadline if deadline is not None else time.perf_counter() + DEADLINE_S
    options = RunOptions(mask=request.mask())
    session = Session(model_name=model_name, config=model.config, element_bytes=element_size(model),
                      layouts=cache_layout(model, options.mask), prompt_ids=list(ids), chat=chat,
                      request=request)
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

    cached_logits = []
    first_at = None
    for step in generate(model, ids, request.sampling(), options=options,
                         keep_logits=request.check_full_forward, should_stop=halt):
        now = time.perf_counter()
        if first_at is None:
            first_at = now
            session.first_token_s = now - session.started
        session.decode_s = now - first_at
        if step.logits is not None:
            cached_logits.append(step.logits)
        session.records.append(StepRecord(
            index=step.index, token_id=step.token_id,
            piece=tokenizer.decode([step.token_id]), position=step.position, phase=step.phase,
            latency_s=step.latency_s, tokens_processed=step.tokens_processed,
            score_entries=step.score_entries, cache_bytes=list(step.cache_bytes),
            cache_lengths=list(step.cache_lengths)))
        session.text = tokenizer.decode(session.generated_ids, skip_special_tokens=True)
        session.phase = "decode"
        if step.finished:
            session.stopped = step.finished
        yield session
    if session.stopped in ("stop", "deadline") or not session.records:
        session.phase = "done"
        yield session
        return
    if request.check_full_forward and cached_logits:
        session.phase = "checking"
        session.logit_diffs = logit_differences(model, session.prompt_ids + session.generated_ids,
                                                session.n_prompt, cached_logits, options)
        del cached_logits
        yield session
    if request.compare_no_cache:
        session.phase = "replay"
        budget_end = min(deadline, time.perf_counter() + REPLAY_BUDGET_S)
        for point in replay_without_cache(model, session.prompt_ids + session.generated_ids,
                                          session.records, options, budget_end,
                                          greedy=request.temperature == 0.0):
            session.replay.append(point)
            yield session
            if halt():
                break
        if session.stopped != "stop" and len(session.replay) < len(replay_targets(session.records)):
            session.replay_note = "budget"
    session.phase = "done"
    yield session


_DONE = object()


def in_background(make_stream: Callable[[Callable[[], bool]], Iterator[Session]], *,
                  idle_timeout_s: float = 5.0, min_interval_s: float = 0.0) -> Iterator[Session]:
    """Run `make_stream(should_stop)` in a worker thread and yield snapshots of its Session.

    Why: a web framework's work between two yields (Gradio: postprocess, diff, send: ~2-4 ms
    here) would otherwise add to every decode step; on a fast device it would dominate. Here
    the worker decodes without waiting, and when the consumer is slower than decoding the
    steps it missed are merged into the next snapshot (the final one is always delivered).
    Stopping: closing this generator (Gradio does on Stop, on a closed tab and at the end of
    every event) sets the flag the engine polls between two steps; a consumer that stops
    asking for idle_timeout_s also stops the worker.
    min_interval_s: after a snapshot, wait this long before taking the next one (the steps
    decoded meanwhile arrive merged). Every message costs the server and the browser CPU time
    that a 2-core machine takes from the decode itself; ~10 messages a second still read as a
    live stream. Only decode steps are held back: the first snapshot, the end of decoding and
    the later phases go out as soon as they exist."""
    updates: queue.Queue = queue.Queue()
    stop = threading.Event()
    polled = [time.monotonic()]

    def should_stop() -> bool:
        return stop.is_set() or time.monotonic() - polled[0] > idle_timeout_s

    def work():
        try:
            for session in make_stream(should_stop):
                updates.put(session.snapshot())
        except BaseException as error:  # handed to the consumer, raised there
            updates.put(error)
        finally:
            updates.put(_DONE)

    threading.Thread(target=work, name="kv-generate", daemon=True).start()

    hold_until = None  # monotonic time before which a decode step is held back
    try:
        while True:
            items = [updates.get()]
            while hold_until is not None and isinstance(items[-1], Session) and items[-1].streaming:
                try:
                    items.append(updates.get(timeout=max(0.0, hold_until - time.monotonic())))
                except queue.Empty:
                    break
            while True:
                try:
                    items.append(updates.get_nowait())
                except queue.Empty:
                    break
            polled[0] = time.monotonic()
            for item in items:
                if isinstance(item, BaseException):
                    raise item
            sessions = [item for item in items if isinstance(item, Session)]
            if sessions:
                yield sessions[-1]
                hold_until = time.monotonic() + min_interval_s if min_interval_s > 0 else None
            if items[-1] is _DONE:
                return
    finally:
        stop.set()


def logit_differences(model, ids: Sequence[int], n_prompt: int, cached_logits: Sequence,
                      options=None) -> list[float]:
    """C4: per generated token, max |cached logits - logits of one full forward without cache|.
    Row p of the full forward predicts token p + 1; step k's token sits at n_prompt + k."""
    import torch

    from models.generate import full_forward_logits

    n = len(cached_logits)
    full = full_forward_logits(model, list(ids)[:n_prompt + n - 1], options)  # (T, V)
    rows = full[n_prompt - 1:n_prompt - 1 + n]
    cached = torch.stack([c.float() for c in cached_logits])
    return (cached - rows).abs().amax(dim=-1).tolist()


def replay_targets(records: Sequence[StepRecord], max_points: int = REPLAY_MAX_POINTS) -> list:
    """The decode steps to replay without cache: evenly spread, first and last included."""
    decode = [r for r in records if r.phase == "decode"]
    if len(decode) <= max_points:
        return decode
    picks = sorted({round(i * (len(decode) - 1) / (max_points - 1)) for i in range(max_points)})
    return [decode[i] for i in picks]


def replay_without_cache(model, ids: Sequence[int], records: Sequence[StepRecord], options,
                         budget_end: float, greedy: bool = True) -> Iterator[ReplayPoint]:
    """C1 baseline, teacher-forced: for a cached decode step at context t, one forward over the
    same t tokens without a cache (what generate(use_cache=False) does at that step), timed."""
    import torch

    opts = dataclasses.replace(options, last_logits_only=True)
    device = model.embed.weight.device
    for record in replay_targets(records):
        if time.perf_counter() > budget_end:
            return
        t = record.context
        x = torch.tensor([list(ids)[:t]], dtype=torch.long, device=device)
        with torch.inference_mode():
            t0 = time.perf_counter()
            logits, ctx = model(x, options=opts, return_context=True)
            token = int(torch.argmax(logits[0, -1]))
            latency = time.perf_counter() - t0
        yield ReplayPoint(context=t, latency_s=latency, score_entries=ctx.score_entries,
                          same_token=(token == record.token_id) if greedy else True)


# ----- figures ------------------------------------------------------------------------------
def _figure() -> Fig:
    return Fig()


def _layout(fig: Fig, title: str, height: int = 360) -> go.Figure:
    return fig.finish(title, height)


def _integer_axis(fig: Fig, values: Sequence[int]) -> None:
    fig.integer_axis(values)


def empty_figure(title: str = "", lang: str = "en", height: int = 360,
                 message: str = "generate.fig.empty") -> go.Figure:
    return plotting.empty_figure(label(message, lang), title, height)


def _kib(value: float) -> float:
    return value / 1024.0


def layer_bytes_figure(session: Session, lang: str = "en") -> go.Figure:
    """C3/C9: bars = bytes of each layer's cache tensors at the latest step, coloured by the
    layer's cache kind; a tick per layer = the formula for the tokens that layer holds."""
    if not session.records:
        return empty_figure(label("generate.fig.bars_title", lang, t=0), lang)
    record = session.records[-1]
    formula = formula_layer_bytes(session.config, session.layouts, record.context,
                                  session.element_bytes)
    fig = _figure()
    kinds = []
    for lay in session.layouts:
        if lay.describe(lang) not in kinds:
            kinds.append(lay.describe(lang))
    for name in kinds:
        members = [lay for lay in session.layouts if lay.describe(lang) == name]
        idx = [lay.layer for lay in members]
        fig.add_bar(
            x=idx, y=[_kib(record.cache_bytes[i]) for i in idx],
            name=label("generate.fig.layers_of_kind", lang, n=len(idx), kind=name),
            marker_color=KIND_COLOURS[members[0].kind],
            customdata=[[name, record.cache_lengths[i], record.cache_bytes[i], formula[i]] for i in idx],
            hovertemplate=(f"{label('generate.fig.layer', lang)} %{{x}} (%{{customdata[0]}})<br>"
                           f"{label('generate.fig.tokens_held', lang)}: %{{customdata[1]}}<br>"
                           f"{label('generate.fig.measured', lang)}: %{{customdata[2]:,}} B<br>"
                           f"{label('generate.fig.formula', lang)}: %{{customdata[3]:,}} B"
                           "<extra></extra>"))
    fig.add_scatter(x=list(range(len(formula))), y=[_kib(b) for b in formula], mode="markers",
                    name=label("generate.fig.formula", lang),
                    marker=dict(symbol="line-ew-open", size=16, color="#000", line=dict(width=3, color="#000")),
                    hoverinfo="skip")
    fig.update_xaxes(title_text=label("generate.fig.layer", lang), dtick=1 if len(formula) <= 20 else 2)
    fig.update_yaxes(title_text=label("generate.fig.kib", lang), rangemode="tozero")
    fig.update_layout(bargap=0.15)
    return _layout(fig, label("generate.fig.bars_title", lang, t=record.context))


def growth_figure(session: Session, lang: str = "en") -> go.Figure:
    """C3/C9: measured bytes summed per kind of layer against tokens in context (solid, one
    point per step), the formula for those layers from t = 0 (dotted: windowed layers bend flat
    at their capacity), and the uncapped 2·L·H_kv·d·t·b for all layers (dashed)."""
    title = label("generate.fig.growth_title", lang)
    if not session.records:
        return empty_figure(title, lang)
    t = [r.context for r in session.records]
    t_end = t[-1]
    pieces = [r.piece for r in session.records]
    fig = _figure()
    kinds = []
    for lay in session.layouts:
        if lay.describe(lang) not in kinds:
            kinds.append(lay.describe(lang))
    for n, name in enumerate(kinds):
        members = [lay for lay in session.layouts if lay.describe(lang) == name]
        idx = [lay.layer for lay in members]
        colour = KIND_COLOURS[members[0].kind]
        caps = sorted({lay.capacity for lay in members if lay.capacity is not None and lay.capacity < t_end})
        knots = [0] + caps + [t_end]
        formula = [sum(formula_layer_bytes(session.config, members, x, session.element_bytes))
                   for x in knots]
        fig.add_scatter(x=knots, y=[_kib(b) for b in formula], mode="lines",
                        line=dict(color=colour, dash="dot", width=2),
                        name=label("generate.fig.formula", lang), legendgroup="formula",
                        showlegend=n == 0,
                        hovertemplate=f"t = %{{x}}<br>%{{y:,.1f}} KiB<extra>{label('generate.fig.formula', lang)}: {name}</extra>")
        fig.add_scatter(
            x=t, y=[_kib(sum(r.cache_bytes[i] for i in idx)) for r in session.records],
            mode="lines+markers", line=dict(width=2.5, color=colour), marker=dict(size=5),
            name=label("generate.fig.layers_of_kind", lang, n=len(idx), kind=name),
            customdata=[[p, r.index] for p, r in zip(pieces, session.records)],
            hovertemplate=(f"t = %{{x}}<br>{label('generate.fig.step', lang)} %{{customdata[1]}}: "
                           f"%{{customdata[0]}}<br>%{{y:,.1f}} KiB<extra>{name}</extra>"))
    per_token = formula_bytes_per_token(session.config.n_layers, session.config.n_kv_heads,
                                        session.config.head_dim, session.element_bytes)
    fig.add_scatter(x=[0, t_end], y=[0, _kib(per_token * t_end)], mode="lines",
                    line=dict(color="#000", dash="dash", width=1.5),
                    name=label("generate.fig.formula_full", lang),
                    hovertemplate="t = %{x}<br>%{y:,.1f} KiB<extra></extra>")
    fig.update_xaxes(title_text=label("generate.fig.tokens_in_cache", lang), rangemode="tozero")
    fig.update_yaxes(title_text=label("generate.fig.kib", lang), rangemode="tozero")
    return _layout(fig, title)


def latency_figure(session: Session, lang: str = "en") -> go.Figure:
    """C1: per decode step, wall time (top) and counted scores (bottom), with the cache (the
    live run) and without (teacher-forced replay at the same t)."""
    title = label("generate.fig.latency_title", lang)
    decode = [r for r in session.records if r.phase == "decode"]
    if not decode:
        return empty_figure(title, lang, height=440)
    fig = _figure()
    with_cache, without = label("generate.fig.with_cache", lang), label("generate.fig.without_cache", lang)
    t = [r.context for r in decode]
    custom = [[r.piece] for r in decode]
    top, bottom = dict(xaxis="x", yaxis="y"), dict(xaxis="x2", yaxis="y2")
    fig.add_scatter(x=t, y=[r.latency_s * 1e3 for r in decode], mode="lines+markers", **top,
                    name=with_cache, legendgroup="c", line=dict(color=CACHED_COLOUR),
                    marker=dict(size=4), customdata=custom,
                    hovertemplate="t = %{x} (%{customdata[0]})<br>%{y:.1f} ms<extra>" + with_cache + "</extra>")
    fig.add_scatter(x=t, y=[r.score_entries for r in decode], mode="lines+markers", **bottom,
                    name=with_cache, legendgroup="c", showlegend=False, line=dict(color=CACHED_COLOUR),
                    marker=dict(size=4), customdata=custom,
                    hovertemplate="t = %{x} (%{customdata[0]})<br>%{y:,}<extra>" + with_cache + "</extra>")
    if session.replay:
        rt = [p.context for p in session.replay]
        style = dict(line=dict(color=UNCACHED_COLOUR, dash="dot"), marker=dict(size=6, symbol="square"))
        fig.add_scatter(x=rt, y=[p.latency_s * 1e3 for p in session.replay], mode="lines+markers",
                        **top, name=without, legendgroup="u", **style,
                        hovertemplate="t = %{x}<br>%{y:.1f} ms<extra>" + without + "</extra>")
        fig.add_scatter(x=rt, y=[p.score_entries for p in session.replay], mode="lines+markers",
                        **bottom, name=without, legendgroup="u", showlegend=False, **style,
                        hovertemplate="t = %{x}<br>%{y:,}<extra>" + without + "</extra>")
    dtick = dict(dtick=1) if max(t) - min(t) <= 8 else {}
    fig.update_layout(
        xaxis=dict(anchor="y", matches="x2", showticklabels=False, **dtick),
        xaxis2=dict(anchor="y2", title=dict(text=label("generate.fig.tokens_in_cache", lang)), **dtick),
        yaxis=dict(domain=[0.54, 1.0], rangemode="tozero",
                   title=dict(text=label("generate.fig.latency", lang))),
        yaxis2=dict(domain=[0.0, 0.46], rangemode="tozero",
                    title=dict(text=label("generate.fig.scores", lang))))
    return _layout(fig, title, height=440)


def logit_diff_figure(session: Session, lang: str = "en") -> go.Figure:
    """C4: max |Δ logit| of every generated token, cached path vs one full forward."""
    title = label("generate.fig.diff_title", lang)
    if not session.logit_diffs:
        message = "generate.fig.empty"
        if session.records:
            message = "generate.fig.c4_pending" if session.request.check_full_forward else "generate.fig.c4_off"
        return empty_figure(title, lang, message=message)
    positions = [r.position for r in session.records[:len(session.logit_diffs)]]
    fig = _figure()
    # An exact 0 has no place on a log axis: drawn at the floor, the hover shows the real value.
    fig.add_scatter(x=positions, y=[max(d, C4_PLOT_FLOOR) for d in session.logit_diffs],
                    mode="markers+lines",
                    line=dict(color=CACHED_COLOUR, width=1), marker=dict(size=6),
                    name=label("generate.fig.diff", lang),
                    customdata=[[r.piece, d] for r, d in zip(session.records, session.logit_diffs)],
                    hovertemplate=(f"{label('generate.fig.position', lang)} %{{x}}: %{{customdata[0]}}"
                                   "<br>%{customdata[1]:.2e}<extra></extra>"))
    fig.add_scatter(x=[min(positions), max(positions)], y=[C4_TOLERANCE, C4_TOLERANCE], mode="lines",
                    line=dict(color=UNCACHED_COLOUR, dash="dash"),
                    name=label("generate.fig.tolerance", lang, tol=C4_TOLERANCE), hoverinfo="skip")
    fig.update_xaxes(title_text=label("generate.fig.position", lang))
    _integer_axis(fig, positions)
    top = max(-3.0, math.ceil(math.log10(max(max(session.logit_diffs), C4_PLOT_FLOOR))))
    fig.update_yaxes(title_text=label("generate.fig.diff", lang), type="log", dtick=1,
                     range=[math.log10(C4_PLOT_FLOOR), top],
                     exponentformat="power")
    return _layout(fig, title)


def mask_rows(session: Session, n_queries: int = 8) -> list[dict]:
    """C4's non-square mask: for the last `n_queries` tokens fed, the (T, S) visibility over
    absolute key positions 0..t-1, computed by the engine's own MaskSpec predicate, once per
    kind of layer. Row i is query position cache.pos + i with cache.pos = t - T: what a chunk of
    T tokens sees, and, one row at a time, what each decode step computed."""
    import torch

    from models.attention import MaskSpec

    if not session.records:
        return []
    t_end = session.records[-1].context
    n = min(n_queries, t_end)
    q_pos = torch.arange(t_end - n, t_end)
    kv_pos = torch.arange(t_end)
    rows, seen = [], set()
    for lay in session.layouts:  # one block per distinct mask (Gemma: local and global)
        if (lay.window, lay.sinks) in seen:
            continue
        seen.add((lay.window, lay.sinks))
        visible = MaskSpec(window=lay.window, sinks=lay.sinks).visible(q_pos, kv_pos)  # (T, S)
        rows.append({"kind": lay.describe(), "layer": lay.layer, "cache_pos": t_end - n,
                     "q_pos": q_pos.tolist(), "visible": visible.tolist()})
    return rows


def mask_figure(session: Session, lang: str = "en", n_queries: int = 8) -> go.Figure:
    title = label("generate.fig.mask_title", lang)
    rows = mask_rows(session, n_queries)
    if not rows:
        return empty_figure(title, lang)
    fig = _figure()
    y_labels, z = [], []
    for block in rows:
        kind = session.layouts[block["layer"]].describe(lang)
        for q, line in zip(block["q_pos"], block["visible"]):
            y_labels.append(f"{kind} · q {q}")
            z.append([1 if v else 0 for v in line])
    s = len(z[0])
    fig.data.append(dict(
        type="heatmap", z=z, x=list(range(s)), y=y_labels, zmin=0, zmax=1, showscale=False,
        colorscale=[[0.0, "#f3f1ea"], [0.5, "#f3f1ea"], [0.5, "#00204c"], [1.0, "#00204c"]],
        xgap=1 if s <= 128 else 0, ygap=1,
        hovertemplate=(f"{label('generate.fig.query', lang)} %{{y}}<br>"
                       f"{label('generate.fig.key', lang)} %{{x}}<br>%{{z}} = "
                       f"{label('generate.fig.visible', lang)}<extra></extra>")))
    t_rows = rows[0]
    fig.update_xaxes(title_text=label("generate.fig.key_axis", lang, s=s, pos=t_rows["cache_pos"]))
    fig.update_yaxes(autorange="reversed", title_text=label("generate.fig.query_axis", lang,
                                                            t=len(t_rows["q_pos"])))
    return _layout(fig, title, height=max(260, 120 + 18 * len(z)))


# ----- the calculator of published shapes (C3, C5, C6, C9) -----------------------------------
@dataclass(frozen=True)
class CacheShape:
    name: str
    n_layers: int
    n_heads: int
    n_kv_heads: float          # per-head K/V heads; MLA rows carry the GQA-equivalent count
    head_dim: int
    window: Optional[int] = None       # sliding window of the local layers
    n_global: Optional[int] = None     # layers with a full cache when some are local
    latent: Optional[int] = None       # MLA: cached elements per token per layer (latent + rope key)
    source: str = ""

    def elements_per_token_layer(self) -> float:
        """Cached elements per token per layer: 2·H_kv·d_head, or the MLA latent."""
        return float(self.latent) if self.latent is not None else 2 * self.n_kv_heads * self.head_dim

    def attention(self) -> str:
        if self.latent is not None:
            return "MLA"
        if self.n_kv_heads == self.n_heads:
            return "MHA"
        return "MQA" if self.n_kv_heads == 1 else "GQA"

    def layers_capped(self) -> int:
        if self.window is None:
            return 0
        return self.n_layers - (self.n_global or 0)

    def bytes_per_token(self, element_bytes: int) -> float:
        """While t ≤ window every layer grows by this much per token."""
        return self.n_layers * self.elements_per_token_layer() * element_bytes

    def bytes_at(self, tokens: int, element_bytes: int) -> float:
        """Whole cache at `tokens`: windowed layers hold min(t, window)."""
        per_layer = self.elements_per_token_layer() * element_bytes
        capped = self.layers_capped()
        held = min(tokens, self.window) if self.window is not None else tokens
        return per_layer * (capped * held + (self.n_layers - capped) * tokens)


# Published configurations (config.json of each release; DeepSeek-V3: kv_lora_rank 512 +
# qk_rope_head_dim 64, d_head 128, so 576 = 4.5·d_head elements, ≈ GQA with 2.25 KV heads).
SHAPES = (
    CacheShape("Llama-2-7B", 32, 32, 32, 128, source="meta-llama/Llama-2-7b-hf"),
    CacheShape("Llama 3 8B", 32, 32, 8, 128, source="meta-llama/Meta-Llama-3-8B"),
    CacheShape("Mistral 7B", 32, 32, 8, 128, window=4096, n_global=0,
               source="mistralai/Mistral-7B-v0.1 (sliding_window 4096)"),
    CacheShape("Gemma 3 27B", 62, 32, 16, 128, window=1024, n_global=10,
               source="google/gemma-3-27b (52 local : 10 global, window 1024)"),
    CacheShape("Gemma 3 270M", 18, 4, 1, 256, window=512, n_global=3,
               source="google/gemma-3-270m (15 local : 3 global, window 512)"),
    CacheShape("DeepSeek-V3", 61, 128, 2.25, 128, latent=512 + 64,
               source="deepseek-ai/DeepSeek-V3 (MLA: latent 512 + RoPE key 64)"),
)

MIB, GIB = 2**20, 2**30


def shape_from_config(name: str, config) -> CacheShape:
    """The loaded model as a calculator row (its real layer types and window)."""
    from models.config import FULL

    n_global = sum(1 for kind in config.layer_types if kind == FULL)
    window = config.sliding_window if n_global < config.n_layers else None
    return CacheShape(name, config.n_layers, config.n_heads, config.n_kv_heads, config.head_dim,
                      window=window, n_global=n_global if window else None, source="loaded model")


def format_bytes(value: float) -> str:
    """Binary units: KiB, MiB, GiB (the published '0.5 MB/token, 16 GB' figures are these)."""
    for unit, size in (("GiB", GIB), ("MiB", MIB), ("KiB", 1024)):
        if value >= size:
            return f"{value / size:,.2f} {unit}"
    return f"{value:,.0f} B"


def calculator_rows(tokens: int, element_bytes: int = 2, loaded: Optional[CacheShape] = None) -> list[dict]:
    """One row per shape: per-token bytes, bytes at `tokens`, equivalent KV heads."""
    rows = []
    for shape in SHAPES + ((loaded,) if loaded is not None else ()):
        per_token = shape.bytes_per_token(element_bytes)
        total = shape.bytes_at(tokens, element_bytes)
        if shape.window is not None:
            layers = f"{shape.n_layers} ({shape.layers_capped()} capped at {shape.window})"
        else:
            layers = str(shape.n_layers)
        rows.append({
            "model": shape.name,
            "attention": shape.attention(),
            "layers": layers,
            "q heads : kv heads": f"{shape.n_heads} : {shape.n_kv_heads:g}",
            "d_head": shape.head_dim,
            "elements / token / layer": f"{shape.elements_per_token_layer():g}",
            "per token": f"{per_token / MIB:.3f} MiB",
            f"at {tokens:,} tokens": format_bytes(total),
            "per_token_bytes": per_token,
            "total_bytes": total,
            "source": shape.source,
        })
    return rows


def head_variants(base: CacheShape, tokens: int, element_bytes: int = 2) -> list[dict]:
    """C5: MHA, GQA and MQA of one shape: only the KV heads change, and the cache with them."""
    rows = []
    for kind, kv in (("MHA", base.n_heads), ("GQA", base.n_kv_heads), ("MQA", 1)):
        shape = dataclasses.replace(base, n_kv_heads=kv, latent=None)
        rows.append({"variant": kind, "q heads": base.n_heads, "kv heads": f"{kv:g}",
                     "per token": f"{shape.bytes_per_token(element_bytes) / MIB:.3f} MiB",
                     f"at {tokens:,} tokens": format_bytes(shape.bytes_at(tokens, element_bytes)),
                     "total_bytes": shape.bytes_at(tokens, element_bytes)})
    return rows


# ----- decode roofline (C2) -----------------------------------------------------------------
# This machine, measured on an idle machine (docs/DESIGN.md): 512 MB fp32 GEMV, sgemm.
DESIGN_BANDWIDTH = 30e9         # bytes/s
DESIGN_PEAK_FLOPS = 146e9       # FLOP/s


def decode_step_cost(config, n_params: int, element_bytes: int, context: int, batch: int) -> tuple[float, float]:
    """(bytes read, FLOPs) of one decode step for `batch` sequences at `context` tokens:
    weights are read once for the whole batch, each sequence reads its own cache;
    2 FLOPs per weight per token, plus q·k and p·v over the cache (4·H·d·t per layer)."""
    weight_bytes = n_params * element_bytes
    cache_bytes = formula_bytes_per_token(config.n_layers, config.n_kv_heads, config.head_dim,
                                          element_bytes) * context
    flops = batch * (2.0 * n_params + 4.0 * config.n_layers * config.n_heads * config.head_dim * context)
    return weight_bytes + batch * cache_bytes, flops


def roofline_figure(config, n_params: int, element_bytes: int, context: int,
                    batches: Sequence[int] = (1, 2, 4, 8, 16, 32, 64),
                    bandwidth: float = DESIGN_BANDWIDTH, peak: float = DESIGN_PEAK_FLOPS,
                    lang: str = "en") -> go.Figure:
    points = [decode_step_cost(config, n_params, element_bytes, context, b) for b in batches]
    intensity = [f / by for by, f in points]
    ridge = peak / bandwidth
    xs = [min(intensity + [ridge]) / 2, ridge, max(intensity + [ridge]) * 4]
    fig = _figure()
    fig.add_scatter(x=xs, y=[min(peak, x * bandwidth) / 1e9 for x in xs], mode="lines",
                    line=dict(color="#000", width=2), name=label("generate.fig.roof", lang),
                    hovertemplate="%{x:.2f} FLOP/B → %{y:.0f} GFLOP/s<extra></extra>")
    fig.add_scatter(x=intensity, y=[min(peak, x * bandwidth) / 1e9 for x in intensity],
                    mode="markers+text", textposition="top left",
                    text=[f"B={b}" if i % 3 == 0 or i == len(batches) - 1 else "" for i, b in enumerate(batches)],
                    marker=dict(size=10, color=list(range(len(batches))), colorscale="Viridis"),
                    name=label("generate.fig.batch", lang, b="1…64"),
                    customdata=[[b, by / 1e6, f / 1e9] for b, (by, f) in zip(batches, points)],
                    hovertemplate=("B = %{customdata[0]}: %{customdata[1]:,.1f} MB read, "
                                   "%{customdata[2]:,.2f} GFLOP<br>%{x:.2f} FLOP/B → %{y:.1f} GFLOP/s"
                                   "<extra></extra>"))
    fig.update_xaxes(type="log", dtick="D2", title_text=label("generate.fig.intensity", lang))
    lowest = min(min(peak, x * bandwidth) for x in xs) / 1e9
    fig.update_yaxes(type="log", dtick="D2", title_text=label("generate.fig.gflops", lang),
                     range=[math.log10(lowest) - 0.1, math.log10(peak / 1e9) + 0.35])  # room for labels
    return _layout(fig, label("generate.fig.roofline_title", lang, t=context))
