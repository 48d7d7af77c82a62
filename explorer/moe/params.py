"""Total vs active parameters of MoE models, computed from their config.json values (claim C14:
total parameters grow with the number of experts N, the parameters each token uses with k).

    count = count_params(config_dict)   # ParamCount: total, active, per part
    published_counts()                  # every model of COUNTED (explorer.published)

Counted: embedding and unembedding matrices (one when tied), attention (GQA, or DeepSeek's
MLA), norms, dense feed-forward layers, and per MoE layer the router, the routed experts and
the shared experts. Active per token: everything except the N - k routed experts a token is not
sent to. Some authors leave the embedding table out of "active" (a lookup, not a matrix
product): `active_without_embedding` is that figure."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Sequence

import plotly.graph_objects as go

from explorer.locales import text
from explorer.published import PUBLISHED
from explorer.plotting import Fig, colors


@dataclass(frozen=True)
class ParamCount:
    name: str
    total: int
    active: int                     # per token: all but the routed experts not picked
    active_without_embedding: int   # the same, minus the input embedding table (untied models)
    n_experts: int
    top_k: int
    n_layers: int
    parts: dict                     # total per part: embeddings, attention, routed experts, ...
    source: str = ""
    stated: Optional[tuple] = None  # (total, active) in billions, as the authors state them


def _attention(c: dict) -> int:
    d, heads = c["hidden_size"], c["num_attention_heads"]
    kind = c["model_type"]
    if kind == "deepseek_v3":  # multi-head latent attention
        qr, kvr = c["q_lora_rank"], c["kv_lora_rank"]
        nope, rope, v = c["qk_nope_head_dim"], c["qk_rope_head_dim"], c["v_head_dim"]
        return (d * qr + qr + qr * heads * (nope + rope)      # q down, its norm, q up
                + d * (kvr + rope) + kvr                       # kv down (+ the shared RoPE key), norm
                + kvr * heads * (nope + v) + heads * v * d)    # k/v up, output
    hd = c.get("head_dim") or d // heads
    q, kv = heads * hd, c.get("num_key_value_heads", heads) * hd
    n = d * q + 2 * d * kv + q * d
    if kind == "qwen2_moe":
        n += q + 2 * kv                    # biases on q, k, v
    if kind == "gpt_oss":
        n += q + 2 * kv + d + heads        # biases on q, k, v, o; one sink logit per head
    if kind == "olmoe":
        n += q + kv                        # q and k norms
    return n


def _moe_layer(c: dict) -> tuple[int, int, int, int]:
    """(one routed expert, router, shared experts, N) of one MoE layer."""
    d, kind = c["hidden_size"], c["model_type"]
    n = c.get("num_local_experts") or c.get("n_routed_experts") or c.get("num_experts")
    f = c.get("moe_intermediate_size") or c["intermediate_size"]
    expert = 3 * d * f
    router = n * d
    if kind == "gpt_oss":
        expert += 2 * f + d                # biases of the gate/up and down projections
        router += n
    if kind == "deepseek_v3":
        router += n                        # the selection bias (e_score_correction_bias)
    shared = 0
    if c.get("n_shared_experts"):
        shared = 3 * d * f * c["n_shared_experts"]
    if c.get("shared_expert_intermediate_size"):
        shared = 3 * d * c["shared_expert_intermediate_size"] + d   # + its sigmoid gate
    return expert, router, shared, n


def count_params(c: dict, name: str = "", source: str = "", stated: Optional[tuple] = None) -> ParamCount:
    d, layers, vocab = c["hidden_size"], c["num_hidden_layers"], c["vocab_size"]
    k = c["num_experts_per_tok"]
    n_dense = c.get("first_k_dense_replace", 0)
    n_moe = layers - n_dense
    expert, router, shared, n = _moe_layer(c)
    tied = c.get("tie_word_embeddings", False)
    parts = {
        "embeddings": vocab * d * (1 if tied else 2),
        "attention": layers * _attention(c),
        "norms": (2 * layers + 1) * d,
        "dense feed-forward": n_dense * 3 * d * c.get("intermediate_size", 0),
        "routers": n_moe * router,
        "shared experts": n_moe * shared,
        "routed experts": n_moe * n * expert,
    }
    total = sum(parts.values())
    active = total - n_moe * (n - k) * expert
    return ParamCount(name or c["model_type"], total, active,
                      active - (0 if tied else vocab * d), n, k, layers, parts, source, stated)


def decimals(stated: float) -> int:
    """Decimal places of a stated figure as its authors wrote it: 46.7 -> 1, 671 -> 0."""
    digits = format(stated, "g")
    return len(digits.split(".")[1]) if "." in digits else 0


def within_rounding(count: int, stated: float) -> bool:
    """`count` (parameters) rounds to `stated` (billions) at the precision it was stated:
    |count / 1e9 - stated| <= half a unit of its last digit."""
    return abs(count / 1e9 - stated) <= 0.5 * 10.0 ** -decimals(stated) + 1e-12


def reproduces_stated(count: ParamCount) -> bool:
    """C14's calculator criterion: the total rounds to the stated total, and the active count
    to the stated active one, with or without the embedding table (authors count it either
    way: Mistral with it, DeepSeek and OpenAI without). False when nothing is stated."""
    if count.stated is None:
        return False
    total, active = count.stated
    return within_rounding(count.total, total) and (
        within_rounding(count.active, active) or within_rounding(count.active_without_embedding, active))


# The published MoE models the calculator counts, in the order the tab lists them.
COUNTED = ("Mixtral 8x7B", "DeepSeek-V3", "Qwen1.5-MoE-A2.7B (Qwen2-MoE)", "OLMoE-1B-7B",
           "gpt-oss-20b", "gpt-oss-120b")


def published_counts() -> list[ParamCount]:
    return [count_params(PUBLISHED[name]["config"], name, PUBLISHED[name]["source"], PUBLISHED[name]["stated"])
            for name in COUNTED]


def scaled(count_config: dict, n_experts: Optional[int] = None, top_k: Optional[int] = None) -> dict:
    """The same config with another N or k (what-if rows of the calculator)."""
    c = dict(count_config)
    key = next(k for k in ("num_local_experts", "n_routed_experts", "num_experts") if k in c)
    if n_experts is not None:
        c[key] = n_experts
    if top_k is not None:
        c["num_experts_per_tok"] = top_k
    return c


def figures(counts: Sequence[ParamCount], lang: Optional[str]) -> tuple[go.Figure]:
    """Total and active parameters of each model (log scale)."""
    names = [c.name for c in counts]
    fig = Fig()
    c = colors(2)
    fig.add_bar(x=names, y=[p.total / 1e9 for p in counts], name=text("moe.fig.params.total", lang),
                marker=dict(color=c[1]), hovertemplate=text("moe.fig.params.hover", lang) + "<extra></extra>")
    fig.add_bar(x=names, y=[p.active / 1e9 for p in counts], name=text("moe.fig.params.active", lang),
                marker=dict(color=c[0]), hovertemplate=text("moe.fig.params.hover", lang) + "<extra></extra>")
    fig.update_layout(barmode="group")
    fig.update_yaxes(title_text=text("moe.fig.params.y", lang), type="log")
    return (fig.finish(text("moe.fig.params.title", lang), height=380, lang=lang),)


def amount(n: int) -> str:
    """A parameter count for a table: 46.70 B, 5.12 M."""
    return f"{n / 1e9:.2f} B" if n >= 1e9 else f"{n / 1e6:.2f} M"


def table(counts: Sequence[ParamCount], lang: Optional[str]) -> tuple[list[list], list[str]]:
    rows = [[c.name, c.n_experts, c.top_k, amount(c.total), amount(c.active),
             amount(c.active_without_embedding),
             f"{c.stated[0]:g} B / {c.stated[1]:g} B" if c.stated else "—",
             text("moe.params.match.yes" if reproduces_stated(c) else "moe.params.match.no", lang)
             if c.stated else "—", c.source] for c in counts]
    keys = ("model", "n", "k", "total", "active", "active_ne", "stated", "match", "source")
    return rows, [text(f"moe.params.col.{k}", lang) for k in keys]
