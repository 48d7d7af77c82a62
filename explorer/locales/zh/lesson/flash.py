"""FlashAttention 课程（explorer/lessons/flash.py）的中文文本。"""
STRINGS = {
    "lesson.flash.title": "FlashAttention",
    "lesson.flash.summary": "分块计算的精确 attention：它跳过了什么、为什么没有任何近似，以及省下的访存。",
    "lesson.flash.unit": "个块",
    "lesson.flash.s1.look": "FlashAttention 把 n × n 的分数矩阵切成 {bq} 个 query × {bk} 个 key 的块，在片上一块一块地算，并用 online softmax 归一化。这里一个真实的 head 在 **{n} 个词元**上运行；中间的图逐块播放计算顺序。在 causal mask 下，有些块里一个可见的 key 都没有。",
    "lesson.flash.s1.ask": "n = {n}，query 块大小 {bq}，key 块大小 {bk}，在 causal mask 下：FlashAttention 会跳过多少个块？",
    "lesson.flash.s1.said": "第 {layer} 层、第 {head} 个头：共 **{tiles} 个块**，其中 **{answer} 个被跳过**，{partial} 个在块内套用 mask 计算，{full} 个整块计算；引擎跳过的恰好是 mask 清空的那些块：{match}。分块输出与朴素实现相差 **{diff:.1e}**（不超过 {tol:.0e}：{exact}）。第 {row} 行的 running max 上升了 {rises} 次，输出仍与完整 softmax 相同：{online}。",
    "lesson.flash.s1.why": "原因：{qb} 个 query 块 × {kb} 个 key 块 = {tiles} 个块。在 causal mask 下，如果一个块的第一个 key 在它最后一个 query 之后，这个块就是空的：第 j 个 key 块从 j·{bk} 开始，第 i 个 query 块在 (i+1)·{bq} − 1 结束。按 query 块逐个数：{per_block} = {answer}。被对角线穿过的 {partial} 个块要在块内套用 mask 计算。",
    "lesson.flash.s2.look": "它**不是近似**。这项检查在随机输入上比较分块实现、朴素实现和 PyTorch 的 SDPA，覆盖多种长度、不能整除 n 的块大小，以及四种 mask。",
    "lesson.flash.s2.said": "**{cases} 个用例**（n = {ns}；{blocks} 种块大小；{masks} 种 mask）：分块输出与朴素实现最多相差 **{tn:.1e}**，与 SDPA 相差 {ts:.1e}；超过 {tol:.0e} 的用例有 {off} 个：{verdict}。这些差异只是 float32 的舍入：同样的项换了顺序相加。",
    "lesson.flash.s3.look": "FlashAttention 省下的是**访存**，不是算术：朴素实现把 n × n 的分数和概率写进慢速显存再读回来；分块实现只写回 n × d 的输出。图中统计搬运的字节数，并测量额外内存随 n 的增长。",
    "lesson.flash.s3.said": "在 n = {n}（d = {d}，块 {bq} × {bk}）时，朴素实现与慢速内存之间搬运 **{naive_mb:.2f} MB**，分块实现 **{tiled_mb:.2f} MB**：少了 {ratio:.1f} 倍。两者写回的字节分别按 n^{w_naive:.2f} 和 n^{w_tiled:.2f} 增长。在这台机器上从 n = {m0} 到 {m1} 测得的额外内存，朴素实现按 **n^{mem_naive:.2f}** 增长，分块实现按 **n^{mem_tiled:.2f}**（C16 要求前者至少 {quadratic}、后者至多 {linear}）：{verdict}。",
}
