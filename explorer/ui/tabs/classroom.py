"""The Class tab: a teacher starts a class, students join it by code. Its controls, the class
bar every page shows and the wiring between them are one piece: explorer/ui/page/classroom.py;
under them the class game "what will the model say next" (explorer/ui/page/class_game.py)."""
from explorer.ui.page import class_game
from explorer.ui.page.classroom import TITLE
from explorer.ui.page.classroom import build as build_class

__all__ = ["TITLE", "build"]


def build(ctx) -> None:
    build_class(ctx)
    class_game.build(ctx)
