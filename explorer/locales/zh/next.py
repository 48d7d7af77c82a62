"""下一个词元视图、logit lens 与课堂猜词游戏（explorer/nexttoken），中文。"""
STRINGS = {
    "next.err.guess": "猜测应是一个不超过 {limit} 个字符、分词器能拼写出的词。",
    "next.tab": "下一个词元",
    "next.intro": (
        "语言模型读完提示词后，会给**词表中的每个词元一个概率**：接下来是什么。本页展示顶部所选模型的这个分布、"
        "采样器保留其中哪些部分，以及它如何在各层中逐步形成（**logit lens**）。"
    ),
    "next.prompt": "提示词",
    "next.dist.section": "分布",
    "next.dist.intro": (
        "对提示词做一次前向计算，得到最后一个位置的 logits $z$；模型的分布是 "
        "$p_i = e^{z_i} / \\sum_j e^{z_j}$，其熵为 $H = -\\sum_i p_i \\log_2 p_i$ 比特。采样器先把 logits "
        "除以**温度** $T$（$T \\to 0$：总取最可能的词元；$T > 1$：更平坦），保留最可能的 **top-k** 个词元"
        "（0：全部保留），再保留概率和达到 **top-p** 的最小集合，然后重新归一化。移动控件只会在同一组 logits 上"
        "重新计算这一截断：与“生成”页的采样器是同一段代码。"
    ),
    "next.dist.run": "运行模型",
    "next.dist.temperature": "温度",
    "next.dist.top_k": "Top-k（0：不截断）",
    "next.dist.top_p": "Top-p",
    "next.dist.n": "续写条数",
    "next.dist.seed": "随机种子",
    "next.dist.tokens": "每条续写的词元数",
    "next.dist.sample": "采样续写",
    "next.dist.sample_note": (
        "每条续写都由“生成”页的采样器（models.generate，使用 KV 缓存）按上面的控件抽取，第 i 条使用种子 "
        "seed + i：相同的种子给出相同的文本。"
    ),
    "next.dist.rest": "其余所有词元",
    "next.dist.greedy": "贪心（T = 0）",
    "next.dist.sampler": "采样器（T = {t}，top-k {k}，top-p {p}）",
    "next.dist.forward": (
        "实际运行的步骤：用我们自己的 {model} 模块对 **{tokens} 个词元**做一次前向计算"
        "（{dtype}，eager，无缓存，在 {device} 上），用时 {ms:.0f} 毫秒；柱状图是其最后一个位置的分布。"
    ),
    "next.dist.top": (
        "模型最可能的下一个词元是 {token}，概率 **{p}**；它在全部 {vocab:,} 个词元上的分布的熵为 "
        "**{bits:.2f} 比特**。"
    ),
    "next.dist.kept": (
        "{sampler}保留 **{n:,} 个词元**（图中 {rows} 个里的 {shown} 个），并重新归一化；"
        "它抽样所用分布的熵为 **{bits:.2f} 比特**。"
    ),
    "next.dist.no_run": "请先运行模型：这些控件作用于它最近一次的运行结果。",
    "next.table.head": "| # | 词元 | 模型 | 采样器 |",
    "next.samples.head": "**{n} 条续写**，每条 {tokens} 个词元，{sampler}：",
    "next.samples.line": "- 种子 {seed}：第一个词元 {first}（在采样器下 p = {p}）→ {text}",
    "next.fig.dist_title": "{model} 的下一个词元分布",
    "next.fig.model": "模型（T = 1，不截断）",
    "next.fig.cut": "被截去",
    "next.fig.probability": "概率",
    "next.fig.bar_hover": "%{{y}}：%{{x:.2%}}<extra>%{{fullData.name}}</extra>",
    "next.lens.section": "Logit lens",
    "next.lens.intro": (
        "**Logit lens** 把每个块 $\\ell$ 之后的残差流送入模型自己的最终归一化层和反嵌入矩阵，就好像模型在那里停下："
        "$\\mathrm{softmax}(W_U\\,\\mathrm{norm}(h_\\ell))$。第 0 层是嵌入，最后一层正是模型输出头所读取的内容。"
        "每个格子显示该层、该位置上 lens 的首选词元，颜色表示其概率；下方是所选词元在各层的排名和概率，"
        "以及它从哪一层起一直领先。"
    ),
    "next.lens.run": "运行 lens",
    "next.lens.token": "跟踪的词元",
    "next.lens.forward": (
        "实际运行的步骤：用我们自己的 {model} 模块对 **{tokens} 个词元**做一次前向计算（float32，eager，无缓存，"
        "在 {device} 上），用时 {ms:.0f} 毫秒，并记录每个块在最后 {positions} 个位置的残差流；lens 通过模型的"
        "最终归一化层和反嵌入矩阵读取它们（{layers} 个块 + 嵌入），用时 {lens_ms:.0f} 毫秒。"
    ),
    "next.lens.check": "核对：最后一层的 lens 与模型自己在最后位置的 logits 相比，最大 |差| = **{diff}** {mark}",
    "next.lens.lead": (
        "{token} 在**第 {lead} 层**（共 {layers} 层）取得领先，此后一直是 lens 的首选词元"
        "（第 0 层排名 {rank0}，最后一层 p = {p}）。"
    ),
    "next.lens.no_lead": "{token} 不是模型的首选词元（最后一层排名 {rank}）：它从未取得领先。",
    "next.lens.agreement": (
        "在这些位置上，lens 的首选词元与模型最终首选词元的一致率：前 {third} 层为 **{first:.0f}%**，"
        "输出前的最后 {third} 层为 **{last:.0f}%**。论断 C22 要求在一段给定文本上至少上升 {rise:.0f} 个百分点（见论断看板）。"
    ),
    "next.fig.lens_title": "{model} 的 logit lens",
    "next.fig.lens_subtitle": "各层各位置的首选词元",
    "next.fig.position": "位置：词元",
    "next.fig.layer": "层（0 = 嵌入）",
    "next.fig.cell_hover": "第 %{{y}} 层，%{{x}}<br>首选：%{{customdata}}（%{{z:.1%}}）<extra></extra>",
    "next.fig.ranks_title": "{token} 在各层的情况",
    "next.fig.rank_axis": "排名（1 = 首选）",
    "next.fig.rank": "排名",
    "next.fig.token_p": "该词元的概率",
    "next.fig.agreement": "与最终首选词元的一致率",
    "next.fig.rank_hover": "第 %{{x}} 层：排名 %{{y}}<extra></extra>",
    "next.fig.p_hover": "第 %{{x}} 层：%{{y:.1%}}<extra>%{{fullData.name}}</extra>",
    "next.fig.lead": "从第 {layer} 层起领先",
    "next.m.diff": "最大 |lens − logits|",
    "next.m.first": "一致率，前三分之一",
    "next.m.last": "一致率，后三分之一",
}
