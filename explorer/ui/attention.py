"""The Attention tab: maps under causal / window / sinks / sink-logit masks with the mask drawn
next to them, the grouped-query layout, attention sinks, the StreamingLLM experiment, the
receptive field through depth, and local vs global layers. Thin wiring over
explorer.attention_maps, explorer.sinks and explorer.receptive_field."""
from __future__ import annotations

import math
from typing import Any

import gradio as gr

from explorer import attention_maps as am
from explorer import receptive_field as rf
from explorer import sinks
from explorer.inputs import InputError, whole_number
from explorer.i18n import normalize_language
from explorer.texts import LONG_TEXT_SOURCE, long_text
from explorer.ui import TabContext

LATEX = [{"left": "$$", "right": "$$", "display": True}, {"left": "$", "right": "$", "display": False}]
DEFAULT_PROMPT = ("The cat sat on the mat because it was tired. Later that day, the dog came "
                  "in and sat next to the cat, and the")
LONG_TEXT_MAX = 4096
STREAM_DEFAULT_TOKENS = 2048

TITLE = "attention.tab"

# Column names of am.next_token_table (English there, kept in the stored data), per language here.
NEXT_TOKEN_COLUMNS = {"token": "attention.col.token", "p unmodified": "attention.col.p_base",
                      "p with this mask": "attention.col.p_mask"}


def _check_lang(lang: Any) -> str:
    return normalize_language(lang)


def _as_error(error: Exception) -> gr.Error:
    return gr.Error(str(error))


def _title(loaded) -> str:
    return getattr(loaded.spec, "title", loaded.name)


def _long_ids(loaded, n_tokens: int) -> list[int]:
    ids = loaded.tokenizer(long_text()).input_ids
    if n_tokens > len(ids):
        raise InputError(f"The long text has {len(ids)} tokens with this tokenizer; "
                                  f"asked for {n_tokens}.")
    return [int(i) for i in ids[:n_tokens]]


# ----------------------------------------------------------------------------- handlers (plain)


def compute_map(loaded, prompt, layer, head, mask_kind, window, sinks_n, sink_logit, impl,
                n_generate, lang: str = "en") -> tuple[Any, Any, dict, dict]:
    """(attention figure, mask figure, data, view) for the tab; raises InputError.
    `view` holds what redrawing another head, or in another language, needs (kept per
    visitor in gr.State)."""
    import time

    config = loaded.config
    choice = am.mask_choice(mask_kind, window, sinks_n, sink_logit)
    layer = whole_number(layer, "The layer", 0, config.n_layers - 1)
    if head in (None, "", "all"):
        head = None
    else:
        head = whole_number(head, "The head", 0, config.n_heads - 1)
    if impl not in am.IMPLS:
        raise InputError(f"Unknown attention path {impl!r}; choose eager or tiled.")
    n_generate = whole_number(n_generate, "The number of generated tokens", 0, am.MAX_GENERATED)
    limit = am.max_tokens(loaded.device)
    ids = am.encode_prompt(loaded.tokenizer, prompt, limit)
    if len(ids) + n_generate > limit:
        raise InputError(f"Prompt ({len(ids)} tokens) + {n_generate} generated tokens "
                                  f"exceeds the limit of {limit} tokens here.")
    start = time.perf_counter()
    model = loaded.model
    n_prompt = len(ids)
    all_ids = ids + am.greedy_continuation(model, ids, n_generate, choice)
    layer_map = am.layer_attention(model, all_ids, layer, choice, impl)
    if choice.is_default:
        base_logits = layer_map.last_logits
    else:
        base_logits = am.last_logits(model, all_ids)
    table, kl = am.next_token_table(loaded.tokenizer, base_logits, layer_map.last_logits)
    seconds = time.perf_counter() - start
    labels = am.token_labels(loaded.tokenizer, all_ids)
    view = {"layer_map": layer_map, "labels": labels, "n_prompt": n_prompt,
            "title": _title(loaded), "n_kv_heads": config.n_kv_heads, "n_heads": config.n_heads,
            "head": head}
    fig, mask_fig = redraw_map(view, lang)
    probs = layer_map.probs
    masked = probs[:, ~layer_map.visible]
    absorbed = layer_map.sink_mass
    data = {
        "model": loaded.name, "layer": layer, "head": "all" if head is None else head,
        "n_tokens": len(all_ids), "n_prompt": n_prompt, "n_generated": len(all_ids) - n_prompt,
        "mask": choice.describe(), "layer_mask": layer_map.layer_mask.describe(), "impl": impl,
        "row_sum_min": float(probs.sum(-1).min()), "row_sum_max": float(probs.sum(-1).max()),
        "masked_max": float(masked.abs().max()) if masked.numel() else 0.0,
        "mask_matches_nonzero": bool(((probs > 0).any(0) == layer_map.visible).all()),
        "sink_mass_mean": float(absorbed.mean()), "sink_mass_max": float(absorbed.max()),
        "visible_entries": int(layer_map.visible.sum()),
        "kl_nats": kl,
        "base_top": am.visible_token(loaded.tokenizer, int(base_logits.argmax())),
        "new_top": am.visible_token(loaded.tokenizer, int(layer_map.last_logits.argmax())),
        "seconds": seconds, "next_tokens": table.to_dict(orient="list"),
        "sink_logit": choice.sink_logit,
    }
    return fig, mask_fig, data, view


def _map_figure(view, lang: str):
    """The attention figure of a stored map, for the head it records (None: all heads)."""
    return am.attention_figure(view["layer_map"], view["labels"], view["head"], view["n_prompt"],
                               view["title"], view["n_kv_heads"], lang)


def redraw_head(view, head, lang: str = "en"):
    """The stored map drawn for another head (or all heads): no forward pass. The view
    records the head, so that a language switch redraws the same one."""
    if not view:
        return None
    view["head"] = None if head in (None, "", "all") else \
        whole_number(head, "The head", 0, view["n_heads"] - 1)
    return _map_figure(view, lang)


def redraw_map(view, lang: str):
    """(attention figure, mask figure) of a stored map in `lang`, or None: no forward pass."""
    if not view:
        return None
    return _map_figure(view, lang), am.mask_figure(view["layer_map"], view["labels"], lang)


def render_map(t, lang, data) -> str:
    if not data:
        return ""
    absorbed = ""
    if data.get("sink_logit") is not None:
        absorbed = t.text("attention.absorbed", lang, mean=data["sink_mass_mean"],
                          max=data["sink_mass_max"])
    yes_no = t.text("attention.yes" if data["mask_matches_nonzero"] else "attention.no", lang)
    return t.text("attention.map_summary", lang, layer=data["layer"], n_tokens=data["n_tokens"],
                  n_generated=data["n_generated"], mask=data["mask"], layer_mask=data["layer_mask"],
                  impl=data["impl"], seconds=data["seconds"], row_min=data["row_sum_min"],
                  row_max=data["row_sum_max"], absorbed=absorbed, masked_max=data["masked_max"],
                  mask_matches=yes_no, base_top=data["base_top"],
                  new_top=data["new_top"], kl=data["kl_nats"])


def next_token_frame(t, lang, data):
    """The next-token table of compute_map's data, its headers in `lang`."""
    import pandas as pd

    frame = pd.DataFrame(data["next_tokens"])
    return frame.rename(columns={c: t.text(key, lang) for c, key in NEXT_TOKEN_COLUMNS.items()})


def compute_groups(loaded, lang: str = "en") -> tuple[Any, dict]:
    config = loaded.config
    shapes = am.recorded_head_shapes(loaded.model)
    data = {"model": loaded.name, "title": _title(loaded), "n_heads": config.n_heads,
            "n_kv_heads": config.n_kv_heads, "n_rep": config.n_rep,
            "groups": am.head_groups(config), "shapes": {k: list(v) for k, v in shapes.items()},
            "layers": config.n_layers, "head_dim": config.head_dim,
            "cache_bytes_per_token_fp32": config.kv_bytes_per_token(4),
            "mha_bytes_per_token_fp32": 2 * config.n_layers * config.n_heads * config.head_dim * 4}
    return groups_figure(config, data, lang), data


def groups_figure(config, data, lang: str):
    """The head-group figure of compute_groups' data (drawn again on a language switch)."""
    return am.head_groups_figure(config, data["title"] + ":", lang)


def render_groups(t, lang, data) -> str:
    if not data:
        return ""
    s = data["shapes"]
    return t.text("attention.gqa_summary", lang, title=data["title"], n_heads=data["n_heads"],
                  n_kv=data["n_kv_heads"], n_rep=data["n_rep"], q_shape=tuple(s["q"]),
                  k_shape=tuple(s["k"]), v_shape=tuple(s["v"]), layers=data["layers"],
                  head_dim=data["head_dim"], cache=data["cache_bytes_per_token_fp32"],
                  mha=data["mha_bytes_per_token_fp32"])


def compute_sinks(loaded, n_tokens, n_sinks, use_logit, sink_logit, lang: str = "en"):
    limit = am.max_tokens(loaded.device)
    n_tokens = whole_number(n_tokens, "The number of tokens", 16, limit)
    n_sinks = whole_number(n_sinks, "The number of sinks s", 1, 64)
    b = None
    if use_logit:
        b = am.mask_choice("sink_logit", sink_logit=sink_logit).sink_logit
    ids = _long_ids(loaded, n_tokens)
    grid = sinks.sink_grid(loaded.model, ids, n_sinks, b)
    data = {"model": loaded.name, "title": _title(loaded), "n_tokens": n_tokens, "n_sinks": n_sinks,
            "sink_logit": b, "token0": am.token_text(loaded.tokenizer, ids[0]), "seconds": grid.seconds,
            "first_query": grid.first_query,
            "first": grid.first.round(5).tolist(), "first_s": grid.first_s.round(5).tolist(),
            "absorbed": grid.absorbed.round(5).tolist()}
    return (*sink_figures(data, lang), data)


def sink_figures(data, lang: str):
    """(first token, first s tokens, absorbed or None) grids of compute_sinks' data: drawn from
    the stored numbers, so the language switch redraws exactly what the handler drew."""
    return sinks.sink_figures(data["first"], data["first_s"], data["absorbed"], data["n_sinks"],
                              data["sink_logit"], data["title"], lang)


def render_sinks(t, lang, data) -> str:
    if not data:
        return ""
    import numpy as np

    first = np.array(data["first"])
    absorbed = ""
    if data.get("sink_logit") is not None:
        a = np.array(data["absorbed"])
        absorbed = t.text("attention.sink_absorbed", lang, b=data["sink_logit"], mean=a.mean(),
                          min=a.min(), max=a.max())
    return t.text("attention.sink_summary", lang, n_tokens=data["n_tokens"],
                  seconds=data["seconds"], token0=data["token0"], first_mean=first.mean(),
                  n_over_half=int((first > 0.5).sum()), n_cells=first.size, s=data["n_sinks"],
                  first_s_mean=float(np.mean(data["first_s"])), absorbed=absorbed)


def compute_streaming(loaded, n_tokens, window, n_sinks, cache: sinks.StreamingCache, progress=None,
                      lang: str = "en"):
    """(figure, data, curves): the curves (StreamingResults of this model and of the others
    measured with the same settings) are what the figure is drawn from, kept in gr.State."""
    n_tokens = whole_number(n_tokens, "The number of tokens", 64, LONG_TEXT_MAX)
    window = whole_number(window, "The window w", 1, n_tokens - 1)
    n_sinks = whole_number(n_sinks, "The number of sinks s", 1)
    if n_sinks >= window:
        raise InputError(f"The number of sinks s ({n_sinks}) must be smaller than the "
                                  f"window w ({window}).")
    ids = _long_ids(loaded, n_tokens)
    result = sinks.run_streaming(loaded.name, loaded.model, ids, window, n_sinks, cache, progress=progress)
    summary = sinks.streaming_summary(result)
    verdict = sinks.streaming_verdict(summary)
    data = {"model": loaded.name, "title": _title(loaded), "n_tokens": n_tokens, "window": window,
            "sinks": n_sinks, **summary, **verdict, "own_window": loaded.config.sliding_window,
            "other_models": [m for m in cache.models_with(n_tokens, window, n_sinks)
                             if m != loaded.name]}
    # every model measured with the same settings in this server goes on the same chart
    others = [r for r in cache.results(n_tokens, window, n_sinks)
              if r.model != loaded.name and len(r.nll) >= len(sinks.POLICIES)]
    curves = [result] + others
    return sinks.streaming_figure(curves, lang=lang), data, curves


def render_streaming(t, lang, data) -> str:
    if not data:
        return ""
    rows = []
    for policy, ppl in data["perplexity"].items():
        rows.append(f"| {sinks.policy_label(policy, data['window'], data['sinks'], lang)} | {ppl:.2f} | "
                    f"{data['ratio'][policy]:.2f}× | {data['seconds'][policy]:.0f} s |")
    text = t.text("attention.stream_table", lang, past=data["past_window_from"],
                  model=data["title"], n=data["n_tokens"], rows="\n".join(rows))
    text += "\n\n" + t.text("attention.stream_" + data["window_effect"], lang,
                            window_ratio=data["window_ratio"])
    closed = data["gap_closed"]
    if data["sinks_help"] and isinstance(closed, float) and math.isfinite(closed):
        text += t.text("attention.stream_sinks", lang, s=data["sinks"],
                       sinks_ratio=data["sinks_ratio"], closed=closed)
    elif not data["sinks_help"]:
        text += t.text("attention.stream_sinks_worse", lang, s=data["sinks"],
                       sinks_ratio=data["sinks_ratio"])
    if data.get("sinks_global_ratio") is not None:
        text += t.text("attention.stream_sinks_global", lang, global_ratio=data["sinks_global_ratio"])
        if data["sinks_global_ratio"] < 0.8 * data["sinks_ratio"] and data.get("own_window"):
            text += t.text("attention.stream_local_harm", lang, own_window=data["own_window"])
    if data.get("other_models"):
        text += "\n\n" + t.text("attention.stream_other", lang, models=", ".join(data["other_models"]))
    return text


def compute_receptive(loaded, mode, window, n_tokens, seed, lang: str = "en"):
    """(figure, data, view): the view keeps the probe's result, which the figure is drawn from."""
    import time

    limit = am.max_tokens(loaded.device)
    n_tokens = whole_number(n_tokens, "The number of tokens", 8, 2 * limit)
    seed = whole_number(seed, "The seed", 0, 2**31 - 1)
    if mode == "forced":
        window = whole_number(window, "The window w", 2, n_tokens)
        mask = am.MaskSpec(window=window)
        step_window = window
    elif mode == "own":
        mask = None
        step_window = loaded.config.sliding_window
        if step_window is None:
            step_window = n_tokens  # all global: every distance reaches at layer 0
    else:
        raise InputError(f"Unknown mode {mode!r}; choose forced or own.")
    ids = _long_ids(loaded, n_tokens)
    distances = rf.default_distances(n_tokens, step_window)
    start = time.perf_counter()
    result = rf.probe(loaded.model, ids, distances, mask, seed)
    seconds = time.perf_counter() - start
    view = {"result": result, "title": _title(loaded)}
    data = {"model": loaded.name, "mode": mode, "window": window if mode == "forced" else None,
            "n_tokens": n_tokens, "seed": seed, "distances": result.distances,
            "predicted_first_layer": result.predicted, "measured_first_layer": result.measured,
            "layer_windows": result.layer_windows, "agree": sum(
                p == m for p, m in zip(result.predicted, result.measured)),
            "seconds": seconds, "max_abs_delta": result.delta.max(axis=1).tolist()}
    return receptive_figure(view, lang), data, view


def receptive_figure(view, lang: str):
    return rf.receptive_figure(view["result"], view["title"] + ":", lang)


def render_receptive(t, lang, data) -> str:
    if not data:
        return ""
    windows = data["layer_windows"]
    compact = ", ".join(sorted({("global" if w is None else str(w)) for w in windows}))
    def cells(values):
        return " | ".join("—" if v is None else str(v) for v in values)

    lines = [f"| d | {cells(data['distances'])} |",
             "|---|" + "---|" * len(data["distances"]),
             f"| {t.text('attention.rf_rule', lang)} | {cells(data['predicted_first_layer'])} |",
             f"| {t.text('attention.rf_measured', lang)} | {cells(data['measured_first_layer'])} |"]
    return t.text("attention.rf_summary", lang, n_tokens=data["n_tokens"], windows=compact,
                  seconds=data["seconds"], batch=len(data["distances"]) + 1, agree=data["agree"],
                  total=len(data["distances"]), rows="\n".join(lines))


def reach_frame(loaded=None, window=None):
    import pandas as pd

    extra = []
    if loaded is not None and window:
        extra.append((f"{_title(loaded)} with a forced window", loaded.config.n_layers, int(window)))
    return pd.DataFrame(rf.reach_table(extra))


LG_LENGTHS = (128, 256, 512, 1024, 2048, 4096, 8192)


# Counts depend only on the checkpoint's config: computed once per model per process.
_LG_ROWS: dict[str, list] = {}


def compute_local_global(loaded, lang: str = "en"):
    rows = _LG_ROWS.get(loaded.name)
    if rows is None:
        rows = _LG_ROWS.setdefault(loaded.name, am.local_global_costs(loaded.model, LG_LENGTHS))
    config = loaded.config
    kinds = am.layer_kinds(config)
    data = {"model": loaded.name, "title": _title(loaded), "rows": rows,
            "n_local": kinds.count("local"), "n_global": kinds.count("global"),
            "window": config.sliding_window}
    return (*local_global_figures(config, data, lang), data)


def local_global_figures(config, data, lang: str):
    """(layer-type strip, cost figure) of compute_local_global's data (drawn again on a
    language switch)."""
    return am.layer_strip_figure(config, data["title"] + ":", lang), am.local_global_figure(data["rows"], lang)


def render_local_global(t, lang, data) -> str:
    if not data:
        return ""
    if not data["n_local"]:
        return t.text("attention.lg_no_local", lang, title=data["title"])
    last = data["rows"][-1]
    full_cache = last["cache bytes per global layer"] * (data["n_local"] + data["n_global"])
    return t.text("attention.lg_summary", lang, title=data["title"], n_local=data["n_local"],
                  n_global=data["n_global"], window=data["window"], n=last["n"],
                  ratio=last["scores, all layers"] / last["scores if all global"],
                  cache_ratio=last["cache bytes, all layers"] / full_cache)


def lg_frame(data):
    import pandas as pd

    if not data:
        return pd.DataFrame()
    frame = pd.DataFrame(data["rows"])
    frame["scores vs all global"] = (frame["scores, all layers"] / frame["scores if all global"]).map(
        lambda r: f"{r:.0%}")
    kinds = [k for k in ("local", "global") if data[f"n_{k}"]]
    columns = {"n": "n"}
    for k in kinds:
        columns[f"scores per {k} layer"] = f"scores / {k} layer"
        columns[f"cache bytes per {k} layer"] = f"cache B / {k} layer"
    columns["scores vs all global"] = "all layers vs all-global"
    return frame[list(columns)].rename(columns=columns)


def redraw_measured_figures(lang: str, sink_data, curves, rf_view) -> list:
    """The sink grids (first token, first s, absorbed), the StreamingLLM chart and the
    receptive-field chart in `lang`, from the stored measurements (no forward pass); None for
    a chart not drawn (yet)."""
    figures = [None] * 5
    if sink_data:
        figures[:3] = sink_figures(sink_data, lang)
    if curves:
        figures[3] = sinks.streaming_figure(curves, lang=lang)
    if rf_view:
        figures[4] = receptive_figure(rf_view, lang)
    return figures


# ----------------------------------------------------------------------------- the tab


def build(ctx: TabContext) -> None:
    t = ctx.t
    # measured StreamingLLM curves of this app instance, shared by its visitors (deterministic)
    streaming_cache = sinks.StreamingCache()
    gr.Markdown(t("attention.intro"), latex_delimiters=LATEX)
    with gr.Row():
        prompt = gr.Textbox(DEFAULT_PROMPT, label=t("attention.prompt"), lines=2, scale=4,
                            elem_id="attention-prompt")
        n_generate = gr.Slider(0, am.MAX_GENERATED, value=0, step=1, label=t("attention.generate"),
                               scale=1, elem_id="attention-generate")
    with gr.Row():
        layer = gr.Slider(0, 29, value=3, step=1, label=t("attention.layer"), elem_id="attention-layer")
        head = gr.Dropdown(choices=[("all", "all")] + [(str(h), str(h)) for h in range(9)],
                           value="all", label=t("attention.head"), elem_id="attention-head",
                           filterable=False)
        impl = gr.Radio(list(am.IMPLS), value="eager", label=t("attention.impl"),
                        info=t("attention.impl_info"), elem_id="attention-impl")
    with gr.Row():
        mask_kind = gr.Radio([(t("attention.mask.causal"), "causal"), (t("attention.mask.window"), "window"),
                              (t("attention.mask.sinks"), "sinks"),
                              (t("attention.mask.sink_logit"), "sink_logit")],
                             value="causal", label=t("attention.mask"), elem_id="attention-mask", scale=3)
        window = gr.Number(8, label=t("attention.window"), precision=0, elem_id="attention-window",
                           scale=1)
        sinks_n = gr.Number(2, label=t("attention.sinks"), precision=0, elem_id="attention-sinks",
                            scale=1)
        sink_logit = gr.Slider(-5, 10, value=1.0, step=0.1, label=t("attention.sink_logit"),
                               elem_id="attention-sink-logit", scale=2)
    run = gr.Button(t("attention.run"), variant="primary", elem_id="attention-run")
    with gr.Row():
        map_plot = gr.Plot(elem_id="attention-map", scale=3, show_label=False)
        mask_plot = gr.Plot(elem_id="attention-mask-plot", scale=2, show_label=False)
    map_summary = gr.Markdown(elem_id="attention-summary")
    next_tokens = gr.Dataframe(elem_id="attention-next-tokens", interactive=False)
    with gr.Accordion(t("attention.data"), open=False):
        map_data = gr.JSON(show_label=False)

    gr.Markdown(t("attention.gqa_heading"))
    groups_plot = gr.Plot(elem_id="attention-groups", show_label=False)
    groups_summary = gr.Markdown(elem_id="attention-groups-summary", latex_delimiters=LATEX)
    groups_data = gr.JSON(visible=False)

    gr.Markdown(t("attention.sinks_heading"), latex_delimiters=LATEX)
    gr.Markdown(t("attention.source"), elem_classes=["attention-source"])
    with gr.Row():
        sink_tokens = gr.Slider(16, 512, value=256, step=16, label=t("attention.sink_tokens"),
                                elem_id="sink-tokens")
        sink_count = gr.Number(4, label=t("attention.sinks"), precision=0, elem_id="sink-count")
        use_logit = gr.Checkbox(False, label=t("attention.use_sink_logit"), elem_id="sink-use-logit")
        sink_b = gr.Slider(-5, 10, value=2.0, step=0.1, label=t("attention.sink_logit"),
                           elem_id="sink-b")
    sink_run = gr.Button(t("attention.sink_run"), elem_id="sink-run")
    with gr.Row():
        sink_first = gr.Plot(elem_id="sink-first", show_label=False)
        sink_first_s = gr.Plot(elem_id="sink-first-s", show_label=False)
        sink_absorbed = gr.Plot(elem_id="sink-absorbed", show_label=False, visible=False)
    sink_summary = gr.Markdown(elem_id="sink-summary")
    with gr.Accordion(t("attention.data"), open=False):
        sink_data = gr.JSON(show_label=False)

    gr.Markdown(t("attention.stream_heading"), latex_delimiters=LATEX)
    gr.Markdown(t("attention.source"), elem_id="stream-source")
    with gr.Row():
        stream_tokens = gr.Slider(128, LONG_TEXT_MAX, value=STREAM_DEFAULT_TOKENS, step=64,
                                  label=t("attention.stream_tokens"), elem_id="stream-tokens")
        stream_window = gr.Number(256, label=t("attention.window"), precision=0, elem_id="stream-window")
        stream_sinks = gr.Number(4, label=t("attention.sinks"), precision=0, elem_id="stream-sinks")
    stream_run = gr.Button(t("attention.stream_run"), elem_id="stream-run")
    stream_plot = gr.Plot(elem_id="stream-plot", show_label=False)
    stream_summary = gr.Markdown(elem_id="stream-summary")
    with gr.Accordion(t("attention.data"), open=False):
        stream_data = gr.JSON(show_label=False)

    gr.Markdown(t("attention.rf_heading"), latex_delimiters=LATEX)
    with gr.Row():
        rf_mode = gr.Radio([(t("attention.rf_mode.forced"), "forced"), (t("attention.rf_mode.own"), "own")],
                           value="forced", label=t("attention.rf_mode"), elem_id="rf-mode")
        rf_window = gr.Number(8, label=t("attention.window"), precision=0, elem_id="rf-window")
        rf_tokens = gr.Slider(16, 1024, value=96, step=8, label=t("attention.rf_tokens"),
                              elem_id="rf-tokens")
        rf_seed = gr.Number(0, label=t("attention.seed"), precision=0, elem_id="rf-seed")
    rf_run = gr.Button(t("attention.rf_run"), elem_id="rf-run")
    rf_plot = gr.Plot(elem_id="rf-plot", show_label=False)
    rf_summary = gr.Markdown(elem_id="rf-summary")
    gr.Markdown(t("attention.reach_heading"), latex_delimiters=LATEX)
    reach = gr.Dataframe(reach_frame(), elem_id="rf-reach", interactive=False)
    with gr.Accordion(t("attention.data"), open=False):
        rf_data = gr.JSON(show_label=False)

    gr.Markdown(t("attention.lg_heading"), latex_delimiters=LATEX)
    lg_strip = gr.Plot(elem_id="lg-strip", show_label=False)
    lg_summary = gr.Markdown(elem_id="lg-summary")
    lg_plot = gr.Plot(elem_id="lg-plot", show_label=False)
    lg_table = gr.Dataframe(elem_id="lg-table", interactive=False)
    lg_data = gr.JSON(visible=False)

    # ---- handlers -------------------------------------------------------------------------

    def attention_map(model_name, lang, text, layer_value, head_value, kind, w, s, b, path, n_new,
                      progress=gr.Progress()):
        """Attention probabilities of one layer (one head or all) under the chosen mask."""
        loaded = ctx.load(model_name, progress)
        try:
            fig, mask_fig, data, view = compute_map(loaded, text, layer_value, head_value, kind, w,
                                                    s, b, path, n_new, _check_lang(lang))
        except (InputError, ValueError) as error:
            raise _as_error(error) from None
        return (fig, mask_fig, render_map(t, _check_lang(lang), data),
                next_token_frame(t, _check_lang(lang), data), data, view)

    def show_head(view, head_value, lang):
        try:
            fig = redraw_head(view, head_value, _check_lang(lang))   # also records the head
        except InputError as error:
            raise _as_error(error) from None
        return (gr.skip(), gr.skip()) if fig is None else (fig, view)

    def model_controls(model_name, lang, progress=gr.Progress()):
        """Layer / head ranges and local/global costs of the selected model. No forward pass
        (masks and the cache layout only), so it stays out of the model's queue and the page
        fills in even while someone else's long experiment runs."""
        loaded = ctx.load(model_name, progress)
        config = loaded.config
        lang = _check_lang(lang)
        strip, cost_fig, ldata = compute_local_global(loaded, lang)
        return (gr.update(maximum=config.n_layers - 1,
                          value=min(3, config.n_layers - 1)),
                gr.update(choices=[("all", "all")] + [(str(h), str(h)) for h in range(config.n_heads)],
                          value="all"),
                strip, render_local_global(t, lang, ldata), cost_fig, lg_frame(ldata), ldata,
                reach_frame())

    def head_groups(model_name, lang):
        """Which query heads share which KV head in the selected model."""
        loaded = ctx.load(model_name)
        fig, data = compute_groups(loaded, _check_lang(lang))
        return fig, render_groups(t, _check_lang(lang), data), data

    def local_global(model_name, lang):
        """Layer types and score / cache cost per layer kind as n grows."""
        loaded = ctx.load(model_name)
        strip, cost_fig, data = compute_local_global(loaded, _check_lang(lang))
        return strip, render_local_global(t, _check_lang(lang), data), cost_fig, lg_frame(data), data

    def sink_grid(model_name, lang, n_tokens, n_sinks, with_logit, b, progress=gr.Progress()):
        """Attention mass on the first token(s) for every layer x head."""
        loaded = ctx.load(model_name, progress)
        try:
            first, first_s, absorbed, data = compute_sinks(loaded, n_tokens, n_sinks, with_logit, b,
                                                           _check_lang(lang))
        except (InputError, ValueError) as error:
            raise _as_error(error) from None
        absorbed_update = gr.update(value=absorbed, visible=absorbed is not None)
        return first, first_s, absorbed_update, render_sinks(t, _check_lang(lang), data), data

    def streaming_ppl(model_name, lang, n_tokens, w, s, progress=gr.Progress()):
        """Perplexity along the long text: full cache, window only, sinks + window."""
        loaded = ctx.load(model_name, progress)

        def report(fraction, message):
            progress(fraction, desc=message)

        try:
            fig, data, curves = compute_streaming(loaded, n_tokens, w, s, streaming_cache, report,
                                                  _check_lang(lang))
        except (InputError, ValueError) as error:
            raise _as_error(error) from None
        return fig, render_streaming(t, _check_lang(lang), data), data, curves

    def receptive_field(model_name, lang, mode, w, n_tokens, seed, progress=gr.Progress()):
        """Which layers' last hidden state changes when the token at distance d is replaced."""
        loaded = ctx.load(model_name, progress)
        try:
            fig, data, view = compute_receptive(loaded, mode, w, n_tokens, seed, _check_lang(lang))
        except (InputError, ValueError) as error:
            raise _as_error(error) from None
        table = reach_frame(loaded, data["window"])
        return fig, render_receptive(t, _check_lang(lang), data), table, data, view

    map_inputs = [ctx.model, ctx.lang, prompt, layer, head, mask_kind, window, sinks_n, sink_logit,
                  impl, n_generate]
    map_view = gr.State()
    map_outputs = [map_plot, mask_plot, map_summary, next_tokens, map_data, map_view]
    run.click(attention_map, map_inputs, map_outputs, api_name="attention_map", **ctx.model_event)
    mask_kind.change(attention_map, map_inputs, map_outputs, api_visibility="private",
                     **ctx.model_event)
    sink_logit.release(attention_map, map_inputs, map_outputs, api_visibility="private",
                       **ctx.model_event)
    layer.release(attention_map, map_inputs, map_outputs, api_visibility="private",
                  **ctx.model_event)
    # another head of the same map: redrawn from the probabilities already computed
    head.input(show_head, [map_view, head, ctx.lang], [map_plot, map_view], api_visibility="private")

    # API-only endpoints (the page refreshes both on load and on a model change, below);
    # wired first so they keep their names.
    groups_api = gr.Button(visible=False)
    groups_api.click(head_groups, [ctx.model, ctx.lang], [groups_plot, groups_summary, groups_data],
                     api_name="head_groups", **ctx.model_event)
    lg_api = gr.Button(visible=False)
    lg_api.click(local_global, [ctx.model, ctx.lang], [lg_strip, lg_summary, lg_plot, lg_table, lg_data],
                 api_name="local_global")  # masks and cache layout only, no forward

    control_outputs = [layer, head, lg_strip, lg_summary, lg_plot, lg_table, lg_data, reach]
    group_outputs = [groups_plot, groups_summary, groups_data]
    for trigger in (ctx.demo.load, ctx.model.change):
        # the head groups read the shapes of real q/k/v tensors: a (tiny) forward, so queued
        trigger(model_controls, [ctx.model, ctx.lang], control_outputs, api_visibility="private").then(
            head_groups, [ctx.model, ctx.lang], group_outputs, api_visibility="private",
            **ctx.model_event)

    sink_run.click(sink_grid, [ctx.model, ctx.lang, sink_tokens, sink_count, use_logit, sink_b],
                   [sink_first, sink_first_s, sink_absorbed, sink_summary, sink_data],
                   api_name="sink_grid", **ctx.model_event)
    # what the StreamingLLM and receptive-field charts are drawn from, for the language switch
    stream_view = gr.State()
    rf_view = gr.State()
    stream_run.click(streaming_ppl, [ctx.model, ctx.lang, stream_tokens, stream_window, stream_sinks],
                     [stream_plot, stream_summary, stream_data, stream_view], api_name="streaming_ppl",
                     **ctx.model_event)
    rf_run.click(receptive_field, [ctx.model, ctx.lang, rf_mode, rf_window, rf_tokens, rf_seed],
                 [rf_plot, rf_summary, reach, rf_data, rf_view], api_name="receptive_field", **ctx.model_event)

    # Server text follows the language switch, re-rendered from the data already measured.
    def rerender(lang, m, g, s, st, r, lg, view):
        lang = _check_lang(lang)
        figures = redraw_map(view, lang) or (gr.skip(), gr.skip())
        return (render_map(t, lang, m), render_groups(t, lang, g), render_sinks(t, lang, s),
                render_streaming(t, lang, st), render_receptive(t, lang, r),
                render_local_global(t, lang, lg), *figures,
                next_token_frame(t, lang, m) if m else gr.skip())

    def redraw_model_figures(lang, g, lg):
        """The head groups, layer strip and cost figures in the new language, from the config
        of the model they were drawn for and the stored costs (no forward pass)."""
        lang = _check_lang(lang)
        if not g or not lg:
            return gr.skip(), gr.skip(), gr.skip()
        return (groups_figure(ctx.load(g["model"]).config, g, lang),
                *local_global_figures(ctx.load(lg["model"]).config, lg, lang))

    def redraw_measured(lang, s, curves, view):
        lang = _check_lang(lang)
        return [gr.skip() if fig is None else fig for fig in redraw_measured_figures(lang, s, curves, view)]

    ctx.lang.change(rerender, [ctx.lang, map_data, groups_data, sink_data, stream_data, rf_data, lg_data,
                               map_view],
                    [map_summary, groups_summary, sink_summary, stream_summary, rf_summary, lg_summary,
                     map_plot, mask_plot, next_tokens],
                    api_visibility="private").then(
        redraw_model_figures, [ctx.lang, groups_data, lg_data], [groups_plot, lg_strip, lg_plot],
        api_visibility="private").then(
        redraw_measured, [ctx.lang, sink_data, stream_view, rf_view],
        [sink_first, sink_first_s, sink_absorbed, stream_plot, rf_plot], api_visibility="private")
