"""The Attention tab: maps under causal / window / sinks / sink-logit masks with the mask drawn
next to them, the grouped-query layout, attention sinks, the StreamingLLM experiment, the
receptive field through depth, and local vs global layers. Thin wiring over
explorer.attention_maps, explorer.sinks and explorer.receptive_field."""
from __future__ import annotations

import math
from typing import Any

import gradio as gr

from explorer import attention_maps as am
from explorer import receptive_field as rf
from explorer import sinks
from explorer.inputs import InputError, whole_number
from explorer.i18n import normalize_language
from explorer.texts import LONG_TEXT_SOURCE, long_text
from explorer.ui import TabContext

LATEX = [{"left": "$$", "right": "$$", "display": True}, {"left": "$", "right": "$", "display": False}]
DEFAULT_PROMPT = ("The cat sat on the mat because it was tired. Later that day, the dog came "
                  "in and sat next to the cat, and the")
LONG_TEXT_MAX = 4096
STREAM_DEFAULT_TOKENS = 2048

TITLE = "attention.tab"
STRINGS = {
    "attention.tab": {"en": "Attention", "zh": "注意力"},
    "attention.intro": {
        "en": "## Attention maps of the real model\n"
              "Each map is one real forward pass of the loaded checkpoint through our modules "
              "(eager or tiled path, the ones that return probabilities): row $i$ is query token "
              "$i$, column $j$ key token $j$, the cell is "
              "$p_{ij} = \\mathrm{softmax}_j\\left(q_i \\cdot k_j / \\sqrt{d}\\right)$ "
              "over the keys the mask lets it see. The mask on the right is drawn from the very "
              "predicate that forward used for this layer. Changing the mask reruns the model "
              "under it and shows what happens to the next-token distribution.",
        "zh": "## 真实模型的注意力图\n"
              "每张图都是已加载检查点经我们的模块做的一次真实前向计算（eager 或分块路径，"
              "只有它们会返回概率）：第 $i$ 行是查询 token $i$，第 $j$ 列是键 token $j$，格子里是 "
              "$p_{ij} = \\mathrm{softmax}_j\\left(q_i \\cdot k_j / \\sqrt{d}\\right)$，"
              "只在掩码允许看到的键上归一化。右边的掩码正是这次前向计算在该层使用的同一个谓词画出来的。"
              "改变掩码会在新掩码下重新运行模型，并显示下一个 token 的分布如何变化。",
    },
    "attention.prompt": {"en": "Prompt", "zh": "提示词"},
    "attention.layer": {"en": "Layer", "zh": "层"},
    "attention.head": {"en": "Head", "zh": "注意力头"},
    "attention.all_heads": {"en": "all heads", "zh": "全部头"},
    "attention.impl": {"en": "Attention path", "zh": "注意力计算路径"},
    "attention.impl_info": {
        "en": "tiled = the FlashAttention-style online softmax in readable PyTorch, run in every "
              "layer: same numbers, about 10× slower here",
        "zh": "tiled = 用易读的 PyTorch 写的 FlashAttention 式在线 softmax，每一层都用它：数值相同，"
              "在这里大约慢 10 倍",
    },
    "attention.generate": {"en": "Generated tokens to include", "zh": "包含的生成 token 数"},
    "attention.mask": {"en": "Mask", "zh": "掩码"},
    "attention.mask.causal": {"en": "causal (the checkpoint's own)", "zh": "因果（检查点自带）"},
    "attention.mask.window": {"en": "sliding window w", "zh": "滑动窗口 w"},
    "attention.mask.sinks": {"en": "sinks s + window w", "zh": "汇 s + 窗口 w"},
    "attention.mask.sink_logit": {"en": "sink logit b (gpt-oss)", "zh": "汇 logit b（gpt-oss）"},
    "attention.window": {"en": "window w", "zh": "窗口 w"},
    "attention.sinks": {"en": "sinks s", "zh": "汇 s"},
    "attention.sink_logit": {"en": "sink logit b", "zh": "汇 logit b"},
    "attention.run": {"en": "Run the model", "zh": "运行模型"},
    "attention.data": {"en": "Numbers as data", "zh": "数据形式的数值"},
    "attention.map_summary": {
        "en": "**Layer {layer}**, {n_tokens} tokens ({n_generated} generated), mask: "
              "**{mask}** (this layer used: {layer_mask}), {impl} path, {seconds:.1f} s.  \n"
              "Row sums: min {row_min:.6f}, max {row_max:.6f}{absorbed}. "
              "Largest probability outside the mask: **{masked_max:g}**. "
              "Drawn mask == where the probabilities are non-zero: **{mask_matches}**.  \n"
              "Next token: unmodified model `{base_top}`, with this mask `{new_top}`; "
              "KL(unmodified ‖ masked) = **{kl:.4f}** nats.",
        "zh": "**第 {layer} 层**，{n_tokens} 个 token（其中 {n_generated} 个为生成），掩码："
              "**{mask}**（该层实际使用：{layer_mask}），{impl} 路径，耗时 {seconds:.1f} 秒。  \n"
              "行和：最小 {row_min:.6f}，最大 {row_max:.6f}{absorbed}。"
              "掩码之外的最大概率：**{masked_max:g}**。"
              "画出的掩码 == 概率非零的位置：**{mask_matches}**。  \n"
              "下一个 token：原模型 `{base_top}`，此掩码下 `{new_top}`；"
              "KL(原模型 ‖ 加掩码) = **{kl:.4f}** nats。",
    },
    "attention.absorbed": {"en": " (the sink logit absorbed {mean:.3f} on average, up to {max:.3f})",
                           "zh": "（汇 logit 平均吸收了 {mean:.3f}，最多 {max:.3f}）"},
    "attention.gqa_heading": {"en": "## Grouped-query attention: which query heads share a KV head",
                              "zh": "## 分组查询注意力：哪些查询头共享同一个 KV 头"},
    "attention.gqa_summary": {
        "en": "**{title}**: {n_heads} query heads, {n_kv} KV head(s), groups of {n_rep}. "
              "Recorded tensors of layer 0 in a real forward: q {q_shape}, k {k_shape}, "
              "v {v_shape}. The cache stores only the KV heads: "
              "$2 \\times {layers} \\times {n_kv} \\times {head_dim} \\times 4$ B = "
              "**{cache:,} B per token** in fp32; with one KV head per query head (MHA) it would be "
              "{mha:,} B.",
        "zh": "**{title}**：{n_heads} 个查询头，{n_kv} 个 KV 头，每组 {n_rep} 个。"
              "一次真实前向中第 0 层记录到的张量：q {q_shape}，k {k_shape}，v {v_shape}。"
              "缓存只存 KV 头：$2 \\times {layers} \\times {n_kv} \\times {head_dim} \\times 4$ B = "
              "**每个 token {cache:,} B**（fp32）；若每个查询头各有一个 KV 头（MHA）则为 {mha:,} B。",
    },
    "attention.sinks_heading": {
        "en": "## Attention sinks\n"
              "For every layer × head: the attention mass on the first token, and on the first $s$ "
              "tokens, averaged over query rows $i \\ge 8$, measured on the opening of the long "
              "text below. With a sink logit $b$ the softmax gets an extra term, "
              "$p_{ij} = e^{z_{ij}} / (e^{b} + \\sum_k e^{z_{ik}})$, and the mass it absorbs "
              "is $1 - \\sum_j p_{ij}$.",
        "zh": "## 注意力汇（attention sink）\n"
              "对每一层 × 每个头：落在第一个 token、以及前 $s$ 个 token 上的注意力质量，"
              "对查询行 $i \\ge 8$ 取平均，在下方长文本的开头部分上测得。加入汇 logit $b$ 后，"
              "softmax 的分母多出一项：$p_{ij} = e^{z_{ij}} / (e^{b} + \\sum_k e^{z_{ik}})$，"
              "它吸收的质量为 $1 - \\sum_j p_{ij}$。",
    },
    "attention.sink_tokens": {"en": "tokens of the long text", "zh": "长文本的 token 数"},
    "attention.use_sink_logit": {"en": "add a sink logit b", "zh": "加入汇 logit b"},
    "attention.sink_run": {"en": "Measure the sinks", "zh": "测量注意力汇"},
    "attention.sink_summary": {
        "en": "{n_tokens} tokens, {seconds:.1f} s for the forward. Mass on token 0 (“{token0}”), "
              "mean over all heads: **{first_mean:.3f}**; {n_over_half} of {n_cells} heads put "
              "more than half of their attention on it. On the first {s} tokens: "
              "**{first_s_mean:.3f}**.{absorbed}",
        "zh": "{n_tokens} 个 token，前向计算耗时 {seconds:.1f} 秒。落在第 0 个 token（“{token0}”）上的"
              "质量，所有头平均：**{first_mean:.3f}**；{n_cells} 个头中有 {n_over_half} 个把一半以上的"
              "注意力放在它上面。前 {s} 个 token 上：**{first_s_mean:.3f}**。{absorbed}",
    },
    "attention.sink_absorbed": {
        "en": " The sink logit b = {b:g} absorbs **{mean:.3f}** of the mass on average "
              "(from {min:.3f} to {max:.3f} per head).",
        "zh": " 汇 logit b = {b:g} 平均吸收 **{mean:.3f}** 的质量（各头从 {min:.3f} 到 {max:.3f}）。",
    },
    "attention.stream_heading": {
        "en": "## StreamingLLM: evict the first tokens and the model falls apart?\n"
              "Per-token negative log-likelihood along the long text, fed in chunks through the "
              "engine's own KV cache with three eviction policies: the full cache; a window of "
              "the last $w$ tokens only (the first tokens are evicted); and $s$ sink tokens kept "
              "forever plus the window. On a model with sliding-window layers (Gemma 3) the full "
              "cache keeps their own window of 512, and a fourth policy keeps the sinks in the "
              "global layers only. One pass per policy gives exactly the NLL a cache with that "
              "policy gives token by token. On a 2-core CPU one pass over 2,048 tokens takes "
              "about one to two minutes (the measured time of each pass is shown); a result, "
              "once measured, is kept in memory and comes back at once.",
        "zh": "## StreamingLLM：驱逐最前面的 token，模型就崩了吗？\n"
              "沿长文本逐 token 计算负对数似然：文本分块送入引擎自己的 KV 缓存，使用三种驱逐策略："
              "完整缓存；只保留最近 $w$ 个 token 的窗口（最前面的 token 被驱逐）；"
              "永久保留 $s$ 个汇 token 再加窗口。对带滑动窗口层的模型（Gemma 3），完整缓存中这些层仍保留自己的 "
              "512 窗口，并增加第四种策略：只在全局层保留汇 token。每种策略跑一遍，得到的 NLL 与该策略的缓存逐 token "
              "解码得到的完全相同。在双核 CPU 上，对 2,048 个 token 跑一遍大约需要一到两分钟（下方显示每一遍的实测时间）；"
              "测过的结果会保存在内存中，再次请求时立即返回。",
    },
    "attention.source": {"en": f"Text: {LONG_TEXT_SOURCE}", "zh": f"文本：{LONG_TEXT_SOURCE}"},
    "attention.stream_tokens": {"en": "tokens of the text", "zh": "文本 token 数"},
    "attention.stream_run": {"en": "Measure perplexity (slow)", "zh": "测量困惑度（较慢）"},
    "attention.stream_table": {
        "en": "Perplexity over positions ≥ {past} (past the window), measured on **{model}**, "
              "{n} tokens:\n\n| policy | perplexity | × full | time |\n|---|---|---|---|\n{rows}",
        "zh": "位置 ≥ {past}（超出窗口之后）的困惑度，在 **{model}** 上测得，共 {n} 个 token：\n\n"
              "| 策略 | 困惑度 | 相对完整缓存 | 耗时 |\n|---|---|---|---|\n{rows}",
    },
    "attention.stream_collapses": {
        "en": "**Measured:** evicting the first tokens makes this model fall apart: perplexity past "
              "the window is **{window_ratio:.1f}×** the full cache's.",
        "zh": "**实测：**驱逐最前面的 token 让这个模型崩溃：窗口之后的困惑度是完整缓存的 "
              "**{window_ratio:.1f} 倍**。",
    },
    "attention.stream_degrades": {
        "en": "**Measured:** evicting the first tokens does not make this model fall apart, but it "
              "clearly hurts: perplexity past the window is **{window_ratio:.2f}×** the full "
              "cache's.",
        "zh": "**实测：**驱逐最前面的 token 没有让这个模型彻底崩溃，但明显变差：窗口之后的困惑度是"
              "完整缓存的 **{window_ratio:.2f} 倍**。",
    },
    "attention.stream_unchanged": {
        "en": "**Measured:** on this model, evicting the first tokens barely matters here: "
              "perplexity past the window is **{window_ratio:.2f}×** the full cache's.",
        "zh": "**实测：**在这个模型上，驱逐最前面的 token 影响很小：窗口之后的困惑度是完整缓存的 "
              "**{window_ratio:.2f} 倍**。",
    },
    "attention.stream_sinks": {
        "en": " Keeping {s} sink tokens gives **{sinks_ratio:.2f}×** (it closes {closed:.0%} of the "
              "gap).",
        "zh": " 保留 {s} 个汇 token 后为 **{sinks_ratio:.2f} 倍**（弥补了 {closed:.0%} 的差距）。",
    },
    "attention.stream_sinks_worse": {
        "en": " Keeping {s} sink tokens in every layer makes it **worse** here: **{sinks_ratio:.2f}×**.",
        "zh": " 在每一层都保留 {s} 个汇 token，在这里反而**更差**：**{sinks_ratio:.2f} 倍**。",
    },
    "attention.stream_sinks_global": {
        "en": " Keeping them only in the global layers (the sliding-window layers keep just the "
              "window): **{global_ratio:.2f}×**.",
        "zh": " 只在全局层保留它们（滑动窗口层只保留窗口）：**{global_ratio:.2f} 倍**。",
    },
    "attention.stream_local_harm": {
        "en": " So the harm comes from the sliding-window layers: in this checkpoint they never "
              "see a token more than {own_window} positions back, and forcing them to keep the "
              "first tokens at larger distances hurts more than it helps.",
        "zh": " 可见伤害来自滑动窗口层：在这个检查点中它们从未看到过超过 {own_window} 个位置之前的 "
              "token，强迫它们在更远的距离上保留最前面的 token 弊大于利。",
    },
    "attention.stream_other": {"en": "Also measured in this server: {models}.",
                               "zh": "本服务器上也已测过：{models}。"},
    "attention.rf_rule": {"en": "first layer, rule", "zh": "最先变化的层（规则）"},
    "attention.rf_measured": {"en": "first layer, measured", "zh": "最先变化的层（实测）"},
    "attention.rf_heading": {
        "en": "## Receptive field through depth\n"
              "Replace the token $d$ positions before the last one and compare the last "
              "position's hidden state after every layer with the unperturbed run. With a window "
              "$w$ each layer carries information at most $w-1$ positions, so after $L$ layers "
              "the reach is $L(w-1)+1$ tokens. Out of reach the hidden state is bit-for-bit "
              "unchanged (grey).",
        "zh": "## 随深度扩大的感受野\n"
              "把最后一个位置之前第 $d$ 个 token 换掉，逐层比较最后一个位置的隐藏状态与未扰动时的差别。"
              "窗口为 $w$ 时，每一层最多把信息传递 $w-1$ 个位置，所以经过 $L$ 层后感受野为 "
              "$L(w-1)+1$ 个 token。超出范围时隐藏状态逐位完全不变（灰色）。",
    },
    "attention.rf_mode": {"en": "Masks", "zh": "掩码"},
    "attention.rf_mode.forced": {"en": "force a window w on every layer", "zh": "对每一层强制窗口 w"},
    "attention.rf_mode.own": {"en": "the model's own masks", "zh": "模型自带的掩码"},
    "attention.rf_tokens": {"en": "tokens of the long text", "zh": "长文本的 token 数"},
    "attention.seed": {"en": "seed (replacement tokens)", "zh": "随机种子（替换 token）"},
    "attention.rf_run": {"en": "Probe the receptive field", "zh": "探测感受野"},
    "attention.rf_summary": {
        "en": "{n_tokens} tokens, windows per layer: {windows}; {seconds:.1f} s for one batched "
              "forward of {batch} rows. First layer that changes, measured vs the rule: "
              "**{agree} of {total} distances agree**.  \n{rows}",
        "zh": "{n_tokens} 个 token，各层窗口：{windows}；一次 {batch} 行的批量前向耗时 {seconds:.1f} 秒。"
              "最先发生变化的层，实测与规则对比：**{total} 个距离中有 {agree} 个一致**。  \n{rows}",
    },
    "attention.reach_heading": {
        "en": "Reach $L(w-1)+1$ from public configs (Mistral 7B: $32 \\cdot 4095 + 1 = 131{,}041$):",
        "zh": "由公开配置算出的感受野 $L(w-1)+1$（Mistral 7B：$32 \\cdot 4095 + 1 = 131{,}041$）：",
    },
    "attention.lg_heading": {
        "en": "## Local vs global layers\n"
              "A sliding-window layer computes about $n \\cdot w$ scores and caches at most $w$ "
              "tokens; a global layer computes $n(n+1)/2$ and caches all $n$. The counts below come "
              "from the loaded model's own per-layer masks (visible query-key pairs) and from the "
              "engine's KV cache allocated for $n$ tokens.",
        "zh": "## 局部层与全局层\n"
              "滑动窗口层大约计算 $n \\cdot w$ 个分数，缓存最多 $w$ 个 token；全局层计算 "
              "$n(n+1)/2$ 个分数并缓存全部 $n$ 个 token。下面的计数来自已加载模型自身的逐层掩码"
              "（可见的查询-键对）以及引擎为 $n$ 个 token 分配的 KV 缓存。",
    },
    "attention.lg_summary": {
        "en": "**{title}**: {n_local} local layers (window {window}), {n_global} global. "
              "At n = {n:,}: a forward needs **{ratio:.0%}** of the scores it would need with "
              "every layer global; the cache is **{cache_ratio:.0%}** of a full-length cache.",
        "zh": "**{title}**：{n_local} 个局部层（窗口 {window}），{n_global} 个全局层。"
              "当 n = {n:,} 时：一次前向所需的分数是全部为全局层时的 **{ratio:.0%}**；"
              "缓存是全长缓存的 **{cache_ratio:.0%}**。",
    },
    "attention.lg_no_local": {
        "en": "**{title}** has no sliding-window layers: every layer is global (use the masks above, "
              "or pick Gemma 3, to see local layers).",
        "zh": "**{title}** 没有滑动窗口层：每一层都是全局层（可用上面的掩码，或选择 Gemma 3 查看局部层）。",
    },
    "attention.yes": {"en": "yes", "zh": "是"},
    "attention.no": {"en": "no", "zh": "否"},
    "attention.col.token": {"en": "token", "zh": "token"},
    "attention.col.p_base": {"en": "p unmodified", "zh": "p（原模型）"},
    "attention.col.p_mask": {"en": "p with this mask", "zh": "p（此掩码下）"},
    **am.FIGURE_STRINGS,
    **sinks.FIGURE_STRINGS,
    **rf.FIGURE_STRINGS,
}

# Column names of am.next_token_table (English there, kept in the stored data), per language here.
NEXT_TOKEN_COLUMNS = {"token": "attention.col.token", "p unmodified": "attention.col.p_base",
                      "p with this mask": "attention.col.p_mask"}


def _check_lang(lang: Any) -> str:
    return normalize_language(lang)


def _as_error(error: Exception) -> gr.Error:
    return gr.Error(str(error))


def _title(loaded) -> str:
    return getattr(loaded.spec, "title", loaded.name)


def _long_ids(loaded, n_tokens: int) -> list[int]:
    ids = loaded.tokenizer(long_text()).input_ids
    if n_tokens > len(ids):
        raise InputError(f"The long text has {len(ids)} tokens with this tokenizer; "
                                  f"asked for {n_tokens}.")
    return [int(i) for i in ids[:n_tokens]]


# ----------------------------------------------------------------------------- handlers (plain)


def compute_map(loaded, prompt, layer, head, mask_kind, window, sinks_n, sink_logit, impl,
                n_generate, lang: str = "en") -> tuple[Any, Any, dict, dict]:
    """(attention figure, mask figure, data, view) for the tab; raises InputError.
    `view` holds what redrawing another head, or in another language, needs (kept per
    visitor in gr.State)."""
    import time

    config = loaded.config
    choice = am.mask_choice(mask_kind, window, sinks_n, sink_logit)
    layer = whole_number(layer, "The layer", 0, config.n_layers - 1)
    if head in (None, "", "all"):
        head = None
    else:
        head = whole_number(head, "The head", 0, config.n_heads - 1)
    if impl not in am.IMPLS:
        raise InputError(f"Unknown attention path {impl!r}; choose eager or tiled.")
    n_generate = whole_number(n_generate, "The number of generated tokens", 0, am.MAX_GENERATED)
    limit = am.max_tokens(loaded.device)
    ids = am.encode_prompt(loaded.tokenizer, prompt, limit)
    if len(ids) + n_generate > limit:
        raise InputError(f"Prompt ({len(ids)} tokens) + {n_generate} generated tokens "
                                  f"exceeds the limit of {limit} tokens here.")
    start = time.perf_counter()
    model = loaded.model
    n_prompt = len(ids)
    all_ids = ids + am.greedy_continuation(model, ids, n_generate, choice)
    layer_map = am.layer_attention(model, all_ids, layer, choice, impl)
    if choice.is_default:
        base_logits = layer_map.last_logits
    else:
        base_logits = am.last_logits(model, all_ids)
    table, kl = am.next_token_table(loaded.tokenizer, base_logits, layer_map.last_logits)
    seconds = time.perf_counter() - start
    labels = am.token_labels(loaded.tokenizer, all_ids)
    view = {"layer_map": layer_map, "labels": labels, "n_prompt": n_prompt,
            "title": _title(loaded), "n_kv_heads": config.n_kv_heads, "n_heads": config.n_heads,
            "head": head}
    fig, mask_fig = redraw_map(view, lang)
    probs = layer_map.probs
    masked = probs[:, ~layer_map.visible]
    absorbed = layer_map.sink_mass
    data = {
        "model": loaded.name, "layer": layer, "head": "all" if head is None else head,
        "n_tokens": len(all_ids), "n_prompt": n_prompt, "n_generated": len(all_ids) - n_prompt,
        "mask": choice.describe(), "layer_mask": layer_map.layer_mask.describe(), "impl": impl,
        "row_sum_min": float(probs.sum(-1).min()), "row_sum_max": float(probs.sum(-1).max()),
        "masked_max": float(masked.abs().max()) if masked.numel() else 0.0,
        "mask_matches_nonzero": bool(((probs > 0).any(0) == layer_map.visible).all()),
        "sink_mass_mean": float(absorbed.mean()), "sink_mass_max": float(absorbed.max()),
        "visible_entries": int(layer_map.visible.sum()),
        "kl_nats": kl,
        "base_top": am.visible_token(loaded.tokenizer, int(base_logits.argmax())),
        "new_top": am.visible_token(loaded.tokenizer, int(layer_map.last_logits.argmax())),
        "seconds": seconds, "next_tokens": table.to_dict(orient="list"),
        "sink_logit": choice.sink_logit,
    }
    return fig, mask_fig, data, view


def _map_figure(view, lang: str):
    """The attention figure of a stored map, for the head it records (None: all heads)."""
    return am.attention_figure(view["layer_map"], view["labels"], view["head"], view["n_prompt"],
                               view["title"], view["n_kv_heads"], lang)


def redraw_head(view, head, lang: str = "en"):
    """The stored map drawn for another head (or all heads): no forward pass. The view
    records the head, so that a language switch redraws the same one."""
    if not view:
        return None
    view["head"] = None if head in (None, "", "all") else \
        whole_number(head, "The head", 0, view["n_heads"] - 1)
    return _map_figure(view, lang)


def redraw_map(view, lang: str):
    """(attention figure, mask figure) of a stored map in `lang`, or None: no forward pass."""
    if not view:
        return None
    return _map_figure(view, lang), am.mask_figure(view["layer_map"], view["labels"], lang)


def render_map(t, lang, data) -> str:
    if not data:
        return ""
    absorbed = ""
    if data.get("sink_logit") is not None:
        absorbed = t.text("attention.absorbed", lang, mean=data["sink_mass_mean"],
                          max=data["sink_mass_max"])
    yes_no = t.text("attention.yes" if data["mask_matches_nonzero"] else "attention.no", lang)
    return t.text("attention.map_summary", lang, layer=data["layer"], n_tokens=data["n_tokens"],
                  n_generated=data["n_generated"], mask=data["mask"], layer_mask=data["layer_mask"],
                  impl=data["impl"], seconds=data["seconds"], row_min=data["row_sum_min"],
                  row_max=data["row_sum_max"], absorbed=absorbed, masked_max=data["masked_max"],
                  mask_matches=yes_no, base_top=data["base_top"],
                  new_top=data["new_top"], kl=data["kl_nats"])


def next_token_frame(t, lang, data):
    """The next-token table of compute_map's data, its headers in `lang`."""
    import pandas as pd

    frame = pd.DataFrame(data["next_tokens"])
    return frame.rename(columns={c: t.text(key, lang) for c, key in NEXT_TOKEN_COLUMNS.items()})


def compute_groups(loaded, lang: str = "en") -> tuple[Any, dict]:
    config = loaded.config
    shapes = am.recorded_head_shapes(loaded.model)
    data = {"model": loaded.name, "title": _title(loaded), "n_heads": config.n_heads,
            "n_kv_heads": config.n_kv_heads, "n_rep": config.n_rep,
            "groups": am.head_groups(config), "shapes": {k: list(v) for k, v in shapes.items()},
            "layers": config.n_layers, "head_dim": config.head_dim,
            "cache_bytes_per_token_fp32": config.kv_bytes_per_token(4),
            "mha_bytes_per_token_fp32": 2 * config.n_layers * config.n_heads * config.head_dim * 4}
    return groups_figure(config, data, lang), data


def groups_figure(config, data, lang: str):
    """The head-group figure of compute_groups' data (drawn again on a language switch)."""
    return am.head_groups_figure(config, data["title"] + ":", lang)


def render_groups(t, lang, data) -> str:
    if not data:
        return ""
    s = data["shapes"]
    return t.text("attention.gqa_summary", lang, title=data["title"], n_heads=data["n_heads"],
                  n_kv=data["n_kv_heads"], n_rep=data["n_rep"], q_shape=tuple(s["q"]),
                  k_shape=tuple(s["k"]), v_shape=tuple(s["v"]), layers=data["layers"],
                  head_dim=data["head_dim"], cache=data["cache_bytes_per_token_fp32"],
                  mha=data["mha_bytes_per_token_fp32"])


def compute_sinks(loaded, n_tokens, n_sinks, use_logit, sink_logit, lang: str = "en"):
    limit = am.max_tokens(loaded.device)
    n_tokens = whole_number(n_tokens, "The number of tokens", 16, limit)
    n_sinks = whole_number(n_sinks, "The number of sinks s", 1, 64)
    b = None
    if use_logit:
        b = am.mask_choice("sink_logit", sink_logit=sink_logit).sink_logit
    ids = _long_ids(loaded, n_tokens)
    grid = sinks.sink_grid(loaded.model, ids, n_sinks, b)
    data = {"model": loaded.name, "title": _title(loaded), "n_tokens": n_tokens, "n_sinks": n_sinks,
            "sink_logit": b, "token0": am.token_text(loaded.tokenizer, ids[0]), "seconds": grid.seconds,
            "first_query": grid.first_query,
            "first": grid.first.round(5).tolist(), "first_s": grid.first_s.round(5).tolist(),
            "absorbed": grid.absorbed.round(5).tolist()}
    return (*sink_figures(data, lang), data)


def sink_figures(data, lang: str):
    """(first token, first s tokens, absorbed or None) grids of compute_sinks' data: drawn from
    the stored numbers, so the language switch redraws exactly what the handler drew."""
    return sinks.sink_figures(data["first"], data["first_s"], data["absorbed"], data["n_sinks"],
                              data["sink_logit"], data["title"], lang)


def render_sinks(t, lang, data) -> str:
    if not data:
        return ""
    import numpy as np

    first = np.array(data["first"])
    absorbed = ""
    if data.get("sink_logit") is not None:
        a = np.array(data["absorbed"])
        absorbed = t.text("attention.sink_absorbed", lang, b=data["sink_logit"], mean=a.mean(),
                          min=a.min(), max=a.max())
    return t.text("attention.sink_summary", lang, n_tokens=data["n_tokens"],
                  seconds=data["seconds"], token0=data["token0"], first_mean=first.mean(),
                  n_over_half=int((first > 0.5).sum()), n_cells=first.size, s=data["n_sinks"],
                  first_s_mean=float(np.mean(data["first_s"])), absorbed=absorbed)


def compute_streaming(loaded, n_tokens, window, n_sinks, cache: sinks.StreamingCache, progress=None,
                      lang: str = "en"):
    """(figure, data, curves): the curves (StreamingResults of this model and of the others
    measured with the same settings) are what the figure is drawn from, kept in gr.State."""
    n_tokens = whole_number(n_tokens, "The number of tokens", 64, LONG_TEXT_MAX)
    window = whole_number(window, "The window w", 1, n_tokens - 1)
    n_sinks = whole_number(n_sinks, "The number of sinks s", 1)
    if n_sinks >= window:
        raise InputError(f"The number of sinks s ({n_sinks}) must be smaller than the "
                                  f"window w ({window}).")
    ids = _long_ids(loaded, n_tokens)
    result = sinks.run_streaming(loaded.name, loaded.model, ids, window, n_sinks, cache, progress=progress)
    summary = sinks.streaming_summary(result)
    verdict = sinks.streaming_verdict(summary)
    data = {"model": loaded.name, "title": _title(loaded), "n_tokens": n_tokens, "window": window,
            "sinks": n_sinks, **summary, **verdict, "own_window": loaded.config.sliding_window,
            "other_models": [m for m in cache.models_with(n_tokens, window, n_sinks)
                             if m != loaded.name]}
    # every model measured with the same settings in this server goes on the same chart
    others = [r for r in cache.results(n_tokens, window, n_sinks)
              if r.model != loaded.name and len(r.nll) >= len(sinks.POLICIES)]
    curves = [result] + others
    return sinks.streaming_figure(curves, lang=lang), data, curves


def render_streaming(t, lang, data) -> str:
    if not data:
        return ""
    rows = []
    for policy, ppl in data["perplexity"].items():
        rows.append(f"| {sinks.policy_label(policy, data['window'], data['sinks'], lang)} | {ppl:.2f} | "
                    f"{data['ratio'][policy]:.2f}× | {data['seconds'][policy]:.0f} s |")
    text = t.text("attention.stream_table", lang, past=data["past_window_from"],
                  model=data["title"], n=data["n_tokens"], rows="\n".join(rows))
    text += "\n\n" + t.text("attention.stream_" + data["window_effect"], lang,
                            window_ratio=data["window_ratio"])
    closed = data["gap_closed"]
    if data["sinks_help"] and isinstance(closed, float) and math.isfinite(closed):
        text += t.text("attention.stream_sinks", lang, s=data["sinks"],
                       sinks_ratio=data["sinks_ratio"], closed=closed)
    elif not data["sinks_help"]:
        text += t.text("attention.stream_sinks_worse", lang, s=data["sinks"],
                       sinks_ratio=data["sinks_ratio"])
    if data.get("sinks_global_ratio") is not None:
        text += t.text("attention.stream_sinks_global", lang, global_ratio=data["sinks_global_ratio"])
        if data["sinks_global_ratio"] < 0.8 * data["sinks_ratio"] and data.get("own_window"):
            text += t.text("attention.stream_local_harm", lang, own_window=data["own_window"])
    if data.get("other_models"):
        text += "\n\n" + t.text("attention.stream_other", lang, models=", ".join(data["other_models"]))
    return text


def compute_receptive(loaded, mode, window, n_tokens, seed, lang: str = "en"):
    """(figure, data, view): the view keeps the probe's result, which the figure is drawn from."""
    import time

    limit = am.max_tokens(loaded.device)
    n_tokens = whole_number(n_tokens, "The number of tokens", 8, 2 * limit)
    seed = whole_number(seed, "The seed", 0, 2**31 - 1)
    if mode == "forced":
        window = whole_number(window, "The window w", 2, n_tokens)
        mask = am.MaskSpec(window=window)
        step_window = window
    elif mode == "own":
        mask = None
        step_window = loaded.config.sliding_window
        if step_window is None:
            step_window = n_tokens  # all global: every distance reaches at layer 0
    else:
        raise InputError(f"Unknown mode {mode!r}; choose forced or own.")
    ids = _long_ids(loaded, n_tokens)
    distances = rf.default_distances(n_tokens, step_window)
    start = time.perf_counter()
    result = rf.probe(loaded.model, ids, distances, mask, seed)
    seconds = time.perf_counter() - start
    view = {"result": result, "title": _title(loaded)}
    data = {"model": loaded.name, "mode": mode, "window": window if mode == "forced" else None,
            "n_tokens": n_tokens, "seed": seed, "distances": result.distances,
            "predicted_first_layer": result.predicted, "measured_first_layer": result.measured,
            "layer_windows": result.layer_windows, "agree": sum(
                p == m for p, m in zip(result.predicted, result.measured)),
            "seconds": seconds, "max_abs_delta": result.delta.max(axis=1).tolist()}
    return receptive_figure(view, lang), data, view


def receptive_figure(view, lang: str):
    return rf.receptive_figure(view["result"], view["title"] + ":", lang)


def render_receptive(t, lang, data) -> str:
    if not data:
        return ""
    windows = data["layer_windows"]
    compact = ", ".join(sorted({("global" if w is None else str(w)) for w in windows}))
    def cells(values):
        return " | ".join("—" if v is None else str(v) for v in values)

    lines = [f"| d | {cells(data['distances'])} |",
             "|---|" + "---|" * len(data["distances"]),
             f"| {t.text('attention.rf_rule', lang)} | {cells(data['predicted_first_layer'])} |",
             f"| {t.text('attention.rf_measured', lang)} | {cells(data['measured_first_layer'])} |"]
    return t.text("attention.rf_summary", lang, n_tokens=data["n_tokens"], windows=compact,
                  seconds=data["seconds"], batch=len(data["distances"]) + 1, agree=data["agree"],
                  total=len(data["distances"]), rows="\n".join(lines))


def reach_frame(loaded=None, window=None):
    import pandas as pd

    extra = []
    if loaded is not None and window:
        extra.append((f"{_title(loaded)} with a forced window", loaded.config.n_layers, int(window)))
    return pd.DataFrame(rf.reach_table(extra))


LG_LENGTHS = (128, 256, 512, 1024, 2048, 4096, 8192)


# Counts depend only on the checkpoint's config: computed once per model per process.
_LG_ROWS: dict[str, list] = {}


def compute_local_global(loaded, lang: str = "en"):
    rows = _LG_ROWS.get(loaded.name)
    if rows is None:
        rows = _LG_ROWS.setdefault(loaded.name, am.local_global_costs(loaded.model, LG_LENGTHS))
    config = loaded.config
    kinds = am.layer_kinds(config)
    data = {"model": loaded.name, "title": _title(loaded), "rows": rows,
            "n_local": kinds.count("local"), "n_global": kinds.count("global"),
            "window": config.sliding_window}
    return (*local_global_figures(config, data, lang), data)


def local_global_figures(config, data, lang: str):
    """(layer-type strip, cost figure) of compute_local_global's data (drawn again on a
    language switch)."""
    return am.layer_strip_figure(config, data["title"] + ":", lang), am.local_global_figure(data["rows"], lang)


def render_local_global(t, lang, data) -> str:
    if not data:
        return ""
    if not data["n_local"]:
        return t.text("attention.lg_no_local", lang, title=data["title"])
    last = data["rows"][-1]
    full_cache = last["cache bytes per global layer"] * (data["n_local"] + data["n_global"])
    return t.text("attention.lg_summary", lang, title=data["title"], n_local=data["n_local"],
                  n_global=data["n_global"], window=data["window"], n=last["n"],
                  ratio=last["scores, all layers"] / last["scores if all global"],
                  cache_ratio=last["cache bytes, all layers"] / full_cache)


def lg_frame(data):
    import pandas as pd

    if not data:
        return pd.DataFrame()
    frame = pd.DataFrame(data["rows"])
    frame["scores vs all global"] = (frame["scores, all layers"] / frame["scores if all global"]).map(
        lambda r: f"{r:.0%}")
    kinds = [k for k in ("local", "global") if data[f"n_{k}"]]
    columns = {"n": "n"}
    for k in kinds:
        columns[f"scores per {k} layer"] = f"scores / {k} layer"
        columns[f"cache bytes per {k} layer"] = f"cache B / {k} layer"
    columns["scores vs all global"] = "all layers vs all-global"
    return frame[list(columns)].rename(columns=columns)


def redraw_measured_figures(lang: str, sink_data, curves, rf_view) -> list:
    """The sink grids (first token, first s, absorbed), the StreamingLLM chart and the
    receptive-field chart in `lang`, from the stored measurements (no forward pass); None for
    a chart not drawn (yet)."""
    figures = [None] * 5
    if sink_data:
        figures[:3] = sink_figures(sink_data, lang)
    if curves:
        figures[3] = sinks.streaming_figure(curves, lang=lang)
    if rf_view:
        figures[4] = receptive_figure(rf_view, lang)
    return figures


# ----------------------------------------------------------------------------- the tab


def build(ctx: TabContext) -> None:
    t = ctx.t
    # measured StreamingLLM curves of this app instance, shared by its visitors (deterministic)
    streaming_cache = sinks.StreamingCache()
    gr.Markdown(t("attention.intro"), latex_delimiters=LATEX)
    with gr.Row():
        prompt = gr.Textbox(DEFAULT_PROMPT, label=t("attention.prompt"), lines=2, scale=4,
                            elem_id="attention-prompt")
        n_generate = gr.Slider(0, am.MAX_GENERATED, value=0, step=1, label=t("attention.generate"),
                               scale=1, elem_id="attention-generate")
    with gr.Row():
        layer = gr.Slider(0, 29, value=3, step=1, label=t("attention.layer"), elem_id="attention-layer")
        head = gr.Dropdown(choices=[("all", "all")] + [(str(h), str(h)) for h in range(9)],
                           value="all", label=t("attention.head"), elem_id="attention-head",
                           filterable=False)
        impl = gr.Radio(list(am.IMPLS), value="eager", label=t("attention.impl"),
                        info=t("attention.impl_info"), elem_id="attention-impl")
    with gr.Row():
        mask_kind = gr.Radio([(t("attention.mask.causal"), "causal"), (t("attention.mask.window"), "window"),
                              (t("attention.mask.sinks"), "sinks"),
                              (t("attention.mask.sink_logit"), "sink_logit")],
                             value="causal", label=t("attention.mask"), elem_id="attention-mask", scale=3)
        window = gr.Number(8, label=t("attention.window"), precision=0, elem_id="attention-window",
                           scale=1)
        sinks_n = gr.Number(2, label=t("attention.sinks"), precision=0, elem_id="attention-sinks",
                            scale=1)
        sink_logit = gr.Slider(-5, 10, value=1.0, step=0.1, label=t("attention.sink_logit"),
                               elem_id="attention-sink-logit", scale=2)
    run = gr.Button(t("attention.run"), variant="primary", elem_id="attention-run")
    with gr.Row():
        map_plot = gr.Plot(elem_id="attention-map", scale=3, show_label=False)
        mask_plot = gr.Plot(elem_id="attention-mask-plot", scale=2, show_label=False)
    map_summary = gr.Markdown(elem_id="attention-summary")
    next_tokens = gr.Dataframe(elem_id="attention-next-tokens", interactive=False)
    with gr.Accordion(t("attention.data"), open=False):
        map_data = gr.JSON(show_label=False)

    gr.Markdown(t("attention.gqa_heading"))
    groups_plot = gr.Plot(elem_id="attention-groups", show_label=False)
    groups_summary = gr.Markdown(elem_id="attention-groups-summary", latex_delimiters=LATEX)
    groups_data = gr.JSON(visible=False)

    gr.Markdown(t("attention.sinks_heading"), latex_delimiters=LATEX)
    gr.Markdown(t("attention.source"), elem_classes=["attention-source"])
    with gr.Row():
        sink_tokens = gr.Slider(16, 512, value=256, step=16, label=t("attention.sink_tokens"),
                                elem_id="sink-tokens")
        sink_count = gr.Number(4, label=t("attention.sinks"), precision=0, elem_id="sink-count")
        use_logit = gr.Checkbox(False, label=t("attention.use_sink_logit"), elem_id="sink-use-logit")
        sink_b = gr.Slider(-5, 10, value=2.0, step=0.1, label=t("attention.sink_logit"),
                           elem_id="sink-b")
    sink_run = gr.Button(t("attention.sink_run"), elem_id="sink-run")
    with gr.Row():
        sink_first = gr.Plot(elem_id="sink-first", show_label=False)
        sink_first_s = gr.Plot(elem_id="sink-first-s", show_label=False)
        sink_absorbed = gr.Plot(elem_id="sink-absorbed", show_label=False, visible=False)
    sink_summary = gr.Markdown(elem_id="sink-summary")
    with gr.Accordion(t("attention.data"), open=False):
        sink_data = gr.JSON(show_label=False)

    gr.Markdown(t("attention.stream_heading"), latex_delimiters=LATEX)
    gr.Markdown(t("attention.source"), elem_id="stream-source")
    with gr.Row():
        stream_tokens = gr.Slider(128, LONG_TEXT_MAX, value=STREAM_DEFAULT_TOKENS, step=64,
                                  label=t("attention.stream_tokens"), elem_id="stream-tokens")
        stream_window = gr.Number(256, label=t("attention.window"), precision=0, elem_id="stream-window")
        stream_sinks = gr.Number(4, label=t("attention.sinks"), precision=0, elem_id="stream-sinks")
    stream_run = gr.Button(t("attention.stream_run"), elem_id="stream-run")
    stream_plot = gr.Plot(elem_id="stream-plot", show_label=False)
    stream_summary = gr.Markdown(elem_id="stream-summary")
    with gr.Accordion(t("attention.data"), open=False):
        stream_data = gr.JSON(show_label=False)

    gr.Markdown(t("attention.rf_heading"), latex_delimiters=LATEX)
    with gr.Row():
        rf_mode = gr.Radio([(t("attention.rf_mode.forced"), "forced"), (t("attention.rf_mode.own"), "own")],
                           value="forced", label=t("attention.rf_mode"), elem_id="rf-mode")
        rf_window = gr.Number(8, label=t("attention.window"), precision=0, elem_id="rf-window")
        rf_tokens = gr.Slider(16, 1024, value=96, step=8, label=t("attention.rf_tokens"),
                              elem_id="rf-tokens")
        rf_seed = gr.Number(0, label=t("attention.seed"), precision=0, elem_id="rf-seed")
    rf_run = gr.Button(t("attention.rf_run"), elem_id="rf-run")
    rf_plot = gr.Plot(elem_id="rf-plot", show_label=False)
    rf_summary = gr.Markdown(elem_id="rf-summary")
    gr.Markdown(t("attention.reach_heading"), latex_delimiters=LATEX)
    reach = gr.Dataframe(reach_frame(), elem_id="rf-reach", interactive=False)
    with gr.Accordion(t("attention.data"), open=False):
        rf_data = gr.JSON(show_label=False)

    gr.Markdown(t("attention.lg_heading"), latex_delimiters=LATEX)
    lg_strip = gr.Plot(elem_id="lg-strip", show_label=False)
    lg_summary = gr.Markdown(elem_id="lg-summary")
    lg_plot = gr.Plot(elem_id="lg-plot", show_label=False)
    lg_table = gr.Dataframe(elem_id="lg-table", interactive=False)
    lg_data = gr.JSON(visible=False)

    # ---- handlers -------------------------------------------------------------------------

    def attention_map(model_name, lang, text, layer_value, head_value, kind, w, s, b, path, n_new,
                      progress=gr.Progress()):
        """Attention probabilities of one layer (one head or all) under the chosen mask."""
        loaded = ctx.load(model_name, progress)
        try:
            fig, mask_fig, data, view = compute_map(loaded, text, layer_value, head_value, kind, w,
                                                    s, b, path, n_new, _check_lang(lang))
        except (InputError, ValueError) as error:
            raise _as_error(error) from None
        return (fig, mask_fig, render_map(t, _check_lang(lang), data),
                next_token_frame(t, _check_lang(lang), data), data, view)

    def show_head(view, head_value, lang):
        try:
            fig = redraw_head(view, head_value, _check_lang(lang))   # also records the head
        except InputError as error:
            raise _as_error(error) from None
        return (gr.skip(), gr.skip()) if fig is None else (fig, view)

    def model_controls(model_name, lang, progress=gr.Progress()):
        """Layer / head ranges and local/global costs of the selected model. No forward pass
        (masks and the cache layout only), so it stays out of the model's queue and the page
        fills in even while someone else's long experiment runs."""
        loaded = ctx.load(model_name, progress)
        config = loaded.config
        lang = _check_lang(lang)
        strip, cost_fig, ldata = compute_local_global(loaded, lang)
        return (gr.update(maximum=config.n_layers - 1,
                          value=min(3, config.n_layers - 1)),
                gr.update(choices=[("all", "all")] + [(str(h), str(h)) for h in range(config.n_heads)],
                          value="all"),
                strip, render_local_global(t, lang, ldata), cost_fig, lg_frame(ldata), ldata,
                reach_frame())

    def head_groups(model_name, lang):
        """Which query heads share which KV head in the selected model."""
        loaded = ctx.load(model_name)
        fig, data = compute_groups(loaded, _check_lang(lang))
        return fig, render_groups(t, _check_lang(lang), data), data

    def local_global(model_name, lang):
        """Layer types and score / cache cost per layer kind as n grows."""
        loaded = ctx.load(model_name)
        strip, cost_fig, data = compute_local_global(loaded, _check_lang(lang))
        return strip, render_local_global(t, _check_lang(lang), data), cost_fig, lg_frame(data), data

    def sink_grid(model_name, lang, n_tokens, n_sinks, with_logit, b, progress=gr.Progress()):
        """Attention mass on the first token(s) for every layer x head."""
        loaded = ctx.load(model_name, progress)
        try:
            first, first_s, absorbed, data = compute_sinks(loaded, n_tokens, n_sinks, with_logit, b,
                                                           _check_lang(lang))
        except (InputError, ValueError) as error:
            raise _as_error(error) from None
        absorbed_update = gr.update(value=absorbed, visible=absorbed is not None)
        return first, first_s, absorbed_update, render_sinks(t, _check_lang(lang), data), data

    def streaming_ppl(model_name, lang, n_tokens, w, s, progress=gr.Progress()):
        """Perplexity along the long text: full cache, window only, sinks + window."""
        loaded = ctx.load(model_name, progress)

        def report(fraction, message):
            progress(fraction, desc=message)

        try:
            fig, data, curves = compute_streaming(loaded, n_tokens, w, s, streaming_cache, report,
                                                  _check_lang(lang))
        except (InputError, ValueError) as error:
            raise _as_error(error) from None
        return fig, render_streaming(t, _check_lang(lang), data), data, curves

    def receptive_field(model_name, lang, mode, w, n_tokens, seed, progress=gr.Progress()):
        """Which layers' last hidden state changes when the token at distance d is replaced."""
        loaded = ctx.load(model_name, progress)
        try:
            fig, data, view = compute_receptive(loaded, mode, w, n_tokens, seed, _check_lang(lang))
        except (InputError, ValueError) as error:
            raise _as_error(error) from None
        table = reach_frame(loaded, data["window"])
        return fig, render_receptive(t, _check_lang(lang), data), table, data, view

    map_inputs = [ctx.model, ctx.lang, prompt, layer, head, mask_kind, window, sinks_n, sink_logit,
                  impl, n_generate]
    map_view = gr.State()
    map_outputs = [map_plot, mask_plot, map_summary, next_tokens, map_data, map_view]
    run.click(attention_map, map_inputs, map_outputs, api_name="attention_map", **ctx.model_event)
    mask_kind.change(attention_map, map_inputs, map_outputs, api_visibility="private",
                     **ctx.model_event)
    sink_logit.release(attention_map, map_inputs, map_outputs, api_visibility="private",
                       **ctx.model_event)
    layer.release(attention_map, map_inputs, map_outputs, api_visibility="private",
                  **ctx.model_event)
    # another head of the same map: redrawn from the probabilities already computed
    head.input(show_head, [map_view, head, ctx.lang], [map_plot, map_view], api_visibility="private")

    # API-only endpoints (the page refreshes both on load and on a model change, below);
    # wired first so they keep their names.
    groups_api = gr.Button(visible=False)
    groups_api.click(head_groups, [ctx.model, ctx.lang], [groups_plot, groups_summary, groups_data],
                     api_name="head_groups", **ctx.model_event)
    lg_api = gr.Button(visible=False)
    lg_api.click(local_global, [ctx.model, ctx.lang], [lg_strip, lg_summary, lg_plot, lg_table, lg_data],
                 api_name="local_global")  # masks and cache layout only, no forward

    control_outputs = [layer, head, lg_strip, lg_summary, lg_plot, lg_table, lg_data, reach]
    group_outputs = [groups_plot, groups_summary, groups_data]
    for trigger in (ctx.demo.load, ctx.model.change):
        # the head groups read the shapes of real q/k/v tensors: a (tiny) forward, so queued
        trigger(model_controls, [ctx.model, ctx.lang], control_outputs, api_visibility="private").then(
            head_groups, [ctx.model, ctx.lang], group_outputs, api_visibility="private",
            **ctx.model_event)

    sink_run.click(sink_grid, [ctx.model, ctx.lang, sink_tokens, sink_count, use_logit, sink_b],
                   [sink_first, sink_first_s, sink_absorbed, sink_summary, sink_data],
                   api_name="sink_grid", **ctx.model_event)
    # what the StreamingLLM and receptive-field charts are drawn from, for the language switch
    stream_view = gr.State()
    rf_view = gr.State()
    stream_run.click(streaming_ppl, [ctx.model, ctx.lang, stream_tokens, stream_window, stream_sinks],
                     [stream_plot, stream_summary, stream_data, stream_view], api_name="streaming_ppl",
                     **ctx.model_event)
    rf_run.click(receptive_field, [ctx.model, ctx.lang, rf_mode, rf_window, rf_tokens, rf_seed],
                 [rf_plot, rf_summary, reach, rf_data, rf_view], api_name="receptive_field", **ctx.model_event)

    # Server text follows the language switch, re-rendered from the data already measured.
    def rerender(lang, m, g, s, st, r, lg, view):
        lang = _check_lang(lang)
        figures = redraw_map(view, lang) or (gr.skip(), gr.skip())
        return (render_map(t, lang, m), render_groups(t, lang, g), render_sinks(t, lang, s),
                render_streaming(t, lang, st), render_receptive(t, lang, r),
                render_local_global(t, lang, lg), *figures,
                next_token_frame(t, lang, m) if m else gr.skip())

    def redraw_model_figures(lang, g, lg):
        """The head groups, layer strip and cost figures in the new language, from the config
        of the model they were drawn for and the stored costs (no forward pass)."""
        lang = _check_lang(lang)
        if not g or not lg:
            return gr.skip(), gr.skip(), gr.skip()
        return (groups_figure(ctx.load(g["model"]).config, g, lang),
                *local_global_figures(ctx.load(lg["model"]).config, lg, lang))

    def redraw_measured(lang, s, curves, view):
        lang = _check_lang(lang)
        return [gr.skip() if fig is None else fig for fig in redraw_measured_figures(lang, s, curves, view)]

    ctx.lang.change(rerender, [ctx.lang, map_data, groups_data, sink_data, stream_data, rf_data, lg_data,
                               map_view],
                    [map_summary, groups_summary, sink_summary, stream_summary, rf_summary, lg_summary,
                     map_plot, mask_plot, next_tokens],
                    api_visibility="private").then(
        redraw_model_figures, [ctx.lang, groups_data, lg_data], [groups_plot, lg_strip, lg_plot],
        api_visibility="private").then(
        redraw_measured, [ctx.lang, sink_data, stream_view, rf_view],
        [sink_first, sink_first_s, sink_absorbed, stream_plot, rf_plot], api_visibility="private")
