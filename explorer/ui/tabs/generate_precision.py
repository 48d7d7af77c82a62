"""The Generate tab's section "Precision: bytes per weight" (explorer/generate/precision.py):
each weight precision of the fused decode step measured on the loaded model, its speed beside
the roofline's and its price against fp32.

Thin wiring: one run button (the long runs' group: 20-40 s on an idle machine, so it holds no
one's short forward; it ends itself by TIME_LIMIT_S), a refusal while visitors' runs decode
(their steps and these would time each other), and the result kept in gr.State for the
language switch.

A public endpoint that costs 20-40 s of the machine: one result per model, device and dtype is
kept for KEEP_S, and a repeat within it is answered from it at once, with a message that says
so and when a new measurement is possible (issue 41; before, a script could keep the long
group measuring back to back)."""
from __future__ import annotations

import threading
import time
from typing import Any

import gradio as gr

from explorer.attention import Deadline
from explorer.generate import device_roof, precision, precision_figures
from explorer.inputs import InputError
from explorer.locales import normalize_language, text
from explorer.serving import scheduler_for
from explorer.ui import TabContext, load_or_error, visitor_errors

SECTION_ID = "section-generate-precision"
TIME_LIMIT_S = 180       # a slow, shared CPU: the measurement takes 20-40 s when idle
KEEP_S = 600.0           # a measurement is answered again, not repeated, for this long
_KEPT: dict[tuple, tuple[float, Any]] = {}    # (model, device, dtype) -> (monotonic time, result)
_KEPT_LOCK = threading.Lock()


def _kept(key: tuple, now: float) -> Any:
    with _KEPT_LOCK:
        for old in [k for k, (at, _) in _KEPT.items() if now - at >= KEEP_S]:
            del _KEPT[old]
        return _KEPT.get(key)


def draw(result: precision.PrecisionResult, lang: Any):
    """(speed figure, price figure, summary) in `lang`."""
    lang = normalize_language(lang)
    return (*precision_figures.figures(result, lang), precision_figures.summary(result, lang))


@visitor_errors
def measure(runtime, model_name: Any, lang: Any, progress=gr.Progress()):
    """Every precision on the visitor's model: (speed figure, price figure, summary, result)."""
    lang = normalize_language(lang)
    loaded = load_or_error(runtime, model_name, progress)
    key = (getattr(loaded, "name", None), str(getattr(loaded, "device", "")),
           str(getattr(loaded, "dtype", "")))
    kept = _kept(key, time.monotonic()) if key[0] else None
    if kept is not None:
        ago = time.monotonic() - kept[0]
        gr.Info(text("shell.kept_result", lang, ago=int(ago), left=int(KEEP_S - ago) + 1))
        return (*draw(kept[1], lang), kept[1])
    if scheduler_for(loaded.model).load():
        raise InputError("precision.busy")
    roof = device_roof.cached(loaded.device, loaded.dtype) or device_roof.measure(loaded.device, loaded.dtype)
    result = precision.run(loaded, roof=roof, deadline=Deadline(TIME_LIMIT_S))
    if key[0]:
        with _KEPT_LOCK:
            _KEPT[key] = (time.monotonic(), result)
    return (*draw(result, lang), result)


def build(ctx: TabContext) -> None:
    t = ctx.t
    gr.Markdown(t("precision.intro"))
    run = gr.Button(t("precision.measure"), variant="primary", elem_id="gen-precision-measure")
    summary = gr.Markdown(t("precision.none"), elem_id="gen-precision-summary")
    with gr.Row(equal_height=False):
        speed = gr.Plot(show_label=False, elem_id="gen-precision-speed")
        price = gr.Plot(show_label=False, elem_id="gen-precision-price")
    state = gr.State(None)

    def handler(model_name, lang, progress=gr.Progress()):
        return measure(ctx.runtime, model_name, lang, progress)

    event = run.click(handler, [ctx.model, ctx.lang], [speed, price, summary, state],
                      api_name="precision_measure", time_limit=TIME_LIMIT_S, **ctx.long_event)
    ctx.redraw_on_language(state, [speed, price, summary], draw)
    ctx.view("generate.precision", [], run=run, event=event, state=state)
