"""A live class: the room store (rooms.py) and the class's answers drawn (answers.py)."""
