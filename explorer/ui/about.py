"""About: what the app is, which tab demonstrates each claim of the syllabus, and the model card
of the selected model (numbers read from the loaded config and weights)."""
from __future__ import annotations

import re
from collections import Counter
from pathlib import Path
from typing import Any

import gradio as gr

from explorer.i18n import normalize_language
from explorer.runtime import LoadedModel
from explorer.ui import TabContext, tab_id

CLAIMS_FILE = Path(__file__).resolve().parents[2] / "docs" / "CLAIMS.md"

# Where each claim is (or will be) shown: tab module ids, or topics of tabs not written yet.
# A claim may need several places (C6: the calculator row exists, the MLA module is planned).
CLAIM_PLACES = {
    "C1": ("generate",), "C2": ("generate",), "C3": ("generate",), "C4": ("generate",),
    "C5": ("generate", "attention"), "C6": ("generate", "mla"), "C7": ("mla",),
    "C8": ("attention",), "C9": ("generate", "attention"), "C10": ("attention",),
    "C11": ("rope",), "C12": ("rope",), "C13": ("rope",), "C14": ("moe",), "C15": ("moe",),
    "C16": ("flash",), "C17": ("flash",), "C18": ("architecture",), "C19": ("architecture",),
}
# Names of planned tabs (a tab that exists is named by its own title).
PLACE_KEYS = {
    "generate": "about.place.generate", "attention": "about.place.attention",
    "rope": "about.place.rope", "mla": "about.place.mla", "moe": "about.place.moe",
    "flash": "about.place.flash", "architecture": "about.place.architecture",
}

TITLE = "about.tab"
STRINGS = {
    "about.tab": {"en": "About", "zh": "关于"},
    "about.intro": {
        "en": "## What this is\n"
              "Transformer Explorer loads a small **real** checkpoint and runs it with "
              "**our own PyTorch modules** (not the transformers library's modelling code), "
              "on a GPU when there is one and on the CPU otherwise. Each tab takes a statement "
              "from the course notes and shows it happening on the loaded model, with the "
              "measured number next to it. Nothing is a canned animation: every picture comes "
              "from the computation it describes.",
        "zh": "## 这是什么\n"
              "Transformer 探索器加载一个小型的**真实**检查点，并用**我们自己的 PyTorch 模块**"
              "（而不是 transformers 库的建模代码）运行它；有 GPU 时用 GPU，否则用 CPU。"
              "每个标签页取课程笔记中的一个论断，在已加载的模型上把它演示出来，并在旁边给出实测数值。"
              "没有预先录好的动画：每张图都来自它所描述的计算本身。",
    },
    "about.claims_heading": {"en": "## The claims and where they are shown",
                             "zh": "## 论断及其演示位置"},
    "about.claims_full": {"en": "Full text of the claims (English)",
                          "zh": "论断全文（英文）"},
    "about.card_heading": {"en": "## Model card", "zh": "## 模型卡"},
    "about.raw": {"en": "Model info as data (also the API endpoint /model_info)",
                  "zh": "模型信息数据（也是 API 端点 /model_info）"},
    "about.licence_full": {"en": "Licence and terms, full text", "zh": "许可与条款全文"},
    "about.col.id": {"en": "id", "zh": "编号"},
    "about.col.claim": {"en": "claim", "zh": "论断"},
    "about.col.where": {"en": "shown in", "zh": "演示位置"},
    "about.col.quantity": {"en": "quantity", "zh": "项目"},
    "about.col.value": {"en": "value in the loaded model", "zh": "已加载模型中的值"},
    "about.planned": {"en": "{place} (planned)", "zh": "{place}（计划中）"},
    "about.tab_named": {"en": "{title} tab", "zh": "“{title}”标签页"},
    "about.list_separator": {"en": "; ", "zh": "；"},
    "about.place.generate": {"en": "Generate tab", "zh": "“生成”标签页"},
    "about.place.attention": {"en": "Attention tab", "zh": "“注意力”标签页"},
    "about.place.rope": {"en": "RoPE tab", "zh": "“RoPE”标签页"},
    "about.place.mla": {"en": "MLA tab", "zh": "“MLA”标签页"},
    "about.place.moe": {"en": "MoE tab", "zh": "“MoE”标签页"},
    "about.place.flash": {"en": "FlashAttention tab", "zh": "“FlashAttention”标签页"},
    "about.place.architecture": {"en": "Architecture tab", "zh": "“架构”标签页"},
    # One-line summaries; the full English statements are in docs/CLAIMS.md.
    "about.c.C1": {"en": "A KV cache turns per-step attention from O(t²) into O(t).",
                   "zh": "KV 缓存把每一步的注意力开销从 O(t²) 降到 O(t)。"},
    "about.c.C2": {"en": "Cache memory grows linearly; small-batch decode is memory-bound.",
                   "zh": "缓存内存随 token 数线性增长；小批量解码受内存带宽限制。"},
    "about.c.C3": {"en": "Cache bytes = 2 × layers × KV heads × head dim × tokens × bytes.",
                   "zh": "缓存字节数 = 2 × 层数 × KV 头数 × 头维度 × token 数 × 每元素字节数。"},
    "about.c.C4": {"en": "Cached logits equal a full forward pass without cache.",
                   "zh": "带缓存的 logits 与不带缓存的完整前向计算结果相同。"},
    "about.c.C5": {"en": "Cache size depends only on KV heads: MHA, GQA, MQA.",
                   "zh": "缓存大小只取决于 KV 头数：MHA、GQA、MQA。"},
    "about.c.C6": {"en": "MLA caches one latent per token and up-projects it to K and V.",
                   "zh": "MLA 每个 token 只缓存一个潜向量，再上投影得到 K 和 V。"},
    "about.c.C7": {"en": "RoPE cannot be absorbed into a fixed low-rank projection.",
                   "zh": "RoPE 无法被吸收进一个与位置无关的固定低秩投影。"},
    "about.c.C8": {"en": "Sliding windows reach about L(w−1)+1 tokens after L layers.",
                   "zh": "滑动窗口经过 L 层后的感受野约为 L(w−1)+1 个 token。"},
    "about.c.C9": {"en": "Sliding-window cost is O(n·w); only global layers need a full cache.",
                   "zh": "滑动窗口的计算量为 O(n·w)；只有全局层需要完整长度的缓存。"},
    "about.c.C10": {"en": "Attention sinks: idle heads put their weight on the first tokens.",
                    "zh": "注意力汇：无事可看的头会把权重堆到最前面的 token 上。"},
    "about.c.C11": {"en": "RoPE rotates dimension pairs; the score depends only on m − n.",
                    "zh": "RoPE 按位置旋转各维度对；注意力分数只取决于 m − n。"},
    "about.c.C12": {"en": "Rotate only one side and absolute position remains.",
                    "zh": "只旋转一侧，绝对位置信息就会残留。"},
    "about.c.C13": {"en": "A larger RoPE base slows the rotations; base alone is not long context.",
                    "zh": "更大的 RoPE base 让旋转变慢；仅靠 base 并不能保证长上下文。"},
    "about.c.C14": {"en": "MoE: parameters scale with N experts, compute with the top k.",
                    "zh": "MoE：总参数随专家数 N 增长，每个 token 的计算量随 top-k 增长。"},
    "about.c.C15": {"en": "Routers overload a few experts; aux loss or bias terms rebalance.",
                    "zh": "路由器会偏向少数专家；用辅助损失或偏置项来均衡负载。"},
    "about.c.C16": {"en": "FlashAttention is exact; it saves memory traffic, not arithmetic.",
                    "zh": "FlashAttention 是精确的；它节省的是内存读写，而不是算术量。"},
    "about.c.C17": {"en": "Online softmax: a running max and normalizer, block by block.",
                    "zh": "在线 softmax：逐块维护当前最大值与归一化因子。"},
    "about.c.C18": {"en": "Llama vs the original Transformer: RMSNorm, RoPE, SwiGLU, GQA.",
                    "zh": "Llama 与原始 Transformer 的区别：RMSNorm、RoPE、SwiGLU、GQA。"},
    "about.c.C19": {"en": "Post-norm puts a norm on every gradient path; pre-norm does not.",
                    "zh": "Post-norm 让梯度每层都穿过归一化；pre-norm 保留一条恒等通路。"},
    # Model card rows
    "about.row.family": {"en": "architecture family", "zh": "架构家族"},
    "about.row.layers": {"en": "layers", "zh": "层数"},
    "about.row.layer_types": {"en": "attention per layer", "zh": "各层注意力类型"},
    "about.row.d_model": {"en": "residual width d_model", "zh": "残差流宽度 d_model"},
    "about.row.heads": {"en": "query heads : KV heads", "zh": "查询头 : KV 头"},
    "about.row.head_dim": {"en": "head dimension", "zh": "头维度"},
    "about.row.d_ff": {"en": "MLP hidden width", "zh": "MLP 隐藏层宽度"},
    "about.row.vocab": {"en": "vocabulary", "zh": "词表大小"},
    "about.row.rope": {"en": "RoPE base θ", "zh": "RoPE 基数 θ"},
    "about.row.tied": {"en": "tied input/output embeddings", "zh": "输入/输出嵌入共享"},
    "about.row.params": {"en": "parameters (counted in the loaded modules)",
                         "zh": "参数量（在已加载的模块中统计）"},
    "about.row.cache": {"en": "KV cache per token", "zh": "每个 token 的 KV 缓存"},
    "about.row.runs_on": {"en": "runs on", "zh": "运行设备"},
    "about.row.weights": {"en": "weights", "zh": "权重来源"},
    "about.row.licence": {"en": "licence", "zh": "许可"},
    "about.yes": {"en": "yes", "zh": "是"},
    "about.no": {"en": "no", "zh": "否"},
    "about.full_attention": {"en": "full (causal)", "zh": "全局（因果）"},
    "about.sliding": {"en": "sliding window of {window}", "zh": "窗口为 {window} 的滑动窗口"},
    "about.local_theta": {"en": "{theta} on global layers, {local} on sliding layers",
                          "zh": "全局层 {theta}，滑动窗口层 {local}"},
    "about.cache_formula": {
        "en": "$2 \\times L \\times H_{{kv}} \\times d_{{head}} \\times b$ = "
              "2 × {layers} × {kv_heads} × {head_dim} × {bytes} B = **{total:,} B** "
              "({dtype}); query heads do not appear",
        "zh": "$2 \\times L \\times H_{{kv}} \\times d_{{head}} \\times b$ = "
              "2 × {layers} × {kv_heads} × {head_dim} × {bytes} B = **{total:,} B**"
              "（{dtype}）；查询头数不出现在公式中",
    },
}

LATEX = [{"left": "$$", "right": "$$", "display": True}, {"left": "$", "right": "$", "display": False}]


def claim_ids() -> list[str]:
    """Claim ids in the order of docs/CLAIMS.md (C1 ... C19)."""
    text = CLAIMS_FILE.read_text(encoding="utf-8")
    return re.findall(r"^\|\s*(C\d+)\s*\|", text, flags=re.MULTILINE)


def claims_table(t, lang: str, built_tabs: dict[str, str]) -> str:
    """Markdown table of the claims; `built_tabs` maps the ids of existing tabs to the
    STRINGS key of their title."""
    header = (f"| {t.text('about.col.id', lang)} | {t.text('about.col.claim', lang)} | "
              f"{t.text('about.col.where', lang)} |\n|---|---|---|")
    rows = []
    for cid in claim_ids():
        places = []
        for place in CLAIM_PLACES.get(cid, ()):
            if place in built_tabs:
                places.append(t.text("about.tab_named", lang, title=t.text(built_tabs[place], lang)))
            else:
                places.append(t.text("about.planned", lang, place=t.text(PLACE_KEYS[place], lang)))
        where = t.text("about.list_separator", lang).join(places) or "—"
        rows.append(f"| {cid} | {t.text('about.c.' + cid, lang)} | {where} |")
    return "\n".join([header, *rows])


def model_info(loaded: LoadedModel) -> dict[str, Any]:
    """The numbers of the model card, read from the loaded config and modules."""
    config = loaded.config
    spec = loaded.spec
    element_bytes = torch_dtype_bytes(loaded.dtype)
    layer_types = list(getattr(config, "layer_types", []) or [])
    return {
        "name": loaded.name,
        "title": getattr(spec, "title", loaded.name),
        "family": config.family,
        "n_layers": config.n_layers,
        "layer_types": dict(Counter(layer_types)),
        "sliding_window": config.sliding_window,
        "d_model": config.d_model,
        "n_heads": config.n_heads,
        "n_kv_heads": config.n_kv_heads,
        "head_dim": config.head_dim,
        "d_ff": config.d_ff,
        "vocab_size": config.vocab_size,
        "rope_theta": config.rope_theta,
        "rope_local_theta": config.rope_local_theta,
        "tie_embeddings": config.tie_embeddings,
        "hidden_act": config.hidden_act,
        "parameters": sum(p.numel() for p in loaded.model.parameters()),
        "kv_cache_bytes_per_token": 2 * config.n_layers * config.n_kv_heads * config.head_dim * element_bytes,
        "device": str(loaded.device),
        "dtype": str(loaded.dtype).removeprefix("torch."),
        "source_note": getattr(spec, "source_note", ""),
        "licence": getattr(spec, "licence", ""),
        "notice": getattr(spec, "notice", ""),
    }


def torch_dtype_bytes(dtype) -> int:
    import torch

    return torch.empty((), dtype=dtype).element_size()


def _number(value: Any) -> str:
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return f"{value:,}" if isinstance(value, int) else str(value)


def model_card(t, lang: str, info: dict[str, Any], runs_on: str, description: str) -> str:
    yes_no = {True: t.text("about.yes", lang), False: t.text("about.no", lang)}
    kinds = []
    for kind, count in info["layer_types"].items():
        label = (t.text("about.sliding", lang, window=info["sliding_window"])
                 if kind == "sliding_attention" else t.text("about.full_attention", lang))
        kinds.append(f"{count} × {label}")
    rope = _number(info["rope_theta"])
    if info["rope_local_theta"] and info["rope_local_theta"] != info["rope_theta"]:
        rope = t.text("about.local_theta", lang, theta=rope, local=_number(info["rope_local_theta"]))
    element_bytes = info["kv_cache_bytes_per_token"] // (2 * info["n_layers"] * info["n_kv_heads"] * info["head_dim"])
    cache = t.text("about.cache_formula", lang, layers=info["n_layers"], kv_heads=info["n_kv_heads"],
                   head_dim=info["head_dim"], bytes=element_bytes,
                   total=info["kv_cache_bytes_per_token"], dtype=info["dtype"])
    rows = [
        ("about.row.family", f"{info['family']} ({info['hidden_act']})"),
        ("about.row.layers", _number(info["n_layers"])),
        ("about.row.layer_types", ", ".join(kinds)),
        ("about.row.d_model", _number(info["d_model"])),
        ("about.row.heads", f"{info['n_heads']} : {info['n_kv_heads']}"),
        ("about.row.head_dim", _number(info["head_dim"])),
        ("about.row.d_ff", _number(info["d_ff"])),
        ("about.row.vocab", _number(info["vocab_size"])),
        ("about.row.rope", rope),
        ("about.row.tied", yes_no[bool(info["tie_embeddings"])]),
        ("about.row.params", f"{info['parameters']:,} ({info['parameters'] / 1e6:.1f}M)"),
        ("about.row.cache", cache),
        ("about.row.runs_on", runs_on),
        ("about.row.weights", info["source_note"]),
        ("about.row.licence", info["licence"]),
    ]
    table = "\n".join(f"| {t.text(key, lang)} | {value} |" for key, value in rows)
    head = f"| {t.text('about.col.quantity', lang)} | {t.text('about.col.value', lang)} |"
    return f"### {info['title']}\n{description}\n\n{head}\n|---|---|\n{table}"


def build(ctx: TabContext) -> None:
    t = ctx.t
    built_tabs = {tab_id(m): m.TITLE for m in ctx.tabs}
    gr.Markdown(t("about.intro"))
    gr.Markdown(t("about.claims_heading"))
    claims = gr.Markdown(claims_table(t, "en", built_tabs), elem_id="claims-table")
    with gr.Accordion(t("about.claims_full"), open=False):
        gr.Markdown(CLAIMS_FILE.read_text(encoding="utf-8"))
    gr.Markdown(t("about.card_heading"))
    card = gr.Markdown(elem_id="model-card", latex_delimiters=LATEX)
    with gr.Accordion(t("about.raw"), open=False):
        raw = gr.JSON(show_label=False)
    with gr.Accordion(t("about.licence_full"), open=False):
        licence = gr.Markdown()

    def info(model_name: str) -> dict:
        """Config numbers of the named embedded model, read from the loaded model."""
        return model_info(ctx.load(model_name))

    def card_and_licence(model_name, lang, progress=gr.Progress()):
        lang = normalize_language(lang)
        loaded = ctx.load(model_name, progress)
        spec = loaded.spec
        text = model_card(t, lang, model_info(loaded), ctx.runtime.device_label,
                          getattr(spec, "description", ""))
        licence_text = spec.licence_text() if hasattr(spec, "licence_text") else ""
        return text, model_info(loaded), licence_text

    def claims_in(lang):
        return claims_table(t, normalize_language(lang), built_tabs)

    # No forward pass here, so these events stay out of the "model" concurrency group.
    outputs = [card, raw, licence]
    ctx.demo.load(card_and_licence, [ctx.model, ctx.lang], outputs, api_visibility="private")
    ctx.model.change(card_and_licence, [ctx.model, ctx.lang], outputs, api_visibility="private")
    ctx.lang.change(card_and_licence, [ctx.model, ctx.lang], outputs, api_visibility="private")
    ctx.lang.change(claims_in, [ctx.lang], [claims], api_visibility="private")
    # API only: the model card's numbers as data.
    gr.api(info, api_name="model_info")
