"""生成标签页的精度小节（explorer/generate/precision.py），中文。"""
STRINGS = {
    'precision.section': '精度：每个权重的字节数',
    'precision.intro': (
        "每解码一个 token 都要把每个权重读一遍（论断 C2），所以在这台 CPU 上，一步解码的耗时"
        "大约就是读完这些字节的时间。同一个模型的矩阵可以存成 **fp32**（每个权重 4 字节）、"
        "**bf16**（2 字节：fp32 的高半部分）、**int8**（每 32 个一块，每块一个 fp32 缩放因子，"
        "1.125 字节），或 **gguf**：检查点发布时的整数编码，它们就是 fp32 权重本身，因为这些 fp32 权重正是由它们反量化而来。"
        "GGUF 文件把每个编码按 4 到 8 位打包，另加缩放因子：SmolLM2 各层的矩阵是 Q4_1，每 32 个权重 20 字节"
        "（每个权重 0.625 字节）；Gemma 3 各层的矩阵混用 Q4_K（0.5625）、Q5_0（0.6875）、Q6_K（0.82）和 Q8_0（1.0625），"
        "平均 0.68；两个文件的嵌入都是 Q8_0。本引擎把每个编码单独存成一个字节，每 32（或 16）个一块带一个 fp32 缩放因子，"
        "有的格式还带一个 fp32 偏移：这里每个权重 1.125 到 1.25 字节。按 **测量**，用我们的融合解码步骤以每种精度对生成标签页的默认提示做"
        "贪心解码（交错进行，机器负载对各精度一视同仁），并在一段固定评测文本上与 fp32 逐位置比较"
        "（《Python 语言参考》中的一节，模型有 BOS 词元时放在它之后；不是选定服务默认精度所用的那一节）："
        "速度跟着读取的字节走，每少一位都有可测的代价。约需 20 秒（SmolLM2）到 40 秒（Gemma 3），期间该模型不运行其他任务。"),
    'precision.measure': '测量',
    'precision.none': '按“测量”以每种精度解码。',
    'precision.busy': (
        "此刻有访客的生成正在这个模型上解码：它们的步骤和这里的测量会互相干扰计时。"
        "请等全班的生成结束后再测量。"),
    'precision.err.device': '精度比较在 CPU 上以 float32 运行（本服务器用的是其他设备或数据类型）。',
    'precision.err.model': '这个模型没有融合解码步骤，无法比较各精度：{reason}',
    'precision.fig.speed': '解码速度与每个 token 读取的字节数',
    'precision.fig.label': '{weights}<br>每 token {mb:.0f} MB',
    'precision.fig.measured': '实测 token/秒',
    'precision.fig.predicted': 'Roofline：{gbs:.1f} GB/s ÷ 每 token 字节数',
    'precision.fig.tps_axis': 'token/秒（单个请求）',
    'precision.fig.hover_tps': '%{{x}}：%{{y:.1f}} token/秒<extra>%{{fullData.name}}</extra>',
    'precision.fig.price': '代价：在固定评测文本的 {n} 个 token 上与 fp32 的 top-1 一致率',
    'precision.fig.top1': '与 fp32 的 top-1 一致率',
    'precision.fig.top1_axis': '与 fp32 的 top-1 一致率（%）',
    'precision.fig.bar_text': '{top1:.1f}%<br>困惑度 {ppl:.2f}<br>最大 |Δlogit| {dlogit:.2f}',
    'precision.fig.hover_top1': '%{{x}}：%{{y:.1f}}% 的位置选出与 fp32 相同的 token<extra></extra>',
    'precision.fig.bound': '默认精度须 ≥ {pct:.0f}%',
    'precision.summary': (
        "**{model}**，{threads} 个线程：每种精度从 {prompt} 个 token 的提示贪心解码 {new} 个 "
        "token，交错 {rounds} 轮（倍数取各轮中相对同轮 fp32 速度之比的中位数）；代价在一段固定"
        "评测文本——《Python 语言参考》中“{text}”一节——的前 {held} 个 token 上评估（{bos}），"
        "每个位置都与 fp32 的 logits 比较。"),
    'precision.summary.bos': '放在模型的 BOS 词元之后，和它的分词器开始每段文本的方式一样',
    'precision.summary.no_bos': '前面没有 BOS 词元，和这个模型的分词器开始一段文本的方式一样',
    'precision.table.head': (
        "| 路径 | 每 token 读取字节 | Roofline token/秒 | 实测 token/秒 | 相对 fp32 | "
        "top-1 一致率 | 与 fp32 不同的位置（近似平局） | 最大 \\|Δ logit\\| | 困惑度 |\n"
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|"),
    'precision.summary.ties': (
        "{held} 个评估位置中有 {near} 个是**近似平局**：在这些位置上 fp32 最大的两个 logit 相差不到 "
        "{tie}，logits 的微小变化就可能让二者互换。括号里的数是某精度与 fp32 不同的位置中有多少是近似"
        "平局：若全部都是，它只在 fp32 自己也几乎拿不定主意的地方选了别的 token，困惑度也几乎不变。"),
    'precision.summary.pick': (
        "就单个请求而言，服务默认精度的规则——与 fp32 的 top-1 一致率不低于 {pct:.0f}% 的精度中最快的一个——"
        "在这里选出 **{pick}**。本服务器的解码步骤读取的是 **{serving}**：运维者的选择（`EXPLORER_WEIGHTS`），"
        "否则是同一规则在所有论断都通过时、在另一段固定文本（“{choice}”一节）的 512 个词元上为该检查点"
        "选出的精度（见 README）：上面的代价是在另一段文本上测得的，不是做出这个选择所用的文本。"),
    'precision.err.time_limit': '测量到达 {s:.0f} 秒的时间上限，已停止：机器正忙，请稍后再试。',
    'precision.table.continuation': "| 精度 | 提示的贪心续写 |\n|---|---|",
}
STRINGS['precision.kv.head'] = (
    "KV 缓存的精度：同样 {n} 个评测 token 经引擎的前向写入以各格式存储的缓存（每个查询都对"
    "缓存中实际存储的键和值做注意力；int8 每个 token 每个头一个 fp32 缩放因子），与 fp32 缓存"
    "的 logits 比较。每 token 字节数读自实际存储的张量（论断 C3 的公式，按元素字节数）。\n\n"
    "| KV 缓存 | 每 token 字节 | top-1 一致率 | 与 fp32 不同的位置（近似平局） | "
    "最大 \\|Δ logit\\| | 困惑度 |\n|---|---:|---:|---:|---:|---:|")
