"""A teacher's own lesson, built on the page (explorer/lessons/custom.py has the data and checks).

"Add this view as a step" takes the section open on the page (the page names its link box;
the server reads that view's controls and the model, as its link would) with the text written
beside it; a step may ask for one of the view's quantities (explorer/lessons/quantities.py).
Steps can be changed, moved and removed; "Play" opens the lesson in the lesson panel (the same
panel, predict-then-run, and in a live class the same moves as ours: the move's link carries the
lesson). The lesson is saved as a JSON file and as a link, and loaded from either. Every
lesson, built here or loaded, passes custom.check (views and settings through read_link) before
it is kept; a refusal is a sentence in the builder, never a traceback.
"""
from __future__ import annotations

import functools
import json
import os
import re
import tempfile
import threading
from dataclasses import dataclass
from typing import Any, Callable, Optional

import gradio as gr

from explorer.inputs import InputError
from explorer.lessons import custom, quantities
from explorer.locales import normalize_language, text
from explorer.ui import visitor_errors
from explorer.ui.page import lessons
from explorer.ui.page.lesson_links import lesson_link, read_lesson_link, refusal_text, step_reader
from explorer.ui.page.lesson_script import APPLY_JS, with_page_language
from explorer.ui.page.views import Views, plain
from explorer.web.stopping import argument_reader

FILE_KEEP_S = 120.0


@dataclass(frozen=True)
class Builder:
    state: gr.State            # the lesson being built, checked (custom.check's form), or None
    title: gr.Textbox
    steps: gr.Markdown
    pick: gr.Dropdown
    text: gr.Textbox
    question: gr.Dropdown
    add: gr.Button
    apply: gr.Button
    up: gr.Button
    down: gr.Button
    remove: gr.Button
    play: gr.Button
    save_file: gr.Button
    save_link: gr.Button
    load: gr.UploadButton
    link: gr.Textbox
    file: gr.File
    message: gr.Markdown
    which: gr.Textbox          # the page's open section: its link box's elem_id (ADD_JS)


def build(t: Any) -> Builder:
    with gr.Accordion(t("lesson.builder.heading"), open=False, elem_id="lesson-builder"):
        gr.Markdown(t("lesson.builder.intro"))
        title = gr.Textbox(label=t("lesson.builder.title"), max_length=custom.MAX_TITLE,
                           max_lines=1, elem_id="builder-title")
        steps = gr.Markdown(elem_id="builder-steps")
        with gr.Row():
            pick = gr.Dropdown([], value=None, label=t("lesson.builder.pick"), elem_id="builder-pick",
                               filterable=False, scale=1, min_width=120)
            question = gr.Dropdown([(t("lesson.builder.no_question"), "")], value="", scale=3,
                                   label=t("lesson.builder.question"), elem_id="builder-question",
                                   filterable=False)
        box = gr.Textbox(label=t("lesson.builder.text"), lines=3,
                         max_length=custom.MAX_TEXT, elem_id="builder-text")
        with gr.Row(elem_id="builder-edit"):
            add = gr.Button(t("lesson.builder.add"), variant="primary", size="sm", elem_id="builder-add")
            apply = gr.Button(t("lesson.builder.apply"), size="sm", elem_id="builder-apply")
            up = gr.Button(t("lesson.builder.up"), size="sm", elem_id="builder-up")
            down = gr.Button(t("lesson.builder.down"), size="sm", elem_id="builder-down")
            remove = gr.Button(t("lesson.builder.remove"), size="sm", elem_id="builder-remove")
        with gr.Row(elem_id="builder-save"):
            play = gr.Button(t("lesson.builder.play"), variant="primary", size="sm", elem_id="builder-play")
            save_file = gr.Button(t("lesson.builder.save_file"), size="sm", elem_id="builder-save-file")
            save_link = gr.Button(t("lesson.builder.save_link"), size="sm", elem_id="builder-save-link")
            load = gr.UploadButton(t("lesson.builder.load"), file_types=[".json"], file_count="single",
                                   size="sm", elem_id="builder-load")
        message = gr.Markdown(elem_id="builder-message")
        link = gr.Textbox(label=t("lesson.builder.link_label"), interactive=False, max_lines=1,
                          max_length=lessons.MAX_QUERY_CHARS + 200, elem_id="builder-link",
                          elem_classes="explorer-link")
        file = gr.File(visible=False, interactive=False, elem_id="builder-file")
        which = gr.Textbox(visible=False, max_length=200, elem_id="builder-which")
    return Builder(gr.State(None), title, steps, pick, box, question, add, apply, up, down, remove,
                   play, save_file, save_link, load, link, file, message, which)


# ----------------------------------------------------------------------------- what it shows


def _view_title(view_key: str, views: Views, lang: str) -> str:
    view = views.get(view_key)
    return text(view.title, lang) if view is not None and view.title else view_key


def editor_values(draft: Optional[dict], index: Optional[int], lang: str, views: Views,
                  message: str = "") -> list:
    """[state, steps, pick, text, question, message] for the lesson `draft` with step `index`
    chosen (its text and question in the editor, the question's choices its view's)."""
    steps = (draft or {}).get("steps", [])
    lines = []
    for i, step in enumerate(steps):
        asked = quantities.get(step["question"])
        question = text("lesson.builder.step_question", lang, quantity=text(asked.label, lang)) \
            if asked else ""
        short = step["text"] if len(step["text"]) <= 80 else step["text"][:79] + "…"
        lines.append(plain(text("lesson.builder.step_line", lang, n=i + 1, question=question,
                                view=_view_title(step["view"], views, lang), text=short)))
    listing = "\n\n".join(lines) if lines else text("lesson.builder.none", lang)
    choices = [(str(i + 1), i) for i in range(len(steps))]
    if index is None or not 0 <= index < len(steps):
        index = len(steps) - 1 if steps else None
    none = [(text("lesson.builder.no_question", lang), "")]
    if index is None:
        return [draft, listing, gr.update(choices=choices, value=None), gr.update(),
                gr.update(choices=none, value=""), message]
    step = steps[index]
    asks = none + [(text(q.label, lang), q.key) for q in quantities.of_view(step["view"])]
    return [draft, listing, gr.update(choices=choices, value=index), step["text"],
            gr.update(choices=asks, value=step["question"] or ""), message]


def _said(key: str, lang: str, **fields: Any) -> str:
    return "✓ " + plain(text(key, lang, **fields))


def _refused(error: InputError, lang: str) -> str:
    return "⚠ " + plain(refusal_text(error, lang))


# ----------------------------------------------------------------------------- handlers


class Handlers:
    """The builder's handlers, bound to the page's views and models (each is module-testable)."""

    def __init__(self, views: Views, runtime: Any):
        self.views, self.runtime = views, runtime

    def check(self, draft: dict) -> dict:
        read = step_reader(self.views, self.runtime.names(), self.runtime.default_name,
                           lambda name: self.runtime.get(name).config)
        return custom.check(draft, read)

    def _draft(self, draft: Any, title: Any) -> dict:
        if title is not None and (not isinstance(title, str) or len(title) > custom.MAX_TITLE):
            raise InputError("lesson.builder.err.title_type", limit=custom.MAX_TITLE)
        steps = list(draft["steps"]) if isinstance(draft, dict) else []
        return {"format": custom.FORMAT, "version": custom.VERSION,
                "title": title if isinstance(title, str) else "", "steps": steps}

    def add(self, draft, title, body, which, lang, model, *values):
        """Add the page's open section (its link box `which`) with its current settings."""
        lang = normalize_language(lang)
        view = next((v for v in self.views.items if isinstance(which, str) and v.box_id == which), None)
        if view is None:
            return editor_values(draft, None, lang, self.views, "⚠ " + text("lesson.builder.no_view", lang))
        components = self.views.components()
        by_id = {id(c): value for c, value in zip(components, values)}
        settings = {}
        for c in view.controls:     # a value a link cannot carry is left to its default
            value = by_id.get(id(c.component))
            if value is not None and c.write(value) is not None:
                settings[c.name] = value
        step = {"view": view.key, "model": model if isinstance(model, str) else None,
                "settings": settings, "text": body if isinstance(body, str) else "", "question": None}
        new = self._draft(draft, title)
        new["steps"].append(step)
        new = self.check(new)
        n = len(new["steps"])
        return editor_values(new, n - 1, lang, self.views,
                             _said("lesson.builder.added", lang, n=n, view=_view_title(view.key, self.views, lang)))

    def _index(self, draft: Any, index: Any) -> int:
        steps = draft.get("steps", []) if isinstance(draft, dict) else []
        if isinstance(index, bool) or not isinstance(index, (int, float)) or \
                not 0 <= int(index) < len(steps):
            raise InputError("lesson.builder.err.pick")
        return int(index)

    def apply(self, draft, title, index, body, question, lang):
        lang = normalize_language(lang)
        i = self._index(draft, index)
        new = self._draft(draft, title)
        new["steps"][i] = {**new["steps"][i], "text": body if isinstance(body, str) else "",
                           "question": question or None}
        new = self.check(new)
        return editor_values(new, i, lang, self.views, _said("lesson.builder.updated", lang, n=i + 1))

    def move(self, delta, draft, title, index, lang):
        lang = normalize_language(lang)
        i = self._index(draft, index)
        j = min(max(i + delta, 0), len(draft["steps"]) - 1)
        new = self._draft(draft, title)
        new["steps"][i], new["steps"][j] = new["steps"][j], new["steps"][i]
        return editor_values(self.check(new), j, lang, self.views, _said("lesson.builder.moved", lang, n=j + 1))

    def remove(self, draft, title, index, lang):
        lang = normalize_language(lang)
        i = self._index(draft, index)
        new = self._draft(draft, title)
        del new["steps"][i]
        message = _said("lesson.builder.removed", lang, n=i + 1)
        if not new["steps"]:
            return editor_values(None, None, lang, self.views, message)
        return editor_values(self.check(new), min(i, len(new["steps"]) - 1), lang, self.views, message)

    def _whole(self, draft: Any, title: Any) -> dict:
        if not isinstance(draft, dict) or not draft.get("steps"):
            raise InputError("lesson.builder.empty")
        return self.check(self._draft(draft, title))

    def save_link(self, draft, title, lang):
        """[link, message]: the query string that opens the lesson (the page adds its address)."""
        lang = normalize_language(lang)
        link = lesson_link(self._whole(draft, title))
        return link, _said("lesson.builder.linked", lang, n=len(link))

    def save_file(self, draft, title, lang):
        """[file, message]: the lesson's JSON file, private to this process, removed soon."""
        lang = normalize_language(lang)
        lesson = self._whole(draft, title)
        slug = re.sub(r"[^A-Za-z0-9]+", "-", lesson["title"]).strip("-")[:40].lower() or "lesson"
        folder = tempfile.mkdtemp(prefix="explorer-lesson-")
        path = os.path.join(folder, f"{slug}.json")
        with open(path, "w", encoding="utf-8") as out:
            out.write(custom.to_json(lesson))
        timer = threading.Timer(FILE_KEEP_S, _remove, (path, folder))
        timer.daemon = True
        timer.start()
        return gr.update(value=path, visible=True), _said("lesson.builder.saved", lang, n=len(lesson["steps"]))

    def load(self, upload, lang):
        """[*editor values, title]: a lesson file, checked as hostile input."""
        lang = normalize_language(lang)
        path = getattr(upload, "name", upload)
        if not isinstance(path, str) or not os.path.isfile(path):
            raise InputError("lesson.builder.err.json")
        size = os.path.getsize(path)
        if size > custom.MAX_FILE_BYTES:   # refused before it is read
            raise InputError("lesson.builder.err.file_size", size=custom._size(size),
                             limit=custom._size(custom.MAX_FILE_BYTES))
        with open(path, "rb") as handle:
            raw = handle.read(custom.MAX_FILE_BYTES + 1)
        lesson = self.check(custom.parse_file(raw))
        return [*editor_values(lesson, 0, lang, self.views,
                               _said("lesson.builder.loaded", lang, n=len(lesson["steps"]))),
                lesson["title"]]

    def from_link(self, lang, request: gr.Request = None):
        """[*editor values, title] on page load: the lesson a ?lesson=custom link carries."""
        lang = normalize_language(lang)
        query = dict(request.query_params) if request is not None else {}
        if query.get("lesson") != custom.KEY:
            return [gr.skip()] * 7
        _, lesson = read_lesson_link(query, self.views, self.runtime.names(), self.runtime.default_name,
                                     lambda name: self.runtime.get(name).config)
        if lesson is None:
            return [gr.skip()] * 7
        return [*editor_values(lesson, 0, lang, self.views), lesson["title"]]

    def play(self, draft, title, lang, current):
        return lessons.go(custom.KEY, 0, lang, current, self.views, self._whole(draft, title))


def _remove(path: str, folder: str) -> None:
    for remove, target in ((os.unlink, path), (os.rmdir, folder)):
        try:
            remove(target)
        except OSError:
            pass


def _refusing(handler, n_outputs: int, message_at: int):
    """The handler with its InputError shown in the builder's message, in the language of its
    `lang` argument (the other outputs left as they are)."""
    lang_of = argument_reader(handler, "lang")

    @functools.wraps(handler)
    def wrapped(*args, **kwargs):
        try:
            return handler(*args, **kwargs)
        except InputError as error:
            out = [gr.skip()] * n_outputs
            out[message_at] = _refused(error, normalize_language(lang_of(args, kwargs)))
            return out
    return visitor_errors(wrapped)


# the page's open section: the first 'copy link' button shown (named for the section's link box)
WHICH_JS = """() => {
  const copies = [...document.querySelectorAll('.explorer-link-row button[id^="copy-"]')]
    .filter((b) => b.offsetParent !== null);
  return copies.length ? "link-" + copies[0].id.slice("copy-".length) : "";
}"""


def head_html() -> str:
    """The page's refusal of a lesson file too large to send (the server would answer its body
    413, past explorer/web/body_limit.py, with no sentence): the file's size is checked in the
    browser before Gradio uploads it, and the builder's message says why, in the page's language.
    A file within that bound but past MAX_FILE_BYTES is refused by `Handlers.load`."""
    said = {lang: "⚠ " + text("lesson.builder.err.file_size", lang, size="{size}",
                               limit=custom._size(custom.MAX_FILE_BYTES)) for lang in ("en", "zh")}
    return SIZE_SCRIPT.replace("__SAID__", json.dumps(said, ensure_ascii=False)).replace(
        "__MAX__", str(custom.MAX_FILE_BYTES))


SIZE_SCRIPT = """<script>
(function () {
  const said = __SAID__;
  document.addEventListener("change", (event) => {
    const input = event.target;
    if (!input || input.type !== "file" || !input.closest || !input.closest("#lesson-builder")) return;
    const file = input.files && input.files[0];
    if (!file || file.size <= __MAX__) return;
    event.stopImmediatePropagation();
    event.stopPropagation();
    input.value = "";
    const lang = (window.explorerLanguage && window.explorerLanguage()) === "zh" ? "zh" : "en";
    const size = file.size >= 1048576 ? (file.size / 1048576).toFixed(1) + " MB"
                                      : Math.ceil(file.size / 1024) + " KB";
    const box = document.getElementById("builder-message");
    if (box) (box.querySelector(".prose") || box).textContent = said[lang].replace("{size}", size);
  }, true);
})();
</script>
"""

LINK_JS = "(query) => query && query.startsWith('?') ? location.origin + location.pathname + query : query"


def wire(demo: gr.Blocks, b: Builder, panel: Any, header: Any, views: Views, runtime: Any,
         lesson_events: dict, first: Optional[Callable] = None) -> None:
    """Wire the builder; its Play joins the lesson events a class follows (lesson_events["steps"];
    `first` as in lessons.wire)."""
    h = Handlers(views, runtime)
    lang, model = header.lang, header.model
    private = {"api_visibility": "private"}
    editor = [b.state, b.steps, b.pick, b.text, b.question, b.message]
    n = len(editor)
    b.add.click(None, None, [b.which], js=WHICH_JS, queue=False).then(
        _refusing(h.add, n, 5), [b.state, b.title, b.text, b.which, lang, model, *views.components()],
        editor, **private)
    b.apply.click(_refusing(h.apply, n, 5), [b.state, b.title, b.pick, b.text, b.question, lang],
                  editor, **private)
    for button, delta in ((b.up, -1), (b.down, +1)):
        def moved(draft, title, index, lang, delta=delta):
            return h.move(delta, draft, title, index, lang)
        button.click(_refusing(moved, n, 5), [b.state, b.title, b.pick, lang], editor, **private)
    b.remove.click(_refusing(h.remove, n, 5), [b.state, b.title, b.pick, lang], editor, **private)

    def picked(draft, index, lang_value):
        return editor_values(draft, index if isinstance(index, int) else None,
                             normalize_language(lang_value), views)
    b.pick.input(picked, [b.state, b.pick, lang], editor, **private)
    b.save_link.click(_refusing(h.save_link, 2, 1), [b.state, b.title, lang], [b.link, b.message],
                      **private).then(None, [b.link], [b.link], js=LINK_JS, queue=False)
    b.save_file.click(_refusing(h.save_file, 2, 1), [b.state, b.title, lang], [b.file, b.message],
                      **private)
    b.load.upload(_refusing(h.load, n + 1, 5), [b.load, lang], [*editor, b.title], **private)
    demo.load(visitor_errors(h.from_link), [lang], [*editor, b.title], js=with_page_language(1, 0),
              **private)
    go_outputs = lessons.panel_outputs(panel) + [model, *views.components(), panel.command]

    def play(draft, title, lang_value, current):
        try:
            return h.play(draft, title, lang_value, current)
        except InputError:
            return [gr.skip()] * len(go_outputs)
    inputs = [b.state, b.title, lang, model]
    if first is not None:   # a class's listener of the press, before the step's own (lessons.wire)
        first(b.play.click, play, inputs)
    event = b.play.click(visitor_errors(play), inputs, go_outputs, **private)
    event.then(None, [panel.command], None, js=APPLY_JS)
    lesson_events.setdefault("steps", []).append(event)
