"""The claims board's evidence for C5, C8 and C10 (explorer/attention/evidence.py): each passes
on SmolLM2 with the numbers it reports, and its criterion fails on a deliberately broken input
(a cache sized by the query heads, a probe whose reach overshoots the rule, a model without
sinks, a StreamingLLM run where eviction costs nothing)."""
from __future__ import annotations

import dataclasses
import math

import numpy as np

from explorer.attention import evidence, groups, receptive_field as rf, sinks, streaming
from explorer.claims.evidence import Evidence
from explorer.locales import has, text

SMOL = "smollm2-135m-instruct"


def check_shape(result: Evidence, claim: str, section: str):
    assert isinstance(result, Evidence) and result.claim == claim and result.tab == "attention"
    assert result.section == section and result.model == SMOL
    assert result.criterion == f"claims.{claim}.criterion"
    for lang in ("en", "zh"):
        assert text(result.criterion, lang, **result.fields)
    for measure in result.measures:
        assert has(measure.label), measure.label


def test_c5_passes_on_smollm2_and_fails_on_a_cache_sized_by_query_heads(smol):
    result = evidence.evidence_c5(smol)
    check_shape(result, "C5", evidence.SECTION_GROUPS)
    values = {m.label.split(".")[-1]: m.value for m in result.measures}
    assert result.passed
    assert values == {"c5_q_heads": 9, "c5_kv_heads": 3, "c5_measured": 46080, "c5_mha": 138240,
                      "c5_gqa": 46080, "c5_mqa": 15360}
    run = groups.run(smol)
    broken = dataclasses.replace(run, cache_used=run.variant_bytes("mha") * run.tokens)
    assert not groups.cache_follows_kv_heads(broken)
    # MHA / GQA / MQA bytes not proportional to the KV heads: fails too
    skewed = dataclasses.replace(run, variants=tuple((n, h, b + (1 if n == "mqa" else 0))
                                                     for n, h, b in run.variants))
    assert not groups.cache_follows_kv_heads(skewed)
    # the board's verdict rests on the recorded heads and the filled cache; the variants'
    # proportionality (one formula) is a consistency check beside it
    assert groups.cache_holds_kv_heads(skewed) and not groups.variants_proportional(skewed)
    assert not groups.cache_holds_kv_heads(broken) and groups.variants_proportional(broken)
    assert [c.label for c in result.consistency] == ["claims.k.c5_proportional"] and result.consistent


def test_c8_passes_on_smollm2_and_fails_when_the_reach_overshoots(smol):
    result = evidence.evidence_c8(smol)
    check_shape(result, "C8", evidence.SECTION_RF)
    values = {m.label.split(".")[-1]: m.value for m in result.measures}
    assert result.passed
    assert values["c8_rule"] == 31 and values["c8_farthest"] == 30 and values["c8_nearest"] == 31
    assert values["c8_agree"] == 100 and values["c8_mistral"] == 131_041
    run = rf.run(smol, "forced", evidence.C8_WINDOW, 31 + evidence.C8_MARGIN, evidence.C8_SEED)
    assert evidence.c8_holds(run.probe, 131_041)
    # a probe where the token one past the reach still changed the last position (a mask
    # that leaks one more position per layer would do this)
    changed = run.probe.changed.copy()
    changed[run.probe.distances.index(31), -1] = True
    leaky = dataclasses.replace(run.probe, changed=changed)
    assert not evidence.c8_holds(leaky, 131_041)
    # the table must give ~131K for Mistral
    assert not evidence.c8_holds(run.probe, rf.theoretical_reach(32, 2048))


def test_c10_passes_on_smollm2_and_fails_without_a_sink_or_without_harm(smol):
    result = evidence.evidence_c10(smol)
    check_shape(result, "C10", evidence.SECTION_SINKS)
    values = {m.label.split(".")[-1]: m.value for m in result.measures}
    assert result.passed
    assert values["c10_sink_share"] >= 100 * sinks.SINK_SHARE
    assert values["c10_ppl_window"] > values["c10_ppl_sinks"] and math.isfinite(values["c10_ppl_full"])
    grid = sinks.run(smol, evidence.C10_SINK_TOKENS, evidence.C10_SINKS, False, 0.0).grid
    stream = evidence.c10_stream(smol)
    assert evidence.c10_holds(sinks.sink_verdict(grid), stream)
    # a model without sinks: attention spread uniformly over the visible keys
    flat = dataclasses.replace(grid, first=np.broadcast_to(grid.uniform[:, None], grid.first.shape).copy())
    assert not evidence.c10_holds(sinks.sink_verdict(flat), stream)
    # a run where evicting the first tokens costs nothing (window only = full cache)
    ratios = {"full": 1.0, "window": 1.0, "sinks": 1.0}
    harmless = {"ratio": ratios, "perplexity": ratios, "past_window_from": 36, "seconds": {}}
    assert not evidence.c10_holds(sinks.sink_verdict(grid),
                                  {**harmless, **streaming.streaming_verdict(harmless)})
