"""Generate & KV cache tab: tokens stream while the real cache grows (C3, C9), the same steps
without a cache (C1), cached logits against a full forward (C4), cache policies, and a
calculator of published shapes (C3, C5, C6) with a decode roofline (C2).

Thin wiring over explorer/kvcache.py: handlers validate, call it, and turn its Session into
outputs. Per-visitor data (the table of runs) lives in gr.State.
"""
from __future__ import annotations

import time
from typing import Any

import gradio as gr
from gradio.components.plot import PlotData
import pandas as pd

from explorer import kvcache
from explorer.i18n import normalize_language
from explorer.inputs import InputError, whole_number
from explorer.ui import TabContext

TITLE = "generate.tab"
CHART_INTERVAL_S = 0.5   # charts are rebuilt at most this often while tokens stream
TEXT_INTERVAL_S = 0.15   # streamed text: at most ~7 messages a second (kvcache.in_background)
HISTORY_ROWS = 8
DEFAULT_PROMPT = "Explain in two sentences why a language model caches keys and values."
LONG_PROMPT_CHARS = 2600  # ≈ 600 tokens of the shipped English text: past Gemma's 512 window


HISTORY_COLUMNS = ("run", "model", "policy", "prompt", "new", "cache", "c3", "c4", "text")


def _plot_data(figure) -> PlotData:
    """A Plotly figure as gr.Plot sends it (what Plot.postprocess returns), built once so that
    re-sending an unchanged chart costs nothing."""
    return PlotData(type="plotly", plot=figure.to_json())


def _policy_text(t, lang: str, request: kvcache.Request) -> str:
    if request.policy == "full":
        return t.text("generate.policy.full", lang)
    if request.policy == "window":
        return f"{t.text('generate.policy.window', lang)} = {request.window}"
    return f"{request.sinks} + {request.window} ({t.text('generate.policy.sinks', lang)})"


def history_frame(t, lang: str, rows: list[dict]) -> pd.DataFrame:
    headers = [t.text(f"generate.col.{c}", lang) for c in HISTORY_COLUMNS]
    return pd.DataFrame([[row[c] for c in HISTORY_COLUMNS] for row in rows], columns=headers)


def status_text(t, lang: str, session: kvcache.Session) -> str:
    rate = session.decode_rate()
    fields = dict(n=len(session.records), total=session.request.max_new_tokens,
                  prompt=session.n_prompt, ttft=session.first_token_s or 0.0,
                  chat=t.text("generate.status.chat", lang) if session.chat else "",
                  rate=t.text("generate.status.rate", lang, rate=rate) if rate else "")
    if session.phase == "checking":
        return t.text("generate.status.checking", lang)
    if session.phase == "replay":
        return t.text("generate.status.replay", lang, n=len(session.replay),
                      total=len(kvcache.replay_targets(session.records)))
    if session.phase == "done":
        reason_key = f"generate.reason.{session.stopped or 'length'}"
        reason = t.text(reason_key, lang, s=kvcache.DEADLINE_S) if session.stopped == "deadline" \
            else t.text(reason_key, lang)
        return t.text("generate.status.done", lang, reason=reason, **fields)
    return t.text("generate.status.running", lang, **fields)


def evidence_text(t, lang: str, session: kvcache.Session) -> str:
    if not session.records:
        return ""
    config, last = session.config, session.records[-1]
    formula = kvcache.formula_layer_bytes(config, session.layouts, last.context, session.element_bytes)
    per_token = kvcache.formula_bytes_per_token(config.n_layers, config.n_kv_heads, config.head_dim,
                                                session.element_bytes)
    match = session.bytes_match_formula()
    lines = [t.text("generate.ev.c3", lang, t=last.context, measured=sum(last.cache_bytes),
                    formula=sum(formula), steps=len(session.records),
                    match=t.text("generate.ev.equal" if match else "generate.ev.differ", lang),
                    layers=config.n_layers, kv=config.n_kv_heads, d=config.head_dim,
                    b=session.element_bytes, full=per_token * last.context)]
    capped = [lay for lay in session.layouts if lay.capacity is not None]
    if capped:
        cap = min(lay.capacity for lay in capped)
        held = min(last.cache_lengths[lay.layer] for lay in capped)
        lines.append(t.text("generate.ev.c9", lang, capped=len(capped), held=held, cap=cap,
                            full=len(session.layouts) - len(capped), t=last.context))
    if session.replay:
        point = session.replay[-1]
        cached = next(r for r in session.records if r.context == point.context)
        text = t.text("generate.ev.c1", lang, t=point.context, cached=cached.latency_s * 1e3,
                      cs=cached.score_entries, uncached=point.latency_s * 1e3, us=point.score_entries,
                      ratio=point.latency_s / max(cached.latency_s, 1e-9),
                      sratio=point.score_entries / max(cached.score_entries, 1))
        if session.request.temperature == 0.0:
            text += t.text("generate.ev.c1_tokens", lang, n=len(session.replay),
                           same=sum(p.same_token for p in session.replay))
        if session.replay_note == "budget":
            text += t.text("generate.ev.c1_budget", lang, s=kvcache.REPLAY_BUDGET_S)
        lines.append(text)
    if session.logit_diffs:
        diff = session.max_logit_diff()
        ok = diff <= kvcache.C4_TOLERANCE
        lines.append(t.text("generate.ev.c4", lang, n=len(session.logit_diffs), diff=diff,
                            tol=kvcache.C4_TOLERANCE,
                            verdict=t.text("generate.ev.within" if ok else "generate.ev.beyond", lang)))
    return "\n\n".join(lines)


def history_row(t, lang: str, session: kvcache.Session, run: int) -> dict:
    last = session.records[-1]
    diff = session.max_logit_diff()
    text = session.text.replace("\n", " ")
    return {"run": run, "model": session.model_name, "policy": _policy_text(t, lang, session.request),
            "prompt": session.n_prompt, "new": len(session.records),
            "cache": kvcache.format_bytes(sum(last.cache_bytes)),
            "c3": "✓" if session.bytes_match_formula() else "✗",
            "c4": "—" if diff is None else f"{diff:.1e}",
            "text": text if len(text) <= 90 else text[:87] + "…"}


def settle_runs(t, lang: str, runs) -> list[dict]:
    """The visitor's runs with a run still marked in progress shown as stopped: Stop cancels
    the generator before it can write its last row, so the row written with the last chart
    (partial=True) is the stopped run's record."""
    settled = []
    for row in runs or []:
        if row.get("partial"):
            row = {**row, "partial": False, "new": t.text("generate.row.stopped", lang, n=row["new"])}
        settled.append(row)
    return settled


def _plain_errors(stream, t, lang: str):
    """The engine refuses impossible requests with ValueError: show it as a plain gr.Error."""
    try:
        yield from stream
    except ValueError as error:
        raise gr.Error(t.text("generate.error.stopped_model", lang, error=error)) from None


def calculator(t, runtime, model_name: Any, lang: Any, tokens: Any, element_bytes: Any,
               roof_context: Any = 512):
    """Calculator tables and the roofline. The loaded model's row appears once it is loaded."""
    lang = normalize_language(lang)
    try:
        n = whole_number(tokens, "Context length", 1, 10_000_000)
        b = whole_number(element_bytes, "Bytes per element", 1, 8)
        roof_t = whole_number(roof_context, "Roofline context", 1, 10_000_000)
    except InputError as error:
        raise gr.Error(str(error)) from None
    loaded_shape, roofline, note = None, None, t.text("generate.roofline_none", lang)
    if isinstance(model_name, str) and model_name in runtime.names() and runtime.is_loaded(model_name):
        loaded = runtime.get(model_name)
        loaded_shape = kvcache.shape_from_config(f"{getattr(loaded.spec, 'title', model_name)} (loaded)",
                                                 loaded.config)
        n_params = sum(p.numel() for p in loaded.model.parameters())
        context = min(roof_t, loaded.config.max_position_embeddings)
        roofline = kvcache.roofline_figure(loaded.config, n_params, b, context, lang=lang)
        note = ""
    at = f"at {n:,} tokens"
    headers = {key: t.text(f"generate.calc.col.{slug}", lang, n=f"{n:,}") for key, slug in (
        ("model", "model"), ("attention", "attention"), ("layers", "layers"),
        ("q heads : kv heads", "heads"), ("d_head", "d_head"), ("elements / token / layer", "elements"),
        ("per token", "per_token"), (at, "at"), ("source", "source"), ("variant", "variant"),
        ("q heads", "q_heads"), ("kv heads", "kv_heads"))}
    rows = kvcache.calculator_rows(n, b, loaded_shape)
    table = pd.DataFrame(rows).drop(columns=["per_token_bytes", "total_bytes"]).rename(columns=headers)
    variants = pd.DataFrame(kvcache.head_variants(kvcache.SHAPES[1], n, b)).drop(
        columns=["total_bytes"]).rename(columns=headers)
    return table, variants, roofline, note


def build(ctx: TabContext) -> None:
    t = ctx.t
    gr.Markdown(t("generate.intro"))
    with gr.Row(equal_height=False):
        with gr.Column(scale=3):
            prompt = gr.Textbox(value=DEFAULT_PROMPT, label=t("generate.prompt"), lines=4, max_lines=12,
                                info=t("generate.prompt_info"), elem_id="gen-prompt")
            with gr.Row():
                start = gr.Button(t("generate.start"), variant="primary", elem_id="gen-start")
                stop = gr.Button(t("generate.stop"), variant="stop", elem_id="gen-stop")
                long_prompt = gr.Button(t("generate.long"), variant="secondary", size="sm",
                                        elem_id="gen-long")
            output = gr.Textbox(label=t("generate.output"), lines=5, max_lines=14, interactive=False,
                                autoscroll=True, elem_id="gen-output")
            status = gr.Markdown(elem_id="gen-status")
            # Written by Stop, cleared by the next run's first message: a component of its own,
            # so that a token message already in flight when Stop is pressed cannot overwrite it.
            stopped_note = gr.Markdown(elem_id="gen-stopped")
        with gr.Column(scale=2, min_width=300):
            with gr.Accordion(t("generate.sampling"), open=True):
                max_new = gr.Slider(1, kvcache.MAX_NEW_TOKENS, value=48, step=1,
                                    label=t("generate.max_new"), elem_id="gen-max-new")
                with gr.Row():
                    temperature = gr.Slider(0.0, kvcache.MAX_TEMPERATURE, value=0.0, step=0.05,
                                            label=t("generate.temperature"))
                    top_k = gr.Slider(0, 200, value=0, step=1, label=t("generate.top_k"))
                with gr.Row():
                    top_p = gr.Slider(0.05, 1.0, value=1.0, step=0.05, label=t("generate.top_p"))
                    seed = gr.Number(value=0, precision=0, minimum=0, label=t("generate.seed"))
            policy = gr.Radio([(t("generate.policy.full"), "full"), (t("generate.policy.window"), "window"),
                               (t("generate.policy.sinks"), "sinks")], value="full",
                              label=t("generate.policy"), elem_id="gen-policy")
            with gr.Row():
                window = gr.Slider(1, 1024, value=64, step=1, label=t("generate.window"))
                sinks = gr.Slider(0, 16, value=4, step=1, label=t("generate.sinks"))
            compare = gr.Checkbox(value=True, label=t("generate.compare"))
            check = gr.Checkbox(value=True, label=t("generate.check"))
    latex = [{"left": "$$", "right": "$$", "display": True}, {"left": "$", "right": "$", "display": False}]
    gr.Markdown(t("generate.formula"), latex_delimiters=latex, elem_id="gen-formula")
    with gr.Row(equal_height=True):
        bars = gr.Plot(kvcache.empty_figure(), show_label=False, elem_id="gen-bars")
        growth = gr.Plot(kvcache.empty_figure(), show_label=False, elem_id="gen-growth")
    with gr.Row(equal_height=True):
        latency = gr.Plot(kvcache.empty_figure(height=440), show_label=False, elem_id="gen-latency")
        diff = gr.Plot(kvcache.empty_figure(), show_label=False, elem_id="gen-diff")
    gr.Markdown(t("generate.mask_note"), latex_delimiters=latex)
    mask = gr.Plot(kvcache.empty_figure(height=260), show_label=False, elem_id="gen-mask")
    evidence = gr.Markdown(elem_id="gen-evidence")
    history_state = gr.State([])
    history = gr.Dataframe(history_frame(t, "en", []), label=t("generate.history"), interactive=False,
                           wrap=True, elem_id="gen-history",
                           column_widths=["5%", "14%", "16%", "8%", "11%", "9%", "8%", "8%", "21%"])
    with gr.Accordion(t("generate.calculator"), open=False, elem_id="gen-calculator"):
        gr.Markdown(t("generate.calc_formulas"), latex_delimiters=latex)
        with gr.Row():
            calc_tokens = gr.Number(value=32768, precision=0, minimum=1, label=t("generate.calc_tokens"))
            calc_bytes = gr.Dropdown([("fp16 / bf16 (2)", 2), ("fp32 (4)", 4), ("fp8 / int8 (1)", 1)],
                                     value=2, label=t("generate.calc_bytes"))
        calc_table = gr.Dataframe(interactive=False, wrap=True, elem_id="gen-calc-table",
                                  column_widths=["12%", "8%", "14%", "9%", "6%", "9%", "9%", "10%", "23%"])
        gr.Markdown(t("generate.calc_variants"))
        variants_table = gr.Dataframe(interactive=False, elem_id="gen-variants")
        gr.Markdown(t("generate.roofline"), latex_delimiters=latex)
        roof_context = gr.Slider(1, 8192, value=512, step=1, label=t("generate.roof_context"))
        roofline_note = gr.Markdown()
        roofline = gr.Plot(show_label=False, elem_id="gen-roofline")

    last_session = gr.State(None)  # the visitor's last finished run, re-drawn on a language switch
    # The table of runs is not an output of the streaming run: it is drawn after the run (and by
    # Stop) from history_state, so no message still in flight after Stop can overwrite it.
    outputs = [output, status, bars, growth, latency, diff, mask, evidence, history_state,
               last_session, stopped_note]

    def run(model_name, lang, text, n_new, temp, k, p, seed_value, policy_value, w, s,
            compare_value, check_value, runs):
        lang = normalize_language(lang)
        started = time.perf_counter()
        try:
            request = kvcache.parse_request(text, n_new, temp, k, p, seed_value, policy_value, w, s,
                                            compare_value, check_value)
        except InputError as error:
            raise gr.Error(str(error)) from None
        loaded = ctx.load(model_name)
        ids, chat = kvcache.prompt_ids(loaded.tokenizer, request.prompt)
        try:
            kvcache.check_prompt_length(len(ids), request, loaded.config.max_position_embeddings)
        except InputError as error:
            raise gr.Error(str(error)) from None
        runs = settle_runs(t, lang, runs)[-(HISTORY_ROWS - 1):]
        run_number = (runs[-1]["run"] + 1) if runs else 1
        # The first token goes out alone (text and status); the charts follow with the next one
        # and are redrawn at most every CHART_INTERVAL_S. In between, a message re-sends the
        # last charts as PlotData (serialized once; Gradio passes it through), not gr.skip():
        # Gradio 6 answers each skip by building a fresh component and its config (~1 ms of
        # Python each), work that takes the GIL and a core from the decode.
        held = None   # outputs 3..8 of the last chart message, re-sent while only text changes
        diff = mask = gr.skip()
        first = True  # the first message also clears the previous run's "Stopped."
        last_charts = 0.0
        session = None
        # Decoding runs in a worker thread: Gradio's work per yield overlaps with it instead of
        # adding to every step; closing this generator (Stop, closed tab) stops the worker.
        stream = kvcache.in_background(lambda should_stop: kvcache.stream_generation(
            loaded.model, loaded.tokenizer, ids, request, should_stop=should_stop,
            model_name=getattr(loaded.spec, "title", loaded.name), chat=chat, started=started,
            deadline=started + kvcache.DEADLINE_S), min_interval_s=TEXT_INTERVAL_S)
        for session in _plain_errors(stream, t, lang):
            now = time.perf_counter()
            if session.streaming and (first or now - last_charts < CHART_INTERVAL_S):
                rest = held if held is not None else (gr.skip(),) * 6
                yield (session.text, status_text(t, lang, session), *rest, gr.skip(), gr.skip(),
                       "" if first else gr.skip())
                first = False
                continue
            last_charts = now
            # C4 is computed after decoding: while decoding, its chart is cleared once (of the
            # previous run's points) and then left alone; the mask is drawn once decoding ends.
            if session.phase != "decode" or held is None:
                diff = _plot_data(kvcache.logit_diff_figure(session, lang))
            if session.phase != "decode":
                mask = _plot_data(kvcache.mask_figure(session, lang))
            done = session.phase == "done"
            row = history_row(t, lang, session, run_number)
            held = (_plot_data(kvcache.layer_bytes_figure(session, lang)),
                    _plot_data(kvcache.growth_figure(session, lang)),
                    _plot_data(kvcache.latency_figure(session, lang)), diff, mask,
                    evidence_text(t, lang, session))
            # the runs so far, this one included: marked partial until it is done, so that a
            # Stop (which cancels this generator) still leaves its row
            yield (session.text, status_text(t, lang, session), *held,
                   runs + [{**row, "partial": not done}], session if done else gr.skip(),
                   "" if first else gr.skip())
            first = False

    inputs = [ctx.model, ctx.lang, prompt, max_new, temperature, top_k, top_p, seed, policy, window,
              sinks, compare, check, history_state]
    event = start.click(run, inputs, outputs, api_name="generate", show_progress="minimal",
                        time_limit=int(kvcache.DEADLINE_S) + 30, **ctx.model_event)
    submitted = prompt.submit(run, inputs, outputs, api_visibility="private", show_progress="minimal",
                              time_limit=int(kvcache.DEADLINE_S) + 30, **ctx.model_event)
    def show_runs(lang, runs):
        """The visitor's table of runs, a stopped run included."""
        lang = normalize_language(lang)
        return history_frame(t, lang, settle_runs(t, lang, runs))

    event.then(show_runs, [ctx.lang, history_state], [history], api_name="runs")
    submitted.then(show_runs, [ctx.lang, history_state], [history], api_visibility="private")

    def on_stop(lang, runs):
        """Cancels the run. The note replaces the status line (hidden by style.css while the
        note shows): a token message already in flight could overwrite the status, not this."""
        lang = normalize_language(lang)
        partial = [row for row in runs or [] if row.get("partial")]
        note = t.text("generate.stopped_after", lang, n=partial[-1]["new"]) if partial \
            else t.text("generate.stopped", lang)
        runs = settle_runs(t, lang, runs)
        return note, history_frame(t, lang, runs), runs

    stop.click(on_stop, [ctx.lang, history_state], [stopped_note, history, history_state],
               cancels=[event, submitted], api_name="stop")

    def fill_long_prompt():
        from explorer.texts import long_text

        text = long_text()[:LONG_PROMPT_CHARS]
        return text[:text.rfind(" ")] if " " in text else text

    long_prompt.click(fill_long_prompt, None, [prompt], api_name="long_prompt")

    def calc(model_name, lang, tokens, element_bytes, context):
        return calculator(t, ctx.runtime, model_name, lang, tokens, element_bytes, context)

    calc_inputs = [ctx.model, ctx.lang, calc_tokens, calc_bytes, roof_context]
    calc_outputs = [calc_table, variants_table, roofline, roofline_note]
    calc_tokens.change(calc, calc_inputs, calc_outputs, api_name="kv_calculator")
    calc_bytes.change(calc, calc_inputs, calc_outputs, api_visibility="private")
    roof_context.change(calc, calc_inputs, calc_outputs, api_visibility="private")

    def calc_after_load(model_name, lang, tokens, element_bytes, context):
        # The loaded model's row and roofline need it loaded (the header loads it on page load).
        ctx.load(model_name)
        return calc(model_name, lang, tokens, element_bytes, context)

    ctx.demo.load(calc_after_load, calc_inputs, calc_outputs, api_visibility="private", **ctx.model_event)
    ctx.model.change(calc_after_load, calc_inputs, calc_outputs, api_visibility="private",
                     **ctx.model_event)
    ctx.lang.change(calc, calc_inputs, calc_outputs, api_visibility="private")
    def redraw(lang, session, runs):
        """The last run's computed text and charts in the newly chosen language (no model run)."""
        lang = normalize_language(lang)
        table = history_frame(t, lang, runs or [])
        if session is None:
            return (*([gr.skip()] * 7), table)
        return (status_text(t, lang, session), kvcache.layer_bytes_figure(session, lang),
                kvcache.growth_figure(session, lang), kvcache.latency_figure(session, lang),
                kvcache.logit_diff_figure(session, lang), kvcache.mask_figure(session, lang),
                evidence_text(t, lang, session), table)

    ctx.lang.change(redraw, [ctx.lang, last_session, history_state],
                    [status, bars, growth, latency, diff, mask, evidence, history], api_visibility="private")
