"""The lessons' texts: the panel's own (lesson/panel.py) and one module per lesson
(explorer/lessons/<name>.py), merged here; every key starts with "lesson."."""
import importlib
import pkgutil

STRINGS: dict = {}
for _module in sorted(m.name for m in pkgutil.iter_modules(__path__)):
    for _key, _text in importlib.import_module(f"{__name__}.{_module}").STRINGS.items():
        if _key in STRINGS:
            raise ValueError(f"lesson text {_key!r} defined twice")
        STRINGS[_key] = _text
