"""The real model's q and k of one layer, before and after RoPE, for one text: what the Toeplitz
and rotating-pair sections look at. The forward stops after the captured layer
(stop_at_layer), so layer 3 of 30 costs 4 layers."""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Optional, Sequence

import torch

from explorer import prompts
from explorer.inputs import check_text, whole_number
from explorer.locales import Term
from explorer.texts import long_text
from models.attention import MaskSpec
from models.forward import Recorder
from models.layers import apply_rope, rope_cos_sin, rope_inv_freq

MIN_CAPTURE_TOKENS = 16      # the tab's slider: 16 .. 512 tokens
MAX_CAPTURE_TOKENS = 512


def shown(token: str) -> str:
    """A token string for hover text and summaries: quoted, newlines visible."""
    return repr(token)


@dataclass(frozen=True)
class QKCapture:
    """q and k of one layer of the real model for one text, before and after RoPE."""
    tokens: tuple[str, ...]      # token strings, in order
    layer: int
    layer_kind: str              # "full_attention" | "sliding_attention"
    theta_base: float            # the RoPE base this layer uses
    mask: MaskSpec               # this layer's mask as the model applies it (causal, window)
    n_heads: int
    n_kv_heads: int
    attn_scale: float
    q_pre: torch.Tensor          # (H, T, D) fp32, before RoPE (after Gemma's q-norm)
    k_pre: torch.Tensor          # (Hkv, T, D)
    q: torch.Tensor              # (H, T, D) after RoPE, as the model used them
    k: torch.Tensor              # (Hkv, T, D)
    seconds: float = 0.0
    dtype: str = "float32"       # the model's compute dtype (q, k are kept as fp32 copies)

    @property
    def window(self) -> Optional[int]:
        return self.mask.window

    @property
    def head_dim(self) -> int:
        return self.q_pre.shape[-1]

    def kv_head(self, head: int) -> int:
        return head // (self.n_heads // self.n_kv_heads)  # GQA: consecutive q heads share one

    def inv_freq(self) -> torch.Tensor:
        return rope_inv_freq(self.head_dim, self.theta_base)

    def check_head(self, head) -> int:
        return whole_number(head, Term("rope.name.head"), 0, self.n_heads - 1)


def default_text() -> str:
    """The text captured unless a visitor types another (the tab's default, the claims board's
    text): a stretch of prose from the long text (its first lines are reST headings)."""
    text_all = long_text()
    start = max(text_all.find("A Python program is constructed"), 0)
    return text_all[start:start + 1400]


def capped_ids(tokenizer, text: str, max_tokens: int) -> list[int]:
    """The first `max_tokens` ids of a text: only the characters those tokens can come from are
    tokenized (prompts.CHARS_PER_TOKEN_BOUND per token)."""
    return prompts.encode(tokenizer, text[:max_tokens * prompts.CHARS_PER_TOKEN_BOUND], max_tokens,
                          truncate=True)


def token_ids(tokenizer, text, max_tokens: int) -> list[int]:
    """The first `max_tokens` ids of a visitor's text ("the first tokens are used"): the text is
    checked against what the largest capture could use before it is cut and tokenized."""
    check_text(text, Term("inputs.name.text"), max_chars=MAX_CAPTURE_TOKENS * prompts.CHARS_PER_TOKEN_BOUND)
    return capped_ids(tokenizer, text, max_tokens)


def token_strings(tokenizer, ids: Sequence[int]) -> tuple[str, ...]:
    return tuple(tokenizer.decode([i]) for i in ids)


@torch.inference_mode()
def capture_qk(model, tokenizer, text, layer, max_tokens=256) -> QKCapture:
    """Run the real model on `text` (its first max_tokens tokens) up to `layer` and keep its q
    and k before and after RoPE."""
    config = model.config
    layer = whole_number(layer, Term("rope.name.layer"), 0, config.n_layers - 1)
    max_tokens = whole_number(max_tokens, Term("rope.name.tokens"), MIN_CAPTURE_TOKENS, MAX_CAPTURE_TOKENS)
    ids = token_ids(tokenizer, text, max_tokens)
    rec = Recorder(["q_pre_rope", "k_pre_rope", "q", "k"], layers=[layer])
    start = time.perf_counter()
    model(torch.tensor([ids], device=model.embed.weight.device), recorder=rec, stop_at_layer=layer + 1)
    seconds = time.perf_counter() - start
    get = lambda point: rec.get(point, layer)[0].float()  # noqa: E731  (B=1)
    dtype = str(rec.get("q", layer).dtype).removeprefix("torch.")
    return QKCapture(
        tokens=token_strings(tokenizer, ids), layer=layer, layer_kind=config.layer_types[layer],
        theta_base=float(config.layer_rope_theta(layer)), mask=model.layer_masks()[layer],
        n_heads=config.n_heads, n_kv_heads=config.n_kv_heads, attn_scale=float(config.attn_scale),
        q_pre=get("q_pre_rope"), k_pre=get("k_pre_rope"), q=get("q"), k=get("k"), seconds=seconds,
        dtype=dtype)


def rope_reproduction_error(capture: QKCapture) -> float:
    """max |apply_rope(q_pre at its own position) − q the model used|, over heads and tokens
    (k too): the rotation drawn here is the one the model applied."""
    t = capture.q_pre.shape[1]
    cos, sin = rope_cos_sin(torch.arange(t), capture.inv_freq(), torch.float32)
    q_err = (apply_rope(capture.q_pre, cos, sin) - capture.q).abs().max()
    k_err = (apply_rope(capture.k_pre, cos, sin) - capture.k).abs().max()
    return float(max(q_err, k_err))


def reproduction_scale(capture: QKCapture) -> float:
    """The largest |entry| of the model's q and k: what the reproduction error is relative to."""
    return float(max(capture.q.abs().max(), capture.k.abs().max()))


# Our fp32 recomputation of a tensor the model computed in `dtype` agrees to a few units of that
# dtype's rounding, relative to the tensor's largest entry (the model rounds q_pre, cos, sin and
# the products to its dtype; in fp32 the same code gives the same bits).
ROUNDING_UNITS = 8


def rounding_tolerance(dtype: str) -> float:
    """Relative tolerance for "our recomputation equals the model's tensor" in `dtype`."""
    return ROUNDING_UNITS * float(torch.finfo(getattr(torch, dtype)).eps)


def real_scores(capture: QKCapture, head) -> torch.Tensor:
    """The layer's actual pre-softmax scores for the real sequence: q_m · k_n × scale with the
    model's rotations, NaN where the layer's own mask (models.attention.MaskSpec: causal, and
    the sliding window) hides the key. (T, T)."""
    head = capture.check_head(head)
    q, k = capture.q[head], capture.k[capture.kv_head(head)]            # (T, D), (T, D)
    scores = (q @ k.T) * capture.attn_scale                             # (T, T)
    positions = torch.arange(scores.shape[0])
    return scores.masked_fill(~capture.mask.visible(positions, positions), float("nan"))
