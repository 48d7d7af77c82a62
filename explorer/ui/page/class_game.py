"""The class game on the page: "what will the model say next" (explorer/classroom/game.py holds
the rounds, explorer/nexttoken/game_figures.py draws the reveal).

In the Class tab, under the class's controls. The teacher types a prompt, picks greedy or
sampled (a temperature and a seed), and presses Start round: the prompt's forward runs once on
the header's model (the model group: one forward at a time on the machine) and the round opens;
students' pages (following the class) open the Class tab and show the prompt and a guess box,
never the distribution. A student's guess is matched to the tokenizer's tokens and echoed to
them alone, with a note when the word is several tokens. Reveal runs the logit lens (the model
group again) and publishes the tally: everyone's page draws the class's named guesses over the
model's top tokens, "other guesses", the class's top beside the model's (and the drawn token of
a sampled round), and the layer from which the model would have agreed with the class. Close
ends the round; the teacher's CSV has every member's guess.

The pages learn of a round through the room's revision (the class bar's long poll: a change of
`bar.revision` calls `refresh`, queue=False, a few dictionary reads); who is the teacher or a
member comes from the class bar's server-side state, never from client values.
"""
from __future__ import annotations

import functools
import os
import tempfile
import threading
from dataclasses import dataclass
from typing import Any

import gradio as gr

from explorer.classroom import game as store
from explorer.classroom.game import GAMES, Games
from explorer.inputs import InputError
from explorer.locales import normalize_language, text
from explorer.nexttoken import game_figures
from explorer.nexttoken.guesses import MAX_GUESS_CHARS
from explorer.ui import HIDDEN, load_or_error, visitor_errors
from explorer.ui.page.class_teacher import CSV_KEEP_S, _answers_folder, _remove, sweep_answer_files
from explorer.ui.page.views import plain
from explorer.web.groups import MODEL_CONCURRENCY_ID

OPEN_JS = ("(raw) => { if (raw && window.explorerOpen) window.explorerOpen('classroom').then(() => {"
           " const g = document.getElementById('game'); if (g) g.scrollIntoView({block: 'start'}); }); }")


@dataclass
class Panel:
    column: gr.Column
    teacher: gr.Column
    prompt: gr.Textbox
    mode: gr.Radio
    temperature: gr.Slider
    seed: gr.Number
    start: gr.Button
    reveal: gr.Button
    close: gr.Button
    csv: gr.Button
    csv_file: gr.File
    status: gr.Markdown
    guess_row: gr.Row
    guess: gr.Textbox
    send: gr.Button
    mine: gr.Markdown
    tally: gr.Plot
    lens: gr.Plot
    said: gr.Markdown
    shown: gr.State          # {"key", "round", "lang"}: what this page shows (server-side)
    opener: gr.Textbox       # "open:N" when a following student's page should open the round

    def outputs(self) -> list:
        return [self.column, self.teacher, self.status, self.guess_row, self.mine, self.tally,
                self.lens, self.said, self.shown, self.opener]


def build(ctx: Any) -> Panel:
    """The game's panel (hidden until the page is in a class), in the Class tab."""
    t = ctx.t
    with gr.Column(visible=False, elem_id="game") as column:
        gr.Markdown(t("game.heading"))
        with gr.Column(visible=False, elem_id="game-teacher") as teacher:
            prompt = gr.Textbox("The capital of France is", label=t("game.prompt"), info=t("game.prompt_info"),
                                max_lines=3, max_length=store.MAX_PROMPT_CHARS, elem_id="game-prompt")
            with gr.Row():
                mode = gr.Radio([(t("game.greedy"), "greedy"), (t("game.sampled"), "sampled")],
                                value="greedy", label=t("game.mode"), elem_id="game-mode")
                temperature = gr.Slider(store.MIN_TEMPERATURE, store.MAX_TEMPERATURE, value=1.0, step=0.1,
                                        label=t("game.temperature"), elem_id="game-temperature")
                seed = gr.Number(0, precision=0, minimum=0, maximum=store.MAX_SEED, label=t("game.seed"),
                                 elem_id="game-seed")
            with gr.Row():
                start = gr.Button(t("game.start"), variant="primary", elem_id="game-start")
                reveal = gr.Button(t("game.reveal"), elem_id="game-reveal")
                close = gr.Button(t("game.close"), elem_id="game-close")
                csv = gr.Button(t("game.csv"), size="sm", elem_id="game-csv")
            csv_file = gr.File(visible=False, interactive=False, elem_id="game-csv-file")
        status = gr.Markdown(elem_id="game-status")
        with gr.Row(visible=False, elem_id="game-guess-row") as guess_row:
            guess = gr.Textbox(label=t("game.guess"), info=t("game.guess_info"), max_lines=1,
                               max_length=4 * MAX_GUESS_CHARS, elem_id="game-guess", scale=3)
            send = gr.Button(t("game.send"), variant="primary", elem_id="game-send", scale=1)
        mine = gr.Markdown(elem_id="game-mine")
        tally = gr.Plot(visible=False, show_label=False, elem_id="game-tally")
        lens = gr.Plot(visible=False, show_label=False, elem_id="game-lens")
        said = gr.Markdown(elem_id="game-said")
    opener = gr.Textbox(max_length=32, elem_id="game-opener", elem_classes=HIDDEN, container=False,
                        show_label=False)
    panel = Panel(column, teacher, prompt, mode, temperature, seed, start, reveal, close, csv, csv_file,
                  status, guess_row, guess, send, mine, tally, lens, said, gr.State(None), opener)
    ctx.class_game = panel
    return panel


# ----------------------------------------------------------------------------- what a page shows


def _role(state: Any) -> Any:
    if isinstance(state, dict) and state.get("role") in ("teacher", "student") and \
            isinstance(state.get("code"), str):
        return state["role"]
    return None


def _view(state: dict, games: Games) -> dict:
    if state["role"] == "teacher":
        return games.teacher_view(state["code"], state.get("secret"))
    return games.student_view(state["code"], state.get("token"))


def status_text(view: dict, teacher: bool, lang: str) -> str:
    if view["round"] is None:
        return text("game.status.teacher_none" if teacher else "game.status.none", lang)
    setup = view["setup"]
    mode = text("game.status.greedy", lang) if setup.mode == "greedy" else \
        text("game.status.sampled", lang, temperature=f"{setup.temperature:g}", seed=setup.seed)
    parts = [text("game.status.round", lang, n=view["round"], mode=mode, model=plain(setup.model))]
    if view["reveal"] is not None:
        parts.append(text("game.status.revealed", lang))
    elif teacher:
        parts.append(text("game.status.guessed", lang, n=view["guessed"]))
    else:
        parts.append(text("game.status.ask", lang))
    prompt = " ".join(plain(setup.prompt).split())
    return " · ".join(parts) + "\n\n" + text("game.status.prompt", lang, prompt=prompt)


def mine_text(guess: Any, lang: str, revealed: bool = False) -> str:
    """A member's own guess, as they typed it, and the token it counts as; once revealed, the
    probability the model gave that token."""
    if guess is None:
        return ""
    token = game_figures.said(guess.pieces[0]) if guess.pieces else "?"
    line = text("game.mine", lang, typed=plain(guess.typed), token=token)
    if guess.match.spelled.startswith(" "):
        line += " " + text("game.mine_space", lang)
    if len(guess.match.pieces) > 1:
        line += " " + text("game.mine_pieces", lang, n=len(guess.match.pieces),
                           pieces=" + ".join(game_figures.said(p) for p in guess.pieces), token=token)
    if revealed:
        line += "\n\n" + text("game.mine_p", lang, token=token, p=game_figures.percent(guess.p))
    return line


def panel_values(state: dict, view: dict, lang: str, shown: dict, opener: str) -> list:
    teacher = state["role"] == "teacher"
    revealed = view["round"] is not None and view["reveal"] is not None
    open_round = view["round"] is not None and not revealed
    return [gr.update(visible=True), gr.update(visible=teacher), status_text(view, teacher, lang),
            gr.update(visible=not teacher and open_round),
            mine_text(view.get("mine"), lang, revealed) if not teacher else "",
            gr.update(visible=True, value=game_figures.tally_figure(view, lang)) if revealed else gr.update(visible=False),
            gr.update(visible=True, value=game_figures.lens_figure(view, lang)) if revealed else gr.update(visible=False),
            game_figures.summary(view, lang) if revealed else "", shown, opener]


# the opener is written "" whenever nothing opens: the page's script that follows every refresh
# reads it, and a stale "open:N" would pull the page back to the Class tab at every move
UNCHANGED = [gr.skip()] * 9 + [""]


def _hidden(shown: Any) -> list:
    if shown is None:
        return UNCHANGED
    return [gr.update(visible=False)] + [gr.skip()] * 7 + [None, ""]


@visitor_errors
def refresh(state: Any, follow: Any, shown: Any, lang: Any, games: Games = GAMES) -> list:
    """The panel as the room's round stands, when it changed since this page drew it (all
    skipped otherwise): [column, teacher, status, guess row, mine, tally, lens, said, shown,
    opener]. A following student's page opens a new round's tab."""
    lang = normalize_language(lang)
    if _role(state) is None:
        return _hidden(shown)
    try:
        view = _view(state, games)
    except InputError:
        return _hidden(shown)
    key = [state["role"], state["code"], view["version"], view.get("guessed")]
    mine = view.get("mine")
    if mine is not None:
        key.append(mine.wall)
    before = shown if isinstance(shown, dict) else {}
    if before.get("key") == key and before.get("lang") == lang:
        return UNCHANGED
    opener = ""
    if state["role"] == "student" and follow is not False and view["round"] is not None \
            and view["reveal"] is None and before.get("round") != view["round"]:
        opener = f"open:{view['round']}"
    return panel_values(state, view, lang, {"key": key, "round": view["round"], "lang": lang}, opener)


def _teacher_state(state: Any) -> dict:
    if _role(state) != "teacher":
        raise InputError("game.err.teacher")
    return state


@visitor_errors
def start_round(runtime: Any, state: Any, model_name: Any, prompt: Any, mode: Any, temperature: Any,
                seed: Any, follow: Any, shown: Any, lang: Any, progress: Any = None,
                games: Games = GAMES) -> list:
    """The teacher opens a round: checks first (the teacher, the settings), then the prompt's
    forward on the chosen model, then the store; the panel's values."""
    state = _teacher_state(state)
    games.rooms.check_teacher(state["code"], state.get("secret"))
    setup = store.check_setup(prompt, model_name, mode, temperature, seed, runtime.names())
    loaded = load_or_error(runtime, setup.model, progress)
    prediction, drawn = store.run_start(loaded, setup)
    games.start(state["code"], state.get("secret"), setup, prediction, loaded.tokenizer, drawn)
    return refresh(state, follow, None, lang, games=games)


@visitor_errors
def reveal_round(runtime: Any, state: Any, follow: Any, lang: Any, games: Games = GAMES) -> list:
    """The teacher reveals: the lens of the class's top guess, the model's top and the drawn
    token (one pass of the recorded residuals through the head), then the store publishes."""
    state = _teacher_state(state)
    plan = games.reveal_plan(state["code"], state.get("secret"))
    loaded = load_or_error(runtime, plan.model)
    lens = store.run_lens(loaded.model, plan)
    labels = {t: loaded.tokenizer.decode([t]) for t in plan.labelled}
    games.reveal(state["code"], state.get("secret"), plan, lens, labels)
    return refresh(state, follow, None, lang, games=games)


@visitor_errors
def close_round(state: Any, follow: Any, lang: Any, games: Games = GAMES) -> list:
    state = _teacher_state(state)
    games.close(state["code"], state.get("secret"))
    return refresh(state, follow, None, lang, games=games)


@visitor_errors
def send_guess(state: Any, guess: Any, shown: Any, lang: Any, games: Games = GAMES) -> str:
    """A student's guess in the round this page shows: their own echo (the store matched it)."""
    lang = normalize_language(lang)
    if _role(state) != "student":
        raise InputError("game.err.student")
    number = shown.get("round") if isinstance(shown, dict) else None
    return mine_text(games.guess(state["code"], state.get("token"), number, guess), lang)


@visitor_errors
def download(state: Any, lang: Any, games: Games = GAMES) -> Any:
    """Every guess of the class's rounds as a private CSV file (as the class's answers file:
    explorer/ui/page/class_teacher.py `download`)."""
    state = _teacher_state(state)
    body = games.csv_text(state["code"], state.get("secret"))
    sweep_answer_files()
    descriptor, path = tempfile.mkstemp(prefix=f"class-{state['code']}-guesses-", suffix=".csv",
                                        dir=_answers_folder())
    with os.fdopen(descriptor, "w", encoding="utf-8", newline="") as out:
        out.write(body)
    timer = threading.Timer(CSV_KEEP_S, _remove, (path,))
    timer.daemon = True
    timer.start()
    return gr.update(value=path, visible=True)


def _bound(handler: Any, runtime: Any, name: str) -> Any:
    bound = functools.partial(handler, runtime)
    bound.__name__, bound.__doc__ = name, handler.__doc__
    return bound


def wire(demo: gr.Blocks, panel: Panel, bar: Any, header: Any, runtime: Any) -> None:
    """After the class's wiring (explorer/ui/page/classroom.py wire): the panel follows the
    room's revision and the language; the teacher's buttons and the student's guess."""
    lang = header.lang
    api = {"api_visibility": "undocumented"}
    model_group = {"concurrency_id": MODEL_CONCURRENCY_ID, "concurrency_limit": 1}   # ctx.model_event
    outputs = panel.outputs()
    opened = {"fn": None, "inputs": [panel.opener], "outputs": None, "js": OPEN_JS}
    refresh_inputs = [bar.state, bar.follow, panel.shown, lang]
    bar.revision.change(refresh, refresh_inputs, outputs, queue=False, api_name="game_view",
                        **api).then(**opened)
    # queued (the cheap group): the app's unqueued events each hold a thread (app.UNQUEUED_THREADS);
    # the poll and the button's guess skip the queue, as the class's own poll and answers do
    lang.change(refresh, refresh_inputs, outputs, api_visibility="private")

    def start_handler(state, model_name, prompt, mode, temperature, seed, follow, shown, lang_value,
                      progress=gr.Progress()):
        return start_round(runtime, state, model_name, prompt, mode, temperature, seed, follow,
                           shown, lang_value, progress)

    panel.start.click(start_handler, [bar.state, header.model, panel.prompt, panel.mode,
                                      panel.temperature, panel.seed, bar.follow, panel.shown, lang],
                      outputs, api_name="game_start", **api, **model_group)
    panel.reveal.click(_bound(reveal_round, runtime, "reveal_round"), [bar.state, bar.follow, lang],
                       outputs, api_name="game_reveal", **api, **model_group)
    panel.close.click(close_round, [bar.state, bar.follow, lang], outputs, api_name="game_close", **api)
    guess_inputs = [bar.state, panel.guess, panel.shown, lang]
    panel.send.click(send_guess, guess_inputs, [panel.mine], queue=False, api_name="game_guess", **api)
    panel.guess.submit(send_guess, guess_inputs, [panel.mine], api_visibility="private")
    panel.csv.click(download, [bar.state, lang], [panel.csv_file], api_name="game_csv", **api)
