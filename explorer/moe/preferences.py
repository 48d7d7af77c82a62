"""What each expert prefers: the tokens and token kinds routed to it more often than their base
rate (lift = P(token | routed to e) / P(token)), with examples in context. Plain frequency is
no use here: every expert's most frequent tokens are newlines, spaces and commas, because those
are the most frequent tokens of all.

Token kinds come from Python's own tokenizer (the corpus is Python source): keyword, name,
number, string, comment, operator, whitespace/newline; text it cannot parse falls back to a
character-class guess."""
from __future__ import annotations

import io
import keyword
import tokenize
from collections import Counter
from dataclasses import dataclass
from typing import Optional, Sequence

import numpy as np
import torch

import plotly.graph_objects as go

from explorer.locales import text
from explorer.moe.routing import LayerLoad, layer_load, moe_layers, moe_shape, token_label
from explorer.plotting import Fig
from models.forward import Recorder

KINDS = ("keyword", "name", "number", "string", "comment", "operator", "whitespace")


def char_kinds(text: str) -> list[str]:
    """The kind of every character of `text`."""
    kinds = [_guess(ch) for ch in text]
    lines = text.splitlines(keepends=True)
    starts = np.cumsum([0] + [len(line) for line in lines]).tolist()
    try:
        for tok in tokenize.generate_tokens(io.StringIO(text).readline):
            kind = _kind_of(tok)
            if kind is None:
                continue
            (r0, c0), (r1, c1) = tok.start, tok.end
            a, b = starts[r0 - 1] + c0, starts[r1 - 1] + c1 if r1 - 1 < len(starts) else len(text)
            for i in range(a, min(b, len(text))):
                kinds[i] = kind
    except (tokenize.TokenError, IndentationError, SyntaxError):
        pass  # the characters not reached keep their guessed kind
    return kinds


def _kind_of(tok) -> str | None:
    t = tok.type
    if t == tokenize.NAME:
        return "keyword" if keyword.iskeyword(tok.string) or keyword.issoftkeyword(tok.string) else "name"
    if t == tokenize.NUMBER:
        return "number"
    if t == tokenize.STRING or t in (getattr(tokenize, "FSTRING_START", -1), getattr(tokenize, "FSTRING_MIDDLE", -1)):
        return "string"
    if t == tokenize.COMMENT:
        return "comment"
    if t == tokenize.OP:
        return "operator"
    return None


def _guess(ch: str) -> str:
    if ch.isspace():
        return "whitespace"
    if ch.isdigit():
        return "number"
    if ch.isalpha() or ch == "_":
        return "name"
    return "operator"


def token_kinds(text: str, offsets: Sequence[tuple[int, int]]) -> list[str]:
    """The kind of each token: that of its first non-space character (whitespace if none)."""
    chars = char_kinds(text)
    out = []
    for a, b in offsets:
        kind = "whitespace"
        for i in range(a, min(b, len(text))):
            if not text[i].isspace():
                kind = chars[i]
                break
        out.append(kind)
    return out


@dataclass(frozen=True)
class ExpertPreference:
    expert: int
    share: float                          # share of the layer's picks it received
    tokens: tuple[tuple[str, float, int], ...]   # (token, lift, times routed here), best lift first
    kinds: tuple[tuple[str, float], ...]          # (kind, lift) for every kind, in KINDS order
    examples: tuple[tuple[str, str, str], ...]    # (left context, token, right context)


@dataclass(frozen=True)
class PreferenceResult:
    layer: int
    n_tokens: int
    experts: tuple[ExpertPreference, ...]
    load: LayerLoad                       # over the same tokens
    kind_rate: tuple[tuple[str, float], ...]      # base rate of each kind


@torch.no_grad()
def run_preferences(model, tokenizer, texts: Sequence[str], layer: int, max_tokens: int = 8192,
                    window: int = 256, min_count: int = 4, top: int = 8) -> PreferenceResult:
    """Route up to `max_tokens` tokens of `texts` (windows of `window` tokens) and measure, at
    MoE layer `layer`, each expert's lift per token (seen at least `min_count` times in all)
    and per token kind."""
    n_experts, _, _ = moe_shape(model)
    if layer not in moe_layers(model):
        raise ValueError(f"layer {layer} is not an MoE layer; MoE layers: {moe_layers(model)}")
    device = next(model.parameters()).device
    token_ids, kinds, strings, contexts = [], [], [], []
    for source in texts:
        enc = tokenizer(source, return_offsets_mapping=True, add_special_tokens=False)
        ids, offsets = enc["input_ids"], enc["offset_mapping"]
        room = max_tokens - len(token_ids)
        if room <= 0:
            break
        ids, offsets = ids[:room], offsets[:room]
        token_ids += ids
        kinds += token_kinds(source, offsets)
        strings += [source[a:b] for a, b in offsets]
        contexts += [(source, a, b) for a, b in offsets]
    picks = []
    for start in range(0, len(token_ids), window):
        chunk = torch.tensor(token_ids[start:start + window], device=device)[None]
        rec = Recorder(["expert_picks"], layers=[layer])
        model(chunk, recorder=rec)
        picks.append(rec.get("expert_picks", layer)[0])                 # (t, k)
    picks = torch.cat(picks).numpy()                                       # (N, k)
    n = len(token_ids)
    routed = np.zeros((n, n_experts), dtype=bool)                          # (N, E)
    np.put_along_axis(routed, picks, True, axis=1)
    token_count = Counter(strings)
    kind_arr = np.array(kinds)
    kind_rate = {k: float((kind_arr == k).mean()) for k in KINDS}
    counts = np.bincount(picks.reshape(-1), minlength=n_experts)
    experts = []
    for e in range(n_experts):
        rows = np.nonzero(routed[:, e])[0]
        if rows.size == 0:
            experts.append(ExpertPreference(e, 0.0, (), tuple((k, 0.0) for k in KINDS), ()))
            continue
        here = Counter(strings[i] for i in rows)
        lifts = [(tok, (c / rows.size) / (token_count[tok] / n), c) for tok, c in here.items()
                 if token_count[tok] >= min_count]
        lifts.sort(key=lambda x: (-x[1], -x[2], x[0]))
        best = tuple((tok, round(lift, 3), c) for tok, lift, c in lifts[:top])
        kind_lift = tuple((k, round(float((kind_arr[rows] == k).mean()) / kind_rate[k], 3)
                           if kind_rate[k] else 0.0) for k in KINDS)
        examples = []
        for tok, _, _ in best[:3]:
            i = next(i for i in rows if strings[i] == tok)
            source, a, b = contexts[i]
            examples.append((source[max(0, a - 24):a], source[a:b], source[b:b + 24]))
        experts.append(ExpertPreference(e, float(counts[e] / counts.sum()), best, kind_lift,
                                        tuple(examples)))
    return PreferenceResult(layer, n, tuple(experts), layer_load(layer, counts),
                            tuple((k, round(v, 4)) for k, v in kind_rate.items()))


def figures(result: PreferenceResult, lang: Optional[str]) -> tuple[go.Figure]:
    """Lift of each token kind per expert (log2 colour scale: 0 = its base rate)."""
    names = [text(f"moe.kind.{k}", lang) for k in KINDS]
    lifts = np.array([[dict(p.kinds)[k] for k in KINDS] for p in result.experts])   # (E, kinds)
    log_lift = np.log2(np.clip(lifts, 1 / 16, 16))
    fig = Fig()
    fig.add_heatmap(z=log_lift.tolist(), x=names, y=[str(p.expert) for p in result.experts],
                    customdata=lifts.tolist(), colorscale="Cividis", zmid=0, zmin=-3, zmax=3,
                    colorbar=dict(title=text("moe.fig.kinds.colour", lang)),
                    hovertemplate=text("moe.fig.kinds.hover", lang) + "<extra></extra>")
    fig.update_xaxes(title_text=text("moe.fig.kinds.x", lang))
    fig.update_yaxes(title_text=text("moe.fig.kinds.y", lang), autorange="reversed", type="category")
    return (fig.finish(text("moe.fig.kinds.title", lang, layer=result.layer, n=result.n_tokens),
                       height=max(320, 120 + 28 * len(result.experts)), lang=lang),)


def table(result: PreferenceResult, lang: Optional[str]) -> tuple[list[list], list[str]]:
    """Rows (expert, share, best tokens by lift, an example in context) and headers."""
    rows = []
    for p in result.experts:
        tokens = ", ".join(f"{token_label(t)} ×{lift:.1f}" for t, lift, _ in p.tokens[:6])
        example = ""
        if p.examples:
            left, tok, right = p.examples[0]
            example = f"{token_label(left)}[{token_label(tok)}]{token_label(right)}"
        rows.append([p.expert, round(100 * p.share, 1), tokens, example])
    return rows, [text(f"moe.pref.col.{c}", lang) for c in ("expert", "share", "tokens", "example")]
