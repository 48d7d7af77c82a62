"""Generate & KV cache tab, four sections: a run that streams tokens while the real cache
grows (C3, C9), replays the same steps without a cache (C1) and checks the cached logits
against a full forward (C4), under a chosen cache policy; the calculator of published shapes
(C3, C5, C6); and the decode roofline of the loaded model on this device's measured roof, with
the engine's batched decode timed beside it (C2); and the class as one batch, the shared
decode loop live (C20, explorer/ui/tabs/generate_batch.py).

Thin wiring over explorer/generate/: module-level handlers check inputs, run the experiment and
keep its result in gr.State; the shell's language switch redraws every section from it.
"""
from __future__ import annotations

import time
from typing import Any, NamedTuple

import gradio as gr
from gradio.components.plot import PlotData
import pandas as pd

from explorer.generate import figures, shapes, tokens
from explorer.generate.request import (DEADLINE_S, DEFAULT_PROMPT, MAX_PROMPT_TOKENS, MAX_TEMPERATURE,
                                       TAB_MAX_NEW_TOKENS, check_context, encode_prompt,
                                       long_prompt, parse_request)
from explorer.generate.checks import CHECKS_WAIT_S
from explorer.generate.kept import keep_app_prompts
from explorer.generate.session import Session, stream_generation
from explorer.inputs import MAX_TEXT_CHARS, InputError
from explorer.lessons import generate_prompts
from explorer.locales import normalize_language, text
from explorer.prompts import CHARS_PER_TOKEN_BOUND, public_prefix
from explorer.serving import (MAX_BATCH, MAX_WAITING, Busy, TooManyRuns, Visitor, in_background,
                              scheduler_for)
from explorer.serving.pacing import PACES
from explorer.serving.priority import CHECKS_FIRST
from explorer.ui.page import views
from explorer.ui.tabs import generate_batch, generate_calculator, generate_precision, generate_roofline
from explorer.ui import LATEX, TabContext, bind, load_or_error, takes, visitor_errors
from explorer.web.gradio_context import client_alive, event_client, event_cookie
from explorer.web.drawn_route import PACED_COOKIE, mark_html
from explorer.web.stopping import Stops
from explorer.web.groups import GENERATE_CONCURRENCY_ID
from explorer.web.zerogpu import on_zerogpu

TITLE = "generate.tab"
CHART_INTERVAL_S = 0.5   # charts are rebuilt at most this often while tokens stream
SCHEDULER_CAPACITY = MAX_BATCH + MAX_WAITING   # runs the shared loop holds (batch + queue)
TEXT_INTERVAL_S = 0.15   # streamed text: at most ~7 messages a second (serving.in_background)
# ... and at most this many messages a second from all the runs of one shared step together:
# each message costs the server milliseconds of Python (Gradio's processing of ten outputs)
# that take the GIL and a core from the decode, so with N visitors in a step each visitor's
# text comes every N / MESSAGES_PER_S seconds, several tokens at a time.
MESSAGES_PER_S = 40
HISTORY_ROWS = 8

# the visitors' running runs, for their Stop buttons (stopping.py)
STOPS = Stops()

HISTORY_COLUMNS = ("run", "model", "policy", "prompt", "new", "cache", "c3", "c4", "text")


def _plot_data(figure) -> PlotData:
    """A Plotly figure as gr.Plot sends it (what Plot.postprocess returns), built once so that
    re-sending an unchanged chart costs nothing; the shared empty charts (figures.is_shared)
    are serialised once for every run."""
    if not figures.is_shared(figure):
        return PlotData(type="plotly", plot=figure.to_json())
    held = _SHARED_PLOTS.get(id(figure))
    if held is None or held[0] is not figure:
        held = _SHARED_PLOTS[id(figure)] = (figure, PlotData(type="plotly", plot=figure.to_json()))
    return held[1]


_SHARED_PLOTS: dict = {}   # id -> (shared empty figure, its PlotData)


# ----------------------------------------------------------------------------- the run section
def text_interval(session: Session) -> float:
    """Seconds between two text messages of a run whose last step was shared by N runs."""
    shared = session.records[-1].batch_size if session.records else 1
    return max(TEXT_INTERVAL_S, shared / MESSAGES_PER_S)


def policy_text(lang: str, policy: str, window: int, sinks: int) -> str:
    if policy == "full":
        return text("generate.policy.full", lang)
    if policy == "window":
        return f"{text('generate.policy.window', lang)} = {window}"
    return f"{sinks} + {window} ({text('generate.policy.sinks', lang)})"


def history_frame(lang: str, rows: list[dict]) -> pd.DataFrame:
    """The table of runs in `lang`: rows hold data (the policy as (kind, window, sinks), the
    new tokens and whether the run was stopped), words are chosen here."""
    def cell(row: dict, column: str):
        if column == "policy":
            return policy_text(lang, *row["policy"])
        if column == "new" and row.get("stopped"):
            return text("generate.row.stopped", lang, n=row["new"])
        return row[column]

    headers = [text(f"generate.col.{c}", lang) for c in HISTORY_COLUMNS]
    return pd.DataFrame([[cell(row, c) for c in HISTORY_COLUMNS] for row in rows], columns=headers)


def history_row(session: Session, run: int) -> dict:
    # a run can end before its first token (its deadline passed during the prefill): no cache yet
    cache_bytes = sum(session.records[-1].cache_bytes) if session.records else 0
    diff = session.max_logit_diff()
    generated = session.text.replace("\n", " ")
    request = session.request
    return {"run": run, "model": session.model_name,
            "policy": (request.policy, request.window, request.sinks),
            "prompt": session.n_prompt, "new": len(session.records),
            "cache": shapes.format_bytes(cache_bytes),
            "c3": "✓" if session.bytes_match_formula() else "✗",
            "c4": "—" if diff is None else f"{diff:.1e}",
            "stopped": session.stopped == "stop",
            "text": generated if len(generated) <= 90 else generated[:87] + "…"}


def settle_runs(runs) -> list[dict]:
    """The visitor's runs with a run still marked in progress marked stopped: a run closed
    from outside (a cancel through the API, a closed page) ends before it can write its last
    row, so the row sent with its last message (partial=True) is its record."""
    return [{**row, "partial": False, "stopped": True} if row.get("partial") else row
            for row in runs or []]


def _engine_errors(stream, lang: str):
    """The engine refuses impossible requests with ValueError: shown as the model's refusal;
    the shared loop's neutral Busy (batch and queue full) and TooManyRuns (the visitor's page
    or address has its share) in the visitor's words."""
    try:
        yield from stream
    except Busy as busy:
        raise InputError("generate.error.busy", capacity=busy.capacity) from None
    except TooManyRuns as refused:
        raise InputError(f"generate.error.runs_{refused.scope}", limit=refused.limit) from None
    except InputError:
        raise
    except ValueError as error:
        raise gr.Error(text("generate.error.stopped_model", lang, error=error),
                       print_exception=False) from None


class RunInputs(NamedTuple):
    """The run section's inputs by name, in the order its events send them; the names are the
    "generate" API's parameter names (run_generate's signature is made from them). Parsed once
    into a GenerationRequest (explorer.generate.request)."""
    model_name: Any      # the header's model picker
    lang: Any            # the header's language switch
    prompt: Any
    n_new: Any           # new tokens at most
    temp: Any            # temperature
    k: Any               # top-k (0: off)
    p: Any               # top-p
    seed_value: Any
    policy_value: Any    # "full" | "window" | "sinks"
    w: Any               # window
    s: Any               # sinks
    compare_value: Any   # replay the steps without a cache (C1)
    check_value: Any     # check the cached logits against a full forward (C4)
    runs: Any            # the visitor's table of runs (gr.State)
    last_session: Any = None   # the visitor's last finished run (gr.State)


class RunOutputs(NamedTuple):
    """The run section's outputs by name, in the order its events list them: a handler builds
    one message with every field named, and adding a chart is one field here, one component in
    _build_run and one value where the charts are drawn."""
    text: Any            # the generated text
    status: Any          # the status line
    bars: Any            # cache bytes per layer
    growth: Any          # cache bytes against tokens
    latency: Any         # time per token
    diff: Any            # cached vs full logits (C4)
    mask: Any            # the cache policy's mask
    evidence: Any        # the run's evidence lines
    runs: Any            # the visitor's runs (gr.State; the table is drawn after the run)
    last_session: Any    # the last finished run (gr.State), redrawn on a language switch
    strip: Any           # the token strip


CHARTS = ("bars", "growth", "latency", "diff", "mask", "evidence")   # drawn together
# the charts that grow with every token, and the function of explorer.generate.figures that draws each
GROWING = {"bars": "layer_bytes_figure", "growth": "growth_figure", "latency": "latency_figure"}


@visitor_errors
@takes(RunInputs)
def run_generate(runtime, *values: RunInputs):
    """Stream one generation (the values of RunInputs, in its order): a RunOutputs after every
    merged step, then after the checks."""
    form = RunInputs(*values)
    lang, last_session = form.lang, form.last_session
    lang = normalize_language(lang)
    started = time.perf_counter()
    request = parse_request(form.prompt, form.n_new, form.temp, form.k, form.p, form.seed_value,
                            form.policy_value, form.w, form.s, form.compare_value, form.check_value)
    loaded = load_or_error(runtime, form.model_name)
    ids, chat = encode_prompt(loaded.tokenizer, request.prompt)
    check_context(len(ids), request, loaded.config.max_position_embeddings)
    keep_prompts_of(loaded)
    # who sent it: the shared loop caps runs per session and per address, and copies another
    # visitor's keys for the chat template's tokens alone (never their text)
    visitor = Visitor(*event_client())
    public = public_prefix(loaded.tokenizer, ids) if chat else 0
    runs = settle_runs(form.runs)[-(HISTORY_ROWS - 1):]
    run_number = (runs[-1]["run"] + 1) if runs else 1
    # The first token goes out alone (text and status); the charts follow with the next one
    # and are redrawn at most every CHART_INTERVAL_S. In between, a message re-sends the
    # last charts as PlotData (serialized once; Gradio passes it through) and the states as
    # they are: Gradio diffs each message against the last, so a value the page already has
    # costs one comparison, and the page does not draw it again.
    held = None   # the CHARTS of the last chart message ({name: value}), re-sent while only text changes
    strip = gr.skip()   # the token strip, drawn with the charts and re-sent like them
    diff = mask = gr.skip()
    mask_from = None   # what the mask was drawn from: it changes only with the cache reading
    first = True
    last_charts = 0.0
    turn = 0   # which growing chart the next chart message redraws while decoding
    # Decoding runs in a worker thread: Gradio's work per yield overlaps with it instead of
    # adding to every step; closing this generator (a closed tab) stops the worker. Stop
    # raises this run's flag: the engine stops at its next step, and its last snapshot is this
    # handler's last message, drawn like any end (text, charts, row and status agree).
    stopped = STOPS.flag()
    # the page reports each message it has drawn (its status carries the mark): every message
    # but the last waits for the one before, so a slow page is never a backlog behind
    # (explorer/serving/pacing.py)
    pace = PACES.open(reports=event_cookie(PACED_COOKIE) == "1")
    stream = in_background(lambda should_stop: stream_generation(
        loaded.model, loaded.tokenizer, ids, request, should_stop=should_stop,
        model_name=getattr(loaded.spec, "title", loaded.name), chat=chat, started=started,
        deadline=started + DEADLINE_S, visitor=visitor, public_prefix=public,
        # a live class's teacher page (the server's grant, never a client's value) keeps its checks
        checks_wait_s=CHECKS_WAIT_S if CHECKS_FIRST.holds(visitor.session) else 0.0),
        min_interval_s=text_interval, alive=client_alive(),
        stop_requested=stopped.is_set, pace=pace)
    for session in _engine_errors(stream, lang):
        now = time.perf_counter()
        status = figures.status(session, lang) + mark_html(pace, pace.sent)
        # a step shared by N visitors: each redraws its charts N times less often, so the
        # server's chart work stays ~2 a second however many are generating (it takes the
        # same cores as their shared decode)
        shared = session.records[-1].batch_size if session.records else 1
        done = session.phase == "done"
        # the runs so far, this one included, with every message: marked partial until it is
        # done, so that a run closed from outside still leaves its row (settle_runs)
        held_runs = runs + [{**history_row(session, run_number), "partial": not done}]
        # the step that ends decoding goes out with the text only, like the first: a later
        # snapshot always follows (the checks, or "done" at once) and draws the charts, so the
        # last tokens are not held up by charts drawn twice (a class whose runs end together
        # would build ~2 x 30 sets of them at that moment)
        ending = session.phase == "decode" and not session.streaming
        if done and stopped.moved():   # the class moved on: the page's move waits behind what
            # this message draws, so it is the text, the row and why, and no chart for a step left
            moved = text("generate.status.moved", lang, n=len(session.records))
            yield RunOutputs(text=session.text, status=moved, **dict.fromkeys(CHARTS, gr.skip()),
                             runs=held_runs, last_session=gr.skip(), strip=gr.skip())
            continue
        if ending or (session.streaming and (first or now - last_charts < CHART_INTERVAL_S * shared)):
            rest = held if held is not None else dict.fromkeys(CHARTS, gr.skip())
            yield RunOutputs(text=session.text, status=status, **rest,
                             runs=held_runs, last_session=last_session, strip=strip)
            first = False
            continue
        last_charts = now
        # C4 is computed after decoding: while decoding, its chart and the mask are cleared
        # once (of the previous run's) and then left alone; both are drawn once decoding ends.
        if session.phase != "decode" or held is None:
            diff = _plot_data(figures.logit_diff_figure(session, lang))
            drawn_from = (id(session.cache_reading), done, session.replay_note)
            if drawn_from != mask_from:   # not again for every replay step
                mask, mask_from = _plot_data(figures.mask_figure(session, lang)), drawn_from
        # while decoding, one growing chart per chart message, in turn: a page draws a message
        # as one task, and what it does next (a press, a class's move) waits behind that task
        names = tuple(GROWING) if held is None or not session.streaming else \
            (tuple(GROWING)[turn % len(GROWING)],)
        turn += 1
        drawn = {name: _plot_data(getattr(figures, GROWING[name])(session, lang)) for name in names}
        held = {**(held or {}), **drawn, "diff": diff, "mask": mask,
                "evidence": figures.summary(session, lang)}
        strip = tokens.strip_html(session, lang)
        if done:
            last_session = session
        yield RunOutputs(text=session.text, status=status, **held,
                         runs=held_runs, last_session=last_session, strip=strip)
        first = False


def keep_prompts_of(loaded) -> None:
    """The app's own Generate prompts kept computed in this model's shared loop (once a loop,
    explorer.generate.kept): a class pressing Start on the example or a lesson's prompt feeds
    only what differs from it. Not on ZeroGPU, where each run's loop lives in a GPU call of its
    own and would feed them again for every visitor."""
    if not on_zerogpu():
        keep_app_prompts(scheduler_for(loaded.model), loaded.tokenizer, generate_prompts())


@visitor_errors
def show_runs(lang, runs):
    """The visitor's table of runs, a stopped run included."""
    lang = normalize_language(lang)
    return history_frame(lang, settle_runs(runs))


def stopped_word(last, lang):
    """The last message of a run that Stop could not reach itself (in a ZeroGPU call, see
    explorer/web/stopping.py): the last message sent, its run's row marked stopped and the
    status saying so; "Stopped." for a run stopped in the queue."""
    lang = normalize_language(lang)
    if last is None:
        return RunOutputs(*(gr.skip(),) * len(RunOutputs._fields))._replace(
            status=text("generate.stopped", lang))
    last = RunOutputs(*last)
    row = last.runs[-1] if isinstance(last.runs, list) and last.runs else None
    if not isinstance(row, dict) or not row.get("partial"):
        return last   # it had ended: nothing was stopped
    row = {**row, "partial": False, "stopped": True}
    return last._replace(status=text("generate.stopped_after", lang, n=row["new"]),
                         runs=[*last.runs[:-1], row])


def draw_run(session: Session, lang: str):
    """The last finished run's status, charts and evidence in `lang` (no model run)."""
    return (figures.status(session, lang), *figures.figures(session, lang),
            figures.summary(session, lang))


def draw_strip(session: Session, lang: str):
    """The last finished run's token strip in `lang` (the probabilities are the run's)."""
    return tokens.strip_html(session, lang)


def draw_runs(runs, lang: str):
    return history_frame(lang, settle_runs(runs))


def build(ctx: TabContext) -> None:
    t = ctx.t
    gr.Markdown(t("generate.intro"))
    first = len(ctx.sections)
    with ctx.section("generate.section.run"):
        _build_run(ctx)
    with ctx.section("generate.section.calculator"):
        generate_calculator.build(ctx)
    with ctx.section("generate.section.roofline", elem_id="section-generate-roofline"):
        generate_roofline.build(ctx)
    with ctx.section("precision.section", elem_id=generate_precision.SECTION_ID):
        generate_precision.build(ctx)
    with ctx.section("serving.section", elem_id=generate_batch.SECTION_ID) as batch:
        generate_batch.build(ctx, batch, [tab for tab, _ in ctx.sections[first:] if tab is not batch])


def _build_run(ctx: TabContext) -> None:
    t = ctx.t
    with gr.Row(equal_height=False):
        with gr.Column(scale=3):
            prompt = gr.Textbox(value=DEFAULT_PROMPT, label=t("generate.prompt"), lines=4, max_lines=12,
                                info=t("generate.prompt_info"), elem_id="gen-prompt",
                                max_length=MAX_PROMPT_TOKENS * CHARS_PER_TOKEN_BOUND)
            with gr.Row():
                start = gr.Button(t("generate.start"), variant="primary", elem_id="gen-start")
                stop = gr.Button(t("generate.stop"), variant="stop", elem_id="gen-stop")
                long_button = gr.Button(t("generate.long"), variant="secondary", size="sm",
                                        elem_id="gen-long")
            output = gr.Textbox(label=t("generate.output"), lines=5, max_lines=14, interactive=False,
                                autoscroll=True, max_length=MAX_TEXT_CHARS, elem_id="gen-output")
            gr.Markdown(t("generate.tokens_note"), elem_id="gen-tokens-note")
            strip = gr.HTML("", elem_id="gen-tokens", css_template=tokens.STRIP_CSS,
                            js_on_load=tokens.STRIP_JS)
            status = gr.Markdown(elem_id="gen-status")
        with gr.Column(scale=2, min_width=300):
            with gr.Accordion(t("generate.sampling"), open=True):
                max_new = gr.Slider(1, TAB_MAX_NEW_TOKENS, value=48, step=1,
                                    label=t("generate.max_new"), elem_id="gen-max-new")
                with gr.Row():
                    temperature = gr.Slider(0.0, MAX_TEMPERATURE, value=0.0, step=0.05,
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
    gr.Markdown(t("generate.formula"), latex_delimiters=LATEX, elem_id="gen-formula")
    blank = figures.empty_figures()
    with gr.Row(equal_height=True):
        bars = gr.Plot(blank[0], show_label=False, elem_id="gen-bars")
        growth = gr.Plot(blank[1], show_label=False, elem_id="gen-growth")
    with gr.Row(equal_height=True):
        latency = gr.Plot(blank[2], show_label=False, elem_id="gen-latency")
        diff = gr.Plot(blank[3], show_label=False, elem_id="gen-diff")
    gr.Markdown(t("generate.mask_note"), latex_delimiters=LATEX)
    mask = gr.Plot(blank[4], show_label=False, elem_id="gen-mask")
    evidence = gr.Markdown(elem_id="gen-evidence")
    history_state = gr.State([])
    history = gr.Dataframe(history_frame("en", []), label=t("generate.history"), interactive=False,
                           wrap=True, elem_id="gen-history",
                           column_widths=["5%", "14%", "16%", "8%", "11%", "9%", "8%", "8%", "21%"])

    last_session = gr.State(None)  # the visitor's last finished run, redrawn on a language switch
    # The table of runs is not an output of the streaming run: it is drawn after the run (and by
    # Stop) from history_state, so no message still in flight after Stop can overwrite it.
    outputs = list(RunOutputs(text=output, status=status, bars=bars, growth=growth, latency=latency,
                              diff=diff, mask=mask, evidence=evidence, runs=history_state,
                              last_session=last_session, strip=strip))
    inputs = list(RunInputs(model_name=ctx.model, lang=ctx.lang, prompt=prompt, n_new=max_new,
                            temp=temperature, k=top_k, p=top_p, seed_value=seed,
                            policy_value=policy, w=window, s=sinks, compare_value=compare,
                            check_value=check, runs=history_state, last_session=last_session))
    handler = STOPS.stoppable(bind(run_generate, ctx.runtime), stopped_word)
    limit = int(DEADLINE_S) + 30
    # Not in the one-at-a-time "model" group: each loaded model's shared decode loop
    # (explorer/serving/scheduler.py) serialises the forwards and batches the visitors' steps,
    # so up to its capacity every run is admitted at once, and past it refused as busy.
    concurrency = {"concurrency_id": GENERATE_CONCURRENCY_ID, "concurrency_limit": SCHEDULER_CAPACITY}
    # a press while this page's last run is still pending runs once it ends, as every run button
    # a lesson presses does (lessons.presses_run_after_pending)
    event = start.click(handler, inputs, outputs, api_name="generate", show_progress="minimal",
                        time_limit=limit, **concurrency)
    submitted = prompt.submit(handler, inputs, outputs, api_visibility="private",
                              show_progress="minimal", time_limit=limit, **concurrency)
    event.then(show_runs, [ctx.lang, history_state], [history], api_name="runs")
    ctx.view("generate.run", [
        views.control("prompt", prompt), views.control("max_new", max_new),
        views.control("temperature", temperature), views.control("top_k", top_k),
        views.control("top_p", top_p), views.control("seed", seed, low=0, high=2**31 - 1),
        views.control("policy", policy), views.control("window", window),
        views.control("sinks", sinks), views.control("compare", compare),
        views.control("check", check)], run=start, event=event, state=last_session)
    submitted.then(show_runs, [ctx.lang, history_state], [history], api_visibility="private")
    # not `cancels=`: the run ends itself within a step, with its own last message (stopping.py)
    stop.click(STOPS.on_stop, None, None, queue=False, api_name="stop")
    long_button.click(long_prompt, None, [prompt], api_name="long_prompt")
    ctx.redraw_on_language(last_session, [status, bars, growth, latency, diff, mask, evidence], draw_run)
    ctx.redraw_on_language(last_session, [strip], draw_strip)
    ctx.redraw_on_language(history_state, [history], draw_runs)
