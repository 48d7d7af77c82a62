"""Gradio's page script, served with one change: a loading status is written to a component
only when it changed (patch 7 of the Gradio patches, gradio_patches.py, on the same pinned
version).

Why: at every status change of any event (its dispatch, each streamed message, its end) Gradio
6.31's page writes the status of every component any event has ever touched, and it keeps
adding to that set: an event's targets and, once it ends (its stream state then reads
"closed"), every one of its inputs, states included. Each write searches the whole component
tree for its component, and for a state, which is not in the tree, walks all of it. A
student's page that followed a lesson for a while rewrites about 50 statuses at each of an
event's four or so changes, while only the few of that event differ from what the component
already holds; a class's move spent up to a second of the page's time there.

The change, in `update_loading_stati_state` of Gradio's Blocks script: it remembers the last
status it wrote to each component and writes only those whose fields differ (compared one by
one, a copy kept, since Gradio sets a status's `status` in place). A component thus receives
exactly the values it received before, less the repeats. Writes Gradio makes elsewhere (a
validation error, a cleared status) are not routed through it; the next status it writes
differs from the remembered one there and is written, as before.

Served by `middleware()`: GET/HEAD of the one asset (under the app's root path too) answers the
patched text; everything else goes to Gradio. The file is found by its name pattern and the
original text; where the installed Gradio is another version, the asset is missing, or the
text is not there exactly once, nothing is patched, Gradio serves its file, and one log line
says why (`patched_script()` is then None).
"""
from __future__ import annotations

import hashlib
import logging
from functools import lru_cache
from pathlib import Path
from typing import Any, Callable, Optional

from explorer.web.asgi import Scope, Send, answer
from explorer.web.gradio_patches import version_problem

log = logging.getLogger(__name__)

ASSETS = "templates/frontend/assets"
PATTERN = "Blocks-*.js"
ORIGINAL = ("async update_loading_stati_state(){await Promise.all(Object.entries("
            "this.loading_stati.current).map(([e,t])=>this.update_state_cb(Number(e),"
            "{loading_status:t},!1)))}")
# the same writes, less those equal field by field to the last one written to that component
PATCHED = ("async update_loading_stati_state(){let s=this.explorer_written||"
           "(this.explorer_written=new Map);await Promise.all(Object.entries("
           "this.loading_stati.current).filter(([e,t])=>{let p=s.get(e),k=Object.keys(t);"
           "if(p&&k.length===Object.keys(p).length&&k.every(n=>Object.is(t[n],p[n])))return!1;"
           "s.set(e,{...t});return!0}).map(([e,t])=>this.update_state_cb(Number(e),"
           "{loading_status:t},!1)))}")
MARK = "explorer_written"


def assets_dir() -> Path:
    import gradio

    return Path(gradio.__file__).resolve().parent / ASSETS


@lru_cache(maxsize=1)
def patched_script() -> Optional[tuple[str, bytes]]:
    """(the asset's file name, its patched text), or None where the patch does not apply."""
    problem = version_problem()
    found = [] if problem else [path for path in sorted(assets_dir().glob(PATTERN))
                                if path.read_text(encoding="utf-8").count(ORIGINAL) == 1]
    if not problem and len(found) != 1:
        problem = (f"{len(found)} of Gradio's {PATTERN} scripts hold the loading-status "
                   "writer exactly once")
    if problem:
        log.warning("Gradio's page script is served unpatched: %s", problem)
        return None
    text = found[0].read_text(encoding="utf-8").replace(ORIGINAL, PATCHED)
    return found[0].name, text.encode("utf-8")


class PatchedScript:
    """ASGI middleware: GET/HEAD of Gradio's Blocks asset answers the patched script; every
    other request goes to the app unchanged."""

    def __init__(self, app: Callable):
        self.app = app
        script = patched_script()
        self.route = f"/assets/{script[0]}" if script else None
        self.body = script[1] if script else b""
        self.etag = f'"{hashlib.sha256(self.body).hexdigest()[:32]}"'.encode()

    def _mine(self, scope: Scope) -> bool:
        if self.route is None or scope.get("type") != "http":
            return False
        path = scope.get("path", "")
        return scope.get("method") in ("GET", "HEAD") and (
            path == self.route or path == scope.get("root_path", "") + self.route)

    async def __call__(self, scope: Scope, receive: Callable, send: Send) -> None:
        if not self._mine(scope):
            await self.app(scope, receive, send)
            return
        headers = [(b"content-type", b"text/javascript; charset=utf-8"),
                   (b"cache-control", b"no-cache"), (b"etag", self.etag),
                   (b"x-content-type-options", b"nosniff")]
        asked = dict(scope.get("headers") or []).get(b"if-none-match")
        if asked == self.etag:
            await answer(send, 304, b"", headers, length=0)
            return
        await answer(send, 200, b"" if scope["method"] == "HEAD" else self.body, headers,
                     length=len(self.body))


def middleware() -> list[Any]:
    """FastAPI's `middleware` entries serving the patched script (for launch()'s `app_kwargs`)."""
    from starlette.middleware import Middleware

    return [Middleware(PatchedScript)]
