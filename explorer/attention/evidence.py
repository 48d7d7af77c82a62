"""The claims board's evidence for C5, C8 and C10 (explorer/claims/evidence.py), each from the
Attention tab's own experiment on the loaded model with small fixed inputs, judged by the same
criterion function the tab's summary uses:

- C5  groups.run (recorded q/k/v shapes, the engine's cache after a forward, the MHA/GQA/MQA
      variants' bytes) -> groups.cache_follows_kv_heads;
- C8  receptive_field.run with one small window forced on every layer, on a text just longer
      than the reach -> receptive_field.measured_reach (the boundary probed at L(w-1) and
      L(w-1) + 1) and the rule at every probed distance; the reach table's Mistral 7B row;
- C10 sinks.run on the opening of the long text -> sinks.sink_verdict; and streaming.run (the
      tab's policies) on a short stretch of it -> streaming.streaming_verdict and
      streaming.eviction_hurts.

Each function takes a few seconds on SmolLM2 on a 2-core CPU. None catches its own failures.
"""
from __future__ import annotations

from typing import Any

from explorer.attention import groups, receptive_field as rf, sinks, streaming
from explorer.claims.evidence import Consistency, Evidence, Measure

TAB = "attention"
SECTION_GROUPS = "section-attention-section-groups"
SECTION_RF = "section-attention-section-rf"
SECTION_SINKS = "section-attention-section-sinks"

# C8: a window of 2 moves information one position per layer, so the reach after L layers is
# L + 1 tokens; a text REACH_MARGIN tokens longer lets the probe see past it.
C8_WINDOW = 2
C8_MARGIN = 6
C8_SEED = 0
MISTRAL_LAYERS, MISTRAL_WINDOW = 32, 4096     # public config of Mistral 7B v0.1
MISTRAL_REACH_K = 131                         # the claim's "~131K"

# C10: the sink grid over the opening of the long text, and the perplexity past a small window
C10_SINK_TOKENS = 128
C10_STREAM_TOKENS = 128
C10_WINDOW = 32
C10_SINKS = 4


def evidence_c5(loaded: Any) -> Evidence:
    result = groups.run(loaded)
    return Evidence(
        # the variants' proportionality comes from one formula: a consistency check, shown apart
        claim="C5", passed=groups.cache_holds_kv_heads(result),
        consistency=(Consistency("claims.k.c5_proportional", groups.variants_proportional(result)),),
        measures=(Measure("claims.m.c5_q_heads", result.shapes["q"][1]),
                  Measure("claims.m.c5_kv_heads", result.shapes["k"][1]),
                  Measure("claims.m.c5_measured", result.measured_per_token, "B", 6),
                  Measure("claims.m.c5_mha", result.variant_bytes("mha"), "B", 6),
                  Measure("claims.m.c5_gqa", result.variant_bytes("gqa"), "B", 6),
                  Measure("claims.m.c5_mqa", result.variant_bytes("mqa"), "B", 6)),
        criterion="claims.C5.criterion", tab=TAB, section=SECTION_GROUPS,
        fields={"n_kv": result.n_kv_heads, "n_q": result.n_heads, "elem": result.element_bytes},
        model=loaded.name)


def c8_holds(probe: rf.ReceptiveFieldResult, mistral_reach: int) -> bool:
    """C8's criterion: the reach after all layers is measured exactly at L(w - 1) + 1, every
    probed distance first changes at the layer the rule gives, and the formula gives ~131K for
    Mistral 7B."""
    reach = rf.measured_reach(probe)
    return bool(reach is not None and reach.holds and probe.agrees
                and round(mistral_reach / 1000) == MISTRAL_REACH_K)


def evidence_c8(loaded: Any) -> Evidence:
    n_layers = loaded.config.n_layers
    rule = rf.theoretical_reach(n_layers, C8_WINDOW)
    run = rf.run(loaded, "forced", C8_WINDOW, rule + C8_MARGIN, C8_SEED)
    probe = run.probe
    reach = rf.measured_reach(probe)
    mistral = rf.theoretical_reach(MISTRAL_LAYERS, MISTRAL_WINDOW)
    agree = sum(a == b for a, b in zip(probe.predicted, probe.measured))
    return Evidence(
        claim="C8", passed=c8_holds(probe, mistral),
        measures=(Measure("claims.m.c8_rule", rule, "tok"),
                  Measure("claims.m.c8_farthest", float("nan") if reach.farthest_changed is None
                          else reach.farthest_changed, "tok"),
                  Measure("claims.m.c8_nearest", float("nan") if reach.nearest_unchanged is None
                          else reach.nearest_unchanged, "tok"),
                  Measure("claims.m.c8_agree", agree / len(probe.distances) * 100, "%"),
                  Measure("claims.m.c8_mistral", mistral, "tok", 6)),
        criterion="claims.C8.criterion", tab=TAB, section=SECTION_RF,
        fields={"window": C8_WINDOW, "layers": n_layers, "last": rule - 1},
        model=loaded.name)


def c10_holds(verdict: sinks.SinkVerdict, stream: dict) -> bool:
    """C10's criterion: the sink is there (sink_verdict) and evicting it hurts
    (streaming.eviction_hurts)."""
    return bool(verdict.holds and streaming.eviction_hurts(stream))


def c10_stream(loaded: Any) -> dict:
    """Perplexities past the window and their verdict for the tab's policies (full / window only
    / sinks + window, and on a model with sliding layers sinks in its global layers only) on the
    first C10_STREAM_TOKENS tokens of the long text: the tab's run, with a private cache."""
    return streaming.run(loaded, C10_STREAM_TOKENS, C10_WINDOW, C10_SINKS, streaming.StreamingCache()).numbers


def evidence_c10(loaded: Any) -> Evidence:
    grid = sinks.run(loaded, C10_SINK_TOKENS, C10_SINKS, False, 0.0).grid
    verdict = sinks.sink_verdict(grid)
    stream = c10_stream(loaded)
    ppl = stream["perplexity"]
    return Evidence(
        claim="C10", passed=c10_holds(verdict, stream),
        measures=(Measure("claims.m.c10_sink_share", verdict.share * 100, "%"),
                  Measure("claims.m.c10_mass", verdict.mean_first),
                  Measure("claims.m.c10_uniform", verdict.uniform),
                  Measure("claims.m.c10_ppl_full", ppl["full"]),
                  Measure("claims.m.c10_ppl_window", ppl["window"]),
                  Measure("claims.m.c10_ppl_sinks", ppl["sinks"])),
        criterion="claims.C10.criterion", tab=TAB, section=SECTION_SINKS,
        fields={"need": sinks.SINK_SHARE, "factor": sinks.SINK_FACTOR,
                "degrade": streaming.DEGRADE_RATIO, "n": C10_STREAM_TOKENS, "window": C10_WINDOW,
                "sinks": C10_SINKS},
        model=loaded.name)
