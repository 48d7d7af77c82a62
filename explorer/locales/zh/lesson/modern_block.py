"""现代 block 课程（explorer/lessons/modern_block.py）的中文文本。"""
STRINGS = {
    "lesson.block.title": "现代 block",
    "lesson.block.summary": "从 2017 年的 Transformer block 到 Llama 的 block：从真实张量读出的四处变化，以及 pre-norm 为什么能训深层网络。",
    "lesson.block.s1.look": "图中把**原始 Transformer** 和 GPT-2 的 block 与本应用运行的各个 checkpoint 的 block 并排放置，后者都从张量中读出。注意 norm 的位置和种类、位置编码、MLP 的门控、KV head 数量以及 bias。",
    "lesson.block.s1.said": "现代 block 的 {n} 项特征（pre-norm、RMSNorm、RoPE、门控 MLP、KV head 少于 query head、没有 bias、没有 encoder、没有 cross-attention）中，**{original}** 具备 **{orig}** 项，**{gpt2_title}** 具备 {gpt2} 项。从 checkpoint 的张量中读出：{models}。每个 checkpoint 都具备全部 {n} 项：{verdict}。",
    "lesson.block.s2.look": "norm 为什么要挪位置？由同样的 block 堆成的 post-norm 和 pre-norm 网络从相同的权重出发；一次反向传播测出**每个 block 的梯度范数**。图中从第一个 block 画到最后一个。",
    "lesson.block.s2.said": "初始化时最后一个 block 与第一个 block 的梯度之比：{rows}。C19 要求 post-norm 的比值至少 {post_min} 倍、pre-norm 的至多 {pre_max} 倍；在 {depth} 层时 post-norm 为 **{post:.2f} 倍**，pre-norm 为 **{pre:.2f} 倍**：{verdict}。post-norm 让梯度每过一层都穿过一次 norm；pre-norm 在主干上留下一条不被缩放的恒等通路。",
}
