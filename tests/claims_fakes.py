"""Fake evidence functions and a fake registry for the claims board's tests (no tests here).

FAST_REGISTRY is a board of 22 claims that answers in well under a second with every kind of
row: passing, failing, raising, returning the wrong thing, and not written. The tab serves it
when EXPLORER_CLAIMS_REGISTRY="tests.claims_fakes:FAST_REGISTRY" (the browser and API
tests), so they do not depend on the real evidence functions or their run time.
"""
from __future__ import annotations

import threading

from explorer.claims.evidence import CLAIM_IDS, Evidence, Measure
from explorer.claims.registry import ClaimEntry

HERE = "tests.claims_fakes"
RELEASE = threading.Event()       # a slow function waits for this (or its own timeout)


def _evidence(claim: str, passed: bool, loaded, tab: str = "rope",
              section: str = "section-rope-qk-title") -> Evidence:
    # the value is read from the loaded model, so the test sees the function ran on it
    return Evidence(claim=claim, passed=passed,
                    measures=(Measure("claims.col.seconds", float(loaded.config.n_layers), "", 3),
                              Measure("claims.col.seconds", 3.14159e-6, "s", 2)),
                    criterion="claims.err.timeout", fields={"limit": 1e-3}, tab=tab,
                    section=section, model=loaded.name)


def passing(loaded):
    return _evidence("C11", True, loaded)


def failing(loaded):
    return _evidence("C12", False, loaded, section="section-rope-pair-title")


def raising(loaded):
    raise RuntimeError("/secret/path/evidence.py exploded")


def wrong_claim(loaded):
    return _evidence("C1", True, loaded)   # the Evidence of another claim


def not_evidence(loaded):
    return {"passed": True}


def slow(loaded):
    RELEASE.wait(5.0)
    return _evidence("C13", True, loaded)


def any_claim(claim: str):
    """A passing evidence function for `claim` (the rest of the fast board)."""
    def evidence(loaded):
        return _evidence(claim, True, loaded, tab="generate", section="section-generate-section-calculator")
    return evidence


for _claim in CLAIM_IDS:
    globals()[f"evidence_{_claim.lower()}"] = any_claim(_claim)


def entry(claim: str, function: str, *places: str) -> ClaimEntry:
    return ClaimEntry(claim, f"{HERE}:{function}", places or ("rope",))


# C11 passes, C12 fails, C13 raises, C14 is not written, C15 returns a dict, C16 another
# claim's Evidence; the rest pass.
FAST_REGISTRY: tuple[ClaimEntry, ...] = tuple(
    entry(claim, {"C11": "passing", "C12": "failing", "C13": "raising", "C14": "not_written",
                  "C15": "not_evidence", "C16": "wrong_claim"}.get(claim, f"evidence_{claim.lower()}"),
          "moe" if claim == "C14" else "rope")
    for claim in CLAIM_IDS)


def sleepy(loaded):
    """A passing evidence function that takes a visible moment (the progress bar's test)."""
    import time
    time.sleep(0.4)
    return _evidence("C11", True, loaded)


# 22 claims of 0.4 s each: a board that is seen running for ~9 s
SLOW_REGISTRY: tuple[ClaimEntry, ...] = tuple(entry("C11", "sleepy") for _ in CLAIM_IDS)
