"""The claims board's evidence for the MoE tab (C14, C15): each function runs the tab's own
experiments with small fixed inputs and reads the verdict through the criterion the tab shows
(explorer/claims/evidence.py describes the shape).

    evidence_c14(loaded)   routing: every token to exactly k experts (routing.routes_to_k); the
                           calculator against Mixtral's and DeepSeek-V3's stated figures
                           (params.reproduces_stated); time per token at k = 1 ... 8 (cost)
    evidence_c15(loaded)   the three shipped routers' load over held-out files: without balancing
                           at least IMBALANCE_MARGIN times as uneven (balance.balancing_helps)

The routing runs on the loaded model when it is an MoE; for a dense model (SmolLM2, Gemma) on
the shipped explorer-moe-aux checkpoint (explorer/moe/checkpoints), loaded once on the CPU and
kept read-only. The text is the start of the corpus's held-out files (never trained on).
"""
from __future__ import annotations

import functools
from dataclasses import dataclass

import torch

from explorer.claims.evidence import Evidence, Measure
from explorer.moe import balance, corpus, cost, params, routing, shipped
from models.loading import load_model

TAB = "moe"
ROUTE_SECTION = "section-moe-route-section"
LOAD_SECTION = "section-moe-load-section"
ROUTE_TOKENS = 128          # tokens routed for C14
LOAD_TOKENS = 512           # tokens routed through each router for C15 (the tab's maximum)
COST_KS = (1, 2, 4, 8)
COST_TOKENS = 64            # run_cost repeats them to its 256-token minimum
COST_REPEATS = 5           # fastest of 5: another process's load only adds time
ROUTING_VARIANT = "aux"     # the shipped checkpoint C14 routes through when the loaded model is dense
CLAIMED = ("Mixtral 8x7B", "DeepSeek-V3")   # the published models the claim names


@dataclass(frozen=True)
class Shipped:
    name: str
    model: torch.nn.Module      # eval mode, fp32 on the CPU; shared: never mutate
    tokenizer: object           # tokenizers.Tokenizer of the folder


@functools.lru_cache(maxsize=None)   # read-only weights, the same for every visitor
def shipped_model(name: str) -> Shipped:
    from tokenizers import Tokenizer

    folder = shipped.folder(name)
    model = load_model(folder, device="cpu", dtype=torch.float32).eval()
    return Shipped(name, model, Tokenizer.from_file(str(folder / "tokenizer.json")))


@functools.lru_cache(maxsize=1)
def held_out_text() -> str:
    """The first held-out files of the corpus, joined (raises corpus.CorpusError without them)."""
    return "\n".join(corpus.load().held_out[:3])


def tokens_of(tokenizer, count: int) -> tuple[list[int], list[str]]:
    ids = tokenizer.encode(held_out_text()).ids[:count]
    return ids, [tokenizer.decode([i]) for i in ids]


def routing_target(loaded):
    """(name, model, ids, token texts) C14 routes: the loaded model if it is an MoE, else the
    shipped checkpoint."""
    try:
        routing.moe_shape(loaded.model)
    except routing.NotMoEError:
        target = shipped_model(shipped.NAMES[ROUTING_VARIANT])
        return target.name, target.model, *tokens_of(target.tokenizer, ROUTE_TOKENS)
    ids = loaded.tokenizer(held_out_text(), add_special_tokens=False)["input_ids"][:ROUTE_TOKENS]
    return loaded.name, loaded.model, ids, [loaded.tokenizer.decode([i]) for i in ids]


def evidence_c14(loaded) -> Evidence:
    name, model, ids, texts = routing_target(loaded)
    routed = routing.run_routing(model, ids, texts)
    off_k = int((routing.experts_per_token(routed) != routed.top_k).sum())
    counts = {c.name: c for c in params.published_counts()}
    claimed = [counts[n] for n in CLAIMED]
    timed = cost.run_cost(model, ids[:COST_TOKENS], COST_KS, repeats=COST_REPEATS)
    passed = (routing.routes_to_k(routed) and all(params.reproduces_stated(c) for c in claimed)
              and cost.time_grows_with_k(timed))
    mixtral, deepseek = claimed
    measures = (
        Measure("claims.m.moe_k", routed.top_k),
        Measure("claims.m.moe_off_k", off_k),
        Measure("claims.m.mixtral_total", mixtral.total / 1e9, digits=4),
        Measure("claims.m.mixtral_active", mixtral.active / 1e9),
        Measure("claims.m.deepseek_total", deepseek.total / 1e9, digits=4),
        Measure("claims.m.deepseek_active", deepseek.active_without_embedding / 1e9),
        Measure("claims.m.ms_smallest_k", timed.rows[0].ms_per_token, "ms"),
        Measure("claims.m.ms_largest_k", timed.rows[-1].ms_per_token, "ms"),
        Measure("claims.m.time_ratio_k", cost.time_ratio(timed), "×"))
    return Evidence(
        claim="C14", passed=bool(passed), measures=measures, criterion="claims.C14.criterion", tab=TAB,
        section=ROUTE_SECTION, model=name,
        fields={"mixtral": f"{mixtral.stated[0]:g} / {mixtral.stated[1]:g}",
                "deepseek": f"{deepseek.stated[0]:g} / {deepseek.stated[1]:g}",
                "k0": timed.rows[0].k, "k1": timed.rows[-1].k, "threshold": cost.TIME_GROWTH_MIN})


def evidence_c15(loaded) -> Evidence:
    models = []
    for variant in shipped.VARIANTS:
        target = shipped_model(shipped.NAMES[variant])
        ids, texts = tokens_of(target.tokenizer, LOAD_TOKENS)
        models.append((target.name, variant, target.model, ids, texts, None))
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
