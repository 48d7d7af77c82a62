"""The claims board: each claim's criterion and measured quantities, and the Claims tab, in Simplified Chinese (简体中文)."""

STRINGS: dict[str, str] = {
    # ---------------------------------------------------------------- C1, C3, C4, C9: the Generate & KV cache tab
    'claims.m.c1_exp_uncached': '不用缓存时计算分数的增长指数（计数）',
    'claims.m.c1_exp_cached': '使用缓存时计算分数的增长指数（计数）',
    'claims.m.c1_ratio_min': '最小 t 处不用缓存与使用缓存的单步耗时之比（实测）',
    'claims.m.c1_ratio': '最大 t 处不用缓存与使用缓存的单步耗时之比（实测）',
    'claims.m.c1_ratio_exp': '该耗时之比的增长指数（实测）',
    'claims.m.c1_t_min': '重放的最小 t',
    'claims.m.c1_t_max': '重放的最大 t',
    'claims.m.c3_bytes_per_token': '每个 token 的已用缓存字节（由缓存张量的形状 × 已填充的槽位数得出）',
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
    'claims.m.c9_window_scores': '窗口层一步计算的分数（计数）',
    'claims.m.c9_full_scores': '完整缓存层在最大 t 处一步计算的分数（计数）',
    'claims.C1.criterion': (
        '计数（引擎对每条路径实际计算的分数的计数，由张量形状决定）：分数按 t^a 增长，不用缓存时 '
        'a 与 2 相差不超过 ±{slack}，使用缓存时与 1 相差不超过 ±{slack}。实测（同一引擎，两种'
        '单步背靠背计时，取 {rounds} 轮中最快的一次）：不用缓存与使用缓存的单步耗时之比按 t^r '
        '增长，r ≥ {min_r:g}，并且在最大的 t 处大于 1。'),
    'claims.C3.criterion': (
        '每一步每层的已用缓存字节 = 2 × H_kv × d_head × 保存的 token 数 × b；已分配的缓冲区 = '
        '按槽位数计算的公式值；计算器对 fp16 的 Llama-2-7B 给出每个 token {per_token} MiB、'
        '32K 时 {at_32k} GiB。'),
    'claims.C4.criterion': '每个生成位置上，缓存与完整前向的最大 |logit 差| ≤ {tol:g}。',
    'claims.C9.criterion': (
        '越过窗口后（t > {cap}），每个窗口层在每一步都正好在 {cap} 个已分配槽位中保存 {cap} 个 '
        'token，而完整缓存（{full}）保存全部 t 个 token。在 t = {t_a} 和 {t_b} 处对一次带缓存的单步'
        '逐层计数（引擎的计数按每层收到的键拆分，各层之和等于总数）：窗口层两处都计算 {heads} 个头 × '
        '{cap} 个键，完整缓存层计算 {heads} × t 个，因此 n 步在窗口层每个头的开销为 n·w，在完整缓存层'
        '约为 n²/2。'),
    'claims.C9.full_global': '全局层',
    'claims.C9.full_run': '同一提示词在完整缓存下的运行',
    # ---------------------------------------------------------------- C2: the measured roofline
    'claims.m.intensity_b1': 'B = 1 时的强度（计数）',
    'claims.m.ridge': '实测脊点',
    'claims.m.bandwidth': '实测内存带宽',
    'claims.m.bandwidth_b1': 'B = 1 时每步字节数 ÷ 每步耗时（实测）',
    'claims.m.bandwidth_share_b1': '它占实测带宽的比例',
    'claims.m.peak_flops': '实测矩阵乘法速率',
    'claims.m.tokens_b1': 'B = 1 时每秒 token 数',
    'claims.m.tokens_b8': 'B = 8 时每秒 token 数',
    'claims.m.batch_speedup': 'B = 8 与 B = 1 的每秒 token 数之比',
    'claims.m.knee_batch': '实测拐点（批大小）',
    'claims.C2.criterion': (
        '解码循环自身的解码步骤，矩阵为 {weights}。B = 1 时受内存带宽限制：这一步的强度（FLOP ÷ 字节，'
        '按它实际读取的张量计数）低于实测脊点（它所运行的乘积的峰值），并且这一步搬运其计数字节的速度'
        '（每步字节数 ÷ 实测每步耗时）≥ 实测带宽的 {share:.0%}；且 B = {b} 的实测每秒 token 数 ≥ '
        'B = 1 的 {k:g} 倍'),
    'claims.C2.under_roof': 'B = 1 的这一步搬运其计数字节的速度不超过实测带宽',
    # ---------------------------------------------------------------- C5, C8, C10: the Attention tab
    'claims.C5.criterion': (
        '记录到的 k 和 v 的头数是 KV 头数（{n_kv}），不是查询头数（{n_q}）；填充后的缓存每个 token '
        '存 2·L·n_kv·d_head·{elem} B'),
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
    'claims.m.c5_mha': 'MHA 变体，每个 token 的字节数（公式）',
    'claims.m.c5_gqa': 'GQA（本模型），每个 token 的字节数',
    'claims.m.c5_mqa': 'MQA 变体，每个 token 的字节数（公式）',
    'claims.k.c5_proportional': 'MHA / GQA / MQA 的字节数与各自的 KV 头数成正比（同一个公式）',
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
    # ---------------------------------------------------------------- C11-C13: the RoPE tab
    'claims.C11.criterion': (
        '在第 {layer} 层全部 {heads} 个头中，把一个真实的 q 和 k 放在 {n}×{n} 个位置上、两侧都旋转：对角线最大离散度 ≤ 最大分数的 '
        '{tol:g}，恒等式误差 ≤ {identity_tol:g}，且我们的 RoPE 复现模型的 q、k 到 ≤ {repro_tol:.2g}'),
    'claims.C12.criterion': (
        '在第 {layer} 层全部 {heads} 个头中，只旋转 q：对角线离散度 ≥ 最大分数的 {min_rel:g}，且 ≥ 两侧都旋转时离散度的 '
        '{min_ratio:g} 倍'),
    'claims.C13.criterion': (
        'base {low} → {high}：θ₀ 不变，其余全部 {others} 对变慢（由公式算出）；且在内置文本的 {tokens} 个 '
        'token 上实测，所有层改用 base {changed}、不经训练时，真实模型的困惑度无论是整段文本还是其最后四分之一'
        '（位置 {far_from}–{far_to}，更远的感受范围本应在这里起作用）都比训练时的 base 高至少 {rise:.0%}。'
        '测量在训练长度（{trained_len:,} 个 token）之内：超过它的前向计算超出了核验面板的 CPU 时间'),
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
    'claims.m.rope_ppl_far_ratio': '改动后 ÷ 训练时的困惑度，最后四分之一',
    # ---------------------------------------------------------------- Claims tab (explorer/claims/board.py, explorer/ui/tabs/claims.py)
    'claims.tab': '论断核验',
    'claims.intro': (
        '## 每个论断，现场核验\n'
        '课程笔记中的每个论断占一行。每一行都在已加载的模型上运行与演示该论断的标签页相同的'
        '证据函数，并用该论断的判据检验测得的数值：判据成立为 ✓，不成立或计算失败为 ✗，'
        '论断还没有证据函数时为 –。**运行**按模型和设备各计算一次（用时见结果摘要），'
        '之后直接从内存作答；**重新运行**会重新测量。每行的链接会打开演示该论断的标签页和小节。'),
    'claims.run': '运行',
    'claims.rerun': '重新运行',
    'claims.rerun_kept': (
        '未重新运行：本服务器保存的看板为所有访客共用，每 {interval} 分钟最多重新测量一次'
        '（{n} 分钟后可再次运行）。上面是保存的看板及其测量时间。'),
    'claims.stop': '停止',
    'claims.test_registry': '⚠ **测试用看板：**以下结论来自测试函数的注册表，并非在模型上测得的论断证据：',
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
    # ---------------------------------------------------------------- C6, C7, C14-C19: the Architecture, MoE and FlashAttention tabs
    # 主张看板：C6、C7、C14-C19（explorer/{architecture,moe,flash}/evidence.py）
    'claims.m.mla_latent_heads': 'DeepSeek-V3 每个词元每层的潜在向量 + RoPE 键',
    'claims.m.mla_gqa_heads': '同样大小的 GQA 缓存的 KV 头数',
    'claims.m.mla_kv_error': 'max |上投影后的缓存 − 不用缓存的 K、V|',
    'claims.m.mla_cache_bytes': '小 MLA 模块的缓存（按张量形状和已写入的 token 数）',
    'claims.m.mla_formula_bytes': '小 MLA 模块的缓存（公式）',
    'claims.m.fold_residual': "最优固定 W' 在所有位置上的残差",
    'claims.m.fold_expected': '按旋转角度算出的闭式值（各维度对等权）',
    'claims.m.fold_residual_one': "只有一个位置时 W' 的残差",
    'claims.m.fold_fast_pair': '最快维度对的残差',
    'claims.m.fold_slow_pair': '最慢维度对的残差',
    'claims.m.arch_facts': 'Llama 式模块成立的事实数',
    'claims.m.arch_facts_tensors': '其中由张量判定的',
    'claims.m.arch_facts_code': '其中由架构代码决定的',
    'claims.m.position_params': '位置嵌入张量中的参数',
    'claims.m.bias_tensors': '偏置张量',
    'claims.m.norms_per_block': '每个模块的归一化数',
    'claims.m.q_heads': '查询头',
    'claims.m.kv_heads': 'KV 头',
    'claims.m.encoder_layers': '编码器层数',
    'claims.m.post_ratio': '后置归一化：最后一个模块的梯度 ÷ 第一个模块的',
    'claims.m.pre_ratio': '前置归一化：最后一个模块的梯度 ÷ 第一个模块的',
    'claims.m.moe_k': 'k（每个词元的专家数）',
    'claims.m.moe_off_k': '没有恰好送往 k 个专家的词元 × 层',
    'claims.m.moe_totals': '不同 k 下参数总量的不同取值个数',
    'claims.consistency': '一致性检查（由构造决定，判定不依赖它们）：',
    'claims.k.moe_routes_to_k': '每个词元恰好被送往 k 个不同的专家（top-k 总是选出 k 个）',
    'claims.k.moe_same_total': '每个 k 下参数总量相同（同一个模型）',
    'claims.k.flash_written': '写回的字节数：分块按调度计数（每个输出块写一次），朴素用论文的公式：线性对二次',
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
    'claims.m.written_naive_exp': '朴素：写回字节数中 n 的指数（公式）',
    'claims.m.written_tiled_exp': '分块：写回字节数中 n 的指数（计数）',
    'claims.m.memory_naive_exp': '朴素：峰值额外内存中 n 的指数（实测）',
    'claims.m.memory_tiled_exp': '分块：峰值额外内存中 n 的指数（实测）',
    'claims.m.traffic_ratio': '最大的 n 上搬运的字节数，朴素（公式）÷ 分块（计数）',
    'claims.m.row_blocks': '该行的键块数',
    'claims.m.row_rises': '运行最大值上升的次数',
    'claims.m.row_max_diff': '|运行最大值 − 整行最大值|',
    'claims.m.row_norm_diff': '归一化因子的相对差',
    'claims.m.row_out_diff': 'max |该行输出 − 完整 softmax 的输出|',
    'claims.C6.criterion': (
        'DeepSeek-V3 的潜在向量 + RoPE 键 = {in_heads:g}·d_head = {gqa:g} 个 KV 头的 GQA（按其公开配置），'
        '且一个 DeepSeek-V3 形状的小模块（通过测试中与 transformers 对照过的检查点映射加载）由上投影后的潜在缓存'
        '还原出的 K、V 与不用缓存时的相差 ≤ {tol:.0e}'),
    'claims.C7.criterion': (
        "对 R_m·W（随机 W，d_k = {d_k}）在 {positions} 个位置上最优的固定 W' 留下的残差 ≥ {threshold:.0f} %，"
        '且与按旋转角度算出的闭式值（{expected:.1f} %）相差不超过 {tol:.0f} 个百分点，而单个位置可以精确拟合'),
    'claims.C18.criterion': (
        'Llama 式模块的 {n} 项事实全部成立。由检查点的张量（有哪些张量、形状如何）判定：门控 MLP（SwiGLU 或 GeGLU）、'
        'KV 头少于查询头、没有偏置张量、没有编码器张量、没有交叉注意力张量。由该架构的代码决定、张量只能与之矛盾：'
        '前置归一化（每个归一化的位置来自其名称）、RMSNorm（归一化只有权重）、RoPE（没有位置嵌入张量）'),
    'claims.C19.criterion': (
        '初始化时 {depth} 层：最后一个模块的梯度 ÷ 第一个模块的，后置归一化 ≥ {post_min:g}，'
        '前置归一化 ≤ {pre_max:g}'),
    'claims.C14.criterion': (
        '计算器按各自公开的配置计算，舍入后等于 Mixtral 的 {mixtral} B 和 DeepSeek-V3 的 '
        '{deepseek} B（总量 / 激活）；实测的每个词元时间，k = {k1} 时 ≥ k = {k0} 时的 {threshold:g}×'),
    'claims.C15.criterion': (
        '在 {tokens} 个验证词元上，不做均衡时负载的变异系数（各层平均）≥ 辅助损失路由器和偏置路由器的 '
        '{margin:g}×'),
    'claims.C16.criterion': (
        '在已加载模型的一个头上 max |分块 − 朴素| ≤ {tol:.0e}；从 n = {n0} 到 {n1}（随机输入：内存与数值无关），'
        '实测的峰值额外内存按 n^e 增长，朴素 e ≥ {quadratic:g}，分块 e ≤ {linear:g}'),
    'claims.C17.criterion': (
        '一行的运行最大值至少上升一次，且最后一个块之后最大值、归一化因子和输出与完整 softmax 相差都在 '
        '{tol:.0e} 之内'),
    # C21, C22: our claims on the logit lens (explorer/nexttoken/evidence.py)
    "claims.C21.criterion": (
        "我们自己的论断：logit lens 的最后一层就是模型自己的 logits，逐位相同。判据：在“{prompt}”上，"
        "最后一层读出的 lens 与前向计算在最后位置的 logits 完全相等（torch.equal，最大 |差| = 0）。"
    ),
    "claims.C22.criterion": (
        "我们自己的论断：层越深，lens 与最终预测越一致。判据：在长文本的前 {tokens} 个词元上（取其最后 "
        "{positions} 个位置），输出前最后三分之一层中 lens 首选词元与最终首选词元的平均一致率，"
        "比前三分之一层高出至少 {rise:.0f} 个百分点。"
    ),
}
