"""The class game's reveal, drawn (explorer/classroom/game.py holds the round; every number here
is the round's own): the class's named guesses counted over the model's top tokens'
probabilities, the logit lens's rank of the class's top guess (and of the model's own top token,
and a sampled round's drawn token) after every layer, and the sentences that say the same.

Token texts come from the tokenizer (a student's typed word reaches a page only as a token the
tally names, never as typed); they are shown as text: escaped for Plotly's labels (which read a
few HTML tags) and for Markdown.
"""
from __future__ import annotations

import html
from typing import Optional

import plotly.graph_objects as go

from explorer.locales import text
from explorer.plotting import OKABE_ITO, Fig, empty_figure

_PUNCTUATION = frozenset("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~")
LENS_LAYERS_SAID = 7     # layers the sentence names (evenly spread, the last included)


def shown(token_text: str) -> str:
    """A token's text with its spaces, newlines and tabs made visible (∅ for none)."""
    return token_text.replace(" ", "␣").replace("\n", "↵").replace("\t", "⇥") or "∅"


def said(token_text: str) -> str:
    """A token quoted in Markdown as text: every ASCII punctuation character escaped."""
    return "“" + "".join("\\" + ch if ch in _PUNCTUATION else ch for ch in shown(token_text)) + "”"


def _labels(tokens: list[int], texts: dict) -> list[str]:
    """Unique axis labels (two tokens that read the same get their ids)."""
    plain = [shown(texts.get(t, "?")) for t in tokens]
    return [html.escape(p if plain.count(p) == 1 else f"{p} #{t}") for p, t in zip(plain, tokens)]


def percent(p: float) -> str:
    return f"{100 * p:.3g} %" if p >= 0.001 else f"{100 * p:.2g} %"


def tally_figure(view: dict, lang: str, height: int = 380) -> go.Figure:
    """Bars of the model's probability for its top tokens and the class's named guesses, and
    beside each the number of students who guessed it (right axis)."""
    reveal = view["reveal"]
    tally = reveal.tally
    top = dict(reveal.top)
    named = {t: (n, p) for t, n, p in tally.named}
    tokens = list(top) + [t for t in named if t not in top]
    probs = [top.get(t, named.get(t, (0, 0.0))[1]) for t in tokens]
    counts = [named.get(t, (0, 0.0))[0] for t in tokens]
    x = _labels(tokens, reveal.labels)
    fig = Fig()
    fig.add_bar(x=x, y=[100 * p for p in probs], name=text("game.fig.model", lang), offsetgroup="model",
                marker=dict(color=OKABE_ITO["blue"]),
                hovertemplate=text("game.fig.model_hover", lang) + "<extra></extra>")
    fig.add_bar(x=x, y=counts, name=text("game.fig.class", lang), offsetgroup="class", yaxis="y2",
                marker=dict(color=OKABE_ITO["orange"]),
                hovertemplate=text("game.fig.class_hover", lang) + "<extra></extra>")
    fig.update_layout(barmode="group")
    fig.update_xaxes(title_text=text("game.fig.x", lang), type="category", tickangle=-35)
    fig.update_yaxes(title_text=text("game.fig.y", lang), rangemode="tozero")
    fig.layout["yaxis2"] = dict(title=dict(text=text("game.fig.y2", lang)), overlaying="y", side="right",
                                rangemode="tozero", showgrid=False,
                                dtick=1 if max(counts, default=0) <= 8 else None)
    title = text("game.fig.title", lang, n=tally.total, others=tally.others)
    alt = text("game.fig.alt", lang, n=tally.total, others=tally.others, named=len(named),
               top=shown(reveal.labels.get(tokens[0], "?")), p=percent(probs[0]))
    figure = fig.finish(title, height=height, alt=alt)
    figure.layout.margin.r = 60
    return figure


def _role_names(view: dict, lang: str) -> dict:
    reveal, names = view["reveal"], {}
    if view.get("drawn") is not None:
        names[view["drawn"]] = text("game.lens.drawn", lang)
    names[view["greedy"]] = text("game.lens.model_top", lang)
    if reveal.tally.class_top is not None:
        names[reveal.tally.class_top] = text("game.lens.class_top", lang) \
            if reveal.tally.class_top != view["greedy"] else text("game.lens.both", lang)
    return names


def lens_figure(view: dict, lang: str, height: int = 340) -> go.Figure:
    """The lens's rank of each named token (1 = the lens's top) after every layer, on a log
    axis; the layer from which the class's top guess stays the top one, marked."""
    reveal = view["reveal"]
    lens = reveal.lens
    if not lens.rank:
        return empty_figure(text("game.lens.none", lang), height=height)
    names = _role_names(view, lang)
    colours = [OKABE_ITO["orange"], OKABE_ITO["blue"], OKABE_ITO["green"]]
    fig = Fig()
    layers = list(range(lens.n_layers + 1))
    order = sorted(range(len(lens.tokens)), key=lambda i: lens.tokens[i] != reveal.tally.class_top)
    for k, i in enumerate(order):
        token = lens.tokens[i]
        fig.add_scatter(x=layers, y=[row[i] + 1 for row in lens.rank], mode="lines+markers",
                        name=f"{names.get(token, '')} {html.escape(shown(reveal.labels.get(token, '?')))}",
                        line=dict(color=colours[k % 3], width=3 if k == 0 else 2),
                        customdata=[[100 * row[i]] for row in lens.prob],
                        hovertemplate=text("game.lens.hover", lang) + "<extra></extra>")
    top = reveal.tally.class_top
    lead = lens.lead[lens.of(top)] if top is not None and lens.of(top) is not None else None
    if lead is not None:
        fig.add_shape(type="line", x0=lead, x1=lead, y0=0, y1=1, yref="paper",
                      line=dict(color=OKABE_ITO["orange"], dash="dash", width=2))
    fig.update_layout(showlegend=True)          # one line too: its legend names the token
    fig.update_xaxes(title_text=text("game.lens.x", lang, layers=lens.n_layers), range=[-0.5, lens.n_layers + 0.5])
    fig.update_yaxes(title_text=text("game.lens.y", lang), type="log", autorange="reversed")
    return fig.finish(text("game.lens.title", lang), height=height, lang=lang)


def _ranks_line(lens, i: int, lang: str) -> str:
    n = lens.n_layers
    picks = sorted({round(k * n / (LENS_LAYERS_SAID - 1)) for k in range(LENS_LAYERS_SAID)})
    return " · ".join(text("game.lens.rank_at", lang, layer=layer, rank=f"{lens.rank[layer][i] + 1:,}")
                      for layer in picks)


def lens_sentence(view: dict, lang: str) -> str:
    """Where in depth the model would have agreed with the class (lead_layer, or never)."""
    reveal = view["reveal"]
    lens, top = reveal.lens, reveal.tally.class_top
    model_top = said(reveal.labels.get(view["greedy"], "?"))
    i_model = lens.of(view["greedy"])
    model_lead = lens.lead[i_model] if i_model is not None else None
    model_line = text("game.lens.model_lead", lang, token=model_top, layer=model_lead, layers=lens.n_layers) \
        if model_lead is not None else ""
    if top is None or lens.of(top) is None:
        return " ".join(filter(None, [text("game.lens.no_top", lang), model_line]))
    i = lens.of(top)
    ranks = _ranks_line(lens, i, lang)
    lead: Optional[int] = lens.lead[i]
    if lead is None:
        last = lens.rank[-1][i] + 1
        said_ = text("game.lens.never", lang, token=said(reveal.labels.get(top, "?")), ranks=ranks,
                     rank=f"{last:,}", model=model_top)
    else:
        said_ = text("game.lens.agrees", lang, token=said(reveal.labels.get(top, "?")), ranks=ranks,
                     layer=lead, layers=lens.n_layers)
    return " ".join(filter(None, [said_, model_line]))


def summary(view: dict, lang: str) -> str:
    """The reveal in words: the model's top and the class's, each with its probability; the
    drawn token of a sampled round; the guesses not named; the lens's sentence."""
    reveal, setup = view["reveal"], view["setup"]
    tally, labels, probs = reveal.tally, reveal.labels, dict(reveal.top)
    lines = [text("game.said.model_top", lang, token=said(labels.get(view["greedy"], "?")),
                  p=percent(view["probs"].get(view["greedy"], 0.0)))]
    if tally.total == 0:
        lines.append(text("game.said.no_guesses", lang))
    elif tally.class_top is None:
        lines.append(text("game.said.no_class_top", lang, n=tally.total))
    else:
        count = next(n for t, n, _ in tally.named if t == tally.class_top)
        p = next(p for t, _, p in tally.named if t == tally.class_top)
        key = "game.said.class_agrees" if tally.class_top == view["greedy"] else "game.said.class_top"
        lines.append(text(key, lang, token=said(labels.get(tally.class_top, "?")), count=count,
                          n=tally.total, p=percent(p)))
    if tally.total:
        lines.append(text("game.said.mass", lang, p=percent(tally.class_mass), others=tally.others))
    if view.get("drawn") is not None:
        drawn = view["drawn"]
        lines.append(text("game.said.drawn", lang, token=said(labels.get(drawn, "?")),
                          temperature=f"{setup.temperature:g}", seed=setup.seed,
                          p=percent(view["drawn_p"]), model_p=percent(view["probs"].get(drawn, probs.get(drawn, 0.0))),
                          greedy=said(labels.get(view["greedy"], "?"))))
    lines.append(lens_sentence(view, lang))
    return "\n\n".join(lines)
