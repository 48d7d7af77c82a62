"""The Next token tab's figures and summaries, in the visitor's language, from runs.py's results
(every number read from the result; no model runs here)."""
from __future__ import annotations

import html
import unicodedata

import plotly.graph_objects as go

from explorer.locales import text
from explorer.nexttoken import runs
from explorer.plotting import MUTED, OKABE_ITO, SEQUENTIAL, Fig

MARK = {True: "✓", False: "✗"}
# The logit lens's cell texts: a fixed size readable on a phone (Plotly's "auto" size shrinks every
# cell's text to fit the longest token's), each token cut to what fits its cell on the narrowest
# page, a 390 px phone, where the plot area is about LENS_PHONE_PLOT_PX wide; the whole token
# is in the cell's hover. Widths are estimated in em of the text's size, generously (measured in
# Chromium's sans: lower case about 0.48 em, capitals and symbols up to 0.75, CJK and the ellipsis 1).
HEATMAP_TEXT_SIZE = 11
LENS_PHONE_PLOT_PX = 238
# ... and cut for wider plot areas too (layout.meta.fit): the page shows the widest cut its plot
# area holds (static/charts.js), so a projected page reads whole tokens and a phone its cut
LENS_FIT_PX = (LENS_PHONE_PLOT_PX, 480, 720, 960)
NARROW_EM, BROAD_EM, WIDE_EM = 0.5, 0.75, 1.0
BROAD = frozenset("mwMW@%&#<>_")
MIN_CELL_EM = 2.0
ROW_PX = 22                # a layer's row: the text's size and room around it


def _pct(p: float) -> str:
    return f"{100 * p:.2f}%"


def _cell(value: str) -> str:
    """A token inside a Markdown table: as text (escaped, the table's bars made harmless)."""
    return "`" + html.escape(value).replace("|", "&#124;").replace("`", "'") + "`"


def plot_text(value: str) -> str:
    """A token in Plotly's text: its <, > and & as entities (Plotly reads a few HTML tags, and a
    token such as "<br>" must show as itself)."""
    return html.escape(value, quote=False)


def sampler_name(params, lang: str) -> str:
    if params.greedy:
        return text("next.dist.greedy", lang)
    return text("next.dist.sampler", lang, t=f"{params.temperature:g}", k=params.top_k or "—",
                p=f"{params.top_p:g}")


# ----------------------------------------------------------------------------- distribution

def distribution_figures(result: runs.Distribution, lang: str) -> tuple[go.Figure]:
    """Two bars per token: the model's probability and the sampler's renormalised one (0: cut),
    the model's TOP_ROWS tokens then the rest of the mass as one bar."""
    labels = [*(f"{i + 1}. {plot_text(label)}" for i, label in enumerate(result.labels)), text("next.dist.rest", lang)]
    model_p = [row.model_p for row in result.rows] + [result.rest_model]
    kept_p = [row.kept_p for row in result.rows] + [result.rest_kept]
    fig = Fig()
    hover = text("next.fig.bar_hover", lang)
    fig.add_bar(y=labels, x=model_p, orientation="h", name=text("next.fig.model", lang),
                marker=dict(color=OKABE_ITO["blue"]), hovertemplate=hover,
                text=[_pct(p) for p in model_p], textposition="outside", cliponaxis=False)
    fig.add_bar(y=labels, x=kept_p, orientation="h", name=sampler_name(result.kept.params, lang),
                marker=dict(color=OKABE_ITO["orange"]), hovertemplate=hover,
                text=[_pct(p) if p > 0 else text("next.fig.cut", lang) for p in kept_p],
                textposition="outside", cliponaxis=False)
    fig.update_layout(barmode="group", bargap=0.25)
    fig.update_yaxes(autorange="reversed", type="category")
    top = max(max(model_p), max(kept_p))
    fig.update_xaxes(title_text=text("next.fig.probability", lang), tickformat=".0%",
                     tickvals=[v / 5 for v in range(6) if v / 5 <= top + 0.05], range=[0, 1.22 * top + 0.02])
    title = text("next.fig.dist_title", lang, model=result.title)
    return (fig.finish(title, height=140 + 38 * len(labels), lang=lang),)


def distribution_summary(result: runs.Distribution, lang: str) -> str:
    p = result.prediction
    kept = result.kept
    lines = [
        text("next.dist.forward", lang, model=result.title, tokens=len(p.ids), dtype=p.dtype,
             device=result.device, ms=1000 * p.seconds),
        text("next.dist.top", lang, token=_cell(result.top_text), p=_pct(result.rows[0].model_p),
             bits=result.model_entropy, vocab=p.logits.numel()),
        text("next.dist.kept", lang, sampler=sampler_name(kept.params, lang), n=kept.n_kept,
             bits=kept.entropy_bits, shown=result.kept_shown, rows=len(result.rows)),
    ]
    return "\n\n".join(lines)


def distribution_table(result: runs.Distribution, lang: str) -> str:
    """The drawn rows as a table: each token's probability under the model and the sampler."""
    head = text("next.table.head", lang)
    lines = [head, "|---|---|---|---|"]
    for i, (row, label) in enumerate(zip(result.rows, result.labels)):
        kept = _pct(row.kept_p) if row.kept_p > 0 else text("next.fig.cut", lang)
        lines.append(f"| {i + 1} | {_cell(label)} | {_pct(row.model_p)} | {kept} |")
    lines.append(f"| | {text('next.dist.rest', lang)} | {_pct(result.rest_model)} | {_pct(result.rest_kept)} |")
    return "\n".join(lines)


def samples_text(result: runs.Distribution, lang: str) -> str:
    if not result.samples:
        return ""
    params = result.sample_params
    lines = [text("next.samples.head", lang, n=len(result.samples), tokens=result.sample_tokens,
                  sampler=sampler_name(params, lang))]
    for s in result.samples:
        lines.append(text("next.samples.line", lang, seed=s.seed, first=_cell(s.first), p=_pct(s.first_p),
                          text=html.escape(s.text).replace("\n", " ↵ ")))
    return "\n".join(lines)


def draw_distribution(result: runs.Distribution, lang: str) -> tuple:
    """(figure, summary, table, samples): every output of the section, from its result."""
    return (*distribution_figures(result, lang), distribution_summary(result, lang),
            distribution_table(result, lang), samples_text(result, lang))


# ----------------------------------------------------------------------------- logit lens

def _em(char: str) -> float:
    if char == "…" or unicodedata.east_asian_width(char) in "WF":
        return WIDE_EM
    return BROAD_EM if char in BROAD or char.isupper() else NARROW_EM


def fit_cell(value: str, room_em: float) -> str:
    """`value` cut to at most `room_em` of estimated width, its cut marked with an ellipsis."""
    if sum(_em(c) for c in value) <= room_em:
        return value
    kept, used = [], _em("…")
    for char in value:
        used += _em(char)
        if used > room_em:
            break
        kept.append(char)
    return "".join(kept) + "…"


def cell_room(n_positions: int, plot_px: float = LENS_PHONE_PLOT_PX) -> float:
    """The width, in em of the cell text's size, that a cell has in a plot area `plot_px` wide
    (a phone's by default) with n_positions columns (less a few pixels' margin)."""
    return max(MIN_CELL_EM, (plot_px / max(1, n_positions) - 4) / HEATMAP_TEXT_SIZE)


def fitted_cells(cells: list, n_positions: int, plot_px: float) -> list:
    """Each cell's token cut to what its cell holds in a plot area `plot_px` wide."""
    room = cell_room(n_positions, plot_px)
    return [[plot_text(fit_cell(cell, room)) for cell in row] for row in cells]


def lens_heatmap(result: runs.Lens, lang: str) -> go.Figure:
    """Layer (rows, 0 = embeddings at the bottom) x kept position (columns): the lens's top token
    written in each cell, its probability as the colour."""
    layers = list(range(result.n_layers + 1))
    n = len(result.positions)
    fits = [fitted_cells(result.cells, n, px) for px in LENS_FIT_PX]
    fig = Fig()
    fig.add_heatmap(z=result.chart.top_p.tolist(), x=[plot_text(p) for p in result.positions], y=layers,
                    text=fits[0],
                    customdata=[[plot_text(cell) for cell in row] for row in result.cells],
                    texttemplate="%{text}", textfont=dict(size=HEATMAP_TEXT_SIZE),
                    colorscale=SEQUENTIAL, zmin=0, zmax=1,
                    colorbar=dict(title=dict(text=text("next.fig.probability", lang), side="top"), thickness=10,
                                  orientation="h", x=0.5, xanchor="center", y=-0.32, yanchor="top", len=0.8),
                    hovertemplate=text("next.fig.cell_hover", lang))
    fig.update_xaxes(title_text=text("next.fig.position", lang), type="category", tickangle=-45)
    fig.update_yaxes(title_text=text("next.fig.layer", lang), dtick=1 if result.n_layers <= 20 else 2)
    # a title and a subtitle, two short lines: one line of both overran a phone's width (Plotly
    # does not wrap titles, and lifts a top-anchored title's first line out when it has a <br>)
    title = text("next.fig.lens_title", lang, model=result.title)
    figure = fig.finish(title, height=300 + ROW_PX * (result.n_layers + 1), lang=lang)
    figure.update_layout(title_subtitle=dict(text=text("next.fig.lens_subtitle", lang), font=dict(size=13)))
    figure.layout.margin.b = 150          # the tilted position labels, then the colour bar
    figure.layout.margin.t = 76           # the title's two lines (no legend band)
    figure.layout.meta = {**(figure.layout.meta or {}), "fit": {"px": list(LENS_FIT_PX), "text": fits}}
    return figure


def lens_ranks(result: runs.Lens, lang: str) -> go.Figure:
    """The chosen token through depth: its rank (log scale, 1 = the top) above; its probability
    and the lens's agreement with the final prediction below; its lead layer marked."""
    layers = list(range(result.n_layers + 1))
    i = result.chosen
    token = result.choices[i]
    fig = Fig()
    fig.grid(2, 1)
    fig.update_yaxes(1, domain=[0.57, 1.0])     # room between the panels for the top one's axis
    fig.update_yaxes(2, domain=[0.0, 0.43])
    fig.add_scatter(x=layers, y=(result.ranks.rank[:, i] + 1).tolist(), mode="lines+markers",
                    name=text("next.fig.rank", lang), line=dict(color=OKABE_ITO["blue"]),
                    hovertemplate=text("next.fig.rank_hover", lang), **Fig.panel(1))
    fig.add_scatter(x=layers, y=result.ranks.prob[:, i].tolist(), mode="lines+markers",
                    name=text("next.fig.token_p", lang), line=dict(color=OKABE_ITO["orange"]),
                    hovertemplate=text("next.fig.p_hover", lang), **Fig.panel(2))
    fig.add_scatter(x=layers, y=result.agreement.tolist(), mode="lines", name=text("next.fig.agreement", lang),
                    line=dict(color=OKABE_ITO["green"], dash="dash"),
                    hovertemplate=text("next.fig.p_hover", lang), **Fig.panel(2))
    span = [-0.5, result.n_layers + 0.5]
    fig.update_yaxes(1, type="log", autorange="reversed", title_text=text("next.fig.rank_axis", lang))
    fig.update_yaxes(2, range=[0, 1.05], tickformat=".0%", title_text=text("next.fig.probability", lang))
    fig.update_xaxes(1, range=span)
    fig.update_xaxes(2, range=span, title_text=text("next.fig.layer", lang))
    if result.lead is not None:
        for k in (1, 2):
            suffix = "" if k == 1 else str(k)
            fig.add_shape(type="line", xref=f"x{suffix}", x0=result.lead, x1=result.lead,
                          yref=f"y{suffix} domain", y0=0, y1=1, line=dict(color=MUTED, dash="dot"))
        right = result.lead > result.n_layers / 2
        fig.add_annotation(text=plot_text(text("next.fig.lead", lang, layer=result.lead)), x=result.lead, xref="x",
                           y=0.02, yref="y domain", showarrow=False, xanchor="right" if right else "left",
                           yanchor="bottom", font=dict(size=12, color=MUTED))
    return fig.finish(plot_text(text("next.fig.ranks_title", lang, token=token)), height=560, lang=lang)


def lens_summary(result: runs.Lens, lang: str) -> str:
    split = runs.thirds(result.agreement)
    i = result.chosen
    lines = [
        text("next.lens.forward", lang, model=result.title, tokens=result.n_tokens, device=result.device,
             layers=result.n_layers, positions=len(result.positions), ms=1000 * result.forward_seconds,
             lens_ms=1000 * result.lens_seconds),
        text("next.lens.check", lang, diff=f"{result.max_difference:g}", layers=result.n_layers,
             mark=MARK[runs.last_layer_exact(result)]),
    ]
    token = _cell(result.choices[i])
    if result.lead is None:
        lines.append(text("next.lens.no_lead", lang, token=token, rank=int(result.ranks.rank[-1, i]) + 1))
    else:
        lines.append(text("next.lens.lead", lang, token=token, lead=result.lead, layers=result.n_layers,
                          rank0=int(result.ranks.rank[0, i]) + 1, p=_pct(float(result.ranks.prob[-1, i]))))
    lines.append(text("next.lens.agreement", lang, third=split.third, first=100 * split.first,
                      last=100 * split.last, rise=100 * runs.MIN_AGREEMENT_RISE))
    return "\n\n".join(lines)


def draw_lens(result: runs.Lens, lang: str) -> tuple:
    """(heatmap, ranks figure, summary)."""
    return lens_heatmap(result, lang), lens_ranks(result, lang), lens_summary(result, lang)
