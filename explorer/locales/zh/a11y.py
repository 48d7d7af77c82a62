"""图表的文字替代（explorer/alt_text.py），中文：读屏软件代替图表朗读的一句话，其中每个数字都读自图表。"""
STRINGS = {
    "a11y.sentence": "{what}：{parts}。",
    "a11y.join": "；",
    "a11y.chart": "图表",
    "a11y.series": "该序列",
    "a11y.heatmap": "{rows} 行 {cols} 列的网格，最大值 {max} 位于 {max_y}、{max_x}，最小值 {min} 位于 {min_y}、{min_x}",
    "a11y.bars": "{name}在 {n} 个值中于{axis} {max_x} 处最大（{max}），于 {min_x} 处最小（{min}）",
    "a11y.rises": "{name}上升了 {change}，从{axis} {x0} 处的 {first} 到 {x1} 处的 {last}",
    "a11y.falls": "{name}下降了 {change}，从{axis} {x0} 处的 {first} 到 {x1} 处的 {last}",
    "a11y.flat": "{name}从{axis} {x0} 到 {x1} 保持在 {first}",
    "a11y.peak": "，峰值 {max} 位于 {max_x} 处",
    "a11y.more": "另有 {n} 个序列",
    "a11y.attention_one": "第 {layer} 层的头 {head} 在其 {n} 个查询上平均把 {share} 的注意力放在词元 {position}（{token}）上",
    "a11y.attention_all": "第 {layer} 层的 {heads} 个头中，头 {head} 在单个词元上的注意力份额最大：在 {n} 个查询上平均把 {share} 放在词元 {position}（{token}）上",
    "a11y.arch_blocks": "{n} 个模型的块，从输入到输出：{blocks}。",
    "a11y.arch_block": "{title}，{n} 个阶段：{stages}",
}
