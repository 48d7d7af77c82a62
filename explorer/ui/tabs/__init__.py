"""The tabs of the app, in display order, and the registry that imports them.

A tab module `explorer/ui/tabs/<topic>.py` has `TITLE` (the locale key of its title) and
`build(ctx: TabContext)` (the contract: explorer/ui/__init__.py). Adding a tab = writing its
module and adding its name to TAB_MODULES. A name that cannot be imported, or a module without
the contract, stops the app at start with the module's name: a tab never disappears silently.
"""
from __future__ import annotations

import importlib
from collections.abc import Sequence
from types import ModuleType

TAB_MODULES: tuple[str, ...] = (
    "explorer.ui.tabs.generate",
    "explorer.ui.tabs.next_token",
    "explorer.ui.tabs.attention",
    "explorer.ui.tabs.rope",
    "explorer.ui.tabs.flash",
    "explorer.ui.tabs.architecture",
    "explorer.ui.tabs.moe",
    "explorer.ui.tabs.claims",
    "explorer.ui.tabs.classroom",
    "explorer.ui.tabs.about",
)


class TabNotFound(ImportError):
    """A tab module named in the app's list that does not exist."""


def available_tabs(names: Sequence[str] = TAB_MODULES) -> list[ModuleType]:
    """The tab modules `names`, imported and checked against the contract, in that order.
    Raises TabNotFound for a name that is no module, TypeError for a module without the
    contract; an error inside a module is raised as it is."""
    tabs = []
    for name in names:
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as error:
            if error.name is not None and name.startswith(error.name):   # the tab itself is missing
                raise TabNotFound(f"tab module {name} does not exist (explorer/ui/tabs/__init__.py)") from error
            raise
        for attribute in ("TITLE", "build"):
            if not hasattr(module, attribute):
                raise TypeError(f"tab module {name} has no {attribute} (see explorer/ui/__init__.py)")
        tabs.append(module)
    return tabs
