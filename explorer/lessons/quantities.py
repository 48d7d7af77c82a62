"""Quantities a question can ask about: for each view a link can open, the numbers its stored
result holds that a student could predict.

A quantity is one field of a reading our lessons already make (`read(result) -> fields`, the
readers of explorer/lessons/<name>.py, which apply the claims board's criteria): its label (a
locale key, "lesson.qty.*"), its unit, the bounds a guess must lie in, and whether the value is
a formula of the run's numbers rather than a value the run measured (`computed`; a reading's own
`computed` field decides when it has one). No number is computed here a second time: a quantity
is a reader and the name of one of its fields.

A view's quantities are declared next to their readers: any module of explorer/lessons may
define `QUANTITIES` (a tuple of Quantity) and `NO_QUANTITIES` ({view: why}), collected below with
this module's own. A view with no natural number (a page of text, a table of published facts) is
listed in `NO_QUANTITIES` with the reason; tests/unit/test_quantities.py checks that every view
the tabs register is in one or the other.
"""
from __future__ import annotations

import functools
import importlib
import math
import pkgutil
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Optional

import explorer.lessons as lessons_package
from explorer.lessons import Reading, flash, gqa_mla, kv_cache, modern_block, moe, rope, sinks_streaming
from explorer.lessons import windows_depth


@dataclass(frozen=True)
class Quantity:
    key: str               # "generate.run/kib": the view, a slash, the quantity's own name
    label: str             # locale key of its name ("lesson.qty.kv_kib")
    unit: str              # a symbol ("KiB", "%") or a locale key ("lesson.qty.unit.layers")
    low: float             # a guess outside [low, high] is refused
    high: float
    read: Reading          # a lesson's reader: the section's stored result -> fields
    field: str             # the reading's field that holds the value
    computed: bool = False

    @property
    def view(self) -> str:
        return self.key.split("/", 1)[0]

    def value(self, result: Any) -> Optional[tuple[float, bool]]:
        """(value, computed) read from `result`, or None when the result holds no such reading
        (no run yet, a run of another shape, a reader that finds nothing to quote)."""
        if result is None:
            return None
        try:
            fields = self.read(result)
        except (AttributeError, TypeError, IndexError, KeyError, ValueError):
            return None
        if not isinstance(fields, Mapping) or self.field not in fields:
            return None
        raw = fields[self.field]
        if isinstance(raw, bool) or not isinstance(raw, (int, float)) or not math.isfinite(raw):
            return None
        return float(raw), bool(fields.get("computed", self.computed))


def _q(view: str, name: str, unit: str, low: float, high: float, read: Reading, field: str,
       computed: bool = False) -> Quantity:
    return Quantity(f"{view}/{name}", f"lesson.qty.{view.replace('.', '_')}.{name}", unit,
                    low, high, read, field, computed)


LAYERS = "lesson.qty.unit.layers"
TOKENS = "lesson.qty.unit.tokens"
TILES = "lesson.qty.unit.tiles"

QUANTITIES: tuple[Quantity, ...] = (
    # the KV cache: Session (explorer/generate/session.py, C3's check)
    _q("generate.run", "kib", "KiB", 0, 1e7, kv_cache.read_growth, "kib"),
    _q("generate.run", "per_token", "B", 0, 1e7, kv_cache.read_growth, "per_token"),
    _q("generate.run", "at_200", "KiB", 0, 1e7, kv_cache.read_at_200, "answer"),
    _q("generate.calculator", "gqa", "MiB", 0, 1e4, gqa_mla.read_calculator, "gqa"),
    _q("generate.calculator", "mha", "MiB", 0, 1e4, gqa_mla.read_calculator, "mha"),
    _q("generate.calculator", "llama2_gib", "GiB", 0, 1e5, gqa_mla.read_calculator, "llama2_gib"),
    _q("attention.groups", "per_token", "B", 0, 1e8, gqa_mla.read_groups, "measured"),
    _q("attention.groups", "smaller", "×", 0, 1000, gqa_mla.read_groups, "answer", computed=True),
    _q("arch.mla", "kib", "KiB", 0, 1e5, gqa_mla.read_mla, "kib"),
    _q("arch.mla", "mha_ratio", "×", 0, 1e4, gqa_mla.read_mla, "mha_ratio"),
    # attention: token 0 (C10), windows through depth (C8), local and global layers
    _q("attention.sinks", "first", "%", 0, 100, sinks_streaming.read_sinks, "answer"),
    _q("attention.map", "first", "%", 0, 100, sinks_streaming.read_map, "first"),
    _q("attention.stream", "window_ppl", "", 0, 1e9, sinks_streaming.read_stream, "window_ppl"),
    _q("attention.stream", "sinks_ppl", "", 0, 1e9, sinks_streaming.read_stream, "sinks_ppl"),
    _q("attention.rf", "first_layer", LAYERS, 1, 1000, windows_depth.read_first_token, "answer"),
    _q("attention.rf", "farthest", TOKENS, 0, 1e6, windows_depth.read_reach, "farthest"),
    _q("attention.lg", "cache_share", "%", 0, 100, windows_depth.read_local_global, "cache_share"),
    _q("attention.lg", "local_tokens", TOKENS, 0, 1e7, windows_depth.read_local_global, "local_tokens"),
    # MoE: the busiest expert's share (C15)
    _q("moe.route", "busiest", "%", 0, 100, moe.read_route, "share"),
    _q("moe.load", "busiest", "%", 0, 100, moe.read_load, "answer"),
    _q("moe.load", "aux_busiest", "%", 0, 100, moe.read_load, "aux_share"),
    _q("moe.whatif", "loss_change", "", -100, 100, moe.read_whatif, "delta"),
    # FlashAttention: tiles skipped (C11), traffic (C12)
    _q("flash.schedule", "skipped", TILES, 0, 1e6, flash.read_schedule, "answer"),
    _q("flash.schedule", "partial", TILES, 0, 1e6, flash.read_schedule, "partial"),
    _q("flash.exact", "off", "lesson.qty.unit.cases", 0, 1e4, flash.read_exact, "off"),
    _q("flash.io", "ratio", "×", 0, 1e6, flash.read_io, "ratio"),
    _q("flash.io", "naive_mb", "MB", 0, 1e9, flash.read_io, "naive_mb"),
    # RoPE: a pair's wavelength (C13), the bases' perplexity
    _q("rope.freq", "wavelength", TOKENS, 1, 1e12, rope.read_frequencies, "answer", computed=True),
    _q("rope.freq", "never", "lesson.qty.unit.pairs", 0, 1e4, rope.read_frequencies, "never"),
    _q("rope.qk", "one_side", "×", 0, 1e9, rope.read_toeplitz, "ratio"),
    _q("rope.base", "ppl", "", 0, 1e9, rope.read_sweep, "ppl0"),
    _q("rope.base", "lowest", "×", 0, 1e9, rope.read_sweep, "lowest"),
    # the block: norm placement (C19)
    _q("arch.norm", "post", "×", 0, 1e9, modern_block.read_norm, "post"),
    _q("arch.norm", "pre", "×", 0, 1e9, modern_block.read_norm, "pre"),
)

# Views whose stored result holds no number a student could usefully predict, with why; and
# views whose numbers no lesson reads yet (a question on them waits for their reader).
NO_QUANTITIES: dict[str, str] = {
    "about.claims": "a page of text: the claims' statements",
    "about.card": "a page of text: the model card",
    "claims.board": "a verdict per claim; the tour lesson quotes the counts, not a prediction",
    "arch.blocks": "facts read from the weights (which norm, which activation): yes/no, no number",
    "arch.fold": "an identity checked to rounding error: the number is 0 by construction",
    "flash.timing": "wall-clock times of this machine: no value a student could derive",
    "generate.batch": "no lesson reader yet for the batch view's result",
    "generate.precision": "no lesson reader yet for the precision view's result",
    "generate.roofline": "no lesson reader yet for the roofline's result",
    "moe.pref": "no lesson reader yet for the preference view's result",
    "moe.params": "no lesson reader yet for the parameter count view's result",
    "moe.cost": "no lesson reader yet for the cost view's result",
    "rope.pair": "no lesson reader yet for one pair's rotation",
    "rope.dist": "no lesson reader yet for the distance view's result",
    "rope.scale": "no lesson reader yet for the scaling view's result",
    "rope.cont": "no lesson reader yet for the continuation view's result",
}


def _collect() -> tuple[dict[str, Quantity], dict[str, str]]:
    """This module's quantities and every lesson module's QUANTITIES / NO_QUANTITIES."""
    found = list(QUANTITIES)
    none = dict(NO_QUANTITIES)
    for module in pkgutil.iter_modules(lessons_package.__path__):
        if module.name in ("quantities", "custom"):
            continue
        loaded = importlib.import_module(f"{lessons_package.__name__}.{module.name}")
        found.extend(q for q in getattr(loaded, "QUANTITIES", ()) if isinstance(q, Quantity))
        none.update(getattr(loaded, "NO_QUANTITIES", {}) or {})
    by_key: dict[str, Quantity] = {}
    for q in found:
        if q.key in by_key:
            raise ValueError(f"two quantities share a key: {q.key}")
        by_key[q.key] = q
    return by_key, none


@functools.cache
def registry() -> tuple[dict[str, Quantity], dict[str, str]]:
    """(every quantity by key, every view without one and why), collected at first use: a
    lesson module may import Quantity from here while the lessons are still being discovered."""
    return _collect()


def of_view(view: str) -> tuple[Quantity, ...]:
    """The quantities of a view, in their declared order."""
    return tuple(q for q in registry()[0].values() if q.view == view)


def get(key: Any) -> Optional[Quantity]:
    return registry()[0].get(key) if isinstance(key, str) else None


def read_all(view: str, result: Any) -> dict[str, tuple[float, bool]]:
    """{quantity key: (value, computed)} of every quantity of `view` the result holds."""
    values = {}
    for q in of_view(view):
        got = q.value(result)
        if got is not None:
            values[q.key] = got
    return values
