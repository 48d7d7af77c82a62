"""Attention masks as predicates over absolute positions, and three interchangeable attention
paths: eager (can return probabilities), SDPA (fast), and tiled online softmax (the
FlashAttention algorithm, readable, able to record its schedule).

Masks are built from *absolute* positions of queries and keys, never from cache slot indices,
so the same predicate serves a full cache, a sliding ring buffer and a sinks+window cache, and
the UI draws exactly the function the model used."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Optional, Sequence

import torch
import torch.nn.functional as F

Predicate = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]

# --- predicates: (q_pos (T,1), kv_pos (1,S)) -> bool (T,S) ------------------------------------


def causal() -> Predicate:
    return lambda q, k: k <= q


def in_window(window: int) -> Predicate:
    """Key visible when q - k < window: the query itself plus the window-1 keys before it."""
    return lambda q, k: (q - k) < window


def is_sink(n_sinks: int) -> Predicate:
    return lambda q, k: k < n_sinks


def filled() -> Predicate:
    """Empty cache slots carry position -1 and are never visible."""
    return lambda q, k: k >= 0


def and_(*preds: Predicate) -> Predicate:
    def both(q, k):
        out = preds[0](q, k)
        for p in preds[1:]:
            out = out & p(q, k)
        return out
    return both


def or_(*preds: Predicate) -> Predicate:
    def either(q, k):
        out = preds[0](q, k)
        for p in preds[1:]:
            out = out | p(q, k)
        return out
    return either


@dataclass(frozen=True)
class MaskSpec:
    """causal ∧ (in_window(w) ∨ is_sink(s)), over filled slots. window=None: unlimited."""
    causal: bool = True
    window: Optional[int] = None
    sinks: int = 0

    def __post_init__(self):
        if self.window is not None and self.window < 1:
            raise ValueError(f"window must be >= 1, got {self.window}")
        if self.sinks < 0:
            raise ValueError(f"sinks must be >= 0, got {self.sinks}")
        if self.sinks and self.window is None:
            raise ValueError("sinks only make sense together with a window")
        if self.sinks and self.sinks >= self.window:
            raise ValueError(f"sinks ({self.sinks}) must be fewer than the window ({self.window})")

    def predicate(self) -> Predicate:
        parts = [filled()]
        if self.causal:
            parts.append(causal())
        if self.window is not None:
            local = in_window(self.window)
            parts.append(or_(local, is_sink(self.sinks)) if self.sinks else local)
        return and_(*parts)

    def visible(self, q_pos: torch.Tensor, kv_pos: torch.Tensor) -> torch.Tensor:
        """Boolean (T, S) matrix: may query at q_pos[i] see the key at kv_pos[j]? A mask whose
        terms use only key positions (non-causal, no window) would broadcast to (1, S): the
        result is expanded to (T, S) so every caller gets one row per query."""
        seen = self.predicate()(q_pos[:, None], kv_pos[None, :])
        return seen.expand(q_pos.shape[0], kv_pos.shape[0]).contiguous()  # (T, S)

    def restrict(self, other: Optional["MaskSpec"]) -> "MaskSpec":
        """This layer's own mask further restricted by a user override (narrower window wins;
        the override's sinks apply)."""
        if other is None:
            return self
        windows = [w for w in (self.window, other.window) if w is not None]
        window = min(windows) if windows else None
        return MaskSpec(causal=self.causal and other.causal, window=window,
                        sinks=other.sinks if window is not None and other.sinks < window else 0)

    def describe(self) -> str:
        if self.window is None:
            return "causal" if self.causal else "bidirectional"
        if self.sinks:
            return f"{self.sinks} sink{'s' if self.sinks > 1 else ''} + window {self.window}"
        return f"sliding window {self.window}"


def visible_per_row(masks: Sequence[MaskSpec], q_pos: torch.Tensor,
                    kv_pos: torch.Tensor) -> torch.Tensor:
    """Many independent runs at once, one query each: row i is masks[i].visible over the query
    at q_pos[i] and the keys at kv_pos[i] (a batched decode step whose runs each have their own
    mask and their own cache slots). q_pos (n,), kv_pos (n, S) -> (n, S) bool. Each row is
    decided by its own MaskSpec's predicate (rows that share a mask in one call): a mask kind
    added to MaskSpec.predicate holds here with no second copy."""
    rows_of: dict = {}
    for i, mask in enumerate(masks):
        rows_of.setdefault(mask, []).append(i)
    if len(rows_of) == 1:
        return next(iter(rows_of)).predicate()(q_pos[:, None], kv_pos).expand(kv_pos.shape).contiguous()
    seen = torch.empty(kv_pos.shape, dtype=torch.bool, device=kv_pos.device)          # (n, S)
    for mask, rows in rows_of.items():
        index = torch.tensor(rows, device=kv_pos.device)
        seen[index] = mask.predicate()(q_pos[index, None], kv_pos[index]).expand(len(rows), kv_pos.shape[1])
    return seen


# --- the attention paths ------------------------------------------------------------------------


@dataclass
class TileTrace:
    """What the tiled path did, in order: which (query block, key block) tiles it computed or
    skipped because the mask hid them entirely, and each row's running max and normalizer
    after every key block (the online-softmax state)."""
    block_q: int
    block_k: int
    tiles: list = field(default_factory=list)      # (q_block, k_block, "computed"|"skipped")
    row_max: list = field(default_factory=list)    # per q block: (n_k_blocks, B, H, bq) tensors
    row_norm: list = field(default_factory=list)
    # per q block: (n_k_blocks, B, H, bq), the factor exp(m_old - m_new) that step applied to
    # the normalizer and the partial output (1 where a skipped tile changed nothing)
    rescale: list = field(default_factory=list)
    # with keep_partial, per q block: (n_k_blocks, B, H, bq, D), the unnormalized partial output
    # after every key block (n_k_blocks times the output's size: for small inputs only)
    keep_partial: bool = False
    partial_out: list = field(default_factory=list)


class TileVisibility:
    """The visibility of a (T, S) matrix evaluated tile by tile from the mask's predicate:
    `tiles[q0:q1, k0:k1]` is `mask.visible` over those positions. Handed to tiled_attention in
    place of the boolean (T, S) matrix, nothing of size T x S exists, as in a FlashAttention
    kernel that derives its mask from positions inside each tile."""

    def __init__(self, mask: MaskSpec, q_pos: torch.Tensor, kv_pos: torch.Tensor):
        self.mask, self.q_pos, self.kv_pos = mask, q_pos, kv_pos
        self.shape = (q_pos.shape[0], kv_pos.shape[0])

    def __getitem__(self, index):
        q_pos, kv_pos = self.q_pos[index[0]], self.kv_pos[index[1]]
        return self.mask.visible(q_pos, kv_pos)  # (bq, bk)


def _expand_kv(x: torch.Tensor, n_rep: int) -> torch.Tensor:
    """(B, Hkv, S, D) -> (B, Hkv*n_rep, S, D): query head h reads KV head h // n_rep."""
    if n_rep == 1:
        return x
    b, hkv, s, d = x.shape
    return x[:, :, None].expand(b, hkv, n_rep, s, d).reshape(b, hkv * n_rep, s, d)


def _sink_column(sink_logit, n_heads: int, like: torch.Tensor) -> torch.Tensor:
    """The sink logit as a (1, H, 1, 1) tensor: a per-head learned vector or one scalar."""
    b = torch.as_tensor(sink_logit, dtype=torch.float32, device=like.device)
    return b.reshape(-1)[None, :, None, None].expand(1, n_heads, 1, 1) if b.numel() > 1 \
        else b.reshape(1, 1, 1, 1).expand(1, n_heads, 1, 1)


def eager_attention(q, k, v, visible, scale, sink_logit=None, softcap=None):
    """Textbook attention. q (B,H,T,D), k/v (B,Hkv,S,D), visible (T,S) bool.
    Returns out (B,H,T,D) and probs (B,H,T,S) in fp32; probs rows sum to 1 - sink mass."""
    n_heads = q.shape[1]
    k, v = _expand_kv(k, n_heads // k.shape[1]), _expand_kv(v, n_heads // v.shape[1])
    scores = (q @ k.transpose(-2, -1)).float() * scale                 # (B, H, T, S)
    if softcap is not None:
        scores = softcap * torch.tanh(scores / softcap)
    scores = scores.masked_fill(~visible, float("-inf"))
    if sink_logit is not None:
        # gpt-oss: an extra logit per head joins the softmax denominator and attends to nothing
        sink = _sink_column(sink_logit, n_heads, scores).expand(*scores.shape[:-1], 1)
        probs = torch.softmax(torch.cat([scores, sink], dim=-1), dim=-1)[..., :-1]
    else:
        probs = torch.softmax(scores, dim=-1)
    out = probs.to(v.dtype) @ v                                         # (B, H, T, D)
    return out, probs


CAUSAL = "causal"  # sdpa hint: `visible` is exactly the square lower triangle
BAND_ROWS = 128    # query rows per block of a RowBlocks split


@dataclass(frozen=True)
class RowBlocks:
    """sdpa hint: each block of query rows sees keys in one column range much narrower than
    the whole matrix, as a sliding window over a long prompt does (Gemma 3's local layers over
    a 2048-token prompt: a 512-key window in a 2048 x 2048 matrix). SDPA's CPU kernel computes
    every score of the matrix it is handed, masked or not (only is_causal skips), so attention
    runs block by block over each block's columns: the same result for a fraction of the work.
    blocks: (r0, r1, c0, c1) per block of BAND_ROWS query rows."""
    visible: torch.Tensor
    blocks: tuple

    @property
    def entries(self) -> int:
        """Query-key scores the blocks hand to the kernel (per head)."""
        return sum((r1 - r0) * (c1 - c0) for r0, r1, c0, c1 in self.blocks)

    @classmethod
    def split(cls, visible: torch.Tensor, rows: int = BAND_ROWS, max_share: float = 0.75):
        """The split of `visible` (T, S) into row blocks, or None when the blocks would still
        hand the kernel more than max_share of the whole matrix (every block needs nearly every
        column: not worth the extra calls), or when T is under two blocks."""
        t, s = visible.shape
        if t < 2 * rows:
            return None
        cols = torch.arange(s, device=visible.device)
        # first and one-past-last visible column of each row; a row that sees nothing (never
        # the case for causal masks over filled slots) spans nothing
        first = torch.where(visible, cols, s).amin(dim=1)                  # (T,)
        last = torch.where(visible, cols + 1, 0).amax(dim=1)               # (T,)
        blocks = []
        for r0 in range(0, t, rows):
            r1 = min(r0 + rows, t)
            c0, c1 = int(first[r0:r1].min()), int(last[r0:r1].max())
            blocks.append((r0, r1, min(c0, c1), c1))
        split = cls(visible, tuple(blocks))
        return split if split.entries <= max_share * t * s else None


def sdpa_attention(q, k, v, visible, scale, sink_logit=None):
    """torch's fused scaled_dot_product_attention; visible (T,S) bool, None when every key is
    visible, CAUSAL for the plain square causal pattern (the kernel's is_causal path skips
    the masked half instead of reading a mask), or a RowBlocks split of a banded matrix (one
    call per block of rows, over that block's columns). No probabilities come back.
    The sink logit is a zero key whose additive mask entry is the logit and whose value is
    zero: exp(b) joins the denominator, nothing joins the numerator."""
    if isinstance(visible, RowBlocks):
        return torch.cat([sdpa_attention(q[:, :, r0:r1], k[:, :, c0:c1], v[:, :, c0:c1],
                                         visible.visible[r0:r1, c0:c1], scale, sink_logit)
                          for r0, r1, c0, c1 in visible.blocks], dim=2)          # (B, H, T, D)
    n_heads = q.shape[1]
    gqa = k.shape[1] != n_heads
    if sink_logit is None:
        if isinstance(visible, str):
            return F.scaled_dot_product_attention(q, k, v, is_causal=True, scale=scale, enable_gqa=gqa)
        return F.scaled_dot_product_attention(q, k, v, attn_mask=visible, scale=scale, enable_gqa=gqa)
    b, hkv, s, d = k.shape
    t = q.shape[2]
    if isinstance(visible, str):
        visible = torch.ones(t, s, dtype=torch.bool, device=q.device).tril()
    zeros = k.new_zeros(b, hkv, 1, d)
    k, v = torch.cat([k, zeros], dim=2), torch.cat([v, zeros], dim=2)   # (B, Hkv, S+1, D)
    additive = torch.zeros(t, s, dtype=q.dtype, device=q.device)
    if visible is not None:
        additive = additive.masked_fill(~visible, float("-inf"))
    additive = additive[None, None].expand(1, n_heads, t, s)
    sink = _sink_column(sink_logit, n_heads, q).to(q.dtype).expand(1, n_heads, t, 1)
    mask = torch.cat([additive, sink], dim=-1)                          # (1, H, T, S+1)
    return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, scale=scale, enable_gqa=gqa)


def tiled_attention(q, k, v, visible, scale, sink_logit=None, softcap=None,
                    block_q: int = 64, block_k: int = 64, trace: Optional[TileTrace] = None,
                    need_probs: bool = False):
    """Online-softmax attention over (block_q x block_k) tiles, as FlashAttention computes it.

    Per query row it keeps a running max m and normalizer l; each key block updates both and
    rescales the accumulated output by exp(m_old - m_new). The full (T, S) score matrix never
    exists. A sink logit b starts every row at m = b, l = 1 (exp(b - b)), acc = 0.
    With need_probs, a second pass recomputes exp(s - m) / l per tile (as FlashAttention's
    backward does) to return exact probabilities."""
    bsz, n_heads, t, d = q.shape
    k, v = _expand_kv(k, n_heads // k.shape[1]), _expand_kv(v, n_heads // v.shape[1])
    s_len = k.shape[2]
    out = torch.empty(bsz, n_heads, t, d, dtype=torch.float32, device=q.device)
    probs = torch.zeros(bsz, n_heads, t, s_len, dtype=torch.float32, device=q.device) if need_probs else None
    init_m = _sink_column(sink_logit, n_heads, q) if sink_logit is not None else None
    for qi, q0 in enumerate(range(0, t, block_q)):
        q1 = min(q0 + block_q, t)
        qb = q[:, :, q0:q1].float()                                      # (B, H, bq, D)
        if init_m is None:
            m = torch.full((bsz, n_heads, q1 - q0), float("-inf"), device=q.device)
            l = torch.zeros(bsz, n_heads, q1 - q0, device=q.device)
        else:
            m = init_m[..., 0].expand(bsz, n_heads, q1 - q0).clone()
            l = torch.ones(bsz, n_heads, q1 - q0, device=q.device)
        acc = torch.zeros(bsz, n_heads, q1 - q0, d, device=q.device)
        maxes, norms, rescales, partials, live = [], [], [], [], []
        for kj, k0 in enumerate(range(0, s_len, block_k)):
            k1 = min(k0 + block_k, s_len)
            tile_mask = visible[q0:q1, k0:k1]                            # (bq, bk)
            if not bool(tile_mask.any()):
                if trace is not None:
                    trace.tiles.append((qi, kj, "skipped"))
                    maxes.append(m.clone()), norms.append(l.clone()), rescales.append(torch.ones_like(m))
                    if trace.keep_partial:
                        partials.append(acc.clone())
                continue
            live.append((k0, k1, tile_mask))
            s = (qb @ k[:, :, k0:k1].float().transpose(-2, -1)) * scale  # (B, H, bq, bk)
            if softcap is not None:
                s = softcap * torch.tanh(s / softcap)
            s = s.masked_fill(~tile_mask, float("-inf"))
            m_new = torch.maximum(m, s.amax(dim=-1))
            # rows with nothing visible yet keep m = -inf; exp(-inf - -inf) would be NaN
            safe_m = torch.where(torch.isinf(m_new), torch.zeros_like(m_new), m_new)
            p = torch.exp(s - safe_m[..., None])                        # (B, H, bq, bk)
            rescale = torch.exp(m - safe_m)                              # (B, H, bq)
            l = l * rescale + p.sum(dim=-1)
            acc = acc * rescale[..., None] + p @ v[:, :, k0:k1].float()
            m = m_new
            if trace is not None:
                trace.tiles.append((qi, kj, "computed"))
                maxes.append(m.clone()), norms.append(l.clone()), rescales.append(rescale)
                if trace.keep_partial:
                    partials.append(acc.clone())
        out[:, :, q0:q1] = acc / l[..., None]
        if trace is not None:
            trace.row_max.append(torch.stack(maxes)), trace.row_norm.append(torch.stack(norms))
            trace.rescale.append(torch.stack(rescales))
            if trace.keep_partial:
                trace.partial_out.append(torch.stack(partials))
        if need_probs:
            for k0, k1, tile_mask in live:
                s = (qb @ k[:, :, k0:k1].float().transpose(-2, -1)) * scale
                if softcap is not None:
                    s = softcap * torch.tanh(s / softcap)
                s = s.masked_fill(~tile_mask, float("-inf"))
                probs[:, :, q0:q1, k0:k1] = torch.exp(s - m[..., None]) / l[..., None]
    return out.to(q.dtype), probs


IMPLEMENTATIONS = ("eager", "sdpa", "tiled")
_DERIVE = object()  # attend(): compute sdpa_mask from `visible` (None is a meaningful value)


def sdpa_mask_for(visible: torch.Tensor, q_pos: torch.Tensor, kv_pos: torch.Tensor):
    """What SDPA should get for this visibility matrix: None when every key is visible (decode
    over a full cache), CAUSAL for the plain causal square (prefill from an empty cache: the
    kernel then skips the masked half without reading a mask), a RowBlocks split when the
    visible band is narrow (a sliding window over a long prompt), else the boolean matrix."""
    if bool(visible.all()):
        return None
    if visible.shape[0] == visible.shape[1] and torch.equal(kv_pos, q_pos) and \
            torch.equal(visible, torch.ones_like(visible).tril()):
        return CAUSAL
    return RowBlocks.split(visible) or visible


def takes_sdpa(impl: str, need_probs: bool = False, softcap=None, trace=None) -> bool:
    """Whether attend() runs the SDPA path for these arguments (see attend)."""
    return impl == "sdpa" and not need_probs and softcap is None and trace is None


def live_tile_entries(visible: torch.Tensor, block_q: int, block_k: int) -> int:
    """Scores the tiled path computes for a (T, S) visibility: every tile of block_q x
    block_k (cut at the matrix's edges) holding a visible entry, whole; the others are
    skipped (tiled_attention)."""
    t, s = visible.shape
    n_rows, n_cols = -(-t // block_q), -(-s // block_k)
    padded = F.pad(visible.to(torch.uint8), (0, n_cols * block_k - s, 0, n_rows * block_q - t))
    live = padded.view(n_rows, block_q, n_cols, block_k).amax(dim=(1, 3)).bool()  # (tiles, tiles)
    heights = torch.clamp(t - torch.arange(0, t, block_q, device=visible.device), max=block_q)
    widths = torch.clamp(s - torch.arange(0, s, block_k, device=visible.device), max=block_k)
    return int((live * heights[:, None] * widths[None, :]).sum())


def scored_entries(impl: str, sdpa_mask, t: int, s: int, *, visible=None, sink_logit=None,
                   need_probs: bool = False, softcap=None, trace=None, block_q: int = 64,
                   block_k: int = 64) -> int:
    """Query-key scores per head that attend() computes for a (t, s) matrix, by path:
    - tiled (asked for, or a tile trace): the tiles holding a visible entry (live_tile_entries;
      `visible` needed). A second pass over the same tiles for probabilities is not counted:
      it recomputes them for the recording, not for the output;
    - SDPA with the CAUSAL hint and no sink logit: the lower triangle t(t+1)/2, what the
      is_causal kernel needs. It skips key blocks above the diagonal in blocks of its own
      size, so it computes up to one block's width more per row than this count;
    - SDPA with a RowBlocks split: its blocks, each whole;
    - otherwise all t x s: eager scores the whole matrix and masks it after, SDPA with a
      mask matrix or with a sink logit (a causal pattern then becomes a mask) computes every
      entry it is handed."""
    if impl == "tiled" or trace is not None:
        if visible is None:
            raise ValueError("the tiled path's count needs the visibility matrix")
        return live_tile_entries(visible, block_q, block_k)
    if not takes_sdpa(impl, need_probs, softcap):
        return t * s
    if isinstance(sdpa_mask, RowBlocks):
        return sdpa_mask.entries
    if isinstance(sdpa_mask, str) and sink_logit is None:
        return t * (t + 1) // 2
    return t * s


def attend(q, k, v, q_pos, kv_pos, mask: MaskSpec, scale: float, *, impl: str = "sdpa",
           sink_logit=None, softcap=None, need_probs: bool = False, visible=None, sdpa_mask=_DERIVE,
           block_q: int = 64, block_k: int = 64, trace: Optional[TileTrace] = None):
    """Dispatch to one path. Returns (out (B,H,T,D), probs (B,H,T,S) or None).
    `visible` and its `sdpa_mask_for` may be passed in precomputed (layers of one type share
    them within a forward). SDPA returns no probabilities, so asking for them, for a tile
    trace or for a logit softcap takes the eager or tiled path instead."""
    if impl not in IMPLEMENTATIONS:
        raise ValueError(f"unknown attention implementation {impl!r}; choose from {IMPLEMENTATIONS}")
    if visible is None:
        visible = mask.visible(q_pos, kv_pos)
    if sdpa_mask is _DERIVE:
        sdpa_mask = sdpa_mask_for(visible, q_pos, kv_pos)
    if impl == "tiled" or trace is not None:
        return tiled_attention(q, k, v, visible, scale, sink_logit, softcap, block_q, block_k,
                               trace, need_probs)
    if not takes_sdpa(impl, need_probs, softcap):
        return eager_attention(q, k, v, visible, scale, sink_logit, softcap)
    return sdpa_attention(q, k, v, sdpa_mask, scale, sink_logit), None
