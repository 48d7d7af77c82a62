"""A teacher's own lesson: its data, the file format, the link form, and the checks a lesson from
elsewhere passes before anything of it is used.

The file (docs/LESSONS.md shows one, docs/example-lesson.json):

    {"format": "transformer-explorer-lesson", "version": 1, "title": "...",
     "steps": [{"view": "generate.run", "model": null, "settings": {"max_new": 32},
                "text": "What to look at ...", "question": "generate.run/per_token"}]}

Every field is checked here (types, sizes, no other keys, the question one of the view's
quantities); the view, the model and the settings are checked by the caller's `read_step`
(explorer/ui/page/lesson_links.py: the page's read_link, as any link is), which also turns the
settings into the control values a link would give. A lesson played is a `Lesson` like ours
(`to_lesson`): its steps show the teacher's text as text, ask the question's quantity with its
unit and bounds, and read the run through the quantity's reader.

The link form is the lesson's JSON, deflated and written in base64url (`encode` / `decode`);
decoding stops at MAX_FILE_BYTES of JSON, so a small link cannot unpack into a large lesson.
"""
from __future__ import annotations

import base64
import binascii
import functools
import json
import math
import zlib
from collections.abc import Callable, Mapping
from typing import Any, Optional

from explorer.inputs import InputError
from explorer.lessons import Lesson, Predict, Step, quantities

KEY = "custom"                  # the lesson's key in a link: ?lesson=custom&custom=...
FORMAT = "transformer-explorer-lesson"
VERSION = 1
MAX_FILE_BYTES = 64 * 1024      # a lesson file or a decoded link
MAX_STEPS = 20
MAX_TEXT = 1000                 # characters of a step's text
MAX_TITLE = 120
MAX_SETTINGS = 40
MAX_SETTING_CHARS = 2000        # a text setting (a prompt), as views.MAX_LINK_TEXT
TOP_KEYS = {"format", "version", "title", "steps"}
STEP_KEYS = {"view", "model", "settings", "text", "question"}

# (view, model or None, settings) -> (model or None, the settings as the view's controls take
# them); raises InputError for an unknown view, model or setting
StepReader = Callable[[str, Optional[str], Mapping[str, Any]], tuple[Optional[str], dict]]


def refuse(reason: str, **fields: Any) -> InputError:
    return InputError(f"lesson.builder.err.{reason}", **fields)


def parse_file(raw: Any) -> Any:
    """The JSON of a lesson file's bytes (or text), refused past MAX_FILE_BYTES or when it is
    not UTF-8 JSON."""
    if isinstance(raw, str):
        raw = raw.encode("utf-8", "replace")
    if not isinstance(raw, (bytes, bytearray)):
        raise refuse("json")
    if len(raw) > MAX_FILE_BYTES:
        raise refuse("file_size", size=_size(len(raw)), limit=_size(MAX_FILE_BYTES))
    try:
        return json.loads(bytes(raw).decode("utf-8"), parse_constant=_no_constant)
    except (UnicodeDecodeError, ValueError, RecursionError):
        raise refuse("json") from None


def _no_constant(name: str) -> Any:
    raise ValueError(name)         # NaN, Infinity: not numbers a lesson holds


def _size(n: int) -> str:
    return f"{n / (1024 * 1024):.1f} MB" if n >= 1024 * 1024 else f"{math.ceil(n / 1024)} KB"


def check(data: Any, read_step: StepReader) -> dict:
    """The lesson `data` (parsed JSON) in its canonical form, every part checked; InputError
    (a "lesson.builder.err.*" key, the step's number among its fields) for the first fault."""
    if not isinstance(data, dict):
        raise refuse("shape")
    extra = sorted(set(data) - TOP_KEYS)
    if extra:
        raise refuse("extra", names=_names(extra))
    if data.get("format") != FORMAT or data.get("version") != VERSION:
        raise refuse("format", format=FORMAT, version=VERSION)
    title = data.get("title", "")
    if not isinstance(title, str) or len(title) > MAX_TITLE:
        raise refuse("title", limit=MAX_TITLE)
    steps = data.get("steps")
    if not isinstance(steps, list) or not steps:
        raise refuse("steps")
    if len(steps) > MAX_STEPS:
        raise refuse("too_many", n=len(steps), limit=MAX_STEPS)
    return {"format": FORMAT, "version": VERSION, "title": title.strip(),
            "steps": [_check_step(step, i + 1, read_step) for i, step in enumerate(steps)]}


def _names(names: list) -> str:
    shown = ", ".join(str(n)[:40] for n in names[:5])
    return shown + (", …" if len(names) > 5 else "")


def _check_step(step: Any, number: int, read_step: StepReader) -> dict:
    if not isinstance(step, dict):
        raise refuse("step_shape", step=number)
    extra = sorted(set(step) - STEP_KEYS)
    if extra:
        raise refuse("step_extra", step=number, names=_names(extra))
    view, model, settings = step.get("view"), step.get("model"), step.get("settings", {})
    text, question = step.get("text", ""), step.get("question")
    if not isinstance(view, str) or len(view) > 64:
        raise refuse("step_view", step=number)
    if model is not None and (not isinstance(model, str) or len(model) > 100):
        raise refuse("step_model", step=number)
    if not isinstance(settings, dict) or len(settings) > MAX_SETTINGS:
        raise refuse("step_settings", step=number)
    for name, value in settings.items():
        if len(name) > 40 or isinstance(value, (dict, list)) or value is None or \
                (isinstance(value, str) and len(value) > MAX_SETTING_CHARS) or \
                (isinstance(value, float) and not math.isfinite(value)):
            raise refuse("step_settings", step=number)
    if not isinstance(text, str):
        raise refuse("step_text_type", step=number)
    if len(text) > MAX_TEXT:
        raise refuse("step_text", step=number, n=len(text), limit=MAX_TEXT)
    try:
        model, values = read_step(view, model, settings)
    except InputError as error:
        raise refuse("step_link", step=number, why=error) from None
    if question is not None:
        asked = quantities.get(question)
        if asked is None or asked.view != view:
            raise refuse("step_question", step=number)
    return {"view": view, "model": model, "settings": values, "text": text, "question": question}


def to_json(lesson: dict) -> str:
    """The lesson's file: canonical JSON, keys in a fixed order, non-ASCII text as it is."""
    return json.dumps(lesson, ensure_ascii=False, indent=1)


def encode(lesson: dict) -> str:
    """The lesson in a link's `custom=` value: compact JSON, deflated, base64url without '='."""
    compact = json.dumps(lesson, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    return base64.urlsafe_b64encode(zlib.compress(compact, 9)).decode("ascii").rstrip("=")


def decode(blob: Any) -> Any:
    """The JSON a link's `custom=` value holds; at most MAX_FILE_BYTES are inflated."""
    if not isinstance(blob, str) or not blob or len(blob) > 16384 or \
            not all(c.isascii() and (c.isalnum() or c in "-_") for c in blob):
        raise refuse("link")
    try:
        packed = base64.urlsafe_b64decode(blob + "=" * (-len(blob) % 4))
        inflate = zlib.decompressobj()
        raw = inflate.decompress(packed, MAX_FILE_BYTES + 1)
    except (binascii.Error, ValueError, zlib.error):
        raise refuse("link") from None
    if len(raw) > MAX_FILE_BYTES or inflate.unconsumed_tail:
        raise refuse("file_size", size=">" + _size(MAX_FILE_BYTES), limit=_size(MAX_FILE_BYTES))
    return parse_file(raw)


# ----------------------------------------------------------------------------- playing it


def to_lesson(lesson: dict) -> Lesson:
    """A checked lesson as one of ours: the same panel plays it."""
    return _lesson(json.dumps(lesson, sort_keys=True))


@functools.lru_cache(maxsize=64)
def _lesson(canonical: str) -> Lesson:
    data = json.loads(canonical)
    return Lesson(key=KEY, title="lesson.builder.untitled", summary="lesson.builder.summary",
                  steps=tuple(_step(step) for step in data["steps"]), order=1000)


def title_of(lesson: dict) -> str:
    return lesson.get("title") or ""


def _step(step: dict) -> Step:
    asked = quantities.get(step["question"])
    predict = None
    if asked is not None:
        predict = Predict(question="lesson.builder.ask", answer="answer", unit=asked.unit,
                          why="lesson.builder.why", low=asked.low, high=asked.high,
                          computed=asked.computed)
    fields = {"text": step["text"]}
    if asked is not None:
        fields["quantity"] = asked.label
    return Step(view=step["view"], look="lesson.builder.look", said="lesson.builder.said",
                read=functools.partial(read_step_values, step["view"], step["question"]),
                settings=dict(step["settings"]), fields=fields, model=step["model"],
                predict=predict)


def read_step_values(view: str, question: Optional[str], result: Any) -> Optional[dict]:
    """A custom step's reading: every quantity of its view the result holds, {key: value}, and
    the asked one's value as `answer` (None when the result holds no reading of it)."""
    values = quantities.read_all(view, result)
    fields: dict[str, Any] = {"values": {key: value for key, (value, _) in values.items()}}
    if question is not None:
        if question not in values:
            return None
        fields["answer"], fields["computed"] = values[question]
    return fields
