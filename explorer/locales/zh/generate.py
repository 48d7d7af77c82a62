"""The Generate & KV cache tab, its figures and the measured roofline (C2), in Simplified Chinese (简体中文)."""

STRINGS: dict[str, str] = {
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
    'generate.tokens_note': (
        '将鼠标悬停在某个词元上（或按 Tab 键进入词元，再用 ← → 移动），即可看到该步最可能的五个'
        '词元及其概率。'),
    'generate.tok.step': '第 {i} 步 · 位置 {pos}',
    'generate.tok.greedy': '贪心解码：直接取概率最大的词元。概率为 logits 的 softmax（温度 1，不截断）。',
    'generate.tok.sampled': '采样分布：softmax(logits / {t:g}){cuts}。',
    'generate.tok.cut_k': '（只保留最可能的 {k} 个词元）',
    'generate.tok.cut_p': '，再截取累计概率达到 {p:g} 的最小集合（top-p）并重新归一化',
    'generate.tok.chosen': '已选中',
    'generate.tok.outside': '已选中（不在前 5 名内）',
    'generate.tok.none': '这一步没有保存概率。',
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
    'generate.calc_run': '计算',
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
    'generate.ev.path': (
        '**这些 token 由哪段代码产生。** 第一个来自提示词经过 `models/` 中模块的前向计算（fp32 权重，'
        '也就是你能读到的代码）。之后：{steps}。这些步骤读取的矩阵是{weights}：按本引擎的存储方式'
        '**每个权重 {bpw:.3f} 字节**。测试保证它们的 logits 与 `models/` 中 fp32 模块的差距不超过 logits '
        '量级的 {pct:.2g}%；下面的 C4 把本次运行的缓存 logits 与同一权重上的完整前向计算作比较。'),
    'generate.ev.path_fused': (
        '{n} 个 token 来自融合步骤（`engine/fused.py`：整个解码步是一次 C++ 调用，循环里只有你的运行）'),
    'generate.ev.path_batched': (
        '{n} 个 token 来自与其他运行一起的批量步骤（`engine/fused_batch.py`：循环里的所有运行共用一次 '
        'C++ 调用；某个运行无法使用它时，则是 `batched.py` 的前向计算）'),
    'generate.ev.path_none': '没有更多 token',
    'generate.ev.weights.fp32': '模型自己的 fp32 张量',
    'generate.ev.weights.bf16': 'bf16 副本（每个 fp32 权重的高半部分）',
    'generate.ev.weights.int8': '每 32 个权重一块、每块一个 fp32 缩放系数的 int8 副本',
    'generate.ev.weights.gguf': (
        'GGUF 文件自己的 4 位编码及其块缩放系数和偏移（这里每个编码占一个字节；与反量化后的 fp32 权重完全相同）'),
    'generate.ev.shared': (
        '解码是共享的：最多有其他 {others} 位访客的 token 与你的 token 在同一次前向计算中完成'
        '（所有人只读一次权重，C2）。每一步的延迟是这次共享计算的时间；你的 token、位置和缓存字节都只属于你自己的运行。'),
    'generate.ev.prefix': (
        '你的提示词共 {prompt} 个 token，其中前 {n} 个是聊天模板的 token，每位访客的提示词都以它们开头：'
        '它们的键和值从循环中已有的一次运行复制而来，本次运行计算了其余 {fed} 个（前缀复用）。'
        '其他访客自己的文字不会被复制或计入。你的缓存同样保存了提示词的每一个 token。'),
    'generate.ev.prefix_kept': (
        '你的提示词共 {prompt} 个 token，其中前 {n} 个与本应用自带的某个提示词（本页的示例、某节课的提示词、长提示词）'
        '开头相同：服务器只计算过一次它们的键和值，对每位访客都相同，并一直保留，因此直接复制，本次运行计算了其余 {fed} 个'
        '（前缀复用）。其他访客的文字不会被复制或计入。你的缓存同样保存了提示词的每一个 token。'),
    'generate.ev.prefix_own': (
        '你的提示词共 {prompt} 个 token，其中前 {n} 个已由本页面的另一次运行输入过：相同位置上的相同 token '
        '得到相同的键和值，因此这些键值直接从它的缓存复制，本次运行只计算了最后 {fed} 个（前缀复用）。'
        '你的缓存同样保存了提示词的每一个 token。'),
    'generate.ev.busy': (
        ' 无缓存重放（C1）和完整前向检查（C4）被跳过：其他访客正在生成，这些完整的前向计算会让他们的输出停顿。'
        '服务器空闲时再运行一次即可看到。'),
    'generate.error.busy': '服务器繁忙：已有 {capacity} 个生成任务正在运行或等待。请一分钟后再试。',
    'generate.error.runs_session': (
        '此页面已有 {limit} 个生成任务正在运行或等待，这是每位访客同时可有的上限。'
        '请等其中一个完成或将其停止，然后再开始。'),
    'generate.error.runs_address': (
        '你的网络地址已有 {limit} 个生成任务正在运行或等待，这是每个地址同时可有的上限，'
        '其余位置留给其他访客。请等其中一个完成后再开始。'),
    'generate.status.rate': ' · 每秒 {rate:.1f} 个 token',
    'generate.status.chat': '（对话模板）',
    'generate.status.checking': '正在检查：带缓存的 logits 与完整前向对比（C4），读回缓存（C3）……',
    'generate.status.waiting': '检查正在等待全班的生成：前面还有 **{n}** 个。它们一结束，就进行带缓存与完整前向的对比（C4）和缓存读回（C3、掩码）。',
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
    'generate.status.moved': '**已停止**：全班已进入下一步，此时已生成 **{n}** 个新 token。',
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
        '{live:.1f} 毫秒。计算的分数，所有层（引擎对其注意力路径实际计算量的计数：使用缓存时每个头'
        '一行 S 个键，不用缓存时为因果内核的下三角或整个 t × S 矩阵）：使用缓存 {cs:,} 个，不用缓存 '
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
        ' 从 t = {t0} 到 {t1}，计算的分数（计数）在使用缓存时按 t^{ec:.2f} 增长，不用缓存时按 '
        't^{eu:.2f} 增长；实测的不用缓存与使用缓存的耗时之比按 t^{er:.2f} 增长（×{r0:.1f} → '
        '×{r1:.1f}）：C1（计数指数与 1 和 2 相差不超过 ±{slack}，耗时之比的指数 ≥ {min_r:g}，且在'
        '最大的 t 处不用缓存的一步更慢）{verdict}。'),
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
    'generate.error.context': '提示词（{n} 个 token）+ 最大新 token 数（{new}）超出了模型 {context} 个 token 的上下文。',
    'generate.name.max_new': '最大新 token 数',
    'generate.name.temperature': '温度',
    'generate.name.top_k': 'Top-k',
    'generate.name.top_p': 'Top-p',
    'generate.name.seed': '随机种子',
    'generate.name.policy': '缓存策略',
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
        '按解码步骤实际读取的张量计数：矩阵按解码精度的副本计（gguf 编码及其缩放系数、int8 块、bf16，'
        '或模型自己的 fp32），KV 缓存按其存储的元素计。**测量本机** 先测屋顶（内存带宽：对远大于缓存的矩阵做'
        '矩阵-向量乘或求和，取较快者；FLOP 速率：解码步骤所用乘积在其权重格式下的峰值；取几次中最好的一次，保留到服务器重启），'
        '再在 $B$ = 1、2、4、8、16 时为共享解码循环实际运行的步骤计时：单个运行走融合步骤，多个运行一起走一次批量步骤'
        '（B 个运行各用内置文本的 $t$ 个 token 预填充）。'
        '虚线是模型：其强度在实测屋顶下所处的位置；菱形是引擎的实测值。'),
    'generate.roof.context': '上下文长度 t（每个序列的 token 数）',
    'generate.roof.refresh': '重新测量设备（否则使用本服务器先前测得的屋顶）',
    'generate.roof.refresh_kept': (
        '已请求重新测量，但未执行：本服务器保存的屋顶为所有访客共用，每 {interval} 分钟最多重新测量一次'
        '（{n} 分钟后可再次测量）；此行数字为保存的屋顶。'),
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
        '解码步骤所用乘积 {product} 的峰值 **{flops:.1f} GFLOP/s**，脊点 **{ridge:.2f} FLOP/字节**；'
        '测于 {when}，用时 {seconds:.1f} 秒（用矩阵-向量乘和求和读取 {mib} MiB 矩阵，取 {mv} 次中最好的一次，'
        '{rows} 行输入乘以该格式的 {n}×{n} 权重取 {mm} 次中最好的一次）。'),
    'generate.roof.sum.step': (
        '在 B = {b}、t = {t} 时，一个解码步读取 {mb:,.1f} MB，计算 {gflop:.3f} GFLOP，'
        '按该步实际读取的张量计数：矩阵为 **{weights}**（每个权重 {bpw:.3f} 字节，共 {matrix_mb:,.1f} MB），'
        'KV 缓存每个元素 {bytes} 字节。B = 1 时运行的是{path}；从 B = 2 起是{batched}。'),
    'generate.roof.sum.memory_bound': (
        '其强度（计数）{intensity:.2f} FLOP/字节，比实测脊点（{ridge:.2f}）低 {ratio:.1f} 倍：'
        '按计数，单个序列**受内存带宽限制**。'),
    'generate.roof.sum.compute_bound': (
        '其强度 {intensity:.2f} FLOP/字节，达到或超过实测脊点（{ridge:.2f}）：'
        '在本设备上即使单个序列也受计算限制。'),
    'generate.roof.sum.share': (
        '引擎的这一步用时 {ms:.1f} 毫秒：{gbs:.1f} GB/s，为实测带宽的 {share:.0f}%'
        '（C2 要求 ≥ {least:.0%}），其 FLOP 速率为其乘积实测峰值的 {flop_share:.1f}%：'
        '两个屋顶中，内存读取解释的那部分耗时要大得多。'),
    'generate.roof.sum.share_low': (
        '引擎的这一步用时 {ms:.1f} 毫秒：{gbs:.1f} GB/s，只有实测带宽的 {share:.0f}%'
        '（C2 要求 ≥ {least:.0%}）：这次测量中决定这一步耗时的不是读取字节，而是别的因素'
        '（框架开销，或机器上的其他工作）。'),
    'generate.roof.sum.over_roof': (
        'B = {b} 的这一步达到实测屋顶的 {share:.0f}%：测屋顶时机器比计时解码步时更忙。'
        '请勾选“重新测量设备”，再测一次。'),
    'generate.roof.path.fused': '融合步骤（每个 token 一次 C++ 调用）',
    'generate.roof.path.fused_batch': '融合批量步骤（所有运行共用一次 C++ 调用）',
    'generate.roof.path.batched': '批量步骤（所有运行共用引擎的一次前向计算）',
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
    'generate.roof.sum.c2_holds': '**C2 在这次测量中成立。**',
    'generate.roof.sum.c2_fails': '**C2 在这次测量中不成立。**',
    'generate.roof.fig.title': '{model}：t = {t} 时的解码屋顶线',
    'generate.roof.fig.rates_title': '每秒 token 数与批大小',
    'generate.roof.fig.roof': '本设备的屋顶（实测）',
    'generate.roof.fig.model': 't = {t} 时的模型，{weights} 权重（屋顶允许的值）',
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
}
