"""Peer instruction and pacing in the live class: the teacher's controls of a question's vote
(close it for the discussion, vote again, reveal both rounds, ask a transfer question), the
pause that holds the class on its step, and a student's answer from the class bar. The store
(explorer/classroom/questions.py) checks every call: a student's session holds no secret, so
a hostile client calling a teacher's action through the HTTP API is refused there.

The value a reveal stands beside is the teacher's own run: at a lesson's predict step, the
panel's reading of it (as before); at a transfer question, the same step's reader applied to the
teacher's last run of that section (the teacher's page runs the transfer link when it asks it).
"""
from __future__ import annotations

import re
from typing import Any, Callable, Optional

import gradio as gr

from explorer.classroom import answers
from explorer.classroom.rooms import ROOMS, Rooms
from explorer.inputs import InputError
from explorer.lessons import LESSONS, reading
from explorer.locales import normalize_language, text
from explorer.ui import visitor_errors
from explorer.ui.page.class_teacher import _page, _role, class_link
from explorer.ui.page.lesson_links import lesson_of
from explorer.ui.page.views import MAX_QUERY_CHARS, Views, link_of

STEP_LINK = re.compile(r"^\?lesson=([a-z0-9-]{1,40})&step=(\d{1,3})$")


def _step_of(link: Optional[str]) -> Any:
    """The lesson step a class link names (None for another link)."""
    match = STEP_LINK.match(link or "")
    lesson = LESSONS.get(match.group(1)) if match else None
    index = int(match.group(2)) - 1 if match else -1
    return lesson.steps[index] if lesson is not None and 0 <= index < len(lesson.steps) else None


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


def measured_value(view: dict, lesson_state: Any, results: dict) -> Optional[float]:
    """The value the teacher's run measured for the room's current question: a transfer
    question's from the teacher's last run of its section (`results`: view key -> result), a
    lesson step's from the panel's reading of its run; None when there is none."""
    if view.get("origin"):
        step = _step_of(view["origin"])
        if step is None or step.predict is None:
            return None
        fields = reading(step, results.get(step.view))
        value = fields.get(step.predict.answer) if isinstance(fields, dict) else None
        return float(value) if isinstance(value, (int, float)) else None
    lesson = lesson_of(lesson_state)     # ours or the teacher's own (explorer/lessons/custom.py)
    if lesson is not None:
        step = lesson.steps[lesson_state["step"]]
        fields = lesson_state.get("fields")
        if step.predict is not None and isinstance(fields, dict):
            return float(fields[step.predict.answer])
    return None


def reveal_handler(views: Views):
    """The teacher's Reveal: [message, plot, reveal, close, revote]: each round's histogram
    beside the value the teacher's run measured."""
    keys = [v.key for v in views.items if v.state is not None]

    @visitor_errors
    def reveal(state, lesson_state, lang, *results, rooms: Rooms = ROOMS):
        lang = normalize_language(lang)
        state = _teacher(state)
        if state is None:
            return [gr.skip()] * 5
        view = rooms.teacher_view(state["code"], state["secret"])
        measured = measured_value(view, lesson_state, dict(zip(keys, results)))
        rooms.reveal(state["code"], state["secret"], measured)
        view = rooms.teacher_view(state["code"], state["secret"])
        note = "" if measured is not None else text(
            "classroom.measured_other" if view.get("origin") else "classroom.measured_none", lang)
        hidden = gr.update(visible=False)
        return [note or gr.skip(),
                gr.update(visible=True, value=answers.figure(view["histograms"], lang,
                                                             parent=view.get("transfer_of"))),
                hidden, hidden, hidden]
    return reveal


def transfer_handler(views: Views, runtime: Any):
    """The teacher's "Ask a transfer question": the section of the current question's step at
    the page's current settings becomes the class's next question: [message, pending] (the
    teacher's page applies and runs the link too, so that its run gives the measured value)."""
    components = views.components()

    @visitor_errors
    def transfer(state, lang, model, *values, rooms: Rooms = ROOMS):
        lang = normalize_language(lang)
        state = _teacher(state)
        if state is None:
            return [gr.skip()] * 2
        view = rooms.teacher_view(state["code"], state["secret"])
        step = _step_of(view.get("origin") or view["link"])
        section = views.get(step.view) if step is not None and step.predict is not None else None
        if section is None:
            raise InputError("classroom.err.transfer_view")
        by_id = {id(c): v for c, v in zip(components, values)}
        link = link_of(section, model, [by_id.get(id(c.component), c.default) for c in section.controls])
        query, _ = class_link(link, views, runtime)
        rooms.transfer(state["code"], state["secret"], query)
        return [text("classroom.transfer_now", lang), _page(link=query)]
    return transfer


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
    bar.reveal.click(reveal_handler(views), [bar.state, panel.state, lang, *results],
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
