"""The calculator of published shapes (C3, C5, C6, C9): the KV cache of well-known models at a
context length, from the numbers in their released configs, and the MHA / GQA / MQA variants of
one shape. The loaded model joins the table as a row built from its ModelConfig.

A published shape is not a ModelConfig (MLA caches a latent, not K and V per head), so the
per-shape formula lives in CacheShape: 2·H_kv·d_head elements per token and layer (the formula
ModelConfig.kv_bytes_per_token states for the loaded model), or the MLA latent."""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Optional

import pandas as pd

from explorer.inputs import whole_number
from explorer.locales import Term, text

MAX_CALC_TOKENS = 10_000_000
MIB, GIB = 2**20, 2**30


@dataclass(frozen=True)
class CacheShape:
    name: str
    n_layers: int
    n_heads: int
    n_kv_heads: float          # per-head K/V heads; MLA rows carry the GQA-equivalent count
    head_dim: int
    window: Optional[int] = None       # sliding window of the local layers
    n_global: Optional[int] = None     # layers with a full cache when some are local
    latent: Optional[int] = None       # MLA: cached elements per token per layer (latent + rope key)
    source: str = ""                   # the release the numbers come from ("": the loaded model)

    def elements_per_token_layer(self) -> float:
        """Cached elements per token per layer: 2·H_kv·d_head, or the MLA latent."""
        return float(self.latent) if self.latent is not None else 2 * self.n_kv_heads * self.head_dim

    def attention(self) -> str:
        if self.latent is not None:
            return "MLA"
        if self.n_kv_heads == self.n_heads:
            return "MHA"
        return "MQA" if self.n_kv_heads == 1 else "GQA"

    def layers_capped(self) -> int:
        if self.window is None:
            return 0
        return self.n_layers - (self.n_global or 0)

    def bytes_per_token(self, element_bytes: int) -> float:
        """While t ≤ window every layer grows by this much per token."""
        return self.n_layers * self.elements_per_token_layer() * element_bytes

    def bytes_at(self, tokens: int, element_bytes: int) -> float:
        """Whole cache at `tokens`: windowed layers hold min(t, window)."""
        per_layer = self.elements_per_token_layer() * element_bytes
        capped = self.layers_capped()
        held = min(tokens, self.window) if self.window is not None else tokens
        return per_layer * (capped * held + (self.n_layers - capped) * tokens)


# Published configurations (config.json of each release; DeepSeek-V3: kv_lora_rank 512 +
# qk_rope_head_dim 64, d_head 128, so 576 = 4.5·d_head elements, ≈ GQA with 2.25 KV heads).
SHAPES = (
    CacheShape("Llama-2-7B", 32, 32, 32, 128, source="meta-llama/Llama-2-7b-hf"),
    CacheShape("Llama 3 8B", 32, 32, 8, 128, source="meta-llama/Meta-Llama-3-8B"),
    CacheShape("Mistral 7B", 32, 32, 8, 128, window=4096, n_global=0,
               source="mistralai/Mistral-7B-v0.1 (sliding_window 4096)"),
    CacheShape("Gemma 3 27B", 62, 32, 16, 128, window=1024, n_global=10,
               source="google/gemma-3-27b (52 local : 10 global, window 1024)"),
    CacheShape("Gemma 3 270M", 18, 4, 1, 256, window=512, n_global=3,
               source="google/gemma-3-270m (15 local : 3 global, window 512)"),
    CacheShape("DeepSeek-V3", 61, 128, 2.25, 128, latent=512 + 64,
               source="deepseek-ai/DeepSeek-V3 (MLA: latent 512 + RoPE key 64)"),
)
VARIANTS_BASE = SHAPES[1]      # Llama 3 8B: 32 query heads, 8 KV heads


def shape_from_config(name: str, config) -> CacheShape:
    """The loaded model as a calculator row (its real layer types and window)."""
    from models.config import FULL

    n_global = sum(1 for kind in config.layer_types if kind == FULL)
    window = config.sliding_window if n_global < config.n_layers else None
    return CacheShape(name, config.n_layers, config.n_heads, config.n_kv_heads, config.head_dim,
                      window=window, n_global=n_global if window else None)


def format_bytes(value: float) -> str:
    """Binary units: KiB, MiB, GiB (the published '0.5 MB/token, 16 GB' figures are these)."""
    for unit, size in (("GiB", GIB), ("MiB", MIB), ("KiB", 1024)):
        if value >= size:
            return f"{value / size:,.2f} {unit}"
    return f"{value:,.0f} B"


@dataclass(frozen=True)
class ShapesResult:
    tokens: int
    element_bytes: int
    shapes: tuple              # CacheShape rows: the published ones, then the loaded model's
    per_token: tuple           # bytes per token of each row (while t ≤ window)
    totals: tuple              # bytes of each row's whole cache at `tokens`
    variants: tuple            # (kind, KV heads, bytes per token, bytes at `tokens`): MHA, GQA, MQA


def check(tokens, element_bytes) -> tuple[int, int]:
    return (whole_number(tokens, Term("generate.name.calc_tokens"), 1, MAX_CALC_TOKENS),
            whole_number(element_bytes, Term("generate.name.calc_bytes"), 1, 8))


def run(tokens, element_bytes, loaded: Optional[CacheShape] = None) -> ShapesResult:
    """Every published shape (and the loaded model) at `tokens` tokens of `element_bytes`."""
    tokens, element_bytes = check(tokens, element_bytes)
    shapes = SHAPES + ((loaded,) if loaded is not None else ())
    variants = []
    for kind, kv in (("MHA", VARIANTS_BASE.n_heads), ("GQA", VARIANTS_BASE.n_kv_heads), ("MQA", 1)):
        shape = dataclasses.replace(VARIANTS_BASE, n_kv_heads=kv, latent=None)
        variants.append((kind, kv, shape.bytes_per_token(element_bytes),
                         shape.bytes_at(tokens, element_bytes)))
    return ShapesResult(tokens, element_bytes, shapes,
                        tuple(s.bytes_per_token(element_bytes) for s in shapes),
                        tuple(s.bytes_at(tokens, element_bytes) for s in shapes), tuple(variants))


def tables(result: ShapesResult, lang: str = "en") -> tuple[pd.DataFrame, pd.DataFrame]:
    """(the shapes table, the MHA/GQA/MQA table), headers and cells in `lang`."""
    def col(slug: str) -> str:
        return text(f"generate.calc.col.{slug}", lang, n=f"{result.tokens:,}")

    rows = []
    for shape, per_token, total in zip(result.shapes, result.per_token, result.totals):
        layers = str(shape.n_layers) if shape.window is None else text(
            "generate.calc.layers_capped", lang, n=shape.n_layers, capped=shape.layers_capped(),
            w=shape.window)
        loaded = not shape.source
        rows.append({
            col("model"): text("generate.calc.loaded", lang, title=shape.name) if loaded else shape.name,
            col("attention"): shape.attention(),
            col("layers"): layers,
            col("heads"): f"{shape.n_heads} : {shape.n_kv_heads:g}",
            col("d_head"): shape.head_dim,
            col("elements"): f"{shape.elements_per_token_layer():g}",
            col("per_token"): f"{per_token / MIB:.3f} MiB",
            col("at"): format_bytes(total),
            col("source"): text("generate.calc.loaded_source", lang) if loaded else shape.source,
        })
    variants = [{col("variant"): kind, col("q_heads"): VARIANTS_BASE.n_heads, col("kv_heads"): f"{kv:g}",
                 col("per_token"): f"{per_token / MIB:.3f} MiB", col("at"): format_bytes(total)}
                for kind, kv, per_token, total in result.variants]
    return pd.DataFrame(rows), pd.DataFrame(variants)
