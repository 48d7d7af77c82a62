"""指向某个视图的链接（explorer/ui/page/views.py）及其提示，中文。"""
STRINGS = {
    "link.copy": "复制链接",
    "link.note": "此链接无法完全按原样打开：{notes} 视图的其余部分使用默认值。",
    "link.too_long": "链接过长或参数过多，因此未读取任何参数。",
    "link.bad_model": "这里没有名为 {value!r} 的模型。",
    "link.bad_view": "没有名为 {value!r} 的视图。",
    "link.bad_value": "{name}={value!r} 不是此视图可接受的值。",
    "link.unknown": "已忽略未知的设置（{names}）。",
    "link.bad_lesson": "没有名为 {value!r} 的课程。",
    "link.bad_step": "第 {value!r} 步不在本课程的 {n} 步之内；从第 1 步打开。",
}
