"""What a visitor sees of a generation Session, in the visitor's language: the five charts of
the run (bytes per layer, growth, latency with and without a cache, cached vs full-forward
logits, the (T, S) mask), the status line and the summary of the evidence (C1, C3, C4, C9).
Every number is read from the Session; nothing here runs the model."""
from __future__ import annotations

import math
from typing import Optional

import plotly.graph_objects as go

from explorer import plotting
from explorer.generate.checks import C4_TOLERANCE, REPLAY_BUDGET_S, mask_rows, replay_targets
from explorer.generate.request import DEADLINE_S
from explorer.generate.session import Session
from explorer.locales import text
from explorer.plotting import Fig

C4_PLOT_FLOOR = 1e-9            # bottom of the C4 chart's log axis

# Colour-blind-safe, from viridis: one colour per kind of layer cache.
KIND_COLOURS = {"full": "#440154", "window": "#21918c", "sinks+window": "#5ec962"}
CACHED_COLOUR, UNCACHED_COLOUR = "#3b528b", "#e5a000"  # viridis blue vs a cividis-safe amber
LATENCY_HEIGHT, MASK_HEIGHT = 440, 260


def empty_figure(title: str = "", lang: Optional[str] = "en", height: int = 360,
                 message: str = "generate.fig.empty") -> go.Figure:
    return plotting.empty_figure(text(message, lang), title, height)


def _kib(value: float) -> float:
    return value / 1024.0


def _kinds(session: Session, lang: str) -> list[str]:
    kinds = []
    for lay in session.layouts:
        if lay.describe(lang) not in kinds:
            kinds.append(lay.describe(lang))
    return kinds


def layer_bytes_figure(session: Session, lang: str = "en") -> go.Figure:
    """C3/C9: bars = bytes of each layer's cache tensors at the latest step, coloured by the
    layer's cache kind; a tick per layer = the formula for the tokens that layer holds."""
    if not session.records:
        return empty_figure(text("generate.fig.bars_title", lang, t=0), lang)
    record = session.records[-1]
    formula = session.formula_bytes(record.context)
    fig = Fig()
    for name in _kinds(session, lang):
        members = [lay for lay in session.layouts if lay.describe(lang) == name]
        idx = [lay.layer for lay in members]
        fig.add_bar(
            x=idx, y=[_kib(record.cache_bytes[i]) for i in idx],
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
    fig.update_xaxes(title_text=text("generate.fig.layer", lang), dtick=1 if len(formula) <= 20 else 2)
    fig.update_yaxes(title_text=text("generate.fig.kib", lang), rangemode="tozero")
    fig.update_layout(bargap=0.15)
    return fig.finish(text("generate.fig.bars_title", lang, t=record.context))


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
    return fig.finish(title)


def latency_figure(session: Session, lang: str = "en") -> go.Figure:
    """C1: per decode step, wall time (top) and counted scores (bottom), with the cache (the
    live run) and without (teacher-forced replay at the same t)."""
    title = text("generate.fig.latency_title", lang)
    decode = [r for r in session.records if r.phase == "decode"]
    if not decode:
        return empty_figure(title, lang, height=LATENCY_HEIGHT)
    fig = Fig()
    with_cache, without = text("generate.fig.with_cache", lang), text("generate.fig.without_cache", lang)
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
        xaxis2=dict(anchor="y2", title=dict(text=text("generate.fig.tokens_in_cache", lang)), **dtick),
        yaxis=dict(domain=[0.54, 1.0], rangemode="tozero",
                   title=dict(text=text("generate.fig.latency", lang))),
        yaxis2=dict(domain=[0.0, 0.46], rangemode="tozero",
                    title=dict(text=text("generate.fig.scores", lang))))
    return fig.finish(title, height=LATENCY_HEIGHT)


def logit_diff_figure(session: Session, lang: str = "en") -> go.Figure:
    """C4: max |Δ logit| of every generated token, cached path vs one full forward."""
    title = text("generate.fig.diff_title", lang)
    if not session.logit_diffs:
        message = "generate.fig.empty"
        if session.records:
            message = "generate.fig.c4_pending" if session.request.check_full_forward else "generate.fig.c4_off"
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
    fig.add_scatter(x=[min(positions), max(positions)], y=[C4_TOLERANCE, C4_TOLERANCE], mode="lines",
                    line=dict(color=UNCACHED_COLOUR, dash="dash"),
                    name=text("generate.fig.tolerance", lang, tol=C4_TOLERANCE), hoverinfo="skip")
    fig.update_xaxes(title_text=text("generate.fig.position", lang))
    fig.integer_axis(positions)
    top = max(-3.0, math.ceil(math.log10(max(max(session.logit_diffs), C4_PLOT_FLOOR))))
    fig.update_yaxes(title_text=text("generate.fig.diff", lang), type="log", dtick=1,
                     range=[math.log10(C4_PLOT_FLOOR), top],
                     exponentformat="power")
    return fig.finish(title)


def mask_figure(session: Session, lang: str = "en", n_queries: int = 8) -> go.Figure:
    title = text("generate.fig.mask_title", lang)
    blocks = mask_rows(session, n_queries)
    if not blocks:
        return empty_figure(title, lang, height=MASK_HEIGHT)
    fig = Fig()
    y_labels, z = [], []
    for block in blocks:
        kind = session.layouts[block.layer].describe(lang)
        for q, line in zip(block.q_pos, block.visible):
            y_labels.append(f"{kind} · q {q}")
            z.append([1 if v else 0 for v in line])
    s = len(z[0])
    fig.add_heatmap(
        z=z, x=list(range(s)), y=y_labels, zmin=0, zmax=1, showscale=False,
        colorscale=[[0.0, "#f3f1ea"], [0.5, "#f3f1ea"], [0.5, "#00204c"], [1.0, "#00204c"]],
        xgap=1 if s <= 128 else 0, ygap=1,
        hovertemplate=(f"{text('generate.fig.query', lang)} %{{y}}<br>"
                       f"{text('generate.fig.key', lang)} %{{x}}<br>%{{z}} = "
                       f"{text('generate.fig.visible', lang)}<extra></extra>"))
    first = blocks[0]
    fig.update_xaxes(title_text=text("generate.fig.key_axis", lang, s=s, pos=first.cache_pos))
    fig.update_yaxes(autorange="reversed", title_text=text("generate.fig.query_axis", lang,
                                                           t=len(first.q_pos)))
    return fig.finish(title, height=max(MASK_HEIGHT, 120 + 18 * len(z)))


def figures(session: Session, lang: str = "en") -> tuple[go.Figure, ...]:
    """(bytes per layer, growth, latency, C4 logits, mask) of a run."""
    return (layer_bytes_figure(session, lang), growth_figure(session, lang),
            latency_figure(session, lang), logit_diff_figure(session, lang),
            mask_figure(session, lang))


def empty_figures(lang: str = "en") -> tuple[go.Figure, ...]:
    """The five charts before any run (a message, no title), in the order of `figures`."""
    heights = (360, 360, LATENCY_HEIGHT, 360, MASK_HEIGHT)
    return tuple(empty_figure("", lang, height=height) for height in heights)


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
    if session.phase == "checking":
        return text("generate.status.checking", lang)
    if session.phase == "replay":
        return text("generate.status.replay", lang, n=len(session.replay),
                    total=len(replay_targets(session.records)))
    if session.phase == "done":
        reason = text(f"generate.reason.{session.stopped or 'length'}", lang, s=DEADLINE_S)
        return text("generate.status.done", lang, reason=reason, **fields)
    return text("generate.status.running", lang, **fields)


def summary(session: Session, lang: str = "en") -> str:
    """The evidence of the run in Markdown: C3 bytes against the formula, the C9 cap, the C1
    replay and the C4 check, every number read from the Session."""
    if not session.records:
        return ""
    config, last = session.config, session.records[-1]
    formula = session.formula_bytes(last.context)
    match = session.bytes_match_formula()
    lines = [text("generate.ev.c3", lang, t=last.context, measured=sum(last.cache_bytes),
                  formula=sum(formula), steps=len(session.records),
                  match=text("generate.ev.equal" if match else "generate.ev.differ", lang),
                  layers=config.n_layers, kv=config.n_kv_heads, d=config.head_dim,
                  b=session.element_bytes,
                  full=config.kv_bytes_per_token(session.element_bytes) * last.context)]
    capped = [lay for lay in session.layouts if lay.capacity is not None]
    if capped:
        cap = min(lay.capacity for lay in capped)
        held = min(last.cache_lengths[lay.layer] for lay in capped)
        lines.append(text("generate.ev.c9", lang, capped=len(capped), held=held, cap=cap,
                          full=len(session.layouts) - len(capped), t=last.context))
    if session.max_batch() > 1:
        lines.append(text("generate.ev.shared", lang, others=session.max_batch() - 1))
    if session.replay_note == "busy" and not session.replay:
        lines.append(text("generate.ev.busy", lang).strip())
    if session.replay:
        point = session.replay[-1]
        cached = next(r for r in session.records if r.context == point.context)
        line = text("generate.ev.c1", lang, t=point.context, cached=cached.latency_s * 1e3,
                    cs=cached.score_entries, uncached=point.latency_s * 1e3, us=point.score_entries,
                    ratio=point.latency_s / max(cached.latency_s, 1e-9),
                    sratio=point.score_entries / max(cached.score_entries, 1))
        if session.request.temperature == 0.0:
            line += text("generate.ev.c1_tokens", lang, n=len(session.replay),
                         same=sum(p.same_token for p in session.replay))
        if session.replay_note == "budget":
            line += text("generate.ev.c1_budget", lang, s=REPLAY_BUDGET_S)
        elif session.replay_note == "busy":
            line += text("generate.ev.busy", lang)
        lines.append(line)
    if session.logit_diffs:
        diff = session.max_logit_diff()
        ok = diff <= C4_TOLERANCE
        lines.append(text("generate.ev.c4", lang, n=len(session.logit_diffs), diff=diff,
                          tol=C4_TOLERANCE,
                          verdict=text("generate.ev.within" if ok else "generate.ev.beyond", lang)))
    return "\n\n".join(lines)
