"""The names of attention masks (explorer/masks.py), shown by every tab, in Simplified Chinese (简体中文)."""

STRINGS: dict[str, str] = {
    # ---------------------------------------------------------------- masks (explorer/masks.py: every tab)
    'masks.causal': '因果',
    'masks.bidirectional': '双向',
    'masks.window': '滑动窗口 {w}',
    'masks.sinks': '{s} 个汇 + 窗口 {w}',
    'masks.own': '检查点自身的掩码',
    'masks.with_sink_logit': '{mask} + 汇 logit b = {b:g}',
    'masks.count': '{n} × {mask}',
    'masks.list_sep': '，',
}
