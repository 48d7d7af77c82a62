"""Where each claim's evidence function lives, resolved lazily by import.

One entry per claim of docs/CLAIMS.md, in its order: the evidence function as "module:function"
(the topic package that computes it), the locale key of the claim's short statement (the About
tab shows the same text), and the tabs that show it (ids of explorer/ui/tabs/<tab>.py; the first is
where the board links before the function has told it the exact section).

The app's own registry fails loudly: `check()`, run when the app is built, raises
ClaimNotFound naming every claim whose module or function cannot be found, so the app never
starts with a claim it cannot show. `resolve` itself answers None for such an entry (a
registry other than the app's, such as a test's, may name a function not written: the board
shows that row as "not available", never as a pass). A module that exists but fails to import
is an error, raised to the board (which shows the row as failing and logs why).
"""
from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Callable
from dataclasses import dataclass

from explorer.claims.evidence import CLAIM_IDS


@dataclass(frozen=True)
class ClaimEntry:
    claim: str                  # "C1" ... "C22"
    target: str                 # "explorer.generate.evidence:evidence_c1"
    places: tuple[str, ...]     # tab ids that show the claim, the main one first

    @property
    def statement(self) -> str:
        """Locale key of the claim's one-line statement (shared with the About tab)."""
        return f"about.c.{self.claim}"

    @property
    def module(self) -> str:
        return self.target.split(":", 1)[0]

    @property
    def function(self) -> str:
        return self.target.split(":", 1)[1]


def _entry(claim: str, module: str, *places: str) -> ClaimEntry:
    return ClaimEntry(claim, f"{module}:evidence_{claim.lower()}", places)


GENERATE = "explorer.generate.evidence"
ATTENTION = "explorer.attention.evidence"
ROPE = "explorer.rope.evidence"
ARCHITECTURE = "explorer.architecture.evidence"
MOE = "explorer.moe.evidence"
FLASH = "explorer.flash.evidence"
NEXT = "explorer.nexttoken.evidence"

CLAIMS: tuple[ClaimEntry, ...] = (
    _entry("C1", GENERATE, "generate"),
    _entry("C2", "explorer.generate.roofline", "generate"),
    _entry("C3", GENERATE, "generate"),
    _entry("C4", GENERATE, "generate"),
    _entry("C5", ATTENTION, "attention", "generate"),
    _entry("C6", ARCHITECTURE, "architecture", "generate"),
    _entry("C7", ARCHITECTURE, "architecture"),
    _entry("C8", ATTENTION, "attention"),
    _entry("C9", GENERATE, "generate", "attention"),
    _entry("C10", ATTENTION, "attention"),
    _entry("C11", ROPE, "rope"),
    _entry("C12", ROPE, "rope"),
    _entry("C13", ROPE, "rope"),
    _entry("C14", MOE, "moe"),
    _entry("C15", MOE, "moe"),
    _entry("C16", FLASH, "flash"),
    _entry("C17", FLASH, "flash"),
    _entry("C18", ARCHITECTURE, "architecture"),
    _entry("C19", ARCHITECTURE, "architecture"),
    _entry("C20", "explorer.generate.batch_evidence", "generate"),
    _entry("C21", NEXT, "next_token"),
    _entry("C22", NEXT, "next_token"),
)
assert tuple(entry.claim for entry in CLAIMS) == CLAIM_IDS, "one entry per claim, in order"

EvidenceFunction = Callable[..., object]


def resolve(entry: ClaimEntry) -> EvidenceFunction | None:
    """The evidence function of `entry`, or None when its module or function does not exist
    yet. Any other import failure (a syntax error, a missing dependency inside the module)
    propagates: a broken evidence module must show as failing, not as not written."""
    try:
        spec = importlib.util.find_spec(entry.module)
    except ModuleNotFoundError:  # a parent package is missing
        return None
    if spec is None:
        return None
    module = importlib.import_module(entry.module)
    function = getattr(module, entry.function, None)
    return function if callable(function) else None


class ClaimNotFound(LookupError):
    """An entry of the app's claims registry whose evidence module or function does not exist."""


def check(registry: tuple[ClaimEntry, ...] = CLAIMS) -> None:
    """Import every entry's evidence function; raise ClaimNotFound naming those not found (an
    error inside a module propagates as it is)."""
    missing = [f"{entry.claim} ({entry.target})" for entry in registry if resolve(entry) is None]
    if missing:
        raise ClaimNotFound("claims without an evidence function (explorer/claims/registry.py): "
                            + ", ".join(missing))
