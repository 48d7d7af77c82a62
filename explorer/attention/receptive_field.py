"""Receptive field through depth (claim C8), probed on the real model.

Replace the token at distance d before the last position by another token and compare, layer by
layer, the last position's hidden state (Recorder "resid", the output of each block) with the
unperturbed run. With window w (a key is visible when q - k < w) one layer moves information at
most w - 1 positions, so the perturbation can reach the last position at layer l (1-based) only
when d <= l (w - 1): after L layers the reach is L (w - 1) + 1 tokens. Out of reach, the hidden
state is bit-for-bit unchanged (masked probabilities are exactly 0), so "changed" is an exact
test, not a threshold. The one exception is a mixture-of-experts model: its MoE layers gather
each expert's tokens into one matrix product, and which rows share it depends on every token's
routing, the perturbed one included, so an unreached position can differ in its last bits; there
"changed" means more than MOE_ROUNDING of the layer's largest original activation.

The distances run a few per batch (row 0 of each batch the original text, the others the text
perturbed at one distance each), one forward per step, so the probe can stop between forwards.
With a forced window, the distances L(w - 1) and L(w - 1) + 1 are probed too: `measured_reach`
reads the reach after all L layers from them (claim C8's criterion).
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any, Generator, Optional, Sequence

import numpy as np
import plotly.graph_objects as go
import torch

from explorer.attention import (Deadline, Progress, check_deadline, drain, long_ids, max_tokens,
                                model_title)
from explorer.inputs import choice, whole_number
from explorer.locales import Term, text
from explorer.plotting import OKABE_ITO, Fig
from models.attention import MaskSpec
from models.forward import Recorder, RunOptions


def last_position_recorder() -> Recorder:
    """Keeps only the last position of each block's output: (B, d) per layer."""
    return Recorder(["resid"], hooks={"resid": lambda value, layer: value[:, -1].float()})


def theoretical_reach(n_layers: int, window: int) -> int:
    """Tokens that can influence a position after n_layers windowed layers: L (w - 1) + 1."""
    return n_layers * (window - 1) + 1


def first_layer_reached(distance: int, layer_windows: Sequence[Optional[int]]) -> Optional[int]:
    """0-based index of the first block whose output at the last position can depend on the
    token `distance` positions earlier, walking the layers with their own windows (None: a
    global layer, which reaches everything at once). None if no layer reaches it."""
    if distance == 0:
        return 0
    reach = 0
    for i, window in enumerate(layer_windows):
        if window is None:
            return i
        reach += window - 1
        if distance <= reach:
            return i
    return None


# A change an MoE model's expert grouping can make to an unreached position (see the module doc),
# relative to the layer's largest activation: fp32 rounding is ~1e-7 relative, a token within
# reach moves the state by far more than this on every model probed
# (tests/checkpoints/test_attention_explorer.py).
MOE_ROUNDING = 1e-5

@dataclass(frozen=True)
class ReceptiveFieldResult:
    distances: list            # d values probed
    delta: np.ndarray          # (len(d), L) max |Δ resid| at the last position, per block
    changed: np.ndarray        # (len(d), L) bool: delta > 0 exactly (MoE: beyond rounding)
    predicted: list            # first block index the rule predicts, per d (None: never)
    measured: list             # first block index that changed, per d (None: never)
    layer_windows: list        # window per layer in this run (None: global)
    n_tokens: int
    seed: int
    replacement: list          # the token id put at each perturbed position

    @property
    def agrees(self) -> bool:
        return self.predicted == self.measured


def layer_windows(model, mask: Optional[MaskSpec]) -> list:
    return [m.window for m in model.layer_masks(mask)]


ROWS_PER_FORWARD = 4   # perturbed copies per forward (each forward also carries the original)


def probe_forwards(n_distances: int) -> int:
    return math.ceil(n_distances / ROWS_PER_FORWARD)


@torch.inference_mode()
def probe_steps(model, ids: Sequence[int], distances: Sequence[int], mask: Optional[MaskSpec] = None,
                seed: int = 0, deadline: Optional[Deadline] = None
                ) -> Generator[Progress, None, ReceptiveFieldResult]:
    """The probe, ROWS_PER_FORWARD distances per forward; yields a Progress after every forward
    and checks `deadline` before each. Row 0 of every batch is the original text, so each
    perturbed row is compared with an original computed by the very same batched kernels (an
    exact "changed" test needs that)."""
    ids = list(ids)
    n = len(ids)
    distances = sorted({int(d) for d in distances})
    if not distances or distances[0] < 0 or distances[-1] > n - 1:
        raise ValueError(f"distances must lie in 0..{n - 1}")
    generator = torch.Generator().manual_seed(seed)
    vocab = model.config.vocab_size
    rows, replacement = [], []
    for d in distances:
        pos = n - 1 - d
        new = int(torch.randint(0, vocab, (1,), generator=generator))
        while new == ids[pos]:
            new = int(torch.randint(0, vocab, (1,), generator=generator))
        row = list(ids)
        row[pos] = new
        rows.append(row)
        replacement.append(new)
    options = RunOptions(mask=mask, last_logits_only=True)
    n_layers = model.config.n_layers
    total = probe_forwards(len(rows))
    deltas, scales = [], []
    yield Progress(0, total)
    for index in range(total):
        check_deadline(deadline, index, total)
        part = rows[index * ROWS_PER_FORWARD:(index + 1) * ROWS_PER_FORWARD]
        batch = torch.tensor([ids] + part, dtype=torch.long)
        recorder = last_position_recorder()
        model(batch.to(model.embed.weight.device), recorder=recorder, options=options)
        resid = torch.stack([recorder.get("resid", i) for i in range(n_layers)], dim=1)  # (B, L, d)
        deltas.append((resid[1:] - resid[:1]).abs().amax(-1).double().numpy())           # (b, L)
        scales.append(resid[0].abs().amax(-1).double().numpy())                           # (L,)
        yield Progress(index + 1, total)
    delta = np.concatenate(deltas)                                                      # (D, L)
    floor = MOE_ROUNDING * np.max(scales, axis=0) if model.config.n_experts else 0.0     # (L,) or 0
    changed = delta > floor
    windows = layer_windows(model, mask)
    predicted = [first_layer_reached(d, windows) for d in distances]
    measured = [int(np.argmax(row)) if row.any() else None for row in changed]
    return ReceptiveFieldResult(distances=distances, delta=delta, changed=changed,
                                predicted=predicted, measured=measured, layer_windows=windows,
                                n_tokens=n, seed=seed, replacement=replacement)


def probe(model, ids: Sequence[int], distances: Sequence[int], mask: Optional[MaskSpec] = None,
          seed: int = 0) -> ReceptiveFieldResult:
    """probe_steps drained to its result."""
    return drain(probe_steps(model, ids, distances, mask, seed))


@dataclass(frozen=True)
class Reach:
    """Claim C8's criterion on a probe with one window w on every layer: after all L layers, the
    farthest probed distance that changed the last position and the nearest that did not,
    against the rule's L(w - 1) (a distance d reaches when d <= L(w - 1): reach L(w - 1) + 1
    tokens, the last one included)."""
    rule: int                         # L (w - 1) + 1 tokens
    farthest_changed: Optional[int]   # largest probed d changed after the last layer
    nearest_unchanged: Optional[int]  # smallest probed d unchanged after the last layer
    n_tokens: int

    @property
    def outcome(self) -> str:
        """"matches": the measured boundary brackets the rule to one token (farthest changed
        = L(w - 1), nearest unchanged = L(w - 1) + 1); "short_text": every probed distance
        changed and the text is too short to probe past the rule; "differs" otherwise."""
        last = self.rule - 1                       # the farthest distance the rule reaches
        if self.nearest_unchanged is None:
            if self.n_tokens - 1 <= last and self.farthest_changed == self.n_tokens - 1:
                return "short_text"
            return "differs"
        if self.farthest_changed == last and self.nearest_unchanged == last + 1:
            return "matches"
        return "differs"

    @property
    def holds(self) -> bool:
        return self.outcome == "matches"


def measured_reach(result: ReceptiveFieldResult) -> Optional[Reach]:
    """The Reach of a probe whose layers all have one window (None otherwise)."""
    windows = set(result.layer_windows)
    if len(windows) != 1 or None in windows:
        return None
    (window,) = windows
    final = result.changed[:, -1]
    changed = [d for d, c in zip(result.distances, final) if c]
    unchanged = [d for d, c in zip(result.distances, final) if not c]
    return Reach(rule=theoretical_reach(len(result.layer_windows), window),
                 farthest_changed=max(changed) if changed else None,
                 nearest_unchanged=min(unchanged) if unchanged else None, n_tokens=result.n_tokens)


def default_distances(n_tokens: int, window: int, count: int = 12,
                      n_layers: Optional[int] = None) -> list[int]:
    """Distances on both sides of the multiples of (w - 1), where the rule says the first
    reached layer steps up, within the text (at most `count`, evenly spread); with `n_layers`,
    also both sides of the reach after the last layer, L(w - 1) and L(w - 1) + 1."""
    step = max(1, window - 1)
    multiples = list(range(step, n_tokens, step))
    pairs = max(1, (count - 1) // 2)
    if len(multiples) > pairs:
        idx = np.linspace(0, len(multiples) - 1, pairs).round().astype(int)
        multiples = [multiples[i] for i in sorted(set(idx))]
    picks = {1}
    for m in multiples:
        picks.update(d for d in (m, m + 1) if d <= n_tokens - 1)
    if n_layers is not None:
        last = n_layers * step
        picks.update(d for d in (last, last + 1) if d <= n_tokens - 1)
    return sorted(picks)


REFERENCE_MODELS = (
    # locale key of the name, layers, window (public configs)
    ("attention.ref.mistral", 32, 4096),
    ("attention.ref.gemma", 5, 512),
)


def reach_table(extra: Sequence[tuple] = (), lang: str = "en"):
    """L (w - 1) + 1 for public configs (and `extra` rows), headers in `lang`."""
    import pandas as pd

    rows = list(REFERENCE_MODELS) + list(extra)
    return pd.DataFrame({
        text("attention.col.model", lang): [text(key, lang) for key, _, _ in REFERENCE_MODELS]
        + [name for name, _, _ in extra],
        text("attention.col.layers", lang): [layers for _, layers, _ in rows],
        text("attention.col.window", lang): [window for _, _, window in rows],
        text("attention.col.reach", lang): [theoretical_reach(layers, window) for _, layers, window in rows]})


def receptive_figure(result: ReceptiveFieldResult, title: str = "", lang: str = "en") -> go.Figure:
    """Distance x layer: log10 of the change at the last position; rule boundary on top. Text in
    `lang`."""
    with np.errstate(divide="ignore"):
        z = np.where(result.delta > 0, np.log10(np.maximum(result.delta, 1e-30)), np.nan)
    n_layers = result.delta.shape[1]
    ys = [str(d) for d in result.distances]
    cells = np.where(result.changed, text("attention.fig.rf.changed", lang),
                    text("attention.fig.rf.unchanged", lang))
    fig = Fig()
    fig.add_heatmap(
        z=np.round(z, 3), x=list(range(n_layers)), y=ys, colorscale="Viridis",
        colorbar=dict(title=dict(text="log10 max|Δh|")), customdata=cells,
        hovertemplate=text("attention.fig.rf.hover", lang) + "<extra></extra>")
    px = [p if p is not None else n_layers - 0.5 for p in result.predicted]
    fig.add_scatter(x=[p - 0.5 for p in px], y=ys, mode="markers+lines",
                    line=dict(color=OKABE_ITO["vermillion"], width=2, shape="hv"),
                    marker=dict(symbol="line-ns-open", size=14, color=OKABE_ITO["vermillion"]),
                    name=text("attention.fig.rf.rule", lang),
                    hovertemplate=text("attention.fig.rf.rule_hover", lang) + "<extra></extra>")
    # grey behind the heatmap: cells without a change (NaN) show as grey
    fig.update_layout(plot_bgcolor="#d9d9d9")
    fig.update_xaxes(title_text=text("attention.fig.rf.x", lang), dtick=1 if n_layers <= 32 else 2,
                     range=[-0.5, n_layers - 0.5])
    fig.update_yaxes(title_text=text("attention.fig.rf.y", lang), type="category")
    return fig.finish(text("attention.fig.rf.title", lang, title=title + ":"),
                      height=max(380, 26 * len(ys) + 180), lang=lang)


# ----------------------------------------------------------------------------- the experiment

MODES = ("forced", "own")


@dataclass(frozen=True)
class ProbeRun:
    model: str
    title: str
    mode: str                  # "forced": one window w on every layer; "own": the model's masks
    window: Optional[int]      # the forced window (None in "own" mode)
    n_layers: int
    seconds: float
    probe: ReceptiveFieldResult


def steps(loaded: Any, mode: Any, window: Any, n_tokens: Any, seed: Any,
          deadline: Optional[Deadline] = None) -> Generator[Progress, None, ProbeRun]:
    """The probe on the first n tokens of the long text, at the distances around each multiple
    of (w - 1) (and, with a forced window, around the reach after the last layer), one forward
    per step. Inputs checked before the first forward."""
    n_tokens = whole_number(n_tokens, Term("attention.name.tokens"), 8, 2 * max_tokens(loaded.device))
    seed = whole_number(seed, Term("attention.name.seed"), 0, 2**31 - 1)
    mode = choice(mode, Term("attention.name.rf_mode"), MODES)
    n_layers = loaded.config.n_layers
    if mode == "forced":
        window = whole_number(window, Term("attention.name.window"), 2, n_tokens)
        mask, step_window, reach_layers = MaskSpec(window=window), window, n_layers
    else:
        window, mask, reach_layers = None, None, None
        # all global: every distance reaches at layer 0
        step_window = loaded.config.sliding_window or n_tokens
    ids = long_ids(loaded.tokenizer, n_tokens)
    start = time.perf_counter()
    distances = default_distances(n_tokens, step_window, n_layers=reach_layers)
    result = yield from probe_steps(loaded.model, ids, distances, mask, seed, deadline)
    return ProbeRun(model=loaded.name, title=model_title(loaded), mode=mode, window=window,
                    n_layers=n_layers, seconds=time.perf_counter() - start, probe=result)


def run(loaded: Any, mode: Any, window: Any, n_tokens: Any, seed: Any,
        deadline: Optional[Deadline] = None) -> ProbeRun:
    """steps(...) drained to its result."""
    return drain(steps(loaded, mode, window, n_tokens, seed, deadline))


def data(run_: ProbeRun) -> dict:
    p = run_.probe
    return {"model": run_.model, "mode": run_.mode, "window": run_.window, "n_tokens": p.n_tokens,
            "seed": p.seed, "distances": p.distances, "predicted_first_layer": p.predicted,
            "measured_first_layer": p.measured, "layer_windows": p.layer_windows,
            "agree": sum(a == b for a, b in zip(p.predicted, p.measured)), "seconds": run_.seconds,
            "max_abs_delta": p.delta.max(axis=1).tolist(), **reach_data(measured_reach(p))}


def dash(value: Optional[int]) -> str:
    return "—" if value is None else str(value)


def reach_data(reach: Optional[Reach]) -> dict:
    if reach is None:
        return {}
    return {"reach_rule": reach.rule, "farthest_changed": reach.farthest_changed,
            "nearest_unchanged": reach.nearest_unchanged, "reach_outcome": reach.outcome}


def figures(run_: ProbeRun, lang: str = "en") -> tuple:
    return (receptive_figure(run_.probe, run_.title, lang),)


def table(run_: Optional[ProbeRun] = None, lang: str = "en"):
    """The reach table, with the probed model's row when a window was forced."""
    extra = []
    if run_ is not None and run_.window:
        extra.append((text("attention.rf_forced_row", lang, title=run_.title), run_.n_layers, run_.window))
    return reach_table(extra, lang)


def summary(run_: ProbeRun, lang: str = "en") -> str:
    p = run_.probe
    compact = ", ".join(sorted({("global" if w is None else str(w)) for w in p.layer_windows}))

    def cells(values):
        return " | ".join("—" if v is None else str(v) for v in values)

    lines = [f"| d | {cells(p.distances)} |",
             "|---|" + "---|" * len(p.distances),
             f"| {text('attention.rf_rule', lang)} | {cells(p.predicted)} |",
             f"| {text('attention.rf_measured', lang)} | {cells(p.measured)} |"]
    out = text("attention.rf_summary", lang, n_tokens=p.n_tokens, windows=compact,
               seconds=run_.seconds, batch=len(p.distances), forwards=probe_forwards(len(p.distances)),
               agree=sum(a == b for a, b in zip(p.predicted, p.measured)),
               total=len(p.distances), rows="\n".join(lines))
    reach = measured_reach(p)
    if reach is not None:
        out += "\n\n" + text("attention.rf_reach_" + reach.outcome, lang, layers=len(p.layer_windows),
                              window=p.layer_windows[0], rule=reach.rule,
                              farthest=dash(reach.farthest_changed),
                              nearest=dash(reach.nearest_unchanged), n_tokens=p.n_tokens)
    return out
