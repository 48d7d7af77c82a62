STRINGS = {
    "lesson.kv.title": "KV 缓存",
    "lesson.kv.summary": "解码为什么保存键和值、一个词元的代价是多少，以及窗口如何为它封顶。",
    "lesson.kv.s1.look": "模型一次生成一个词元。每个新词元都要关注之前的所有词元，因此它们的**键和值被保存下来**，而不是重新计算。观察**缓存柱**每一步增长一个词元。",
    "lesson.kv.s1.said": "你的运行结束时上下文中有 **{tokens} 个词元**，缓存为 **{kib:.1f} KiB**：**每个词元 {per_token} 字节** = 2（K 和 V）× {layers} 层 × {kv_heads} 个 KV 头 × {head_dim} 维 × {bytes} B。在全部 {steps} 步、每一层上，测得的字节数都等于这个公式：{formula}。",
    "lesson.kv.s2.look": "一个词元的代价由模型的形状决定。运行之前，先预测 **{t} 个词元**时的缓存大小。",
    "lesson.kv.s2.ask": "当上下文中有 {t} 个词元时，缓存将占多少 KiB？",
    "lesson.kv.s2.said": "在 {t} 个词元时，你的运行的缓存为 **{answer:.1f} KiB**，在那一步直接读取。",
    "lesson.kv.s2.said_computed": "你的运行从未达到 {t} 个词元（结束时为 {tokens} 个），所以 **{answer:.1f} KiB** 是计算得到的，而不是测量值：它测得的每个词元 {per_token} B × {t}。",
    "lesson.kv.s2.why": "原因：每个词元在 {layers} 层中的每一层增加 {per_layer} B（2 × {kv_heads} × {head_dim} × {bytes} B：每个 KV 头的 K 和 V），{layers} 层合计 {per_token} B，所以缓存按直线增长：{t} × {per_token} B = {answer:.1f} KiB。查询头的数量不出现在公式中：只有 KV 头被缓存。",
    "lesson.kv.s3.look": "现在同一个模型使用 **32 的滑动窗口**：每一层只保留最后 32 个词元。观察缓存柱停止增长。",
    "lesson.kv.s3.said": "使用窗口后，你的运行达到 **{t_run} 个词元**，但每个窗口层在 {cap} 个槽位中只保存 **{held} 个词元**：**{kib:.1f} KiB**，而完整缓存需要 **{full_kib:.1f} KiB**（节省 {saved:.0f}%）。每一步每一层都恰好保存 min(t, {cap}) 个词元：{verdict}。",
}
