"""tests/server: tests that serve the app (in-process through the `serve` fixtures of
tests/conftest.py, or as a process) and talk to it over HTTP or gradio_client. Every test here
is marked `server` (tests/conftest.py); the served app loads the real checkpoints."""
from __future__ import annotations

import pytest

ROPE = ("explorer.ui.tabs.rope",)
CLASSROOM = ("explorer.ui.tabs.classroom",)


@pytest.fixture(scope="module")
def served_rope(serve):
    """(demo, url) of the RoPE tab alone, served for the module."""
    with serve(ROPE) as served:
        yield served.demo, served.url


@pytest.fixture(scope="module")
def class_url(serve):
    """URL of the classroom tab alone, served for the module."""
    with serve(tabs=CLASSROOM) as served:
        yield served.url
