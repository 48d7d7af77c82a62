"""The served app serves static files and refuses the repository (the locks and the rest:
tests/unit/test_supply_chain.py)."""
from __future__ import annotations

from pathlib import Path

from tests.unit.test_supply_chain import ROOT


def test_the_server_serves_static_and_refuses_the_repo(app_url):
    import httpx

    style = httpx.get(f"{app_url}gradio_api/file={ROOT / 'static' / 'style.css'}", timeout=30)
    assert style.status_code == 200 and style.text.strip()
    for path in (ROOT / "app.py", ROOT / "requirements.txt", Path("/etc/passwd"),
                 ROOT / "static" / ".." / "app.py"):
        answer = httpx.get(f"{app_url}gradio_api/file={path}", timeout=30)
        assert answer.status_code in (403, 404), (path, answer.status_code)
