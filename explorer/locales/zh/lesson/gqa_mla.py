"""GQA、MQA 与 MLA 课程（explorer/lessons/gqa_mla.py），中文。"""
STRINGS = {
    "lesson.gqa.title": "GQA、MQA 与 MLA",
    "lesson.gqa.summary": "为什么缓存只计 KV 头、共享它们能省多少，以及 MLA 如何改为缓存一个潜向量。",
    "lesson.gqa.s1.look": "每个**查询头**（上排）读取一个 **KV 头**（下排）的 K 和 V；同一颜色的头共用它。看看每个 KV 头服务多少个查询头。",
    "lesson.gqa.s1.said": "{title}：**{q_heads} 个查询头**读取 **{n_kv} 个 KV 头**，每组 {n_rep} 个（记录到的 q 有 {q_heads} 个头，k 和 v 各有 {k_heads} 个）。引擎的缓存**每个词元占 {measured:,.0f} B** = 2 × {layers} 层 × {n_kv} 个 KV 头 × {head_dim} 维 × {elem} B：公式里是 KV 头数，而不是查询头数：{verdict}。",
    "lesson.gqa.s2.look": "如果每个查询头都有自己的 K 和 V（多头注意力，MHA），缓存就要按查询头计数。运行之前，先预测能省多少。",
    "lesson.gqa.s2.ask": "MHA（每个查询头各有一个 KV 头）的缓存是这个模型缓存的多少倍？",
    "lesson.gqa.s2.said": "如果每个查询头各有一个 KV 头，缓存**每个词元要占 {mha:,} B**；你的运行中缓存占 **{measured:,.0f} B**：只有前者的 **1/{answer:g}**。MQA（所有查询头共用一个 KV 头）则只占 {mqa:,} B。",
    "lesson.gqa.s2.why": "原因：缓存每个词元存 2 × L × H_kv × d_head × 字节数。MHA 的 H_kv = {q_heads}，这个模型是 {n_kv}；层数（{layers}）、头维度（{head_dim}）和字节数（{elem}）两边相同，相互抵消：{mha:,} / {measured:,.0f} = {q_heads} / {n_kv} = {answer:g}。",
    "lesson.gqa.s3.look": "计算器把同一个公式用于已发布的模型形状。看同一形状的 **MHA / GQA / MQA** 表，以及注意力一栏写着 MLA 的 **DeepSeek-V3** 那一行。",
    "lesson.gqa.s3.said": "在 {tokens:,} 个词元、每个数 {bytes} B 时：{base} 的形状（{q_heads} 个查询头）作为 MHA **每个词元缓存 {mha:.3f} MiB**，用它的 {gqa_kv:g} 个 KV 头（GQA）是 **{gqa:.3f} MiB**，作为 MQA 是 **{mqa:.4f} MiB**，与 KV 头数成正比：{proportional}；在 {tokens:,} 个词元时是 {gqa_total}，而不是 {mha_total}。Llama-2-7B（MHA）每个词元 {llama2_mib:g} MiB、共 {llama2_gib:g} GiB：正是公开的 0.5 MB 和 16 GB：{published}。DeepSeek-V3 **每个词元只缓存 {mla_kib:.1f} KiB**，只有它展开成的逐头 K 和 V（{expanded_kib:,.0f} KiB）的 1/{mla_ratio:.0f}。",
    "lesson.gqa.s4.look": "MLA 每个词元、每层只缓存一个小的**潜向量**，注意力需要时再通过上投影展开成每个头的 K 和 V。左图以 d_head 为单位，统计每个词元缓存的数值个数。",
    "lesson.gqa.s4.said": "DeepSeek-V3 每个词元、每层缓存 **{r}** 个数的潜向量加上 **{rope}** 个数的 RoPE 键：{latent} = **{in_heads:g} d_head**（d_head = {d_head}），相当于只有 **{gqa_heads:g} 个 KV 头**的 GQA，但 {heads} 个头仍然各有自己的 K 和 V；是 MHA 的 2 × {heads} × {d_head} 的 1/{mha_ratio:.0f}。你这次点击运行的小型 MLA 模块为 {tokens} 个词元缓存了 {cache_bytes:,} B（公式：{formula_bytes:,} B；逐头 K 和 V：{expanded_bytes:,} B），上投影后还原出每个头的 K 和 V，误差在 {error:.1e} 以内：{verdict}。",
}
