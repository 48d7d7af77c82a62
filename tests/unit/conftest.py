"""tests/unit: the fast tier. Tiny random models only: no real checkpoint, no server, no
browser (a unit test using such a fixture is refused at collection, tests/conftest.py).

A unit test that reaches for a real checkpoint anyway (explorer.checkpoints.prepare_embedded,
through the Runtime, the hub or the CLI) fails here at once, instead of converting it for a
minute on a fresh clone or passing only where an earlier run left it converted."""
from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def no_real_checkpoint(monkeypatch):
    from explorer.checkpoints import conversion

    real = conversion.embedded

    def refused(name):
        real(name)   # an unknown name is still the registry's own error
        raise AssertionError(f"a unit test reached for the real checkpoint {name!r}: it belongs "
                             "in tests/checkpoints (tests/unit must run with nothing converted)")

    monkeypatch.setattr(conversion, "embedded", refused)
