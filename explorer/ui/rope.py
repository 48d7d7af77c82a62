"""The RoPE tab: frequencies per pair for several bases (C13), one pair of a real q rotating,
the Toeplitz property on the real model's q and k (C11) and what one-sided rotation leaves
(C12), attention against distance, and the real model's perplexity when its base is changed.
Thin wiring over explorer/rope.py."""
from __future__ import annotations

import functools
import math

import gradio as gr

from explorer import rope
from explorer.i18n import normalize_language
from explorer.inputs import whole_number
from explorer.texts import LONG_TEXT_SOURCE, long_text
from explorer.rope import frequencies as frequencies_experiment
from explorer.ui import TabContext, visitor_errors

LATEX = [{"left": "$$", "right": "$$", "display": True}, {"left": "$", "right": "$", "display": False}]
DEFAULT_BASES = "10000, 100000, 500000, 1000000"
DEFAULT_SWEEP = "10000, 100000, 500000, 1000000, 10000000"


def default_capture_text() -> str:
    """A stretch of prose from the long text (its first lines are reST headings)."""
    text = long_text()
    start = text.find("A Python program is constructed")
    return text[max(start, 0):max(start, 0) + 1400]


TITLE = "rope.tab"


# Column names of the tables explorer/rope.py returns (English there), per language here.
COLUMNS = {
    "base": "rope.col.base", "who uses it": "rope.col.who", "pairs": "rope.col.pairs",
    "full turn inside context": "rope.col.full_turn", "never a full turn": "rope.col.never",
    "θ of pair 0 (rad/token)": "rope.col.theta0", "θ of pair 1 (rad/token)": "rope.col.theta1",
    "longest wavelength (tokens)": "rope.col.longest", "perplexity": "rope.col.ppl",
    "mean NLL − trained (nats)": "rope.col.delta", "seconds": "rope.col.seconds",
}


def localize_columns(t, lang: str, frame):
    """The table with its column names in `lang` ("ppl, tokens a–b" included)."""
    import re

    names = {}
    for column in frame.columns:
        if column in COLUMNS:
            names[column] = t.text(COLUMNS[column], lang)
        elif match := re.fullmatch(r"ppl, tokens (\d+)–(\d+)", column):
            names[column] = t.text("rope.col.ppl_range", lang, lo=match[1], hi=match[2])
    return frame.rename(columns=names)


def _error(func):
    """InputError (and ValueError from the engine on bad input) -> gr.Error in plain words."""
    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        try:
            return func(*args, **kwargs)
        except rope.InputError as error:
            raise gr.Error(str(error)) from None
    return wrapper


def _kind(t, lang, capture) -> str:
    if capture.window is not None:
        return t.text("rope.kind.sliding", lang, window=capture.window)
    return t.text("rope.kind.full", lang)


# ----------------------------------------------------------------------------- figures from stored data
# Each chart is drawn from what its handler keeps in a gr.State, by one function shared by the
# handler and the language switch, so the switch redraws the same numbers with other words and
# never runs the model again.


def capture_figures(state, lang: str):
    """(both rotated, only q rotated, real scores) of a stored capture and Toeplitz result."""
    capture, head = state["capture"], state["head"]
    both, one = rope.toeplitz_figures(capture, state["toeplitz"], head, state["q_token"],
                                      state["k_token"], lang)
    return both, one, rope.real_scores_figure(capture, head, lang)


def pair_rotation_figure(state, pair, position, lang: str):
    """(figure, facts) of one pair of the stored capture's q rotated to `position`."""
    return rope.pair_figure(state["capture"], state["head"], state["q_token"], pair, position, lang)


def distance_figure_of(view, lang: str):
    return rope.distance_figure(view["profile"], view["layer_types"], lang)


def scaling_figure_of(view, lang: str):
    return rope.scaling_figure(view["table"], view["context"], view["factor"], lang)


def redraw_figures(lang, capture_state, pair, position, dist_view, sweep_view, scale_view):
    """Every model chart of the tab in `lang`, from the stored data (no forward pass); None for
    a chart not drawn yet. Order: both, one, real, pair, distance, sweep, scaling."""
    lang = normalize_language(lang)
    figures = [None] * 7
    if capture_state:
        figures[:3] = capture_figures(capture_state, lang)
        figures[3] = pair_rotation_figure(capture_state, pair, position, lang)[0]
    if dist_view:
        figures[4] = distance_figure_of(dist_view, lang)
    if sweep_view:
        figures[5] = rope.sweep_figure(sweep_view, lang=lang)
    if scale_view:
        figures[6] = scaling_figure_of(scale_view, lang)
    return figures


# ----------------------------------------------------------------------------- handlers
# Module-level, so a test calls them without a server; each returns its outputs and the typed
# result for its section's gr.State, from which the language switch redraws.


def draw_frequencies(result: frequencies_experiment.Frequencies, lang: str):
    """(figure, summary, table) of a frequencies result in `lang`."""
    return (*frequencies_experiment.figures(result, lang), frequencies_experiment.summary(result, lang),
            frequencies_experiment.table(result, lang))


@visitor_errors
def frequencies(lang, bases_text, head_dim, context):
    """Per-pair frequency θ_i = base^(-2i/d) and wavelength for several bases against a context."""
    lang = normalize_language(lang)
    result = frequencies_experiment.run(frequencies_experiment.parse_bases(bases_text), head_dim, context)
    return (*draw_frequencies(result, lang), result)


def build(ctx: TabContext) -> None:
    t = ctx.t
    gr.Markdown(t("rope.intro"), latex_delimiters=LATEX)

    # ------------------------------------------------------------------ 1. frequencies
    with ctx.section("rope.freq.title"):
        gr.Markdown(t("rope.freq.heading"), latex_delimiters=LATEX)
        with gr.Row():
            freq_bases = gr.Textbox(DEFAULT_BASES, label=t("rope.freq.bases"), scale=3,
                                    elem_id="rope-freq-bases")
            freq_dim = gr.Number(64, label=t("rope.freq.head_dim"), precision=0, scale=1,
                                 elem_id="rope-freq-dim")
            freq_context = gr.Number(8192, label=t("rope.freq.context"), precision=0, scale=1,
                                     elem_id="rope-freq-context")
            freq_run = gr.Button(t("rope.freq.run"), variant="primary", scale=1, elem_id="rope-freq-run")
        freq_plot = gr.Plot(elem_id="rope-freq-plot", show_label=False)
        freq_text = gr.Markdown(elem_id="rope-freq-text")
        freq_table = gr.Dataframe(elem_id="rope-freq-table", interactive=False, wrap=True)
        freq_state = gr.State(None)

    freq_inputs = [ctx.lang, freq_bases, freq_dim, freq_context]
    freq_outputs = [freq_plot, freq_text, freq_table]
    freq_run.click(frequencies, freq_inputs, [*freq_outputs, freq_state], api_name="rope_frequencies")
    ctx.demo.load(frequencies, freq_inputs, [*freq_outputs, freq_state], api_visibility="private")
    ctx.redraw_on_language(freq_state, freq_outputs, draw_frequencies)

    # ------------------------------------------------------------------ 2. real q and k
    with ctx.section("rope.qk.title"):
        gr.Markdown(t("rope.qk.heading"), latex_delimiters=LATEX)
        capture_state = gr.State(None)
        qk_text = gr.Textbox(default_capture_text(), label=t("rope.qk.text"), lines=3, max_lines=6,
                             elem_id="rope-qk-text")
        with gr.Row():
            qk_layer = gr.Slider(0, 29, value=3, step=1, label=t("rope.qk.layer"), elem_id="rope-qk-layer")
            qk_head = gr.Slider(0, 8, value=0, step=1, label=t("rope.qk.head"), elem_id="rope-qk-head")
            qk_tokens = gr.Slider(16, rope.MAX_CAPTURE_TOKENS, value=256, step=16, label=t("rope.qk.tokens"),
                                  elem_id="rope-qk-tokens")
        with gr.Row():
            qk_q_token = gr.Number(120, label=t("rope.qk.q_token"), precision=0, elem_id="rope-qk-q")
            qk_k_token = gr.Number(40, label=t("rope.qk.k_token"), precision=0, elem_id="rope-qk-k")
            qk_positions = gr.Slider(16, 256, value=128, step=16, label=t("rope.qk.positions"),
                                     elem_id="rope-qk-positions")
            qk_run = gr.Button(t("rope.qk.run"), variant="primary", elem_id="rope-qk-run")
        qk_text_out = gr.Markdown(elem_id="rope-qk-result")
        with gr.Row():
            with gr.Column():
                gr.Markdown(t("rope.qk.both"))
                qk_both = gr.Plot(elem_id="rope-qk-both", show_label=False)
            with gr.Column():
                gr.Markdown(t("rope.qk.one"))
                qk_one = gr.Plot(elem_id="rope-qk-one", show_label=False)
        gr.Markdown(t("rope.qk.real"))
        qk_real = gr.Plot(elem_id="rope-qk-real", show_label=False)

        @_error
        def capture_and_toeplitz(model_name, lang, text, layer, head, q_token, k_token, n_positions,
                                 max_tokens, progress=gr.Progress()):
            """Capture the real q, k (before RoPE) at one layer; Toeplitz test with one fixed q and k."""
            lang = normalize_language(lang)
            rope.check_text(text)
            loaded = ctx.load(model_name, progress)
            capture = rope.capture_qk(loaded.model, loaded.tokenizer, text, layer, max_tokens)
            head = whole_number(head, "The head", 0, capture.n_heads - 1)
            last = len(capture.tokens) - 1
            q_index = min(whole_number(q_token, "The query token", 0, rope.MAX_CAPTURE_TOKENS), last)
            k_index = min(whole_number(k_token, "The key token", 0, rope.MAX_CAPTURE_TOKENS), last)
            result = rope.toeplitz(capture, head, q_index, k_index, n_positions)
            state = {"capture": capture, "head": head, "q_token": q_index, "k_token": k_index,
                     "toeplitz": result}
            both, one, real = capture_figures(state, lang)
            text_out = t.text(
                "rope.qk.result", lang, layer=capture.layer, kind=_kind(t, lang, capture),
                base=rope.base_label(capture.theta_base), head=head, kv_head=capture.kv_head(head),
                tokens=len(capture.tokens), seconds=capture.seconds, q_token=q_index,
                q_word=repr(capture.tokens[q_index]), k_token=k_index, k_word=repr(capture.tokens[k_index]),
                n=int(n_positions), both=result.spread_both["spread"], both_rel=result.spread_both["relative"],
                one=result.spread_query["spread"], one_rel=result.spread_query["relative"],
                scale=result.spread_both["scale"], identity=result.identity_error,
                repro=rope.rope_reproduction_error(capture))
            if q_index != int(q_token) or k_index != int(k_token):
                text_out += "\n\n" + t.text("rope.qk.clamped", lang, tokens=last + 1, last=last)
            return both, one, real, text_out, state

        qk_event = qk_run.click(
            capture_and_toeplitz,
            [ctx.model, ctx.lang, qk_text, qk_layer, qk_head, qk_q_token, qk_k_token, qk_positions, qk_tokens],
            [qk_both, qk_one, qk_real, qk_text_out, capture_state], api_name="rope_qk", **ctx.model_event)

    # ------------------------------------------------------------------ 3. one pair rotating
    with ctx.section("rope.pair.title"):
        gr.Markdown(t("rope.pair.heading"), latex_delimiters=LATEX)
        with gr.Row():
            pair_index = gr.Slider(0, 31, value=0, step=1, label=t("rope.pair.pair"), elem_id="rope-pair-index")
            pair_position = gr.Slider(0, 512, value=24, step=1, label=t("rope.pair.position"),
                                      elem_id="rope-pair-position")
        with gr.Row():
            pair_plot = gr.Plot(elem_id="rope-pair-plot", show_label=False, scale=3)
            pair_text = gr.Markdown(elem_id="rope-pair-text")

        @_error
        def rotate_pair(lang, state, pair, position):
            """One dimension pair (q_i, q_{i+d/2}) of the captured q rotated to position m."""
            lang = normalize_language(lang)
            if not state:
                raise gr.Error(t.text("rope.need_capture", lang))
            capture, head, token = state["capture"], state["head"], state["q_token"]
            half = capture.head_dim // 2
            pair = whole_number(pair, "The pair", 0, half - 1)
            fig, facts = pair_rotation_figure(state, pair, position, lang)
            vector = capture.q_pre[head, token]
            radii = (vector[:half] ** 2 + vector[half:] ** 2).sqrt()
            strongest = ", ".join(f"{int(i)} ({float(radii[i]):.2f})" for i in radii.argsort(descending=True)[:4])
            text = t.text("rope.pair.result", lang, pair=pair, partner=pair + half, theta=facts["theta"],
                          wavelength=facts["wavelength"], radius=facts["radius"], position=int(position),
                          angle=facts["angle"], turns=facts["turns"], token=token,
                          error=facts["own_position_error"], strongest=strongest)
            return fig, text

        pair_inputs = [ctx.lang, capture_state, pair_index, pair_position]
        def visible_pair(state, pair):
            """Keep the chosen pair unless it is (nearly) zero in this q (Gemma's q-norm zeroes some
            dimensions): then show the fastest pair whose radius is at least a fifth of the largest,
            so the rotation is both visible and large."""
            if not state:
                return pair
            capture, head, token = state["capture"], state["head"], state["q_token"]
            half = capture.head_dim // 2
            vector = capture.q_pre[head, token]
            radii = (vector[:half] ** 2 + vector[half:] ** 2).sqrt()
            pair = min(max(int(pair or 0), 0), half - 1)
            if radii[pair] >= 0.05 * radii.max():
                return pair
            return int((radii >= 0.2 * radii.max()).nonzero()[0, 0])  # pairs run fast to slow

        qk_event.success(visible_pair, [capture_state, pair_index], [pair_index],
                         api_visibility="private").then(
            rotate_pair, pair_inputs, [pair_plot, pair_text], api_visibility="private")
        pair_index.release(rotate_pair, pair_inputs, [pair_plot, pair_text], api_name="rope_pair")
        pair_position.change(rotate_pair, pair_inputs, [pair_plot, pair_text], api_visibility="private",
                             show_progress="hidden", trigger_mode="always_last")

    # ------------------------------------------------------------------ 4. distance profile
    with ctx.section("rope.dist.title"):
        gr.Markdown(t("rope.dist.heading"), latex_delimiters=LATEX)
        dist_run = gr.Button(t("rope.dist.run"), elem_id="rope-dist-run")
        dist_text = gr.Markdown(elem_id="rope-dist-text")
        dist_plot = gr.Plot(elem_id="rope-dist-plot", show_label=False)
        dist_state = gr.State(None)

        @_error
        def distance(model_name, lang, text, max_tokens, progress=gr.Progress()):
            """Mean attention weight against distance m − n, per layer, on the real model."""
            import numpy as np

            lang = normalize_language(lang)
            rope.check_text(text)
            loaded = ctx.load(model_name, progress)
            profile, tokens, seconds = rope.distance_profile(loaded.model, loaded.tokenizer, text, max_tokens)
            far = profile[:, 65:] if profile.shape[1] > 65 else profile[:, -1:]
            second = profile[:, 1] if profile.shape[1] > 1 else profile[:, 0]
            text_out = t.text("rope.dist.result", lang, layers=profile.shape[0], tokens=len(tokens),
                              seconds=seconds, self_weight=float(np.nanmean(profile[:, 0])),
                              prev_weight=float(np.nanmean(second)), far_weight=float(np.nanmean(far)),
                              prev_layer=int(np.nanargmax(second)))
            view = {"profile": profile, "layer_types": list(loaded.config.layer_types)}
            return distance_figure_of(view, lang), text_out, view

        dist_run.click(distance, [ctx.model, ctx.lang, qk_text, qk_tokens], [dist_plot, dist_text, dist_state],
                       api_name="rope_distance", **ctx.model_event)

    # ------------------------------------------------------------------ 5. base on the real model
    with ctx.section("rope.base.title"):
        gr.Markdown(t("rope.base.heading"), latex_delimiters=LATEX)
        gr.Markdown(t("rope.base.source"), elem_id="rope-base-source")
        with gr.Row():
            sweep_bases = gr.Textbox(DEFAULT_SWEEP, label=t("rope.base.bases"), scale=3, elem_id="rope-sweep-bases")
            sweep_tokens = gr.Slider(128, 2048, value=1024, step=128, label=t("rope.base.tokens"), scale=2,
                                     elem_id="rope-sweep-tokens")
        apply_to = gr.Radio([(t("rope.base.apply.full"), "full"), (t("rope.base.apply.sliding"), "sliding"),
                             (t("rope.base.apply.all"), "all")], value="full", label=t("rope.base.apply"),
                            elem_id="rope-apply-to")
        sweep_run = gr.Button(t("rope.base.run"), variant="primary", elem_id="rope-sweep-run")
        sweep_text = gr.Markdown(elem_id="rope-sweep-text")
        sweep_plot = gr.Plot(elem_id="rope-sweep-plot", show_label=False)
        sweep_table = gr.Dataframe(elem_id="rope-sweep-table", interactive=False, wrap=True)
        sweep_state = gr.State(None)

        @_error
        def sweep(model_name, lang, bases_text, apply, n_tokens, progress=gr.Progress()):
            """Perplexity per position on the long text for each RoPE base (one forward per base)."""
            lang = normalize_language(lang)
            bases = rope.parse_bases(bases_text)
            loaded = ctx.load(model_name, progress)
            result = rope.perplexity_sweep(loaded.model, loaded.tokenizer, long_text(), bases, apply,
                                           n_tokens, progress=lambda f, m: progress(f, desc=m))
            summary = result.summary(lang=lang)
            ppl = {key: float(math.exp(result.nll[key].mean())) for key in result.bases}
            last_col = [c for c in summary.columns if c.startswith("ppl, tokens")][-1]
            last_quarter = dict(zip(result.bases, summary[last_col]))
            best = min(ppl, key=ppl.get)
            reference = result.reference
            larger = [b for b in result.bases if result.trained is not None and b > result.trained]
            if larger:
                items = ", ".join(f"{rope.base_label(b)} → {ppl[b]:.2f}" for b in sorted(larger))
                better = [b for b in larger if last_quarter[b] < last_quarter[reference]]
                if better:
                    gain = max(1 - last_quarter[b] / last_quarter[reference] for b in better)
                    verdict = t.text("rope.base.some_better", lang,
                                     which=", ".join(rope.base_label(b) for b in better), gain=gain)
                else:
                    verdict = t.text("rope.base.none_better", lang)
                larger_text = t.text("rope.base.larger", lang, items=items, verdict=verdict)
            else:
                larger_text = t.text("rope.base.no_larger", lang)
            text_out = t.text("rope.base.result", lang, model=getattr(loaded.spec, "title", loaded.name),
                              apply=t.text(f"rope.base.apply.{apply}", lang), tokens=result.n_tokens,
                              trained=result.label(reference, lang), trained_ppl=ppl[reference],
                              best=result.label(best, lang), best_ppl=ppl[best], larger=larger_text)
            return (rope.sweep_figure(result, lang=lang), text_out, localize_columns(t, lang, summary.round(4)),
                    result)

        sweep_run.click(sweep, [ctx.model, ctx.lang, sweep_bases, apply_to, sweep_tokens],
                        [sweep_plot, sweep_text, sweep_table, sweep_state], api_name="rope_perplexity",
                        **ctx.model_event)

    with ctx.section("rope.cont.title"):
        gr.Markdown(t("rope.cont.heading"))
        with gr.Row():
            cont_base = gr.Slider(3, 8, value=6, step=0.1, label=t("rope.cont.base"), elem_id="rope-cont-base")
            cont_new = gr.Slider(4, 48, value=20, step=1, label=t("rope.cont.new"), elem_id="rope-cont-new")
            cont_run = gr.Button(t("rope.cont.run"), elem_id="rope-cont-run")
        cont_text = gr.Markdown(elem_id="rope-cont-text")

        @_error
        def continuation(model_name, lang, log10_base, apply, n_tokens, n_new, progress=gr.Progress()):
            """Greedy continuation of the long text's first tokens, trained base vs a changed base."""
            lang = normalize_language(lang)
            try:
                exponent = float(log10_base)
            except (TypeError, ValueError):
                raise gr.Error(f"log10 of the base must be a number, got {log10_base!r}.") from None
            if not math.isfinite(exponent) or not 0.0 < exponent <= 12.0:
                raise gr.Error(f"log10 of the base must be in (0, 12], got {log10_base!r}.")
            base = float(10 ** exponent)
            loaded = ctx.load(model_name, progress)
            config = loaded.config
            options = rope.base_options(config, base, apply)
            n_tokens = whole_number(n_tokens, "The number of tokens", 16, rope.MAX_SWEEP_TOKENS)
            ids = rope.tokenize(loaded.tokenizer, long_text(), n_tokens)
            trained = rope.trained_label(config, apply, lang)
            progress(0.1, desc=f"base {trained}")
            trained_text = rope.greedy_continuation(loaded.model, loaded.tokenizer, ids,
                                                    rope.trained_options(config, apply), n_new)
            progress(0.55, desc=f"base {rope.base_label(base)}")
            base_text = rope.greedy_continuation(loaded.model, loaded.tokenizer, ids, options, n_new)
            clean = lambda s: s.replace("|", "\\|").replace("\n", " ⏎ ").strip() or "∅"  # noqa: E731
            tail = loaded.tokenizer.decode(ids[-40:])
            return t.text("rope.cont.result", lang, tail=clean(tail), trained=trained,
                          trained_text=clean(trained_text), base=rope.base_label(base),
                          base_text=clean(base_text))

        cont_run.click(continuation, [ctx.model, ctx.lang, cont_base, apply_to, sweep_tokens, cont_new],
                       [cont_text], api_name="rope_continue", **ctx.model_event)

    # ------------------------------------------------------------------ 6. optional: extension recipes
    with ctx.section("rope.scale.section"):
        with gr.Accordion(t("rope.scale.title"), open=False, elem_id="rope-scale-accordion"):
            gr.Markdown(t("rope.scale.heading"), latex_delimiters=LATEX)
            with gr.Row():
                scale_base = gr.Number(100000, label=t("rope.scale.base"), elem_id="rope-scale-base")
                scale_factor = gr.Slider(1, 32, value=4, step=0.5, label=t("rope.scale.factor"),
                                         elem_id="rope-scale-factor")
                scale_context = gr.Number(8192, label=t("rope.scale.context"), precision=0,
                                          elem_id="rope-scale-context")
                scale_run = gr.Button(t("rope.scale.run"), elem_id="rope-scale-run")
            scale_plot = gr.Plot(elem_id="rope-scale-plot", show_label=False)
            scale_state = gr.State(None)

        @_error
        def scaling(lang, head_dim, base, factor, original_context):
            """θ_i under linear interpolation, NTK-aware scaling and YaRN (frequency curves only)."""
            table = rope.scaling_table(head_dim, base, factor, original_context)
            view = {"table": table, "context": int(original_context), "factor": float(factor)}
            return scaling_figure_of(view, normalize_language(lang)), view

        scale_run.click(scaling, [ctx.lang, freq_dim, scale_base, scale_factor, scale_context],
                        [scale_plot, scale_state], api_name="rope_scaling")

    # ------------------------------------------------------------------ follow the language switch
    def redraw(lang, capture, pair, position, dist_view, sweep_view, scale_view):
        figures = redraw_figures(lang, capture, pair, position, dist_view, sweep_view, scale_view)
        return [gr.skip() if fig is None else fig for fig in figures]

    ctx.lang.change(redraw, [ctx.lang, capture_state, pair_index, pair_position, dist_state, sweep_state,
                             scale_state],
                    [qk_both, qk_one, qk_real, pair_plot, dist_plot, sweep_plot, scale_plot],
                    api_visibility="private")

    # ------------------------------------------------------------------ follow the model picker
    def limits(model_name, progress=gr.Progress()):
        loaded = ctx.load(model_name, progress)
        config = loaded.config
        half = config.head_dim // 2
        return (gr.update(maximum=config.n_layers - 1, value=min(3, config.n_layers - 1)),
                gr.update(maximum=config.n_heads - 1, value=0),
                gr.update(maximum=half - 1),
                config.head_dim, float(config.rope_theta))

    limit_outputs = [qk_layer, qk_head, pair_index, freq_dim, scale_base]
    ctx.model.change(limits, [ctx.model], limit_outputs, api_visibility="private")
    ctx.demo.load(limits, [ctx.model], limit_outputs, api_visibility="private")
