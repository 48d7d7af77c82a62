"""Lesson: GQA, MQA and MLA (the notes' second section; claims C5, C3, C6).

Every number the steps quote is read from the visitor's own runs: the head groups of the loaded
model (explorer/attention/groups.py, judged by cache_holds_kv_heads, C5's criterion on the
board), the calculator of published shapes (explorer/generate/shapes.py: its Llama-2-7B row is
C3's published figure, its Llama 3 8B variants C5's MHA / GQA / MQA), and MLA's latent cache
(explorer/architecture/mla.py, judged by cache_claim_holds, C6's criterion)."""
from __future__ import annotations

from typing import Optional

from explorer.architecture import mla
from explorer.attention import groups
from explorer.generate import shapes
from explorer.generate.evidence import FP16, LLAMA2, LLAMA2_TOKENS
from explorer.lessons import Lesson, Predict, Step

SMOLLM2 = "smollm2-135m-instruct"
DEEPSEEK = "DeepSeek-V3"
CALC_TOKENS, CALC_BYTES = 32768, 2      # C3's published figures are at 32K tokens in fp16
KIB = 1024


def mark(ok: bool) -> str:
    return "✓" if ok else "✗"


def read_groups(result: groups.GroupsResult) -> Optional[dict]:
    """The recorded heads and the engine's cache bytes, judged by C5's criterion; `answer`: how
    many times smaller the cache is than with one KV head per query head (MHA): the formula's
    MHA bytes over the measured ones, so computed, not measured (the predict step says so)."""
    if not isinstance(result, groups.GroupsResult):
        return None
    measured = result.measured_per_token
    return {"title": result.title, "q_heads": result.shapes["q"][1], "k_heads": result.shapes["k"][1],
            "n_kv": result.n_kv_heads, "n_rep": result.n_rep, "layers": result.n_layers,
            "head_dim": result.head_dim, "elem": result.element_bytes, "measured": measured,
            "gqa": result.variant_bytes("gqa"), "mha": result.variant_bytes("mha"),
            "mqa": result.variant_bytes("mqa"), "answer": result.variant_bytes("mha") / measured,
            "verdict": mark(groups.cache_holds_kv_heads(result))}


def _row(result: shapes.ShapesResult, name: str) -> tuple:
    """(shape, bytes per token, bytes at the result's tokens) of the calculator's row `name`."""
    index = next(i for i, shape in enumerate(result.shapes) if shape.name == name and shape.source)
    return result.shapes[index], result.per_token[index], result.totals[index]


def read_calculator(result: shapes.ShapesResult) -> Optional[dict]:
    """The MHA / GQA / MQA variants of Llama 3 8B's shape (bytes proportional to KV heads), the
    Llama-2-7B row against C3's published 0.5 MiB per token and 16 GiB at 32K in fp16, and the
    DeepSeek-V3 row (MLA) against the per-head K and V its latent expands into."""
    if not isinstance(result, shapes.ShapesResult):
        return None
    variants = {kind: (kv, per_token, total) for kind, kv, per_token, total in result.variants}
    proportional = len({per_token / kv for kv, per_token, _ in variants.values()}) == 1
    llama2, llama2_token, llama2_total = _row(result, LLAMA2)
    deepseek, mla_token, _ = _row(result, DEEPSEEK)
    expanded = deepseek.config.expanded_kv_bytes_per_token(result.element_bytes)
    published = (result.tokens == LLAMA2_TOKENS and result.element_bytes == FP16
                 and llama2_token / shapes.MIB == 0.5
                 and llama2_total / shapes.GIB == 16.0)
    return {"tokens": result.tokens, "bytes": result.element_bytes,
            "q_heads": shapes.VARIANTS_BASE.n_heads, "base": shapes.VARIANTS_BASE.name,
            "mha": variants["MHA"][1] / shapes.MIB, "gqa": variants["GQA"][1] / shapes.MIB,
            "mqa": variants["MQA"][1] / shapes.MIB, "gqa_kv": variants["GQA"][0],
            "gqa_total": shapes.format_bytes(variants["GQA"][2]),
            "mha_total": shapes.format_bytes(variants["MHA"][2]),
            "proportional": mark(proportional),
            "llama2_mib": llama2_token / shapes.MIB, "llama2_gib": llama2_total / shapes.GIB,
            "published": mark(published),
            "mla_kib": mla_token / KIB, "expanded_kib": expanded / KIB,
            "mla_ratio": expanded / mla_token}


def read_mla(result: mla.CacheComparison) -> Optional[dict]:
    """DeepSeek-V3's latent against d_head and GQA heads, and the tiny module's live check,
    judged by C6's criterion (cache_claim_holds)."""
    if not isinstance(result, mla.CacheComparison):
        return None
    mha = next(layout for layout in result.layouts if layout.key == "mha")
    return {"r": result.kv_lora_rank, "rope": result.qk_rope_head_dim, "latent": result.latent,
            "d_head": result.d_head, "in_heads": result.latent_in_heads,
            "gqa_heads": result.equal_gqa_heads, "heads": result.n_heads,
            "kib": result.latent_bytes_per_token / KIB,
            "mha_ratio": result.bytes_per_token(mha) / result.latent_bytes_per_token,
            "tokens": result.tiny_tokens, "cache_bytes": result.tiny_cache_bytes,
            "formula_bytes": result.tiny_formula_bytes, "expanded_bytes": result.tiny_expanded_bytes,
            "error": mla.latent_error(result), "verdict": mark(mla.cache_claim_holds(result))}


LESSON = Lesson(
    key="gqa-mla", title="lesson.gqa.title", summary="lesson.gqa.summary", order=20,
    steps=(
        Step(view="attention.groups", look="lesson.gqa.s1.look", said="lesson.gqa.s1.said",
             read=read_groups, model=SMOLLM2),
        Step(view="attention.groups", look="lesson.gqa.s2.look", said="lesson.gqa.s2.said",
             read=read_groups, model=SMOLLM2,
             predict=Predict(question="lesson.gqa.s2.ask", answer="answer", unit="×",
                             why="lesson.gqa.s2.why", low=0, high=1000, computed=True)),
        Step(view="generate.calculator", look="lesson.gqa.s3.look", said="lesson.gqa.s3.said",
             read=read_calculator, settings={"tokens": CALC_TOKENS, "bytes": CALC_BYTES}),
        Step(view="arch.mla", look="lesson.gqa.s4.look", said="lesson.gqa.s4.said", read=read_mla),
    ),
)
