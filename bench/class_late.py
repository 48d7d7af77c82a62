"""Students who arrive late or reload their page in the middle of bench/class_siege.py, each as
its page does, from the class's own address (SHARED) while the attacker probes codes from it:

- typed: a new page presses Join with the code typed in (/class_join);
- link: a new page opened at the student link the teacher's page shows (its QR code's:
  ?room=CODE&invite=...), its load event (the class's `on_load`, through the queue with the
  page's query string, as the browser's client sends it), then Join;
- reload: a student of the class reloads (?room=CODE, the member token from the browser's
  storage as the load event's input).

The address is past its misses for most of a siege, so `typed` is refused (`probes`: wait a
minute, or use the link); `link` and `reload` must join (explorer/classroom/rooms.py)."""
from __future__ import annotations

import json
import secrets
from typing import Any, Optional

from bench.class_attacker import SHARED, refusal

LOAD_API = "on_load"         # the class's load event (explorer/ui/page/classroom.py)


def open_page(http, url: str, query: str, stored: Any = None) -> tuple[str, Optional[list]]:
    """(session, the load event's outputs, None when it failed) of a page opened at url+query
    whose browser storage holds `stored`."""
    dependencies = http.get(f"{url}config").json()["dependencies"]
    index = next(i for i, d in enumerate(dependencies) if d.get("api_name") == LOAD_API)
    session = secrets.token_hex(8)
    body = {"data": [stored, "en", None], "fn_index": index, "session_hash": session,
            "event_data": None, "trigger_id": None}
    http.post(f"{url}gradio_api/queue/join{query}", json=body).raise_for_status()
    with http.stream("GET", f"{url}gradio_api/queue/data?session_hash={session}") as stream:
        for line in stream.iter_lines():
            if line.startswith("data:"):
                message = json.loads(line[5:])
                if message.get("msg") == "process_completed":
                    return session, (message.get("output") or {}).get("data") if message.get("success") else None
    return session, None


def late_arrivals(url: str, code: str, invite: str, token: str) -> dict[str, str]:
    """{"typed" | "link" | "reload": "ok" or the refusal}."""
    import httpx

    outcomes = {}
    with httpx.Client(timeout=60, headers={"x-forwarded-for": SHARED}) as http:
        join = f"{url}gradio_api/run/class_join"
        body = {"data": [code, "typed", None, "en"], "session_hash": secrets.token_hex(8)}
        outcomes["typed"] = refusal(http.post(join, json=body))
        session, loaded = open_page(http, url, f"?room={code}&invite={invite}")
        # outputs: [state (kept on the server: null here), stored, timer, code, message, ...]
        if loaded is None or str(loaded[4]).startswith("⚠"):
            outcomes["link"] = f"load refused: {loaded and loaded[4]}"
        else:
            body = {"data": [code, "link", None, "en"], "session_hash": session}
            outcomes["link"] = refusal(http.post(join, json=body))
        _, loaded = open_page(http, url, f"?room={code}", stored={"code": code, "token": token})
        rejoined = loaded is not None and isinstance(loaded[1], dict) and loaded[1].get("token") == token
        outcomes["reload"] = "ok" if rejoined else f"refused: {loaded and loaded[4]}"
    return outcomes
