"""Attention maps of the loaded model (one layer, one head or all), the mask drawn from the same
predicate the model used, and the next-token shift that mask causes.

Every map comes from a real forward of our modules with a Recorder on one layer (eager or tiled
path, the only ones that return probabilities). The mask next to it is
`ctx.layer_masks[layer].visible(positions, kv_pos)`: the MaskSpec object that forward used for
that layer, evaluated on the key positions it recorded.

    result = run(loaded, prompt, layer, head, "window", 8, 0, None, "eager", 0)
    figures(result, lang), summary(result, lang), table(result, lang)
"""
from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any, Optional, Sequence

import numpy as np
import torch
import torch.nn.functional as F

from explorer.attention import max_tokens, model_title
from explorer.inputs import InputError, finite_number, whole_number
from explorer.inputs import choice as one_of
from explorer.locales import Term, text
from explorer.masks import MASK_KINDS, choose, describe
from explorer.prompts import encode, token_labels, visible_token
from models.attention import MaskSpec
from models.forward import Recorder, RunOptions

MAX_GENERATED = 32
GRID_CELLS = 128            # all-heads grid: maps larger than this are pooled for display
SINK_LOGIT = "sink_logit"
# The mask control of this section: explorer.masks's three, or a causal mask with a sink logit.
KINDS = MASK_KINDS + (SINK_LOGIT,)
IMPLS = ("eager", "tiled")


@dataclass(frozen=True)
class MaskChoice:
    """What the visitor picked: an override of every layer's mask (None: the checkpoint's own,
    causal), or a causal mask with a gpt-oss sink logit b."""
    spec: Optional[MaskSpec] = None     # handed to RunOptions(mask=...)
    sink_logit: Optional[float] = None

    def options(self, impl: str = "eager", **extra) -> RunOptions:
        return RunOptions(attn_impl=impl, mask=self.spec, sink_logit=self.sink_logit, **extra)

    @property
    def is_default(self) -> bool:
        return self.spec is None and self.sink_logit is None

    def describe(self, lang: str = "en") -> str:
        return describe(self.spec, lang, sink_logit=self.sink_logit)


SINK_LOGIT_LIMIT = 50


def check_sink_logit(value: Any) -> float:
    b = finite_number(value, Term("attention.name.sink_logit"))
    if abs(b) > SINK_LOGIT_LIMIT:
        raise InputError("inputs.between", name=Term("attention.name.sink_logit"),
                         low=-SINK_LOGIT_LIMIT, high=SINK_LOGIT_LIMIT, value=f"{b:g}")
    return b


def mask_choice(kind: Any, window: Any = None, sinks: Any = 0, sink_logit: Any = None) -> MaskChoice:
    """Validate the mask controls (explorer.masks.choose, and the sink logit). Raises InputError
    (w < 1, s >= w, NaN, ...)."""
    if kind == SINK_LOGIT:
        return MaskChoice(sink_logit=check_sink_logit(sink_logit))
    return MaskChoice(spec=choose(kind, window, sinks, kinds=KINDS))


# ----------------------------------------------------------------------------- maps


@dataclass(frozen=True)
class LayerMap:
    layer: int
    probs: torch.Tensor          # (H, T, S) fp32: rows sum to 1 - sink mass
    q_pos: torch.Tensor          # (T,) absolute query positions
    kv_pos: torch.Tensor         # (S,) absolute key positions (as recorded)
    layer_mask: MaskSpec         # the MaskSpec the forward used for this layer
    visible: torch.Tensor        # (T, S) bool: layer_mask.visible(q_pos, kv_pos)
    last_logits: torch.Tensor    # (V,) fp32: next-token logits under this mask
    choice: MaskChoice
    impl: str

    @property
    def row_sums(self) -> torch.Tensor:
        return self.probs.sum(-1)                       # (H, T)

    @property
    def sink_mass(self) -> torch.Tensor:
        """Mass the sink logit absorbed, per head and query row: 1 - row sum."""
        return 1.0 - self.row_sums


@torch.inference_mode()
def layer_attention(model, ids: Sequence[int], layer: int, choice: MaskChoice = MaskChoice(),
                    impl: str = "eager") -> LayerMap:
    """One real forward with a Recorder on `layer` only; returns that layer's probabilities,
    the mask it used and the next-token logits of the same forward."""
    layer = whole_number(layer, Term("attention.name.layer"), 0, model.config.n_layers - 1)
    impl = one_of(impl, Term("attention.name.impl"), IMPLS)
    x = torch.tensor([list(ids)], dtype=torch.long, device=model.embed.weight.device)
    recorder = Recorder(["attn_probs"], layers=[layer])
    # "eager": the recorded layer runs the eager path (a Recorder asking for attn_probs makes
    # it), the other layers the fused SDPA path; "tiled" runs the tiled path in every layer.
    run_impl = "sdpa" if impl == "eager" else impl
    logits, ctx = model(x, options=choice.options(run_impl, last_logits_only=True),
                        recorder=recorder, return_context=True)
    kv_pos = recorder.get("kv_pos", layer).cpu()
    q_pos = ctx.positions.cpu()
    layer_mask = ctx.layer_masks[layer]
    return LayerMap(layer=layer, probs=recorder.get("attn_probs", layer)[0].float(), q_pos=q_pos,
                    kv_pos=kv_pos, layer_mask=layer_mask, visible=layer_mask.visible(q_pos, kv_pos),
                    last_logits=logits[0, -1].float().cpu(), choice=choice, impl=impl)


@torch.inference_mode()
def last_logits(model, ids: Sequence[int], options: Optional[RunOptions] = None) -> torch.Tensor:
    x = torch.tensor([list(ids)], dtype=torch.long, device=model.embed.weight.device)
    options = dataclasses.replace(options or RunOptions(), last_logits_only=True)
    return model(x, options=options)[0, -1].float().cpu()


@torch.inference_mode()
def greedy_continuation(model, ids: Sequence[int], n_new: int, choice: MaskChoice) -> list[int]:
    """`n_new` greedy tokens under the chosen mask, through the engine's cached generator."""
    from models.generate import SamplingParams, generate

    if n_new <= 0:
        return []
    steps = generate(model, ids, SamplingParams(max_new_tokens=n_new),
                     options=choice.options("sdpa"), eos_ids=[])
    return [step.token_id for step in steps]


def kl_divergence(p_logits: torch.Tensor, q_logits: torch.Tensor) -> float:
    """KL(P || Q) in nats between the softmaxes of two logit vectors."""
    log_p = F.log_softmax(p_logits.double(), -1)
    log_q = F.log_softmax(q_logits.double(), -1)
    return float((log_p.exp() * (log_p - log_q)).sum())


@dataclass(frozen=True)
class NextTokens:
    """The top tokens of the unmodified and the masked model side by side."""
    ids: tuple[int, ...]          # union of both top-k, by summed probability
    p_base: tuple[float, ...]     # probability without the mask
    p_mask: tuple[float, ...]     # probability with it
    kl: float                     # KL(unmodified || masked), nats
    base_top: int                 # argmax id of each
    new_top: int


def next_tokens(base_logits: torch.Tensor, new_logits: torch.Tensor, k: int = 8) -> NextTokens:
    p = torch.softmax(base_logits.double(), -1)
    q = torch.softmax(new_logits.double(), -1)
    top = list(dict.fromkeys(torch.topk(p, k).indices.tolist() + torch.topk(q, k).indices.tolist()))
    top.sort(key=lambda i: -float(p[i] + q[i]))
    return NextTokens(ids=tuple(top), p_base=tuple(float(p[i]) for i in top),
                      p_mask=tuple(float(q[i]) for i in top), kl=kl_divergence(base_logits, new_logits),
                      base_top=int(base_logits.argmax()), new_top=int(new_logits.argmax()))


# ----------------------------------------------------------------------------- figures

COLORSCALE = "Viridis"


def _pool(matrix: np.ndarray, cells: int) -> tuple[np.ndarray, int]:
    """Mean-pool a (T, S) matrix into at most cells x cells blocks; returns (pooled, factor)."""
    t, s = matrix.shape
    factor = max(1, math.ceil(max(t, s) / cells))
    if factor == 1:
        return matrix, 1
    tp, sp = math.ceil(t / factor) * factor, math.ceil(s / factor) * factor
    padded = np.full((tp, sp), np.nan, dtype=np.float64)
    padded[:t, :s] = matrix
    blocks = padded.reshape(tp // factor, factor, sp // factor, factor)
    return np.nanmean(blocks, axis=(1, 3)), factor


def attention_figure(layer_map: LayerMap, labels: Sequence[str], head: Optional[int],
                     n_prompt: Optional[int] = None, title: str = "",
                     n_kv_heads: Optional[int] = None, lang: str = "en"):
    """One head at full resolution, or all heads in a grid (pooled above GRID_CELLS tokens).
    Hover names the query token, key token, layer and head. Text in `lang`."""
    from explorer.plotting import Fig

    probs = layer_map.probs.numpy()
    n_heads = probs.shape[0]
    q_labels = [labels[int(p)] for p in layer_map.q_pos]
    k_labels = [labels[int(p)] for p in layer_map.kv_pos]
    layer = layer_map.layer
    if head is not None:
        fig = Fig()
        fig.add_heatmap(
            z=np.round(probs[head], 5), x=k_labels, y=q_labels, colorscale=COLORSCALE, zmin=0,
            colorbar=dict(title=dict(text=text("attention.fig.probability", lang))),
            hovertemplate=text("attention.fig.hover_one", lang, layer=layer, head=head) + "<extra></extra>")
        fig.update_xaxes(title_text=text("attention.fig.key_axis", lang), type="category", tickangle=-60)
        fig.update_yaxes(title_text=text("attention.fig.query_axis", lang), type="category", autorange="reversed")
        if n_prompt is not None and n_prompt < len(q_labels):
            fig.add_shape(type="line", x0=0, x1=1, xref="paper", y0=n_prompt - 0.5, y1=n_prompt - 0.5,
                          yref="y", line=dict(color="white", dash="dash", width=1))
        return fig.finish(text("attention.fig.title_one", lang, model=title, layer=layer, head=head).strip(),
                          height=640, alt=attention_alt(layer_map, k_labels, head, lang))
    cols = 3 if n_heads > 4 else 2
    rows = math.ceil(n_heads / cols)
    n_rep = max(1, n_heads // max(1, n_kv_heads or n_heads))
    fig = Fig()
    fig.grid(rows, cols, [text("attention.fig.head_title", lang, h=h, kv=h // n_rep) for h in range(n_heads)],
             n=n_heads, horizontal_spacing=0.04, vertical_spacing=0.06)
    pooled_heads = [_pool(probs[h], GRID_CELLS) for h in range(n_heads)]
    factor = pooled_heads[0][1]
    # block means are small: one shared scale up to the largest mean keeps heads comparable
    zmax = 1.0 if factor == 1 else float(max(np.nanmax(p) for p, _ in pooled_heads))
    for h in range(n_heads):
        pooled, factor = pooled_heads[h]
        t_idx = np.arange(pooled.shape[0]) * factor
        s_idx = np.arange(pooled.shape[1]) * factor
        if factor == 1:
            xs, ys = [k_labels[i] for i in s_idx], [q_labels[i] for i in t_idx]
            hover = text("attention.fig.hover_one", lang, layer=layer, head=h) + "<extra></extra>"
        else:
            xs = [f"{k_labels[i]} … +{factor - 1}" for i in s_idx]
            ys = [f"{q_labels[i]} … +{factor - 1}" for i in t_idx]
            hover = text("attention.fig.hover_block", lang, layer=layer, head=h, f=factor) + "<extra></extra>"
        fig.add_heatmap(z=np.round(pooled, 5), x=xs, y=ys, colorscale=COLORSCALE, zmin=0,
                        zmax=zmax, showscale=h == 0,
                        colorbar=dict(title=dict(text=text("attention.fig.probability" if factor == 1
                                                           else "attention.fig.block_mean", lang))),
                        hovertemplate=hover, **Fig.panel(h + 1))
    for h in range(n_heads):
        fig.update_xaxes(h + 1, showticklabels=False, type="category")
        fig.update_yaxes(h + 1, showticklabels=False, type="category", autorange="reversed")
        if h + cols >= n_heads:      # the lowest panel of its column
            fig.update_xaxes(h + 1, title_text=text("attention.fig.key_arrow", lang))
        if h % cols == 0:
            fig.update_yaxes(h + 1, title_text=text("attention.fig.query_arrow", lang))
    pooled_note = text("attention.fig.pooled", lang, f=factor) if factor > 1 else ""
    return fig.finish(text("attention.fig.title_all", lang, model=title, layer=layer,
                           n=n_heads, pooled=pooled_note).strip(), height=300 * rows + 100,
                      alt=attention_alt(layer_map, k_labels, None, lang))


def attention_alt(layer_map: LayerMap, k_labels: Sequence[str], head: Optional[int], lang: str) -> str:
    """The figure's text alternative: the token a head attends to most, averaged over queries,
    and its share (of one head; or of the head that puts the most on one token)."""
    shares = layer_map.probs.double().mean(dim=1).numpy()       # (heads, keys), each row sums to 1
    h, j = (head, int(np.argmax(shares[head]))) if head is not None else \
        np.unravel_index(int(np.argmax(shares)), shares.shape)
    key = "a11y.attention_one" if head is not None else "a11y.attention_all"
    return text(key, lang, layer=layer_map.layer, head=int(h), heads=shares.shape[0], share=f"{shares[h, j]:.0%}",
                position=int(layer_map.kv_pos[j]), token=k_labels[j].strip() or repr(k_labels[j]),
                n=len(layer_map.q_pos))


def mask_figure(layer_map: LayerMap, labels: Sequence[str], lang: str = "en"):
    """The (T, S) mask of this layer, from the same MaskSpec the forward used. Text in `lang`."""
    from explorer.plotting import MASK_COLORS, Fig

    visible = layer_map.visible.numpy().astype(np.int8)
    q_labels = [labels[int(p)] for p in layer_map.q_pos]
    k_labels = [labels[int(p)] for p in layer_map.kv_pos]
    fig = Fig()
    fig.add_heatmap(
        z=visible, x=k_labels, y=q_labels, colorscale=MASK_COLORS, zmin=0, zmax=1, showscale=False,
        hovertemplate=text("attention.fig.mask_hover", lang, layer=layer_map.layer) + "<extra></extra>")
    fig.update_xaxes(title_text=text("attention.fig.key_token", lang), type="category", showticklabels=False)
    fig.update_yaxes(title_text=text("attention.fig.query_token", lang), type="category", autorange="reversed",
                     showticklabels=False)
    return fig.finish(text("attention.fig.mask_title", lang, layer=layer_map.layer,
                           mask=describe(layer_map.layer_mask, lang)), height=640, lang=lang)




# ----------------------------------------------------------------------------- the experiment


PATH_TOLERANCE = 1e-4     # max |Δp| under which the tiled and eager maps count as the same
SPEED_MARGIN = 1.1        # a time ratio within 1.1x either way reads as "about as fast"


@dataclass(frozen=True)
class PathComparison:
    """The tiled path's map against the eager path's on the same request: the largest
    probability and next-token logit differences, and the wall time of each forward."""
    max_prob_diff: float
    max_logit_diff: float
    seconds_tiled: float
    seconds_eager: float

    @property
    def agree(self) -> bool:
        return self.max_prob_diff <= PATH_TOLERANCE

    @property
    def ratio(self) -> float:
        return self.seconds_tiled / self.seconds_eager if self.seconds_eager > 0 else float("inf")

    @property
    def speed(self) -> str:
        """"slower", "faster" or "same" (within SPEED_MARGIN), read from the measured ratio."""
        if self.ratio > SPEED_MARGIN:
            return "slower"
        if self.ratio * SPEED_MARGIN < 1:
            return "faster"
        return "same"


def compare_paths(model, ids: Sequence[int], layer: int, choice: MaskChoice,
                  tiled: LayerMap, seconds_tiled: float) -> PathComparison:
    """Run the eager path on the same ids, layer and mask and compare it with the tiled map."""
    import time

    start = time.perf_counter()
    eager = layer_attention(model, ids, layer, choice, "eager")
    seconds_eager = time.perf_counter() - start
    return PathComparison(
        max_prob_diff=float((tiled.probs - eager.probs).abs().max()),
        max_logit_diff=float((tiled.last_logits - eager.last_logits).abs().max()),
        seconds_tiled=seconds_tiled, seconds_eager=seconds_eager)


@dataclass(frozen=True)
class MapResult:
    model: str
    title: str
    n_kv_heads: int
    labels: tuple[str, ...]       # "position: token" for every position
    n_prompt: int                 # the rest of the positions were generated under the mask
    head: Optional[int]           # the head drawn (None: all heads)
    layer_map: LayerMap
    next: NextTokens
    next_labels: tuple[str, ...]  # the tokens of `next`, whitespace made visible
    seconds: float
    paths: Optional[PathComparison] = None   # tiled vs eager on this request (tiled path only)

    @property
    def n_tokens(self) -> int:
        return len(self.labels)

    @property
    def masked_max(self) -> float:
        """Largest probability where the mask hides the key (0 exactly when the mask holds)."""
        masked = self.layer_map.probs[:, ~self.layer_map.visible]
        return float(masked.abs().max()) if masked.numel() else 0.0

    @property
    def mask_matches_nonzero(self) -> bool:
        """Is every visible entry of some head nonzero, and every hidden one zero in all?"""
        return bool(((self.layer_map.probs > 0).any(0) == self.layer_map.visible).all())


def check_head(head: Any, n_heads: int) -> Optional[int]:
    if head in (None, "", "all"):
        return None
    return whole_number(head, Term("attention.name.head"), 0, n_heads - 1)


def run(loaded: Any, prompt: Any, layer: Any, head: Any, mask_kind: Any, window: Any, sinks: Any,
        sink_logit: Any, impl: Any, n_generate: Any) -> MapResult:
    """The map of one layer under the chosen mask, after `n_generate` greedy tokens generated
    under it, and the next-token distribution with and without the mask. Every input is checked
    (and the prompt's length in characters capped) before the tokenizer or the model runs."""
    import time

    config = loaded.config
    chosen = mask_choice(mask_kind, window, sinks, sink_logit)
    layer = whole_number(layer, Term("attention.name.layer"), 0, config.n_layers - 1)
    head = check_head(head, config.n_heads)
    impl = one_of(impl, Term("attention.name.impl"), IMPLS)
    n_generate = whole_number(n_generate, Term("attention.name.generated"), 0, MAX_GENERATED)
    limit = max_tokens(loaded.device)
    ids = encode(loaded.tokenizer, prompt, limit, name=Term("inputs.name.prompt"))
    if len(ids) + n_generate > limit:
        raise InputError("attention.err.too_long", n=len(ids), new=n_generate, limit=limit)
    start = time.perf_counter()
    model = loaded.model
    all_ids = ids + greedy_continuation(model, ids, n_generate, chosen)
    map_start = time.perf_counter()
    layer_map = layer_attention(model, all_ids, layer, chosen, impl)
    paths = None
    if impl == "tiled":
        paths = compare_paths(model, all_ids, layer, chosen, layer_map,
                              time.perf_counter() - map_start)
    base_logits = layer_map.last_logits if chosen.is_default else last_logits(model, all_ids)
    nxt = next_tokens(base_logits, layer_map.last_logits)
    return MapResult(model=loaded.name, title=model_title(loaded), n_kv_heads=config.n_kv_heads,
                     labels=tuple(token_labels(loaded.tokenizer, all_ids)), n_prompt=len(ids), head=head,
                     layer_map=layer_map, next=nxt,
                     next_labels=tuple(visible_token(loaded.tokenizer, i)
                                       for i in (*nxt.ids, nxt.base_top, nxt.new_top)),
                     seconds=time.perf_counter() - start, paths=paths)


def with_head(result: MapResult, head: Any) -> MapResult:
    """The same map, to be drawn for another head (or all): no forward pass."""
    return dataclasses.replace(result, head=check_head(head, result.layer_map.probs.shape[0]))


def figures(result: MapResult, lang: str = "en") -> tuple:
    """(attention probabilities, the mask of that layer)."""
    return (attention_figure(result.layer_map, result.labels, result.head, result.n_prompt,
                             result.title, result.n_kv_heads, lang),
            mask_figure(result.layer_map, result.labels, lang))


def data(result: MapResult, lang: str = "en") -> dict:
    """The numbers as plain data (the tab's "numbers as data" and its API)."""
    m, nxt = result.layer_map, result.next
    probs, absorbed = m.probs, m.sink_mass
    n_next = len(nxt.ids)
    return {
        "model": result.model, "layer": m.layer, "head": "all" if result.head is None else result.head,
        "n_tokens": result.n_tokens, "n_prompt": result.n_prompt,
        "n_generated": result.n_tokens - result.n_prompt,
        "mask": m.choice.describe(lang), "layer_mask": describe(m.layer_mask, lang), "impl": m.impl,
        "row_sum_min": float(probs.sum(-1).min()), "row_sum_max": float(probs.sum(-1).max()),
        "masked_max": result.masked_max, "mask_matches_nonzero": result.mask_matches_nonzero,
        "sink_mass_mean": float(absorbed.mean()), "sink_mass_max": float(absorbed.max()),
        "visible_entries": int(m.visible.sum()), "kl_nats": nxt.kl,
        "base_top": result.next_labels[n_next], "new_top": result.next_labels[n_next + 1],
        "seconds": result.seconds, "sink_logit": m.choice.sink_logit,
        **path_data(result.paths),
        "next_tokens": {"token": list(result.next_labels[:n_next]),
                        "p unmodified": [round(p, 4) for p in nxt.p_base],
                        "p with this mask": [round(p, 4) for p in nxt.p_mask]},
    }


def path_data(paths: Optional[PathComparison]) -> dict:
    if paths is None:
        return {}
    return {"tiled_vs_eager": {"max_prob_diff": paths.max_prob_diff,
                               "max_logit_diff": paths.max_logit_diff, "agree": paths.agree,
                               "seconds_tiled": paths.seconds_tiled,
                               "seconds_eager": paths.seconds_eager, "ratio": paths.ratio}}


def path_summary(paths: PathComparison, lang: str) -> str:
    """The tiled-vs-eager sentences, each chosen from the measured numbers."""
    same = text("attention.paths_" + ("agree" if paths.agree else "differ"), lang,
                diff=paths.max_prob_diff, logit=paths.max_logit_diff, tol=PATH_TOLERANCE)
    speed = text("attention.paths_" + paths.speed, lang, tiled=paths.seconds_tiled,
                 eager=paths.seconds_eager, ratio=paths.ratio)
    return same + " " + speed


def summary(result: MapResult, lang: str = "en") -> str:
    numbers = data(result, lang)
    absorbed = ""
    if numbers["sink_logit"] is not None:
        absorbed = text("attention.absorbed", lang, mean=numbers["sink_mass_mean"],
                        max=numbers["sink_mass_max"])
    yes_no = text("attention.yes" if numbers["mask_matches_nonzero"] else "attention.no", lang)
    return text("attention.map_summary", lang, layer=numbers["layer"], n_tokens=numbers["n_tokens"],
                n_generated=numbers["n_generated"], mask=numbers["mask"], layer_mask=numbers["layer_mask"],
                impl=numbers["impl"], seconds=numbers["seconds"], row_min=numbers["row_sum_min"],
                row_max=numbers["row_sum_max"], absorbed=absorbed, masked_max=numbers["masked_max"],
                mask_matches=yes_no, base_top=numbers["base_top"], new_top=numbers["new_top"],
                kl=numbers["kl_nats"]) + (
        "  \n" + path_summary(result.paths, lang) if result.paths is not None else "")


def table(result: MapResult, lang: str = "en"):
    """The next-token table, headers in `lang`."""
    import pandas as pd

    nxt = result.next
    return pd.DataFrame({
        text("attention.col.token", lang): list(result.next_labels[:len(nxt.ids)]),
        text("attention.col.p_base", lang): [round(p, 4) for p in nxt.p_base],
        text("attention.col.p_mask", lang): [round(p, 4) for p in nxt.p_mask]})
