"""The Class tab: a teacher starts a class, students join it by code. Its controls, the class
bar every page shows and the wiring between them are one piece: explorer/ui/page/classroom.py."""
from explorer.ui.page.classroom import TITLE, build

__all__ = ["TITLE", "build"]
