"""The claims board's evidence for the Generate & KV-cache tab (C1, C3, C4, C9): each function
runs the tab's own run (session.stream_generation, the checks of explorer/generate/checks.py)
on a short generation of the loaded model and reads the verdict through the criterion the tab's
summary uses (explorer/claims/evidence.py describes the shape).

    evidence_c1(loaded)  a short greedy run, then the tab's no-cache replay at a few t: computed
                         scores grow like t^2 without a cache and t with one (fitted exponents,
                         checks.c1_verdict), and the step without a cache is slower at the
                         largest t (one engine, timed back to back)
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
from typing import Optional

from explorer.claims.evidence import Evidence, Measure
from explorer.generate import checks, shapes
from explorer.generate.request import Request, encode_prompt
from explorer.generate.session import Session, c3_verdict, c9_verdict, stream_generation
from explorer.locales import Term

TAB = "generate"
SECTION = "section-generate-section-run"
PROMPT = "Explain in one sentence why a language model caches keys and values."
C1_NEW, C1_POINTS = 32, 6          # replayed steps spread over the run (t from ~45 to ~75)
C3_NEW = 8
C4_NEW = 8
C9_WINDOW, C9_PAST = 32, 8         # a model without windows: the tab's window policy, w = 32,
                                   # generating until t is C9_PAST tokens past it at least
LONG_CHARS = 4000                  # of the shipped text: more than a 512-token window
LLAMA2 = "Llama-2-7B"
LLAMA2_TOKENS, FP16 = 32 * 1024, 2

_LOOPS: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()
_LOOPS_LOCK = threading.Lock()


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
def evidence_c1(loaded) -> Evidence:
    import time

    ids = prompt_ids(loaded)
    session = run_session(loaded, ids, max_new_tokens=C1_NEW, compare_no_cache=False,
                          check_full_forward=False)
    points = list(checks.replay_without_cache(
        loaded.model, session.prompt_ids + session.generated_ids, session.records,
        session.options, time.perf_counter() + checks.REPLAY_BUDGET_S,
        max_len=session.max_len, max_points=C1_POINTS, layer_masks=session.masks))
    verdict = checks.c1_verdict(points)
    return Evidence(
        claim="C1", passed=verdict.passed,
        measures=(Measure("claims.m.c1_exp_uncached", _num(verdict.exponent_uncached)),
                  Measure("claims.m.c1_exp_cached", _num(verdict.exponent_cached)),
                  Measure("claims.m.c1_ratio", verdict.ratio_at_max, "×", digits=2),
                  Measure("claims.m.c1_t_max", verdict.t_max)),
        criterion="claims.C1.criterion", tab=TAB, section=SECTION, model=loaded.name,
        fields={"slack": checks.C1_EXPONENT_SLACK})


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
        claim="C4", passed=checks.c4_holds(diffs),
        measures=(Measure("claims.m.c4_max_diff", max(diffs) if diffs else float("nan"), digits=2),
                  Measure("claims.m.c4_positions", len(diffs))),
        criterion="claims.C4.criterion", tab=TAB, section=SECTION, model=loaded.name,
        fields={"tol": checks.C4_TOLERANCE})


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
    return Evidence(
        claim="C9", passed=c9_holds(windowed, full),
        measures=(Measure("claims.m.c9_tokens", verdict.tokens),
                  Measure("claims.m.c9_window_held", _num(verdict.capped_held)),
                  Measure("claims.m.c9_window_slots", _num(verdict.capped_slots)),
                  Measure("claims.m.c9_full_held", _num(full_held))),
        criterion="claims.C9.criterion", tab=TAB, section=SECTION, model=loaded.name,
        fields={"cap": verdict.cap,
                "full": Term("claims.C9.full_global" if full is None else "claims.C9.full_run")})
