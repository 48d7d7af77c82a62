"""The checks run after a generation: the cached logits against one forward pass without a
cache (C4), the same decode steps recomputed without a cache (C1), and the (T, S) mask each
decode step used, evaluated by the engine's own MaskSpec predicate."""
from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass
from typing import Iterator, Sequence

REPLAY_BUDGET_S = 20.0          # the no-cache replay stops after this (points measured so far stay)
REPLAY_MAX_POINTS = 24          # no-cache steps replayed, spread evenly over the generated ones
C4_TOLERANCE = 1e-4             # fp32; the engine's tests hold the same bound


@dataclass(frozen=True)
class ReplayPoint:
    context: int               # t: tokens fed to the no-cache forward (same t as the cached step)
    latency_s: float
    score_entries: int
    same_token: bool           # its next-token argmax equals the cached step's (greedy runs)


def logit_differences(model, ids: Sequence[int], n_prompt: int, cached_logits: Sequence,
                      options=None) -> list[float]:
    """C4: per generated token, max |cached logits - logits of one full forward without cache|.
    Row p of the full forward predicts token p + 1; step k's token sits at n_prompt + k.
    The forward runs every block over all the tokens, and the LM head (norm + projection, row
    by row) only over the rows compared: for Gemma's 262k vocabulary the whole (T, V) would
    be about 1 GiB of logits at 1024 tokens, the compared rows are a few MB."""
    import torch

    from models.forward import RunOptions

    n = len(cached_logits)
    fed = list(ids)[:n_prompt + n - 1]          # the last token is never fed to the model
    options = dataclasses.replace(options or RunOptions(), last_logits_only=False)
    with torch.inference_mode():
        x = torch.tensor([fed], dtype=torch.long, device=model.embed.weight.device)
        hidden = model(x, options=options, stop_at_layer=model.config.n_layers)  # (1, T, d)
        rows = model.head(hidden[:, n_prompt - 1:n_prompt - 1 + n])[0].float().cpu()  # (n, V)
    cached = torch.stack([c.float().cpu() for c in cached_logits])           # (n, V)
    return (cached - rows).abs().amax(dim=-1).tolist()


def replay_targets(records: Sequence, max_points: int = REPLAY_MAX_POINTS) -> list:
    """The decode steps to replay without cache: evenly spread, first and last included."""
    decode = [r for r in records if r.phase == "decode"]
    if len(decode) <= max_points:
        return decode
    picks = sorted({round(i * (len(decode) - 1) / (max_points - 1)) for i in range(max_points)})
    return [decode[i] for i in picks]


def replay_without_cache(model, ids: Sequence[int], records: Sequence, options,
                         budget_end: float, greedy: bool = True) -> Iterator[ReplayPoint]:
    """C1 baseline, teacher-forced: for a cached decode step at context t, one forward over the
    same t tokens without a cache (what generate(use_cache=False) does at that step), timed."""
    import torch

    opts = dataclasses.replace(options, last_logits_only=True)
    device = model.embed.weight.device
    for record in replay_targets(records):
        if time.perf_counter() > budget_end:
            return
        t = record.context
        x = torch.tensor([list(ids)[:t]], dtype=torch.long, device=device)
        with torch.inference_mode():
            t0 = time.perf_counter()
            logits, ctx = model(x, options=opts, return_context=True)
            token = int(torch.argmax(logits[0, -1]))
            latency = time.perf_counter() - t0
        yield ReplayPoint(context=t, latency_s=latency, score_entries=ctx.score_entries,
                          same_token=(token == record.token_id) if greedy else True)


@dataclass(frozen=True)
class MaskBlock:
    """The (T, S) visibility of one kind of layer for the last T tokens fed."""
    layer: int                 # the first layer of this kind
    cache_pos: int             # t - T: the queries sit at cache_pos + i
    q_pos: tuple               # (T,) absolute query positions
    visible: tuple             # (T, S) booleans over absolute key positions 0..S-1


def mask_rows(session, n_queries: int = 8) -> list[MaskBlock]:
    """C4's non-square mask: for the last `n_queries` tokens fed, the (T, S) visibility over
    absolute key positions 0..t-1, computed by the engine's own MaskSpec predicate, once per
    kind of layer. Row i is query position cache.pos + i with cache.pos = t - T: what a chunk of
    T tokens sees, and, one row at a time, what each decode step computed."""
    import torch

    from models.attention import MaskSpec

    if not session.records:
        return []
    t_end = session.records[-1].context
    n = min(n_queries, t_end)
    q_pos = torch.arange(t_end - n, t_end)
    kv_pos = torch.arange(t_end)
    blocks, seen = [], set()
    for lay in session.layouts:  # one block per distinct mask (Gemma: local and global)
        if (lay.window, lay.sinks) in seen:
            continue
        seen.add((lay.window, lay.sinks))
        visible = MaskSpec(window=lay.window, sinks=lay.sinks).visible(q_pos, kv_pos)  # (T, S)
        blocks.append(MaskBlock(layer=lay.layer, cache_pos=t_end - n, q_pos=tuple(q_pos.tolist()),
                                visible=tuple(tuple(row) for row in visible.tolist())))
    return blocks
