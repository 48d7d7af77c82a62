"""Peer instruction and pacing in the live class: the teacher's controls of a question's vote
(close it for the discussion, vote again, reveal both rounds, ask a transfer question), the
pause that holds the class on its step, and a student's answer from the class bar. The store
(explorer/classroom/questions.py) checks every call: a student's session holds no secret, so
a hostile client calling a teacher's action through the HTTP API is refused there.

The value a reveal stands beside is the teacher's own run, and only a run at the question's
settings: at a lesson's predict step (ours or a teacher's own), the panel's reading of its run
(lessons.observe keeps none from a run at other settings); at a transfer question, the step's
reader applied to the teacher's stored result of that section, when the run that left it was at
the transfer's link (its model and every control of the section). A section's results carry no
settings of their own: the page keeps, on the server, the link of each section's last run that
ended well and the result it left (`record_run`), and a reveal quotes a stored result only when
it is that run's (a section may redraw its result without its run button: another head, another
mask, another model) and that run's link is the question's.
"""
from __future__ import annotations

import weakref
from typing import Any, Callable, NamedTuple, Optional

import gradio as gr

from explorer.classroom import answers
from explorer.classroom.rooms import ROOMS, Rooms
from explorer.inputs import InputError
from explorer.lessons import Step, reading
from explorer.locales import normalize_language, text
from explorer.ui import visitor_errors
from explorer.ui.page.class_teacher import _page, _role, class_link
from explorer.ui.page.lesson_links import lesson_of, step_of_link
from explorer.ui.page.lessons import differing
from explorer.ui.page.views import MAX_QUERY_CHARS, View, Views, events_of, link_of, read_link
from explorer.web.stopping import ended_by_move


def _reads(runtime: Any) -> tuple:
    """(model names, default model, config_of): what reading a link needs of the runtime."""
    return runtime.names(), runtime.default_name, lambda name: runtime.get(name).config


def _step_of(link: Any, views: Views, runtime: Any) -> Optional[Step]:
    """The lesson step a class link names, ours or a teacher's own (None for another link)."""
    return step_of_link(link, views, *_reads(runtime))


class Settings(NamedTuple):
    """A section's settings as a link opens them: its model and every control's value (the
    part of a lesson Step that lessons.differing reads: `model`, `settings`)."""
    view: View
    model: str
    settings: dict


def settings_of(link: Any, views: Views, runtime: Any) -> Optional[Settings]:
    """The settings a view's link opens (a control it leaves out at its default); None for a
    lesson's link, a link with any refused value, or no link."""
    if not isinstance(link, str) or len(link) > MAX_QUERY_CHARS:
        return None
    names, default, config_of = _reads(runtime)
    plan = read_link(link, views, names, default, config_of)
    view = views.get(plan.view) if plan.view else None
    if view is None or plan.notes or plan.lesson:
        return None
    return Settings(view, plan.model or default,
                    {c.name: plan.values.get(c.name, c.default) for c in view.controls})


class Measured(NamedTuple):
    """A reveal's measured value, or None with the locale key saying why and the label keys of
    the settings the teacher's run had other than the question's."""
    value: Optional[float]
    why: str = ""
    other: tuple = ()


def _teacher(state: Any) -> Optional[dict]:
    return _role(state, "teacher")


def _teacher_action(name: str, act: Callable[[Rooms, str, str], None], said: str, doc: str):
    """A teacher's button of the vote cycle or the pacing: `act(rooms, code, secret)` (the store
    checks the secret and the phase), then the teacher's message `said`; a page that is not the
    teacher's changes nothing."""
    def handler(state: Any, lang: Any, rooms: Rooms = ROOMS) -> Any:
        state = _teacher(state)
        if state is None:
            return gr.skip()
        act(rooms, state["code"], state["secret"])
        return text(said, normalize_language(lang))
    handler.__name__ = handler.__qualname__ = name
    handler.__doc__ = doc
    return visitor_errors(handler)


close_vote = _teacher_action("close_vote", lambda r, code, secret: r.close_vote(code, secret),
                             "classroom.closed_now",
                             "Round 1 ends: the class discusses (the bar follows from the poll).")
revote = _teacher_action("revote", lambda r, code, secret: r.revote(code, secret),
                         "classroom.revote_now", "Round 2 opens: each student answers again.")
pause = _teacher_action("pause", lambda r, code, secret: r.pause(code, secret, True),
                        "classroom.paused_now", "Following pages hold the class's step until released.")
release = _teacher_action("release", lambda r, code, secret: r.pause(code, secret, False),
                          "classroom.released_now", "Following pages may move on their own again.")


def _other(wanted: Any, view: View, model: Any, values: Any) -> list:
    """lessons.differing, for `values` a mapping of the view's controls (a recorded run's)."""
    values = values if isinstance(values, dict) else {}
    return differing(wanted, view, model, [values.get(c.name) for c in view.controls])


def measured_value(view: dict, lesson_state: Any, results: dict, runs: Any, views: Views,
                   runtime: Any) -> Measured:
    """The value the teacher's run measured for the room's current question (`view`: the
    teacher's view of the room; `results`: view key -> the section's stored result; `runs`: view
    key -> (link, holder of the result) of its last run that ended well, or None): see the
    module's doc."""
    runs = runs if isinstance(runs, dict) else {}
    if view.get("origin"):
        step = _step_of(view["origin"], views, runtime)
        wanted = settings_of(view.get("link"), views, runtime)
        if step is None or step.predict is None or wanted is None or wanted.view.key != step.view:
            return Measured(None, "classroom.measured_none")
        ran = settings_of(_link_of_run(runs.get(step.view), results.get(step.view)), views, runtime)
        if ran is None or ran.view is not wanted.view:
            return Measured(None, "classroom.measured_other")
        other = _other(wanted, wanted.view, ran.model, ran.settings)
        if other:
            return Measured(None, "classroom.measured_settings", tuple(dict.fromkeys(other)))
        fields = reading(step, results.get(step.view))
        value = fields.get(step.predict.answer) if isinstance(fields, dict) else None
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return Measured(None, "classroom.measured_other")
        return Measured(float(value))
    lesson = lesson_of(lesson_state)     # ours or the teacher's own (explorer/lessons/custom.py)
    if lesson is None:
        return Measured(None, "classroom.measured_none")
    step = lesson.steps[lesson_state["step"]]
    fields = lesson_state.get("fields")
    if step.predict is None or not isinstance(fields, dict):
        return Measured(None, "classroom.measured_none")
    # the panel's reading came from a run at the step's settings (lessons.observe); the last
    # run that ended well is at them too (a failed run leaves the stored result of an earlier)
    kept = runs.get(step.view)
    ran = settings_of(kept[0] if isinstance(kept, tuple) else None, views, runtime)
    if ran is None or ran.view.key != step.view:
        return Measured(None, "classroom.measured_none")
    other = _other(step, ran.view, ran.model, ran.settings)
    if other:
        return Measured(None, "classroom.measured_settings", tuple(dict.fromkeys(other)))
    return Measured(float(fields[step.predict.answer]))


def measured_note(measured: Measured, lang: str) -> str:
    """The reveal's line when it quotes no value: why, naming the settings that differ."""
    if measured.value is not None:
        return ""
    if measured.why == "classroom.measured_settings":
        names = text("lesson.names_sep", lang).join(text(key, lang) for key in measured.other)
        return text(measured.why, lang, names=names)
    return text(measured.why or "classroom.measured_none", lang)


def reveal_handler(views: Views, runtime: Any):
    """The teacher's Reveal: [message, plot, reveal, close, revote]: each round's histogram
    beside the value the teacher's run measured at the question's settings. Inputs: the bar's
    state, the panel's state, lang, the recorded runs, every section's stored result (the
    views with a state)."""
    keys = [v.key for v in views.items if v.state is not None]

    @visitor_errors
    def reveal(state, lesson_state, lang, runs, *results, rooms: Rooms = ROOMS):
        lang = normalize_language(lang)
        state = _teacher(state)
        if state is None:
            return [gr.skip()] * 5
        view = rooms.teacher_view(state["code"], state["secret"])
        measured = measured_value(view, lesson_state, dict(zip(keys, results)), runs, views, runtime)
        rooms.reveal(state["code"], state["secret"], measured.value)
        view = rooms.teacher_view(state["code"], state["secret"])
        note = measured_note(measured, lang)
        hidden = gr.update(visible=False)
        return [note or gr.skip(),
                gr.update(visible=True, value=answers.figure(view["histograms"], lang,
                                                             parent=view.get("transfer_of"))),
                hidden, hidden, hidden]
    return reveal


def transfer_handler(views: Views, runtime: Any):
    """The teacher's "Ask a transfer question": the section of the current question's step (of
    our lessons or the teacher's own) at the page's current settings becomes the class's next
    question: [message, pending] (the teacher's page applies and runs the link too, so that
    its run gives the measured value)."""
    components = views.components()

    @visitor_errors
    def transfer(state, lang, model, *values, rooms: Rooms = ROOMS):
        lang = normalize_language(lang)
        state = _teacher(state)
        if state is None:
            return [gr.skip()] * 2
        view = rooms.teacher_view(state["code"], state["secret"])
        step = _step_of(view.get("origin") or view["link"], views, runtime)
        section = views.get(step.view) if step is not None and step.predict is not None else None
        if section is None:
            raise InputError("classroom.err.transfer_view")
        by_id = {id(c): v for c, v in zip(components, values)}
        link = link_of(section, model, [by_id.get(id(c.component), c.default) for c in section.controls])
        query, _ = class_link(link, views, runtime)
        rooms.transfer(state["code"], state["secret"], query)
        return [text("classroom.transfer_now", lang), _page(link=query)]
    return transfer


def _holder(result: Any) -> Callable[[], Any]:
    """A call that gives `result` back while it lives: a weak reference where the object takes
    one (the record keeps no result alive), the object itself otherwise."""
    try:
        return weakref.ref(result)
    except TypeError:
        return lambda: result


def record_run(view: View, runtime: Any, event: Any = None):
    """After a run of `view` that ended well: `runs` (view key -> (link, holder of the result))
    holds the link of its settings and the result it left, or None when a value of the run is
    one no link can carry (then no reveal quotes it). A run that left the stored result as it
    was (it drew nothing new) keeps the record of the run that did."""
    def record(runs: Any, result: Any, model: Any, lang: Any, *values: Any) -> dict:
        runs = dict(runs) if isinstance(runs, dict) else {}
        if ended_by_move(event):   # the class moved on mid-run: it is no one's answer
            return runs
        kept = runs.get(view.key)
        if result is not None and _result_of(kept) is result:
            return runs
        exact = result is not None and isinstance(model, str) and model in runtime.names() and \
            len(values) == len(view.controls) and \
            all(c.write(v) is not None for c, v in zip(view.controls, values))
        runs[view.key] = (link_of(view, model, values), _holder(result)) if exact else None
        return runs
    return record


def _result_of(kept: Any) -> Any:
    return kept[1]() if isinstance(kept, tuple) and len(kept) == 2 and callable(kept[1]) else None


def _link_of_run(kept: Any, result: Any) -> Optional[str]:
    """The recorded link of the run that left `result` (None when the stored result is not the
    recorded run's: redrawn since, another head or mask, a failed run's)."""
    if result is None or _result_of(kept) is not result:
        return None
    return kept[0] if isinstance(kept[0], str) else None


def wire_runs(views: Views, runtime: Any) -> gr.State:
    """The server's record of each section's last run that ended well (view key -> (link,
    holder of the result it left)). A failed run needs no event of its own: it left either the
    recorded result (the record still says its settings) or another (not the recorded one, so
    never quoted)."""
    runs = gr.State({})
    for view in views.items:
        if view.state is None:
            continue
        for event in events_of(view):
            # queued like the lessons' reading of the run (the cheap group): a reveal pressed
            # after the run is served after it
            event.success(record_run(view, runtime, event), [runs, view.state, *view.link_inputs], [runs],
                          api_visibility="private")
    return runs


@visitor_errors
def send(state: Any, guess: Any, lang: Any, rooms: Rooms = ROOMS) -> Any:
    """A student's answer from the bar to the question the page last read (its state's link):
    the bar's line says it is in."""
    lang = normalize_language(lang)
    state = _role(state, "student")
    if state is None:
        return gr.skip()
    link = state.get("link")
    if not isinstance(link, str) or len(link) > MAX_QUERY_CHARS + 200:
        raise InputError("classroom.err.not_now")
    n = rooms.answer(state["code"], state["token"], link, guess)
    return text("classroom.answer_in", lang, value=f"{float(guess):g}", answered=n)


@visitor_errors
def hold(state: Any, follow: Any, rooms: Rooms = ROOMS) -> Any:
    """After a following student's own lesson move (Next, Back, another lesson): while the
    teacher holds the class, the page is taken back to the class's link (its UI holds those
    buttons; this holds a page whose script did not)."""
    state = _role(state, "student")
    if state is None or follow is False:
        return gr.skip()
    view = rooms.student_view(state["code"], state["token"])
    return _page(link=view["link"], held=True) if view["paused"] and view["link"] else gr.skip()


def wire_peer(tab: Any, bar: Any, panel: Any, header: Any, views: Views, runtime: Any,
              lesson_events: dict) -> None:
    """The bar's question and pacing controls (after classroom.wire's own events)."""
    lang, model = header.lang, header.model
    api = {"api_visibility": "undocumented"}
    results = [v.state for v in views.items if v.state is not None]
    runs = wire_runs(views, runtime)
    bar.reveal.click(reveal_handler(views, runtime), [bar.state, panel.state, lang, runs, *results],
                     [tab.message, bar.plot, bar.reveal, bar.close, bar.revote],
                     api_name="class_reveal", **api)
    bar.close.click(close_vote, [bar.state, lang], [tab.message], api_name="class_close", **api)
    bar.revote.click(revote, [bar.state, lang], [tab.message], api_name="class_revote", **api)
    bar.pause.click(pause, [bar.state, lang], [tab.message], api_name="class_pause", **api)
    bar.release.click(release, [bar.state, lang], [tab.message], api_name="class_release", **api)
    bar.transfer.click(transfer_handler(views, runtime),
                       [bar.state, lang, model, *views.components()], [tab.message, bar.pending],
                       api_visibility="private")
    bar.send.click(send, [bar.state, bar.guess, lang], [bar.status], queue=False,
                   api_name="class_send", **api)
    bar.pace.change(None, [bar.pace], None, js=PACE_JS)
    for event in lesson_events.get("steps", ()):
        event.then(hold, [bar.state, bar.follow], [bar.pending], queue=False,
                   api_visibility="private")


PACE_JS = "(value) => window.explorerClassPace && window.explorerClassPace(value)"
