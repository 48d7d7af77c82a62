"""The names of attention masks (explorer/masks.py), shown by every tab, in English."""

STRINGS: dict[str, str] = {
    # ---------------------------------------------------------------- masks (explorer/masks.py: every tab)
    'masks.causal': 'causal',
    'masks.bidirectional': 'bidirectional',
    'masks.window': 'sliding window {w}',
    'masks.sinks': '{s} {s:sink/sinks} + window {w}',
    'masks.own': "the checkpoint's own masks",
    'masks.with_sink_logit': '{mask} + sink logit b = {b:g}',
    'masks.count': '{n} × {mask}',
    'masks.list_sep': ', ',
}
