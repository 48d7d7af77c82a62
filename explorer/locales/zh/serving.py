"""The class as one batch (the Generate tab's section on the shared decode loop) and claim C20,
in Simplified Chinese (简体中文)."""
STRINGS = {
    'serving.section': '全班作为一个批次',
    'serving.intro': (
        "这台服务器上每位访客的生成都由**同一个循环**解码：每一步用一次前向计算为所有正在解码的"
        "请求各算出下一个 token，所以权重只为它们一起读取一次（迭代级批处理）。请求在两步之间加入，"
        "完成后离开。下方显示：此刻循环中的请求（你的高亮显示，其他人匿名：只有长度和计数），每个请求"
        "的缓存在池化存储中占的宽度，以及按 16 个 token 一块的分页布局会占多少；还有每步耗时与"
        "这一步中请求数的关系，旁边是 roofline 的预测（论断 C20）。本区打开时每 2 秒刷新一次；"
        "在第一个区里从多个页面或设备开始生成，就能把它填满。"),
    'serving.refresh': '立即刷新',
    'serving.you': '你 · {n}',
    'serving.run': '请求 {n}',
    'serving.state.waiting': '等待中',
    'serving.state.prefilling': '预填充中',
    'serving.state.decoding': '解码中',
    'serving.fig.rows': '循环中的请求：已用缓存与池化存储中的行宽',
    'serving.fig.used': '已存（token）',
    'serving.fig.used_own': '已存，你的请求',
    'serving.fig.allocated': '池化存储的行宽',
    'serving.fig.paged': '分页：每块 {block} 个 token',
    'serving.fig.tokens': '缓存槽位（token）',
    'serving.fig.hover': '%{{y}}：%{{x}} 个槽位<extra>%{{fullData.name}}</extra>',
    'serving.fig.no_runs': '此刻循环中没有请求：在“运行”区按“开始”（或者让全班来按）。',
    'serving.fig.steps': '解码每步耗时与这一步中的请求数',
    'serving.fig.measured': '实测的步',
    'serving.fig.median': '每个 B 的中位数',
    'serving.fig.predicted': 'roofline 的预测（上下文 {t}）',
    'serving.fig.knee': '拐点 B ≈ {b:.0f}',
    'serving.fig.runs_axis': '这一步中的请求数（B）',
    'serving.fig.ms_axis': '每步耗时（毫秒）',
    'serving.fig.step_hover': 'B = %{{x}}：%{{y:.1f}} 毫秒<extra>%{{fullData.name}}</extra>',
    'serving.fig.no_steps': '还没有记录到解码步。',
    'serving.summary': (
        '**{decoding} 个解码中**，{prefilling} 个预填充中，{waiting} 个等待中（一步最多 {max_batch} 个）。'
        '这些请求的缓存：已存 **{used}**，池化存储中分配了 **{allocated}**，按每块 {block} 个 token '
        '分页则为 **{paged}**（{blocks} 块）。前缀复用为**你的请求省下了 {shared:,} 个提示 token**'
        '（直接复制，不再重新计算）：只统计你自己在这个模型上的请求，从不包括别人的。'),
    'serving.summary.own': '你的请求：第 {rows} 行（高亮显示）。',
    'serving.summary.no_own': '这些请求中没有你的。',
    'serving.summary.hidden': '另有 {n} 个请求没有画出。',
    'serving.summary.knee': (
        'roofline（{model}，本设备实测的屋顶，上下文 {t}）预测：直到 B ≈ {knee:.0f}，这一步都受内存带宽'
        '限制：在此之前，多几个请求的一步几乎不比一个请求贵；过了它，每步耗时随 B 增长。'),
    'serving.summary.no_knee': (
        'roofline（{model}，本设备实测的屋顶，上下文 {t}）预测：在循环接受的每个批大小上，这一步都受'
        '内存带宽限制。'),
    'serving.summary.no_roof': '正在测量本设备的屋顶：几秒后给出预测。',
    'serving.summary.steps': '实测：{rows}。',
    'serving.summary.step_row': 'B = {b}：{ms:.0f} 毫秒（每秒 {tps:.0f} 个 token）',
    # 主张看板：C20（explorer/generate/batch_evidence.py）
    'serving.c20.criterion': (
        '解码循环自身的步骤，权重为 {weights}（单个请求走融合步骤）：在 B = 2 时，以及 B = 4 不超过 '
        'roofline 拐点四分之一时，每秒 token 数 ≥ {k:g} × B × 单个请求的每秒 token 数；B ≥ 4 时最好的每秒 token '
        '数 ≥ B = 2 时的 {g:g} 倍（若 roofline 拐点 K 小于 3，则为 K/2 倍）；并且实测拐点（B 加倍使每秒 token 数增长至少 √2 倍的最后一次加倍的终点）与这些权重的 roofline 拐点相差不超过 {f:g} 倍（若该拐点在 B = {last} 之后，'
        '则增长至少持续到它的 1/{f:g}）'),
    'serving.m.tokens_b1': 'B = 1 时每秒 token 数',
    'serving.m.tokens_b2': 'B = 2 时每秒 token 数',
    'serving.m.tokens_b4': 'B = 4 时每秒 token 数',
    'serving.m.tokens_b8': 'B = 8 时每秒 token 数',
    'serving.m.tokens_b16': 'B = 16 时每秒 token 数',
    'serving.m.tokens_b32': 'B = 32 时每秒 token 数',
    'serving.m.efficiency_b2': 'B = 2 时的效率',
    'serving.m.efficiency_b4': 'B = 4 时的效率',
    'serving.m.efficiency_b32': 'B = 32 时的效率',
    'serving.m.knee': 'roofline 的拐点（B）',
    'serving.m.measured_knee': '实测拐点（B）',
    'serving.m.past_pair': 'B ≥ 4 时最好的每秒 token 数与 B = 2 之比',
}
