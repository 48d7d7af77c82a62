"""The Attention tab: masks, maps, GQA groups, sinks and the receptive field, in Simplified Chinese (简体中文)."""

STRINGS: dict[str, str] = {
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
    'attention.redraw': '为所选模型重新绘制',
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
}
