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
from explorer.locales import template, text

STEP_TIMEOUT_S = 240      # a step's run: the model group may be behind another test's run
LOAD_TIMEOUT_MS = 180_000


@dataclass(frozen=True)
class Walked:
    index: int            # 0-based
    progress: str         # the panel's "step i of n"
    look: str
    said: str             # after the run


def _said(page) -> str:
    """The panel's text; "" while the page does not answer within 30 s (a streaming run on a
    saturated CPU can hold the page's main thread that long: the caller's deadline decides)."""
    from playwright.sync_api import TimeoutError as PageTimeout

    try:
        return page.locator("#lesson-said").inner_text(timeout=30_000).strip()
    except PageTimeout:
        return ""


def _plain(markdown: str) -> str:
    return re.sub(r"[*`]", "", markdown).strip()


# Gradio's progress timer ("0.3s", "processing | 1.2/5.0s") shown over a component while an
# event that outputs to it runs: a digit, but no reading
_TIMER = re.compile(r"^\s*(?:[^\n]*\|\s*)?\d+(?:\.\d+)?(?:/\d+(?:\.\d+)?)?s\s*$", re.MULTILINE)


def _without_timer(said: str) -> str:
    return _TIMER.sub("", said).strip()


def wait_for_reading(page, before: str, lang: str, timeout_s: float = STEP_TIMEOUT_S,
                     guessed: bool = False) -> str:
    """The panel's said text once it quotes a run: neither a waiting nor the running line,
    no progress timer on it, and not the text it had before; `guessed` (a predict step whose
    guess was sent): only a reading that compares the guess. A run of the step's section that
    ends before the guess is in (one the page started on the previous step, or at its load, as
    the section is drawn on load and by the step's own press) is read too, without the guess,
    and the Check's answer may come after it: that reading is not the one the walk waits for.
    The line saying the run had other settings than the step's fails the walk at once."""
    pending = [_plain(template(key, lang).split("{")[0])
               for key in ("lesson.waiting", "lesson.waiting_guess", "lesson.running")]
    compared = _plain(template("lesson.compare_more", lang).split("{")[0])  # "You guessed "
    other = _plain(template("lesson.other_settings", lang).split("{")[0])
    before = _without_timer(before)
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        said = _without_timer(_said(page))
        if other in said:
            raise AssertionError(f"the step's run had other settings than the step's: {said!r}")
        if said and said != before and not any(p in said for p in pending) \
                and "processing" not in said and re.search(r"\d", said) \
                and (not guessed or compared in said):
            return said
        time.sleep(0.5)
    raise AssertionError(f"the panel quoted no run within {timeout_s} s; it says {_said(page)!r} "
                         f"(panel shown: {page.locator('#lesson-panel').count() > 0})")


def wait_for_step(page, key: str, index: int, lang: str, timeout_ms: int = 60_000) -> str:
    """The panel's progress line once it shows step index + 1 of the lesson (and its pending
    overlay is gone)."""
    lesson = LESSONS[key]
    wanted = _plain(text("lesson.progress", lang, title=text(lesson.title, lang), step=index + 1,
                         n=len(lesson.steps)))
    progress = page.locator("#lesson-progress")
    deadline = time.monotonic() + timeout_ms / 1000
    while time.monotonic() < deadline:
        shown = progress.inner_text()
        if wanted in shown and "processing" not in shown:
            return shown.strip()
        time.sleep(0.25)
    raise AssertionError(f"the panel shows {progress.inner_text()!r}, not {wanted!r}")


def open_lesson(page, app_url: str, key: str, lang: str, step: int = 1) -> None:
    page.goto(f"{app_url.rstrip('/')}/?lesson={key}&step={step}&lang={lang}")
    page.locator("#lesson-panel").wait_for(timeout=LOAD_TIMEOUT_MS)


def _failure_shot(page, name: str) -> None:
    """The page as it was when a walk stopped (artifacts/screenshots/), for the report."""
    from tests.conftest import SCREENSHOTS

    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    try:
        page.screenshot(path=str(SCREENSHOTS / f"{name}.png"), timeout=120_000)
    except Exception:
        pass


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
        shown = wait_for_step(page, key, index, lang)
        look = page.locator("#lesson-look").inner_text().strip()
        if step.predict is not None:
            guess = guesses.get(index + 1, step.predict.low + 1)
            field = page.locator("#lesson-guess input")
            field.fill(str(guess))
            page.locator("#lesson-check").click()
        try:
            said = wait_for_reading(page, said if index else "", lang,
                                    guessed=step.predict is not None)
        except Exception:
            _failure_shot(page, f"walk-failed-{key}-{lang}-step{index + 1}")
            raise
        walked.append(Walked(index, shown, look, said))
        if index < n - 1:
            if keys:
                page.evaluate("document.activeElement && document.activeElement.blur()")
                page.keyboard.press("ArrowRight")
            else:
                page.locator("#lesson-next").click()
    return walked
