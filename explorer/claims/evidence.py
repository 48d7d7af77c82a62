"""One claim's live evidence: the numbers measured on the loaded model and the verdict that the
claim's criterion gives on them. The claims board (explorer/claims/board.py) shows one row per
claim of docs/CLAIMS.md, each computed by the same function the claim's tab uses.

An evidence function lives in the topic package that computes it (explorer/<topic>/evidence.py,
or the experiment module itself) and has the shape

    def evidence_c11(loaded: LoadedModel) -> Evidence

It runs the tab's own experiment (`run(...)`) with small fixed inputs, then applies the claim's
criterion to the result through a function the tab's summary uses too (so the sentence a tab
shows and the board's verdict cannot disagree). It never catches its own failures: the board
turns an exception into a failing row, and a broken computation must not read as a pass.

The criterion is a pure function of the result, e.g. `toeplitz_holds(result) -> bool`, so a test
can hand it a deliberately broken result (a cache that dropped a token, RoPE applied to one
side) and see it fail.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

CLAIM_IDS: tuple[str, ...] = tuple(f"C{i}" for i in range(1, 23))


@dataclass(frozen=True)
class Measure:
    """One measured number. `label` is a locale key naming the quantity (the board shows it in
    the visitor's language); `unit` is a symbol that reads the same in every language
    ("B", "s", "ms", "×", "%", "tok/s", or "")."""
    label: str
    value: float
    unit: str = ""
    digits: int = 3            # significant digits shown


@dataclass(frozen=True)
class Consistency:
    """A bookkeeping check shown beside the evidence, apart from it: a quantity fixed by
    construction (top-k returns k distinct experts; a model has one parameter count whatever k;
    a schedule's own count; a published formula) that must agree with itself. On a sound run it
    cannot fail, so the claim's verdict does not rest on it; when it does fail, the computation
    is broken and the board's row fails with it. `label` is a locale key."""
    label: str
    holds: bool
    measures: tuple[Measure, ...] = ()

    def __post_init__(self) -> None:
        if not isinstance(self.holds, bool):
            raise TypeError("Consistency.holds must be a bool")


@dataclass(frozen=True)
class Evidence:
    claim: str                         # "C1" ... "C20"
    passed: bool                       # the claim's criterion applied to `measures`
    measures: tuple[Measure, ...]      # the numbers the verdict was read from
    criterion: str                     # locale key stating the criterion, e.g. "claims.C11.criterion"
    tab: str                           # id of the tab that shows it ("generate", "rope", ...)
    section: str                       # elem_id of that tab's section ("section-rope-toeplitz")
    fields: dict[str, Any] = field(default_factory=dict)  # fields of the criterion's text
    model: str = ""                    # registry name it ran on; "" for a model-independent claim
    consistency: tuple[Consistency, ...] = ()  # bookkeeping beside the evidence (see Consistency)

    @property
    def consistent(self) -> bool:
        return all(check.holds for check in self.consistency)

    def __post_init__(self) -> None:
        if self.claim not in CLAIM_IDS:
            raise ValueError(f"unknown claim id {self.claim!r}")
        if not isinstance(self.passed, bool):
            # numpy / torch booleans would pass `if`, but a verdict must be a plain decision
            raise TypeError("Evidence.passed must be a bool")
