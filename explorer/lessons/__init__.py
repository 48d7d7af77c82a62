"""Lessons: guided steps through the course notes, each step a view of the app run live.

A lesson is one module here (explorer/lessons/<name>.py) defining `LESSON`, with its texts in
explorer/locales/{en,zh}/lesson/<name>.py. Each step names a view (explorer/ui/page/views.py: a
section with its controls), the settings and model it opens with, a text saying what to look
at, and `read(result) -> fields`: the numbers the visitor's own run produced, read from the
section's stored result through the same criterion functions the claims board uses. The step's
`said` text quotes those fields, so no number of a lesson is written in advance.

A step may ask for a prediction first (`Predict`): the visitor enters a number, the run goes,
and the run's value (`fields[answer]`) is shown beside the guess, with how far off it was and
why, in a text whose fields come from the same reading. A value the run did not measure (a
formula applied to the run's numbers, or a measured rate carried past where the run stopped) is
called computed, never measured: `Predict.computed`, or the reading's own `computed` field.

Nothing here imports Gradio: explorer/ui/page/lessons.py wires the panel, the buttons and the runs.
"""
from __future__ import annotations

import importlib
import math
import pkgutil
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Optional

from explorer.locales import text

Reading = Callable[[Any], Optional[dict]]


@dataclass(frozen=True)
class Predict:
    """Asked before the run: `question` (locale key, fields of the step's settings) in `unit`;
    the run's `fields[answer]` is the value the guess is compared with; `why` (locale key)
    explains it from the reading's fields. Guesses outside [low, high] are refused with a clear
    message. `computed`: the answer is a formula of the run's numbers, not a value the run
    measured (a reading's `computed` field, when it has one, decides instead)."""
    question: str
    answer: str
    unit: str
    why: str
    low: float = 0.0
    high: float = 1e9
    computed: bool = False


@dataclass(frozen=True)
class Step:
    view: str                              # the view key ("generate.run")
    look: str                              # locale key: what to look at, before the numbers
    said: str                              # locale key: what the run shows, with read()'s fields
    read: Reading                          # the section's stored result -> fields (None: no result)
    settings: Mapping[str, Any] = field(default_factory=dict)  # control values, by link name
    fields: Mapping[str, Any] = field(default_factory=dict)    # fields of look / the question
    model: Optional[str] = None            # the model the step opens with (None: the visitor's)
    predict: Optional[Predict] = None
    run: bool = True                       # run the section (False: it draws on its own)
    said_computed: Optional[str] = None    # locale key: `said` when the reading's answer is computed


def is_computed(step: Step, fields: Mapping[str, Any]) -> bool:
    """Whether the step's answer in `fields` was computed rather than measured by the run."""
    default = step.predict.computed if step.predict is not None else False
    return bool(fields.get("computed", default))


@dataclass(frozen=True)
class Lesson:
    key: str                               # "kv-cache": the link's lesson=
    title: str                             # locale key
    summary: str                           # locale key: one line in the lesson list
    steps: tuple[Step, ...]
    order: int = 100                       # place in the list (the notes' order)


def _discover() -> dict[str, Lesson]:
    found: list[Lesson] = []
    for module in pkgutil.iter_modules(__path__):
        lesson = getattr(importlib.import_module(f"{__name__}.{module.name}"), "LESSON", None)
        if isinstance(lesson, Lesson):
            found.append(lesson)
    found.sort(key=lambda lesson: (lesson.order, lesson.key))
    keys = [lesson.key for lesson in found]
    if len(set(keys)) != len(keys):
        raise ValueError(f"two lessons share a key: {keys}")
    return {lesson.key: lesson for lesson in found}


LESSONS: dict[str, Lesson] = _discover()


def generate_prompts() -> tuple[str, ...]:
    """Every lesson step's prompt on a Generate view, each once, in the lessons' order: what
    the app hands the shared decode loop to keep computed (explorer.generate.kept)."""
    texts = [step.settings.get("prompt") for lesson in LESSONS.values() for step in lesson.steps
             if step.view.startswith("generate.")]
    return tuple(dict.fromkeys(text for text in texts if isinstance(text, str)))


def steps_of() -> dict[str, int]:
    """Each lesson's number of steps (what a link's step= is checked against)."""
    return {key: len(lesson.steps) for key, lesson in LESSONS.items()}


def reading(step: Step, result: Any) -> Optional[dict]:
    """The step's fields from the section's result; None when there is no result of the kind
    the step reads (no run yet, or a run of another section's shape)."""
    if result is None:
        return None
    try:
        return step.read(result)
    except (AttributeError, TypeError, IndexError, KeyError):
        return None


@dataclass(frozen=True)
class Comparison:
    guess: float
    measured: float
    off: float            # measured - guess
    ratio: Optional[float]  # guess / measured (None when the measured value is 0)


def compare(guess: float, measured: float) -> Comparison:
    ratio = guess / measured if measured else None
    return Comparison(guess, measured, measured - guess, ratio)


def comparison_text(c: Comparison, unit: str, lang: str, computed: bool = False) -> str:
    """"You guessed 40 KiB; your run measured 45 KiB: 5 KiB more (your guess was 0.89x)";
    `computed`: "... computed from your run: 45 KiB ..." (a value the run did not measure)."""
    fmt = _number
    if c.ratio is None:
        closeness = ""
    elif abs(c.ratio - 1) < 0.05:
        closeness = text("lesson.close", lang)
    else:
        closeness = text("lesson.ratio", lang, ratio=fmt(c.ratio))
    way = "more" if c.off > 0 else "less" if c.off < 0 else "same"
    key = f"lesson.{'computed' if computed else 'compare'}_{way}"
    return text(key, lang, guess=fmt(c.guess), measured=fmt(c.measured), off=fmt(abs(c.off)),
                unit=unit, closeness=closeness)


def _number(value: float) -> str:
    """A number as a person would write it: 3 significant digits, no trailing zeros."""
    if value == 0 or not math.isfinite(value):
        return str(value)
    if abs(value) >= 1000:
        return f"{value:,.0f}"
    digits = max(0, 2 - int(math.floor(math.log10(abs(value)))))
    return f"{value:.{digits}f}".rstrip("0").rstrip(".") if digits else f"{value:.0f}"
