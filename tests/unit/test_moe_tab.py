"""The MoE tab (explorer/moe/, explorer/ui/tabs/moe.py) on the shipped explorer-moe checkpoints:
the experiments' numbers (routing, what-if views, parameters, time against k, preferences),
the handlers in both languages, the bad inputs, and the tab through gradio_client."""
from __future__ import annotations

import gradio as gr
import numpy as np
import pytest
import torch

from explorer.checkpoints import shipped
from explorer.moe import cost, params, preferences, routing, session
from explorer.ui.tabs import moe as tab
from models.forward import Recorder

TEXT = tab.DEFAULT_TEXT


@pytest.fixture(scope="module")
def moe_runtime():
    """A Runtime listing the shipped checkpoints (fp32 on the CPU)."""
    from explorer.runtime import Runtime

    entries = shipped.shipped_entries()
    assert set(shipped.MOE_NAMES) <= set(entries), "run python -m explorer.moe.train"
    return Runtime(device="cpu", dtype=torch.float32, registry=entries,
                   prepare=lambda name, progress=None: entries[name].prepare(progress))


@pytest.fixture(scope="module")
def bias_model(moe_runtime):
    return moe_runtime.get("explorer-moe-bias")


def tokens_of(loaded, text=TEXT):
    return session.tokenize(loaded.tokenizer, text)


# ---------------------------------------------------------------------------- routing

def test_routing_records_the_real_router(bias_model):
    model, toks = bias_model.model, tokens_of(bias_model)
    result = routing.run_routing(model, toks.ids, toks.texts)
    n_experts, k, has_bias = routing.moe_shape(model)
    assert has_bias and result.selection_bias
    assert result.probs.shape == (len(result.layers), len(toks.ids), n_experts)
    np.testing.assert_allclose(result.probs.sum(-1), 1.0, atol=1e-5)
    np.testing.assert_allclose(result.weights.sum(-1), 1.0, atol=1e-5)
    for j, layer in enumerate(result.layers):
        bias = model.blocks[layer].mlp.router.selection_bias.float().numpy()
        chosen = np.argsort(-(result.probs[j] + bias), axis=-1, kind="stable")[:, :k]
        assert (np.sort(chosen, -1) == np.sort(result.picks[j], -1)).all()
        picked = np.take_along_axis(result.probs[j], result.picks[j], -1)
        np.testing.assert_allclose(result.weights[j], picked / picked.sum(-1, keepdims=True), atol=1e-5)
        assert result.loads[j].counts.sum() == len(toks.ids) * k
    # recording changes nothing: the loss equals a plain forward's
    x = torch.tensor(toks.ids)[None]
    logits = model(x)
    plain = torch.nn.functional.cross_entropy(logits[0, :-1], x[0, 1:])
    assert result.loss == pytest.approx(float(plain), abs=1e-5)


def test_routing_view_shares_weights_and_leaves_the_model_alone(bias_model):
    model = bias_model.model
    view = routing.routing_view(model, top_k=4, selection_bias=False)
    assert routing.routing_view(model) is model
    ours = dict(model.named_parameters())
    theirs = dict(view.named_parameters())
    assert set(ours) - set(theirs) == {f"blocks.{i}.mlp.router.selection_bias" for i in range(4)}
    for name, q in theirs.items():
        assert ours[name].data_ptr() == q.data_ptr(), name
    ff, vff = model.blocks[0].mlp, view.blocks[0].mlp
    assert (ff.cfg.top_k, ff.router.cfg.top_k, ff.router.selection_bias is not None) == (2, 2, True)
    assert (vff.cfg.top_k, vff.router.cfg.top_k, vff.router.selection_bias) == (4, 4, None)
    with pytest.raises(ValueError):
        routing.routing_view(model, top_k=9)


def test_every_expert_at_k_equal_n_levels_the_load(bias_model):
    toks = tokens_of(bias_model)
    full = routing.run_routing(bias_model.model, toks.ids, toks.texts, top_k=8, selection_bias=False)
    assert all(l.max_over_mean == pytest.approx(1.0) and l.cv == pytest.approx(0.0) for l in full.loads)
    assert all(l.entropy == pytest.approx(np.log(8)) for l in full.loads)
    one = routing.run_routing(bias_model.model, toks.ids, toks.texts, top_k=1)
    assert one.picks.shape[-1] == 1 and np.allclose(one.weights, 1.0)


def test_load_stats_by_hand():
    stats = routing.load_stats([30, 10, 0, 0])
    assert stats["max_over_mean"] == pytest.approx(3.0)
    assert stats["min_share"] == 0.0
    assert stats["entropy"] == pytest.approx(-(0.75 * np.log(0.75) + 0.25 * np.log(0.25)))
    assert stats["cv"] == pytest.approx(np.std([0.75, 0.25, 0, 0]) / 0.25)


# ---------------------------------------------------------------------------- parameters (C14)

def test_published_counts_reproduce_the_stated_figures():
    counts = {c.name: c for c in params.published_counts()}
    mixtral, deepseek = counts["Mixtral 8x7B"], counts["DeepSeek-V3"]
    assert mixtral.total / 1e9 == pytest.approx(46.7, abs=0.05)
    assert mixtral.active / 1e9 == pytest.approx(12.9, abs=0.05)
    assert deepseek.total / 1e9 == pytest.approx(671, abs=1)
    assert deepseek.active / 1e9 == pytest.approx(37, abs=1)
    for c in counts.values():  # every model within 3% of what its authors state
        total, active = c.stated
        assert c.total / 1e9 == pytest.approx(total, rel=0.03), c.name
        assert min(c.active, c.active_without_embedding) / 1e9 <= active * 1.03 <= c.active / 1e9 * 1.2, c.name
    # total follows N, active follows k
    grown = params.count_params(params.scaled(deepseek_config(), n_experts=512))
    assert grown.total > 1.9 * deepseek.total
    # a token still runs 8 experts: only the router (one row per expert) grows
    assert grown.active - deepseek.active == grown.parts["routers"] - deepseek.parts["routers"] > 0
    more_k = params.count_params(params.scaled(deepseek_config(), top_k=16))
    assert more_k.total == deepseek.total and more_k.active > deepseek.active


def deepseek_config():
    from explorer.published import PUBLISHED
    return PUBLISHED["DeepSeek-V3"]["config"]


def test_our_count_matches_the_loaded_model(moe_runtime):
    import json

    for name in shipped.MOE_NAMES:
        loaded = moe_runtime.get(name)
        hf = json.loads((shipped.folder(name) / "config.json").read_text())
        count = params.count_params(hf, name)
        weights = sum(p.numel() for n, p in loaded.model.named_parameters() if not n.endswith("selection_bias"))
        assert count.total == weights
        per_expert, others = cost.expert_params(loaded.model)  # one expert (all layers), the rest
        biases = sum(p.numel() for n, p in loaded.model.named_parameters() if n.endswith("selection_bias"))
        assert count.active == others - biases + 2 * per_expert  # top-2 of 8 experts per layer
        assert count.total == others - biases + 8 * per_expert


# ---------------------------------------------------------------------------- cost vs k, preferences

def test_cost_rows_follow_k(bias_model):
    toks = tokens_of(bias_model)
    result = cost.run_cost(bias_model.model, toks.ids, ks=(1, 2, 4, 8), repeats=2)
    assert [r.k for r in result.rows] == [1, 2, 4, 8]
    assert len({r.total_params for r in result.rows}) == 1
    actives = [r.active_params for r in result.rows]
    assert actives[1] - actives[0] == (actives[3] - actives[2]) / 4 > 0
    assert all(r.expert_macs_per_token == r.k * result.rows[0].expert_macs_per_token for r in result.rows)
    assert all(r.ms_per_token > 0 for r in result.rows)


def test_char_kinds_follow_pythons_tokenizer():
    text = "if x == 1:  # one\n    s = 'a'\n"
    kinds = preferences.char_kinds(text)
    at = lambda sub: kinds[text.index(sub)]  # noqa: E731
    assert (at("if"), at("x"), at("=="), at("1"), at("# one"), at("'a'"), at("\n")) == \
        ("keyword", "name", "operator", "number", "comment", "string", "whitespace")
    # text Python cannot tokenize keeps a character-class guess
    assert preferences.char_kinds("'open")[1] == "name"


def test_preference_lifts_are_recounted(bias_model):
    """One window of held-out text: each expert's best lift, counted again by hand from the
    recorded picks."""
    model, tokenizer, layer = bias_model.model, bias_model.tokenizer, 3
    text = max(session.held_out_texts(), key=len)
    result = preferences.run_preferences(model, tokenizer, [text], layer, max_tokens=256, min_count=2)
    assert result.n_tokens == 256 and len(result.experts) == 8
    assert sum(p.share for p in result.experts) == pytest.approx(1.0)
    enc = tokenizer(text, return_offsets_mapping=True, add_special_tokens=False)
    strings = [text[a:b] for a, b in enc["offset_mapping"][:256]]
    rec = Recorder(["expert_picks"], layers=[layer])
    model(torch.tensor(enc["input_ids"][:256])[None], recorder=rec)
    picks = rec.get("expert_picks", layer)[0].numpy()                     # (256, 2)
    for pref in result.experts:
        rows = [i for i in range(256) if pref.expert in picks[i]]
        assert pref.share == pytest.approx(len(rows) / (2 * 256))
        if not pref.tokens:
            continue
        token, lift, times = pref.tokens[0]
        here = sum(strings[i] == token for i in rows)
        assert times == here
        assert lift == pytest.approx((here / len(rows)) / (strings.count(token) / 256), abs=1e-3)
        assert set(dict(pref.kinds)) == set(preferences.KINDS)


# ---------------------------------------------------------------------------- handlers

@pytest.mark.parametrize("lang", ["en", "zh"])
def test_handlers_in_both_languages(moe_runtime, lang):
    heat, summary, state = tab.route(moe_runtime, "explorer-moe-bias", TEXT, 3, lang)
    assert state["layer"] == 3 and len(heat.data[0].z) == 8
    assert (tab.draw_route(state, "zh")[1] != tab.draw_route(state, "en")[1])
    assert f"{state['result'].loss:.3f}" in summary
    load_fig, share_fig, table, balance = tab.compare(moe_runtime, TEXT, 3, lang)
    assert [r.variant for r in balance.routers] == ["none", "aux", "bias"]
    assert len(load_fig.data) == 6  # three routers: held-out files and the text
    assert len(table["value"]) == 3 * 2 * 4
    whatif_fig, whatif_text, whatif_result = tab.what_if(moe_runtime, "explorer-moe-bias", TEXT, 1, False, lang)
    assert whatif_result.alt.top_k == 1 and not whatif_result.alt.selection_bias
    assert f"{whatif_result.alt.loss:.3f}" in whatif_text
    params_fig, params_table, counts = tab.count(moe_runtime, lang)
    assert counts[0].name == shipped.MOE_NAMES[0] and len(params_table["value"]) == len(counts)
    chinese = any("\u4e00" <= ch <= "\u9fff" for ch in heat.layout.title.text)
    assert chinese == (lang == "zh")


def test_redraws_keep_the_numbers(moe_runtime):
    _, _, _, result = tab.compare(moe_runtime, TEXT, 2, "en")
    en, zh = tab.draw_compare(result, "en"), tab.draw_compare(result, "zh")
    assert [list(d.y) for d in en[0].data] == [list(d.y) for d in zh[0].data]
    assert [r[2:] for r in en[2]["value"]] == [r[2:] for r in zh[2]["value"]]
    assert en[2]["headers"] != zh[2]["headers"]


@pytest.mark.parametrize("args, message", [
    (("explorer-moe-bias", "", 3, "en"), "empty"),
    (("explorer-moe-bias", "x" * 9000, 3, "en"), "9,000 characters"),
    (("explorer-moe-bias", "a = 1\n" * 400, 3, "en"), "the limit here is 512"),
    (("explorer-moe-bias", TEXT, 7, "en"), "between 0 and 3"),
    (("explorer-moe-bias", TEXT, 1.5, "en"), "whole number"),
    (("explorer-dense", TEXT, 3, "en"), "no mixture-of-experts"),
    (("no-such-model", TEXT, 3, "en"), "Unknown model"),
    (("explorer-moe-bias", "", 3, "zh"), "空"),
])
def test_bad_inputs_get_clear_errors(moe_runtime, args, message):
    with pytest.raises(gr.Error, match=message):
        tab.route(moe_runtime, *args)


@pytest.mark.parametrize("k, message", [(0, "between 1 and 8"), (9, "between 1 and 8"), ("two", "number")])
def test_k_out_of_range(moe_runtime, k, message):
    with pytest.raises(gr.Error, match=message):
        tab.what_if(moe_runtime, "explorer-moe-bias", TEXT, k, True, "en")


def test_bias_flag_must_be_boolean(moe_runtime):
    with pytest.raises(gr.Error, match="on or off"):
        tab.what_if(moe_runtime, "explorer-moe-bias", TEXT, 2, "yes", "en")


def test_figures_draw_token_labels():
    assert routing.token_label(" x\n") == "·x↵"
    assert routing.token_label("") == "∅"


# ---------------------------------------------------------------------------- through the app


