"""The class's move written twice, byte for byte (Debian Chromium runs the script's side): a
following student's page writes the pending move either from its script (static/classroom.js,
classMoved: the class's link from header X-Class-Link, as the revision route sends it) or from
the poll (explorer/ui/page/classroom.py, move_value); the second write must be no change, so
both must write the same text, and the script must take a link exactly when the route would
send it (explorer/web/class_route.py, LINK). The script's own return statement is read from the
file and run in the browser, so the test follows either side's change."""
from __future__ import annotations

import re

import pytest

from explorer.ui.page.classroom import move_value
from explorer.web.class_route import LINK
from tests.conftest import ROOT

pytestmark = pytest.mark.browser

SCRIPT = ROOT / "static" / "classroom.js"
BODY = re.compile(r"^function classMoved\(room, moves, link\) \{\n(.*?)^\}", re.S | re.M)

LONGEST = 8191                    # characters after the "?" that the route sends at most
LINKS = [
    "?lesson=next-token&step=2", "?view=next.lens&model=gemma-3-270m&lang=zh",
    "?lesson=custom&step=1&custom=eyJ2IjoxfQ~_-.", "?room=ABC234&invite=x_y-z",
    "?a=%E4%B8%AD%20%22%5C",       # percent-escapes: plain ASCII
    "?!#$&'()*+,-./:;<=>?@[]^_`{|}~",
    "?", "", "lesson=x", "??", "?~",
    "?q=é", "?q=中文", "?q=😀", "?q=\u00a0",   # non-ASCII
    '?q="quoted"', "?q='single'", "?q=back\\slash", "?q=\\u2028",
    "?q=\u2028", "?q=\u2029", "?q=a b", "? ", "?q=\t", "?q=\x7f", "?q=\x00", "?q=\x1f",
    "?q=x\n", "?q=x\r\n", "\n?q=x",
    "?" + "a" * (LONGEST - 1), "?" + "a" * LONGEST, "?" + "a" * (LONGEST + 1),
    "?" + "%" * LONGEST, "?" + "中" * LONGEST,
]
MOVES = [0, 1, 7, 10, 42, 65_535, 123_456_789, 10**12 - 1]   # the script reads at most 12 digits


def _script_return() -> str:
    """classMoved's last return statement: what the script writes, from `moves` (the header's
    text) and `link`; it reads nothing else of the page."""
    found = BODY.search(SCRIPT.read_text(encoding="utf-8"))
    assert found, "static/classroom.js has no function classMoved(room, moves, link)"
    returns = [line.strip() for line in found.group(1).splitlines() if line.strip().startswith("return ")]
    assert returns and "JSON.stringify" in returns[-1], returns
    return returns[-1]


def _written(page, pairs: list[tuple[str, str]]) -> list:
    """What the script's return statement gives for each (moves text, link)."""
    return page.evaluate("([statement, pairs]) => { const written = new Function('moves', 'link', statement);"
                         " return pairs.map(([moves, link]) => written(moves, link)); }",
                         [_script_return(), pairs])


def test_the_script_and_the_route_take_the_same_links(new_page):
    page = new_page()
    written = _written(page, [("1", link) for link in LINKS])
    for link, text in zip(LINKS, written):
        sent = LINK.fullmatch(link) is not None
        assert (text is not None) == sent, (repr(link[:40]), len(link), text is not None, sent)
    # the cases the brief names are on both sides of the line
    taken = {link for link, text in zip(LINKS, written) if text is not None}
    assert "?" + "a" * LONGEST in taken and "?" + "a" * (LONGEST + 1) not in taken
    assert "?a=%E4%B8%AD%20%22%5C" in taken and "?q=中文" not in taken and "?q=a b" not in taken
    assert '?q="quoted"' not in taken and "?q=back\\slash" not in taken and "?q=\u2028" not in taken


def test_the_script_writes_the_polls_text_byte_for_byte(new_page):
    page = new_page()
    pairs = [(str(moves), link) for moves in MOVES for link in LINKS]
    written = _written(page, pairs)
    compared = 0
    for (moves, link), text in zip(pairs, written):
        if text is None:                  # the script writes nothing: the poll's write is the only one
            continue
        assert text == move_value(int(moves), link), (moves, link[:40])
        assert text.encode("utf-8") == move_value(int(moves), link).encode("utf-8")
        compared += 1
    assert compared >= len(MOVES) * 8
