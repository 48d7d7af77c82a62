"""The claims board's evidence for the Generate & KV-cache tab (C1, C3, C4, C9): each function
runs the tab's own run (session.stream_generation, the checks of explorer/generate/checks.py)
on a short generation of the loaded model, or the tab's no-cache replay, and reads the verdict
through the criterion the tab's summary uses (explorer/claims/evidence.py describes the shape).

    evidence_c1(loaded)  the tab's no-cache replay (checks.replay_without_cache), teacher-
                         forced over the shipped text at C1_POINTS contexts from C1_T_MIN to
                         C1_T_MAX, C1_ROUNDS times: counted, the scores each path computes grow
                         like t^2 without a cache and t with one (fitted exponents); measured,
                         the no-cache / cached time ratio grows with t and exceeds 1 at the
                         largest t (one engine, timed back to back; checks.c1_verdict)
    evidence_c3(loaded)  a short run: used bytes == formula at every step and layer, the
                         preallocated buffers read back == formula at their slots, the read-back
                         cache == the run's own (session.c3_verdict); the calculator gives 0.5 MiB
                         per token and 16 GiB at 32K for Llama-2-7B in fp16 (shapes.py)
    evidence_c4(loaded)  a short run: max |cached − full forward| logits ≤ 1e-4 at every
                         generated position (checks.c4_holds)
    evidence_c9(loaded)  a model with sliding windows (Gemma 3): a prompt past its window, its
                         own layers: windowed layers hold exactly their window in that many
                         slots while the global layers hold everything (session.c9_verdict). A
                         model without windows (SmolLM2): the tab's window policy with a small
                         window, generating past it, against a run of the same prompt with the
                         full cache, whose layers hold all t tokens

The runs go through a decode loop of the board's own (not the visitors' shared loop), so the
checks are never declined because visitors are generating.
"""
from __future__ import annotations

import threading
import weakref
from dataclasses import dataclass
from typing import Optional, Sequence

from explorer.claims.evidence import Evidence, Measure
from explorer.generate import checks, shapes
from explorer.generate.request import Request, encode_prompt
from explorer.generate.session import Session, c3_verdict, c9_verdict, stream_generation
from explorer.locales import Term
from explorer.serving import registry as serving_registry

TAB = "generate"
SECTION = "section-generate-section-run"
PROMPT = "Explain in one sentence why a language model caches keys and values."
# C1: replayed contexts spread geometrically over t = 16 ... 128, each path best of 2 rounds of
# at most C1_ROUND_S. The span matters for the time ratio: at small t the forward without a
# cache costs about what a cached step does (both read every weight once; Gemma's 671 MB tied
# LM head dominates both), and the ratio grows once t tokens of arithmetic outweigh that read.
C1_T_MIN, C1_T_MAX, C1_POINTS, C1_ROUNDS, C1_ROUND_S = 16, 128, 6, 2, 30.0
C3_NEW = 8
C4_NEW = 8
C9_WINDOW, C9_PAST = 32, 8         # a model without windows: the tab's window policy, w = 32,
                                   # generating until t is C9_PAST tokens past it at least
LONG_CHARS = 4000                  # of the shipped text: more than a 512-token window
LLAMA2 = "Llama-2-7B"
LLAMA2_TOKENS, FP16 = 32 * 1024, 2

_LOOPS: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()
_LOOPS_LOCK = threading.Lock()


def _forget_loop(model) -> None:
    """An unloaded model's board loop goes with it (its loop holds it: the weak key alone
    would never let it go)."""
    with _LOOPS_LOCK:
        _LOOPS.pop(model, None)


serving_registry.on_forget(_forget_loop)


def _loop(model):
    """The board's decode loop for this model (one, made on first use)."""
    from explorer.serving import Scheduler

    with _LOOPS_LOCK:
        if model not in _LOOPS:
            _LOOPS[model] = Scheduler(model)
        return _LOOPS[model]


def run_session(loaded, ids, **fields) -> Session:
    """The tab's run (greedy) on `ids` for max_new_tokens (no end-of-sequence token stops it,
    so the run spans the t its criterion needs), checks included as `fields` ask."""
    request = Request(prompt=PROMPT, **fields)
    session = None
    for session in stream_generation(loaded.model, loaded.tokenizer, ids, request,
                                     model_name=loaded.name, scheduler=_loop(loaded.model),
                                     eos_ids=()):
        pass
    return session


def prompt_ids(loaded) -> list:
    return encode_prompt(loaded.tokenizer, PROMPT)[0]


def _long_ids(loaded, tokens: int) -> list:
    """`tokens` ids of the shipped long text, encoded as the tab encodes a prompt."""
    from explorer.texts import long_text

    return encode_prompt(loaded.tokenizer, long_text()[:LONG_CHARS])[0][:tokens]


# ----- C1 -----------------------------------------------------------------------------------
@dataclass(frozen=True)
class ReplayAt:
    """A decode step to replay at context t (checks.replay_without_cache reads these fields)."""
    context: int
    phase: str = "decode"
    token_id: int = -1


def c1_contexts(t_last: int, t_min: int = C1_T_MIN, n: int = C1_POINTS) -> list[int]:
    """n contexts spread geometrically from t_min to t_last (fewer when they coincide)."""
    if t_last <= t_min:
        return [t_last]
    return sorted({round(t_min * (t_last / t_min) ** (i / (n - 1))) for i in range(n)})


def evidence_c1(loaded) -> Evidence:
    import time

    from models.forward import RunOptions

    tokens = _long_ids(loaded, C1_T_MAX)
    targets = [ReplayAt(t) for t in c1_contexts(len(tokens))]
    options = RunOptions()                     # the tab's default run: the model's own layers
    rounds = [list(checks.replay_without_cache(
        loaded.model, tokens, targets, options, time.perf_counter() + C1_ROUND_S,
        greedy=False, max_len=len(tokens), max_points=len(targets))) for _ in range(C1_ROUNDS)]
    verdict = checks.c1_verdict(checks.best_of(rounds))
    return Evidence(
        claim="C1", passed=verdict.passed,
        measures=(Measure("claims.m.c1_exp_uncached", _num(verdict.exponent_uncached)),
                  Measure("claims.m.c1_exp_cached", _num(verdict.exponent_cached)),
                  Measure("claims.m.c1_ratio_min", verdict.ratio_at_min, "×", digits=2),
                  Measure("claims.m.c1_ratio", verdict.ratio_at_max, "×", digits=2),
                  Measure("claims.m.c1_ratio_exp", _num(verdict.ratio_exponent), digits=2),
                  Measure("claims.m.c1_t_min", verdict.t_min),
                  Measure("claims.m.c1_t_max", verdict.t_max)),
        criterion="claims.C1.criterion", tab=TAB, section=SECTION, model=loaded.name,
        fields={"slack": checks.C1_EXPONENT_SLACK, "min_r": checks.C1_MIN_RATIO_EXPONENT,
                "rounds": C1_ROUNDS})


def _num(value: Optional[float]) -> float:
    return float("nan") if value is None else value


# ----- C3 -----------------------------------------------------------------------------------
def llama2_figures() -> tuple[float, float]:
    """(MiB per token, GiB at 32K) of the calculator's Llama-2-7B shape in fp16."""
    llama2 = next(s for s in shapes.SHAPES if s.name == LLAMA2)
    return llama2.bytes_per_token(FP16) / shapes.MIB, llama2.bytes_at(LLAMA2_TOKENS, FP16) / shapes.GIB


def c3_holds(session: Session, per_token_mib: float, at_32k_gib: float) -> bool:
    """C3's criterion: the run's verdict (used, allocated, read back) and the calculator's two
    published figures, exactly."""
    return c3_verdict(session).passed and per_token_mib == 0.5 and at_32k_gib == 16.0


def evidence_c3(loaded) -> Evidence:
    session = run_session(loaded, prompt_ids(loaded), max_new_tokens=C3_NEW,
                          compare_no_cache=False, check_full_forward=True)
    per_token, at_32k = llama2_figures()
    last = session.records[-1]
    reading = session.cache_reading
    return Evidence(
        claim="C3", passed=c3_holds(session, per_token, at_32k),
        measures=(Measure("claims.m.c3_bytes_per_token", sum(last.cache_bytes) / last.context, "B"),
                  Measure("claims.m.c3_allocated",
                          float("nan") if reading is None else sum(reading.allocated_bytes), "B"),
                  Measure("claims.m.c3_steps", len(session.records)),
                  Measure("claims.m.c3_llama2_token", per_token, "MiB"),
                  Measure("claims.m.c3_llama2_32k", at_32k, "GiB")),
        criterion="claims.C3.criterion", tab=TAB, section=SECTION, model=loaded.name,
        fields={"per_token": 0.5, "at_32k": 16})


# ----- C4 -----------------------------------------------------------------------------------
def evidence_c4(loaded) -> Evidence:
    session = run_session(loaded, prompt_ids(loaded), max_new_tokens=C4_NEW,
                          compare_no_cache=False, check_full_forward=True)
    diffs = session.logit_diffs or []
    return Evidence(
        claim="C4", passed=checks.c4_holds(diffs, checks.c4_tolerance(session.weights)),
        measures=(Measure("claims.m.c4_max_diff", max(diffs) if diffs else float("nan"), digits=2),
                  Measure("claims.m.c4_positions", len(diffs))),
        criterion="claims.C4.criterion", tab=TAB, section=SECTION, model=loaded.name,
        fields={"tol": checks.c4_tolerance(session.weights)})


# ----- C9 -----------------------------------------------------------------------------------
def c9_holds(windowed: Session, full: Optional[Session] = None) -> bool:
    """C9's criterion: the windowed run's verdict (session.c9_verdict), and, for a model
    without windows of its own, a full-cache run of the same prompt whose layers hold every
    token past the window at every step."""
    verdict = c9_verdict(windowed)
    if not verdict.passed:
        return False
    if full is None:
        return verdict.full_layers > 0
    grown = c9_verdict(full)
    return (grown.capped_layers == 0 and grown.every_step and grown.tokens > verdict.cap
            and grown.full_held == grown.tokens)


def c9_scores_hold(counted: Sequence[checks.StepScores], heads: int,
                   capacities: Sequence[Optional[int]], cap: Optional[int] = None) -> bool:
    """C9's cost, counted per layer at each step of `counted` (past `cap`, when given): a layer
    with a window scored heads x its capacity (the same at every t), a full layer heads x t,
    and the layers add up to the engine's own count for the step."""
    return bool(counted) and all(
        (cap is None or step.context > cap) and sum(step.per_layer) == step.total
        and all(n == heads * (step.context if capacity is None else capacity)
                for n, capacity in zip(step.per_layer, capacities))
        for step in counted)


def _counted(loaded, session: Session) -> list:
    """The scores of one cached step per layer at t = window + 1 and at the run's last step."""
    cap = c9_verdict(session).cap or C9_WINDOW
    tokens = session.prompt_ids + session.generated_ids
    last = session.records[-1].context
    return checks.scores_per_layer(loaded.model, tokens, sorted({cap + 1, last}),
                                   session.options, session.max_len)


def evidence_c9(loaded) -> Evidence:
    config = loaded.config
    windows = [w for w in config.kv_layer_capacities() if w is not None]
    if windows:
        # the model's own windows: a prompt a few tokens past the smallest one
        ids = _long_ids(loaded, min(windows) + 8)
        windowed = run_session(loaded, ids, max_new_tokens=2, compare_no_cache=False,
                               check_full_forward=True)
        full = None
    else:
        ids = prompt_ids(loaded)
        n_new = max(C9_PAST, C9_WINDOW + C9_PAST - len(ids))
        windowed = run_session(loaded, ids, max_new_tokens=n_new, policy="window",
                               window=C9_WINDOW, compare_no_cache=False, check_full_forward=True)
        full = run_session(loaded, ids, max_new_tokens=n_new, compare_no_cache=False,
                           check_full_forward=True)
    verdict = c9_verdict(windowed)
    full_held = verdict.full_held if full is None else c9_verdict(full).full_held
    heads = config.n_heads
    counted = _counted(loaded, windowed)
    scores_hold = c9_scores_hold(counted, heads, [lay.capacity for lay in windowed.layouts],
                                 verdict.cap)
    if full is not None:
        counted_full = _counted(loaded, full)
        scores_hold = scores_hold and c9_scores_hold(counted_full, heads,
                                                     [lay.capacity for lay in full.layouts])
        full_scores = max(counted_full[-1].per_layer)
    else:
        full_scores = max(counted[-1].per_layer)
    capped = [i for i, lay in enumerate(windowed.layouts) if lay.capacity is not None]
    window_scores = max((counted[-1].per_layer[i] for i in capped), default=float("nan"))
    return Evidence(
        claim="C9", passed=c9_holds(windowed, full) and scores_hold,
        measures=(Measure("claims.m.c9_tokens", verdict.tokens),
                  Measure("claims.m.c9_window_held", _num(verdict.capped_held)),
                  Measure("claims.m.c9_window_slots", _num(verdict.capped_slots)),
                  Measure("claims.m.c9_full_held", _num(full_held)),
                  Measure("claims.m.c9_window_scores", window_scores),
                  Measure("claims.m.c9_full_scores", full_scores)),
        criterion="claims.C9.criterion", tab=TAB, section=SECTION, model=loaded.name,
        fields={"cap": verdict.cap, "heads": heads, "t_a": counted[0].context,
                "t_b": counted[-1].context,
                "full": Term("claims.C9.full_global" if full is None else "claims.C9.full_run")})
