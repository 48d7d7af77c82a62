"""The teacher's side of a live class (explorer/ui/page/classroom.py has the page, the bar, the
students' handlers and the wiring): starting a class, the links and QR code, moving the class,
the answers file (the reveal and the vote: class_peer.py); and the helpers both sides share (`_page`, `_role`)."""
from __future__ import annotations

import json
import os
import re
import tempfile
import threading
import time
from typing import Any, Optional

import gradio as gr
import segno

from explorer.classroom.rooms import ROOMS, Rooms
from explorer.inputs import InputError
from explorer.locales import normalize_language, text
from explorer.serving.priority import CHECKS_FIRST
from explorer.ui import visitor_errors
from explorer.web.gradio_context import request_address
from explorer.web.stopping import stop_sessions
from explorer.ui.page.lesson_links import lesson_named, read_lesson_link, step_link
from explorer.ui.page.views import MAX_QUERY_CHARS, Views, link_of, plain

# ----------------------------------------------------------------------------- checks


def class_link(query: Any, views: Views, runtime: Any) -> tuple[str, Optional[tuple[float, float]]]:
    """(link, bounds of its prediction) the class may follow: a lesson step or a view, read by
    views.read_link with no refused value, written back in its canonical form."""
    if not isinstance(query, str) or len(query) > MAX_QUERY_CHARS + 200 or "?" not in query:
        raise InputError("classroom.err.link")
    query = query[query.index("?"):]
    plan, data = read_lesson_link(query, views, runtime.names(), runtime.default_name,
                                  lambda name: runtime.get(name).config)
    if plan.notes:
        raise InputError("classroom.err.link")
    if plan.lesson:   # ours, or a teacher's own (data: its steps, carried in the link)
        predict = lesson_named(plan.lesson, data).steps[plan.step].predict
        return step_link(plan.lesson, plan.step, data), (predict.low, predict.high) if predict else None
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


def _session(request: Any) -> Optional[str]:
    """Gradio's session of the page (None for a request that came without one)."""
    session = getattr(request, "session_hash", None)
    return session if isinstance(session, str) and session else None


def _qr_html(url: str, lang: str) -> str:
    svg = segno.make(url, error="m").svg_inline(scale=6, border=2, dark="#000", light="#fff")
    alt = text("classroom.qr_alt", lang, student=url).replace('"', "&quot;")
    return f'<div role="img" aria-label="{alt}" class="class-qr">{svg}</div>'


def _page(**command: Any) -> str:
    return json.dumps({**command, "n": time.monotonic_ns()})


def _role(state: Any, role: str) -> Optional[dict]:
    return state if isinstance(state, dict) and state.get("role") == role else None


def hold_checks(request: Any, code: str, secret: str, rooms: Rooms = ROOMS) -> None:
    """The teacher's page (its session, on the server; the secret checked against the room)
    keeps its Generate checks while the class generates, as long as the room lives and the
    secret is its teacher's (explorer/serving/priority.py)."""
    def still() -> bool:
        try:
            rooms.check_teacher(code, secret)
        except InputError:
            return False
        return True
    CHECKS_FIRST.grant(_session(request), still)


# ----------------------------------------------------------------------------- handlers


def teacher_values(code: str, secret: str, request: Any, lang: str, rooms: Rooms = ROOMS) -> list:
    """[info, teacher link, teacher box, qr, csv, members, remove, lock, end] of the teacher's
    Class tab."""
    origin = _origin(request)
    # the student link carries the room's invite: a student who scans or clicks it is never
    # taken for a prober of codes (rooms.py), whoever shares their address
    student = f"{origin}?room={code}&invite={rooms.invite(code, secret)}"
    teacher = f"{origin}?room={code}&key={secret}"
    view = rooms.teacher_view(code, secret)
    return [text("classroom.started", lang, code=code, student=student),
            text("classroom.teacher_link", lang, teacher=teacher), gr.update(visible=True),
            _qr_html(student, lang), gr.update(visible=True),
            gr.update(visible=True, choices=roster_choices(view, lang), value=None),
            gr.update(visible=True), gr.update(visible=True, value=view["locked"]),
            gr.update(visible=True)]


def _member_name(member_id: str, nickname: str, lang: str) -> str:
    return nickname or text("classroom.member_anon", lang, id=member_id)


def roster_choices(view: dict, lang: str) -> list[tuple[str, str]]:
    """(label, member id) of each member in the teacher's view, first joined first."""
    return [(text("classroom.member_label", lang, name=_member_name(member_id, nickname, lang),
                  status=text("classroom.member_active" if here else "classroom.member_away", lang)),
             member_id) for member_id, nickname, here in view["roster"]]


@visitor_errors
def start(lang: Any, request: gr.Request = None, rooms: Rooms = ROOMS) -> list:
    """Start a class: [state, stored, timer, message, page, *teacher_values]."""
    lang = normalize_language(lang)
    code, secret = rooms.create(_address(request))
    hold_checks(request, code, secret, rooms)
    state = {"role": "teacher", "code": code, "secret": secret, "revision": None,
             "watch": rooms.watch_token(code, secret)}
    # the key is kept for this tab only (the page's sessionStorage); the browser's lasting
    # storage is cleared of any older one
    return [state, None, gr.update(active=True), "",
            _page(room=code, member=state["watch"], teacher=secret),
            *teacher_values(code, secret, request, lang, rooms)]


@visitor_errors
def end_class(state: Any, lang: Any, rooms: Rooms = ROOMS) -> list:
    """The teacher ends the class: the room is dropped (its members' pages say the class is
    gone), this tab forgets its key: [state, timer, message, page, bar, *teacher_values]."""
    lang = normalize_language(lang)
    state = _role(state, "teacher")
    if state is None:
        return [gr.skip()] * 14
    rooms.end(state["code"], state["secret"])
    hidden = gr.update(visible=False)
    return [None, gr.update(active=False), text("classroom.ended", lang), _page(end=True), hidden,
            "", "", hidden, "", hidden, gr.update(visible=False, choices=[], value=None), hidden,
            gr.update(visible=False, value=False), hidden]


@visitor_errors
def remove_member(state: Any, member_id: Any, lang: Any, rooms: Rooms = ROOMS) -> list:
    """The teacher removes the member chosen in the roster: [message, members]."""
    lang = normalize_language(lang)
    state = _role(state, "teacher")
    if state is None:
        return [gr.skip()] * 2
    if not isinstance(member_id, str) or len(member_id) > 32:
        raise InputError("classroom.err.no_member")
    nickname = rooms.remove(state["code"], state["secret"], member_id)
    view = rooms.teacher_view(state["code"], state["secret"])
    return [text("classroom.removed", lang, name=plain(_member_name(member_id, nickname, lang))),
            gr.update(choices=roster_choices(view, lang), value=None)]


@visitor_errors
def lock_class(state: Any, locked: Any, lang: Any, rooms: Rooms = ROOMS) -> Any:
    """The teacher locks the class (no new members) or opens it again: the message."""
    lang = normalize_language(lang)
    state = _role(state, "teacher")
    if state is None:
        return gr.skip()
    now = rooms.lock(state["code"], state["secret"], locked is True)
    return text("classroom.locked_now" if now else "classroom.unlocked_now", lang)


def publish(state: Any, link: Any, lesson_state: Any, views: Views, runtime: Any,
            rooms: Rooms = ROOMS) -> Any:
    """A teacher's page moved to `link` (a lesson step, or a section's copied link): the class
    follows it."""
    state = _role(state, "teacher")
    if state is None or not link:
        return gr.skip()
    query, bounds = class_link(link, views, runtime)
    before = rooms.moves(state["code"])
    moves = rooms.follow(state["code"], state["secret"], query, bounds)
    if moves != before:
        # the following pages' runs of the step they leave end now, not when each page's own
        # poll learns of the move: a page busy drawing a run's stream learns it seconds late
        stop_sessions(rooms.sessions(state["code"], state["secret"]), once_for=(state["code"], moves))
    return gr.skip()


@visitor_errors
def download(state: Any, lang: Any, rooms: Rooms = ROOMS) -> Any:
    """The class's answers as a CSV file: a private file of a unique name in a folder only this
    user reads (the answers and nicknames are the teacher's alone), removed CSV_KEEP_S after it
    was written. Gradio serves its own copy (its cache, the same mode, cleaned by the app's
    delete_cache), made as this handler returns."""
    state = _role(state, "teacher")
    if state is None:
        return gr.skip()
    body = rooms.csv_text(state["code"], state["secret"])
    sweep_answer_files()
    descriptor, path = tempfile.mkstemp(prefix=f"class-{state['code']}-answers-", suffix=".csv",
                                        dir=_answers_folder())
    with os.fdopen(descriptor, "w", encoding="utf-8", newline="") as out:   # mkstemp: mode 0600
        out.write(body)
    timer = threading.Timer(CSV_KEEP_S, _remove, (path,))
    timer.daemon = True
    timer.start()
    return gr.update(value=path, visible=True)


CSV_KEEP_S = 120.0       # Gradio copies the file at once; a slow copy still has two minutes
_FOLDER: dict[str, str] = {}


def _answers_folder() -> str:
    """This process's private folder for answer files (mode 0700), made at its first use under
    the temp folder of that moment."""
    base = tempfile.gettempdir()
    folder = _FOLDER.get(base)
    if folder is None or not os.path.isdir(folder):
        folder = _FOLDER[base] = tempfile.mkdtemp(prefix="explorer-class-")
    return folder


def _remove(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass


def sweep_answer_files(now: Optional[float] = None) -> None:
    """Remove answer files older than CSV_KEEP_S (one a timer missed: a process stopped in
    between keeps none, the folder is its own)."""
    folder = _FOLDER.get(tempfile.gettempdir())
    if folder is None or not os.path.isdir(folder):
        return
    now = time.time() if now is None else now
    for entry in os.scandir(folder):
        try:
            if now - entry.stat().st_mtime > CSV_KEEP_S:
                os.unlink(entry.path)
        except OSError:
            pass


def _copied(view: Any, views: Views, runtime: Any):
    """A teacher's "Copy link" of `view`: the class follows the link of the section's settings."""
    def copied(state, lang_value, *values):
        if _role(state, "teacher") is None:
            return gr.skip()
        return publish(state, view.make_link(*values), None, views, runtime)
    return copied
