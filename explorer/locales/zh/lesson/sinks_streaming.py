"""注意力汇点与 StreamingLLM 课程（explorer/lessons/sinks_streaming.py），中文。"""
STRINGS = {
    "lesson.sinks.title": "注意力汇点与 StreamingLLM",
    "lesson.sinks.summary": "注意力头把用不上的权重放在哪里，以及为什么滑动缓存必须保留开头的词元。",
    "lesson.sinks.s1.look": "网格显示在一段 {tokens} 个词元的文本上，每一层（行）、每个头（列）的查询放在**第一个词元**上的注意力比例。softmax 的权重之和必须为 1。运行之前先预测。",
    "lesson.sinks.s1.ask": "在后一半的层中，注意力头平均把多少比例（%）的注意力放在第一个词元上？",
    "lesson.sinks.s1.said": "在第 {later} 层到第 {last} 层，注意力头把 **{answer:.1f}%** 的注意力放在词元 0 上；若在它们看得到的键上均匀分配，只有 {uniform:.1f}%。**{n} 个头中有 {k} 个**（{share:.0f}%）在那里放了至少 {factor:g} 倍于均匀份额的注意力：它们是汇点头；至少 {need:.0f}% 是汇点头时，汇点成立：{verdict}。",
    "lesson.sinks.s1.why": "原因：从位置 {first_query} 开始，一行查询能看到 q + 1 个键，所以均匀注意力只给词元 0 分到 1 / (q + 1)，各行平均为 {uniform:.1f}%。注意力头在那里放了它的 {ratio:.0f} 倍：一个没有有用内容可看的头仍然必须分配它的权重（每行之和为 1），模型学会了把它停放在每个查询都能看到的第一个词元上。",
    "lesson.sinks.s2.look": "第 {layer} 层在**汇点掩码**下的注意力图：每个查询只能看到最后 {window} 个词元和最开头的 {sinks} 个（汇点），中间的都看不到。右侧的掩码显示可见的键；看注意力图的第一列。",
    "lesson.sinks.s2.said": "在窗口之后的 {rows} 行中，词元 0 只作为汇点可见，第 {layer} 层的注意力头把 **{first:.1f}%** 的注意力放在它上面，而在它们能看到的 {window} + {sinks} 个键上均匀分配只有 {uniform:.1f}%。被逐出的键得到的恰好是 0（被遮住位置的最大概率为 {masked_max:g}）：{verdict}。",
    "lesson.sinks.s3.look": "在一段长文本的前 {tokens} 个词元上运行 StreamingLLM：完整缓存、只有 **{window} 的窗口**（开头的词元被逐出），以及 {sinks} 个**汇点加窗口**。图中画出沿文本的困惑度；虚线标出窗口的位置。",
    "lesson.sinks.s3.said": "在词元 {past} 之后，完整缓存的困惑度为 **{full:.1f}**。只有窗口时为 **{window_ppl:.1f}**，差了 {window_ratio:.1f} 倍（至少 {collapse:g} 倍算作崩溃：{collapses}）。保留 {sinks} 个汇点时为 **{sinks_ppl:.1f}**，是完整缓存的 {sinks_ratio:.2f} 倍，弥补了 {closed:.0f}% 的差距。逐出开头的词元有害，而汇点有帮助：{verdict}。汇点把困惑度拉回到完整缓存的 {degrade:g} 倍以内：{recovers}。",
}
