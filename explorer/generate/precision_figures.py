"""The precision section in the visitor's language (explorer/generate/precision.py's result):
decode speed against bytes read per token, the price each precision pays against fp32, and the
summary with the continuations side by side.

    speed_fig, price_fig = figures(result, lang); summary(result, lang)"""
from __future__ import annotations

import html

import plotly.graph_objects as go

from explorer.generate.precision import AGREEMENT, CHOICE_TEXT, NEAR_TIE, PrecisionResult, pick
from explorer.locales import text
from explorer.plotting import OKABE_ITO, Fig, empty_figure

MEASURED = OKABE_ITO["blue"]
PREDICTED = OKABE_ITO["orange"]
AGREE = OKABE_ITO["green"]


def _label(row, lang: str) -> str:
    return text("precision.fig.label", lang, weights=row.weights, mb=row.bytes_per_token / 1e6)


def speed_figure(result: PrecisionResult, lang: str) -> go.Figure:
    """Per precision: measured tokens/s beside the roofline's (bandwidth / bytes per token)."""
    title = text("precision.fig.speed", lang)
    labels = [_label(row, lang) for row in result.rows]
    fig = Fig()
    fig.add_bar(x=labels, y=[row.measured for row in result.rows], marker=dict(color=MEASURED),
                name=text("precision.fig.measured", lang),
                text=[f"{row.measured:.0f} ({row.ratio:.2f}x)" for row in result.rows],
                textposition="outside", cliponaxis=False,
                hovertemplate=text("precision.fig.hover_tps", lang))
    if result.bandwidth:
        fig.add_bar(x=labels, y=[row.predicted for row in result.rows], marker=dict(color=PREDICTED),
                    name=text("precision.fig.predicted", lang, gbs=result.bandwidth / 1e9),
                    text=[f"{row.predicted:.0f}" for row in result.rows], textposition="outside",
                    cliponaxis=False, hovertemplate=text("precision.fig.hover_tps", lang))
    fig.update_layout(barmode="group")
    top = max(max(r.measured for r in result.rows), max((r.predicted or 0) for r in result.rows))
    fig.update_yaxes(title_text=text("precision.fig.tps_axis", lang), range=[0, 1.15 * top])
    return fig.finish(title, height=360, lang=lang)


def price_figure(result: PrecisionResult, lang: str) -> go.Figure:
    """Per precision: top-1 agreement with fp32 over the evaluation text, the served default's
    bound drawn across; perplexity and max |delta logit| beside each point."""
    title = text("precision.fig.price", lang, n=result.quality_tokens)
    if not result.rows:
        return empty_figure(text("precision.none", lang), title)
    fig = Fig()
    # points, not bars: the axis starts near the lowest agreement, and a bar's length would
    # then exaggerate the gap
    fig.add_scatter(x=[_label(row, lang) for row in result.rows], y=[100 * row.top1 for row in result.rows],
                    mode="markers+text", marker=dict(color=AGREE, size=16),
                    name=text("precision.fig.top1", lang),
                    text=[text("precision.fig.bar_text", lang, top1=100 * row.top1, ppl=row.perplexity,
                               dlogit=row.max_dlogit) for row in result.rows],
                    textposition="bottom center", cliponaxis=False,
                    hovertemplate=text("precision.fig.hover_top1", lang))
    bound = OKABE_ITO["vermillion"]
    fig.add_shape(type="line", xref="paper", x0=0, x1=1, y0=100 * AGREEMENT, y1=100 * AGREEMENT,
                  line=dict(color=bound, dash="dash"))
    # the line's words in the plot's lower left, in its colour: beside the line they covered
    # the last precision's text (fp32's point, always at 100%, keeps the lower left free)
    fig.add_annotation(text=f"- - {text('precision.fig.bound', lang, pct=100 * AGREEMENT)}",
                       xref="paper", yref="paper", x=0.01, y=0.02, xanchor="left", yanchor="bottom",
                       showarrow=False, font=dict(color=bound))
    fig.update_xaxes(range=[-0.5, len(result.rows) - 0.5])   # each point mid-category, text inside
    # room under the lowest point for its three lines of text
    low = min(min(100 * row.top1 for row in result.rows), 100 * AGREEMENT)
    fig.update_yaxes(title_text=text("precision.fig.top1_axis", lang),
                     range=[max(0.0, low - 0.8 * (100 - low) - 2), 101])
    return fig.finish(title, height=360, lang=lang)


def figures(result: PrecisionResult, lang: str = "en") -> tuple[go.Figure, go.Figure]:
    return speed_figure(result, lang), price_figure(result, lang)


def summary(result: PrecisionResult, lang: str = "en") -> str:
    """What was measured, the rule's pick and the server's precision, and the continuations."""
    chosen = pick(result.rows)
    parts = [text("precision.summary", lang, model=result.model, prompt=result.prompt_tokens,
                  new=result.new_tokens, rounds=result.rounds, threads=result.threads,
                  held=result.quality_tokens, text=result.text,
                  bos=text("precision.summary.bos" if result.bos else "precision.summary.no_bos", lang))]
    rows = [text("precision.table.head", lang)]
    for row in result.rows:
        predicted = f"{row.predicted:.0f}" if row.predicted else "–"
        rows.append(f"| {row.path} | {row.bytes_per_token / 1e6:.0f} MB | {predicted} | "
                    f"{row.measured:.1f} | {row.ratio:.2f}x | {100 * row.top1:.1f}% | "
                    f"{row.flips} ({row.near_tie_flips}) | {row.max_dlogit:.2f} | {row.perplexity:.2f} |")
    parts.append("\n".join(rows))
    parts.append(text("precision.summary.ties", lang, near=result.near_ties, held=result.quality_tokens,
                      tie=NEAR_TIE))
    parts.append(text("precision.summary.pick", lang, pick=chosen, pct=100 * AGREEMENT,
                      serving=result.serving, choice=CHOICE_TEXT))
    if result.kv_rows:
        kv = [text("precision.kv.head", lang, n=result.quality_tokens)]
        for row in result.kv_rows:
            kv.append(f"| {row.kv_format} | {row.bytes_per_token / 1e3:.1f} kB | "
                      f"{100 * row.top1:.1f}% | {row.flips} ({row.near_tie_flips}) | "
                      f"{row.max_dlogit:.3f} | {row.perplexity:.2f} |")
        parts.append("\n".join(kv))
    # the model's own words, escaped: a continuation is shown as text, never as markup
    lines = [text("precision.table.continuation", lang)]
    for row in result.rows:
        said = html.escape(row.continuation).replace("\n", " ").replace("|", "&#124;")
        lines.append(f"| {row.weights} | {said} |")
    parts.append("\n".join(lines))
    return "\n\n".join(parts)
