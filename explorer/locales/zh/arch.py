"""The Architecture tab (C6, C7, C18, C19) and its verdicts, in Simplified Chinese (简体中文)."""

STRINGS: dict[str, str] = {
    # ---------------------------------------------------------------- Architecture tab (C6, C7, C18, C19)
    'arch.tab': '架构',
    'arch.intro': (
        '## 从 2017 年的 Transformer 到今天的模块\n'
        '四种模块并排对照，从张量读出（归一化的位置和种类以及 RoPE 则来自各架构的代码）；归一化放在哪里，在小模型堆叠上实测；'
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
        '`nn.Transformer` 层、transformers 的 GPT-2）。头数来自投影矩阵的形状；没有单独的输出矩阵即为共享嵌入；'
        '各组件的参数量由形状求和。有三项性质来自该架构的代码，张量只能与之矛盾：归一化的位置（来自它在该架构命名中的名称）、'
        '归一化的种类（在这些架构的代码中，带偏置张量的是 LayerNorm，只有权重的是 RMSNorm）以及 RoPE（没有位置嵌入张量）。'),
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
        '本应用的一个小型 MLA 模块（`models/mla.py`）用潜在缓存运行一个随机提示，并把缓存上投影后的结果'
        '与不用缓存算出的键和值比较。这个模块来自一个很小的 DeepSeek-V3 config.json，随机权重按 '
        'DeepSeek-V3 的张量名存放，并通过与真实检查点相同的映射加载；测试套件用同一配置和同一组权重运行 '
        'transformers 的 DeepseekV3ForCausalLM，logits 和缓存在 1e-5 以内一致（这一项在运行测试时检查，'
        '不在本页面上检查）。'),
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
        '{tokens} 个 token：按缓存张量的形状和已写入的 token 数计算为 **{cache_bytes:,} 字节**（公式：{formula_bytes:,}；每头 K 和 V '
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
    # ---------------------------------------------------------------- verdicts (C6, C7, C18, C19)
    # each chosen by the criterion the claims board uses
    'arch.mla.verdict.ok': (
        '**潜在缓存复现了每个头的 K 和 V：**最大差 {error:.1e}，在 {tol:.0e} 之内；按缓存张量的形状和已写入的 token 数恰好得到公式给出的 '
        '{formula_bytes:,} 字节。'),
    'arch.mla.verdict.broken': (
        '**上投影后的缓存没有复现每个头的 K 和 V：**最大差 {error:.1e}（容差 {tol:.0e}）；按缓存张量的形状和已写入的 token 数为 '
        '{cache_bytes:,} 字节，公式为 {formula_bytes:,}。'),
    'arch.fold.verdict.cannot': (
        "残差为 {residual:.1f} %（判据：至少 {threshold:.0f} %，且与按旋转角度算出的等权维度对残差 "
        '{expected:.1f} % 相差不超过 {tol:.0f} 个百分点），'
        "在这些位置上没有任何固定的 $W'$ 能代替 "
        '$R_m W$：只有几乎不转的维度对才能并入，所以 MLA 让上投影与位置无关，并把位置交给单独的小 RoPE 键。'),
    'arch.fold.verdict.can': (
        "在这些位置上，最优的固定 $W'$ 只留下 {residual:.1f} %（低于判据的 {threshold:.0f} %）："
        '这里旋转得太少，不足以说明它无法并入；增加位置数或看转得更快的维度对，残差就会显现。'),
    'arch.fold.verdict.off': (
        "最优的固定 $W'$ 留下 {residual:.1f} %，与按旋转角度算出的等权维度对残差 {expected:.1f} % "
        '相差超过 {tol:.0f} 个百分点：要么这个 $W$ 各维度对的权重不均（$W$ 更宽时会趋于均匀），'
        '要么旋转并不是这些角度所描述的那样。'),
    'arch.norm.verdict.grows': (
        '后置归一化的梯度朝输出方向增长，前置归一化的不增长（判据：后置 ≥ {post_min:g}，前置 ≤ {pre_max:g}）。'),
    'arch.norm.verdict.level': (
        '在这个深度，判据（后置 ≥ {post_min:g} 且前置 ≤ {pre_max:g}）区分不出两种放置方式。'),
    'arch.blocks.verdict.all': (
        '主张列出的 {n} 项变化全部成立：前置归一化、RMSNorm、RoPE、门控 MLP（SwiGLU 或 GeGLU）、KV 头少于查询头、没有偏置张量、'
        '没有编码器、没有交叉注意力。'),
    'arch.blocks.verdict.not': 'Llama 式模块的 {n} 项变化中成立 {held} 项；不成立：{missing}。',
    'arch.blocks.verdict.sources': (
        '由张量（有哪些张量、形状如何）判定的：门控 MLP、KV 头少于查询头、没有偏置、没有编码器、没有交叉注意力，'
        '{n_read} 项中成立 {read} 项。由该架构的代码决定、张量只能与之矛盾的：前置归一化（每个归一化的位置来自其名称）、'
        'RMSNorm（归一化只有权重、没有偏置）、RoPE（没有位置嵌入张量），{n_coded} 项中成立 {coded} 项。'),
    'arch.blocks.fact.pre_norm': '前置归一化',
    'arch.blocks.fact.rmsnorm': 'RMSNorm',
    'arch.blocks.fact.rope': 'RoPE',
    'arch.blocks.fact.gated_mlp': '门控 MLP（SwiGLU 或 GeGLU）',
    'arch.blocks.fact.gqa': 'KV 头少于查询头',
    'arch.blocks.fact.no_bias': '没有偏置张量',
    'arch.blocks.fact.no_encoder': '没有编码器',
    'arch.blocks.fact.no_cross': '没有交叉注意力',
    'arch.blocks.fact.sep': '、',
}
