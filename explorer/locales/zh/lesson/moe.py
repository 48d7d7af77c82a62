"""混合专家课程（explorer/lessons/moe.py）的中文文本。"""
STRINGS = {
    "lesson.moe.title": "混合专家（MoE）",
    "lesson.moe.summary": "router 把每个词元送到 N 个 expert 中的 k 个；不做均衡时，少数 expert 会接走大部分词元。",
    "lesson.moe.s1.look": "MoE 层把前馈网络换成 N 个 expert，由 **router** 把每个词元送到得分最高的 k 个。热图的横轴是你文本中的每个词元，纵轴是每个 expert，颜色是 router 的得分，被选中的 expert 有标记。这个 router 训练时用了**选择偏置（bias）**（DeepSeek-V3 对付负载不均的办法）。",
    "lesson.moe.s1.said": "你的文本有 **{tokens} 个词元**；在全部 {layers} 个 MoE 层中，每个词元都恰好被送到 **{experts} 个 expert 中的 {k} 个**（每个词元的不同 expert 数在 {low} 到 {high} 之间：{verdict}）。第 {layer} 层最忙的 expert 是 {busiest} 号，拿到了 **{share:.1f}%** 的选择，是均分 {even:.1f}% 的 {max_mean:.2f} 倍。",
    "lesson.moe.s2.look": "同一段文本经过**三个 router**，它们除均衡方式外训练完全相同：不均衡、辅助 load-balancing loss、选择偏置。柱状图是第 {layer} 层每个 expert 拿到的选择比例。",
    "lesson.moe.s2.ask": "对不做均衡训练的 router：第 {layer} 层最忙的 expert 拿到多少比例（%）的选择？",
    "lesson.moe.s2.said": "第 {layer} 层中，**不做均衡**的 router 最忙的 expert 拿到了 **{answer:.1f}%** 的选择；用辅助 loss 时最忙的是 {aux_share:.1f}%，用选择偏置时是 {bias_share:.1f}%。在 {layers} 个 MoE 层上平均，负载的变异系数在不均衡时为 **{none:.2f}**，而辅助 loss 为 {aux:.2f}、偏置为 {bias:.2f}：是两者中较差者的 {margin:.2f} 倍，C15 要求至少 {need} 倍：{verdict}。",
    "lesson.moe.s2.why": "原因：{experts} 个 expert 分 {picks} 次选择（每个词元选其中 k 个），均匀的 router 会给每个 expert {even:.1f}%。不做均衡时，router 早期偏爱的 expert 拿到更多词元、更多梯度，于是更受偏爱：最忙的那个拿了 {busiest} 次 = {answer:.1f}%，是均分的 {times:.2f} 倍，其他 expert 则几乎学不到东西。",
    "lesson.moe.s3.look": "每个词元的计算量只随 k 增长，与 N 无关。如果 router 只把每个词元送到 **k = {k}** 个 expert，而不是训练时的 k，会怎样？权重相同、文本相同：图中对比每层的负载，文字对比 loss。",
    "lesson.moe.s3.said": "训练时 k = {k0}，现在 k = {k1}：loss 从 **{loss0:.3f}** 变为 **{loss1:.3f}** nats/词元（{delta:+.3f}）；最差一层中最忙 expert 的负载与平均之比从 {imb0:.2f} 倍变为 {imb1:.2f} 倍。在全部 {layers} 层中每个词元都恰好去了 {k1} 个 expert：{verdict}。参数总量不变，变的只是每个词元的计算量。",
}
