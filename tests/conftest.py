"""Shared fixtures: one Runtime, one in-process app server, a gradio_client on it, and a
headless Debian Chromium driven by Playwright.

Fixtures are lazy: a test that uses none of them imports neither gradio nor playwright.
Browser tests skip when /usr/bin/chromium is missing, unless REQUIRE_BROWSER=1 (set by .ci/run),
in which case they fail: CI must never pass by skipping them.
"""
from __future__ import annotations

import contextlib
import os
import socket
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCREENSHOTS = ROOT / "artifacts" / "screenshots"
CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
    "--disable-component-update", "--disable-sync", "--no-first-run",
]

os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


def pytest_configure(config):
    # what app.py and the CLI do at start: keep freed activation memory (models/device.py)
    from models.device import tune_cpu_allocator
    tune_cpu_allocator()


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture(scope="session")
def tiny():
    """Our twins of tiny random-init transformers models, one per family (never modified)."""
    from tests.helpers import ours_from_hf, tiny_hf
    return {kind: ours_from_hf(tiny_hf(kind)) for kind in ("llama", "mistral", "qwen2", "gemma3")}


@pytest.fixture(scope="session")
def runtime():
    """The process's Runtime (device/dtype from models.device; EXPLORER_DEVICE overrides)."""
    from explorer.runtime import Runtime

    return Runtime()


@contextlib.contextmanager
def environment(**values):
    """os.environ with these values (None: unset) for the block, then as it was."""
    before = {name: os.environ.get(name) for name in values}
    try:
        for name, value in values.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        yield
    finally:
        for name, value in before.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


@contextlib.contextmanager
def served(runtime, tabs=None, env=None):
    """URL of the app (all tabs, or the tab modules `tabs`), built with the environment
    variables `env` set (None: unset; they are read when the tabs are built) and served
    in-process on a free port until the block ends."""
    with served_demo(runtime, tabs, env) as (_, url):
        yield url


@contextlib.contextmanager
def served_demo(runtime, tabs=None, env=None):
    """(the Blocks, its URL): served() for a test that also needs the built app."""
    import app

    options = () if tabs is None else (tuple(tabs),)
    with environment(**(env or {})):
        demo = app.build_app(runtime, *options)
    port = free_port()
    demo.launch(server_name="127.0.0.1", server_port=port, prevent_thread_lock=True,
                quiet=True, **app.launch_options(*options))
    try:
        yield demo, f"http://127.0.0.1:{port}/"
    finally:
        demo.close()


@pytest.fixture(scope="session")
def app_url(runtime):
    """URL of the full app, served in-process on a free port for the whole session."""
    with served(runtime) as url:
        yield url


@pytest.fixture(scope="session")
def client(app_url):
    from gradio_client import Client

    return Client(app_url, verbose=False)


@pytest.fixture(scope="session")
def browser():
    if not Path(CHROMIUM).exists():
        message = f"{CHROMIUM} not found (apt-get install chromium chromium-driver)"
        if os.environ.get("REQUIRE_BROWSER") == "1":
            pytest.fail(message + "; REQUIRE_BROWSER=1 forbids skipping browser tests")
        pytest.skip(message)
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            yield chromium
        finally:
            chromium.close()


@pytest.fixture
def new_page(browser):
    """new_page(locale="en-US") -> a page in a fresh context (own localStorage)."""
    contexts = []

    def make(locale: str = "en-US", width: int = 1280, height: int = 900):
        context = browser.new_context(locale=locale, viewport={"width": width, "height": height})
        context.set_default_timeout(30_000)
        contexts.append(context)
        return context.new_page()

    yield make
    for context in contexts:
        context.close()


@pytest.fixture
def page(new_page):
    return new_page("en-US")


@pytest.fixture
def screenshot():
    """screenshot(page, "name") saves artifacts/screenshots/name.png (full page)."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)

    def take(page, name: str) -> Path:
        path = SCREENSHOTS / f"{name}.png"
        page.screenshot(path=str(path), full_page=True)
        return path

    return take
