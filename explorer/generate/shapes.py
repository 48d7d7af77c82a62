"""The calculator of published shapes (C3, C5, C6, C9): the KV cache of well-known models at a
context length, from the numbers in their released configs (explorer/published.py), and the
MHA / GQA / MQA variants of one shape. The loaded model joins the table as a row built from its
ModelConfig.

Every byte comes from the engine's formulas: ModelConfig's (2·H_kv·d_head elements per token and
layer, a windowed layer holding min(t, window) tokens) or, for MLA, MLAConfig's latent."""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Optional, Union

import pandas as pd

from explorer.inputs import whole_number
from explorer.locales import Term, text
from explorer.published import cache_config
from models.config import FULL, SLIDING, ModelConfig
from models.mla import MLAConfig

MAX_CALC_TOKENS = 10_000_000
MIB, GIB = 2**20, 2**30


@dataclass(frozen=True)
class CacheShape:
    """One row of the calculator: a model's attention shape and what its cache holds."""
    name: str
    config: Union[ModelConfig, MLAConfig]   # MLAConfig: the cache holds a latent, not K and V
    source: str = ""                   # the release the numbers come from ("": the loaded model)

    @property
    def latent(self) -> bool:
        return isinstance(self.config, MLAConfig)

    @property
    def n_layers(self) -> int:
        return self.config.n_layers

    @property
    def n_heads(self) -> int:
        return self.config.n_heads

    @property
    def n_kv_heads(self) -> float:
        """KV heads; an MLA row carries the GQA heads of the same size (MLAConfig.gqa_heads)."""
        return self.config.gqa_heads if self.latent else self.config.n_kv_heads

    @property
    def head_dim(self) -> int:
        return self.config.v_head_dim if self.latent else self.config.head_dim

    @property
    def window(self) -> Optional[int]:
        """The sliding window of the local layers (None: every layer keeps every token)."""
        if self.latent or SLIDING not in self.config.layer_types:
            return None
        return self.config.sliding_window

    @property
    def n_global(self) -> Optional[int]:
        """Layers with a full cache when some are local."""
        return self.config.layer_types.count(FULL) if self.window is not None else None

    def elements_per_token_layer(self) -> int:
        """Cached elements per token per layer: 2·H_kv·d_head, or the MLA latent."""
        return self.config.latent_width if self.latent else self.config.kv_elements_per_token_layer()

    def attention(self) -> str:
        if self.latent:
            return "MLA"
        if self.n_kv_heads == self.n_heads:
            return "MHA"
        return "MQA" if self.n_kv_heads == 1 else "GQA"

    def layers_capped(self) -> int:
        if self.window is None:
            return 0
        return self.n_layers - self.n_global

    def bytes_per_token(self, element_bytes: int) -> int:
        """While t ≤ window every layer grows by this much per token."""
        if self.latent:
            return self.config.latent_bytes_per_token(element_bytes)
        return self.config.kv_bytes_per_token(element_bytes)

    def bytes_at(self, tokens: int, element_bytes: int) -> int:
        """Whole cache at `tokens`: windowed layers hold min(t, window)."""
        if self.latent:
            return self.config.latent_bytes_per_token(element_bytes) * tokens
        return self.config.kv_bytes(tokens, element_bytes)


# The calculator's rows: a published model and the release its source column names, with the
# layout that sets its cache (`cited`).
ROWS = (("Llama-2-7B", "meta-llama/Llama-2-7b-hf"), ("Llama 3 8B", "meta-llama/Meta-Llama-3-8B"),
        ("Mistral 7B", "mistralai/Mistral-7B-v0.1"), ("Gemma 3 27B", "google/gemma-3-27b"),
        ("Gemma 3 270M", "google/gemma-3-270m"), ("DeepSeek-V3", "deepseek-ai/DeepSeek-V3"))


def cited(release: str, config: Union[ModelConfig, MLAConfig]) -> str:
    """The release, and in brackets what sets the size of its cache, from its config."""
    if isinstance(config, MLAConfig):
        return f"{release} (MLA: latent {config.kv_lora_rank} + RoPE key {config.qk_rope_head_dim})"
    local = config.layer_types.count(SLIDING)
    if not local:
        return release
    if local == config.n_layers:
        return f"{release} (sliding_window {config.sliding_window})"
    return f"{release} ({local} local : {config.n_layers - local} global, window {config.sliding_window})"


def published_row(name: str, release: str) -> CacheShape:
    config = cache_config(name)
    return CacheShape(name, config, source=cited(release, config))


def published_shapes() -> tuple[CacheShape, ...]:
    """The calculator's published rows, each read from explorer.published when called."""
    return tuple(published_row(name, release) for name, release in ROWS)


SHAPES = published_shapes()
VARIANTS_BASE = SHAPES[1]      # Llama 3 8B: 32 query heads, 8 KV heads


def shape_from_config(name: str, config: ModelConfig) -> CacheShape:
    """The loaded model as a calculator row (its real layer types and window)."""
    return CacheShape(name, config)


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
        config = dataclasses.replace(VARIANTS_BASE.config, n_kv_heads=kv)
        variants.append((kind, kv, config.kv_bytes_per_token(element_bytes),
                         config.kv_bytes(tokens, element_bytes)))
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
