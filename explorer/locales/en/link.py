"""Links to a view (explorer/ui/page/views.py) and their notes, in English."""
STRINGS = {
    "link.copy": "Copy link",
    "link.note": "This link could not be opened exactly as written: {notes} The rest of the view uses its defaults.",
    "link.too_long": "the link is too long or has too many parameters, so none was read.",
    "link.bad_model": "there is no model {value!r} here.",
    "link.bad_view": "there is no view {value!r}.",
    "link.bad_value": "{name}={value!r} is not a value this view takes.",
    "link.unknown": "unknown settings ({names}) were ignored.",
    "link.bad_lesson": "there is no lesson {value!r}.",
    "link.bad_step": "step {value!r} is not one of the lesson's {n} steps; it opens at step 1.",
}
