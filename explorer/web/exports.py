"""Exports of every figure: PNG, a self-contained interactive HTML file, and the data as CSV.

The work is done in the visitor's page (static/exports.js): a small toolbar under every Plotly
figure builds the three files from the figure the page shows, naming the model and the run's
settings (read from the section's link box, explorer/ui/page/views.py, or from the model picker and
the section when there is none). The server adds two things:

- `head()`: the script and its strings in both languages (explorer/locales/*/export.py),
  inlined in the page's head (shell.head_html);
- `middleware()`: one route, PLOTLY_ROUTE, answering with the plotly.min.js that the plotly
  package ships, which the HTML export inlines so that the file draws its figure with the
  network off. The route serves exactly that one file, read from the installed package; no
  folder is added to Gradio's allowed paths.
"""
from __future__ import annotations

import json
import re
from functools import lru_cache
from pathlib import Path
from typing import Any, Callable

from explorer.locales import CATALOG, LANGUAGES
from explorer.web.asgi import Scope, Send, answer, at_route

STATIC = Path(__file__).resolve().parents[2] / "static"
SCRIPT = STATIC / "exports.js"
STYLE = STATIC / "exports.css"
PLOTLY_ROUTE = "/explorer/plotly.min.js"
# the page and every exported file use the same copy for an hour before asking again
CACHE_SECONDS = 3600



def plotly_js_path() -> Path:
    """The plotly.min.js of the installed plotly package (the one Python's plotly targets)."""
    import plotly

    return Path(plotly.__file__).resolve().parent / "package_data" / "plotly.min.js"


@lru_cache(maxsize=1)
def plotly_js() -> bytes:
    return plotly_js_path().read_bytes()


def strings() -> dict[str, dict[str, str]]:
    """{lang: {key: template}} of the export keys: what the page's script shows."""
    return {lang: {key: text for key, text in CATALOG.strings(lang).items() if key.startswith("export.")}
            for lang in LANGUAGES}


def _script_json(value: Any) -> str:
    """JSON that can sit inside a <script> element ("<" never closes it)."""
    return json.dumps(value, ensure_ascii=False).replace("<", "\\u003c")


def head() -> str:
    """The export script for the page's head, with its strings and the route of plotly.js."""
    config = {"text": strings(), "plotly": PLOTLY_ROUTE.lstrip("/")}
    script = SCRIPT.read_text(encoding="utf-8")
    if re.search(r"<(/?)script|<!--", script, re.IGNORECASE):
        raise ValueError(f"{SCRIPT} spells a script tag or a comment opener: the page's head "
                         "would end or hide the script there")
    return ("<script>window.explorerExportConfig = " + _script_json(config) + ";</script>\n"
            "<script>\n" + script + "\n</script>\n")


class PlotlyScript:
    """ASGI middleware: GET/HEAD of PLOTLY_ROUTE (under the app's root path) answers the
    package's plotly.min.js; every other request goes to the app unchanged."""

    def __init__(self, app: Callable):
        self.app = app

    async def __call__(self, scope: Scope, receive: Callable, send: Send) -> None:
        if not at_route(scope, PLOTLY_ROUTE):
            await self.app(scope, receive, send)
            return
        if scope.get("method") not in ("GET", "HEAD"):
            await answer(send, 405, b"", [(b"allow", b"GET, HEAD")])
            return
        body = plotly_js()
        await answer(send, 200, b"" if scope["method"] == "HEAD" else body,
                      [(b"content-type", b"text/javascript; charset=utf-8"),
                       (b"cache-control", f"public, max-age={CACHE_SECONDS}".encode()),
                       (b"x-content-type-options", b"nosniff")],
                      length=len(body))


def middleware() -> list:
    """FastAPI's `middleware` entries serving PLOTLY_ROUTE (for launch()'s `app_kwargs`)."""
    from starlette.middleware import Middleware

    return [Middleware(PlotlyScript)]
