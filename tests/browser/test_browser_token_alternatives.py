"""Token alternatives in a real browser (Debian Chromium): after a short real generation, hovering
a generated token shows the five most likely tokens of its step with their probabilities and the
chosen one marked; the keyboard reaches them too (Tab to the tokens, arrows between them,
Escape hides); the language switch redraws them in Chinese. Screenshots: artifacts/screenshots/."""
from __future__ import annotations

import re

import pytest

from tests.conftest import SCREENSHOTS
from tests.helpers import open_generate_tab, switch_language, type_number

pytestmark = pytest.mark.browser

LOAD_TIMEOUT = 180_000  # ms; the first load may convert the checkpoint
RUN_TIMEOUT = 240_000
N_NEW = 6


def _read_tip(token) -> dict:
    """What the visible tooltip of `token` says: its head, its rows (id, p, text, chosen)."""
    tip = token.locator(".gen-tip")
    assert tip.is_visible(), "the tooltip is not shown"
    rows = tip.locator(".gen-alt")
    return {
        "head": tip.locator(".gen-tip-head").inner_text(),
        "basis": tip.locator(".gen-basis").inner_text(),
        "rows": [{"id": int(rows.nth(i).get_attribute("data-id")),
                  "p": float(rows.nth(i).get_attribute("data-p")),
                  "text": rows.nth(i).inner_text(),
                  "chosen": "gen-chosen" in rows.nth(i).get_attribute("class"),
                  "outside": "gen-outside" in rows.nth(i).get_attribute("class")}
                 for i in range(rows.count())]}


def _check_rows(reading: dict, piece: str, mark: str) -> None:
    rows = reading["rows"]
    top = [r for r in rows if not r["outside"]]
    assert len(top) == 5, rows
    probs = [r["p"] for r in top]
    assert probs == sorted(probs, reverse=True) and 0 < sum(probs) <= 1 + 1e-6, probs
    for r in rows:   # the percentage shown is the number's own
        assert re.search(r"\d+\.\d\d%|<0\.01%", r["text"]) and f"(id {r['id']})" in r["text"], r
        assert f"{100 * r['p']:.2f}%" in r["text"] or r["p"] < 5e-5
    chosen = [r for r in rows if r["chosen"]]
    assert len(chosen) == 1 and mark in chosen[0]["text"], rows
    # greedy: the chosen token is the most likely one, and it is the piece under the pointer
    assert chosen[0] is rows[0]
    label = chosen[0]["text"].split(" (id")[0]
    assert label == piece.replace(" ", "␣"), (label, piece)


def test_hover_and_keyboard_show_each_tokens_alternatives(page, app_url):
    open_generate_tab(page, app_url, LOAD_TIMEOUT)
    page.locator("#gen-prompt textarea").fill("Name three colours.")
    type_number(page, "gen-max-new", N_NEW)
    page.locator("#gen-start").click()
    page.locator("#gen-status", has_text="Done").wait_for(timeout=RUN_TIMEOUT)
    strip = page.locator("#gen-tokens")
    tokens = strip.locator(".gen-tok")
    assert tokens.count() == N_NEW
    assert strip.locator(".gen-tip").first.is_hidden()   # nothing shown until asked

    # the pointer on the second token: its step's five alternatives
    second = tokens.nth(1)
    piece = second.evaluate("el => el.firstChild.textContent")
    second.hover()
    reading = _read_tip(second)
    assert reading["head"].startswith("Step 1 · position")
    assert reading["basis"].startswith("Greedy")
    _check_rows(reading, piece, "chosen")
    english = [(r["id"], r["p"]) for r in reading["rows"]]
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / "generate-token-hover.png"),
                    clip=_around(page, "#gen-tokens", below=260))

    # the keyboard: Tab from the last button before the (read-only) text reaches the first
    # token, one tab stop for the strip; the arrows move between tokens
    page.mouse.move(0, 0)
    page.locator("#gen-long").focus()
    page.keyboard.press("Tab")
    focused = page.evaluate("() => document.activeElement.closest('#gen-tokens .gen-tok')"
                            "?.dataset.index ?? null")
    assert focused == "0", "Tab does not reach the tokens"
    first = tokens.nth(0)
    _check_rows(_read_tip(first), first.evaluate("el => el.firstChild.textContent"), "chosen")
    page.keyboard.press("ArrowRight")
    page.keyboard.press("ArrowRight")
    third = tokens.nth(2)
    assert third.evaluate("el => el === document.activeElement")
    reading = _read_tip(third)
    assert reading["head"].startswith("Step 2")
    page.screenshot(path=str(SCREENSHOTS / "generate-token-focus.png"),
                    clip=_around(page, "#gen-tokens", below=260))
    page.keyboard.press("Escape")
    assert third.locator(".gen-tip").is_hidden(), "Escape does not hide the tooltip"

    # the language switch redraws the strip from the stored run: the same numbers, in Chinese
    switch_language(page, "zh")
    page.locator("#gen-tokens .gen-tip-head", has_text="第 1 步").wait_for(state="attached",
                                                                         timeout=30_000)
    second = page.locator("#gen-tokens .gen-tok").nth(1)
    second.hover()
    zh = _read_tip(second)
    assert zh["basis"].startswith("贪心")
    assert [(r["id"], r["p"]) for r in zh["rows"]] == english
    _check_rows(zh, piece, "已选中")
    page.screenshot(path=str(SCREENSHOTS / "generate-token-hover-zh.png"),
                    clip=_around(page, "#gen-tokens", below=260))

    # on a phone-width screen the last token's tooltip stays inside the window
    page.set_viewport_size({"width": 400, "height": 800})
    page.mouse.move(0, 0)
    last = page.locator("#gen-tokens .gen-tok").last
    last.focus()
    box = last.locator(".gen-tip").bounding_box()
    assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= 400, box
    page.screenshot(path=str(SCREENSHOTS / "generate-token-phone.png"))


def _around(page, selector: str, below: int) -> dict:
    """A clip of the page around an element, with room under it for its tooltip."""
    box = page.locator(selector).bounding_box()
    return {"x": max(0, box["x"] - 20), "y": max(0, box["y"] - 90),
            "width": min(900, box["width"] + 40), "height": box["height"] + 90 + below}
