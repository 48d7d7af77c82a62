"""The app served in this process on a free port, for tests and benchmarks: the one way both
build and launch it (tests/conftest.py's server fixtures, bench/fuzz.py, bench/app_stream.py).

    with served(runtime) as app:                       # every tab
        Client(app.url)
    with served(runtime, ("explorer.ui.tabs.moe",), env={"NAME": "value"}) as app:
        ...                                            # the shell and one tab, built under env
    with served(runtime, demo=built) as app:           # a Blocks already built
        ...

Imports neither pytest nor gradio until called.
"""
from __future__ import annotations

import contextlib
import os
import socket
from dataclasses import dataclass
from typing import Any, Iterator, Mapping, Optional, Sequence

HOST = "127.0.0.1"
LAUNCH_ATTEMPTS = 3


@dataclass(frozen=True)
class Served:
    demo: Any          # the gr.Blocks being served
    url: str           # http://127.0.0.1:<port>/


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((HOST, 0))
        return sock.getsockname()[1]


@contextlib.contextmanager
def environment(**values: Optional[str]) -> Iterator[None]:
    """os.environ with these values (None: unset) for the block, then as it was."""
    before = {name: os.environ.get(name) for name in values}
    try:
        _set_environment(values)
        yield
    finally:
        _set_environment(before)


def _set_environment(values: Mapping[str, Optional[str]]) -> None:
    for name, value in values.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value


def build(runtime, tabs: Optional[Sequence[str]] = None,
          env: Optional[Mapping[str, Optional[str]]] = None):
    """app.build_app of every tab (tabs None) or of the tab modules `tabs`, with the environment
    variables `env` set while the tabs are built (they read them then)."""
    import app

    options = () if tabs is None else (tuple(tabs),)
    with environment(**(env or {})):
        return app.build_app(runtime, *options)


def launch(demo, tabs: Optional[Sequence[str]] = None) -> str:
    """Serve a built app on a free port without blocking; its URL. `tabs` as given to build:
    the launch sends the translations of those tabs."""
    import app

    options = () if tabs is None else (tuple(tabs),)
    for attempt in range(LAUNCH_ATTEMPTS):
        port = free_port()
        try:
            demo.launch(server_name=HOST, server_port=port, prevent_thread_lock=True, quiet=True,
                        **app.launch_options(*options))
            return f"http://{HOST}:{port}/"
        except ValueError:   # Gradio's start-up probe timed out (a CPU busy with other work)
            demo.close()
            if attempt == LAUNCH_ATTEMPTS - 1:
                raise
    raise AssertionError("unreachable")


@contextlib.contextmanager
def served(runtime=None, tabs: Optional[Sequence[str]] = None,
           env: Optional[Mapping[str, Optional[str]]] = None, *, demo=None) -> Iterator[Served]:
    """The app (built here from runtime, tabs and env, or `demo` as built) served until the
    block ends."""
    if demo is None:
        demo = build(runtime, tabs, env)
    url = launch(demo, tabs)
    try:
        yield Served(demo, url)
    finally:
        demo.close()
