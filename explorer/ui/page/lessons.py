"""The lesson panel, presenter mode and the page's links (explorer/lessons, explorer/ui/page/views.py).

The header holds the lesson list and the presenter switch; the panel floats over the page (so
the section it opens stays in sight). A step's button sets the step's model and controls from
the server (the same outputs a link's values take), then the page opens the section and presses
its run button (window.explorerApply below), so the step runs exactly as the visitor's own
press would, under the same limits and queues. When that section's run ends, its stored result
is read for the step's numbers (`observe`, chained after every view's run event): the panel
quotes the visitor's own run, whoever started it, when that run had the step's model and
settings (`differing`); a run with others is named as such and not quoted. A predict step runs
only once a guess is in.

On page load, the address's query string (`?view=...` or `?lesson=...&step=...`) is read by
`restore` through views.read_link: every value checked, the rest defaulted with a note.
"""
from __future__ import annotations

import html
import json
import math
import time
from dataclasses import dataclass
from typing import Any, Callable, Optional

import gradio as gr

from explorer.i18n import Translator
from explorer.lessons import (LESSONS, Lesson, Step, _number, compare, comparison_text, custom, is_computed,
                              quantities, reading)
from explorer.locales import Term, normalize_language, text
from explorer.ui.page.lesson_links import (lesson_named, lesson_of, link_note, read_lesson_link,
                                           shown_text, step_link)
from explorer.ui.page.lesson_script import APPLY_JS, HEAD, PRESENT_JS, with_page_language
from explorer.ui.page.views import (MAX_QUERY_CHARS, Plan, View, Views, events_of, label_key, plain)
from explorer.web.stopping import ended_by_move

__all__ = ["APPLY_JS", "HEAD", "PRESENT_JS", "link_note", "step_link"]   # their home moved

PANEL_ID = "lesson-panel"


@dataclass(frozen=True)
class Panel:
    pick: gr.Dropdown
    present: gr.Checkbox
    state: gr.State            # {"lesson", "step", "guess", "fields", "custom"?} or None
    column: gr.Column
    progress: gr.Markdown
    look: gr.Markdown
    predict_row: gr.Row
    guess: gr.Number
    check: gr.Button
    said: gr.Markdown
    back: gr.Button
    next: gr.Button
    exit: gr.Button
    link: gr.Textbox
    note: gr.Markdown
    command: gr.Textbox        # what the page does next (explorerApply): JSON


def lesson_choices(lang: str) -> list:
    return [(text(lesson.title, lang), key) for key, lesson in LESSONS.items()]


def build_panel(t: Translator) -> Panel:
    """The header's lesson list and presenter switch, and the floating panel (hidden)."""
    with gr.Row(elem_id="lesson-row", equal_height=True):
        pick = gr.Dropdown(lesson_choices("en"), value=None, label=t("lesson.pick"),
                           info=t("lesson.pick_info"), elem_id="lesson-pick", filterable=False,
                           scale=3)
        present = gr.Checkbox(False, label=t("lesson.present"), elem_id="presenter-switch",
                              scale=1, min_width=160)
    note = gr.Markdown(visible=False, elem_id="link-note")
    command = gr.Textbox(visible=False, max_length=COMMAND_CHARS, elem_id="lesson-command")
    state = gr.State(None)
    with gr.Column(visible=False, elem_id=PANEL_ID) as column:
        progress = gr.Markdown(elem_id="lesson-progress")
        look = gr.Markdown(elem_id="lesson-look")
        with gr.Row(visible=False, elem_id="lesson-predict") as predict_row:
            guess = gr.Number(None, label=t("lesson.guess"), elem_id="lesson-guess", scale=2)
            check = gr.Button(t("lesson.check"), variant="primary", elem_id="lesson-check", scale=1)
        said = gr.Markdown(elem_id="lesson-said")
        with gr.Row(elem_id="lesson-nav"):
            back = gr.Button(t("lesson.back"), size="sm", elem_id="lesson-back")
            nxt = gr.Button(t("lesson.next"), size="sm", variant="primary", elem_id="lesson-next")
            leave = gr.Button(t("lesson.exit"), size="sm", variant="secondary", elem_id="lesson-exit")
        link = gr.Textbox(show_label=False, interactive=False, max_lines=1, container=False,
                          max_length=MAX_QUERY_CHARS + 200, elem_id="lesson-link", elem_classes="explorer-link")
    return Panel(pick, present, state, column, progress, look, predict_row, guess, check, said,
                 back, nxt, leave, link, note, command)


# ----------------------------------------------------------------------------- plans


def plan_of_step(lesson: Lesson, index: int) -> Plan:
    step = lesson.steps[index]
    return Plan(view=step.view, model=step.model, values=dict(step.settings),
                run=step.run and step.predict is None)


def control_updates(plan: Plan, views: Views, current_model: Any) -> list:
    """Values for [model picker, *views.components()]: the plan's view's controls at the plan's
    values (the others at their defaults), skips for every other view's controls."""
    model = gr.update(value=plan.model) if plan.model and plan.model != current_model else gr.skip()
    chosen: dict[int, Any] = {}
    view = views.get(plan.view) if plan.view else None
    if view is not None:
        # every control of the view: the plan's value or its default, so that a link or a step
        # opens the same view whatever the page showed before
        for c in view.controls:
            chosen[id(c.component)] = plan.values.get(c.name, c.default)
    return [model] + [gr.update(value=chosen[id(c)]) if id(c) in chosen else gr.skip()
                      for c in views.components()]


# command_of's JSON: a section's ids, a nonce and a link of at most MAX_QUERY_CHARS
COMMAND_CHARS = MAX_QUERY_CHARS + 1000


def command_of(plan: Plan, views: Views, run: Optional[bool] = None, address: str = "") -> str:
    """The page's part, as JSON: open `target`, press the button `run`, and show `address` (a
    lesson step's link) in the address bar, so that the bar is always a link to what is shown."""
    view = views.get(plan.view) if plan.view else None
    if view is None:
        return json.dumps({"target": "", "run": "", "address": address, "nonce": _nonce()})
    go = plan.run if run is None else run
    return json.dumps({"target": view.target, "run": view.run_id if go else "",
                       "address": address, "nonce": _nonce()})


def _nonce() -> int:
    # a new command text every time: the page acts on each, even a repeat of the last step
    return time.monotonic_ns()


# ----------------------------------------------------------------------------- the panel's text


def step_texts(state: Optional[dict], lang: str) -> tuple[str, str, bool, str]:
    """(progress, look, asks for a guess, guess label) of the state's step."""
    lesson = lesson_of(state)
    index = state["step"]
    step = lesson.steps[index]
    fields = dict(step.fields)
    title = text(lesson.title, lang)
    if lesson.key == custom.KEY:
        # a teacher's words: shown as text, never Markdown or HTML
        title = plain(state["custom"].get("title") or title)
        fields = {**fields, "text": shown_text(fields.get("text", ""))}
        if "quantity" in fields:
            fields["quantity"] = Term(fields["quantity"])
    progress = text("lesson.progress", lang, title=title, step=index + 1,
                    n=len(lesson.steps)) + "\n\n" + _dots(index, len(lesson.steps))
    look = text(step.look, lang, **fields)
    if step.predict is not None:
        look += "\n\n**" + text(step.predict.question, lang, **fields,
                                 unit=unit_text(step.predict.unit, lang)) + "**"
    label = text("lesson.guess", lang, unit=unit_text(step.predict.unit, lang)) if step.predict else ""
    return progress, look, step.predict is not None, label


def said_text(state: Optional[dict], lang: str) -> str:
    """What the step's run showed (its stored fields), with the guess compared; before a run,
    the waiting line naming the button to press (the section's own, or the panel's for a
    prediction), or the line saying the last run had other settings than the step's."""
    if not state:
        return ""
    lesson = lesson_of(state)
    step = lesson.steps[state["step"]]
    fields = state.get("fields")
    if fields is None:
        if state.get("other"):
            names = text("lesson.names_sep", lang).join(text(key, lang) for key in state["other"])
            return text("lesson.other_settings", lang, names=names)
        if step.predict is not None:
            return text("lesson.waiting_guess", lang, button=Term("lesson.check")) \
                if state.get("guess") is None else text("lesson.running", lang)
        return text("lesson.waiting", lang, button=Term(state.get("run") or "lesson.run_button"))
    computed = is_computed(step, fields)
    said = step.said_computed if computed and step.said_computed else step.said
    lines = [custom_said(step, fields, lang) if lesson.key == custom.KEY else text(said, lang, **fields)]
    if step.predict is not None and state.get("guess") is not None:
        measured = float(fields[step.predict.answer])
        lines.append(comparison_text(compare(float(state["guess"]), measured),
                                     unit_text(step.predict.unit, lang), lang, computed))
        lines.append(text(step.predict.why, lang, **fields))
    if state["step"] == len(lesson.steps) - 1:
        lines.append(text("lesson.done", lang))
    return "\n\n".join(lines)


def custom_said(step: Step, fields: dict, lang: str) -> str:
    """A teacher's step after its run: every quantity of its view the run holds, each with its
    label and unit (custom.read_step_values)."""
    lines = [text("lesson.builder.value", lang, label=Term(q.label), value=_shown_number(v),
                  unit=unit_text(q.unit, lang))
             for q in quantities.of_view(step.view)
             for v in [fields.get("values", {}).get(q.key)] if v is not None]
    return text("lesson.builder.said", lang, values="\n".join(lines)) if lines \
        else text("lesson.builder.said_none", lang)


def _shown_number(value: float) -> str:
    return _number(float(value))


def unit_text(unit: str, lang: str) -> str:
    """A prediction's unit: a symbol as it is ("KiB", "%"), or a locale key ("lesson.unit.x")."""
    return text(unit, lang) if unit.startswith("lesson.") else unit


def _dots(index: int, n: int) -> str:
    return " ".join("●" if i <= index else "○" for i in range(n))


def panel_values(state: Optional[dict], lang: str) -> list:
    """Values for [state, column, progress, look, predict_row, guess, said, back, next, link]."""
    if not state:
        return [None, gr.update(visible=False), "", "", gr.update(visible=False),
                gr.update(value=None), "", gr.update(), gr.update(), ""]
    state = {**state, "lang": lang}   # the language the panel's texts are in (see wire's redraw)
    progress, look, asks, label = step_texts(state, lang)
    n = len(lesson_of(state).steps)
    guess = gr.update(value=state.get("guess"), label=label) if asks else gr.update(value=None)
    return [state, gr.update(visible=True), progress, look, gr.update(visible=asks), guess,
            said_text(state, lang), gr.update(interactive=state["step"] > 0),
            gr.update(interactive=state["step"] < n - 1),
            step_link(state["lesson"], state["step"], state.get("custom"))]


def panel_outputs(panel: Panel) -> list:
    return [panel.state, panel.column, panel.progress, panel.look, panel.predict_row, panel.guess,
            panel.said, panel.back, panel.next, panel.link]


LINK_AT = 9   # where a step's link is in panel_values (and in go's values)


# ----------------------------------------------------------------------------- handlers


def go(lesson_key: Any, index: Any, lang: Any, current_model: Any, views: Views,
       data: Optional[dict] = None) -> list:
    """Open step `index` of a lesson (ours, or the teacher's checked lesson `data`): panel, the
    step's model and controls, the page's command."""
    lang = normalize_language(lang)
    lesson = lesson_named(lesson_key, data)
    if lesson is None or not isinstance(index, int) or not 0 <= index < len(lesson.steps):
        return [*panel_values(None, lang), *control_updates(Plan(), views, current_model),
                command_of(Plan(), views)]
    plan = plan_of_step(lesson, index)
    state = {"lesson": lesson.key, "step": index, "guess": None, "fields": None,
             "run": run_label(views.get(plan.view))}
    if lesson.key == custom.KEY:
        state["custom"] = data
    return [*panel_values(state, lang), *control_updates(plan, views, current_model),
            command_of(plan, views, address=step_link(lesson.key, index, data))]


def run_label(view: Optional[View]) -> Optional[str]:
    """The locale key of the label on the view's run button (what the panel tells to press)."""
    return label_key(getattr(getattr(view, "run", None), "value", None))


def differing(step: Step, view: View, model: Any, values: list) -> list[str]:
    """The locale keys of the labels of what a run of `view` had other than `step` sets: its
    model (when the step names one) and every control the step gives a value. `values` are the
    view's control values after the run, in the view's order (what its link is made of)."""
    other = []
    if step.model is not None and model != step.model:
        other.append("shell.model")
    by_name = dict(zip((c.name for c in view.controls), values))
    for c in view.controls:
        if c.name in step.settings and not c.same(by_name.get(c.name), step.settings[c.name]):
            other.append(label_key(getattr(c.component, "label", None)) or "lesson.setting")
    return other


def moved(state: Any, delta: int, lang: Any, current_model: Any, views: Views) -> list:
    if lesson_of(state) is None:
        return go(None, 0, lang, current_model, views)
    return go(state["lesson"], state["step"] + delta, lang, current_model, views, state.get("custom"))


def check_guess(state: Any, guess: Any, lang: Any, views: Views) -> tuple:
    """(state, said, command): a guess within the step's bounds runs the step's section."""
    lang = normalize_language(lang)
    lesson = lesson_of(state)
    if lesson is None:
        return gr.skip(), gr.skip(), gr.skip()
    step = lesson.steps[state["step"]]
    if step.predict is None:
        return gr.skip(), gr.skip(), gr.skip()
    bounds = step.predict
    if isinstance(guess, bool) or not isinstance(guess, (int, float)) or not math.isfinite(guess) \
            or not bounds.low <= guess <= bounds.high:
        return gr.skip(), text("lesson.need_guess", lang, low=bounds.low, high=f"{bounds.high:g}"), \
            gr.skip()
    state = {**state, "guess": float(guess), "fields": None, "other": None, "lang": lang}
    plan = plan_of_step(lesson, state["step"])
    return state, said_text(state, lang), command_of(plan, views, run=True)


def observe(view_key: str, state: Any, result: Any, lang: Any, other: Optional[list] = None,
            link: str = "") -> tuple:
    """(state, said) after a run of view `view_key`: the step's numbers read from the result
    the run left, when the visitor's lesson is at a step of that view; when the run had
    `other` settings than the step's (their label keys, `differing`), none of its numbers, and
    the line that says so."""
    lesson = lesson_of(state)
    if lesson is None:
        return gr.skip(), gr.skip()
    step: Step = lesson.steps[state["step"]]
    if step.view != view_key:
        return gr.skip(), gr.skip()
    lang = normalize_language(lang)
    if other:
        state = {**state, "fields": None, "other": list(other), "lang": lang}
        return state, said_text(state, lang)
    fields = reading(step, result)
    if fields is None:
        return gr.skip(), gr.skip()
    if link:   # the reading records the settings of the run it came from (its link)
        fields = {**fields, "run_link": link}
    state = {**state, "fields": fields, "other": None, "lang": lang}
    return state, said_text(state, lang)


def restore(query: Any, lang: Any, current_model: Any, views: Views, model_names, default_model,
            config_of) -> list:
    """What the page's address asks for: [present, lang, note, *go's outputs]."""
    plan, data = read_lesson_link(query, views, model_names, default_model, config_of)
    lang = plan.lang or normalize_language(lang)
    note = gr.update(visible=False, value="")
    if plan.notes:
        said = link_note(plan.notes, lang)
        note = gr.update(visible=True, value="⚠ " + plain(said))   # the link's values, not Markdown
        gr.Warning(html.escape(said))   # a toast (HTML): the note's place may be scrolled away
    head = [gr.update(value=True) if plan.present else gr.skip(),
            gr.update(value=plan.lang) if plan.lang else gr.skip(), note]
    if plan.lesson:
        return head + go(plan.lesson, plan.step, lang, current_model, views, data)
    if plan.view is None and plan.model is None:
        return head + [gr.skip()] * (len(panel_values(None, lang)) + 1 + len(views.components())) \
            + [command_of(Plan(), views)]
    return head + [gr.skip()] * len(panel_values(None, lang)) + \
        control_updates(plan, views, current_model) + [command_of(plan, views)]


# ----------------------------------------------------------------------------- wiring

def wire(demo: gr.Blocks, panel: Panel, header: Any, views: Views, runtime: Any,
         first: Optional[Callable] = None) -> dict:
    """Wire the panel; returns {"steps": the events that move to a step, "check": the guess's
    event}, for a class (explorer/ui/page/classroom.py) to follow a teacher's moves and guesses.
    `first(trigger, handler, inputs)`, when given, adds a listener to each move's press before
    the step's own: a class's (classroom.early_mover), which reads the lesson's state as it was
    at the press (a later listener may read it after the step's own answer changed it)."""
    model, lang = header.model, header.lang
    controls = views.components()
    go_outputs = panel_outputs(panel) + [model, *controls, panel.command]
    private = {"api_visibility": "private"}

    def on_pick(key, lang_value, current):
        return go(key, 0, lang_value, current, views)

    def on_back(state, lang_value, current):
        return moved(state, -1, lang_value, current, views)

    def on_next(state, lang_value, current):
        return moved(state, +1, lang_value, current, views)

    def on_exit(lang_value):
        return [*panel_values(None, normalize_language(lang_value)), gr.update(value=None)]

    def on_check(state, guess, lang_value):
        return check_guess(state, guess, lang_value, views)

    def on_load(lang_value, current, request: gr.Request):
        query = dict(request.query_params) if request is not None else {}
        return restore(query, lang_value, current, views, runtime.names(), runtime.default_name,
                       lambda name: runtime.get(name).config)

    apply = {"fn": None, "inputs": [panel.command], "outputs": None, "js": APPLY_JS}
    steps = []
    for listen, fn, inputs in [(panel.pick.input, on_pick, [panel.pick, lang, model]),
                               (panel.back.click, on_back, [panel.state, lang, model]),
                               (panel.next.click, on_next, [panel.state, lang, model])]:
        if first is not None:
            first(listen, fn, inputs)
        steps.append(listen(fn, inputs, go_outputs, **private))
    for step in steps:
        step.then(**apply)
    panel.exit.click(on_exit, [lang], panel_outputs(panel) + [panel.pick], **private)
    check = panel.check.click(on_check, [panel.state, panel.guess, lang],
                              [panel.state, panel.said, panel.command], **private)
    check.then(**apply)
    demo.load(on_load, [lang, model], [panel.present, lang, panel.note, *go_outputs],
              api_name="open_link", js=with_page_language(2, 0)).then(**apply)
    panel.present.change(None, [panel.present], None, js=PRESENT_JS)
    # after every run of a view that ended well (a failed run leaves the last one's reading):
    # its link box holds the run's link (what the exports name),
    # and a lesson at a step of that view reads the run's result
    presses_run_after_pending(demo, views)
    for view in views.items:
        for event in events_of(view):
            event.success(_after_run(view, event), [*view.link_inputs, panel.state, view.state, lang],
                          [view.link_box, panel.state, panel.said], **private)

    lang.change(redraw, [panel.state, lang],
                [panel.pick, panel.progress, panel.look, panel.said, panel.state], **private)
    return {"steps": steps, "check": check}


def presses_run_after_pending(demo: gr.Blocks, views: Views) -> None:
    """Every run button a lesson presses (APPLY_JS) runs a press made while this page's last run
    of it is still pending once that run ends (Gradio's trigger_mode "always_last"). When a
    class moves between two steps of one section while the first step's run is pending, Gradio's
    default ("once") would drop the second step's press, and its panel would wait for a run that
    never comes."""
    buttons = {view.run._id for view in views.items if view.run is not None}
    for fn in demo.fns.values():
        if any(block in buttons and event == "click" for block, event in fn.targets):
            fn.trigger_mode = "always_last"


def redraw(state: Any, lang: Any) -> list:
    """[lesson list, progress, look, said, state] after a language change. A panel already in
    that language is left alone: a link's language change (at page load) may be handled after
    the step's run was read, and redrawing then from the state the change was sent with would
    put the waiting text over the reading."""
    lang = normalize_language(lang)
    choices = gr.update(choices=lesson_choices(lang))
    if lesson_of(state) is None or state.get("lang") == lang:
        return [choices, gr.skip(), gr.skip(), gr.skip(), gr.skip()]
    values = panel_values(state, lang)
    return [choices, *values[2:4], values[6], values[0]]


def _after_run(view: View, event: Any = None):
    n = len(view.link_inputs)

    def after_run(*args):
        if ended_by_move(event):   # the class moved on: the page left the step it was for
            return gr.skip(), gr.skip(), gr.skip()
        link = view.make_link(*args[:n])
        state, result, lang = args[n:]
        other = None
        lesson = lesson_of(state)
        if lesson is not None:
            step = lesson.steps[state["step"]]
            if step.view == view.key:
                # link_inputs: [model, lang, *the view's controls]
                other = differing(step, view, args[0], list(args[2:n]))
        state, said = observe(view.key, state, result, lang, other, link)
        return link, state, said
    return after_run
