"""The teacher's side of a live class (explorer/ui/classroom.py has the page, the bar, the
students' handlers and the wiring): starting a class, the links and QR code, moving the class,
the reveal, the answers file; and the helpers both sides share (`_page`, `_role`)."""
from __future__ import annotations

import json
import re
import tempfile
import time
from pathlib import Path
from typing import Any, Optional

import gradio as gr
import segno

from explorer.classroom import answers
from explorer.classroom.rooms import ROOMS, Rooms
from explorer.inputs import InputError
from explorer.lessons import LESSONS, steps_of
from explorer.locales import normalize_language, text
from explorer.ui import visitor_errors
from explorer.ui.gradio_patches import request_address
from explorer.ui.lessons import step_link
from explorer.ui.views import MAX_QUERY_CHARS, Views, link_of, read_link

# ----------------------------------------------------------------------------- checks


def class_link(query: Any, views: Views, runtime: Any) -> tuple[str, Optional[tuple[float, float]]]:
    """(link, bounds of its prediction) the class may follow: a lesson step or a view, read by
    views.read_link with no refused value, written back in its canonical form."""
    if not isinstance(query, str) or len(query) > MAX_QUERY_CHARS + 200 or "?" not in query:
        raise InputError("classroom.err.link")
    query = query[query.index("?"):]
    plan = read_link(query, views, runtime.names(), runtime.default_name,
                     lambda name: runtime.get(name).config, steps_of())
    if plan.notes:
        raise InputError("classroom.err.link")
    if plan.lesson:
        predict = LESSONS[plan.lesson].steps[plan.step].predict
        return step_link(plan.lesson, plan.step), (predict.low, predict.high) if predict else None
    view = views.get(plan.view) if plan.view else None
    if view is None:
        raise InputError("classroom.err.link")
    return link_of(view, plan.model, [plan.values.get(c.name, c.default) for c in view.controls]), None


def _origin(request: Any) -> str:
    """The page's origin as the browser reached it (for the links and the QR code)."""
    headers = getattr(request, "headers", None) or {}
    host = str(headers.get("x-forwarded-host") or headers.get("host") or "localhost")
    if not re.fullmatch(r"[A-Za-z0-9.:\[\]-]{1,255}", host):
        host = "localhost"
    proto = str(headers.get("x-forwarded-proto") or "")
    return f"{'https' if proto == 'https' else 'http'}://{host}/"


def _address(request: Any) -> str:
    return request_address(request) or ""


def _qr_html(url: str, lang: str) -> str:
    svg = segno.make(url, error="m").svg_inline(scale=6, border=2, dark="#000", light="#fff")
    alt = text("classroom.qr_alt", lang, student=url).replace('"', "&quot;")
    return f'<div role="img" aria-label="{alt}" class="class-qr">{svg}</div>'


def _page(**command: Any) -> str:
    return json.dumps({**command, "n": time.monotonic_ns()})


def _role(state: Any, role: str) -> Optional[dict]:
    return state if isinstance(state, dict) and state.get("role") == role else None


# ----------------------------------------------------------------------------- handlers


def teacher_values(code: str, secret: str, request: Any, lang: str) -> list:
    """[info, teacher link, teacher box, qr, csv] of the teacher's Class tab."""
    origin = _origin(request)
    student, teacher = f"{origin}?room={code}", f"{origin}?room={code}&key={secret}"
    return [text("classroom.started", lang, code=code, student=student),
            text("classroom.teacher_link", lang, teacher=teacher), gr.update(visible=True),
            _qr_html(student, lang), gr.update(visible=True)]


@visitor_errors
def start(lang: Any, request: gr.Request = None, rooms: Rooms = ROOMS) -> list:
    """Start a class: [state, stored, timer, message, page, *teacher_values]."""
    lang = normalize_language(lang)
    code, secret = rooms.create(_address(request))
    state = {"role": "teacher", "code": code, "secret": secret, "revision": None}
    return [state, {"code": code, "secret": secret}, gr.update(active=True), "",
            _page(room=code), *teacher_values(code, secret, request, lang)]


def publish(state: Any, link: Any, lesson_state: Any, views: Views, runtime: Any,
            rooms: Rooms = ROOMS) -> Any:
    """A teacher's page moved to `link` (a lesson step, or a section's copied link): the class
    follows it."""
    state = _role(state, "teacher")
    if state is None or not link:
        return gr.skip()
    query, bounds = class_link(link, views, runtime)
    rooms.follow(state["code"], state["secret"], query, bounds)
    return gr.skip()


@visitor_errors
def reveal(state: Any, lesson_state: Any, lang: Any, rooms: Rooms = ROOMS) -> list:
    """[status, plot, reveal]: the class's answers beside the value the teacher's run measured."""
    lang = normalize_language(lang)
    state = _role(state, "teacher")
    if state is None:
        return [gr.skip()] * 3
    measured = None
    if isinstance(lesson_state, dict) and lesson_state.get("lesson") in LESSONS:
        step = LESSONS[lesson_state["lesson"]].steps[lesson_state["step"]]
        fields = lesson_state.get("fields")
        if step.predict is not None and isinstance(fields, dict):
            measured = float(fields[step.predict.answer])
    hist = rooms.reveal(state["code"], state["secret"], measured)
    note = "" if measured is not None else text("classroom.measured_none", lang)
    return [note or gr.skip(), gr.update(visible=True, value=answers.figure(hist, lang)),
            gr.update(visible=False)]


@visitor_errors
def download(state: Any, lang: Any, rooms: Rooms = ROOMS) -> Any:
    state = _role(state, "teacher")
    if state is None:
        return gr.skip()
    body = rooms.csv_text(state["code"], state["secret"])
    folder = Path(tempfile.gettempdir()) / "explorer-class"
    folder.mkdir(exist_ok=True)
    path = folder / f"class-{state['code']}-answers.csv"
    path.write_text(body, encoding="utf-8")
    return gr.update(value=str(path), visible=True)


def _copied(view: Any, views: Views, runtime: Any):
    """A teacher's "Copy link" of `view`: the class follows the link of the section's settings."""
    def copied(state, lang_value, *values):
        if _role(state, "teacher") is None:
            return gr.skip()
        return publish(state, view.make_link(*values), None, views, runtime)
    return copied
