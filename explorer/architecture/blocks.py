"""Four transformer blocks side by side, read from tensors (claim C18): the original Transformer
(2017), GPT-2, SmolLM2 (Llama architecture) and Gemma 3. How a block is read from a tensor
inventory is inventory.py; here, the blocks of the four drawn as stages, their parameters
per component, a table of their properties and C18's facts.

    result = run([checkpoint_entry(name, title, folder, model), ...])   # + the two references
    figures(result, lang) -> (block diagrams, parameters per component); table(result, lang)
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import pandas as pd
import plotly.graph_objects as go

from explorer.architecture.inventory import COMPONENTS, Block, ModelEntry, describe, gpt2_entry, \
    original_transformer_entry
from explorer.locales import template, text
from explorer.plotting import Fig, colors


@dataclass(frozen=True)
class Blocks:
    blocks: tuple                     # Block, in display order


def run(entries: Sequence[ModelEntry]) -> Blocks:
    """The blocks of the two references, then of each entry given (the loaded checkpoints)."""
    return Blocks(tuple(describe(entry) for entry in (original_transformer_entry(), gpt2_entry(), *entries)))


# ============================================================================ the block, as stages

@dataclass(frozen=True)
class Stage:
    kind: str                         # "norm", "attn", "cross", "mlp", "add"
    label: str                        # shown in the box


def _norm_label(block: Block, lang: str) -> str:
    return text(f"arch.blocks.norm.{block.norm_kind}", lang)


def stages(block: Block, lang: str) -> list[Stage]:
    """The block from its input (first) to its output (last)."""
    attn = text(f"arch.blocks.attn.{block.attention_kind}", lang, q=block.n_heads, kv=block.n_kv_heads)
    if block.position == "rope":
        attn += " · RoPE"
    if block.qk_norm:
        attn += " · " + text("arch.blocks.qk_norm", lang)
    subs = [("attn", attn, "attn")]
    if block.cross_attention:
        subs.append(("cross", text("arch.blocks.cross", lang, q=block.n_heads), "cross"))
    subs.append(("mlp", text(f"arch.blocks.mlp.{block.activation}", lang, d_ff=block.d_ff), "mlp"))
    places = set(block.norm_places)
    norm = _norm_label(block, lang)
    out: list[Stage] = []
    for kind, label, place in subs:
        if f"pre_{place}" in places:
            out.append(Stage("norm", norm))
        out.append(Stage(kind, label))
        if f"post_{place}" in places:
            out.append(Stage("norm", norm))
        out.append(Stage("add", text("arch.blocks.add", lang)))
        if f"post_{place}_add" in places:
            out.append(Stage("norm", norm))
    return out


# ============================================================================ figures

STAGE_COLORS = {"norm": "#fde68a", "attn": "#bfdbfe", "cross": "#c4b5fd", "mlp": "#bbf7d0", "add": "#f3f4f6"}


def diagram(result: Blocks, lang: str) -> go.Figure:
    """One column per model: the block from input (bottom) to output (top), boxes from stages();
    under it the embedding and position, over it the final norm and output head."""
    fig = Fig()
    n = len(result.blocks)
    width, gap, box_h, step = 1.1, 0.28, 0.62, 0.8
    tallest = max(len(stages(block, lang)) for block in result.blocks)
    for column, block in enumerate(result.blocks):
        x0 = column * (width + gap)
        xc = x0 + width / 2
        items = stages(block, lang)
        # below the block: embedding (+ positions)
        bottom = [text("arch.blocks.embed", lang)]
        bottom.append(text(f"arch.blocks.pos.{block.position}", lang))
        y = 0.0
        for label in bottom:
            fig.add_shape(type="rect", x0=x0, x1=x0 + width, y0=y, y1=y + box_h, line=dict(color="#9ca3af"),
                          fillcolor="#ffffff")
            fig.add_annotation(x=xc, y=y + box_h / 2, text=label, showarrow=False, font=dict(size=11))
            y += step
        y += 0.3
        block_y0 = y
        # inside the block the boxes leave room on the right for the residual path
        right, bypass = x0 + width - 0.14, x0 + width - 0.05
        centre = (x0 + right) / 2
        branch_y, pending, previous = y, True, None
        for stage in items:
            if pending and not (previous == "add" and stage.kind == "norm" and not block.pre_norm):
                # the residual leaves the main path here: before a pre-norm, after a post-add norm
                branch_y, pending = y - (step - box_h) / 2, False
            inset = 0.24 if stage.kind == "add" else 0.0
            fig.add_shape(type="rect", x0=x0 + inset, x1=right - inset, y0=y, y1=y + box_h,
                          line=dict(color="#6b7280"), fillcolor=STAGE_COLORS[stage.kind])
            fig.add_annotation(x=centre, y=y + box_h / 2, text=stage.label, showarrow=False, font=dict(size=11))
            if stage.kind == "add":
                fig.add_shape(type="path", path=f"M {centre},{branch_y} H {bypass} V {y + box_h / 2} H {right - inset}",
                              line=dict(color="#374151", width=1.5))
                pending = True
            previous = stage.kind
            y += step
        block_y1 = y - step + box_h
        # the stack repeated n times: a bracket with the count
        label = text("arch.blocks.times", lang, n=block.n_layers)
        if block.encoder_layers:
            label = text("arch.blocks.times_encoder", lang, n=block.n_layers, enc=block.encoder_layers)
        fig.add_shape(type="rect", x0=x0 - 0.06, x1=x0 + width + 0.06, y0=block_y0 - 0.1, y1=block_y1 + 0.1,
                      line=dict(color="#374151", dash="dot"), fillcolor="rgba(0,0,0,0)")
        fig.add_annotation(x=xc, y=block_y1 + 0.1, text=label, showarrow=False, yanchor="bottom",
                           font=dict(size=11, color="#374151"))
        y = block_y1 + 0.55 + (tallest - len(items)) * step
        top = []
        if block.pre_norm:
            top.append(text("arch.blocks.final_norm", lang, norm=_norm_label(block, lang)))
        top.append(text("arch.blocks.head_tied" if block.tied_embeddings else "arch.blocks.head", lang))
        for label in top:
            fig.add_shape(type="rect", x0=x0, x1=x0 + width, y0=y, y1=y + box_h, line=dict(color="#9ca3af"),
                          fillcolor="#ffffff")
            fig.add_annotation(x=xc, y=y + box_h / 2, text=label, showarrow=False, font=dict(size=11))
            y += step
        origin = text(f"arch.blocks.origin.{block.origin}", lang)
        fig.add_annotation(x=xc, y=y + 0.1, text=f"<b>{block.title}</b><br>{origin}", showarrow=False,
                           yanchor="bottom", font=dict(size=12))
    top_y = 2 * 0.8 + 0.3 + tallest * 0.8 + 0.55 + 2 * 0.8 + 1.2
    fig.update_xaxes(visible=False, range=[-0.2, n * (width + gap) - gap + 0.2])
    fig.update_yaxes(visible=False, range=[-0.2, top_y])
    fig.add_scatter(x=[0], y=[0], mode="markers", marker=dict(opacity=0), hoverinfo="skip", showlegend=False)
    for kind in ("norm", "attn", "cross", "mlp", "add"):
        fig.add_scatter(x=[None], y=[None], mode="markers", name=text(f"arch.blocks.legend.{kind}", lang),
                        marker=dict(symbol="square", size=12, color=STAGE_COLORS[kind],
                                    line=dict(color="#6b7280", width=1)))
    return fig.finish("", height=720, alt=diagram_alt(result, lang))


def diagram_alt(result: Blocks, lang: str) -> str:
    """The diagram's text alternative: each model's block, its stages from input to output."""
    return text("a11y.arch_blocks", lang, n=len(result.blocks), blocks=text("a11y.join", lang).join(
        text("a11y.arch_block", lang, title=block.title, n=len(items), stages=" → ".join(s.label for s in items))
        for block, items in ((block, stages(block, lang)) for block in result.blocks)))


def params_figure(result: Blocks, lang: str) -> go.Figure:
    """Parameters per component, one stacked bar per model, in millions (summed from shapes)."""
    fig = Fig()
    titles = [block.title for block in result.blocks]
    hover = template("arch.blocks.fig.params_hover", lang)
    for color, component in zip(colors(len(COMPONENTS), "Cividis"), COMPONENTS):
        values = [block.params[component] for block in result.blocks]
        if not any(values):
            continue
        name = text(f"arch.blocks.comp.{component}", lang)
        fig.add_bar(y=titles, x=[v / 1e6 for v in values], name=name, orientation="h", marker=dict(color=color),
                    hoverinfo="text",
                    hovertext=[hover.format(model=t, component=name, n=v, share=100 * v / b.total_params)
                               for t, v, b in zip(titles, values, result.blocks)])
    fig.update_layout(barmode="stack")
    fig.update_xaxes(title_text=text("arch.blocks.fig.params_axis", lang))
    fig.update_yaxes(autorange="reversed")
    return fig.finish("", height=360, lang=lang)


def figures(result: Blocks, lang: str) -> tuple[go.Figure, go.Figure]:
    return diagram(result, lang), params_figure(result, lang)


def _yes(value: bool, lang: str) -> str:
    return text("arch.yes" if value else "arch.no", lang)


def table(result: Blocks, lang: str) -> pd.DataFrame:
    """One row per property, one column per model: every cell read from the tensors (or, where
    the table says so, the config)."""
    rows: dict[str, list] = {}

    def row(key: str, values: list) -> None:
        rows[text(key, lang)] = values

    blocks = result.blocks
    row("arch.row.layers", [text("arch.blocks.layers_enc", lang, n=b.n_layers, enc=b.encoder_layers)
                            if b.encoder_layers else str(b.n_layers) for b in blocks])
    row("arch.row.d_model", [str(b.d_model) for b in blocks])
    row("arch.row.norm", [_norm_label(b, lang) for b in blocks])
    row("arch.row.norm_place", [text("arch.place.pre" if b.pre_norm else "arch.place.post", lang)
                                + " · " + ", ".join(text(f"arch.place.{p}", lang) for p in b.norm_places)
                                for b in blocks])
    row("arch.row.norms_per_block", [str(b.norms_per_block) + (" + QK" if b.qk_norm else "") for b in blocks])
    row("arch.row.position", [text(f"arch.blocks.pos.{b.position}", lang)
                              + (" θ " + " / ".join(f"{t:,.0f}" for t in b.rope_thetas) if b.rope_thetas else "")
                              for b in blocks])
    row("arch.row.activation", [text(f"arch.blocks.act.{b.activation}", lang) for b in blocks])
    row("arch.row.heads", [text(f"arch.blocks.attn.{b.attention_kind}", lang, q=b.n_heads, kv=b.n_kv_heads)
                           + f" · d_head {b.head_dim}" for b in blocks])
    row("arch.row.encoder", [_yes(b.encoder_layers > 0, lang) for b in blocks])
    row("arch.row.cross", [_yes(b.cross_attention, lang) for b in blocks])
    row("arch.row.biases", [text("arch.blocks.biases", lang, n=len(b.linear_biases), norms=len(b.bias_tensors)
                                 - len(b.linear_biases)) if b.bias_tensors else text("arch.blocks.no_biases", lang)
                            for b in blocks])
    row("arch.row.tied", [_yes(b.tied_embeddings, lang) for b in blocks])
    row("arch.row.params", [f"{b.total_params:,}" + (" " + text("arch.blocks.stated", lang, n=b.stated_millions)
                                                     if b.stated_millions else "") for b in blocks])
    row("arch.row.module", [f"{b.module_params:,}" if b.module_params is not None else "—" for b in blocks])
    row("arch.row.source", [b.source for b in blocks])
    frame = pd.DataFrame(rows, index=[b.title for b in blocks]).T
    frame.insert(0, text("arch.col.property", lang), frame.index)
    return frame.reset_index(drop=True)


# C18's facts: what the claim says changed from the original Transformer to a Llama-style block.
# The claim's "ReLU/GELU -> SwiGLU" is the change from a plain MLP to a gated one (an elementwise
# gate times an up projection): SwiGLU gates with SiLU, Gemma 3's GeGLU with GELU, and both count;
# a plain ReLU or GELU MLP does not. GQA: fewer KV heads than query heads (MQA, one KV head, is
# its one-group case).
MODERN_FACTS = ("pre_norm", "rmsnorm", "rope", "gated_mlp", "gqa", "no_bias", "no_encoder", "no_cross")
# Where each fact comes from. "tensors": which tensors exist and their shapes decide it (a gate
# projection; the q and k projections' widths over the config's head_dim; no tensor named *bias,
# none of an encoder, none of cross-attention). "architecture": the architecture's code decides
# it, and the tensors can only contradict it: a norm's place comes from its name in that
# architecture's naming (Llama's post_attention_layernorm sits before the MLP), weight-only norms
# are RMSNorm in its code (a bias-free LayerNorm would look the same), and RoPE is applied in its
# code (the tensors show no position-embedding table; a checkpoint rarely stores inv_freq).
FACT_SOURCES = {"pre_norm": "architecture", "rmsnorm": "architecture", "rope": "architecture",
                "gated_mlp": "tensors", "gqa": "tensors", "no_bias": "tensors", "no_encoder": "tensors",
                "no_cross": "tensors"}
assert tuple(FACT_SOURCES) == MODERN_FACTS


def modern_facts(block: Block) -> dict[str, bool]:
    """{fact: holds} for MODERN_FACTS, in that order."""
    return {"pre_norm": block.pre_norm, "rmsnorm": block.norm_kind in ("rmsnorm", "rmsnorm_unit"),
            "rope": block.position == "rope", "gated_mlp": block.activation in ("swiglu", "geglu"),
            "gqa": block.n_kv_heads < block.n_heads, "no_bias": not block.bias_tensors,
            "no_encoder": block.encoder_layers == 0, "no_cross": not block.cross_attention}


def facts_held(block: Block, source: str) -> tuple[int, int]:
    """(facts that hold, facts) among those FACT_SOURCES gives `source`."""
    facts = modern_facts(block)
    keys = [key for key in MODERN_FACTS if FACT_SOURCES[key] == source]
    return sum(facts[key] for key in keys), len(keys)


def is_llama_style(block: Block) -> bool:
    """C18's criterion: every fact of MODERN_FACTS holds."""
    return all(modern_facts(block).values())


def facts_text(block: Block, lang: str) -> str:
    """The verdict on one block: all facts hold, or which do not (each marked ✗); either way
    which facts the tensors decided and which the architecture's code."""
    facts = modern_facts(block)
    read, n_read = facts_held(block, "tensors")
    coded, n_coded = facts_held(block, "architecture")
    sources = text("arch.blocks.verdict.sources", lang, read=read, n_read=n_read, coded=coded, n_coded=n_coded)
    if all(facts.values()):
        return text("arch.blocks.verdict.all", lang, n=len(facts)) + " " + sources
    missing = ["✗ " + text(f"arch.blocks.fact.{key}", lang) for key, holds in facts.items() if not holds]
    return text("arch.blocks.verdict.not", lang, held=sum(facts.values()), n=len(facts),
                missing=text("arch.blocks.fact.sep", lang).join(missing)) + " " + sources


def summary(result: Blocks, lang: str) -> str:
    lines = []
    for block in result.blocks:
        if block.origin != "weights":
            continue
        biases = (text("arch.blocks.sum.no_bias", lang) if not block.bias_tensors
                  else text("arch.blocks.sum.bias", lang, n=len(block.bias_tensors),
                            first=block.bias_tensors[0]))
        match = ("" if block.module_params is None else
                 text("arch.blocks.sum.module", lang, n=block.module_params,
                      same=_yes(block.module_params == block.total_params, lang)))
        lines.append(text("arch.blocks.sum.line", lang, model=block.title, tensors=block.n_tensors,
                          total=block.total_params, biases=biases, norms=block.norms_per_block,
                          kind=_norm_label(block, lang), tied=_yes(block.tied_embeddings, lang),
                          q=block.n_heads, kv=block.n_kv_heads) + match + " " + facts_text(block, lang))
    return "\n\n".join(lines)
