"""tests/unit: the fast tier. Tiny random models only: no real checkpoint, no server, no
browser (a unit test using such a fixture is refused at collection, tests/conftest.py).

A unit test that reaches for a real checkpoint anyway (explorer.checkpoints.prepare_embedded,
through the Runtime, the hub or the CLI) fails here at once, instead of converting it for a
minute on a fresh clone or passing only where an earlier run left it converted. A test's own
stand-in registry entries pass through."""
from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def no_real_checkpoint(monkeypatch):
    from explorer.checkpoints import conversion
    from explorer.checkpoints.registry import EMBEDDED

    real, real_names = conversion.embedded, frozenset(EMBEDDED)

    def refused(name):
        if name in real_names:
            raise AssertionError(f"a unit test reached for the real checkpoint {name!r}: it "
                                 "belongs in tests/checkpoints (tests/unit must run with nothing "
                                 "converted)")
        return real(name)

    monkeypatch.setattr(conversion, "embedded", refused)
