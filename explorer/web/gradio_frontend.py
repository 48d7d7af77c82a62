"""Gradio's page scripts, served with two changes (patches 7 and 8 of the Gradio patches,
gradio_patches.py, on the same pinned version).

7. **A loading status is written to a component only when it changed** (`STATUS_WRITES`, in
   the Blocks script). At every status change of any event (its dispatch, each streamed
   message, its end) Gradio 6.31's page writes the status of every component any event has
   ever touched, and it keeps adding to that set: an event's targets and, once it ends (its
   stream state then reads "closed"), every one of its inputs, states included. Each write
   searches the whole component tree for its component, and for a state, which is not in the
   tree, walks all of it. A student's page that followed a lesson for a while rewrites about 50
   statuses at each of an event's four or so changes, while only the few of that event differ
   from what the component holds; a class's move spent up to a second of the page's time there.
   The patched `update_loading_stati_state` remembers the last status it wrote to each
   component and writes only those whose fields differ (compared one by one, a copy kept,
   since Gradio sets a status's `status` in place): a component receives exactly the values it
   received before, less the repeats. Writes Gradio makes elsewhere (a validation error, a
   cleared status) do not pass through it; the next status it writes differs from the
   remembered one there and is written, as before.
8. **A refusal of an unqueued event is shown in words** (`DIRECT_REFUSALS`, in the client
   script). For an event with queue=False (the class bar's Send, joining a class, Stop) the
   server answers a gr.Error with its message, title, duration and `visible`
   (explorer/web/direct_errors.py: status 400), but Gradio's client drops all but the message
   from the status it hands the page, and the page shows a toast only for a status marked
   visible: a student whose answer was refused saw a red "Error" badge and no reason. The
   patched client passes the answer's `visible`, `duration` and `title` on, as the queued path
   does. An answer without them (Gradio's own failure, a 500 with no message) shows no toast,
   as before.

Served by `middleware()`: GET/HEAD of a patched asset (under the app's root path too) answers
its patched text; everything else goes to Gradio. Each file is found by its name pattern and its
original text; where the installed Gradio is another version, or the text is not in exactly one
file of the pattern once, that patch is not applied, Gradio serves its file, and one log line
says why.
"""
from __future__ import annotations

import hashlib
import logging
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Callable

from explorer.web.asgi import Scope, Send, answer, at_route
from explorer.web.gradio_patches import version_problem

log = logging.getLogger(__name__)

ASSETS = "templates/frontend/assets"


@dataclass(frozen=True)
class ScriptPatch:
    name: str        # what it does, for the log
    pattern: str     # the asset's file name (Gradio's build hashes the middle part)
    original: str    # Gradio's text, found exactly once in exactly one file of the pattern
    patched: str


STATUS_WRITES = ScriptPatch(
    "loading statuses written only when changed", "Blocks-*.js",
    "async update_loading_stati_state(){await Promise.all(Object.entries("
    "this.loading_stati.current).map(([e,t])=>this.update_state_cb(Number(e),"
    "{loading_status:t},!1)))}",
    # the same writes, less those equal field by field to the last one written to that component
    "async update_loading_stati_state(){let s=this.explorer_written||"
    "(this.explorer_written=new Map);await Promise.all(Object.entries("
    "this.loading_stati.current).filter(([e,t])=>{let p=s.get(e),k=Object.keys(t);"
    "if(p&&k.length===Object.keys(p).length&&k.every(n=>Object.is(t[n],p[n])))return!1;"
    "s.set(e,{...t});return!0}).map(([e,t])=>this.update_state_cb(Number(e),"
    "{loading_status:t},!1)))}")
DIRECT_REFUSALS = ScriptPatch(
    "an unqueued event's refusal shown", "index-*.js",
    "D({type:`status`,stage:`error`,endpoint:T,fn_index:C,message:e.error,broken:t,"
    "queue:!1,time:new Date})",
    "D({type:`status`,stage:`error`,endpoint:T,fn_index:C,message:e.error,broken:t,"
    "queue:!1,time:new Date,visible:e?.visible,duration:e?.duration,_title:e?.title})")
PATCHES = (STATUS_WRITES, DIRECT_REFUSALS)


def assets_dir() -> Path:
    import gradio

    return Path(gradio.__file__).resolve().parent / ASSETS


def patched_file(patch: ScriptPatch) -> tuple[str, bytes] | None:
    """(the asset's file name, its patched text), or None (logged) where `patch` does not apply."""
    problem = version_problem()
    texts = {} if problem else {path.name: path.read_text(encoding="utf-8")
                                for path in sorted(assets_dir().glob(patch.pattern))}
    found = [name for name, text in texts.items() if text.count(patch.original) == 1]
    if not problem and len(found) != 1:
        problem = f"{len(found)} of Gradio's {patch.pattern} scripts hold its text exactly once"
    if problem:
        log.warning("Gradio's page script is served without %s: %s", patch.name, problem)
        return None
    return found[0], texts[found[0]].replace(patch.original, patch.patched).encode("utf-8")


@lru_cache(maxsize=1)
def patched_scripts() -> dict[str, bytes]:
    """{asset file name: patched text} of the patches that apply."""
    return dict(filter(None, map(patched_file, PATCHES)))


class PatchedScripts:
    """ASGI middleware: GET/HEAD of a patched asset answers its patched text; every other request
    goes to the app unchanged."""

    def __init__(self, app: Callable):
        self.app = app
        self.bodies = {f"/assets/{name}": body for name, body in patched_scripts().items()}
        self.etags = {route: f'"{hashlib.sha256(body).hexdigest()[:32]}"'.encode()
                      for route, body in self.bodies.items()}

    def _route(self, scope: Scope) -> str | None:
        if scope.get("method") not in ("GET", "HEAD"):
            return None
        return next((route for route in self.bodies if at_route(scope, route)), None)

    async def __call__(self, scope: Scope, receive: Callable, send: Send) -> None:
        route = self._route(scope)
        if route is None:
            await self.app(scope, receive, send)
            return
        body, etag = self.bodies[route], self.etags[route]
        headers = [(b"content-type", b"text/javascript; charset=utf-8"),
                   (b"cache-control", b"no-cache"), (b"etag", etag),
                   (b"x-content-type-options", b"nosniff")]
        if dict(scope.get("headers") or []).get(b"if-none-match") == etag:
            await answer(send, 304, b"", headers, length=0)
            return
        await answer(send, 200, b"" if scope["method"] == "HEAD" else body, headers,
                     length=len(body))


def middleware() -> list[Any]:
    """FastAPI's `middleware` entries serving the patched scripts (for launch()'s `app_kwargs`)."""
    from starlette.middleware import Middleware

    return [Middleware(PatchedScripts)]
