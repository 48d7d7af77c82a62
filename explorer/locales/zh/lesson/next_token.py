"""The next-token lesson (explorer/lessons/next_token.py), in Chinese."""
STRINGS = {
    # layer l of the lens is the residual stream after l blocks: the guess is a count of blocks
    "lesson.next.unit": "个块",
    "lesson.next.title": "模型接下来说什么",
    "lesson.next.summary": "下一个词元的分布、温度对它的作用，以及答案在哪一层形成。",
    "lesson.next.s1.look": "语言模型并不直接写出一个词：它给**词表中每个词元一个概率**。看这些柱：提示词之后最可能的几个词元，其余所有词元合成一根柱。",
    "lesson.next.s1.said": "{model} 给 `{token}` 的概率是 **{p}%**，其次是 `{second}`（{p2}%）；图中 {rows} 个之外的所有词元共占 {rest}%。它在 {vocab:,} 个词元上的熵为 **{bits:.2f} 比特**（1 比特相当于在两个词元之间抛一枚公平的硬币）。",
    "lesson.next.s2.look": "采样器在 softmax 之前把 logits 除以**温度**。这里 T = {t}：小于 1 时分布变得更尖锐。比较橙色柱和蓝色柱。",
    "lesson.next.s2.said": "在 T = {t} 时，`{token}` 从 {p}% 升到 **{kept_p}%**，`{second}` 从 {p2}% 降到 {kept_p2}%；熵从 {bits:.2f} 降到 **{kept_bits:.2f} 比特**。没有词元被截去（保留 {n_kept:,} 个）：温度改变形状，top-k 和 top-p 才做截断。自己移动滑块试试：柱状图会随之改变，无需重新做前向计算。",
    "lesson.next.s3.look": "**Logit lens** 把每一层的残差流送入模型自己的最终归一化层和反嵌入矩阵来读取。在“{prompt}”上，模型的答案就是最后一层的首选词元。运行之前，请预测：它从哪一层起一直是 lens 的首选词元？",
    "lesson.next.s3.ask": "经过多少个块之后，最终的词元成为 lens 的首选词元并一直保持（第 ℓ 层 = 经过 ℓ 个块之后；0 = 在嵌入处就已是首选）？",
    "lesson.next.s3.said": "在 {model} 中，`{token}` 在**第 {answer} 层**（共 {layers} 层）取得领先：第 0 层排名 {rank0}，第 {mid} 层排名 {rank_mid}，到输出时成为首选，p = {p}%。lens 的最后一层与模型的 logits 完全相等（最大 |差| = {diff}）{exact}。在提示词的各个位置上，lens 与最终预测的一致率在前 {third} 层为 {first}%，在最后 {third} 层为 {last}%。",
    "lesson.next.s3.why": "原因：每个块都把自己的更新加到残差流上；通过反嵌入矩阵读取时，前面的层看起来仍像输入词元（或噪声），只有后面的块写入之后，最终答案才胜出。这里它从排名 {rank0} 上升，在第 {answer} 层（共 {layers} 层）成为首选。",
}
