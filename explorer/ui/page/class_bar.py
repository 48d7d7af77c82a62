"""The class bar (explorer/ui/page/classroom.py wires it): floating on every tab, the line that
says where the class stands, a student's Explore / Back, the teacher's controls of a question's
vote (close the vote for the discussion, vote again, reveal, ask a transfer question) and of the
pacing (pause, release), a student's answer box, and the revealed histograms.

What it shows comes from the store's views (explorer/classroom/rooms.py, questions.py): a
student's bar counts, their own answers, and histograms once revealed, never another's answer.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import gradio as gr

from explorer.classroom import answers
from explorer.inputs import InputError
from explorer.locales import text
from explorer.ui import HIDDEN
from explorer.ui.page.views import MAX_QUERY_CHARS

POLL_S = 1.0
# An answer box with nothing in it. Gradio 6's Number draws None as 0 (its frontend sets a
# missing value to 0 when the box is drawn, and a box in a hidden row is drawn when the row is
# shown), so an unanswered question would show "0", and Send would answer 0; an empty string is
# drawn as an empty box, and sent as it is: the store refuses it as not a number.
NO_ANSWER = ""


@dataclass
class Bar:
    column: gr.Column
    status: gr.Markdown
    explore: gr.Button
    back: gr.Button
    reveal: gr.Button
    plot: gr.Plot
    state: gr.State          # {"role", "code", "token" | "secret" and "watch", "revision", "moves"}
    stored: gr.BrowserState  # a student's {"code", "token"}: a reload's way back (never a secret)
    timer: gr.Timer
    pending: gr.Textbox      # a move to apply: JSON {"link", "moves"} (or "n", a nonce)
    page: gr.Textbox         # what the page's address and cookie do: JSON (PAGE_JS)
    revision: gr.Textbox     # the room's revision as the page last read it (REVISION_JS)
    follow: gr.State         # whether a student's page follows (only explore / back write it:
                             # a poll in flight never undoes a press)
    kept: gr.Textbox         # the tab's teacher key, read from sessionStorage at load (KEPT_JS)
    close: gr.Button         # the teacher: close round 1 for the discussion
    revote: gr.Button        # the teacher: open round 2
    transfer: gr.Button      # the teacher: the same question at the section's current settings
    pause: gr.Button         # the teacher: hold the class on its step
    release: gr.Button
    guess: gr.Number         # a student's answer to the class's question, from the bar
    send: gr.Button
    pace: gr.Textbox         # "paused" while a following student's page is held (PACE_JS)
    answer_row: gr.Row       # guess and send: shown to a student while a vote is open
    pace_row: gr.Row         # pause and release: the teacher's
    move_api: gr.Button      # never shown: /class_move, a teacher's move for a client of the API

    def outputs(self) -> list:
        """What `bar_values` fills, in its order: the first SHOWN as every class page had them
        (the poll's first outputs, which the benches read by position), then the vote's and
        the pacing's."""
        return [self.column, self.status, self.explore, self.back, self.reveal, self.plot,
                self.close, self.revote, self.transfer, self.pause, self.release,
                self.answer_row, self.pace, self.pace_row, self.guess]


SHOWN = 6       # column, status, explore, back, reveal, plot


def build_bar(t: Any) -> Bar:
    """The class bar (floating, on every tab) and the page's hidden class state; built by app.py
    before the tabs."""
    small = {"size": "sm", "visible": False}
    with gr.Column(visible=False, elem_id="class-bar") as column:
        status = gr.Markdown(elem_id="class-status")
        with gr.Row(elem_id="class-answer", visible=False) as answer_row:
            guess = gr.Number(NO_ANSWER, label=t("classroom.guess"), elem_id="class-guess",
                              scale=2, min_width=100)
            send = gr.Button(t("classroom.send"), variant="primary", elem_id="class-send",
                             size="sm", scale=1, min_width=60)
        with gr.Row(elem_id="class-nav"):
            explore = gr.Button(t("classroom.explore"), size="sm", elem_id="class-explore")
            back = gr.Button(t("classroom.back"), variant="primary", elem_id="class-back", **small)
            close = gr.Button(t("classroom.close_vote"), elem_id="class-close", **small)
            revote = gr.Button(t("classroom.revote"), elem_id="class-revote", **small)
            reveal = gr.Button(t("classroom.reveal"), variant="primary", elem_id="class-reveal", **small)
            transfer = gr.Button(t("classroom.transfer"), elem_id="class-transfer", **small)
        with gr.Row(elem_id="class-pace-row", visible=False) as pace_row:
            pause = gr.Button(t("classroom.pause"), elem_id="class-pause", **small)
            release = gr.Button(t("classroom.release"), variant="primary", elem_id="class-release",
                                **small)
        plot = gr.Plot(visible=False, elem_id="class-hist", show_label=False)
    hidden = {"elem_classes": HIDDEN, "container": False, "show_label": False}
    pending = gr.Textbox(max_length=MAX_QUERY_CHARS + 200, elem_id="class-pending", **hidden)
    page = gr.Textbox(max_length=400, elem_id="class-page", **hidden)
    revision = gr.Textbox(max_length=32, elem_id="class-revision", **hidden)
    kept = gr.Textbox(max_length=200, elem_id="class-kept", **hidden)
    pace = gr.Textbox(max_length=16, elem_id="class-pace", **hidden)
    return Bar(column, status, explore, back, reveal, plot, gr.State(None),
               gr.BrowserState(None, storage_key="explorer-class"), gr.Timer(POLL_S, active=False),
               pending, page, revision, gr.State(True), kept, close, revote, transfer, pause,
               release, guess, send, pace, answer_row, pace_row,
               gr.Button(visible=False, elem_id="class-move-api"))


# ----------------------------------------------------------------------------- the bar's text


def _votes(view: dict, members: Any, lang: str) -> str:
    """How many answered: "k of n answered" in one round, each round's count in two."""
    voted = view.get("voted") or [0]
    if len(voted) > 1:
        return text("classroom.bar.voted_both", lang, first=voted[0], second=voted[1], members=members)
    return text("classroom.bar.answered", lang, answered=voted[0], members=members)


def bar_text(view: dict, state: dict, lang: str) -> str:
    code, members = view["code"], view["members"]
    teacher = state["role"] == "teacher"
    if teacher:
        line = text("classroom.bar.teacher", lang, code=code, members=members)
    else:
        line = text("classroom.bar.student" if state.get("following") else "classroom.bar.exploring",
                    lang, code=code)
    parts = [line]
    if teacher and "following" in view:
        parts.append(text("classroom.bar.presence", lang, following=view["following"],
                          exploring=view["exploring"], gone=view["gone"]))
    if view.get("paused"):
        parts.append(text("classroom.bar.paused_teacher" if teacher else "classroom.bar.paused", lang))
    if not view["question"]:
        return " · ".join(parts)
    phase = view.get("phase") or "vote"
    if view.get("transfer_of"):
        parts.append(text("classroom.bar.transfer", lang, parent=view["transfer_of"]))
    # answers wake the teacher's page only: a student's page counts them when the phase moves
    if teacher or phase != "vote":
        parts.append(_votes(view, members, lang))
    if view.get("mine_first") is not None:
        parts.append(text("classroom.bar.mine_first", lang, mine=f"{view['mine_first']:g}"))
    if view.get("mine") is not None:
        parts.append(text("classroom.bar.mine", lang, mine=f"{view['mine']:g}"))
    if phase == "discuss":
        parts.append(text("classroom.bar.discuss_teacher" if teacher else "classroom.bar.discuss", lang))
    elif phase == "revote" and not teacher:
        parts.append(text("classroom.bar.revote", lang))
    elif view["revealed"]:
        parts.append(text("classroom.bar.revealed", lang))
        if view.get("moved") is not None:
            moved, both = view["moved"]
            parts.append(text("classroom.bar.moved", lang, moved=moved, both=both))
    elif not teacher and view.get("mine") is None:
        ask = "classroom.bar.ask" if "lesson=" in (view.get("link") or "") else "classroom.bar.ask_bar"
        parts.append(text(ask, lang))
    return " · ".join(parts)


def bar_values(state: dict, view: dict, lang: str) -> list:
    """Bar.outputs()'s values for a state and its room's view; a student's explore / back
    buttons are theirs alone (see Bar.follow), only held while the class is paused."""
    teacher = state["role"] == "teacher"
    phase = view.get("phase") if view["question"] else None
    shown = view["revealed"] and view.get("histograms")
    plot = gr.update(visible=True, value=answers.figure(view["histograms"], lang,
                                                         parent=view.get("transfer_of"))) \
        if shown else gr.update(visible=False)
    paused = bool(view.get("paused"))
    open_vote = phase in ("vote", "revote")
    student_controls = [gr.update(interactive=not paused), gr.skip()]
    return [gr.update(visible=True), bar_text(view, state, lang),
            *([gr.update(visible=False)] * 2 if teacher else student_controls),
            gr.update(visible=teacher and phase in ("vote", "discuss", "revote")), plot,
            gr.update(visible=teacher and phase == "vote"),
            gr.update(visible=teacher and phase == "discuss"),
            gr.update(visible=teacher and phase == "revealed"),
            gr.update(visible=teacher and not paused), gr.update(visible=teacher and paused),
            gr.update(visible=not teacher and open_vote),
            "paused" if paused and not teacher else "", gr.update(visible=teacher),
            # a student's own answer stays while the vote is open, and is cleared once it closes:
            # the next question (or the revote) starts from an empty box
            gr.skip() if not teacher and open_vote else NO_ANSWER]


def gone_values(lang: str, error: InputError) -> list:
    """Bar.outputs()'s values once the page's room is gone: the line says why, nothing else."""
    hidden = gr.update(visible=False)
    return [gr.update(visible=True), error.message(lang), *([hidden] * 10), "", hidden, NO_ANSWER]
