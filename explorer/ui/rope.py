"""The RoPE tab: frequencies per pair for several bases (C13), one pair of a real q rotating,
the Toeplitz property on the real model's q and k (C11) and what one-sided rotation leaves
(C12), attention against distance, and the real model's perplexity when its base is changed.
Thin wiring over explorer/rope.py."""
from __future__ import annotations

import functools
import math

import gradio as gr

from explorer import rope
from explorer.i18n import normalize_language
from explorer.inputs import whole_number
from explorer.texts import LONG_TEXT_SOURCE, long_text
from explorer.ui import TabContext

LATEX = [{"left": "$$", "right": "$$", "display": True}, {"left": "$", "right": "$", "display": False}]
DEFAULT_BASES = "10000, 100000, 500000, 1000000"
DEFAULT_SWEEP = "10000, 100000, 500000, 1000000, 10000000"


def default_capture_text() -> str:
    """A stretch of prose from the long text (its first lines are reST headings)."""
    text = long_text()
    start = text.find("A Python program is constructed")
    return text[max(start, 0):max(start, 0) + 1400]


TITLE = "rope.tab"
STRINGS = {
    "rope.tab": {"en": "RoPE", "zh": "RoPE 旋转位置编码"},
    "rope.intro": {
        "en": "## Rotary position embedding, measured\n"
              "RoPE splits each query and key vector of dimension $d$ into $d/2$ pairs — in the "
              "Hugging Face layout pair $i$ is dimensions $(i,\\ i + d/2)$ — and rotates pair $i$ "
              "by the angle $m\\,\\theta_i$ at position $m$, with $\\theta_i = \\text{base}^{-2i/d}$. "
              "Everything below is computed with the engine's own RoPE code on the loaded model.",
        "zh": "## 旋转位置编码（RoPE）实测\n"
              "RoPE 把每个维度为 $d$ 的查询和键向量分成 $d/2$ 对——在 Hugging Face 的布局中第 $i$ 对是"
              "维度 $(i,\\ i + d/2)$——并在位置 $m$ 处把第 $i$ 对旋转角度 $m\\,\\theta_i$，其中 "
              "$\\theta_i = \\text{base}^{-2i/d}$。下面的一切都用引擎自己的 RoPE 代码在已加载的模型上计算。",
    },
    # ---- frequencies
    "rope.freq.heading": {
        "en": "### 1. Frequencies and wavelengths for several bases\n"
              "Pair $i$ turns $\\theta_i = \\text{base}^{-2i/d}$ radians per token and completes a "
              "full turn every $\\lambda_i = 2\\pi/\\theta_i$ tokens. Pair 0 has $\\theta_0 = "
              "\\text{base}^0 = 1$ whatever the base; a larger base slows every other pair. Pairs "
              "whose wavelength exceeds the context never complete a turn inside it.",
        "zh": "### 1. 不同 base 下各维度对的频率与波长\n"
              "第 $i$ 对每个 token 转过 $\\theta_i = \\text{base}^{-2i/d}$ 弧度，每 "
              "$\\lambda_i = 2\\pi/\\theta_i$ 个 token 转满一圈。无论 base 取多少，第 0 对都有 "
              "$\\theta_0 = \\text{base}^0 = 1$；更大的 base 会让其余每一对都转得更慢。波长超过上下文长度的"
              "维度对在上下文内一圈也转不完。",
    },
    "rope.freq.bases": {"en": "Bases (comma-separated; 500k and 1M work)",
                        "zh": "base 列表（逗号分隔；可写 500k、1M）"},
    "rope.freq.head_dim": {"en": "Head dimension d", "zh": "头维度 d"},
    "rope.freq.context": {"en": "Context length (tokens)", "zh": "上下文长度（token）"},
    "rope.freq.run": {"en": "Plot frequencies", "zh": "绘制频率"},
    "rope.freq.line": {
        "en": "- base **{base}**: {full} of {pairs} pairs complete a full turn inside {context:,} "
              "tokens, **{never} never do**; θ₀ = {theta0:g}, θ₁ = {theta1:.4f} rad/token, "
              "slowest wavelength {longest:,.0f} tokens.",
        "zh": "- base **{base}**：{pairs} 对中有 {full} 对在 {context:,} 个 token 内转满一圈，"
              "**{never} 对一圈也转不完**；θ₀ = {theta0:g}，θ₁ = {theta1:.4f} 弧度/token，"
              "最慢一对的波长为 {longest:,.0f} 个 token。",
    },
    "rope.freq.slower": {
        "en": "Measured: going from base {low} to {high}, pair 0 keeps θ₀ = 1 and all {n} other "
              "pairs slow down (by ×{min_ratio:.3g} for pair 1 up to ×{max_ratio:.3g} for pair {last}).",
        "zh": "实测：base 从 {low} 增大到 {high} 时，第 0 对保持 θ₀ = 1，其余 {n} 对全部变慢"
              "（第 1 对变为 ×{min_ratio:.3g}，第 {last} 对变为 ×{max_ratio:.3g}）。",
    },
    # ---- real q, k
    "rope.qk.heading": {
        "en": "### 2. The real model's q and k: only the distance counts\n"
              "Rotations compose and preserve dot products, so "
              "$\\langle R_m q,\\ R_n k\\rangle = \\langle q,\\ R_m^{\\top} R_n k\\rangle = "
              "\\langle q,\\ R_{n-m}\\, k\\rangle$: the score depends on $n - m$ only. To see it "
              "cleanly we take **one** pre-RoPE query vector and **one** pre-RoPE key vector "
              "captured from the model at the chosen layer and head, place them at every pair of "
              "positions $(m, n)$ and draw $\\langle R_m q, R_n k\\rangle$: every diagonal must be "
              "constant (a Toeplitz matrix). Rotating only the query, $\\langle R_m q, k\\rangle$, "
              "keeps the absolute position $m$ and the diagonals are no longer constant. The spread "
              "is the largest (max − min) along any diagonal.",
        "zh": "### 2. 真实模型的 q 和 k：只有距离起作用\n"
              "旋转可以复合且保持内积，所以 "
              "$\\langle R_m q,\\ R_n k\\rangle = \\langle q,\\ R_m^{\\top} R_n k\\rangle = "
              "\\langle q,\\ R_{n-m}\\, k\\rangle$：分数只取决于 $n - m$。为了看得清楚，我们从所选层和"
              "头中取出**一个** RoPE 之前的查询向量和**一个** RoPE 之前的键向量，把它们放到每一对位置 "
              "$(m, n)$ 上，画出 $\\langle R_m q, R_n k\\rangle$：每条对角线都应为常数（Toeplitz 矩阵）。"
              "只旋转查询，即 $\\langle R_m q, k\\rangle$，会保留绝对位置 $m$，对角线不再是常数。"
              "“离散度”是任意一条对角线上（最大值 − 最小值）的最大者。",
    },
    "rope.qk.text": {"en": "Text fed to the model (first tokens are used)",
                     "zh": "输入模型的文本（使用前面的 token）"},
    "rope.qk.layer": {"en": "Layer", "zh": "层"},
    "rope.qk.head": {"en": "Query head", "zh": "查询头"},
    "rope.qk.q_token": {"en": "Query vector from token #", "zh": "查询向量取自第几个 token"},
    "rope.qk.k_token": {"en": "Key vector from token #", "zh": "键向量取自第几个 token"},
    "rope.qk.positions": {"en": "Positions placed (m, n = 0 … N−1)", "zh": "放置的位置数（m, n = 0 … N−1）"},
    "rope.qk.tokens": {"en": "Tokens captured", "zh": "捕获的 token 数"},
    "rope.qk.run": {"en": "Capture q and k", "zh": "捕获 q 和 k"},
    "rope.qk.both": {"en": "Both rotated: ⟨R_m q, R_n k⟩", "zh": "两侧都旋转：⟨R_m q, R_n k⟩"},
    "rope.qk.one": {"en": "Only q rotated: ⟨R_m q, k⟩", "zh": "只旋转 q：⟨R_m q, k⟩"},
    "rope.qk.real": {"en": "The layer's actual scores on the real sequence (masked entries blank)",
                     "zh": "该层在真实序列上的实际分数（被掩码的位置留空）"},
    "rope.qk.result": {
        "en": "Layer {layer} ({kind}, base {base}), head {head} (KV head {kv_head}); {tokens} tokens "
              "captured in {seconds:.2f} s. q from token {q_token} {q_word}, k from token {k_token} "
              "{k_word}, placed at {n} positions.\n\n"
              "| | largest spread along a diagonal | relative to the largest score |\n|---|---|---|\n"
              "| both rotated ⟨R_m q, R_n k⟩ | **{both:.3g}** | **{both_rel:.2g}** |\n"
              "| only q rotated ⟨R_m q, k⟩ | **{one:.3g}** | **{one_rel:.2g}** |\n\n"
              "Both rotated: constant along every diagonal up to float64 rounding (largest score "
              "{scale:.3g}; computed in double precision, since in float32 the angles m·θ alone "
              "round to ~1e-5 rad). The identity ⟨R_m q, R_n k⟩ = ⟨q, R_(n−m) k⟩ holds "
              "to a relative {identity:.1g}. Our rotation of the captured pre-RoPE vectors "
              "reproduces the q and k the model used (largest difference {repro:.2g}).",
        "zh": "第 {layer} 层（{kind}，base {base}），第 {head} 个头（KV 头 {kv_head}）；捕获 {tokens} 个 "
              "token，用时 {seconds:.2f} 秒。q 取自第 {q_token} 个 token {q_word}，k 取自第 {k_token} 个 "
              "token {k_word}，放置在 {n} 个位置上。\n\n"
              "| | 对角线上的最大离散度 | 相对于最大分数 |\n|---|---|---|\n"
              "| 两侧都旋转 ⟨R_m q, R_n k⟩ | **{both:.3g}** | **{both_rel:.2g}** |\n"
              "| 只旋转 q ⟨R_m q, k⟩ | **{one:.3g}** | **{one_rel:.2g}** |\n\n"
              "两侧都旋转时，每条对角线都是常数，误差只来自 float64 舍入（最大分数 {scale:.3g}；这里用双精度计算，因为在 float32 下仅角度 m·θ 的舍入就约为 1e-5 弧度）。"
              "恒等式 ⟨R_m q, R_n k⟩ = ⟨q, R_(n−m) k⟩ 的相对误差为 {identity:.1g}。我们对捕获的 RoPE 前向量所做的"
              "旋转复现了模型实际使用的 q、k（最大差异 {repro:.2g}）。",
    },
    "rope.qk.clamped": {"en": "(The text has {tokens} tokens: token indices were limited to {last}.)",
                        "zh": "（文本只有 {tokens} 个 token：token 序号已限制为不超过 {last}。）"},
    "rope.kind.full": {"en": "full attention", "zh": "全局注意力"},
    "rope.kind.sliding": {"en": "sliding window {window}", "zh": "滑动窗口 {window}"},
    # ---- one pair rotating
    "rope.pair.heading": {
        "en": "### 3. One pair of that query vector, rotating\n"
              "The point $(q_i,\\ q_{i+d/2})$ is rotated by $m\\,\\theta_i$ as the position $m$ "
              "advances: move the position slider. Its length never changes; only the angle "
              "carries position. The star is the model's own post-RoPE query of that token at its "
              "real position — it lies on the circle where the rotation puts it.",
        "zh": "### 3. 该查询向量中的一对维度在旋转\n"
              "随着位置 $m$ 增加，点 $(q_i,\\ q_{i+d/2})$ 被旋转 $m\\,\\theta_i$：拖动位置滑块即可。"
              "它的长度从不改变，只有角度携带位置信息。星号是模型自己在该 token 真实位置上旋转后的查询向量——"
              "它正落在旋转所预言的那一点上。",
    },
    "rope.pair.pair": {"en": "Pair i", "zh": "维度对 i"},
    "rope.pair.position": {"en": "Position m", "zh": "位置 m"},
    "rope.pair.result": {
        "en": "Pair {pair} (dims {pair} and {partner}): θ = {theta:.4g} rad/token, wavelength "
              "{wavelength:,.1f} tokens, radius {radius:.3f}. At position {position} the angle is "
              "{angle:,.2f} rad = {turns:,.2f} turns. The model's own q at position {token} matches "
              "the rotation to {error:.1g}. Pairs of this q with the largest radius: {strongest}.",
        "zh": "第 {pair} 对（维度 {pair} 和 {partner}）：θ = {theta:.4g} 弧度/token，波长 {wavelength:,.1f} "
              "个 token，半径 {radius:.3f}。在位置 {position} 处角度为 {angle:,.2f} 弧度 = {turns:,.2f} 圈。"
              "模型自己在位置 {token} 的 q 与旋转结果相差 {error:.1g}。该 q 中半径最大的几对：{strongest}。",
    },
    "rope.need_capture": {"en": "Capture q and k first (section 2).", "zh": "请先捕获 q 和 k（第 2 部分）。"},
    # ---- distance profile
    "rope.dist.heading": {
        "en": "### 4. Attention against distance, per layer\n"
              "Mean attention weight the real model puts on a key $m - n$ tokens back, averaged "
              "over heads and over every query that can see that distance (same text as above).",
        "zh": "### 4. 各层注意力随距离的变化\n"
              "真实模型放在 $m - n$ 个 token 之前那个键上的平均注意力权重，对所有头以及所有能看到该距离的查询"
              "取平均（使用上面的同一段文本）。",
    },
    "rope.dist.run": {"en": "Measure attention vs distance", "zh": "测量注意力与距离的关系"},
    "rope.dist.result": {
        "en": "{layers} layers, {tokens} tokens, {seconds:.2f} s. Mean weight at distance 0 (the "
              "token itself): {self_weight:.3f}; at distance 1: {prev_weight:.3f}; beyond 64 tokens: "
              "{far_weight:.4f} per key. Layer with the most weight on distance 1: {prev_layer}.",
        "zh": "{layers} 层，{tokens} 个 token，用时 {seconds:.2f} 秒。距离 0（token 自身）的平均权重："
              "{self_weight:.3f}；距离 1：{prev_weight:.3f}；超过 64 个 token 时每个键平均 {far_weight:.4f}。"
              "在距离 1 上权重最大的层：{prev_layer}。",
    },
    # ---- base on the real model
    "rope.base.heading": {
        "en": "### 5. Changing the base of the real model\n"
              "The model was trained with one base (SmolLM2: 100k on every layer; Gemma-3: 10k on "
              "its sliding-window layers, 1M on its 3 global layers). Here it runs with another one, "
              "nothing retrained: one forward over the long text per base, and the negative "
              "log-likelihood $-\\log p(x_{t+1} \\mid x_{\\le t})$ of every token, plotted against "
              "its position. A larger base alone does **not** buy a longer context: the weights "
              "were trained to read the angles of the trained base, and any other base shows them "
              "angles they never saw.",
        "zh": "### 5. 改变真实模型的 base\n"
              "模型是用某个 base 训练的（SmolLM2：所有层都是 100k；Gemma-3：滑动窗口层 10k，3 个全局层 1M）。"
              "这里不做任何重新训练，直接换一个 base 运行：每个 base 在长文本上做一次前向，计算每个 token 的负对数似然 "
              "$-\\log p(x_{t+1} \\mid x_{\\le t})$，并按位置作图。仅仅增大 base **并不能**换来更长的上下文："
              "权重学会读取的是训练时那个 base 的角度，换成别的 base，它们看到的是从未见过的角度。",
    },
    "rope.base.source": {"en": "Text: " + LONG_TEXT_SOURCE, "zh": "文本：" + LONG_TEXT_SOURCE},
    "rope.base.bases": {"en": "Bases to compare (the trained base is always added)",
                        "zh": "要比较的 base（总会加入训练时的 base）"},
    "rope.base.apply": {"en": "Apply the base to", "zh": "把 base 用于"},
    "rope.base.apply.full": {"en": "full-attention layers (all of SmolLM2; Gemma's 3 global layers)",
                             "zh": "全局注意力层（SmolLM2 的全部层；Gemma 的 3 个全局层）"},
    "rope.base.apply.sliding": {"en": "sliding-window layers (Gemma only)",
                                "zh": "滑动窗口层（仅 Gemma）"},
    "rope.base.apply.all": {"en": "all layers", "zh": "所有层"},
    "rope.base.tokens": {"en": "Tokens of the long text", "zh": "长文本的 token 数"},
    "rope.base.run": {"en": "Run the perplexity sweep", "zh": "运行困惑度扫描"},
    "rope.base.result": {
        "en": "{model}, base applied to {apply}, {tokens} tokens. Base {trained}: perplexity "
              "**{trained_ppl:.2f}**. Lowest perplexity in this sweep: base **{best}** "
              "({best_ppl:.2f}). {larger}",
        "zh": "{model}，base 用于{apply}，{tokens} 个 token。base {trained}：困惑度 "
              "**{trained_ppl:.2f}**。本次扫描中困惑度最低的是 base **{best}**（{best_ppl:.2f}）。{larger}",
    },
    "rope.base.larger": {
        "en": "Larger bases than trained: {items}. In the last quarter of the text (where a longer "
              "reach would help) {verdict}.",
        "zh": "比训练值更大的 base：{items}。在文本的最后四分之一（更远的视野本应在这里有帮助）{verdict}。",
    },
    "rope.base.none_better": {"en": "none of them beats the trained base",
                              "zh": "没有一个比训练时的 base 更好"},
    "rope.base.some_better": {"en": "{which} did better than the trained base, by at most {gain:.1%} "
                                    "in perplexity",
                              "zh": "{which} 比训练时的 base 好，困惑度最多降低 {gain:.1%}"},
    "rope.base.no_larger": {"en": "No base larger than the trained one was in the sweep.",
                            "zh": "扫描中没有比训练值更大的 base。"},
    "rope.cont.heading": {
        "en": "#### Greedy continuation after the long text: the trained base beside a changed one",
        "zh": "#### 长文本之后的贪心续写：训练时的 base 与改变后的 base 并排",
    },
    "rope.cont.base": {"en": "log₁₀ of the base (5 = 100k, 6 = 1M)", "zh": "base 的 log₁₀（5 = 100k，6 = 1M）"},
    "rope.cont.new": {"en": "New tokens", "zh": "新 token 数"},
    "rope.cont.run": {"en": "Continue the text", "zh": "续写文本"},
    "rope.cont.result": {
        "en": "The prompt ends with: “…{tail}”\n\n| base | greedy continuation |\n|---|---|\n"
              "| {trained} | {trained_text} |\n| {base} | {base_text} |",
        "zh": "提示词结尾为：“…{tail}”\n\n| base | 贪心续写 |\n|---|---|\n"
              "| {trained} | {trained_text} |\n| {base} | {base_text} |",
    },
    # ---- optional scaling
    "rope.scale.heading": {
        "en": "### 6. Optional: context-extension recipes (frequency curves only)\n"
              "To stretch a model trained on $L$ tokens to $sL$: **linear position interpolation** "
              "divides every $\\theta_i$ by $s$; **NTK-aware** scaling raises the base to "
              "$\\text{base}\\cdot s^{d/(d-2)}$ (fast pairs barely change, the slowest is divided by "
              "$s$); **YaRN** keeps pairs that turn many times in $L$, interpolates pairs that turn "
              "less than once, and ramps between them (it also rescales attention, not drawn). "
              "These are the frequencies only; none of them is applied to the model here.",
        "zh": "### 6. 可选：上下文扩展方法（仅频率曲线）\n"
              "要把在 $L$ 个 token 上训练的模型拉伸到 $sL$：**线性位置插值**把每个 $\\theta_i$ 除以 $s$；"
              "**NTK-aware** 缩放把 base 提高到 $\\text{base}\\cdot s^{d/(d-2)}$（快的维度对几乎不变，最慢的一对被除以 $s$）；"
              "**YaRN** 保留在 $L$ 内转很多圈的维度对，对转不满一圈的维度对做插值，中间线性过渡（它还会缩放注意力，此处未画出）。"
              "这里只画频率，没有任何一种方法被应用到模型上。",
    },
    "rope.col.base": {"en": "base", "zh": "base"},
    "rope.col.who": {"en": "who uses it", "zh": "谁在用"},
    "rope.col.pairs": {"en": "pairs", "zh": "维度对数"},
    "rope.col.full_turn": {"en": "full turn inside context", "zh": "上下文内转满一圈"},
    "rope.col.never": {"en": "never a full turn", "zh": "一圈也转不完"},
    "rope.col.theta0": {"en": "θ of pair 0 (rad/token)", "zh": "第 0 对的 θ（弧度/token）"},
    "rope.col.theta1": {"en": "θ of pair 1 (rad/token)", "zh": "第 1 对的 θ（弧度/token）"},
    "rope.col.longest": {"en": "longest wavelength (tokens)", "zh": "最长波长（token）"},
    "rope.col.ppl": {"en": "perplexity", "zh": "困惑度"},
    "rope.col.ppl_range": {"en": "ppl, tokens {lo}–{hi}", "zh": "困惑度，第 {lo}–{hi} 个 token"},
    "rope.col.delta": {"en": "mean NLL − trained (nats)", "zh": "平均 NLL − 训练值（nats）"},
    "rope.col.seconds": {"en": "seconds", "zh": "秒"},
    "rope.scale.title": {"en": "Optional: context-extension recipes (PI, NTK-aware, YaRN)",
                         "zh": "可选：上下文扩展方法（PI、NTK-aware、YaRN）"},
    "rope.scale.base": {"en": "Base", "zh": "base"},
    "rope.scale.factor": {"en": "Extension factor s", "zh": "扩展倍数 s"},
    "rope.scale.context": {"en": "Trained context L (tokens)", "zh": "训练上下文 L（token）"},
    "rope.scale.run": {"en": "Plot the recipes", "zh": "绘制各方法"},
    **rope.FIGURE_STRINGS,
}


# Column names of the tables explorer/rope.py returns (English there), per language here.
COLUMNS = {
    "base": "rope.col.base", "who uses it": "rope.col.who", "pairs": "rope.col.pairs",
    "full turn inside context": "rope.col.full_turn", "never a full turn": "rope.col.never",
    "θ of pair 0 (rad/token)": "rope.col.theta0", "θ of pair 1 (rad/token)": "rope.col.theta1",
    "longest wavelength (tokens)": "rope.col.longest", "perplexity": "rope.col.ppl",
    "mean NLL − trained (nats)": "rope.col.delta", "seconds": "rope.col.seconds",
}


def localize_columns(t, lang: str, frame):
    """The table with its column names in `lang` ("ppl, tokens a–b" included)."""
    import re

    names = {}
    for column in frame.columns:
        if column in COLUMNS:
            names[column] = t.text(COLUMNS[column], lang)
        elif match := re.fullmatch(r"ppl, tokens (\d+)–(\d+)", column):
            names[column] = t.text("rope.col.ppl_range", lang, lo=match[1], hi=match[2])
    return frame.rename(columns=names)


def _error(func):
    """InputError (and ValueError from the engine on bad input) -> gr.Error in plain words."""
    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        try:
            return func(*args, **kwargs)
        except rope.InputError as error:
            raise gr.Error(str(error)) from None
    return wrapper


def _kind(t, lang, capture) -> str:
    if capture.window is not None:
        return t.text("rope.kind.sliding", lang, window=capture.window)
    return t.text("rope.kind.full", lang)


# ----------------------------------------------------------------------------- figures from stored data
# Each chart is drawn from what its handler keeps in a gr.State, by one function shared by the
# handler and the language switch, so the switch redraws the same numbers with other words and
# never runs the model again.


def capture_figures(state, lang: str):
    """(both rotated, only q rotated, real scores) of a stored capture and Toeplitz result."""
    capture, head = state["capture"], state["head"]
    both, one = rope.toeplitz_figures(capture, state["toeplitz"], head, state["q_token"],
                                      state["k_token"], lang)
    return both, one, rope.real_scores_figure(capture, head, lang)


def pair_rotation_figure(state, pair, position, lang: str):
    """(figure, facts) of one pair of the stored capture's q rotated to `position`."""
    return rope.pair_figure(state["capture"], state["head"], state["q_token"], pair, position, lang)


def distance_figure_of(view, lang: str):
    return rope.distance_figure(view["profile"], view["layer_types"], lang)


def scaling_figure_of(view, lang: str):
    return rope.scaling_figure(view["table"], view["context"], view["factor"], lang)


def redraw_figures(lang, capture_state, pair, position, dist_view, sweep_view, scale_view):
    """Every model chart of the tab in `lang`, from the stored data (no forward pass); None for
    a chart not drawn yet. Order: both, one, real, pair, distance, sweep, scaling."""
    lang = normalize_language(lang)
    figures = [None] * 7
    if capture_state:
        figures[:3] = capture_figures(capture_state, lang)
        figures[3] = pair_rotation_figure(capture_state, pair, position, lang)[0]
    if dist_view:
        figures[4] = distance_figure_of(dist_view, lang)
    if sweep_view:
        figures[5] = rope.sweep_figure(sweep_view, lang=lang)
    if scale_view:
        figures[6] = scaling_figure_of(scale_view, lang)
    return figures


def build(ctx: TabContext) -> None:
    t = ctx.t
    gr.Markdown(t("rope.intro"), latex_delimiters=LATEX)

    # ------------------------------------------------------------------ 1. frequencies
    gr.Markdown(t("rope.freq.heading"), latex_delimiters=LATEX)
    with gr.Row():
        freq_bases = gr.Textbox(DEFAULT_BASES, label=t("rope.freq.bases"), scale=3, elem_id="rope-freq-bases")
        freq_dim = gr.Number(64, label=t("rope.freq.head_dim"), precision=0, scale=1, elem_id="rope-freq-dim")
        freq_context = gr.Number(8192, label=t("rope.freq.context"), precision=0, scale=1,
                                 elem_id="rope-freq-context")
        freq_run = gr.Button(t("rope.freq.run"), variant="primary", scale=1, elem_id="rope-freq-run")
    freq_plot = gr.Plot(elem_id="rope-freq-plot", show_label=False)
    freq_text = gr.Markdown(elem_id="rope-freq-text")
    freq_table = gr.Dataframe(elem_id="rope-freq-table", interactive=False, wrap=True)

    @_error
    def frequencies(lang, bases_text, head_dim, context_len):
        """Per-pair frequency θ_i = base^(-2i/d) and wavelength for several bases against a context."""
        lang = normalize_language(lang)
        bases = rope.parse_bases(bases_text)
        fig, summary, table = rope.frequency_figures(head_dim, bases, context_len, lang)
        context_len = int(context_len)
        lines = [t.text("rope.freq.line", lang, base=row["base"], full=row["full turn inside context"],
                        pairs=row["pairs"], context=context_len, never=row["never a full turn"],
                        theta0=row["θ of pair 0 (rad/token)"], theta1=row["θ of pair 1 (rad/token)"],
                        longest=row["longest wavelength (tokens)"])
                 for _, row in summary.iterrows()]
        ordered = sorted(bases)
        if len(ordered) >= 2 and int(head_dim) >= 4:
            low = table[table["base"] == ordered[0]]["theta"].to_numpy()
            high = table[table["base"] == ordered[-1]]["theta"].to_numpy()
            ratio = high[1:] / low[1:]
            lines.append("\n" + t.text("rope.freq.slower", lang, low=rope.base_label(ordered[0]),
                                       high=rope.base_label(ordered[-1]), n=len(ratio),
                                       min_ratio=ratio.max(), max_ratio=ratio.min(), last=len(ratio)))
        shown = summary.copy()
        shown["longest wavelength (tokens)"] = shown["longest wavelength (tokens)"].round(0)
        return fig, "\n".join(lines), localize_columns(t, lang, shown.round(6))

    freq_inputs = [ctx.lang, freq_bases, freq_dim, freq_context]
    freq_outputs = [freq_plot, freq_text, freq_table]
    freq_run.click(frequencies, freq_inputs, freq_outputs, api_name="rope_frequencies")
    ctx.demo.load(frequencies, freq_inputs, freq_outputs, api_visibility="private")
    ctx.lang.change(frequencies, freq_inputs, freq_outputs, api_visibility="private")

    # ------------------------------------------------------------------ 2. real q and k
    gr.Markdown(t("rope.qk.heading"), latex_delimiters=LATEX)
    capture_state = gr.State(None)
    qk_text = gr.Textbox(default_capture_text(), label=t("rope.qk.text"), lines=3, max_lines=6,
                         elem_id="rope-qk-text")
    with gr.Row():
        qk_layer = gr.Slider(0, 29, value=3, step=1, label=t("rope.qk.layer"), elem_id="rope-qk-layer")
        qk_head = gr.Slider(0, 8, value=0, step=1, label=t("rope.qk.head"), elem_id="rope-qk-head")
        qk_tokens = gr.Slider(16, rope.MAX_CAPTURE_TOKENS, value=256, step=16, label=t("rope.qk.tokens"),
                              elem_id="rope-qk-tokens")
    with gr.Row():
        qk_q_token = gr.Number(120, label=t("rope.qk.q_token"), precision=0, elem_id="rope-qk-q")
        qk_k_token = gr.Number(40, label=t("rope.qk.k_token"), precision=0, elem_id="rope-qk-k")
        qk_positions = gr.Slider(16, 256, value=128, step=16, label=t("rope.qk.positions"),
                                 elem_id="rope-qk-positions")
        qk_run = gr.Button(t("rope.qk.run"), variant="primary", elem_id="rope-qk-run")
    qk_text_out = gr.Markdown(elem_id="rope-qk-result")
    with gr.Row():
        with gr.Column():
            gr.Markdown(t("rope.qk.both"))
            qk_both = gr.Plot(elem_id="rope-qk-both", show_label=False)
        with gr.Column():
            gr.Markdown(t("rope.qk.one"))
            qk_one = gr.Plot(elem_id="rope-qk-one", show_label=False)
    gr.Markdown(t("rope.qk.real"))
    qk_real = gr.Plot(elem_id="rope-qk-real", show_label=False)

    @_error
    def capture_and_toeplitz(model_name, lang, text, layer, head, q_token, k_token, n_positions,
                             max_tokens, progress=gr.Progress()):
        """Capture the real q, k (before RoPE) at one layer; Toeplitz test with one fixed q and k."""
        lang = normalize_language(lang)
        rope.check_text(text)
        loaded = ctx.load(model_name, progress)
        capture = rope.capture_qk(loaded.model, loaded.tokenizer, text, layer, max_tokens)
        head = whole_number(head, "The head", 0, capture.n_heads - 1)
        last = len(capture.tokens) - 1
        q_index = min(whole_number(q_token, "The query token", 0, rope.MAX_CAPTURE_TOKENS), last)
        k_index = min(whole_number(k_token, "The key token", 0, rope.MAX_CAPTURE_TOKENS), last)
        result = rope.toeplitz(capture, head, q_index, k_index, n_positions)
        state = {"capture": capture, "head": head, "q_token": q_index, "k_token": k_index,
                 "toeplitz": result}
        both, one, real = capture_figures(state, lang)
        text_out = t.text(
            "rope.qk.result", lang, layer=capture.layer, kind=_kind(t, lang, capture),
            base=rope.base_label(capture.theta_base), head=head, kv_head=capture.kv_head(head),
            tokens=len(capture.tokens), seconds=capture.seconds, q_token=q_index,
            q_word=repr(capture.tokens[q_index]), k_token=k_index, k_word=repr(capture.tokens[k_index]),
            n=int(n_positions), both=result.spread_both["spread"], both_rel=result.spread_both["relative"],
            one=result.spread_query["spread"], one_rel=result.spread_query["relative"],
            scale=result.spread_both["scale"], identity=result.identity_error,
            repro=rope.rope_reproduction_error(capture))
        if q_index != int(q_token) or k_index != int(k_token):
            text_out += "\n\n" + t.text("rope.qk.clamped", lang, tokens=last + 1, last=last)
        return both, one, real, text_out, state

    qk_event = qk_run.click(
        capture_and_toeplitz,
        [ctx.model, ctx.lang, qk_text, qk_layer, qk_head, qk_q_token, qk_k_token, qk_positions, qk_tokens],
        [qk_both, qk_one, qk_real, qk_text_out, capture_state], api_name="rope_qk", **ctx.model_event)

    # ------------------------------------------------------------------ 3. one pair rotating
    gr.Markdown(t("rope.pair.heading"), latex_delimiters=LATEX)
    with gr.Row():
        pair_index = gr.Slider(0, 31, value=0, step=1, label=t("rope.pair.pair"), elem_id="rope-pair-index")
        pair_position = gr.Slider(0, 512, value=24, step=1, label=t("rope.pair.position"),
                                  elem_id="rope-pair-position")
    with gr.Row():
        pair_plot = gr.Plot(elem_id="rope-pair-plot", show_label=False, scale=3)
        pair_text = gr.Markdown(elem_id="rope-pair-text")

    @_error
    def rotate_pair(lang, state, pair, position):
        """One dimension pair (q_i, q_{i+d/2}) of the captured q rotated to position m."""
        lang = normalize_language(lang)
        if not state:
            raise gr.Error(t.text("rope.need_capture", lang))
        capture, head, token = state["capture"], state["head"], state["q_token"]
        half = capture.head_dim // 2
        pair = whole_number(pair, "The pair", 0, half - 1)
        fig, facts = pair_rotation_figure(state, pair, position, lang)
        vector = capture.q_pre[head, token]
        radii = (vector[:half] ** 2 + vector[half:] ** 2).sqrt()
        strongest = ", ".join(f"{int(i)} ({float(radii[i]):.2f})" for i in radii.argsort(descending=True)[:4])
        text = t.text("rope.pair.result", lang, pair=pair, partner=pair + half, theta=facts["theta"],
                      wavelength=facts["wavelength"], radius=facts["radius"], position=int(position),
                      angle=facts["angle"], turns=facts["turns"], token=token,
                      error=facts["own_position_error"], strongest=strongest)
        return fig, text

    pair_inputs = [ctx.lang, capture_state, pair_index, pair_position]
    def visible_pair(state, pair):
        """Keep the chosen pair unless it is (nearly) zero in this q (Gemma's q-norm zeroes some
        dimensions): then show the fastest pair whose radius is at least a fifth of the largest,
        so the rotation is both visible and large."""
        if not state:
            return pair
        capture, head, token = state["capture"], state["head"], state["q_token"]
        half = capture.head_dim // 2
        vector = capture.q_pre[head, token]
        radii = (vector[:half] ** 2 + vector[half:] ** 2).sqrt()
        pair = min(max(int(pair or 0), 0), half - 1)
        if radii[pair] >= 0.05 * radii.max():
            return pair
        return int((radii >= 0.2 * radii.max()).nonzero()[0, 0])  # pairs run fast to slow

    qk_event.success(visible_pair, [capture_state, pair_index], [pair_index],
                     api_visibility="private").then(
        rotate_pair, pair_inputs, [pair_plot, pair_text], api_visibility="private")
    pair_index.release(rotate_pair, pair_inputs, [pair_plot, pair_text], api_name="rope_pair")
    pair_position.change(rotate_pair, pair_inputs, [pair_plot, pair_text], api_visibility="private",
                         show_progress="hidden", trigger_mode="always_last")

    # ------------------------------------------------------------------ 4. distance profile
    gr.Markdown(t("rope.dist.heading"), latex_delimiters=LATEX)
    dist_run = gr.Button(t("rope.dist.run"), elem_id="rope-dist-run")
    dist_text = gr.Markdown(elem_id="rope-dist-text")
    dist_plot = gr.Plot(elem_id="rope-dist-plot", show_label=False)
    dist_state = gr.State(None)

    @_error
    def distance(model_name, lang, text, max_tokens, progress=gr.Progress()):
        """Mean attention weight against distance m − n, per layer, on the real model."""
        import numpy as np

        lang = normalize_language(lang)
        rope.check_text(text)
        loaded = ctx.load(model_name, progress)
        profile, tokens, seconds = rope.distance_profile(loaded.model, loaded.tokenizer, text, max_tokens)
        far = profile[:, 65:] if profile.shape[1] > 65 else profile[:, -1:]
        second = profile[:, 1] if profile.shape[1] > 1 else profile[:, 0]
        text_out = t.text("rope.dist.result", lang, layers=profile.shape[0], tokens=len(tokens),
                          seconds=seconds, self_weight=float(np.nanmean(profile[:, 0])),
                          prev_weight=float(np.nanmean(second)), far_weight=float(np.nanmean(far)),
                          prev_layer=int(np.nanargmax(second)))
        view = {"profile": profile, "layer_types": list(loaded.config.layer_types)}
        return distance_figure_of(view, lang), text_out, view

    dist_run.click(distance, [ctx.model, ctx.lang, qk_text, qk_tokens], [dist_plot, dist_text, dist_state],
                   api_name="rope_distance", **ctx.model_event)

    # ------------------------------------------------------------------ 5. base on the real model
    gr.Markdown(t("rope.base.heading"), latex_delimiters=LATEX)
    gr.Markdown(t("rope.base.source"), elem_id="rope-base-source")
    with gr.Row():
        sweep_bases = gr.Textbox(DEFAULT_SWEEP, label=t("rope.base.bases"), scale=3, elem_id="rope-sweep-bases")
        sweep_tokens = gr.Slider(128, 2048, value=1024, step=128, label=t("rope.base.tokens"), scale=2,
                                 elem_id="rope-sweep-tokens")
    apply_to = gr.Radio([(t("rope.base.apply.full"), "full"), (t("rope.base.apply.sliding"), "sliding"),
                         (t("rope.base.apply.all"), "all")], value="full", label=t("rope.base.apply"),
                        elem_id="rope-apply-to")
    sweep_run = gr.Button(t("rope.base.run"), variant="primary", elem_id="rope-sweep-run")
    sweep_text = gr.Markdown(elem_id="rope-sweep-text")
    sweep_plot = gr.Plot(elem_id="rope-sweep-plot", show_label=False)
    sweep_table = gr.Dataframe(elem_id="rope-sweep-table", interactive=False, wrap=True)
    sweep_state = gr.State(None)

    @_error
    def sweep(model_name, lang, bases_text, apply, n_tokens, progress=gr.Progress()):
        """Perplexity per position on the long text for each RoPE base (one forward per base)."""
        lang = normalize_language(lang)
        bases = rope.parse_bases(bases_text)
        loaded = ctx.load(model_name, progress)
        result = rope.perplexity_sweep(loaded.model, loaded.tokenizer, long_text(), bases, apply,
                                       n_tokens, progress=lambda f, m: progress(f, desc=m))
        summary = result.summary(lang=lang)
        ppl = {key: float(math.exp(result.nll[key].mean())) for key in result.bases}
        last_col = [c for c in summary.columns if c.startswith("ppl, tokens")][-1]
        last_quarter = dict(zip(result.bases, summary[last_col]))
        best = min(ppl, key=ppl.get)
        reference = result.reference
        larger = [b for b in result.bases if result.trained is not None and b > result.trained]
        if larger:
            items = ", ".join(f"{rope.base_label(b)} → {ppl[b]:.2f}" for b in sorted(larger))
            better = [b for b in larger if last_quarter[b] < last_quarter[reference]]
            if better:
                gain = max(1 - last_quarter[b] / last_quarter[reference] for b in better)
                verdict = t.text("rope.base.some_better", lang,
                                 which=", ".join(rope.base_label(b) for b in better), gain=gain)
            else:
                verdict = t.text("rope.base.none_better", lang)
            larger_text = t.text("rope.base.larger", lang, items=items, verdict=verdict)
        else:
            larger_text = t.text("rope.base.no_larger", lang)
        text_out = t.text("rope.base.result", lang, model=getattr(loaded.spec, "title", loaded.name),
                          apply=t.text(f"rope.base.apply.{apply}", lang), tokens=result.n_tokens,
                          trained=result.label(reference, lang), trained_ppl=ppl[reference],
                          best=result.label(best, lang), best_ppl=ppl[best], larger=larger_text)
        return (rope.sweep_figure(result, lang=lang), text_out, localize_columns(t, lang, summary.round(4)),
                result)

    sweep_run.click(sweep, [ctx.model, ctx.lang, sweep_bases, apply_to, sweep_tokens],
                    [sweep_plot, sweep_text, sweep_table, sweep_state], api_name="rope_perplexity",
                    **ctx.model_event)

    gr.Markdown(t("rope.cont.heading"))
    with gr.Row():
        cont_base = gr.Slider(3, 8, value=6, step=0.1, label=t("rope.cont.base"), elem_id="rope-cont-base")
        cont_new = gr.Slider(4, 48, value=20, step=1, label=t("rope.cont.new"), elem_id="rope-cont-new")
        cont_run = gr.Button(t("rope.cont.run"), elem_id="rope-cont-run")
    cont_text = gr.Markdown(elem_id="rope-cont-text")

    @_error
    def continuation(model_name, lang, log10_base, apply, n_tokens, n_new, progress=gr.Progress()):
        """Greedy continuation of the long text's first tokens, trained base vs a changed base."""
        lang = normalize_language(lang)
        try:
            exponent = float(log10_base)
        except (TypeError, ValueError):
            raise gr.Error(f"log10 of the base must be a number, got {log10_base!r}.") from None
        if not math.isfinite(exponent) or not 0.0 < exponent <= 12.0:
            raise gr.Error(f"log10 of the base must be in (0, 12], got {log10_base!r}.")
        base = float(10 ** exponent)
        loaded = ctx.load(model_name, progress)
        config = loaded.config
        options = rope.base_options(config, base, apply)
        n_tokens = whole_number(n_tokens, "The number of tokens", 16, rope.MAX_SWEEP_TOKENS)
        ids = rope.tokenize(loaded.tokenizer, long_text(), n_tokens)
        trained = rope.trained_label(config, apply, lang)
        progress(0.1, desc=f"base {trained}")
        trained_text = rope.greedy_continuation(loaded.model, loaded.tokenizer, ids,
                                                rope.trained_options(config, apply), n_new)
        progress(0.55, desc=f"base {rope.base_label(base)}")
        base_text = rope.greedy_continuation(loaded.model, loaded.tokenizer, ids, options, n_new)
        clean = lambda s: s.replace("|", "\\|").replace("\n", " ⏎ ").strip() or "∅"  # noqa: E731
        tail = loaded.tokenizer.decode(ids[-40:])
        return t.text("rope.cont.result", lang, tail=clean(tail), trained=trained,
                      trained_text=clean(trained_text), base=rope.base_label(base),
                      base_text=clean(base_text))

    cont_run.click(continuation, [ctx.model, ctx.lang, cont_base, apply_to, sweep_tokens, cont_new],
                   [cont_text], api_name="rope_continue", **ctx.model_event)

    # ------------------------------------------------------------------ 6. optional: extension recipes
    with gr.Accordion(t("rope.scale.title"), open=False, elem_id="rope-scale-accordion"):
        gr.Markdown(t("rope.scale.heading"), latex_delimiters=LATEX)
        with gr.Row():
            scale_base = gr.Number(100000, label=t("rope.scale.base"), elem_id="rope-scale-base")
            scale_factor = gr.Slider(1, 32, value=4, step=0.5, label=t("rope.scale.factor"),
                                     elem_id="rope-scale-factor")
            scale_context = gr.Number(8192, label=t("rope.scale.context"), precision=0,
                                      elem_id="rope-scale-context")
            scale_run = gr.Button(t("rope.scale.run"), elem_id="rope-scale-run")
        scale_plot = gr.Plot(elem_id="rope-scale-plot", show_label=False)
        scale_state = gr.State(None)

    @_error
    def scaling(lang, head_dim, base, factor, original_context):
        """θ_i under linear interpolation, NTK-aware scaling and YaRN (frequency curves only)."""
        table = rope.scaling_table(head_dim, base, factor, original_context)
        view = {"table": table, "context": int(original_context), "factor": float(factor)}
        return scaling_figure_of(view, normalize_language(lang)), view

    scale_run.click(scaling, [ctx.lang, freq_dim, scale_base, scale_factor, scale_context],
                    [scale_plot, scale_state], api_name="rope_scaling")

    # ------------------------------------------------------------------ follow the language switch
    def redraw(lang, capture, pair, position, dist_view, sweep_view, scale_view):
        figures = redraw_figures(lang, capture, pair, position, dist_view, sweep_view, scale_view)
        return [gr.skip() if fig is None else fig for fig in figures]

    ctx.lang.change(redraw, [ctx.lang, capture_state, pair_index, pair_position, dist_state, sweep_state,
                             scale_state],
                    [qk_both, qk_one, qk_real, pair_plot, dist_plot, sweep_plot, scale_plot],
                    api_visibility="private")

    # ------------------------------------------------------------------ follow the model picker
    def limits(model_name, progress=gr.Progress()):
        loaded = ctx.load(model_name, progress)
        config = loaded.config
        half = config.head_dim // 2
        return (gr.update(maximum=config.n_layers - 1, value=min(3, config.n_layers - 1)),
                gr.update(maximum=config.n_heads - 1, value=0),
                gr.update(maximum=half - 1),
                config.head_dim, float(config.rope_theta))

    limit_outputs = [qk_layer, qk_head, pair_index, freq_dim, scale_base]
    ctx.model.change(limits, [ctx.model], limit_outputs, api_visibility="private")
    ctx.demo.load(limits, [ctx.model], limit_outputs, api_visibility="private")
