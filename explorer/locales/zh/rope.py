"""The RoPE tab and its figures, in Simplified Chinese (简体中文)."""

STRINGS: dict[str, str] = {
    # ---------------------------------------------------------------- RoPE tab
    'rope.tab': 'RoPE 旋转位置编码',
    'rope.intro': (
        '## 旋转位置编码（RoPE）实测\n'
        'RoPE 把每个维度为 $d$ 的查询和键向量分成 $d/2$ 对——在 Hugging Face 的布局中第 $i$ '
        '对是维度 $(i,\\ i + d/2)$——并在位置 $m$ 处把第 $i$ 对旋转角度 $m\\,\\theta_i$，'
        '其中 $\\theta_i = \\text{base}^{-2i/d}$。下面的一切都用引擎自己的 RoPE '
        '代码计算；关于 q 和 k、距离、base 和续写的小节运行已加载的模型。'),
    'rope.freq.heading': (
        '### 多个 base 下的频率与波长\n'
        '第 $i$ 对维度每个 token 转过 $\\theta_i = \\text{base}^{-2i/d}$ 弧度，每 $\\lambda_i = '
        '2\\pi/\\theta_i$ 个 token 转满一圈。按公式，无论 base 取多少，第 0 对都有 $\\theta_0 = \\text{base}^0 = '
        '1$，更大的 base 会让其余每一对都变慢；波长超过上下文长度的维度对在上下文内一圈也转不完。下面的各行由引擎自己的 `rope_inv_freq` 算出。'),
    'rope.freq.bases': 'base 列表（逗号分隔；可写 500k、1M）',
    'rope.freq.head_dim': '头维度 d',
    'rope.freq.context': '上下文长度（token）',
    'rope.freq.run': '绘制频率',
    'rope.freq.line': (
        '- base **{base}**：{pairs} 对中有 {full} 对在 {context:,} 个 token 内转满一圈，'
        '**{never} 对一圈也转不完**；θ₀ = {theta0:g}，θ₁ = {theta1:.4f} 弧度/token，'
        '最慢一对的波长为 {longest:,.0f} 个 token。'),
    'rope.freq.slower': (
        '由公式算出：base 从 {low} 变为 {high}，θ₀ 变化 ×{theta0_ratio:.6g}（第 0 对保持 θ₀ = 1），**其余 {n} 对中有 '
        '{slowed} 对变慢**（第 1 对 ×{min_ratio:.3g}，直到第 {last} 对 ×{max_ratio:.3g}）；在 {context:,} 个'
        ' token 内一圈也转不完的维度对：{never_low} → {never_high}。'),
    'rope.freq.not_slower': (
        '由公式算出：base 从 {low} 变为 {high}，θ₀ 变化 ×{theta0_ratio:.6g}，其余 {n} 对中**只有 {slowed} '
        '对变慢**（变慢最少的一对：×{fastest:.3g}）：这里更大的 base **没有**让第一对以外的每一对都变慢。'),
    'rope.freq.title': '频率',
    'rope.qk.title': '真实的 q 和 k',
    'rope.pair.title': '一对维度的旋转',
    'rope.dist.title': '注意力与距离',
    'rope.base.title': '改变 base',
    'rope.cont.title': '续写',
    'rope.scale.section': '上下文扩展',
    'rope.name.base': 'RoPE 的 base',
    'rope.name.bases': 'base 列表',
    'rope.name.head_dim': '头维度',
    'rope.name.context': '上下文长度',
    'rope.err.no_bases': '请至少给出一个 RoPE base，例如 10000、100k、500k、1M。',
    'rope.err.not_number': '{item} 不是数字（可写 10000、1e5、500k 或 1M）。',
    'rope.err.base_low': 'RoPE 的 base 必须大于 1（收到 {value:g}）：base ≤ 1 时频率不会逐对递减。',
    'rope.err.base_high': 'RoPE 的 base {value:g} 超过了 1e12；再大也不会有任何变化。',
    'rope.err.too_many_bases': '一次最多 {limit} 个 base，收到 {n} 个。',
    'rope.err.odd_head_dim': '头维度必须是偶数（RoPE 旋转的是成对的维度），收到 {value}。',
    'rope.who.other': '你的选择',
    'rope.who.original': '原始 RoPE（RoFormer 论文）',
    'rope.who.llama3': 'Llama 3（公开配置）',
    'rope.who.model': '{title}：{kinds}层（其配置）',
    'rope.model.bases': '**{title}**，从其配置读出：头维度 {head_dim}；{groups}。',
    'rope.model.group': '{n} 个{kind}层用 base {base}',
    'rope.model.separator': '；',
    'rope.model.kind.full': '全局注意力',
    'rope.model.kind.sliding': '滑动窗口',
    'rope.stop': '停止',
    'rope.stopped': '已停止。',
    'rope.name.layer': '层',
    'rope.name.head': '头',
    'rope.name.q_token': '查询 token',
    'rope.name.k_token': '键 token',
    'rope.name.tokens': 'token 数',
    'rope.name.positions': '位置数',
    'rope.name.pair': '维度对',
    'rope.name.position': '位置',
    'rope.name.log10_base': 'base 的 log10',
    'rope.name.new_tokens': '新 token 数',
    'rope.name.factor': '扩展倍数',
    'rope.name.original_context': '原始上下文长度',
    'rope.name.apply': '要改变的层',
    'rope.err.no_sliding': '这个模型没有滑动窗口层：请把 base 用于所有（全局注意力）层。',
    'rope.err.few_tokens': '这段文本只有 {n} 个 token；计算困惑度至少需要 {least} 个。',
    'rope.base.progress': '第 {done} / {total} 次前向计算：base {base}，{tokens} 个 token…',
    'rope.qk.heading': (
        '### 真实模型的 q 和 k：只有距离起作用\n'
        '旋转可以复合且保持点积，所以 $\\langle R_m q,\\ R_n k\\rangle = \\langle q,\\ R_m^{\\top} R_n k\\rangle ='
        ' \\langle q,\\ R_{n-m}\\, k\\rangle$：分数只取决于 $n - m$。为了看清这一点，我们从模型所选的层和头中取**一个** RoPE '
        '之前的查询向量和**一个** RoPE 之前的键向量，把它们放到每一对位置 $(m, n)$ 上，画出 $\\langle R_m q, R_n '
        'k\\rangle$：按这个恒等式，每条对角线都是常数（Toeplitz 矩阵）。只旋转查询，$\\langle R_m q, k\\rangle$，绝对位置 $m$ '
        '就保留了下来。离散度是沿任一条对角线的最大（最大值 − 最小值）；分数用双精度计算，下面的结论都由实测的离散度得出。'),
    'rope.qk.text': '输入模型的文本（使用前面的 token）',
    'rope.qk.layer': '层',
    'rope.qk.head': '查询头',
    'rope.qk.q_token': '查询向量取自第几个 token',
    'rope.qk.k_token': '键向量取自第几个 token',
    'rope.qk.positions': '放置的位置数（m, n = 0 … N−1）',
    'rope.qk.tokens': '捕获的 token 数',
    'rope.qk.run': '捕获 q 和 k',
    'rope.qk.both': '两侧都旋转：⟨R_m q, R_n k⟩',
    'rope.qk.one': '只旋转 q：⟨R_m q, k⟩',
    'rope.qk.real': '该层在真实序列上的实际分数（被掩码的位置留空）',
    'rope.qk.result': (
        '第 {layer} 层（{kind}，base {base}），第 {head} 个头（KV 头 {kv_head}）；捕获 {tokens} 个 token，用时 '
        '{seconds:.2f} 秒。q 取自第 {q_token} 个 token {q_word}，k 取自第 {k_token} 个 token '
        '{k_word}，放置在 {n} 个位置上。\n'
        '\n'
        '| | 对角线上的最大离散度 | 相对于最大分数 |\n'
        '|---|---|---|\n'
        '| 两侧都旋转 ⟨R_m q, R_n k⟩ | **{both:.3g}** | **{both_rel:.2g}** |\n'
        '| 只旋转 q ⟨R_m q, k⟩ | **{one:.3g}** | **{one_rel:.2g}** |'),
    'rope.qk.toeplitz.holds': (
        '**两侧都旋转：每条对角线都是常数。** 最大离散度是最大分数（{scale:.3g}）的 {rel:.1g}，在容差 {tol:g} 以内（float64 舍入）。'),
    'rope.qk.toeplitz.fails': (
        '**两侧都旋转：对角线不是常数。** 最大离散度是最大分数（{scale:.3g}）的 {rel:.2g}，超过容差 {tol:g}。'),
    'rope.qk.one_side.remains': (
        '**只旋转 q：绝对位置保留了下来。** 离散度是最大分数的 {rel:.2g}，是两侧都旋转时的 {ratio:.2g} 倍（至少 {min_rel:g} 且 '
        '{min_ratio:g} 倍才算留下了 m 的痕迹）。'),
    'rope.qk.one_side.gone': (
        '**只旋转 q：这里看不出绝对位置的明显痕迹。** 离散度只有最大分数的 {rel:.2g}，是两侧都旋转时的 {ratio:.2g} 倍（至少 {min_rel:g}'
        ' 且 {min_ratio:g} 倍才算）；这个 k 在所见的旋转下几乎不变。'),
    'rope.qk.identity.holds': (
        '恒等式 ⟨R_m q, R_n k⟩ = ⟨q, R_(n−m) k⟩ 成立，相对误差 {identity:.1g}（容差 {tol:g}）。'),
    'rope.qk.identity.fails': (
        '恒等式 ⟨R_m q, R_n k⟩ = ⟨q, R_(n−m) k⟩ **不成立**：相对差异 {identity:.2g}（容差 {tol:g}）。'),
    'rope.qk.repro.holds': (
        '我们对捕获的 RoPE 之前向量的旋转复现了模型实际使用的 q 和 k：最大差异 {repro:.2g}，是其最大元素的 {rel:.2g}（{dtype} 的容差 '
        '{tol:.2g}）。'),
    'rope.qk.repro.fails': (
        '我们对捕获的 RoPE 之前向量的旋转**没有**复现模型实际使用的 q 和 k：最大差异 {repro:.2g}，是其最大元素的 {rel:.2g}（{dtype} '
        '的容差 {tol:.2g}）；这里画出的旋转不是模型实际做的旋转。'),
    'rope.qk.clamped': '（文本只有 {tokens} 个 token：token 序号已限制为不超过 {last}。）',
    'rope.pair.heading': (
        '### 这个查询向量中的一对维度，旋转起来\n'
        '随着位置 $m$ 前进，点 $(q_i,\\ q_{i+d/2})$ 被旋转 '
        '$m\\,\\theta_i$：拖动位置滑块试试。旋转不改变长度，所以只有角度携带位置信息。星号是模型自己在该 token 真实位置上的 RoPE '
        '之后的查询向量；下方的摘要给出它离我们的旋转结果有多远。'),
    'rope.pair.pair': '维度对 i',
    'rope.pair.position': '位置 m',
    'rope.pair.result': (
        '第 {pair} 对（维度 {pair} 和 {partner}）：θ = {theta:.4g} 弧度/token，波长 {wavelength:,.1f} 个 '
        'token，半径 {radius:.3f}。在位置 {position} 处角度为 {angle:,.2f} 弧度 = {turns:,.2f} 圈。该 q '
        '中半径最大的几对：{strongest}。'),
    'rope.pair.length.kept': (
        '在全部 {n} 个画出的位置上，它的长度都保持为 {radius:.4g}（离散度为其 {spread:.1g}；容差 {tol:g}）。'),
    'rope.pair.length.changed': (
        '它的长度**不是**常数：在 {n} 个画出的位置上变化了 {radius:.4g} 的 {spread:.2g}（容差 {tol:g}）。'),
    'rope.pair.own.hits': (
        '模型自己在位置 {token} 的 q 落在我们的旋转给出的位置上：差异 {error:.2g}，是该 q 最大元素的 {rel:.2g}（容差 {tol:.2g}）。'),
    'rope.pair.own.misses': (
        '模型自己在位置 {token} 的 q **不在**我们的旋转给出的位置上：差异 {error:.2g}，是该 q 最大元素的 {rel:.2g}（容差 '
        '{tol:.2g}）。'),
    'rope.need_capture': '请先捕获 q 和 k（“真实的 q 和 k”一节）。',
    'rope.dist.heading': (
        '### 注意力随距离的变化，逐层\n'
        '真实模型放在 $m - n$ 个 token 之前的键上的平均注意力权重，对所有头以及所有能看到这个距离的查询取平均（文本与上面相同）。在距离 $d$ 上只有查询 '
        '$d$ 能到达第 0 个 token：把鼠标悬停在格子上，可以看到其中有多少权重来自这一个键。'),
    'rope.dist.run': '测量注意力与距离的关系',
    'rope.dist.result': (
        '{layers} 层，{tokens} 个 token，用时 {seconds:.2f} 秒。距离 0（token '
        '自身）的平均权重：{self_weight:.3f}；距离 1：{prev_weight:.3f}；距离 {far} 个 token 及以上时每个键平均 '
        '{far_weight:.4f}。在距离 1 上权重最大的层：{prev_layer}。'),
    'rope.dist.sink': (
        '第 0 个 token 平均得到一个查询 {mass:.3f} 的权重（查询 1…T−1，所有层），是均匀注意力给它的（{uniform:.3f}）的 '
        '×{ratio:.1f}（{factor:g} 倍算作注意力汇）；最多的是第 {layer} 层（{layer_mass:.3f}）。'),
    'rope.dist.no_sink': (
        '第 0 个 token 平均得到一个查询 {mass:.3f} 的权重（查询 1…T−1，所有层），只是均匀注意力给它的（{uniform:.3f}）的 '
        '×{ratio:.1f}（{factor:g} 倍才算注意力汇）；最多的是第 {layer} 层（{layer_mass:.3f}）。'),
    'rope.base.heading': (
        '### 改变真实模型的 base\n'
        '模型是用下方从其配置中读出的 base 训练的。这里换用另一个 base 运行，不做任何重新训练：每个 base 在长文本上做一次前向计算，画出每个 token '
        '的负对数似然 $-\\log p(x_{t+1} \\mid x_{\\le t})$ 随位置的变化。它回答的问题是：只加大 base '
        '本身能带来什么吗？权重学会读取的是训练时 base 下的角度；换成任何其他 base，它们看到的都是从没见过的角度。摘要给出本次运行实测的结果。'),
    'rope.base.source': (
        '文本：The Python Language Reference, chapters “Execution model” and “The import '
        'system” (CPython 3.11 docs). © Python Software Foundation, PSF License.'),
    'rope.base.bases': '要比较的 base（总会加入训练时的 base）',
    'rope.base.apply': '把 base 用于',
    'rope.base.apply.full': '全局注意力层',
    'rope.base.apply.sliding': '滑动窗口层（有这类层的模型）',
    'rope.base.apply.all': '所有层',
    'rope.base.tokens': '长文本的 token 数',
    'rope.base.run': '运行困惑度扫描',
    'rope.base.result': (
        '{model}，base 用于{apply}，{tokens} 个 token。base {trained}：困惑度 '
        '**{trained_ppl:.2f}**。本次扫描中困惑度最低的是 base '
        '**{best}**（{best_ppl:.2f}）。{larger}'),
    'rope.base.larger': (
        '比训练值更大的 base：{items}。'
        '在文本的最后四分之一（更远的视野本应在这里有帮助）{verdict}。'),
    'rope.base.none_better': '没有一个比训练时的 base 更好（最接近的 {closest} 在那里的困惑度是它的 ×{ratio:.3f}）',
    'rope.base.some_better': '{which} 比训练时的 base 好，困惑度最多降低 {gain:.1%}',
    'rope.base.no_larger': '扫描中没有比训练值更大的 base。',
    'rope.base.rise.all': (
        '**每个改动后的 base 都让困惑度上升**了至少 {rise:.0%}，无论是整段文本还是其最后四分之一：全部 {n} 个，'
        '两者中较小的一个从训练值的 ×{low:.3f}（{low_base}）到 ×{high:.3f}（{high_base}）。'),
    'rope.base.rise.not_all': (
        '**并非每个改动后的 base 都让整段文本和其最后四分之一的困惑度上升 {rise:.0%} 或以上：** '
        '{total} 个中有 {n} 个没有（整段，最后四分之一）：{items}。'),
    'rope.base.timed_out': (
        '**到达 {limit:.0f} 秒的时间上限：** {total} 次前向计算中完成了 {done} 次；未测量：{left}。'),
    'rope.cont.heading': '#### 长文本之后的贪心续写：训练时的 base 与改变后的 base 并排',
    'rope.cont.base': 'base 的 log₁₀（5 = 100k，6 = 1M）',
    'rope.cont.new': '新 token 数',
    'rope.cont.run': '续写文本',
    'rope.cont.result': (
        '提示词结尾为：“…{tail}”\n'
        '\n'
        '| base | 贪心续写 |\n'
        '|---|---|\n'
        '| {trained} | {trained_text} |\n'
        '| {base} | {base_text} |'),
    'rope.cont.same': '两段续写在比较的全部 {n} 个 token 上都一致。',
    'rope.cont.differ': '两段续写在前 {same} / {n} 个 token 上一致，从第 {first} 个 token 起分开。',
    'rope.cont.timed_out': '**到达 {limit:.0f} 秒的时间上限：** {total} 个新 token 中解码了 {done} 个。',
    'rope.cont.progress': '解码中：{done} / {total} 个新 token…',
    'rope.scale.heading': (
        '### 可选：上下文扩展方法（仅频率曲线）\n'
        '要把在 $L$ 个 token 上训练的模型拉伸到 $sL$：**线性位置插值**把每个 $\\theta_i$ 除以 $s$；**NTK-aware** 缩放把 '
        'base 提高到 $\\text{base}\\cdot s^{d/(d-2)}$（快的维度对几乎不变，最慢的一对被除以 $s$）；**YaRN** 保留在 $L$ '
        '内转很多圈的维度对，对转不满一圈的维度对做插值，中间线性过渡（它还会缩放注意力，此处未画出）。这里只画频率，没有任何一种方法被应用到模型上。'),
    'rope.col.base': 'base',
    'rope.col.who': '谁在用',
    'rope.col.pairs': '维度对数',
    'rope.col.full_turn': '上下文内转满一圈',
    'rope.col.never': '一圈也转不完',
    'rope.col.theta0': '第 0 对的 θ（弧度/token）',
    'rope.col.theta1': '第 1 对的 θ（弧度/token）',
    'rope.col.longest': '最长波长（token）',
    'rope.col.ppl': '困惑度',
    'rope.col.ppl_range': '困惑度，第 {lo}–{hi} 个 token',
    'rope.col.delta': '平均 NLL − 训练值（nats）',
    'rope.col.seconds': '秒',
    'rope.scale.title': '可选：上下文扩展方法（PI、NTK-aware、YaRN）',
    'rope.scale.base': 'base',
    'rope.scale.factor': '扩展倍数 s',
    'rope.scale.context': '训练上下文 L（token）',
    'rope.scale.run': '绘制各方法',
    # ---------------------------------------------------------------- RoPE figures
    'rope.fig.freq_panel': '各维度对的频率',
    'rope.fig.wave_panel': '各维度对的波长',
    'rope.fig.freq_hover': (
        'base {base}<br>第 {pair} 对（维度 {dims}）<br>θ = {theta:.4g} 弧度/token<br>波长 '
        '= {wavelength:,.1f} 个 token<br>{context:,} 个 token 内转 {turns:,.2f} 圈'),
    'rope.fig.base': 'base {base}',
    'rope.fig.context': '上下文 {context:,} 个 token',
    'rope.fig.context_hover': '上下文长度 {context:,} 个 token：这条线以上的维度对一圈也转不完',
    'rope.fig.pair_axis': '维度对序号 i（维度 i 和 i + d/2）',
    'rope.fig.theta_axis': 'θ（弧度/token，对数坐标）',
    'rope.fig.wave_axis': '波长（转满一圈所需的 token 数，对数坐标）',
    'rope.fig.rotated': '旋转到位置 m 的 q',
    'rope.fig.position_m': '位置 m',
    'rope.fig.rotated_hover': (
        '第 {token} 个 token {word}，第 {layer} 层，第 {head} 个头，第 {pair} 对<br>位置 m '
        '= {m}，角度 m·θ = {angle:.3f} 弧度'),
    'rope.fig.position': '位置 {position}',
    'rope.fig.before': 'RoPE 之前（m = 0）',
    'rope.fig.before_hover': 'RoPE 之前的 q，token {word}',
    'rope.fig.own': '模型自己在位置 {token} 的 q',
    'rope.fig.own_hover': '记录到的 token {word} 经 RoPE 旋转后的 q（位置 {token}）',
    'rope.fig.dim_axis': 'q[{dim}]（维度 {dim}）',
    'rope.fig.cell_hover': '{prefix}<br>查询 {query}，键 {key}，n − m = {offset}',
    'rope.fig.score_hover': '%{{text}}<br>分数 %{{z:.4f}}',
    'rope.fig.score': '分数',
    'rope.fig.scaled_score': '分数 × 缩放系数',
    'rope.fig.qk_prefix': (
        'q 取自第 {q_token} 个 token {q_word}，k 取自第 {k_token} 个 token {k_word}<br>第 '
        '{layer} 层，第 {head} 个头（KV 头 {kv_head}）'),
    'rope.fig.both_rotated': '{prefix}，两侧都旋转',
    'rope.fig.q_rotated': '{prefix}，只旋转 q',
    'rope.fig.key_position': '键的位置 n（token）',
    'rope.fig.key_unrotated': '键的位置 n（token；k 未旋转）',
    'rope.fig.query_position': '查询的位置 m（token）',
    'rope.fig.real_key': '键 token 的位置 n',
    'rope.fig.real_query': '查询 token 的位置 m',
    'rope.fig.real_prefix': '第 {layer} 层，第 {head} 个头，真实序列',
    'rope.fig.kind.sliding': '滑动窗口',
    'rope.fig.kind.full': '全局',
    'rope.fig.dist_hover': '第 {layer} 层（{kind}），距离 {distance} 个 token<br>平均权重 {weight:.4g}',
    'rope.fig.dist_first_most': (
        '<br>其中 {share:.0%} 是查询 {query} 放在第 0 个 token 上的权重：第一个 token 拿走了它（注意力汇）'),
    'rope.fig.dist_first_some': '<br>查询 {query} 放在第 0 个 token 上的权重：占其中 {share:.0%}',
    'rope.fig.dist_layer': 'L{layer} {kind}',
    'rope.fig.mean_weight': 'log10 平均权重',
    'rope.fig.distance_axis': '距离 m − n（token；0 = token 自身）',
    'rope.fig.layer': '层',
    'rope.fig.sweep_hover': '{name}<br>位置 %{{x}}<br>最近 {window} 个 token 的平均 NLL %{{y:.3f}} nats',
    'rope.fig.predicted_position': '被预测 token 的位置（token）',
    'rope.fig.nll_axis': 'NLL，最近 {window} 个 token 的平均值（nats）',
    'rope.fig.trained': '{base}（训练值）',
    'rope.fig.as_trained': '按训练设置（滑动窗口层 {local} / 全局层 {full}）',
    'rope.fig.wave_per_pair': '各维度对的波长',
    'rope.fig.relative_freq': '相对于原始值的频率',
    'rope.fig.method.original': '原始',
    'rope.fig.method.linear': '线性插值（PI）',
    'rope.fig.method.ntk': 'NTK-aware',
    'rope.fig.method.yarn': 'YaRN',
    'rope.fig.scale_hover': (
        '{method}<br>第 {pair} 对<br>波长 {wavelength:,.1f} 个 token<br>θ / θ_original = '
        '{ratio:.3f}'),
    'rope.fig.trained_context': '训练上下文',
    'rope.fig.extended_context': '扩展后的上下文',
    'rope.fig.context_line': '{label} {value:,.0f} 个 token',
    'rope.fig.context_line_hover': '{label}：{value:,.0f} 个 token',
    'rope.fig.pair_index': '维度对序号 i',
    'rope.fig.wave_log': '波长（token，对数坐标）',
    'rope.fig.ratio_log': 'θ / θ 原始值（对数坐标）',
}
