"""Generate & KV cache tab: tokens stream while the real cache grows (C3, C9), the same steps
without a cache (C1), cached logits against a full forward (C4), cache policies, and a
calculator of published shapes (C3, C5, C6) with a decode roofline (C2).

Thin wiring over explorer/kvcache.py: handlers validate, call it, and turn its Session into
outputs. Per-visitor data (the table of runs) lives in gr.State.
"""
from __future__ import annotations

import time
from typing import Any

import gradio as gr
from gradio.components.plot import PlotData
import pandas as pd

from explorer import kvcache
from explorer.i18n import normalize_language
from explorer.inputs import InputError, whole_number
from explorer.ui import TabContext

TITLE = "generate.tab"
CHART_INTERVAL_S = 0.5   # charts are rebuilt at most this often while tokens stream
TEXT_INTERVAL_S = 0.15   # streamed text: at most ~7 messages a second (kvcache.in_background)
HISTORY_ROWS = 8
DEFAULT_PROMPT = "Explain in two sentences why a language model caches keys and values."
LONG_PROMPT_CHARS = 2600  # ≈ 600 tokens of the shipped English text: past Gemma's 512 window

STRINGS = {
    "generate.tab": {"en": "Generate & KV cache", "zh": "生成与 KV 缓存"},
    "generate.intro": {
        "en": "Type a prompt and press **Start**: tokens stream as the model decodes them, and "
              "the charts show the real KV-cache tensors growing layer by layer. Afterwards the "
              "same tokens are recomputed without a cache (C1) and the cached logits are checked "
              "against one full forward pass (C4).",
        "zh": "输入提示词并按 **开始**：模型每解码出一个 token 就立即显示，图表展示真实的 KV 缓存"
              "张量如何逐层增长。生成结束后，同样的 token 会在不使用缓存的情况下重算一遍（C1），"
              "并把带缓存的 logits 与一次完整前向计算对比（C4）。",
    },
    "generate.prompt": {"en": "Prompt", "zh": "提示词"},
    "generate.prompt_info": {
        "en": "The instruct model receives it as one chat turn (its chat template); the base "
              "model receives the plain text. At most 1024 tokens.",
        "zh": "指令模型会把它作为一轮对话（使用其对话模板）；基础模型直接接收原文。最多 1024 个 token。",
    },
    "generate.start": {"en": "Start", "zh": "开始"},
    "generate.stop": {"en": "Stop", "zh": "停止"},
    "generate.long": {"en": "Long prompt (≈600 tokens, for C9)", "zh": "长提示词（约 600 个 token，用于 C9）"},
    "generate.output": {"en": "Generated text", "zh": "生成的文本"},
    "generate.sampling": {"en": "Sampling", "zh": "采样"},
    "generate.max_new": {"en": "Max new tokens", "zh": "最多生成的 token 数"},
    "generate.temperature": {"en": "Temperature (0 = greedy)", "zh": "温度（0 = 贪心）"},
    "generate.top_k": {"en": "Top-k (0 = off)", "zh": "Top-k（0 = 关闭）"},
    "generate.top_p": {"en": "Top-p (1 = off)", "zh": "Top-p（1 = 关闭）"},
    "generate.seed": {"en": "Seed", "zh": "随机种子"},
    "generate.policy": {"en": "Cache policy", "zh": "缓存策略"},
    "generate.policy.full": {"en": "Model's own (full / its windows)", "zh": "模型自身（完整 / 其自带窗口）"},
    "generate.policy.window": {"en": "Sliding window w", "zh": "滑动窗口 w"},
    "generate.policy.sinks": {"en": "Sinks + window (StreamingLLM)", "zh": "汇 token + 窗口（StreamingLLM）"},
    "generate.window": {"en": "Window w (tokens)", "zh": "窗口 w（token 数）"},
    "generate.sinks": {"en": "Sink tokens s", "zh": "汇 token 数 s"},
    "generate.compare": {"en": "Afterwards, replay without cache (C1)", "zh": "结束后不使用缓存重放（C1）"},
    "generate.check": {"en": "Afterwards, check against a full forward (C4)", "zh": "结束后与完整前向对比（C4）"},
    "generate.formula": {
        "en": "**KV-cache bytes (C3).** $\\text{bytes} = 2 \\times n_{\\text{layers}} \\times "
              "n_{\\text{kv heads}} \\times d_{\\text{head}} \\times t \\times b$: K and V, per "
              "layer, per KV head, per dimension, per token, times bytes per element. The query "
              "heads do not appear. A layer with a window $w$ (plus $s$ sinks) holds "
              "$\\min(t, w + s)$ tokens, so its bytes stop growing (C9). The bars are read from "
              "the cache tensors themselves; the black ticks are the formula.",
        "zh": "**KV 缓存字节数（C3）。** $\\text{bytes} = 2 \\times n_{\\text{layers}} \\times "
              "n_{\\text{kv heads}} \\times d_{\\text{head}} \\times t \\times b$：K 和 V、每层、"
              "每个 KV 头、每个维度、每个 token，再乘以每个元素的字节数。查询头数不出现。带窗口 "
              "$w$（加 $s$ 个汇 token）的层只保存 $\\min(t, w + s)$ 个 token，字节数不再增长（C9）。"
              "柱子直接读自缓存张量，黑色短线是公式值。",
    },
    "generate.mask_note": {
        "en": "**Cached = full forward (C4).** With a cache, the $T$ new tokens are queries at "
              "absolute positions $\\text{cache.pos} + i$ against $S = \\text{cache.pos} + T$ "
              "keys: the mask is $(T, S)$, not square, and RoPE's cos/sin start at cache.pos. "
              "Below: that mask for the last tokens, drawn by the engine's own mask predicate "
              "(one row = one decode step). The chart above compares every cached step's logits "
              "with one forward pass over the whole text without a cache.",
        "zh": "**缓存 = 完整前向（C4）。** 使用缓存时，$T$ 个新 token 作为查询，位于绝对位置 "
              "$\\text{cache.pos} + i$，面对 $S = \\text{cache.pos} + T$ 个键：掩码是 $(T, S)$，"
              "不是方阵；RoPE 的 cos/sin 从 cache.pos 开始。下图是最后几个 token 的掩码，"
              "由引擎自己的掩码谓词绘制（每一行就是一个解码步）。上面的图把每一步缓存计算的 "
              "logits 与不带缓存、对整段文本的一次前向计算进行比较。",
    },
    "generate.history": {"en": "Your runs (compare cache policies)", "zh": "你的运行记录（比较缓存策略）"},
    "generate.calculator": {"en": "Cache calculator: published model shapes (C3, C5, C6)",
                            "zh": "缓存计算器：已发布模型的结构（C3、C5、C6）"},
    "generate.calc_formulas": {
        "en": "Per token and layer a model caches $2 \\cdot H_{kv} \\cdot d_{head}$ elements "
              "(K and V). Llama-2-7B in fp16: $2 \\times 32 \\times 32 \\times 128 \\times 2$ B "
              "$= 524{,}288$ B $= 0.5$ MiB per token, so $32{,}768$ tokens take exactly $16$ GiB "
              "(binary units: 1 MiB = 2^20 B, 1 GiB = 2^30 B). GQA and MQA shrink only "
              "$H_{kv}$ (C5). A sliding window caps a layer at $w$ tokens; Gemma 3 keeps a full "
              "cache only on its global layers (C9). MLA (DeepSeek-V3) caches one latent of "
              "$4\\,d_{head}$ plus a RoPE key of $d_{head}/2$: $4.5\\,d_{head} = 576$ elements "
              "per token per layer, what GQA needs with $2.25$ KV heads (C6).",
        "zh": "每个 token、每层缓存 $2 \\cdot H_{kv} \\cdot d_{head}$ 个元素（K 和 V）。fp16 的 "
              "Llama-2-7B：$2 \\times 32 \\times 32 \\times 128 \\times 2$ B $= 524{,}288$ B "
              "$= 0.5$ MiB 每 token，因此 $32{,}768$ 个 token 正好是 $16$ GiB（二进制单位："
              "1 MiB = 2^20 B，1 GiB = 2^30 B）。GQA 和 MQA 只减少 $H_{kv}$（C5）。滑动窗口把一层"
              "限制在 $w$ 个 token；Gemma 3 只在全局层保留完整缓存（C9）。MLA（DeepSeek-V3）缓存一个 "
              "$4\\,d_{head}$ 的潜向量加一个 $d_{head}/2$ 的 RoPE 键：每 token 每层 $4.5\\,d_{head} "
              "= 576$ 个元素，相当于 $2.25$ 个 KV 头的 GQA（C6）。",
    },
    "generate.calc_tokens": {"en": "Context length (tokens)", "zh": "上下文长度（token 数）"},
    "generate.calc_bytes": {"en": "Bytes per element", "zh": "每个元素的字节数"},
    "generate.calc_variants": {
        "en": "**MHA vs GQA vs MQA** of the Llama 3 8B shape (32 query heads): only the KV heads "
              "change, and the cache with them.",
        "zh": "**MHA、GQA 与 MQA**：同一个 Llama 3 8B 结构（32 个查询头），只改变 KV 头数，缓存随之变化。",
    },
    "generate.roofline": {
        "en": "**Decode roofline (C2).** One decode step reads every weight once for the whole "
              "batch plus each sequence's cache, and does about $2 \\times$ parameters FLOPs per "
              "token plus $4 \\cdot n_{layers} \\cdot H \\cdot d_{head} \\cdot t$ for attention. "
              "Intensity = FLOPs / bytes. Batch 1 sits far left (memory-bound); larger batches "
              "share the weight reads and move right, toward compute-bound. Roof: this machine "
              "as measured on an idle machine (docs/DESIGN.md): ~30 GB/s, ~146 GFLOP/s fp32; "
              "these are those design figures, not measured now.",
        "zh": "**解码屋顶线（C2）。** 一个解码步对整个批次只读一次全部权重，再加上每个序列自己的缓存；"
              "计算量约为每 token $2 \\times$ 参数量 FLOPs，外加注意力的 "
              "$4 \\cdot n_{layers} \\cdot H \\cdot d_{head} \\cdot t$。强度 = FLOPs / 字节。"
              "批大小 1 位于最左侧（受内存带宽限制）；更大的批次分摊权重读取而右移，接近计算受限。"
              "屋顶：本机在空闲时测得的数据（docs/DESIGN.md）：约 30 GB/s、约 146 GFLOP/s fp32；"
              "这是设计文档中的数字，并非此刻实测。",
    },
    "generate.roof_context": {"en": "Roofline at context t (tokens per sequence)",
                              "zh": "屋顶线对应的上下文长度 t（每个序列的 token 数）"},
    "generate.calc.col.model": {"en": "model", "zh": "模型"},
    "generate.calc.col.attention": {"en": "attention", "zh": "注意力"},
    "generate.calc.col.layers": {"en": "layers", "zh": "层数"},
    "generate.calc.col.heads": {"en": "q heads : kv heads", "zh": "查询头 : KV 头"},
    "generate.calc.col.d_head": {"en": "d_head", "zh": "头维度 d_head"},
    "generate.calc.col.elements": {"en": "elements / token / layer", "zh": "元素数 / token / 层"},
    "generate.calc.col.per_token": {"en": "per token", "zh": "每 token"},
    "generate.calc.col.at": {"en": "at {n} tokens", "zh": "{n} 个 token 时"},
    "generate.calc.col.source": {"en": "source", "zh": "来源"},
    "generate.calc.col.variant": {"en": "variant", "zh": "变体"},
    "generate.calc.col.q_heads": {"en": "q heads", "zh": "查询头"},
    "generate.calc.col.kv_heads": {"en": "kv heads", "zh": "KV 头"},
    "generate.roofline_none": {"en": "The roofline appears once the model is loaded.",
                               "zh": "模型加载后显示屋顶线。"},
    # computed text
    "generate.status.running": {
        "en": "Generating: **{n}** / {total} tokens · prompt {prompt} tokens{chat} · first token "
              "after {ttft:.2f} s{rate}",
        "zh": "生成中：**{n}** / {total} 个 token · 提示词 {prompt} 个 token{chat} · 首个 token 用时 "
              "{ttft:.2f} 秒{rate}",
    },
    "generate.status.rate": {"en": " · {rate:.1f} tokens/s", "zh": " · 每秒 {rate:.1f} 个 token"},
    "generate.status.chat": {"en": " (chat template)", "zh": "（对话模板）"},
    "generate.status.checking": {"en": "Checking cached logits against a full forward (C4)…",
                                 "zh": "正在把带缓存的 logits 与完整前向对比（C4）……"},
    "generate.status.replay": {"en": "Replaying without cache (C1): {n} / {total} steps…",
                               "zh": "正在不使用缓存重放（C1）：{n} / {total} 步……"},
    "generate.status.done": {
        "en": "Done ({reason}): **{n}** tokens · prompt {prompt} tokens{chat} · first token after "
              "{ttft:.2f} s{rate}",
        "zh": "完成（{reason}）：**{n}** 个 token · 提示词 {prompt} 个 token{chat} · 首个 token "
              "用时 {ttft:.2f} 秒{rate}",
    },
    "generate.reason.eos": {"en": "end of sequence", "zh": "遇到结束符"},
    "generate.reason.length": {"en": "max new tokens reached", "zh": "达到最大 token 数"},
    "generate.reason.stop": {"en": "stopped", "zh": "已停止"},
    "generate.row.stopped": {"en": "{n} (stopped)", "zh": "{n}（已停止）"},
    "generate.reason.deadline": {"en": "time limit of {s:.0f} s reached", "zh": "达到 {s:.0f} 秒的时间上限"},
    "generate.stopped": {"en": "**Stopped.**", "zh": "**已停止。**"},
    "generate.stopped_after": {"en": "**Stopped** after {n} new tokens.", "zh": "**已停止**：已生成 {n} 个新 token。"},
    "generate.ev.c3": {
        "en": "**C3** at t = {t} tokens: the cache tensors hold **{measured:,} B**; the formula "
              "per layer gives **{formula:,} B** ({match}, checked at all {steps} steps). "
              "Uncapped: 2 × {layers} × {kv} × {d} × {t} × {b} = {full:,} B.",
        "zh": "**C3** t = {t} 个 token 时：缓存张量共 **{measured:,} B**；逐层公式给出 "
              "**{formula:,} B**（{match}，所有 {steps} 步都已核对）。不设上限时：2 × {layers} × "
              "{kv} × {d} × {t} × {b} = {full:,} B。",
    },
    "generate.ev.equal": {"en": "equal", "zh": "相等"},
    "generate.ev.differ": {"en": "DIFFERENT", "zh": "不相等"},
    "generate.ev.c9": {
        "en": "**C9**: {capped} windowed layers hold {held} tokens each (capped at {cap}); "
              "{full} full layers hold all {t}.",
        "zh": "**C9**：{capped} 个窗口层各保存 {held} 个 token（上限 {cap}）；{full} 个完整层保存全部 {t} 个。",
    },
    "generate.ev.c1": {
        "en": "**C1** at t = {t}: with the cache a step took **{cached:.1f} ms** and computed "
              "{cs:,} scores; recomputing without it took **{uncached:.1f} ms** and {us:,} scores "
              "(×{ratio:.1f} time, ×{sratio:.0f} scores).",
        "zh": "**C1** t = {t} 时：使用缓存一步耗时 **{cached:.1f} 毫秒**，计算 {cs:,} 个分数；"
              "不用缓存重算耗时 **{uncached:.1f} 毫秒**，计算 {us:,} 个分数（时间 ×{ratio:.1f}，"
              "分数 ×{sratio:.0f}）。",
    },
    "generate.ev.c1_budget": {
        "en": " The replay stopped after its {s:.0f} s budget; later steps were not replayed.",
        "zh": " 重放在 {s:.0f} 秒预算用完后停止；之后的步骤没有重放。",
    },
    "generate.ev.c1_tokens": {
        "en": " The no-cache forward chose the same next token at {same} of {n} replayed steps.",
        "zh": " 在 {n} 个重放步骤中，无缓存前向有 {same} 步选出了相同的下一个 token。",
    },
    "generate.ev.c4": {
        "en": "**C4**: max |cached − full forward| over {n} generated tokens = **{diff:.2e}** "
              "({verdict} {tol:g}).",
        "zh": "**C4**：{n} 个生成 token 上 |缓存 − 完整前向| 的最大值 = **{diff:.2e}**（{verdict} {tol:g}）。",
    },
    "generate.ev.within": {"en": "within the tolerance", "zh": "在容差之内"},
    "generate.ev.beyond": {"en": "BEYOND the tolerance", "zh": "超出容差"},
    "generate.col.run": {"en": "run", "zh": "次序"},
    "generate.col.model": {"en": "model", "zh": "模型"},
    "generate.col.policy": {"en": "cache policy", "zh": "缓存策略"},
    "generate.col.prompt": {"en": "prompt tokens", "zh": "提示词 token"},
    "generate.col.new": {"en": "new tokens", "zh": "新 token"},
    "generate.col.cache": {"en": "cache at end", "zh": "结束时缓存"},
    "generate.col.c3": {"en": "bytes = formula", "zh": "字节 = 公式"},
    "generate.col.c4": {"en": "max |Δ logit|", "zh": "最大 |Δ logit|"},
    "generate.col.text": {"en": "text", "zh": "文本"},
    "generate.error.stopped_model": {"en": "The model could not run: {error}", "zh": "模型无法运行：{error}"},
    **kvcache.FIGURE_STRINGS,
}

HISTORY_COLUMNS = ("run", "model", "policy", "prompt", "new", "cache", "c3", "c4", "text")


def _plot_data(figure) -> PlotData:
    """A Plotly figure as gr.Plot sends it (what Plot.postprocess returns), built once so that
    re-sending an unchanged chart costs nothing."""
    return PlotData(type="plotly", plot=figure.to_json())


def _policy_text(t, lang: str, request: kvcache.Request) -> str:
    if request.policy == "full":
        return t.text("generate.policy.full", lang)
    if request.policy == "window":
        return f"{t.text('generate.policy.window', lang)} = {request.window}"
    return f"{request.sinks} + {request.window} ({t.text('generate.policy.sinks', lang)})"


def history_frame(t, lang: str, rows: list[dict]) -> pd.DataFrame:
    headers = [t.text(f"generate.col.{c}", lang) for c in HISTORY_COLUMNS]
    return pd.DataFrame([[row[c] for c in HISTORY_COLUMNS] for row in rows], columns=headers)


def status_text(t, lang: str, session: kvcache.Session) -> str:
    rate = session.decode_rate()
    fields = dict(n=len(session.records), total=session.request.max_new_tokens,
                  prompt=session.n_prompt, ttft=session.first_token_s or 0.0,
                  chat=t.text("generate.status.chat", lang) if session.chat else "",
                  rate=t.text("generate.status.rate", lang, rate=rate) if rate else "")
    if session.phase == "checking":
        return t.text("generate.status.checking", lang)
    if session.phase == "replay":
        return t.text("generate.status.replay", lang, n=len(session.replay),
                      total=len(kvcache.replay_targets(session.records)))
    if session.phase == "done":
        reason_key = f"generate.reason.{session.stopped or 'length'}"
        reason = t.text(reason_key, lang, s=kvcache.DEADLINE_S) if session.stopped == "deadline" \
            else t.text(reason_key, lang)
        return t.text("generate.status.done", lang, reason=reason, **fields)
    return t.text("generate.status.running", lang, **fields)


def evidence_text(t, lang: str, session: kvcache.Session) -> str:
    if not session.records:
        return ""
    config, last = session.config, session.records[-1]
    formula = kvcache.formula_layer_bytes(config, session.layouts, last.context, session.element_bytes)
    per_token = kvcache.formula_bytes_per_token(config.n_layers, config.n_kv_heads, config.head_dim,
                                                session.element_bytes)
    match = session.bytes_match_formula()
    lines = [t.text("generate.ev.c3", lang, t=last.context, measured=sum(last.cache_bytes),
                    formula=sum(formula), steps=len(session.records),
                    match=t.text("generate.ev.equal" if match else "generate.ev.differ", lang),
                    layers=config.n_layers, kv=config.n_kv_heads, d=config.head_dim,
                    b=session.element_bytes, full=per_token * last.context)]
    capped = [lay for lay in session.layouts if lay.capacity is not None]
    if capped:
        cap = min(lay.capacity for lay in capped)
        held = min(last.cache_lengths[lay.layer] for lay in capped)
        lines.append(t.text("generate.ev.c9", lang, capped=len(capped), held=held, cap=cap,
                            full=len(session.layouts) - len(capped), t=last.context))
    if session.replay:
        point = session.replay[-1]
        cached = next(r for r in session.records if r.context == point.context)
        text = t.text("generate.ev.c1", lang, t=point.context, cached=cached.latency_s * 1e3,
                      cs=cached.score_entries, uncached=point.latency_s * 1e3, us=point.score_entries,
                      ratio=point.latency_s / max(cached.latency_s, 1e-9),
                      sratio=point.score_entries / max(cached.score_entries, 1))
        if session.request.temperature == 0.0:
            text += t.text("generate.ev.c1_tokens", lang, n=len(session.replay),
                           same=sum(p.same_token for p in session.replay))
        if session.replay_note == "budget":
            text += t.text("generate.ev.c1_budget", lang, s=kvcache.REPLAY_BUDGET_S)
        lines.append(text)
    if session.logit_diffs:
        diff = session.max_logit_diff()
        ok = diff <= kvcache.C4_TOLERANCE
        lines.append(t.text("generate.ev.c4", lang, n=len(session.logit_diffs), diff=diff,
                            tol=kvcache.C4_TOLERANCE,
                            verdict=t.text("generate.ev.within" if ok else "generate.ev.beyond", lang)))
    return "\n\n".join(lines)


def history_row(t, lang: str, session: kvcache.Session, run: int) -> dict:
    last = session.records[-1]
    diff = session.max_logit_diff()
    text = session.text.replace("\n", " ")
    return {"run": run, "model": session.model_name, "policy": _policy_text(t, lang, session.request),
            "prompt": session.n_prompt, "new": len(session.records),
            "cache": kvcache.format_bytes(sum(last.cache_bytes)),
            "c3": "✓" if session.bytes_match_formula() else "✗",
            "c4": "—" if diff is None else f"{diff:.1e}",
            "text": text if len(text) <= 90 else text[:87] + "…"}


def settle_runs(t, lang: str, runs) -> list[dict]:
    """The visitor's runs with a run still marked in progress shown as stopped: Stop cancels
    the generator before it can write its last row, so the row written with the last chart
    (partial=True) is the stopped run's record."""
    settled = []
    for row in runs or []:
        if row.get("partial"):
            row = {**row, "partial": False, "new": t.text("generate.row.stopped", lang, n=row["new"])}
        settled.append(row)
    return settled


def _plain_errors(stream, t, lang: str):
    """The engine refuses impossible requests with ValueError: show it as a plain gr.Error."""
    try:
        yield from stream
    except ValueError as error:
        raise gr.Error(t.text("generate.error.stopped_model", lang, error=error)) from None


def calculator(t, runtime, model_name: Any, lang: Any, tokens: Any, element_bytes: Any,
               roof_context: Any = 512):
    """Calculator tables and the roofline. The loaded model's row appears once it is loaded."""
    lang = normalize_language(lang)
    try:
        n = whole_number(tokens, "Context length", 1, 10_000_000)
        b = whole_number(element_bytes, "Bytes per element", 1, 8)
        roof_t = whole_number(roof_context, "Roofline context", 1, 10_000_000)
    except InputError as error:
        raise gr.Error(str(error)) from None
    loaded_shape, roofline, note = None, None, t.text("generate.roofline_none", lang)
    if isinstance(model_name, str) and model_name in runtime.names() and runtime.is_loaded(model_name):
        loaded = runtime.get(model_name)
        loaded_shape = kvcache.shape_from_config(f"{getattr(loaded.spec, 'title', model_name)} (loaded)",
                                                 loaded.config)
        n_params = sum(p.numel() for p in loaded.model.parameters())
        context = min(roof_t, loaded.config.max_position_embeddings)
        roofline = kvcache.roofline_figure(loaded.config, n_params, b, context, lang=lang)
        note = ""
    at = f"at {n:,} tokens"
    headers = {key: t.text(f"generate.calc.col.{slug}", lang, n=f"{n:,}") for key, slug in (
        ("model", "model"), ("attention", "attention"), ("layers", "layers"),
        ("q heads : kv heads", "heads"), ("d_head", "d_head"), ("elements / token / layer", "elements"),
        ("per token", "per_token"), (at, "at"), ("source", "source"), ("variant", "variant"),
        ("q heads", "q_heads"), ("kv heads", "kv_heads"))}
    rows = kvcache.calculator_rows(n, b, loaded_shape)
    table = pd.DataFrame(rows).drop(columns=["per_token_bytes", "total_bytes"]).rename(columns=headers)
    variants = pd.DataFrame(kvcache.head_variants(kvcache.SHAPES[1], n, b)).drop(
        columns=["total_bytes"]).rename(columns=headers)
    return table, variants, roofline, note


def build(ctx: TabContext) -> None:
    t = ctx.t
    gr.Markdown(t("generate.intro"))
    with gr.Row(equal_height=False):
        with gr.Column(scale=3):
            prompt = gr.Textbox(value=DEFAULT_PROMPT, label=t("generate.prompt"), lines=4, max_lines=12,
                                info=t("generate.prompt_info"), elem_id="gen-prompt")
            with gr.Row():
                start = gr.Button(t("generate.start"), variant="primary", elem_id="gen-start")
                stop = gr.Button(t("generate.stop"), variant="stop", elem_id="gen-stop")
                long_prompt = gr.Button(t("generate.long"), variant="secondary", size="sm",
                                        elem_id="gen-long")
            output = gr.Textbox(label=t("generate.output"), lines=5, max_lines=14, interactive=False,
                                autoscroll=True, elem_id="gen-output")
            status = gr.Markdown(elem_id="gen-status")
            # Written by Stop, cleared by the next run's first message: a component of its own,
            # so that a token message already in flight when Stop is pressed cannot overwrite it.
            stopped_note = gr.Markdown(elem_id="gen-stopped")
        with gr.Column(scale=2, min_width=300):
            with gr.Accordion(t("generate.sampling"), open=True):
                max_new = gr.Slider(1, kvcache.MAX_NEW_TOKENS, value=48, step=1,
                                    label=t("generate.max_new"), elem_id="gen-max-new")
                with gr.Row():
                    temperature = gr.Slider(0.0, kvcache.MAX_TEMPERATURE, value=0.0, step=0.05,
                                            label=t("generate.temperature"))
                    top_k = gr.Slider(0, 200, value=0, step=1, label=t("generate.top_k"))
                with gr.Row():
                    top_p = gr.Slider(0.05, 1.0, value=1.0, step=0.05, label=t("generate.top_p"))
                    seed = gr.Number(value=0, precision=0, minimum=0, label=t("generate.seed"))
            policy = gr.Radio([(t("generate.policy.full"), "full"), (t("generate.policy.window"), "window"),
                               (t("generate.policy.sinks"), "sinks")], value="full",
                              label=t("generate.policy"), elem_id="gen-policy")
            with gr.Row():
                window = gr.Slider(1, 1024, value=64, step=1, label=t("generate.window"))
                sinks = gr.Slider(0, 16, value=4, step=1, label=t("generate.sinks"))
            compare = gr.Checkbox(value=True, label=t("generate.compare"))
            check = gr.Checkbox(value=True, label=t("generate.check"))
    latex = [{"left": "$$", "right": "$$", "display": True}, {"left": "$", "right": "$", "display": False}]
    gr.Markdown(t("generate.formula"), latex_delimiters=latex, elem_id="gen-formula")
    with gr.Row(equal_height=True):
        bars = gr.Plot(kvcache.empty_figure(), show_label=False, elem_id="gen-bars")
        growth = gr.Plot(kvcache.empty_figure(), show_label=False, elem_id="gen-growth")
    with gr.Row(equal_height=True):
        latency = gr.Plot(kvcache.empty_figure(height=440), show_label=False, elem_id="gen-latency")
        diff = gr.Plot(kvcache.empty_figure(), show_label=False, elem_id="gen-diff")
    gr.Markdown(t("generate.mask_note"), latex_delimiters=latex)
    mask = gr.Plot(kvcache.empty_figure(height=260), show_label=False, elem_id="gen-mask")
    evidence = gr.Markdown(elem_id="gen-evidence")
    history_state = gr.State([])
    history = gr.Dataframe(history_frame(t, "en", []), label=t("generate.history"), interactive=False,
                           wrap=True, elem_id="gen-history",
                           column_widths=["5%", "14%", "16%", "8%", "11%", "9%", "8%", "8%", "21%"])
    with gr.Accordion(t("generate.calculator"), open=False, elem_id="gen-calculator"):
        gr.Markdown(t("generate.calc_formulas"), latex_delimiters=latex)
        with gr.Row():
            calc_tokens = gr.Number(value=32768, precision=0, minimum=1, label=t("generate.calc_tokens"))
            calc_bytes = gr.Dropdown([("fp16 / bf16 (2)", 2), ("fp32 (4)", 4), ("fp8 / int8 (1)", 1)],
                                     value=2, label=t("generate.calc_bytes"))
        calc_table = gr.Dataframe(interactive=False, wrap=True, elem_id="gen-calc-table",
                                  column_widths=["12%", "8%", "14%", "9%", "6%", "9%", "9%", "10%", "23%"])
        gr.Markdown(t("generate.calc_variants"))
        variants_table = gr.Dataframe(interactive=False, elem_id="gen-variants")
        gr.Markdown(t("generate.roofline"), latex_delimiters=latex)
        roof_context = gr.Slider(1, 8192, value=512, step=1, label=t("generate.roof_context"))
        roofline_note = gr.Markdown()
        roofline = gr.Plot(show_label=False, elem_id="gen-roofline")

    last_session = gr.State(None)  # the visitor's last finished run, re-drawn on a language switch
    # The table of runs is not an output of the streaming run: it is drawn after the run (and by
    # Stop) from history_state, so no message still in flight after Stop can overwrite it.
    outputs = [output, status, bars, growth, latency, diff, mask, evidence, history_state,
               last_session, stopped_note]

    def run(model_name, lang, text, n_new, temp, k, p, seed_value, policy_value, w, s,
            compare_value, check_value, runs):
        lang = normalize_language(lang)
        started = time.perf_counter()
        try:
            request = kvcache.parse_request(text, n_new, temp, k, p, seed_value, policy_value, w, s,
                                            compare_value, check_value)
        except InputError as error:
            raise gr.Error(str(error)) from None
        loaded = ctx.load(model_name)
        ids, chat = kvcache.prompt_ids(loaded.tokenizer, request.prompt)
        try:
            kvcache.check_prompt_length(len(ids), request, loaded.config.max_position_embeddings)
        except InputError as error:
            raise gr.Error(str(error)) from None
        runs = settle_runs(t, lang, runs)[-(HISTORY_ROWS - 1):]
        run_number = (runs[-1]["run"] + 1) if runs else 1
        # The first token goes out alone (text and status); the charts follow with the next one
        # and are redrawn at most every CHART_INTERVAL_S. In between, a message re-sends the
        # last charts as PlotData (serialized once; Gradio passes it through), not gr.skip():
        # Gradio 6 answers each skip by building a fresh component and its config (~1 ms of
        # Python each), work that takes the GIL and a core from the decode.
        held = None   # outputs 3..8 of the last chart message, re-sent while only text changes
        diff = mask = gr.skip()
        first = True  # the first message also clears the previous run's "Stopped."
        last_charts = 0.0
        session = None
        # Decoding runs in a worker thread: Gradio's work per yield overlaps with it instead of
        # adding to every step; closing this generator (Stop, closed tab) stops the worker.
        stream = kvcache.in_background(lambda should_stop: kvcache.stream_generation(
            loaded.model, loaded.tokenizer, ids, request, should_stop=should_stop,
            model_name=getattr(loaded.spec, "title", loaded.name), chat=chat, started=started,
            deadline=started + kvcache.DEADLINE_S), min_interval_s=TEXT_INTERVAL_S)
        for session in _plain_errors(stream, t, lang):
            now = time.perf_counter()
            if session.streaming and (first or now - last_charts < CHART_INTERVAL_S):
                rest = held if held is not None else (gr.skip(),) * 6
                yield (session.text, status_text(t, lang, session), *rest, gr.skip(), gr.skip(),
                       "" if first else gr.skip())
                first = False
                continue
            last_charts = now
            # C4 is computed after decoding: while decoding, its chart is cleared once (of the
            # previous run's points) and then left alone; the mask is drawn once decoding ends.
            if session.phase != "decode" or held is None:
                diff = _plot_data(kvcache.logit_diff_figure(session, lang))
            if session.phase != "decode":
                mask = _plot_data(kvcache.mask_figure(session, lang))
            done = session.phase == "done"
            row = history_row(t, lang, session, run_number)
            held = (_plot_data(kvcache.layer_bytes_figure(session, lang)),
                    _plot_data(kvcache.growth_figure(session, lang)),
                    _plot_data(kvcache.latency_figure(session, lang)), diff, mask,
                    evidence_text(t, lang, session))
            # the runs so far, this one included: marked partial until it is done, so that a
            # Stop (which cancels this generator) still leaves its row
            yield (session.text, status_text(t, lang, session), *held,
                   runs + [{**row, "partial": not done}], session if done else gr.skip(),
                   "" if first else gr.skip())
            first = False

    inputs = [ctx.model, ctx.lang, prompt, max_new, temperature, top_k, top_p, seed, policy, window,
              sinks, compare, check, history_state]
    event = start.click(run, inputs, outputs, api_name="generate", show_progress="minimal",
                        time_limit=int(kvcache.DEADLINE_S) + 30, **ctx.model_event)
    submitted = prompt.submit(run, inputs, outputs, api_visibility="private", show_progress="minimal",
                              time_limit=int(kvcache.DEADLINE_S) + 30, **ctx.model_event)
    def show_runs(lang, runs):
        """The visitor's table of runs, a stopped run included."""
        lang = normalize_language(lang)
        return history_frame(t, lang, settle_runs(t, lang, runs))

    event.then(show_runs, [ctx.lang, history_state], [history], api_name="runs")
    submitted.then(show_runs, [ctx.lang, history_state], [history], api_visibility="private")

    def on_stop(lang, runs):
        """Cancels the run. The note replaces the status line (hidden by style.css while the
        note shows): a token message already in flight could overwrite the status, not this."""
        lang = normalize_language(lang)
        partial = [row for row in runs or [] if row.get("partial")]
        note = t.text("generate.stopped_after", lang, n=partial[-1]["new"]) if partial \
            else t.text("generate.stopped", lang)
        runs = settle_runs(t, lang, runs)
        return note, history_frame(t, lang, runs), runs

    stop.click(on_stop, [ctx.lang, history_state], [stopped_note, history, history_state],
               cancels=[event, submitted], api_name="stop")

    def fill_long_prompt():
        from explorer.texts import long_text

        text = long_text()[:LONG_PROMPT_CHARS]
        return text[:text.rfind(" ")] if " " in text else text

    long_prompt.click(fill_long_prompt, None, [prompt], api_name="long_prompt")

    def calc(model_name, lang, tokens, element_bytes, context):
        return calculator(t, ctx.runtime, model_name, lang, tokens, element_bytes, context)

    calc_inputs = [ctx.model, ctx.lang, calc_tokens, calc_bytes, roof_context]
    calc_outputs = [calc_table, variants_table, roofline, roofline_note]
    calc_tokens.change(calc, calc_inputs, calc_outputs, api_name="kv_calculator")
    calc_bytes.change(calc, calc_inputs, calc_outputs, api_visibility="private")
    roof_context.change(calc, calc_inputs, calc_outputs, api_visibility="private")

    def calc_after_load(model_name, lang, tokens, element_bytes, context):
        # The loaded model's row and roofline need it loaded (the header loads it on page load).
        ctx.load(model_name)
        return calc(model_name, lang, tokens, element_bytes, context)

    ctx.demo.load(calc_after_load, calc_inputs, calc_outputs, api_visibility="private", **ctx.model_event)
    ctx.model.change(calc_after_load, calc_inputs, calc_outputs, api_visibility="private",
                     **ctx.model_event)
    ctx.lang.change(calc, calc_inputs, calc_outputs, api_visibility="private")
    def redraw(lang, session, runs):
        """The last run's computed text and charts in the newly chosen language (no model run)."""
        lang = normalize_language(lang)
        table = history_frame(t, lang, runs or [])
        if session is None:
            return (*([gr.skip()] * 7), table)
        return (status_text(t, lang, session), kvcache.layer_bytes_figure(session, lang),
                kvcache.growth_figure(session, lang), kvcache.latency_figure(session, lang),
                kvcache.logit_diff_figure(session, lang), kvcache.mask_figure(session, lang),
                evidence_text(t, lang, session), table)

    ctx.lang.change(redraw, [ctx.lang, last_session, history_state],
                    [status, bars, growth, latency, diff, mask, evidence, history], api_visibility="private")
