"""Lesson: the modern block (the notes' last section; claims C18, C19).

Every number is read from the visitor's own run of an Architecture section through the criteria
the claims board uses (explorer/architecture/evidence.py): blocks.modern_facts, facts_held and
is_llama_style (C18) on each block read from its tensors, and norm_placement.placement_separates
(C19) on the gradients at initialisation."""
from __future__ import annotations

from typing import Optional

from explorer.architecture import blocks, norm_placement
from explorer.architecture.evidence import NORM_DEPTH
from explorer.lessons import Lesson, Step

MARK = {True: "✓", False: "✗"}
DEPTHS = "6, 24, 48"     # the section's default; C19 is judged at NORM_DEPTH (24)


def _held(block) -> int:
    return sum(blocks.modern_facts(block).values())


def read_blocks(result: blocks.Blocks) -> Optional[dict]:
    """The two references (the original Transformer, GPT-2) and every checkpoint read from its
    tensors: how many of C18's facts hold in each."""
    if not isinstance(result, blocks.Blocks) or len(result.blocks) < 3:
        return None
    original, gpt2 = result.blocks[0], result.blocks[1]
    read = [b for b in result.blocks if b.origin == "weights"]
    if not read:
        return None
    n = len(blocks.MODERN_FACTS)
    models = "; ".join(
        f"{b.title}: {_held(b)}/{n} {MARK[blocks.is_llama_style(b)]} "
        f"(q {b.n_heads} / kv {b.n_kv_heads}, {len(b.bias_tensors)} bias, {b.activation})"
        for b in read)
    return {"n": n, "original": original.title, "orig": _held(original), "gpt2_title": gpt2.title,
            "gpt2": _held(gpt2), "models": models,
            "verdict": MARK[all(blocks.is_llama_style(b) for b in read)]}


def read_norm(result: norm_placement.InitGradients) -> Optional[dict]:
    """Post- and pre-norm's last-over-first gradient ratio at each depth; C19's verdict at its
    depth (or the deepest run, when the run left it out)."""
    if not isinstance(result, norm_placement.InitGradients) or not result.depths:
        return None
    depth = NORM_DEPTH if NORM_DEPTH in result.depths else result.depths[-1]
    rows = "; ".join(f"L = {d}: post {result.ratio('post', d):.2f}×, pre {result.ratio('pre', d):.2f}× "
                     f"{MARK[norm_placement.placement_separates(result, d)]}" for d in result.depths)
    return {"rows": rows, "depth": depth, "post": result.ratio("post", depth),
            "pre": result.ratio("pre", depth), "post_min": norm_placement.POST_GROWTH_MIN,
            "pre_max": norm_placement.PRE_GROWTH_MAX,
            "verdict": MARK[norm_placement.placement_separates(result, depth)]}


LESSON = Lesson(
    key="modern-block", title="lesson.block.title", summary="lesson.block.summary", order=80,
    steps=(
        Step(view="arch.blocks", look="lesson.block.s1.look", said="lesson.block.s1.said",
             read=read_blocks),
        Step(view="arch.norm", look="lesson.block.s2.look", said="lesson.block.s2.said",
             read=read_norm, settings={"depths": DEPTHS}),
    ),
)
