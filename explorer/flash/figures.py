"""The Flash tab's figures, summaries and tables, in the visitor's language, drawn from stored
results only (a language switch redraws them without any computation).

The tiled path is one figure whose frames (one per tile of the recorded schedule) travel once
in `layout.meta`; a small script in the page (explorer/ui/tabs/flash.py, FRAMES_JS) hands them to
plotly.js with Plotly.addFrames, because Gradio's plot component passes data and layout to
Plotly.react but not frames. The slider and the play button then animate in the browser."""
from __future__ import annotations

import hashlib
import json
import math
import warnings
from typing import Optional

import numpy as np
import plotly.graph_objects as go

from explorer.flash import io as flash_io
from explorer.flash.memory import MemorySweep
from explorer.flash.schedule import (FULL, PARTIAL, SKIPPED, TOLERANCE, FlashSchedule, online_softmax_exact,
                                     tiled_exact)
from explorer.flash.timing import TimingSweep
from explorer.locales import template, text
from explorer.plotting import MUTED, SEQUENTIAL, Fig, colors
from models.attention import MaskSpec

NAIVE_CELLS = 256          # naive matrices larger than this are shown as block means
FRAME_MS = 350             # one tile per frame while playing
# tile colours: pending, skipped (greys), partly masked, full, current (viridis samples)
PENDING, CURRENT = 3, 4
TILE_COLORS = ["#f2f2f2", "#b3b3b3", "#35b779", "#31688e", "#fde725"]
_CODE = {SKIPPED: 1, PARTIAL: 2, FULL: 3}     # schedule status -> colour index (0 = pending)
STATE_KEYS = {SKIPPED: "flash.state.skipped", PARTIAL: "flash.state.partial", FULL: "flash.state.full"}


def mask_text(mask: MaskSpec, lang: str) -> str:
    if mask.window is None:
        return text("flash.mask.causal" if mask.causal else "flash.mask.bidirectional", lang)
    if mask.sinks:
        return text("flash.mask.sinks", lang, s=mask.sinks, w=mask.window)
    return text("flash.mask.window", lang, w=mask.window)


def chip_text(result: FlashSchedule, lang: str) -> str:
    """What one query block's loop holds on chip, with its size."""
    return text("flash.chip", lang, bq=result.block_q, bk=result.block_k, d=result.capture.head_dim,
                kib=sum(result.on_chip.values()) / 1024)


def _pool(matrix: np.ndarray, cells: int) -> tuple[np.ndarray, int]:
    """Mean of f x f blocks (NaN ignored) so that at most cells x cells remain."""
    n = matrix.shape[0]
    f = max(1, math.ceil(n / cells))
    if f == 1:
        return matrix, 1
    size = math.ceil(n / f) * f
    padded = np.full((size, size), np.nan)
    padded[:n, :n] = matrix
    with warnings.catch_warnings():  # an all-masked block's mean is NaN, drawn blank
        warnings.simplefilter("ignore", RuntimeWarning)
        return np.nanmean(padded.reshape(size // f, f, size // f, f), axis=(1, 3)), f


def naive_figure(result: FlashSchedule, lang: str) -> go.Figure:
    """The naive path's two n x n matrices, S (masked entries blank) and P."""
    cap = result.capture
    scores, f = _pool(result.scores, NAIVE_CELLS)
    probs, _ = _pool(result.probs, NAIVE_CELLS)
    axis = (np.arange(scores.shape[0]) * f).tolist()
    fig = Fig(panels=(text("flash.fig.scores_panel", lang), text("flash.fig.probs_panel", lang)))
    hover = template("flash.fig.naive_hover", lang)
    fig.add_heatmap(z=np.round(scores, 4).tolist(), x=axis, y=axis, colorscale=SEQUENTIAL,
                    colorbar=dict(title=dict(text=text("flash.fig.score", lang)), x=0.45, len=0.9),
                    hovertemplate=hover.format(what="S") + "<extra></extra>", xaxis="x", yaxis="y")
    fig.add_heatmap(z=np.round(probs, 5).tolist(), x=axis, y=axis, colorscale=SEQUENTIAL, zmin=0,
                    colorbar=dict(title=dict(text=text("flash.fig.prob", lang)), x=1.0, len=0.9),
                    hovertemplate=hover.format(what="P") + "<extra></extra>", xaxis="x2", yaxis="y2")
    for i in (1, 2):
        fig.update_xaxes(i, title_text=text("flash.fig.key_axis", lang))
        fig.update_yaxes(i, autorange="reversed")
    fig.update_yaxes(1, title_text=text("flash.fig.query_axis", lang))
    pooled = text("flash.fig.pooled", lang, f=f) if f > 1 else ""
    return fig.finish(text("flash.fig.naive_title", lang, layer=cap.layer, head=cap.head, n=cap.n,
                           mask=mask_text(cap.mask, lang), pooled=pooled), height=470, lang=lang)


def _frame_grid(result: FlashSchedule, upto: int) -> list:
    """The tile grid after step `upto`: 0 pending, 1 skipped, 2 partial, 3 full, 4 current."""
    nq, nk = result.grid
    grid = np.zeros((nq, nk), dtype=np.int8)
    for (qi, kj), status in zip(result.steps[:upto + 1], result.status[:upto + 1]):
        grid[qi, kj] = _CODE[int(status)]
    qi, kj = result.steps[upto]
    grid[qi, kj] = CURRENT
    return grid.tolist()


def _traffic(result: FlashSchedule, upto: Optional[int]) -> list:
    """Bytes per category [Q read, K/V read, O written, S/P traffic]: the tiled path's after
    step `upto`, or the naive path's whole run (upto None)."""
    cap, elem = result.capture, 4
    n, d = cap.n, cap.head_dim
    if upto is None:
        parts = flash_io.naive_parts(n, n, d, elem)
        return [parts["q"], parts["kv"], parts["o"], parts["sp"]]
    q_read = kv_read = 0
    for (qi, kj), status, read in zip(result.steps[:upto + 1], result.status[:upto + 1],
                                      result.step_read[:upto + 1]):
        q_here = elem * min(result.block_q, n - qi * result.block_q) * d if kj == 0 else 0
        q_read += q_here
        kv_read += int(read) - q_here
    return [q_read, kv_read, int(result.step_written[:upto + 1].sum()), 0]


def tiles_figure(result: FlashSchedule, lang: str) -> go.Figure:
    """The tiled schedule, one frame per tile: the grid of tiles (pending, skipped, partly
    masked, full, current) and the bytes moved so far next to the naive path's totals."""
    fig = _tile_panels(result, lang)
    _add_player(fig, result, lang)
    nq, nk = result.grid
    bq, bk = result.block_q, result.block_k
    out = fig.finish(text("flash.fig.tiles_title", lang, nq=nq, nk=nk, bq=bq, bk=bk), height=720, lang=lang)
    out.layout.margin.b = 270
    return out


def _tile_panels(result: FlashSchedule, lang: str) -> Fig:
    """The two panels at the first step: the grid of tiles and the bytes moved so far next to
    the naive path's totals, with the tile colours' legend."""
    cap = result.capture
    n, bq, bk = cap.n, result.block_q, result.block_k
    nq, nk = result.grid
    final = {(int(qi), int(kj)): int(s) for (qi, kj), s in zip(result.steps, result.status)}
    cell_text = [[text("flash.fig.tile_cell", lang, q0=qi * bq, q1=min(n, (qi + 1) * bq) - 1,
                       k0=kj * bk, k1=min(n, (kj + 1) * bk) - 1,
                       state=text(STATE_KEYS[final[(qi, kj)]], lang))
                  for kj in range(nk)] for qi in range(nq)]
    scale = [pair for i, c in enumerate(TILE_COLORS)
             for pair in ([max(0, i - 0.5) / 4, c], [min(4, i + 0.5) / 4, c])]
    categories = [text(k, lang) for k in ("flash.fig.q_read", "flash.fig.kv_read",
                                          "flash.fig.o_written", "flash.fig.sp_traffic")]
    fig = Fig(panels=(text("flash.fig.grid_panel", lang), text("flash.fig.traffic_panel", lang)))
    fig.add_heatmap(z=_frame_grid(result, 0), x=list(range(nk)), y=list(range(nq)), zmin=0, zmax=4,
                    colorscale=scale, showscale=False, xgap=1, ygap=1, customdata=cell_text,
                    hovertemplate=template("flash.fig.tile_hover", lang).format() + "<extra></extra>",
                    xaxis="x", yaxis="y")
    fig.add_bar(y=categories, x=_traffic(result, 0), name=text("flash.fig.tiled_so_far", lang),
                orientation="h", marker=dict(color=colors(3)[0]), xaxis="x2", yaxis="y2",
                hovertemplate="%{y}: %{x:,} B<extra></extra>")
    fig.add_bar(y=categories, x=_traffic(result, None), name=text("flash.fig.naive_total", lang),
                orientation="h", marker=dict(color=colors(3)[2]), xaxis="x2", yaxis="y2",
                hovertemplate="%{y}: %{x:,} B<extra></extra>")
    # legend of the tile colours: invisible markers, one per state
    for code, key in ((1, "flash.state.skipped"), (2, "flash.state.partial"), (3, "flash.state.full"),
                      (4, "flash.state.current"), (0, "flash.state.pending")):
        fig.add_scatter(x=[None], y=[None], mode="markers", name=text(key, lang), xaxis="x", yaxis="y",
                        marker=dict(symbol="square", size=12, color=TILE_COLORS[code]))
    row_block = result.row.q_block
    fig.add_shape(type="rect", xref="x", yref="y", x0=-0.5, x1=nk - 0.5, y0=row_block - 0.5,
                  y1=row_block + 0.5, line=dict(color="#d55e00", width=2, dash="dot"))
    fig.update_xaxes(1, title_text=text("flash.fig.kblock_axis", lang), range=[-0.5, nk - 0.5],
                     dtick=max(1, nk // 16), showgrid=False, side="top")
    fig.update_yaxes(1, title_text=text("flash.fig.qblock_axis", lang), range=[nq - 0.5, -0.5],
                     dtick=max(1, nq // 16), showgrid=False, domain=[0, 0.84])
    fig.update_xaxes(2, title_text=text("flash.fig.bytes", lang), type="log", side="top")
    fig.update_yaxes(2, autorange="reversed", domain=[0, 0.84])
    # the legend goes under the player: above the panels sit their titles and top axes
    fig.update_layout(barmode="group", legend=dict(y=-0.4, yanchor="top"))
    fig.update_xaxes(1, domain=[0.0, 0.42])
    fig.update_xaxes(2, domain=[0.64, 1.0])
    return fig


def _add_player(fig: Fig, result: FlashSchedule, lang: str) -> None:
    """One frame per step (the grid, the bytes so far, the step's note), a play / pause button
    and a slider over the steps."""
    n, bq, bk = result.capture.n, result.block_q, result.block_k
    steps = len(result.steps)
    base_notes = list(fig.layout.get("annotations", []))
    chip = text("flash.fig.on_chip", lang, chip=chip_text(result, lang))

    def notes(i: int) -> list:
        qi, kj = (int(x) for x in result.steps[i])
        status = int(result.status[i])
        step = text("flash.fig.step", lang, step=i + 1, steps=steps, qi=qi, kj=kj, q0=qi * bq,
                    q1=min(n, (qi + 1) * bq) - 1, k0=kj * bk, k1=min(n, (kj + 1) * bk) - 1,
                    state=text(STATE_KEYS[status], lang))
        return base_notes + [
            dict(text=step, x=0, y=-0.05, xref="paper", yref="paper", xanchor="left", yanchor="top",
                 showarrow=False, font=dict(size=13)),
            dict(text=chip, x=0, y=-0.11, xref="paper", yref="paper", xanchor="left", yanchor="top",
                 showarrow=False, font=dict(size=12, color=MUTED))]

    frames = [dict(name=str(i), data=[dict(type="heatmap", z=_frame_grid(result, i)),
                                      dict(type="bar", x=_traffic(result, i))],
                   traces=[0, 1], layout=dict(annotations=notes(i))) for i in range(steps)]
    # the page script re-adds frames when this changes: a digest of the frames themselves
    token = hashlib.sha1(json.dumps(frames, ensure_ascii=False).encode()).hexdigest()[:16]
    play = dict(frame=dict(duration=FRAME_MS, redraw=True), fromcurrent=True,
                transition=dict(duration=0), mode="immediate")
    fig.update_layout(
        annotations=notes(0), meta=dict(flash_token=token, flash_frames=frames),
        updatemenus=[dict(type="buttons", direction="left", x=0, y=-0.18, xanchor="left", yanchor="top",
                          showactive=False, pad=dict(t=4, r=8),
                          buttons=[dict(label=text("flash.fig.play", lang), method="animate",
                                        args=[None, play]),
                                   dict(label=text("flash.fig.pause", lang), method="animate",
                                        args=[[None], dict(frame=dict(duration=0, redraw=False),
                                                           mode="immediate")])])],
        sliders=[dict(active=0, x=0.2, y=-0.17, len=0.8, yanchor="top", pad=dict(t=4),
                      currentvalue=dict(prefix=text("flash.fig.slider_prefix", lang), font=dict(size=12)),
                      steps=[dict(label=str(i + 1), method="animate",
                                  args=[[str(i)], dict(mode="immediate", frame=dict(duration=0, redraw=True),
                                                       transition=dict(duration=0))])
                             for i in range(steps)])])


def row_figure(result: FlashSchedule, lang: str) -> go.Figure:
    """One query row through its key blocks: running max, normalizer, rescale, partial error."""
    row = result.row
    blocks = list(range(len(row.running_max)))
    c = colors(3)
    fig = Fig()
    quads = (("x", "y", [0.0, 0.44], [0.58, 0.93]), ("x2", "y2", [0.56, 1.0], [0.58, 0.93]),
             ("x3", "y3", [0.0, 0.44], [0.0, 0.40]), ("x4", "y4", [0.56, 1.0], [0.0, 0.40]))
    titles = ("flash.fig.row_max", "flash.fig.row_norm", "flash.fig.row_rescale", "flash.fig.row_error")
    for i, ((xa, ya, xd, yd), key) in enumerate(zip(quads, titles), start=1):
        fig.update_layout(**{f"xaxis{'' if i == 1 else i}": dict(domain=xd, anchor=ya),
                             f"yaxis{'' if i == 1 else i}": dict(domain=yd, anchor=xa)})
        fig.add_annotation(text=text(key, lang), x=sum(xd) / 2, y=yd[1], xref="paper", yref="paper",
                           xanchor="center", yanchor="bottom", showarrow=False, font=dict(size=13))
        fig.update_xaxes(i, title_text=text("flash.fig.after_block", lang), dtick=1 if len(blocks) <= 16 else None)
    hover = template("flash.fig.row_hover", lang).format() + "<extra></extra>"
    finite = lambda a: [None if not np.isfinite(v) else float(v) for v in a]   # noqa: E731
    tiled = text("flash.fig.tiled_row", lang)
    whole = text("flash.fig.full_row", lang)
    fig.add_scatter(x=blocks, y=finite(row.running_max), mode="lines+markers", name=tiled,
                    line=dict(color=c[0]), hovertemplate=hover, xaxis="x", yaxis="y")
    fig.add_scatter(x=[blocks[0], blocks[-1]], y=[row.full_max] * 2, mode="lines", name=whole,
                    line=dict(color=c[2], dash="dash"), hovertemplate=hover, xaxis="x", yaxis="y")
    fig.add_scatter(x=blocks, y=finite(row.normalizer), mode="lines+markers", showlegend=False,
                    line=dict(color=c[0]), hovertemplate=hover, xaxis="x2", yaxis="y2")
    fig.add_scatter(x=[blocks[0], blocks[-1]], y=[row.full_normalizer] * 2, mode="lines", showlegend=False,
                    line=dict(color=c[2], dash="dash"), hovertemplate=hover, xaxis="x2", yaxis="y2")
    # a skipped tile leaves the state alone (factor 1): drawn grey, as in the tile grid
    fig.add_bar(x=blocks, y=finite(row.rescale), showlegend=False,
                marker=dict(color=[c[1] if done else TILE_COLORS[1] for done in row.computed]),
                hovertemplate=hover, xaxis="x3", yaxis="y3")
    fig.add_scatter(x=blocks, y=finite(np.maximum(row.partial_error, 1e-12)), mode="lines+markers",
                    showlegend=False, line=dict(color=c[0]), hovertemplate=hover, xaxis="x4", yaxis="y4")
    fig.update_yaxes(3, range=[0, 1.05])
    fig.update_yaxes(4, type="log", exponentformat="power")
    return fig.finish(text("flash.fig.row_title", lang, row=row.row, qi=row.q_block), height=560, lang=lang)


def _path_lines(fig: Fig, ns: list, values_by_path: dict, hover: str, lang: str) -> None:
    """One line per attention path, named in `lang`, coloured by the path's place in the sweep."""
    for (path, values), color in zip(values_by_path.items(), colors(len(values_by_path))):
        name = text(f"flash.path.{path}", lang)
        fig.add_scatter(x=ns, y=values, mode="lines+markers", name=name, line=dict(color=color),
                        hovertemplate=hover.format(name=name) + "<extra></extra>")


def _sweep_axes(fig: Fig, ns: list, y_title: str, lang: str, **y_axis) -> None:
    """A sweep's axes: n on a log scale with a tick per measured n, the legend under the plot, a
    log y axis."""
    fig.update_xaxes(title_text=text("flash.fig.n_axis", lang), type="log", tickvals=ns)
    fig.update_layout(legend=dict(y=-0.2, yanchor="top"))
    fig.update_yaxes(title_text=y_title, type="log", **y_axis)


def io_figure(sweep: flash_io.IOSweep, lang: str, paper: Optional[flash_io.IOSweep] = None,
              sram_kib: Optional[float] = None) -> go.Figure:
    """Bytes moved vs n on log axes: naive, tiled counted, tiled with no skipping, and (if given)
    tiled with the blocks the paper picks for the on-chip size."""
    c = colors(4)
    ns = list(sweep.ns)
    fig = Fig()
    series = [(text("flash.fig.io_naive", lang), [t.total for t in sweep.naive], c[0], "solid"),
              (text("flash.fig.io_counted", lang, bq=sweep.block_q, bk=sweep.block_k),
               [t.total for t in sweep.counted], c[1], "solid"),
              (text("flash.fig.io_formula", lang, bq=sweep.block_q, bk=sweep.block_k),
               [t.total for t in sweep.formula], c[1], "dot")]
    if paper is not None:
        series.append((text("flash.fig.io_paper", lang, bq=paper.block_q, bk=paper.block_k, kib=sram_kib),
                       [t.total for t in paper.counted], c[2], "solid"))
    hover = template("flash.fig.io_hover", lang)
    for name, ys, color, dash in series:
        fig.add_scatter(x=ns, y=ys, mode="lines+markers", name=name, line=dict(color=color, dash=dash),
                        hovertemplate=hover.format(name=name) + "<extra></extra>")
    _sweep_axes(fig, ns, text("flash.fig.bytes_axis", lang), lang, exponentformat="SI")
    return fig.finish(text("flash.fig.io_title", lang, d=sweep.d, mask=mask_text(sweep.mask, lang)),
                      height=520, lang=lang)


def memory_figure(sweep: MemorySweep, lang: str) -> go.Figure:
    ns = list(sweep.ns)
    fig = Fig()
    hover = template("flash.fig.io_hover", lang)
    _path_lines(fig, ns, {path: [max(b, 1) for b in extra] for path, extra in sweep.extra.items()},
                hover, lang)
    name = text("flash.fig.one_matrix", lang)
    fig.add_scatter(x=ns, y=list(sweep.score_matrix), mode="lines", name=name,
                    line=dict(color=MUTED, dash="dash"), hovertemplate=hover.format(name=name) + "<extra></extra>")
    _sweep_axes(fig, ns, text("flash.fig.mem_axis", lang), lang, exponentformat="SI")
    return fig.finish(text("flash.fig.mem_title", lang, device=sweep.device, d=sweep.d,
                           mask=mask_text(sweep.mask, lang)), height=520, lang=lang)


def timing_figure(sweep: TimingSweep, lang: str) -> go.Figure:
    ns = list(sweep.ns)
    fig = Fig()
    hover = template("flash.fig.time_hover", lang)
    _path_lines(fig, ns, {path: [t * 1e3 for t in seconds] for path, seconds in sweep.seconds.items()},
                hover, lang)
    if sweep.crossover is not None:
        fig.add_shape(type="line", x0=sweep.crossover, x1=sweep.crossover, y0=0, y1=1, yref="paper",
                      line=dict(color=MUTED, dash="dot"))
    _sweep_axes(fig, ns, text("flash.fig.ms_axis", lang), lang)
    return fig.finish(text("flash.fig.time_title", lang, device=sweep.device, d=sweep.d,
                           bq=sweep.block_q, bk=sweep.block_k, mask=mask_text(sweep.mask, lang)),
                      height=520, lang=lang)


def figures(result: FlashSchedule, lang: str) -> tuple[go.Figure, go.Figure, go.Figure]:
    """(naive, tiled animation, followed row) of one head's schedule."""
    return naive_figure(result, lang), tiles_figure(result, lang), row_figure(result, lang)


# ----------------------------------------------------------------------------- summaries and tables
def _bytes(count: float) -> str:
    for unit, size in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if count >= size:
            return f"{count / size:.2f} {unit}"
    return f"{int(count)} B"


def _diff(value: float) -> str:
    return f"{value:.1e}"


def summary(result: FlashSchedule, lang: str) -> str:
    """The head's numbers in words: tiles, exactness (C16), traffic, the followed row (C17)."""
    cap, row, status = result.capture, result.row, result.status
    na = text("flash.na", lang)
    n, d = cap.n, cap.head_dim
    return text(
        "flash.summary", lang, layer=cap.layer, head=cap.head, kv_head=cap.kv_head, n=n, d=d,
        mask=mask_text(cap.mask, lang), bq=result.block_q, bk=result.block_k,
        tiles=len(status), computed=int((status != SKIPPED).sum()),
        partial=int((status == PARTIAL).sum()), skipped=int((status == SKIPPED).sum()),
        match=text("flash.yes" if result.skips_match_mask else "flash.no", lang),
        tn=_diff(result.diff_tiled_naive),
        ts=na if result.diff_tiled_sdpa is None else _diff(result.diff_tiled_sdpa),
        ns=na if result.diff_naive_sdpa is None else _diff(result.diff_naive_sdpa),
        naive_bytes=_bytes(result.naive_traffic.total), sp_bytes=_bytes(flash_io.naive_parts(n, n, d)["sp"]),
        tiled_bytes=_bytes(result.tiled_traffic.total), formula_bytes=_bytes(result.formula_traffic.total),
        out_bytes=_bytes(result.tiled_traffic.written), chip=chip_text(result, lang),
        row=row.row, m=f"{float(row.running_max[-1]):.6g}", full_m=f"{row.full_max:.6g}",
        dm=_diff(row.max_diff), l=f"{float(row.normalizer[-1]):.6g}", full_l=f"{row.full_normalizer:.6g}",
        dl=_diff(row.normalizer_rel_diff), dout=_diff(row.out_diff), rises=row.rises,
        min_rescale=f"{float(row.rise_rescales.min()) if row.rises else 1.0:.3g}",
        capture_s=cap.seconds, compute_s=result.seconds) + "\n\n" + verdicts(result, lang)


def verdicts(result: FlashSchedule, lang: str) -> str:
    """C16's exactness and C17's online softmax on this head, each chosen by its criterion."""
    row = result.row
    exact = text("flash.verdict.exact.ok" if tiled_exact(result) else "flash.verdict.exact.off", lang,
                 diff=_diff(result.diff_tiled_naive), tol=_diff(TOLERANCE))
    worst = max(row.max_diff / max(1.0, abs(row.full_max)), row.normalizer_rel_diff, row.out_diff)
    if online_softmax_exact(row):
        online = text("flash.verdict.row.ok", lang, row=row.row, rises=row.rises, diff=_diff(worst),
                      tol=_diff(TOLERANCE))
    elif row.rises < 1:
        online = text("flash.verdict.row.no_rise", lang, row=row.row)
    else:
        online = text("flash.verdict.row.off", lang, row=row.row, diff=_diff(worst), tol=_diff(TOLERANCE))
    return exact + " " + online


def exact_table(cases, lang: str):
    """The random cases, one row each, headers in `lang` (a pandas DataFrame)."""
    import pandas as pd

    return pd.DataFrame({
        text("flash.col.n", lang): [c.n for c in cases],
        text("flash.col.blocks", lang): [f"{c.block_q} × {c.block_k}" for c in cases],
        text("flash.col.mask", lang): [mask_text(c.mask, lang) for c in cases],
        text("flash.col.tn", lang): [_diff(c.tiled_vs_naive) for c in cases],
        text("flash.col.ts", lang): [_diff(c.tiled_vs_sdpa) for c in cases],
        text("flash.col.ns", lang): [_diff(c.naive_vs_sdpa) for c in cases],
    })


def exact_summary(cases, lang: str) -> str:
    worst = max(max(c.tiled_vs_naive, c.tiled_vs_sdpa, c.naive_vs_sdpa) for c in cases)
    off = sum(max(c.tiled_vs_naive, c.tiled_vs_sdpa, c.naive_vs_sdpa) > TOLERANCE for c in cases)
    verdict = (text("flash.exact.verdict.ok", lang, tol=_diff(TOLERANCE)) if not off else
               text("flash.exact.verdict.off", lang, off=off, worst=_diff(worst), tol=_diff(TOLERANCE)))
    return text("flash.exact.summary", lang, cases=len(cases),
                tn=_diff(max(c.tiled_vs_naive for c in cases)),
                ts=_diff(max(c.tiled_vs_sdpa for c in cases)),
                ns=_diff(max(c.naive_vs_sdpa for c in cases))) + " " + verdict


def traffic_summary(result: flash_io.TrafficResult, lang: str) -> str:
    counted, paper, measured, kib = result.counted, result.paper, result.memory, result.sram_kib
    n, d = counted.ns[-1], counted.d
    chip = sum(flash_io.on_chip_bytes(counted.block_q, counted.block_k, d).values())
    pchip = sum(flash_io.on_chip_bytes(paper.block_q, paper.block_k, d).values())
    extra = measured.extra
    m0, m1 = measured.ns[0], measured.ns[-1]
    out = text(
        "flash.io.summary", lang, n=n, d=d, naive=_bytes(counted.naive[-1].total),
        bq=counted.block_q, bk=counted.block_k, tiled=_bytes(counted.counted[-1].total),
        ratio=counted.naive[-1].total / counted.counted[-1].total,
        chip=_bytes(chip) + (text("flash.io.over", lang) if chip > kib * 1024 else ""), kib=kib,
        pbq=paper.block_q, pbk=paper.block_k, pchip=_bytes(pchip), paper=_bytes(paper.counted[-1].total),
        device=measured.device, mem_naive=_bytes(extra["naive"][-1]),
        matrices=extra["naive"][-1] / (4 * m1 * m1), mem_tiled=_bytes(extra["tiled"][-1]),
        mem_sdpa=_bytes(extra["sdpa"][-1]), n0=m0, mem_n=m1, growth_n=m1 / m0, growth_n2=(m1 / m0) ** 2,
        g_naive=extra["naive"][-1] / max(1, extra["naive"][0]),
        g_tiled=extra["tiled"][-1] / max(1, extra["tiled"][0]), seconds=result.seconds)
    if "compiled" in extra:
        out += " " + text("flash.io.compiled", lang, mem=_bytes(extra["compiled"][-1]),
                          growth=extra["compiled"][-1] / max(1, extra["compiled"][0]))
    return out + "\n\n" + scaling_text(flash_io.scaling(counted, measured), lang)


def scaling_text(found: flash_io.Scaling, lang: str) -> str:
    """C16's scaling verdict: what naive and tiled write back and hold, as powers of n."""
    exponents = [found.written_naive, found.written_tiled, found.memory_naive, found.memory_tiled]
    if any(math.isnan(e) for e in exponents):
        return text("flash.io.verdict.one_n", lang)
    return text("flash.io.verdict.ok" if found.holds else "flash.io.verdict.off", lang,
                wn=found.written_naive, wt=found.written_tiled, mn=found.memory_naive, mt=found.memory_tiled,
                linear=flash_io.LINEAR_MAX, quadratic=flash_io.QUADRATIC_MIN)


def traffic_figures(result: flash_io.TrafficResult, lang: str) -> tuple[go.Figure, go.Figure]:
    return (io_figure(result.counted, lang, paper=result.paper, sram_kib=result.sram_kib),
            memory_figure(result.memory, lang))


def timing_summary(sweep: TimingSweep, lang: str) -> str:
    ms = {path: sweep.seconds[path][-1] * 1e3 for path in sweep.seconds}
    if sweep.crossover is not None:
        crossover = text("flash.time.crossover", lang, n=sweep.crossover)
    else:
        crossover = text("flash.time.no_crossover", lang, n=sweep.ns[-1], ratio=ms["tiled"] / ms["naive"])
    out = text("flash.time.summary", lang, n=sweep.ns[-1], naive=ms["naive"], tiled=ms["tiled"],
               sdpa=ms["sdpa"], tiles=sweep.tiles[-1], bq=sweep.block_q, bk=sweep.block_k,
               crossover=crossover)
    if "compiled" in ms:
        out += " " + text("flash.time.compiled", lang, ms=ms["compiled"], ratio=ms["compiled"] / ms["naive"])
    return out
