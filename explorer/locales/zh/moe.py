"""The MoE tab, its figures and verdicts, in Simplified Chinese (简体中文)."""

STRINGS: dict[str, str] = {
    # ---------------------------------------------------------------- MoE tab (explorer/ui/tabs/moe.py)
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
        '由各模型公开的 config.json 数值计算（explorer/published.py 注明了文件）：嵌入、注意力'
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
    # ------------------------------------- MoE figures: figures() of explorer/moe/{routing,balance,preferences,params,cost,whatif}.py
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
    # ---------------------------------------------------------------- verdicts (C14, C15)
    # each chosen by the criterion the claims board uses
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
}
