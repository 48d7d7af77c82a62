"""The Class tab and the class bar: a live class on the page (explorer/classroom/rooms.py).

A teacher presses "Start a class": the room's code, the student link (/?room=CODE, with its QR
code) and the teacher link (/?room=CODE&key=SECRET) appear. Students join by code (+ nickname)
or by link; the member token is kept in the browser (gr.BrowserState), so a reload rejoins the
same member, and the page's address keeps ?room=CODE (the cookie `explorer_room` too: the room
link contract, docs/SCALING.md). The teacher's secret lives in the teacher's tab only
(sessionStorage, static/classroom.js: a later visit on a shared PC is no teacher) and the
teacher link: the address bar shows ?room=CODE, never the key, as it is projected. "End the
class" drops the room and makes the tab forget the key.

Following: the page long-polls a plain route (explorer/web/class_route.py) for the room's
revision, a counter (a gr.Timer's script starts the next read); only when it changed does the
page call `poll` (queue=False), which reads the room once under the store's lock. A teacher's
move (a lesson step, or a section's "Copy link") reaches a following student's page as a link
applied as on load (lessons.restore, then window.explorerApply presses the run button).

A move takes as few hops as it can, since each waits for a page that may be busy drawing a
run's stream: the teacher's step is published as it is pressed (a listener of the same press
computes the step's link with the lesson's own handler, `early_move`), not after the teacher's
page has drawn the step; the long poll's answer carries the link to a member
(explorer/web/class_route.py), and the page's script hands it to `apply_move` at once, in
parallel with the poll. Both write the same value (`move_value`), so a move is applied once,
and it ends the page's runs of the step it leaves.
"Explore on my own" stops applying moves; "Back to the class" applies the current one at once.

Answers: a student's guess in the lesson panel (or the bar's own box) goes to the class as well
as running the step on their page; the teacher's bar shows "n of m answered" and can run peer
instruction (explorer/ui/page/class_peer.py): close the vote for the discussion, vote again,
reveal both rounds beside the value the teacher's own run measured, ask a transfer question at
the section's current settings, pause the class on its step; the teacher downloads the CSV.
The bar itself is explorer/ui/page/class_bar.py. Every handler checks
its inputs in the store (hostile clients call them through the HTTP API): a member token or the
teacher's secret from the session's state, never from the client's values. Joining, answering
and the poll skip the queue (queue=False): each is a few dictionary operations under the store's
lock, and a class behind one school address would otherwise meet the queue's per-address bound
on waiting events when forty students press at once; the store's own limits bound them.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

import gradio as gr

from explorer.classroom.rooms import MAX_NICKNAME, ROOMS, Rooms, clean_code, clean_nickname
from explorer.inputs import InputError
from explorer.locales import normalize_language, text
from explorer.ui import visitor_errors
from explorer.web.stopping import explore_alone, stop_every_run
from explorer.ui.page.class_teacher import (_address, _copied, _page, _role, _session,  # noqa: F401
                                       class_link, download, end_class, lock_class, publish,
                                       hold_checks, remove_member, roster_choices, start,
                                       teacher_values)
from explorer.ui.page.class_bar import (HIDDEN, POLL_S, SHOWN, Bar, bar_text,  # noqa: F401
                                        bar_values, build_bar, gone_values)
from explorer.ui.page.class_peer import wire_peer
from explorer.ui.page.lesson_script import with_page_language
from explorer.ui.page.lessons import APPLY_JS, LINK_AT, panel_outputs, restore
from explorer.ui.page.views import MAX_QUERY_CHARS, Views, plain

TITLE = "classroom.title"


@dataclass
class Tab:
    code: gr.Textbox
    nickname: gr.Textbox
    join: gr.Button
    start: gr.Button
    info: gr.Markdown
    teacher_link: gr.Markdown
    qr: gr.HTML
    teacher_box: gr.Accordion
    csv: gr.Button
    csv_file: gr.File
    message: gr.Markdown
    members: gr.Dropdown     # the teacher's roster: a member to remove (by its id)
    remove: gr.Button
    lock: gr.Checkbox        # no new members
    end: gr.Button           # end the class: the room goes, the tab forgets the key

    def teacher_outputs(self) -> list:
        return [self.info, self.teacher_link, self.teacher_box, self.qr, self.csv, self.members,
                self.remove, self.lock, self.end]


def build(ctx: Any) -> None:
    t = ctx.t
    gr.Markdown(t("classroom.intro"))
    with gr.Row():
        with gr.Column():
            gr.Markdown(t("classroom.student.heading"))
            code = gr.Textbox(label=t("classroom.code"), info=t("classroom.code_info"), max_lines=1,
                              max_length=32, elem_id="class-code")
            nickname = gr.Textbox(label=t("classroom.nickname"), info=t("classroom.nickname_info"),
                                  max_lines=1, max_length=4 * MAX_NICKNAME, elem_id="class-nickname")
            join = gr.Button(t("classroom.join"), variant="primary", elem_id="class-join")
        with gr.Column():
            gr.Markdown(t("classroom.teacher.heading"))
            start = gr.Button(t("classroom.start"), elem_id="class-start")
            info = gr.Markdown(elem_id="class-info")
            qr = gr.HTML(elem_id="class-qr")
            with gr.Accordion(t("classroom.teacher_link_heading"), open=False, visible=False,
                              elem_id="class-teacher-link-box") as teacher_box:
                teacher_link = gr.Markdown(elem_id="class-teacher-link")
            csv = gr.Button(t("classroom.csv"), size="sm", visible=False, elem_id="class-csv")
            csv_file = gr.File(visible=False, interactive=False, elem_id="class-csv-file")
            # any value reaches the store, which knows the room's members (a stale choice is
            # answered in words): Gradio's own choice check would read the page's first list
            members = gr.Dropdown([], value=None, label=t("classroom.members"), allow_custom_value=True,
                                  info=t("classroom.members_info"), visible=False, elem_id="class-members")
            remove = gr.Button(t("classroom.remove"), size="sm", visible=False, elem_id="class-remove")
            lock = gr.Checkbox(False, label=t("classroom.lock"), visible=False, elem_id="class-lock")
            end = gr.Button(t("classroom.end"), size="sm", variant="stop", visible=False,
                            elem_id="class-end")
    message = gr.Markdown(elem_id="class-message")
    ctx.class_tab = Tab(code, nickname, join, start, info, teacher_link, qr,
                        teacher_box, csv, csv_file, message, members, remove, lock, end)


def _view(state: dict, rooms: Rooms) -> dict:
    if state["role"] == "teacher":
        return rooms.teacher_view(state["code"], state["secret"])
    return rooms.student_view(state["code"], state["token"])


def _roster(state: dict, view: dict, lang: str) -> Any:
    """The teacher's member list as the room stands (a student's page: unchanged)."""
    return gr.update(choices=roster_choices(view, lang)) if state["role"] == "teacher" else gr.skip()


# ----------------------------------------------------------------------------- handlers

# poll's outputs: [state, column, status, explore, back, reveal, plot, timer, pending, members,
# *the vote's and the pacing's] (Bar.outputs() split at SHOWN: the first ten as they always were)
N_BAR = 15


@visitor_errors
def poll(state: Any, follow: Any, lang: Any, rooms: Rooms = ROOMS) -> list:
    """The timer's tick: nothing (all skipped) while the room's revision is the one shown; else
    the bar's values and, for a following student, the teacher's move to apply."""
    lang = normalize_language(lang)
    if not isinstance(state, dict) or state.get("role") not in ("teacher", "student"):
        return [gr.skip()] * (1 + SHOWN) + [gr.update(active=False)] + [gr.skip()] * (N_BAR - SHOWN + 2)
    # the teacher's page reads answers and joins too (its watch token), a member's page not
    if rooms.revision(state.get("code"), state.get("watch") or state.get("token")) == state.get("revision"):
        return [gr.skip()] * (N_BAR + 4)
    try:
        view = _view(state, rooms)
    except InputError as error:
        gone = gone_values(lang, error)
        return [None, *gone[:SHOWN], gr.update(active=False), gr.skip(), gr.skip(), *gone[SHOWN:]]
    pending = gr.skip()
    following = follow is not False
    if state["role"] == "student" and following and view["moves"] != state.get("moves") and view["link"]:
        pending = move_value(view["moves"], view["link"])
        # the step this page still runs ends now (its own last message): its stream no longer
        # holds the page, and the new step's run can start
        stop_every_run(once_for=(state["code"], view["moves"]))
    state = {**state, "revision": view["revision"], "moves": view["moves"], "link": view["link"]}
    values = bar_values({**state, "following": following}, view, lang)
    return [state, *values[:SHOWN], gr.skip(), pending, _roster(state, view, lang), *values[SHOWN:]]


def move_value(moves: int, link: str) -> str:
    """The pending move a following page applies: the same text whether the poll or the page's
    script (static/classroom.js, classMoved: JSON.stringify({link, moves})) writes it, so that
    the second write is no change and the move is applied once."""
    return json.dumps({"link": link, "moves": moves}, separators=(",", ":"))


def early_mover(tab: Tab, bar: Bar, views: Views, runtime: Any):
    """lessons.wire's `first`: each lesson move's press gets, before the step's own listener,
    one that publishes the teacher's move (early_move; queue=False: a few dictionary
    operations under the store's lock)."""
    def first(listen: Any, step: Any, inputs: list) -> None:
        listen(early_move(step, views, runtime), [bar.state, *inputs], [tab.message], queue=False,
               api_visibility="private")
    return first


def early_move(step: Any, views: Views, runtime: Any):
    """A listener of a lesson move's press (lesson_events["movers"]): on the teacher's page, the
    class follows the step `step` (the lesson's own handler) opens, published now; any other
    page changes nothing (and computes nothing)."""
    def move_at_press(state: Any, *values: Any) -> Any:
        if _role(state, "teacher") is None:
            return gr.skip()
        link = step(*values)[LINK_AT]
        return publish(state, link if isinstance(link, str) else None, None, views, runtime)
    return visitor_errors(move_at_press)


@visitor_errors
def relabel(state: Any, follow: Any, lang: Any, rooms: Rooms = ROOMS) -> list:
    """[column, status, explore, back, reveal, plot, members, *the vote's and the pacing's] in
    a new language: the bar as the room stands now (the class's state and the page's place in
    it unchanged)."""
    lang = normalize_language(lang)
    if not isinstance(state, dict) or state.get("role") not in ("teacher", "student"):
        return [gr.skip()] * (N_BAR + 1)
    try:
        view = _view(state, rooms)
    except InputError as error:
        gone = gone_values(lang, error)
        return [*gone[:SHOWN], gr.skip(), *gone[SHOWN:]]
    values = bar_values({**state, "following": follow is not False}, view, lang)
    return [*values[:SHOWN], _roster(state, view, lang), *values[SHOWN:]]


@visitor_errors
def join(code: Any, nickname: Any, state: Any, lang: Any, request: gr.Request = None,
         rooms: Rooms = ROOMS) -> list:
    """Join by code: [state, stored, timer, message, page]; the page reloads with ?room=CODE when
    its address has another (the room link contract), and rejoins the same member from storage
    (on_load). A page already in the class (its state, or its session) joins again as the same
    member; the store refuses a request without a session and bounds joins (rooms.py)."""
    lang = normalize_language(lang)
    code = clean_code(code)            # as the store reads it: "abc-def" is the room ABCDEF
    mine = _role(state, "student") or {}
    token = mine.get("token") if mine.get("code") == code else None
    invited = _role(state, "invited") or {}     # the student link's invite (on_load)
    invite = invited.get("invite") if invited.get("code") == code else None
    code, token = rooms.join(code, nickname, token, session=_session(request),
                             address=_address(request), invite=invite)
    state = {"role": "student", "code": code, "token": token, "revision": None, "moves": None}
    nick = clean_nickname(nickname)    # join checked it: a nickname it refused raised there
    said = text("classroom.joined", lang, code=code,
                nick=text("classroom.joined_nick", lang, nick=plain(nick)) if nick else "")
    return [state, {"code": code, "token": token}, gr.update(active=True), said,
            _page(room=code, reload=True, member=token)]


@visitor_errors
def on_load(stored: Any, lang: Any, kept: Any = None, request: gr.Request = None,
            rooms: Rooms = ROOMS) -> list:
    """The page's address: ?room=CODE (a student, or a teacher whose key this tab keeps: `kept`,
    JSON {"code", "secret"} from sessionStorage) or ?room=CODE&key=SECRET (a teacher's link).
    A secret an older version left in the browser's lasting storage (`stored`) is no key: it
    is dropped there. [state, stored, timer, code box, message, page, *teacher_values]."""
    lang = normalize_language(lang)
    query = dict(request.query_params) if request is not None else {}
    room, key = query.get("room"), query.get("key")
    unchanged = [gr.skip()] * 9
    if not room:
        return [gr.skip()] * 6 + unchanged
    mine = stored if isinstance(stored, dict) and stored.get("code") == room else {}
    tab_key = _kept(kept, room)
    forget = None if isinstance(stored, dict) and "secret" in stored else gr.skip()
    try:
        code = clean_code(room)
        if key or tab_key:
            secret = key or tab_key
            rooms.check_teacher(code, secret)
            hold_checks(request, code, secret, rooms)
            state = {"role": "teacher", "code": code, "secret": secret, "revision": None,
                     "watch": rooms.watch_token(code, secret)}
            return [state, forget, gr.update(active=True), gr.skip(), "",
                    _page(room=code, address=True, member=state["watch"], teacher=secret),
                    *teacher_values(code, secret, request, lang, rooms)]
        if mine.get("token"):
            code, token = rooms.join(code, None, mine.get("token"), session=_session(request),
                                     address=_address(request))
            state = {"role": "student", "code": code, "token": token, "revision": None,
                     "moves": None}
            return [state, {"code": code, "token": token}, gr.update(active=True), code, "",
                    _page(room=code, member=token), *unchanged]
        invite = query.get("invite")
        if rooms.revision(code, address=_address(request), invite=invite) is None:
            raise InputError("classroom.err.gone")
        # the invite stays in the session's state (never the address bar) for the Join press
        invited = {"role": "invited", "code": code, "invite": invite} if invite else gr.skip()
        return [invited, forget, gr.skip(), code, text("classroom.link_join", lang, code=code),
                _page(room=code, open="classroom"), *unchanged]
    except InputError as error:
        return [None, forget, gr.skip(), gr.skip(), "⚠ " + error.message(lang),
                _page(open="classroom"), *unchanged]


def _kept(kept: Any, room: Any) -> Optional[str]:
    """The teacher key this tab kept for `room` (sessionStorage's JSON), if any."""
    try:
        value = json.loads(kept) if isinstance(kept, str) and 0 < len(kept) <= 200 else None
    except ValueError:
        return None
    if isinstance(value, dict) and value.get("code") == room and isinstance(value.get("secret"), str):
        return value["secret"]
    return None


@visitor_errors
def explore(state: Any, lang: Any, rooms: Rooms = ROOMS) -> list:
    """Stop following: [follow, status, explore, back]."""
    state = _role(state, "student")
    if state is None:
        return [gr.skip()] * 4
    rooms.set_following(state["code"], state["token"], False)   # refused while the class is held
    view = rooms.student_view(state["code"], state["token"])
    explore_alone(True)          # the class's moves leave this page's runs running
    return [False, bar_text(view, {**state, "following": False}, normalize_language(lang)),
            gr.update(visible=False), gr.update(visible=True)]


@visitor_errors
def back_to_class(state: Any, lang: Any, rooms: Rooms = ROOMS) -> list:
    """Follow again, and apply the class's current link now: [follow, state, status, explore,
    back, pending]."""
    state = _role(state, "student")
    if state is None:
        return [gr.skip()] * 6
    rooms.set_following(state["code"], state["token"], True)
    view = rooms.student_view(state["code"], state["token"])
    explore_alone(False)
    state = {**state, "moves": view["moves"]}
    return [True, state, bar_text(view, {**state, "following": True}, normalize_language(lang)),
            gr.update(visible=True), gr.update(visible=False),
            _page(link=view["link"]) if view["link"] else gr.skip()]


@visitor_errors
def answer(state: Any, link: Any, guess: Any, lang: Any, rooms: Rooms = ROOMS) -> str:
    """A student's guess at the lesson step `link` goes to the class; the bar's line says so."""
    lang = normalize_language(lang)
    state = _role(state, "student")
    if state is None:
        return gr.skip()
    if not isinstance(link, str) or "?" not in link or len(link) > MAX_QUERY_CHARS + 200:
        raise InputError("classroom.err.not_now")
    query = link[link.index("?"):].split("&room=")[0]
    n = rooms.answer(state["code"], state["token"], query, guess)
    return text("classroom.answer_in", lang, value=f"{float(guess):g}", answered=n)


# ----------------------------------------------------------------------------- wiring


def wire(demo: gr.Blocks, tab: Tab, bar: Bar, panel: Any, header: Any, views: Views, runtime: Any,
         lesson_events: dict) -> None:
    """After lessons.wire: the class's events, chained on the lesson's moves and guesses."""
    lang, model = header.lang, header.model
    api = {"api_visibility": "undocumented"}
    page_js = {"fn": None, "inputs": [bar.page], "outputs": None, "js": PAGE_JS}
    shown, more = bar.outputs()[:SHOWN], bar.outputs()[SHOWN:]
    bar.timer.tick(None, [bar.revision, bar.pending], [bar.revision, bar.pending], js=REVISION_JS)
    bar.revision.change(poll, [bar.state, bar.follow, lang],
                        [bar.state, *shown, bar.timer, bar.pending, tab.members, *more],
                        queue=False, api_name="class_poll", **api)
    lang.change(relabel, [bar.state, bar.follow, lang], [*shown, tab.members, *more], queue=False,
                api_visibility="private")
    tab.start.click(start, [lang],
                    [bar.state, bar.stored, bar.timer, tab.message, bar.page, *tab.teacher_outputs()],
                    api_name="class_start", **api).then(**page_js)
    tab.join.click(join, [tab.code, tab.nickname, bar.state, lang],
                   [bar.state, bar.stored, bar.timer, tab.message, bar.page],
                   queue=False, api_name="class_join", **api).then(**page_js)
    demo.load(None, None, [bar.kept], js=KEPT_JS).then(
        on_load, [bar.stored, lang, bar.kept],
        [bar.state, bar.stored, bar.timer, tab.code, tab.message, bar.page, *tab.teacher_outputs()],
        js=with_page_language(3, 1), api_visibility="private").then(**page_js)
    tab.end.click(end_class, [bar.state, lang],
                  [bar.state, bar.timer, tab.message, bar.page, bar.column, *tab.teacher_outputs()],
                  api_name="class_end", **api).then(**page_js)
    bar.explore.click(explore, [bar.state, lang],
                      [bar.follow, bar.status, bar.explore, bar.back], queue=False, api_visibility="private")
    bar.back.click(back_to_class, [bar.state, lang],
                   [bar.follow, bar.state, bar.status, bar.explore, bar.back, bar.pending], queue=False,
                   api_visibility="private")
    tab.remove.click(remove_member, [bar.state, tab.members, lang], [tab.message, tab.members],
                     api_name="class_remove", **api)
    tab.lock.input(lock_class, [bar.state, tab.lock, lang], [tab.message], api_name="class_lock", **api)
    tab.csv.click(download, [bar.state, lang], [tab.csv_file],
                  api_name="class_csv", **api)

    def move(state, link, lesson_state, lang_value):
        return publish(state, link, lesson_state, views, runtime)

    # the teacher's moves: each lesson step it goes to (published at the press: early_mover,
    # wired with the lessons), each section link it copies (a press of "Copy link"; a run alone
    # moves no one); /class_move is the same move for a client of the API (a hidden button: no
    # page presses it)
    bar.move_api.click(visitor_errors(move), [bar.state, panel.link, panel.state, lang],
                       [tab.message], api_name="class_move", **api)
    buttons = {getattr(b, "elem_id", None): b for b in demo.blocks.values() if isinstance(b, gr.Button)}
    for view in views.items:
        copy = buttons.get("copy-" + view.box_id[len("link-"):])
        if copy is not None and view.make_link is not None:
            copy.click(visitor_errors(_copied(view, views, runtime)),
                       [bar.state, lang, *view.link_inputs], [tab.message], api_visibility="private")
    check = lesson_events.get("check")
    if check is not None:
        check.then(answer, [bar.state, panel.link, panel.guess, lang], [bar.status],
                   queue=False, api_name="class_answer", **api)

    @visitor_errors
    def apply_move(raw, lang_value, current):
        try:
            link = json.loads(raw)["link"] if raw else None
        except (ValueError, TypeError, KeyError):
            link = None
        if not isinstance(link, str) or not link.startswith("?") or len(link) > MAX_QUERY_CHARS:
            return [gr.skip()] * (len(go_outputs))
        # a run this page started after the teacher's press stopped its class's runs, and before
        # the page learned of the move, is one of the step it leaves: it ends now too (the
        # step's own run is pressed after this answer, by the command it carries)
        stop_every_run(moved=True)
        values = restore(link, lang_value, current, views, runtime.names(), runtime.default_name,
                         lambda name: runtime.get(name).config)
        return values[3:]

    go_outputs = panel_outputs(panel) + [model, *views.components(), panel.command]
    # no forward pass here (the step's run is the page's own press, queued as any): the move
    # reaches the page without waiting behind the cheap group's queue
    wire_peer(tab, bar, panel, header, views, runtime, lesson_events)
    bar.pending.change(apply_move, [bar.pending, lang, model], go_outputs, queue=False,
                       api_visibility="private").then(None, [panel.command], None, js=APPLY_JS)


# The page's part of a class event and the timer's tick: static/classroom.js, in the page's head.
PAGE_JS = "(raw) => window.explorerClassPage && window.explorerClassPage(raw)"
KEPT_JS = "() => window.explorerClassKept ? window.explorerClassKept() : ''"
# [revision, pending]: the room's revision, and a following page's move when the answer
# brought one (the pending move as it was otherwise)
REVISION_JS = ("async (current, pending) => { if (!window.explorerClassRevision) return [current, pending];"
               " const read = await window.explorerClassRevision(current);"
               " return [read.revision, read.move || pending]; }")
SCRIPT = Path(__file__).resolve().parents[3] / "static" / "classroom.js"


def head_html() -> str:
    return "<script>\n" + SCRIPT.read_text(encoding="utf-8") + "\n</script>\n"
