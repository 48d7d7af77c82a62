"""What a visitor sees of a generation Session, in the visitor's language: the five charts of
the run (allocated and used bytes per layer against the formula, growth, latency and score
counts with and without a cache, cached vs full-forward logits, the (T, S) mask over the
cache's real slots), the status line and the summary of the evidence (C1, C3, C4, C9), whose
sentences are chosen by the criteria the claims board uses (explorer/generate/evidence.py).
Every number is read from the Session; nothing here runs the model."""
from __future__ import annotations

import functools
import math
from typing import Optional

import plotly.graph_objects as go

from explorer import plotting
from explorer.generate.checks import (C1_EXPONENT_SLACK, C1_MIN_RATIO_EXPONENT, c4_tolerance,
                                      REPLAY_BUDGET_S, c1_verdict, c4_holds, replay_targets)
from explorer.generate.request import DEADLINE_S
from explorer.generate.session import Session, c3_verdict, c9_verdict
from explorer.locales import normalize_language, text
from explorer.plotting import Fig

C4_PLOT_FLOOR = 1e-9            # bottom of the C4 chart's log axis

# Colour-blind-safe, from viridis: one colour per kind of layer cache.
KIND_COLOURS = {"full": "#440154", "window": "#21918c", "sinks+window": "#5ec962"}
CACHED_COLOUR, UNCACHED_COLOUR = "#3b528b", "#e5a000"  # viridis blue vs a cividis-safe amber
LIVE_COLOUR = "#7f9fcf"          # the live run's cached steps (the shared loop's engine path)
ALLOCATED_FILL = "rgba(120, 120, 120, 0.18)"
# in layer units: every bar one layer wide whatever layers its trace holds (an overlay of
# traces with sparse layers, Gemma's 3 global ones, would otherwise widen theirs)
BAR_WIDTH = 0.8
LATENCY_HEIGHT, MASK_HEIGHT = 600, 260
LATENCY_LEGEND_MARGIN = 150   # px under the latency chart: its legend sits below the x axis


def empty_figure(title: str = "", lang: Optional[str] = "en", height: int = 360,
                 message: str = "generate.fig.empty") -> go.Figure:
    """A chart with nothing to draw yet, and why. The same arguments give the same figure
    object, which must not be changed: while 30 visitors' runs start together every one of
    them shows the same "pending" charts, and a UI serialises each of them once (is_shared)."""
    return _empty_figure(title, normalize_language(lang), height, message)


@functools.lru_cache(maxsize=None)   # titles and messages: a fixed set of locale texts
def _empty_figure(title: str, lang: str, height: int, message: str) -> go.Figure:
    figure = plotting.empty_figure(text(message, lang), title, height)
    _SHARED[id(figure)] = figure   # held by the cache: its id is not reused while it lives
    return figure


_SHARED: dict = {}


def is_shared(figure: go.Figure) -> bool:
    """The figure is one empty_figure hands out again for the same arguments."""
    return _SHARED.get(id(figure)) is figure


def _kib(value: float) -> float:
    return value / 1024.0


def _kinds(session: Session, lang: str) -> list[str]:
    kinds = []
    for lay in session.layouts:
        if lay.describe(lang) not in kinds:
            kinds.append(lay.describe(lang))
    return kinds


def layer_bytes_figure(session: Session, lang: str = "en") -> go.Figure:
    """C3/C9: per layer, the bytes of the cache tensors' rows holding tokens at the latest step
    (solid, coloured by the layer's cache kind), behind them the layer's whole preallocated K
    and V buffers once the checks have read them back (grey outline), and a tick per layer for
    the formula at the tokens that layer holds."""
    if not session.records:
        return empty_figure(text("generate.fig.bars_title", lang, t=0), lang)
    record = session.records[-1]
    formula = session.formula_bytes(record.context)
    reading = session.cache_reading
    fig = Fig()
    if reading is not None:
        layers = list(range(len(reading.allocated_bytes)))
        fig.add_bar(x=layers, y=[_kib(b) for b in reading.allocated_bytes], width=BAR_WIDTH,
                    name=text("generate.fig.allocated", lang), marker_color=ALLOCATED_FILL,
                    marker_line=dict(color="#555", width=1),
                    customdata=[[reading.capacity[i], reading.allocated_bytes[i]] for i in layers],
                    hovertemplate=(f"{text('generate.fig.layer', lang)} %{{x}}<br>"
                                   f"{text('generate.fig.allocated', lang)}: %{{customdata[1]:,}} B "
                                   f"(%{{customdata[0]:,}} {text('generate.fig.slots', lang)})"
                                   "<extra></extra>"))
    for name in _kinds(session, lang):
        members = [lay for lay in session.layouts if lay.describe(lang) == name]
        idx = [lay.layer for lay in members]
        fig.add_bar(
            x=idx, y=[_kib(record.cache_bytes[i]) for i in idx], width=BAR_WIDTH,
            name=text("generate.fig.layers_of_kind", lang, n=len(idx), kind=name),
            marker_color=KIND_COLOURS[members[0].kind],
            customdata=[[name, record.cache_lengths[i], record.cache_bytes[i], formula[i]] for i in idx],
            hovertemplate=(f"{text('generate.fig.layer', lang)} %{{x}} (%{{customdata[0]}})<br>"
                           f"{text('generate.fig.tokens_held', lang)}: %{{customdata[1]}}<br>"
                           f"{text('generate.fig.measured', lang)}: %{{customdata[2]:,}} B<br>"
                           f"{text('generate.fig.formula', lang)}: %{{customdata[3]:,}} B"
                           "<extra></extra>"))
    fig.add_scatter(x=list(range(len(formula))), y=[_kib(b) for b in formula], mode="markers",
                    name=text("generate.fig.formula", lang),
                    marker=dict(symbol="line-ew-open", size=16, color="#000", line=dict(width=3, color="#000")),
                    hoverinfo="skip")
    fig.update_xaxes(title_text=text("generate.fig.layer", lang), dtick=1 if len(formula) <= 20 else 2,
                     range=[-0.6, len(formula) - 0.4])
    fig.update_yaxes(title_text=text("generate.fig.kib", lang), rangemode="tozero")
    fig.update_layout(barmode="overlay")
    return fig.finish(text("generate.fig.bars_title", lang, t=record.context), lang=lang)


def growth_figure(session: Session, lang: str = "en") -> go.Figure:
    """C3/C9: measured bytes summed per kind of layer against tokens in context (solid, one
    point per step), the formula for those layers from t = 0 (dotted: windowed layers bend flat
    at their capacity), and the uncapped 2·L·H_kv·d·t·b for all layers (dashed)."""
    title = text("generate.fig.growth_title", lang)
    if not session.records:
        return empty_figure(title, lang)
    config, b = session.config, session.element_bytes
    t = [r.context for r in session.records]
    t_end = t[-1]
    pieces = [r.piece for r in session.records]
    fig = Fig()
    for n, name in enumerate(_kinds(session, lang)):
        members = [lay for lay in session.layouts if lay.describe(lang) == name]
        idx = [lay.layer for lay in members]
        colour = KIND_COLOURS[members[0].kind]
        caps = sorted({lay.capacity for lay in members if lay.capacity is not None and lay.capacity < t_end})
        knots = [0] + caps + [t_end]
        formula = [sum(config.kv_layer_bytes(x, b, lay.capacity) for lay in members) for x in knots]
        fig.add_scatter(x=knots, y=[_kib(v) for v in formula], mode="lines",
                        line=dict(color=colour, dash="dot", width=2),
                        name=text("generate.fig.formula", lang), legendgroup="formula",
                        showlegend=n == 0,
                        hovertemplate=f"t = %{{x}}<br>%{{y:,.1f}} KiB<extra>{text('generate.fig.formula', lang)}: {name}</extra>")
        fig.add_scatter(
            x=t, y=[_kib(sum(r.cache_bytes[i] for i in idx)) for r in session.records],
            mode="lines+markers", line=dict(width=2.5, color=colour), marker=dict(size=5),
            name=text("generate.fig.layers_of_kind", lang, n=len(idx), kind=name),
            customdata=[[p, r.index] for p, r in zip(pieces, session.records)],
            hovertemplate=(f"t = %{{x}}<br>{text('generate.fig.step', lang)} %{{customdata[1]}}: "
                           f"%{{customdata[0]}}<br>%{{y:,.1f}} KiB<extra>{name}</extra>"))
    fig.add_scatter(x=[0, t_end], y=[0, _kib(config.kv_bytes_per_token(b) * t_end)], mode="lines",
                    line=dict(color="#000", dash="dash", width=1.5),
                    name=text("generate.fig.formula_full", lang),
                    hovertemplate="t = %{x}<br>%{y:,.1f} KiB<extra></extra>")
    fig.update_xaxes(title_text=text("generate.fig.tokens_in_cache", lang), rangemode="tozero")
    fig.update_yaxes(title_text=text("generate.fig.kib", lang), rangemode="tozero")
    return fig.finish(title, lang=lang)


def latency_figure(session: Session, lang: str = "en") -> go.Figure:
    """C1: per decode step, wall time (top) and scores (bottom). Time: the live run's cached
    steps, and the replay's cached step and no-cache forward at the same t (one engine, timed
    back to back). Scores: what each path computed (solid: the engine's count, t x S per head)
    and what the mask needs (dotted: visible query-key pairs)."""
    title = text("generate.fig.latency_title", lang)
    decode = [r for r in session.records if r.phase == "decode"]
    if not decode:
        return empty_figure(title, lang, height=LATENCY_HEIGHT)
    fig = Fig()
    live = text("generate.fig.live_cache", lang)
    with_cache, without = text("generate.fig.with_cache", lang), text("generate.fig.without_cache", lang)
    computed, needed = text("generate.fig.computed", lang), text("generate.fig.needed", lang)
    t = [r.context for r in decode]
    custom = [[r.piece] for r in decode]
    top, bottom = dict(xaxis="x", yaxis="y"), dict(xaxis="x2", yaxis="y2")
    fig.add_scatter(x=t, y=[r.latency_s * 1e3 for r in decode], mode="lines+markers", **top,
                    name=live, legendrank=1, line=dict(color=LIVE_COLOUR, width=1.5), marker=dict(size=3),
                    customdata=custom,
                    hovertemplate="t = %{x} (%{customdata[0]})<br>%{y:.1f} ms<extra>" + live + "</extra>")
    fig.add_scatter(x=t, y=[r.score_entries for r in decode], mode="lines+markers", **bottom,
                    name=f"{with_cache}: {computed}", legendrank=4, line=dict(color=CACHED_COLOUR),
                    marker=dict(size=4), customdata=custom,
                    hovertemplate=("t = %{x} (%{customdata[0]})<br>%{y:,}<extra>"
                                   f"{with_cache}: {computed}</extra>"))
    fig.add_scatter(x=t, y=[r.visible_pairs for r in decode], mode="lines", **bottom,
                    name=f"{with_cache}: {needed}", legendrank=6,
                    line=dict(color=CACHED_COLOUR, dash="dot", width=3),
                    hovertemplate=f"t = %{{x}}<br>%{{y:,}}<extra>{with_cache}: {needed}</extra>")
    if session.replay:
        rt = [p.context for p in session.replay]
        fig.add_scatter(x=rt, y=[p.cached_latency_s * 1e3 for p in session.replay], mode="lines+markers",
                        **top, name=text("generate.fig.replayed_cache", lang), legendrank=2,
                        line=dict(color=CACHED_COLOUR), marker=dict(size=6, symbol="circle"),
                        hovertemplate="t = %{x}<br>%{y:.1f} ms<extra>" + with_cache + "</extra>")
        style = dict(line=dict(color=UNCACHED_COLOUR), marker=dict(size=6, symbol="square"))
        fig.add_scatter(x=rt, y=[p.latency_s * 1e3 for p in session.replay], mode="lines+markers",
                        **top, name=without, legendrank=3, **style,
                        hovertemplate="t = %{x}<br>%{y:.1f} ms<extra>" + without + "</extra>")
        fig.add_scatter(x=rt, y=[p.score_entries for p in session.replay], mode="lines+markers",
                        **bottom, name=f"{without}: {computed}", legendrank=5, **style,
                        hovertemplate=f"t = %{{x}}<br>%{{y:,}}<extra>{without}: {computed}</extra>")
        fig.add_scatter(x=rt, y=[p.visible_pairs for p in session.replay], mode="lines", **bottom,
                        name=f"{without}: {needed}", legendrank=7,
                        line=dict(color=UNCACHED_COLOUR, dash="dot", width=3),
                        hovertemplate=f"t = %{{x}}<br>%{{y:,}}<extra>{without}: {needed}</extra>")
    dtick = dict(dtick=1) if max(t) - min(t) <= 8 else {}
    # seven series: the legend goes under the x axis, two entries a row, not over the title
    fig.update_layout(legend=dict(y=-0.12, yanchor="top", entrywidth=0.5, entrywidthmode="fraction"))
    fig.update_layout(
        xaxis=dict(anchor="y", matches="x2", showticklabels=False, **dtick),
        xaxis2=dict(anchor="y2", title=dict(text=text("generate.fig.tokens_in_cache", lang)), **dtick),
        yaxis=dict(domain=[0.56, 1.0], rangemode="tozero",
                   title=dict(text=text("generate.fig.latency", lang), font=dict(size=12))),
        yaxis2=dict(domain=[0.0, 0.46], rangemode="tozero",
                    title=dict(text=text("generate.fig.scores", lang), font=dict(size=12))))
    figure = fig.finish(title, height=LATENCY_HEIGHT, lang=lang)
    figure.layout.margin.b = LATENCY_LEGEND_MARGIN
    return figure


def logit_diff_figure(session: Session, lang: str = "en") -> go.Figure:
    """C4: max |Δ logit| of every generated token, cached path vs one full forward."""
    title = text("generate.fig.diff_title", lang)
    if not session.logit_diffs:
        message = "generate.fig.empty"
        if session.records:
            message = ("generate.fig.c4_off" if not session.request.check_full_forward else
                       unchecked(session) or ("generate.fig.c4_busy" if session.replay_note == "busy"
                                              else "generate.fig.c4_pending"))
        return empty_figure(title, lang, message=message)
    positions = [r.position for r in session.records[:len(session.logit_diffs)]]
    fig = Fig()
    # An exact 0 has no place on a log axis: drawn at the floor, the hover shows the real value.
    fig.add_scatter(x=positions, y=[max(d, C4_PLOT_FLOOR) for d in session.logit_diffs],
                    mode="markers+lines",
                    line=dict(color=CACHED_COLOUR, width=1), marker=dict(size=6),
                    name=text("generate.fig.diff", lang),
                    customdata=[[r.piece, d] for r, d in zip(session.records, session.logit_diffs)],
                    hovertemplate=(f"{text('generate.fig.position', lang)} %{{x}}: %{{customdata[0]}}"
                                   "<br>%{customdata[1]:.2e}<extra></extra>"))
    tol = c4_tolerance(session.weights)
    fig.add_scatter(x=[min(positions), max(positions)], y=[tol, tol], mode="lines",
                    line=dict(color=UNCACHED_COLOUR, dash="dash"),
                    name=text("generate.fig.tolerance", lang, tol=tol), hoverinfo="skip")
    fig.update_xaxes(title_text=text("generate.fig.position", lang))
    fig.integer_axis(positions)
    # the axis reaches past both the largest difference and the tolerance line (int8's is 1.5)
    top = max(-3.0, math.ceil(math.log10(max(max(session.logit_diffs), 2 * tol, C4_PLOT_FLOOR))))
    fig.update_yaxes(title_text=text("generate.fig.diff", lang), type="log", dtick=1,
                     range=[math.log10(C4_PLOT_FLOOR), top],
                     exponentformat="power")
    return fig.finish(title, lang=lang)


def mask_figure(session: Session, lang: str = "en") -> go.Figure:
    """C4: for each kind of layer, the (T, S) mask of the last T tokens fed as one chunk at
    cache.pos: columns are the keys in the engine's order (the cache's slots, then for a ring
    buffer the chunk's own keys), each holding the absolute position the engine recorded; the
    cells are the engine's MaskSpec predicate over those positions (checks.read_engine_cache)."""
    title = text("generate.fig.mask_title", lang)
    reading = session.cache_reading
    if reading is None or not reading.masks:
        message = "generate.fig.empty"
        if session.records:
            message = ("generate.fig.mask_pending" if session.phase != "done" else
                       unchecked(session) or ("generate.fig.mask_busy" if session.replay_note == "busy"
                                              else "generate.fig.mask_off"))
        return empty_figure(title, lang, height=MASK_HEIGHT, message=message)
    blocks = reading.masks
    fig = Fig()
    titles = []
    for block in blocks:
        kind = session.layouts[block.layer].describe(lang)
        s = len(block.kv_pos)
        key = "generate.fig.mask_panel_ring" if s > block.capacity else "generate.fig.mask_panel"
        titles.append(text(key, lang, kind=kind, s=s, slots=block.capacity, t=len(block.q_pos)))
    fig.grid(len(blocks), 1, titles=titles, vertical_spacing=0.16 if len(blocks) > 1 else 0.06)
    query, key_word = text("generate.fig.query", lang), text("generate.fig.key", lang)
    empty = text("generate.fig.empty_slot", lang)
    for k, block in enumerate(blocks, start=1):
        s = len(block.kv_pos)
        held = [empty if p < 0 else p for p in block.kv_pos]
        fig.add_heatmap(
            z=[[1 if v else 0 for v in row] for row in block.visible], x=list(range(s)),
            y=[f"q {q}" for q in block.q_pos], zmin=0, zmax=1, showscale=False,
            colorscale=[[0.0, "#f3f1ea"], [0.5, "#f3f1ea"], [0.5, "#00204c"], [1.0, "#00204c"]],
            xgap=1 if s <= 128 else 0, ygap=1,
            customdata=[held for _ in block.q_pos],
            hovertemplate=(f"{query} %{{y}}<br>{text('generate.fig.column', lang)} %{{x}}: "
                           f"{key_word} %{{customdata}}<br>%{{z}} = "
                           f"{text('generate.fig.visible', lang)}<extra></extra>"),
            **Fig.panel(k))
        fig.update_yaxes(k, autorange="reversed")
    # one axis title, under the last panel (the panels share cache.pos)
    fig.update_xaxes(len(blocks), title_text=text("generate.fig.mask_key_axis", lang, pos=blocks[0].cache_pos))
    height = max(MASK_HEIGHT, 70 + sum(110 + 16 * len(b.q_pos) for b in blocks))
    return fig.finish(title, height=height, lang=lang)


def figures(session: Session, lang: str = "en") -> tuple[go.Figure, ...]:
    """(bytes per layer, growth, latency, C4 logits, mask) of a run."""
    return (layer_bytes_figure(session, lang), growth_figure(session, lang),
            latency_figure(session, lang), logit_diff_figure(session, lang),
            mask_figure(session, lang))


def empty_figures(lang: str = "en") -> tuple[go.Figure, ...]:
    """The five charts before any run (a message, no title), in the order of `figures`."""
    heights = (360, 360, LATENCY_HEIGHT, 360, MASK_HEIGHT)
    return tuple(empty_figure("", lang, height=height) for height in heights)


def unchecked(session: Session) -> str | None:
    """The message key of a run that ended before its checks (Stop, the time limit): they never
    ran, whatever was asked."""
    if session.phase == "done" and session.stopped in ("stop", "deadline"):
        return f"generate.fig.unchecked_{session.stopped}"
    return None


def status(session: Session, lang: str = "en") -> str:
    """The line under the generated text: progress while running, the outcome when done."""
    rate = session.decode_rate()
    fields = dict(n=len(session.records), total=session.request.max_new_tokens,
                  prompt=session.n_prompt, ttft=session.first_token_s or 0.0,
                  chat=text("generate.status.chat", lang) if session.chat else "",
                  rate=text("generate.status.rate", lang, rate=rate) if rate else "")
    last = session.records[-1] if session.records else None
    if last is not None and last.batch_size > 1:
        # the shared decode loop: C2's memory-bound step, its weight reads shared, made visible
        fields["rate"] += text("generate.status.shared", lang, n=last.batch_size - 1)
    if session.phase == "waiting":   # a class's teacher page: its checks queue behind the class
        return text("generate.status.waiting", lang, n=session.ahead)
    if session.phase == "checking":
        return text("generate.status.checking", lang)
    if session.phase == "replay":
        return text("generate.status.replay", lang, n=len(session.replay),
                    total=len(replay_targets(session.records)))
    if session.phase == "done" and session.stopped == "stop":   # by the Stop button
        if not session.records:
            return text("generate.stopped", lang)
        return text("generate.status.stopped", lang, **fields)
    if session.phase == "done":
        reason = text(f"generate.reason.{session.stopped or 'length'}", lang, s=DEADLINE_S)
        return text("generate.status.done", lang, reason=reason, **fields)
    return text("generate.status.running", lang, **fields)


def path_line(session: Session, lang: str = "en") -> str:
    """Which code made the run's tokens: the first from the prompt's forward through models/,
    each later one from the fused step (a run alone) or the batched step (with others), their
    matrices in the served precision, and how close that step keeps to models/."""
    from engine.quantized import MODELS_BOUND

    later = session.records[1:]
    fused = sum(1 for r in later if r.batch_size == 1 and session.fused)
    steps = []
    if fused:
        steps.append(text("generate.ev.path_fused", lang, n=fused))
    if len(later) - fused:
        steps.append(text("generate.ev.path_batched", lang, n=len(later) - fused))
    return text("generate.ev.path", lang, steps="; ".join(steps) or text("generate.ev.path_none", lang),
                weights=text(f"generate.ev.weights.{session.weights}", lang),
                bpw=session.bytes_per_weight, pct=100 * MODELS_BOUND[session.weights])


def summary(session: Session, lang: str = "en") -> str:
    """The evidence of the run in Markdown: C3's used and allocated bytes against the formula,
    the C9 cap, the C1 replay and the C4 check. Every number is read from the Session, and
    each verdict word is chosen by the criterion the claims board applies (c3_verdict,
    c9_verdict, c1_verdict, c4_holds)."""
    if not session.records:
        return ""
    config, last = session.config, session.records[-1]
    formula = session.formula_bytes(last.context)
    c3 = c3_verdict(session)
    lines = [text("generate.ev.c3", lang, t=last.context, measured=sum(last.cache_bytes),
                  formula=sum(formula), steps=c3.steps,
                  match=text("generate.ev.equal" if c3.used_equal else "generate.ev.differ", lang),
                  layers=config.n_layers, kv=config.n_kv_heads, d=config.head_dim,
                  b=session.element_bytes,
                  full=config.kv_bytes_per_token(session.element_bytes) * last.context)]
    reading = session.cache_reading
    if reading is not None:
        lines[-1] += text("generate.ev.c3_allocated", lang, allocated=sum(reading.allocated_bytes),
                          max_len=reading.max_len, slots=sum(reading.capacity),
                          formula=sum(session.formula_allocated()),
                          match=text("generate.ev.equal" if c3.allocated_equal else "generate.ev.differ", lang),
                          used=sum(reading.used_bytes),
                          run=text("generate.ev.same_as_run" if c3.reading_equal else "generate.ev.not_run", lang))
    c9 = c9_verdict(session)
    if c9.capped_layers:
        key = ("generate.ev.c9_before" if c9.tokens <= c9.cap else
               "generate.ev.c9" if c9.full_layers else "generate.ev.c9_all")
        lines.append(text(key, lang, capped=c9.capped_layers, held=c9.capped_held, cap=c9.cap,
                          full=c9.full_layers, t=c9.tokens))
        if c9.capped_slots is not None:
            lines[-1] += text("generate.ev.c9_slots", lang, slots=c9.capped_slots)
    lines.append(path_line(session, lang))
    if session.max_batch() > 1:
        lines.append(text("generate.ev.shared", lang, others=session.max_batch() - 1))
    first = session.records[0]
    if first.shared_prefix:   # the chat template's tokens, the app's own prompt, or the visitor's
        key = ("generate.ev.prefix_own" if first.shared_own else
               "generate.ev.prefix_kept" if first.shared_kept else "generate.ev.prefix")
        lines.append(text(key, lang, n=first.shared_prefix, prompt=session.n_prompt,
                          fed=first.tokens_processed))
    if session.replay_note == "busy" and not session.replay:
        lines.append(text("generate.ev.busy", lang).strip())
    if session.replay:
        point = max(session.replay, key=lambda p: p.context)
        live = next(r for r in session.records if r.context == point.context)
        line = text("generate.ev.c1", lang, t=point.context, cached=point.cached_latency_s * 1e3,
                    uncached=point.latency_s * 1e3, ratio=point.ratio, live=live.latency_s * 1e3,
                    cs=point.cached_score_entries, us=point.score_entries,
                    cn=point.cached_visible_pairs, un=point.visible_pairs,
                    share=point.visible_pairs / max(point.score_entries, 1))
        verdict = c1_verdict(session.replay)
        if None in (verdict.exponent_cached, verdict.exponent_uncached, verdict.ratio_exponent):
            line += text("generate.ev.c1_short", lang, t0=min(p.context for p in session.replay),
                         t1=point.context)
        elif c9.capped_layers and point.context > c9.cap:
            # past a window the cached step's keys stop growing: C9's O(w), not C1's O(t)
            line += text("generate.ev.c1_growth_window", lang, t0=min(p.context for p in session.replay),
                         t1=point.context, ec=verdict.exponent_cached, eu=verdict.exponent_uncached,
                         cap=c9.cap)
        else:
            line += text("generate.ev.c1_growth", lang, t0=verdict.t_min, t1=verdict.t_max,
                         ec=verdict.exponent_cached, eu=verdict.exponent_uncached,
                         er=verdict.ratio_exponent, r0=verdict.ratio_at_min,
                         r1=verdict.ratio_at_max, slack=C1_EXPONENT_SLACK,
                         min_r=C1_MIN_RATIO_EXPONENT,
                         verdict=text("generate.ev.holds" if verdict.passed else "generate.ev.fails", lang))
        if session.request.temperature == 0.0:
            line += text("generate.ev.c1_tokens", lang, n=len(session.replay),
                         same=sum(p.same_token for p in session.replay))
        if session.replay_note == "budget":
            line += text("generate.ev.c1_budget", lang, s=REPLAY_BUDGET_S)
        elif session.replay_note == "busy":   # stopped part way: C4 (if asked) was done before
            line += text("generate.ev.c1_busy", lang, n=len(session.replay))
        lines.append(line)
    if session.logit_diffs:
        lines.append(text("generate.ev.c4", lang, n=len(session.logit_diffs),
                          diff=session.max_logit_diff(), tol=c4_tolerance(session.weights),
                          verdict=text("generate.ev.within" if c4_holds(session.logit_diffs, c4_tolerance(session.weights))
                                       else "generate.ev.beyond", lang)))
    return "\n\n".join(lines)
