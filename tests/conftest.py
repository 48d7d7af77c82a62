"""Shared fixtures: tiny random models, one Runtime and the real SmolLM2 it loads, the whole app
built once and served in-process (bench/serve.py) for the session, a gradio_client on it, and a
headless Debian Chromium driven by Playwright.

The tiers are folders (pytest.ini): tests/unit, tests/checkpoints, tests/server, tests/browser.
Every test in tests/checkpoints, tests/server or tests/browser is marked `checkpoint`, `server`
or `browser` by its folder, and a test anywhere that uses a fixture of a heavier tier (below) is
marked for that tier too; a test in tests/unit that uses one is an error at collection: it
belongs in the heavier folder. tests/unit/conftest.py also stops a unit test that reaches for a
real checkpoint, so the fast tier runs on a fresh clone with nothing converted.

Fixtures are lazy: a test that uses none of them imports neither gradio nor playwright.
Browser tests skip when /usr/bin/chromium is missing, unless REQUIRE_BROWSER=1 (set by .ci/run),
in which case they fail: CI must never pass by skipping them.
"""
from __future__ import annotations

import os
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

TESTS = Path(__file__).resolve().parent
# tests/<folder>/... -> the marker every test in it gets (tests/unit: none; the fast tier)
FOLDER_TIERS = {"checkpoints": "checkpoint", "server": "server", "browser": "browser"}
# A test that uses one of these fixtures, directly or through another fixture, gets the marker:
# `make test-fast` leaves out what needs a checkpoint, a server or a browser wherever it is.
CHECKPOINT_FIXTURES = frozenset({"runtime", "full_app", "smol"})
SERVER_FIXTURES = frozenset({"serve", "served_app", "app_url", "client"})
BROWSER_FIXTURES = frozenset({"browser"})
FIXTURE_TIERS = {"checkpoint": CHECKPOINT_FIXTURES, "server": SERVER_FIXTURES,
                 "browser": BROWSER_FIXTURES}


def pytest_configure(config):
    # what app.py and the CLI do at start: keep freed activation memory (models/device.py)
    from models.device import tune_cpu_allocator
    tune_cpu_allocator()


def pytest_collection_modifyitems(config, items):
    misplaced = []
    for item in items:
        path = Path(item.path).resolve()
        folder = path.relative_to(TESTS).parts[0] if path.is_relative_to(TESTS) else ""
        if folder.endswith(".py"):
            misplaced.append(f"{item.nodeid} is in no tier's folder")
        elif folder in FOLDER_TIERS:
            item.add_marker(FOLDER_TIERS[folder])
        used = set(getattr(item, "fixturenames", ()))
        for tier, fixtures in FIXTURE_TIERS.items():
            if used & fixtures:
                item.add_marker(tier)
                if folder == "unit":
                    misplaced.append(f"{item.nodeid} uses {', '.join(sorted(used & fixtures))}")
    if misplaced:
        raise pytest.UsageError("every test lives in its tier's folder, and tests/unit (the fast "
                                "tier) uses no fixture of a heavier one; move these to "
                                "tests/unit, tests/checkpoints, tests/server or tests/browser:"
                                "\n  " + "\n  ".join(misplaced))


def forget_class_limits() -> None:
    """Forget the classes started and the room codes missed per address (the app's ROOMS, served
    in this process): every test's pages come from 127.0.0.1, and the tests of a tier together
    start more classes than one address may in an hour."""
    from explorer.classroom.rooms import ROOMS
    with ROOMS._lock:
        ROOMS._misses._times.clear()
        ROOMS._created._times.clear()


@pytest.fixture(autouse=True)
def browser_class_limits(request):
    """A browser test starts with the address's class limits forgotten (forget_class_limits)."""
    if request.node.get_closest_marker("browser") is not None:
        forget_class_limits()
    yield


@pytest.fixture(autouse=True)
def torch_settings_restored():
    """torch's process-wide intra-op threads and deterministic-algorithms flag as they were
    before each test: a test that sets them (explorer/moe/train.py sets both, as its command
    does) leaves the next test as it would run alone, in any order."""
    import torch

    threads = torch.get_num_threads()
    deterministic = (torch.are_deterministic_algorithms_enabled(),
                     torch.is_deterministic_algorithms_warn_only_enabled())
    yield
    torch.set_num_threads(threads)
    torch.use_deterministic_algorithms(deterministic[0], warn_only=deterministic[1])


@pytest.fixture(scope="session")
def tiny():
    """Our twins of tiny random-init transformers models, one per family (never modified)."""
    from tests.helpers import ours_from_hf, tiny_hf
    return {kind: ours_from_hf(tiny_hf(kind)) for kind in ("llama", "mistral", "qwen2", "gemma3")}


@pytest.fixture(scope="module")
def tiny_llama():
    """Our twin of a tiny random Llama: 3 layers, d 64, 4 query heads of 16, 2 KV heads, ff 96,
    vocab 97, untied embeddings (one per module: a test may change it)."""
    from tests.helpers import ours_from_hf, tiny_hf
    return ours_from_hf(tiny_hf("llama"))


@pytest.fixture(scope="module")
def tiny_gemma():
    """Our twin of a tiny random Gemma 3: 6 layers, 5 sliding (window 5) then 1 global; d 64,
    4 query heads of 32, 1 KV head, ff 96, vocab 97, tied embeddings (one per module)."""
    from tests.helpers import ours_from_hf, tiny_hf
    return ours_from_hf(tiny_hf("gemma3"))


@pytest.fixture(scope="session")
def runtime():
    """The process's Runtime (device/dtype from models.device; EXPLORER_DEVICE overrides)."""
    from explorer.runtime import Runtime

    return Runtime()


@pytest.fixture(scope="module")
def smol(runtime):
    """The real SmolLM2-135M-Instruct as the runtime loads it (converted on first use)."""
    return runtime.get("smollm2-135m-instruct")


@pytest.fixture(scope="session")
def serve(runtime):
    """serve(tabs=None, env=None, runtime=<the session's>, demo=None): a context manager
    serving the app in-process on a free port until its block ends, yielding
    bench.serve.Served (.demo, .url).
    For a test that needs its own build: a subset of tabs, environment variables read when
    the tabs are built, another Runtime, or a Blocks it built itself. A test using this
    fixture (directly or through another) is marked `server`."""
    from bench.serve import served

    def serve_app(tabs=None, env=None, runtime=runtime, demo=None):
        return served(runtime, tabs, env, demo=demo)

    return serve_app


@pytest.fixture(scope="session")
def full_page(runtime):
    """The whole app, built once for the session (not served): app.Page (.blocks, .views,
    .warm). A test that only reads the built app shares it instead of building its own."""
    import app

    return app.build_page(runtime)


@pytest.fixture(scope="session")
def full_app(full_page):
    """full_page's Blocks."""
    return full_page.blocks


@pytest.fixture(scope="session")
def served_app(full_app, serve):
    """full_app served in-process on a free port for the whole session (bench.serve.Served)."""
    with serve(demo=full_app) as served:
        yield served


@pytest.fixture(scope="session")
def app_url(served_app):
    """URL of the full app, served in-process for the whole session."""
    return served_app.url


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
