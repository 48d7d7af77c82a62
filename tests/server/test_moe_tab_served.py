"""The MoE tab through gradio_client (its handlers: tests/unit/test_moe_tab.py)."""
from __future__ import annotations

import pytest

from tests.unit.test_moe_tab import TEXT, moe_runtime  # noqa: F401 -- moe_runtime: a fixture


@pytest.fixture(scope="module")
def app_client(moe_runtime, serve):
    """The app with the MoE tab alone, served in-process, and a gradio_client on it."""
    from gradio_client import Client

    with serve(("explorer.ui.tabs.moe",), runtime=moe_runtime) as served:
        yield Client(served.url, verbose=False)


def test_gradio_client_routes_and_compares(app_client):
    heat, summary = app_client.predict("explorer-moe-none", TEXT, 3, "en", api_name="/moe_route")
    assert "nats/token" in summary
    heat_zh, summary_zh = app_client.predict("explorer-moe-none", TEXT, 3, "zh", api_name="/moe_route")
    assert "nats/词元" in summary_zh
    plot, whatif = app_client.predict("explorer-moe-bias", TEXT, 4, False, "en", api_name="/moe_what_if")
    assert "k = 4" in whatif


def test_gradio_client_bad_input(app_client):
    from gradio_client.exceptions import AppError

    # the slider's own bound (8, the experts of the shipped models) answers first
    with pytest.raises(AppError, match="greater than maximum value 8"):
        app_client.predict("explorer-moe-bias", TEXT, 12, True, "en", api_name="/moe_what_if")
    with pytest.raises(AppError, match="empty"):
        app_client.predict("explorer-moe-bias", "   ", 2, True, "en", api_name="/moe_what_if")
    with pytest.raises(AppError, match="not an MoE layer|between 0 and 3"):
        app_client.predict("explorer-moe-bias", TEXT, 9, "en", api_name="/moe_route")
