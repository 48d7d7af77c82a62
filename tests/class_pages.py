"""A teacher's page starts a live class, as the class browser tests all begin:

    info = start_class(teacher)          # the Classroom tab's info: code, invite link, ...
    code, link = class_code(info), invite_link(info)

Gradio 6 draws a tab's content only once the tab is shown, so the Start button exists only
after the tab's button took the click. On a loaded host the page's first click can come while
Gradio is still mounting the tabs; CI once saw the Classroom tab's content never drawn within
60 s of a click that Playwright reported done. `open_tab` checks that the tab was selected, says
which one is when it was not, and clicks again, once."""
from __future__ import annotations

import re

LOAD_MS = 180_000          # a page's first draw, on a host shared with the other pages' runs
SELECTED = ("(id) => { const b = document.getElementById(id + '-button');"
            " return b ? b.getAttribute('aria-selected') : null; }")


def open_tab(page, tab: str, content: str, timeout: int = LOAD_MS) -> None:
    """Open the top tab `tab-<tab>` and wait until `#<content>`, drawn only in it, is shown."""
    page.click(f"#tab-{tab}-button", timeout=timeout)
    shown = page.locator(f"#{content}")
    try:
        shown.wait_for(state="visible", timeout=30_000)
        return
    except Exception:                                   # noqa: BLE001 - looked at below
        selected = page.evaluate(SELECTED, f"tab-{tab}")
        print(f"open_tab: #{content} not shown 30 s after the click on tab {tab!r}"
              f" (its button's aria-selected: {selected}); clicking again")
    page.click(f"#tab-{tab}-button", timeout=timeout)
    shown.wait_for(state="visible", timeout=timeout)


def start_class(teacher) -> str:
    """Open the Classroom tab, press Start, and return the class's info once it holds the code
    and the invite link."""
    open_tab(teacher, "classroom", "class-start")
    teacher.click("#class-start")
    teacher.wait_for_function("() => /\\?room=[A-Z2-9]{6}&invite=/.test("
                              "(document.querySelector('#class-info') || {}).innerText || '')",
                              timeout=60_000)
    return teacher.inner_text("#class-info")


def class_code(info: str) -> str:
    return re.search(r"\b[A-Z2-9]{6}\b", info).group(0)


def invite_link(info: str) -> str:
    """The student's link, "?room=CODE&invite=TOKEN"."""
    return re.search(r"\?room=" + class_code(info) + r"&invite=[\w-]+", info).group(0)
