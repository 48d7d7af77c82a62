"""What the app sets up at start that needs no server (the Gradio patches run by
app.build_app: explorer/web/gradio_patches.py)."""
import sys

import pytest

from explorer.web import gradio_patches


def test_absent_plot_backends_fail_at_once_and_installed_ones_stay(monkeypatch):
    monkeypatch.delitem(sys.modules, "no_such_plot_backend_xyz", raising=False)
    installed = sys.modules.get("plotly")
    gradio_patches.skip_absent_plot_backends(("no_such_plot_backend_xyz", "plotly"))
    try:
        assert sys.modules["no_such_plot_backend_xyz"] is None
        with pytest.raises(ImportError):
            import no_such_plot_backend_xyz  # noqa: F401
        assert sys.modules.get("plotly") is installed  # an installed package is never marked
        import plotly  # noqa: F401
    finally:
        sys.modules.pop("no_such_plot_backend_xyz", None)
