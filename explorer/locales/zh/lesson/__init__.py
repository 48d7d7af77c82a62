"""The lessons' texts: the panel's own (panel.py) and one module per lesson
(explorer/lessons/<name>.py), merged; every key starts with "lesson."."""
from explorer.locales import merged_strings

STRINGS = merged_strings(__name__, __path__)
