"""滑动窗口与深度课程（explorer/lessons/windows_depth.py），中文。"""
STRINGS = {
    "lesson.win.title": "滑动窗口与深度",
    "lesson.win.summary": "一个词元能穿过多少层叠的窗口层传到多远，以及局部层能省下什么。",
    "lesson.win.s1.look": "探针在每一层强制使用 **{window} 的窗口**，替换最后一个位置之前距离为 d 的词元，并标出最后一个位置的输出发生变化的每一层。彩色格子表示有变化；灰色格子逐位相同。红色阶梯是规则 L(w − 1) + 1。",
    "lesson.win.s1.said": "当 w = {window} 时，一层只能把信息向后传 {step} 个位置，所以 {layers} 层之后，规则给出的可达范围是 **{rule} 个词元**。你的探针：距离为 **{farthest}** 的词元在最后一层之后仍然改变了最后一个位置，而距离为 **{nearest}** 的词元始终没有。在 {total} 个距离中，有 {agree} 个的首个变化层与规则一致。同一规则给出 Mistral 7B（{mistral_layers} 层，w = {mistral_window:,}）的可达范围为 {mistral:,} 个词元，约 131K：{verdict}。",
    "lesson.win.s2.look": "现在在一段 **{tokens} 个词元**的文本上使用 **{window} 的窗口**：第一个词元位于最后一个词元之前 {tokens} − 1 个位置。预测它何时能传到。",
    "lesson.win.s2.ask": "窗口为 {window} 时，第一个词元（词元 0）在经过多少层之后才第一次改变最后一个位置的状态？",
    "lesson.win.s2.said": "词元 0 在 **{distance} 个位置**之前。你的探针看到它在**第 {block} 块**（图中从 0 开始计数）第一次改变最后一个位置：即经过 **{answer} 层**之后。规则给出 {rule_layers} 层：{verdict}（在 {total} 个探测距离中，规则与测量有 {agree} 个一致）。",
    "lesson.win.s2.why": "原因：每个窗口层最多把信息传递 w − 1 = {step} 个位置，所以 l 层可达 l × {step}。词元 0 在 {distance} 之前：{distance} / {step} = {quotient:.2f}，向上取整为 {rule_layers} 层。少一层只能到达 {short} 个位置，不到 {distance}：窗口为 w 时，一层只能看到之前 w − 1 个位置，而不是 w 个。",
    "lesson.win.s3.look": "Gemma 3 把**局部**层（滑动窗口）和**全局**层交错排列。色条显示每一层的类型；表格根据每一层的掩码和缓存公式，统计随着文本变长，缓存和注意力分数的条目数。",
    "lesson.win.s3.said": "{title}：共 {layers} 层，其中 **{n_local} 个局部层**，窗口为 {window}；**{n_global} 个全局层**。由每一层的掩码和缓存公式计算（这里不运行前向）：局部层的缓存最多保存 {local_tokens:,} 个词元（{local_mib:.2f} MiB），而全局层随文本增长（{n:,} 个词元时为 {global_mib:.2f} MiB）。在 {n:,} 个词元时，整个缓存为 **{cache_mib:.1f} MiB**，是全部使用全局层所需 {full_mib:.1f} MiB 的 {cache_share:.0f}%；掩码需要的注意力分数条目是全部使用全局层时的 {scores_share:.0f}%（eager 路径会计算全部 t × s 个条目，再把它们遮住）。",
}
