"""RoPE 课程（explorer/lessons/rope.py）的中文文本。"""
STRINGS = {
    "lesson.rope.title": "RoPE：旋转位置编码",
    "lesson.rope.summary": "每对维度以自己的速度旋转；分数只取决于距离；base 改变了什么。",
    "lesson.rope.unit": "个词元",
    "lesson.rope.s1.look": "RoPE 把 q 和 k 的每一对维度旋转一个与位置成正比的角度，每一对的频率不同：θᵢ = base^(−2i/d)。左图是四个 base 下每一对的 θ，右图是**波长**：一对维度转完一整圈需要多少个词元，与上下文长度（虚线）对比。",
    "lesson.rope.s1.ask": "在你的模型自己的 base 下，转得最慢的那一对维度转完一圈需要多少个词元？",
    "lesson.rope.s1.said": "在 base **{base}** 下（{title}：head 维度 {head_dim}，共 {pairs} 对），**{pairs} 对中有 {full} 对**在 {context} 个词元内转满一圈，{never} 对一圈也转不完。最慢的一对每 **{answer:,.0f} 个词元**才转一圈。最大的 base（{high}）与最小的（{low}）相比，第 0 对保持不变（θ₀ 之比 {theta0:.6f}），其余 {n} 对中有 {slowed} 对变慢：{verdict}。",
    "lesson.rope.s1.why": "原因：第 i 对每个词元转 θᵢ = base^(−2i/d)。最慢的是最后一对，i = {last}：θ = {base}^(−{exponent:.4f}) = {theta:.3g} 弧度/词元，所以转一圈需要 2π/θ = {answer:,.0f} 个词元，是上下文 {context} 的 {times:.1f} 倍。第 0 对无论 base 多大，每个词元都转 1 弧度（base⁰ = 1）。",
    "lesson.rope.s2.look": "现在看模型**真实的 q 和 k**，在 RoPE 之前截取。把同一个 q 和 k 放到每一对位置 (m, n) 上并画出分数：如果分数只取决于 n − m，左图的每条对角线都是常数。右图**只旋转 q**。",
    "lesson.rope.s2.said": "第 {layer} 层、第 {head} 个头：第 {q_token} 个词元的 q 与第 {k_token} 个词元的 k，放在 {n} × {n} 个位置上。两边都旋转时，对角线上最大的波动是最大分数的 **{both:.1e}**（不超过 {tol:.0e}：{toeplitz}）；⟨R_m q, R_n k⟩ = ⟨q, R_(n−m) k⟩ 的误差为 {identity:.1e}（{identity_ok}）；我们的旋转复现了模型自己的 q 和 k：{reproduces}。只旋转 q 时，对角线波动达到最大分数的 **{one:.3f}**，是前者的 {ratio:.1e} 倍：分数里留下了绝对位置（{absolute}）。",
    "lesson.rope.s3.look": "base 越大，各对维度转得越慢，远处位置越不容易混淆。那么给训练好的模型直接换 base 有用吗？这里真实模型读同一段文本，每一层的 base 都被替换；**困惑度**越低越好。",
    "lesson.rope.s3.said": "在 {tokens} 个词元上，按原样训练的模型困惑度为 **{ppl0:.2f}**。换了 base 之后（困惑度，以及它与原模型之比：全文、最后四分之一）：{changed}。每一次更换都让困惑度至少上升 {rise:.0f}%：{verdict}。这次运行只占用模型 {context:,} 个位置中的 {tokens:,} 个，所以它检验的是训练好的模型换一个 base 后能否把同一段文本读得一样好，而不是更大的 base 能否看得更远：那需要用这个 base 训练（或微调）过的模型。",
}
