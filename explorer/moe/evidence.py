"""The claims board's evidence for the MoE tab (C14, C15): each function runs the tab's own
experiments with small fixed inputs and reads the verdict through the criterion the tab shows
(explorer/claims/evidence.py describes the shape).

    evidence_c14(loaded)   the calculator against Mixtral's and DeepSeek-V3's stated figures
                           (params.reproduces_stated); time per token at k = 1 ... 8, measured
                           (cost.time_grows); apart, as consistency checks: every token to exactly
                           k experts (routing.routes_to_k), one parameter total at every k
    evidence_c15(loaded)   the three shipped routers' load over held-out files: without balancing
                           at least IMBALANCE_MARGIN times as uneven (balance.balancing_helps)

The routing runs on the loaded model when it is an MoE; for a dense model (SmolLM2, Gemma) on
the shipped explorer-moe-aux checkpoint (explorer/moe/checkpoints). A shipped checkpoint is
loaded as the app loads every model (explorer.runtime: the same loader and tokenizer), on the
loaded model's device and dtype, and kept read-only. The text is the start of the corpus's
held-out files (never trained on), tokenized as the tab tokenizes a visitor's text
(session.tokenize), and the timing uses the tab's settings (cost.KS, cost.REPEATS).
"""
from __future__ import annotations

import functools

import torch

from explorer.claims.evidence import Consistency, Evidence, Measure
from explorer.checkpoints import shipped
from explorer.moe import balance, corpus, cost, params, routing, session
from explorer.runtime import LoadedModel, Runtime

TAB = "moe"
ROUTE_SECTION = "section-moe-route-section"
LOAD_SECTION = "section-moe-load-section"
ROUTE_TOKENS = 128          # tokens routed for C14
LOAD_TOKENS = session.MAX_TOKENS   # tokens routed through each router for C15 (the tab's maximum)
COST_TOKENS = 64            # run_cost repeats them to its 256-token minimum
ROUTING_VARIANT = "aux"     # the shipped checkpoint C14 routes through when the loaded model is dense
CLAIMED = ("Mixtral 8x7B", "DeepSeek-V3")   # the published models the claim names


@functools.lru_cache(maxsize=None)   # read-only weights, the same for every visitor
def _shipped_runtime(device: str, dtype: torch.dtype) -> Runtime:
    return Runtime(device, dtype, registry=shipped.shipped_entries())


def shipped_model(name: str, like: LoadedModel) -> LoadedModel:
    """The shipped checkpoint `name`, loaded as the app loads it, on the device and dtype of
    `like` (the board's loaded model)."""
    return _shipped_runtime(str(like.device), like.dtype).get(name)


@functools.lru_cache(maxsize=1)
def held_out_text() -> str:
    """The first held-out files of the corpus, joined, as much as the tab's text box takes
    (raises corpus.CorpusError without them)."""
    return "\n".join(corpus.load().held_out[:3])[:session.MAX_TEXT_CHARS]


def held_out_tokens(tokenizer, count: int) -> session.Tokens:
    """The first `count` tokens of held_out_text(), tokenized as the tab tokenizes a text."""
    tokens = session.tokenize(tokenizer, held_out_text(), truncate=True)
    return session.Tokens(tokens.ids[:count], tokens.texts[:count])


def routing_target(loaded: LoadedModel) -> LoadedModel:
    """The model C14 routes: the loaded model if it is an MoE, else the shipped checkpoint."""
    try:
        routing.moe_shape(loaded.model)
    except routing.NotMoEError:
        return shipped_model(shipped.NAMES[ROUTING_VARIANT], loaded)
    return loaded


def evidence_c14(loaded) -> Evidence:
    target = routing_target(loaded)
    tokens = held_out_tokens(target.tokenizer, ROUTE_TOKENS)
    routed = routing.run_routing(target.model, tokens.ids, tokens.texts)
    off_k = int((routing.experts_per_token(routed) != routed.top_k).sum())
    counts = {c.name: c for c in params.published_counts()}
    claimed = [counts[n] for n in CLAIMED]
    timed = cost.run_cost(target.model, tokens.ids[:COST_TOKENS])
    # the verdict: the calculator against the published figures, and the measured time; top-k's
    # k distinct picks and one parameter total at every k are bookkeeping, shown apart
    passed = all(params.reproduces_stated(c) for c in claimed) and cost.time_grows(timed)
    mixtral, deepseek = claimed
    consistency = (
        Consistency("claims.k.moe_routes_to_k", routing.routes_to_k(routed),
                    (Measure("claims.m.moe_k", routed.top_k), Measure("claims.m.moe_off_k", off_k))),
        Consistency("claims.k.moe_same_total", cost.same_total(timed),
                    (Measure("claims.m.moe_totals", len({r.total_params for r in timed.rows})),)))
    measures = (
        Measure("claims.m.mixtral_total", mixtral.total / 1e9, digits=4),
        Measure("claims.m.mixtral_active", mixtral.active / 1e9),
        Measure("claims.m.deepseek_total", deepseek.total / 1e9, digits=4),
        Measure("claims.m.deepseek_active", deepseek.active_without_embedding / 1e9),
        Measure("claims.m.ms_smallest_k", timed.rows[0].ms_per_token, "ms"),
        Measure("claims.m.ms_largest_k", timed.rows[-1].ms_per_token, "ms"),
        Measure("claims.m.time_ratio_k", cost.time_ratio(timed), "×"))
    return Evidence(
        claim="C14", passed=bool(passed), measures=measures, criterion="claims.C14.criterion", tab=TAB,
        section=ROUTE_SECTION, model=target.name, consistency=consistency,
        fields={"mixtral": f"{mixtral.stated[0]:g} / {mixtral.stated[1]:g}",
                "deepseek": f"{deepseek.stated[0]:g} / {deepseek.stated[1]:g}",
                "k0": timed.rows[0].k, "k1": timed.rows[-1].k, "threshold": cost.TIME_GROWTH_MIN})


def evidence_c15(loaded) -> Evidence:
    models = []
    for variant in shipped.VARIANTS:   # the tuples the tab's comparison passes, on held-out text
        target = shipped_model(shipped.NAMES[variant], loaded)
        tokens = held_out_tokens(target.tokenizer, LOAD_TOKENS)
        models.append((target.name, variant, target.model, tokens.ids, tokens.texts,
                       shipped.card(target.name)))
    result = balance.run(models, layer=routing.moe_layers(models[0][2])[-1])
    found = balance.imbalances(result)
    return Evidence(
        claim="C15", passed=balance.balancing_helps(result),
        measures=(Measure("claims.m.cv_none", found["none"]),
                  Measure("claims.m.cv_aux", found["aux"]),
                  Measure("claims.m.cv_bias", found["bias"]),
                  Measure("claims.m.cv_margin", balance.balancing_margin(result), "×")),
        criterion="claims.C15.criterion", tab=TAB, section=LOAD_SECTION,
        fields={"margin": balance.IMBALANCE_MARGIN, "tokens": LOAD_TOKENS})
