"""Walk a lesson in a real browser page, step by step, as a visitor would: open its link, answer
each predict step, wait for the panel to quote the step's run, press Next (or the → key).
Used by the lesson browser tests (tests/test_browser_lessons*.py).

    steps = walk(page, app_url, "kv-cache", "en", guesses={2: 500})
    steps[1].said    # the panel's text after step 2's run (its numbers from that run)
"""
from __future__ import annotations

import re
import time
from dataclasses import dataclass
from typing import Mapping, Optional

from explorer.lessons import LESSONS
from explorer.locales import text

STEP_TIMEOUT_S = 240      # a step's run: the model group may be behind another test's run
LOAD_TIMEOUT_MS = 180_000


@dataclass(frozen=True)
class Walked:
    index: int            # 0-based
    progress: str         # the panel's "step i of n"
    look: str
    said: str             # after the run


def _said(page) -> str:
    return page.locator("#lesson-said").inner_text().strip()


# Gradio's progress timer ("0.3s", "processing | 1.2/5.0s") shown over a component while an
# event that outputs to it runs: a digit, but no reading
_TIMER = re.compile(r"^\s*(?:[^\n]*\|\s*)?\d+(?:\.\d+)?(?:/\d+(?:\.\d+)?)?s\s*$", re.MULTILINE)


def _without_timer(said: str) -> str:
    return _TIMER.sub("", said).strip()


def wait_for_reading(page, before: str, lang: str, timeout_s: float = STEP_TIMEOUT_S) -> str:
    """The panel's said text once it quotes a run (not the waiting / running line, and not the
    text it had before)."""
    pending = {text("lesson.waiting", lang), text("lesson.running", lang)}
    pending = {re.sub(r"[*]", "", p).strip() for p in pending}
    before = _without_timer(before)
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        said = _without_timer(_said(page))
        if said and said != before and not any(p in said for p in pending) and re.search(r"\d", said):
            return said
        time.sleep(0.5)
    raise AssertionError(f"the panel quoted no run within {timeout_s} s; it says {_said(page)!r}")


def open_lesson(page, app_url: str, key: str, lang: str, step: int = 1) -> None:
    page.goto(f"{app_url.rstrip('/')}/?lesson={key}&step={step}&lang={lang}")
    page.locator("#lesson-panel").wait_for(timeout=LOAD_TIMEOUT_MS)


def walk(page, app_url: str, key: str, lang: str, guesses: Optional[Mapping[int, float]] = None,
         keys: bool = False) -> list[Walked]:
    """Every step of lesson `key`, first to last (1-based `guesses` for its predict steps;
    `keys`: move with the → key instead of the Next button)."""
    lesson = LESSONS[key]
    guesses = dict(guesses or {})
    open_lesson(page, app_url, key, lang)
    walked: list[Walked] = []
    said = ""
    for index, step in enumerate(lesson.steps):
        n = len(lesson.steps)
        progress = page.locator("#lesson-progress")
        progress.get_by_text(re.compile(rf"\b{index + 1}\b.*\b{n}\b")).wait_for(timeout=60_000)
        look = page.locator("#lesson-look").inner_text().strip()
        if step.predict is not None:
            guess = guesses.get(index + 1, step.predict.low + 1)
            field = page.locator("#lesson-guess input")
            field.fill(str(guess))
            page.locator("#lesson-check").click()
        said = wait_for_reading(page, said if index else "", lang)
        walked.append(Walked(index, progress.inner_text().strip(), look, said))
        if index < n - 1:
            if keys:
                page.locator("#lesson-progress").click()   # focus off any field
                page.keyboard.press("ArrowRight")
            else:
                page.locator("#lesson-next").click()
    return walked
