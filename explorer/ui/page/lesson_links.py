"""A lesson step's link, for our lessons and a teacher's own (explorer/lessons/custom.py).

    ?lesson=kv-cache&step=2
    ?lesson=custom&step=2&custom=<the lesson, deflated, base64url>

`read_lesson_link` reads either through views.read_link; a teacher's lesson in a link is checked
as a lesson file is (custom.check), each of its steps' view, model and settings through
read_link like any link, so a link cannot bring what the page would refuse. A panel's state
names its lesson ("lesson") and, for a teacher's, carries the checked lesson ("custom"):
`lesson_of` gives the Lesson either way.
"""
from __future__ import annotations

import dataclasses
import urllib.parse
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Optional

from explorer.inputs import InputError
from explorer.lessons import LESSONS, Lesson, Step, custom, steps_of
from explorer.locales import text
from explorer.ui.page.views import MAX_QUERY_CHARS, Plan, Views, parse_query, plain, read_link

# a teacher's lesson link leaves room in MAX_QUERY_CHARS for a class's "&room=..." and &lang=
MAX_LESSON_LINK = MAX_QUERY_CHARS - 100


def lesson_named(key: Any, data: Optional[dict] = None) -> Optional[Lesson]:
    """Our lesson `key`, or the teacher's lesson `data` when the key is custom.KEY."""
    if key == custom.KEY:
        return custom.to_lesson(data) if isinstance(data, dict) else None
    return LESSONS.get(key) if isinstance(key, str) else None


def lesson_of(state: Any) -> Optional[Lesson]:
    """The lesson of a panel's state (None: no lesson, or not a state)."""
    if not isinstance(state, dict):
        return None
    lesson = lesson_named(state.get("lesson"), state.get("custom"))
    step = state.get("step")
    if lesson is None or not isinstance(step, int) or not 0 <= step < len(lesson.steps):
        return None
    return lesson


def step_link(lesson_key: str, index: int, data: Optional[dict] = None) -> str:
    link = f"?lesson={lesson_key}&step={index + 1}"
    if lesson_key == custom.KEY and isinstance(data, dict):
        link += "&custom=" + custom.encode(data)
    return link


def lesson_link(data: dict) -> str:
    """The link that opens a teacher's lesson at its first step; InputError when it is longer
    than a link may be (the file still holds it)."""
    link = step_link(custom.KEY, 0, data)
    if len(link) > MAX_LESSON_LINK:
        raise InputError("lesson.builder.err.link_long", n=len(link), limit=MAX_LESSON_LINK)
    return link


def _raw(value: Any) -> str:
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def step_reader(views: Views, model_names: Sequence[str], default_model: str,
                config_of: Callable[[str], Any]) -> custom.StepReader:
    """custom.check's check of one step: its view, model and settings read as a link is."""
    def read(view_key: str, model: Optional[str], settings: Mapping[str, Any]) -> tuple:
        view = views.get(view_key)
        if view is None:
            raise InputError("link.bad_view", value=view_key[:40])
        params = [("view", view_key)] + ([("model", model)] if model else []) + \
            [(str(name), _raw(value)) for name, value in settings.items()]
        plan = read_link(urllib.parse.urlencode(params), views, model_names, default_model, config_of)
        if plan.notes:
            key, fields = plan.notes[0]
            raise InputError(key, **fields)
        return plan.model, dict(plan.values)
    return read


def read_lesson_link(query: Any, views: Views, model_names: Sequence[str], default_model: str,
                     config_of: Callable[[str], Any]) -> tuple[Plan, Optional[dict]]:
    """(the Plan of a link, the teacher's lesson it carries, checked, or None)."""
    params, _ = parse_query(query)
    lessons = steps_of()
    data, refused = None, None
    if params.get("lesson") == custom.KEY:
        try:
            data = custom.check(custom.decode(params.get("custom")),
                                step_reader(views, model_names, default_model, config_of))
            lessons = {**lessons, custom.KEY: len(data["steps"])}
        except InputError as error:
            refused = error
    plan = read_link(query, views, model_names, default_model, config_of, lessons)
    if refused is not None:
        plan = dataclasses.replace(plan, notes=plan.notes + (("lesson.builder.err.in_link",
                                                              {"why": refused}),))
    return plan, data


def step_of_link(query: Any, views: Views, model_names: Sequence[str], default_model: str,
                 config_of: Callable[[str], Any]) -> Optional[Step]:
    """The lesson step a link names, ours or a teacher's own (its lesson carried in the link and
    checked by read_lesson_link); None for a view's link or a link with any refused value."""
    if not isinstance(query, str):
        return None
    plan, data = read_lesson_link(query, views, model_names, default_model, config_of)
    lesson = lesson_named(plan.lesson, data) if plan.lesson and not plan.notes else None
    return lesson.steps[plan.step] if lesson is not None else None


def refusal_text(error: InputError, lang: str) -> str:
    """An InputError's text in `lang`, with a nested refusal (a step's link, a lesson in a link)
    in the same language."""
    fields = {name: refusal_text(value, lang) if isinstance(value, InputError) else value
              for name, value in error.fields.items()}
    return text(error.key, lang, **fields)


def link_note(notes: list, lang: str) -> str:
    """The sentence of a link's refused values, as text (it quotes what the link holds)."""
    return text("link.note", lang, notes=" ".join(
        text(key, lang, **{name: refusal_text(value, lang) if isinstance(value, InputError) else value
                           for name, value in fields.items()})
        for key, fields in notes))


def shown_text(value: str) -> str:
    """A teacher's text in the panel's Markdown: as text (views.plain), paragraphs kept."""
    return "\n\n".join(plain(part) for part in str(value).split("\n\n"))
