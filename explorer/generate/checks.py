"""The checks run after a generation, each a computation of the engine (models/) over the run's
own tokens:

- C4: the cached logits against one forward pass without a cache (`logit_differences`);
- C3 / C4: the engine's cache filled with the run's tokens (`read_engine_cache`): its buffers'
  real storage (allocated), the rows holding tokens (used), and the (T, S) mask of the last
  tokens evaluated by the engine's own MaskSpec predicate over the key positions the cache
  really holds (a ring buffer's slots, not 0..t-1);
- C1: the same decode steps recomputed without a cache, each timed side by side with one cached
  step of the same engine at the same t (`replay_without_cache`), with two counts per step:
  the scores the path computed (the engine's own count, models.attention.scored_entries: the
  causal kernel's triangle t(t+1)/2, or t x S where the path scores the whole matrix) and the
  scores the mask needs (query-key pairs it leaves visible, the engine's predicate over the
  positions). The counts follow from the shapes and the path, so their growth exponents are
  exact by construction; what is measured is the time, and C1 asks that the no-cache / cached
  time ratio grow with t.
"""
from __future__ import annotations

import dataclasses
import functools
import math
import time
from dataclasses import dataclass
from typing import Iterator, Optional, Sequence

REPLAY_BUDGET_S = 20.0          # the no-cache replay stops after this (points measured so far stay)
REPLAY_MAX_POINTS = 24          # no-cache steps replayed, spread evenly over the generated ones
# A live class's teacher page (the screen the class reads) gets its checks: they wait at most
# this long for the class's runs to leave the shared loop, then run all the same (two whole
# forwards: the students' streams pause for about as long as one prefill of the run)
CHECKS_WAIT_S = 45.0
WAIT_POLL_S = 0.2               # how often a waiting run looks at the loop
C4_TOLERANCE = 1e-4             # fp32; the engine's tests hold the same bound
# C4 compares like with like (logit_differences): a run decoded on bf16 or int8 weights against
# the same products without a cache. What is left differs per precision: fp32 the summation
# order; bf16 and int8 also the products' rounded input (bf16: 8 bits of mantissa; int8: blocks
# of 32, a step of 1/127 of the block's largest), where an upstream change of 1e-7 between the
# step and the one forward flips an element by a whole step. Measured: bf16 0.10-0.25, int8
# 0.61-0.76 on logits of scale ~30 (both models); a stale or misplaced cache entry moves them
# by units. gguf (the checkpoint's own codes, engine/quantized.py) rounds the input to
# two int8 digits, a step of 1/32512 of its block's largest: bounded at 0.05, 1/10 of bf16's.
C4_TOLERANCES = {"fp32": C4_TOLERANCE, "bf16": 0.5, "int8": 1.5, "gguf": 0.05}


def c4_tolerance(weights: Optional[str] = None) -> float:
    """C4's bound for runs decoded on `weights` (default: the precision this server reads)."""
    if weights is None:
        from engine.quantized import configured_weights
        weights = configured_weights()
    return C4_TOLERANCES[weights]
MASK_QUERIES = 8                # T: the last tokens drawn as one chunk in the (T, S) mask
# C1's criterion. Counted: computed scores grow like t^a; without a cache a = 2 (the causal
# triangle, ~t²/2, every step), with one a = 1 (one row of t). A fit over a run's steps must
# land within C1_EXPONENT_SLACK of the exponent. Measured: the no-cache / cached time ratio
# grows like t^r with r >= C1_MIN_RATIO_EXPONENT, and the no-cache step is slower at the
# largest t. A step that recomputes everything with or without a cache keeps the ratio flat
# (r ~ 0); the real engine measured r = 0.48 from t = 32 to 384
# (tests/checkpoints/test_generate_evidence.py),
# and on the board's grid (t = 16 ... 128) r = 0.41-0.42 on SmolLM2 and 0.32-0.33 on Gemma 3,
# whose 671 MB tied LM head costs both paths alike and flattens the ratio at small t.
C1_EXPONENT_SLACK = 0.2
C1_MIN_RATIO_EXPONENT = 0.2
C1_MIN_SPAN = 1.5               # t_max / t_min a fit needs (a shorter span says little)


# ----- counting: what a path computes and what the mask needs (C1) --------------------------
def visible_pairs(masks: Sequence, n_heads: int, q_pos, kv_pos_per_layer: Sequence) -> int:
    """Query-key pairs the mask leaves visible, all layers and heads: for each layer, the
    engine's MaskSpec predicate (`masks`, one per layer) over the queries' absolute positions
    (T,) and the key positions that layer attends over (S,; -1 for an empty slot, never
    visible). A layer whose mask and key positions equal an earlier layer's is counted from it."""
    import torch

    q_pos = torch.as_tensor(q_pos)
    counted: list = []          # (mask, kv_pos, count) already evaluated
    total = 0
    for mask, kv_pos in zip(masks, kv_pos_per_layer):
        kv_pos = torch.as_tensor(kv_pos)
        for seen_mask, seen_pos, count in counted:
            if seen_mask == mask and (seen_pos is kv_pos or torch.equal(seen_pos, kv_pos)):
                break
        else:
            count = int(mask.visible(q_pos, kv_pos).sum())
            counted.append((mask, kv_pos, count))
        total += count
    return n_heads * total


def needed_scores(masks: Sequence, n_heads: int, n_fed: int, context: int) -> int:
    """Scores the mask needs for a forward that fed the last `n_fed` of `context` tokens (a
    decode step: 1; a prefill or a forward without a cache: all of them), over the absolute
    key positions 0..context-1 every layer could see."""
    return _needed_scores(tuple(masks), n_heads, n_fed, context)


# Asked for every streamed token of every visitor (the step's "needed" scores): a few torch ops
# over the positions and a comparison per layer, the same answer for every run with the same
# masks at the same position (a classroom on one prompt), so it is computed once per key.
@functools.lru_cache(maxsize=4096)
def _needed_scores(masks: tuple, n_heads: int, n_fed: int, context: int) -> int:
    import torch

    positions = torch.arange(context)
    return visible_pairs(masks, n_heads, positions[context - n_fed:], [positions] * len(masks))


def growth_exponent(ts: Sequence[float], values: Sequence[float]) -> Optional[float]:
    """Least-squares slope of log(value) against log(t): value ~ t^slope. None when the points
    span less than C1_MIN_SPAN in t or a value is not positive."""
    pairs = [(t, v) for t, v in zip(ts, values) if t > 0]
    if len(pairs) < 2 or any(v <= 0 for _, v in pairs):
        return None
    if max(t for t, _ in pairs) / min(t for t, _ in pairs) < C1_MIN_SPAN:
        return None
    xs = [math.log(t) for t, _ in pairs]
    ys = [math.log(v) for _, v in pairs]
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    sxx = sum((x - mx) ** 2 for x in xs)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx


@dataclass(frozen=True)
class ReplayPoint:
    """One decode step at context t, recomputed twice by the eager engine, back to back."""
    context: int               # t: tokens in context (the cached step fed 1, the no-cache forward t)
    latency_s: float           # the forward over all t tokens without a cache
    score_entries: int         # ... the scores it computed (the engine's count per path: the
                               # causal kernel's t(t+1)/2 per head, eager's t x t)
    visible_pairs: int         # ... the scores its mask needs (t(t+1)/2 per head, causal mask)
    cached_latency_s: float    # one cached step at the same t (the cache filled beforehand)
    cached_score_entries: int  # ... its computed scores (one row: S = the slots it attends over)
    cached_visible_pairs: int  # ... the pairs its mask leaves visible among the cache's slots
    same_token: bool           # its next-token argmax equals the cached step's (greedy runs)

    @property
    def ratio(self) -> float:
        """No-cache time over cached time at this t."""
        return self.latency_s / max(self.cached_latency_s, 1e-12)


@dataclass(frozen=True)
class C1Verdict:
    """C1 read from the replay: how the counted scores grow with t on each path (counts), how
    the measured no-cache / cached time ratio grows with t, and that ratio at both ends."""
    exponent_cached: Optional[float]     # counted
    exponent_uncached: Optional[float]   # counted
    ratio_exponent: Optional[float]      # measured: the time ratio ~ t^ratio_exponent
    t_min: int
    t_max: int
    ratio_at_min: float
    ratio_at_max: float
    passed: bool


def c1_verdict(points: Sequence[ReplayPoint]) -> Optional[C1Verdict]:
    """C1's criterion on replayed points: uncached scores ~t^2 and cached ~t (fitted exponents
    within C1_EXPONENT_SLACK), the time ratio growing like t^r with r >= C1_MIN_RATIO_EXPONENT,
    and the no-cache step slower than the cached one at the largest t. None without points."""
    if not points:
        return None
    ts = [p.context for p in points]
    exp_c = growth_exponent(ts, [p.cached_score_entries for p in points])
    exp_u = growth_exponent(ts, [p.score_entries for p in points])
    exp_r = growth_exponent(ts, [p.ratio for p in points])
    first = min(points, key=lambda p: p.context)
    last = max(points, key=lambda p: p.context)
    passed = (exp_c is not None and exp_u is not None and exp_r is not None
              and abs(exp_c - 1.0) <= C1_EXPONENT_SLACK and abs(exp_u - 2.0) <= C1_EXPONENT_SLACK
              and exp_r >= C1_MIN_RATIO_EXPONENT and last.ratio > 1.0)
    return C1Verdict(exp_c, exp_u, exp_r, first.context, last.context, first.ratio, last.ratio,
                     bool(passed))


def best_of(rounds: Sequence[Sequence[ReplayPoint]]) -> list[ReplayPoint]:
    """Replays of the same steps combined: per t, each path's fastest time over the rounds (a
    shared machine only ever slows a forward down; the counts are the same in every round)."""
    best: dict = {}
    for points in rounds:
        for p in points:
            seen = best.get(p.context)
            best[p.context] = p if seen is None else dataclasses.replace(
                seen, latency_s=min(seen.latency_s, p.latency_s),
                cached_latency_s=min(seen.cached_latency_s, p.cached_latency_s))
    return [best[t] for t in sorted(best)]


# ----- C4: cached logits against one forward without a cache --------------------------------
def logit_differences(model, ids: Sequence[int], n_prompt: int, cached_logits: Sequence,
                      options=None, weights: str = "fp32") -> list[float]:
    """C4: per generated token, max |cached logits - logits of one full forward without cache|.
    Row p of the full forward predicts token p + 1; step k's token sits at n_prompt + k.
    The forward runs every block over all the tokens, and the LM head (norm + projection, row
    by row) only over the rows compared: for Gemma's 262k vocabulary the whole (T, V) would
    be about 1 GiB of logits at 1024 tokens, the compared rows are a few MB.

    `weights`: the precision the run's decode steps read (engine/quantized.py). Like
    is compared with like: the run fed its prompt through the fp32 engine and every later
    token through products on those weights, so the reference feeds the prompt in fp32 and then
    every generated token in one forward over them with the same products (no step cache for
    them: what C4 says the cache equals)."""
    import torch

    from models.forward import RunOptions

    n = len(cached_logits)
    fed = list(ids)[:n_prompt + n - 1]          # the last token is never fed to the model
    options = dataclasses.replace(options or RunOptions(), last_logits_only=False)
    with torch.inference_mode():
        x = torch.tensor([fed], dtype=torch.long, device=model.embed.weight.device)
        if weights == "fp32":
            hidden = model(x, options=options, stop_at_layer=model.config.n_layers)  # (1, T, d)
            rows = model.head(hidden[:, n_prompt - 1:n_prompt - 1 + n])[0].float().cpu()  # (n, V)
        else:
            from engine.quantized import weights_of
            from models.layers import weight_provider

            cache = model.new_cache(len(fed) + 1, options=options)
            first = model(x[:, :n_prompt], cache=cache, options=options)[0, -1:]         # (1, V)
            rest = []
            if n > 1:
                with weight_provider(weights_of(model, weights).table):
                    rest = [model(x[:, n_prompt:], cache=cache, options=options)[0]]    # (n - 1, V)
            rows = torch.cat([first, *rest]).float().cpu()
    cached = torch.stack([c.float().cpu() for c in cached_logits])           # (n, V)
    return (cached - rows).abs().amax(dim=-1).tolist()


def c4_holds(diffs: Optional[Sequence[float]], tolerance: Optional[float] = None) -> bool:
    """C4's criterion: every generated position's max |cached − full| within the tolerance
    (by default the one for the precision this server's decode steps read)."""
    tolerance = c4_tolerance() if tolerance is None else tolerance
    return bool(diffs) and all(math.isfinite(d) and d <= tolerance for d in diffs)


# ----- C3 / C4: the engine's cache holding the run's tokens ---------------------------------
@dataclass(frozen=True)
class MaskBlock:
    """The (T, S) visibility of one kind of layer for the last T tokens, fed as one chunk."""
    layer: int                 # the first layer of this kind
    cache_pos: int             # t - T: the queries sit at cache_pos + i
    q_pos: tuple               # (T,) absolute query positions
    kv_pos: tuple              # (S,) the absolute position of each key the chunk attended
                               # over, in the engine's order (cache slots, then for a ring
                               # buffer the chunk's own keys); -1: an empty slot
    visible: tuple             # (T, S) booleans: MaskSpec.visible(q_pos, kv_pos)
    capacity: int              # the layer's cache slots (a ring buffer: window + sinks)


@dataclass(frozen=True)
class CacheReading:
    """The engine's cache after the run's t tokens, read from its tensors, per layer."""
    tokens: int                # t: cache.pos after the run's tokens
    max_len: int               # the length the cache was made for (prompt + max new tokens)
    capacity: tuple            # slots per layer (K and V rows per KV head)
    allocated_bytes: tuple     # numel x element size of the layer's K and V buffers
    held: tuple                # slots holding a token (slot position >= 0)
    used_bytes: tuple          # the filled slots' K and V: models.kv_cache.LayerKV.used_bytes
    masks: tuple               # MaskBlock per kind of layer


def read_layer(layer) -> tuple[int, int, int, int]:
    """(capacity, allocated bytes, slots holding a token, their bytes) of one models.kv_cache
    LayerKV, from its tensors: the buffers' storage, the positions its slots record, and the
    bytes of its filled slots (LayerKV.used_bytes)."""
    held = int((layer.slot_pos >= 0).sum())
    return layer.k.shape[2], layer.allocated_bytes(), held, layer.used_bytes()


def read_engine_cache(model, ids: Sequence[int], tokens: int, options, max_len: int,
                      n_queries: int = MASK_QUERIES, layer_masks: Optional[Sequence] = None
                      ) -> CacheReading:
    """Make the cache the engine makes for a run (model.new_cache(max_len) under the run's
    mask, as the shared decode loop does), fill it with the run's first `tokens` tokens through
    the engine's cached forward, the last T = n_queries of them as one chunk, and read it.
    The chunk records, for the first layer of each kind, the key positions its queries
    attended over (models.forward.Recorder's kv_pos): the (T, S) mask is the engine's MaskSpec
    predicate over them. A chunk fills the cache exactly as single steps do (models/kv_cache.py;
    tests/unit/test_kv_cache.py), so every number equals the run's own cache at the same t.
    `layer_masks`: the run's MaskSpec per layer as its Session carries them (None: the engine's
    model.layer_masks(options.mask), the same list)."""
    import torch

    from models.decoder import decode_options
    from models.forward import Recorder

    options = decode_options(options)
    masks = list(layer_masks) if layer_masks is not None else model.layer_masks(options.mask)
    firsts: dict = {}                     # MaskSpec -> the first layer that has it
    for i, spec in enumerate(masks):
        firsts.setdefault(spec, i)
    n = max(1, min(n_queries, tokens - 1))
    device = model.embed.weight.device
    fed = [int(i) for i in list(ids)[:tokens]]
    cache = model.new_cache(max_len, 1, options=options)
    recorder = Recorder(["attn_probs"], layers=firsts.values(),
                        hooks={"attn_probs": lambda value, layer: None})   # keep kv_pos only
    with torch.inference_mode():
        if tokens - n:
            model(torch.tensor([fed[:tokens - n]], device=device), cache=cache, options=options)
        cache_pos = cache.pos
        model(torch.tensor([fed[tokens - n:]], device=device), cache=cache, options=options,
              recorder=recorder)
    q_pos = torch.arange(cache_pos, cache_pos + n)
    blocks = []
    for spec, layer in firsts.items():
        kv_pos = recorder.get("kv_pos", layer).reshape(-1)                   # (S,)
        visible = spec.visible(q_pos, kv_pos)                                # (T, S)
        blocks.append(MaskBlock(layer=layer, cache_pos=cache_pos, q_pos=tuple(q_pos.tolist()),
                               kv_pos=tuple(kv_pos.tolist()),
                               visible=tuple(tuple(row) for row in visible.tolist()),
                               capacity=cache[layer].k.shape[2]))
    read = [read_layer(cache[i]) for i in range(len(masks))]
    return CacheReading(tokens=cache.pos, max_len=max_len,
                        capacity=tuple(r[0] for r in read), allocated_bytes=tuple(r[1] for r in read),
                        held=tuple(r[2] for r in read), used_bytes=tuple(r[3] for r in read),
                        masks=tuple(blocks))


# ----- C1: the same steps without a cache ---------------------------------------------------
def replay_targets(records: Sequence, max_points: int = REPLAY_MAX_POINTS) -> list:
    """The decode steps to replay without cache: evenly spread, first and last included."""
    decode = [r for r in records if r.phase == "decode"]
    if len(decode) <= max_points:
        return decode
    picks = sorted({round(i * (len(decode) - 1) / (max_points - 1)) for i in range(max_points)})
    return [decode[i] for i in picks]


def replay_without_cache(model, ids: Sequence[int], records: Sequence, options,
                         budget_end: float, greedy: bool = True, max_len: Optional[int] = None,
                         max_points: int = REPLAY_MAX_POINTS,
                         layer_masks: Optional[Sequence] = None) -> Iterator[ReplayPoint]:
    """C1, teacher-forced, on the eager engine alone so the two times compare one engine with
    itself: for each replayed decode step at context t, (1) one cached step that feeds token
    t-1 to a cache holding the t-1 before it (the cache is filled between targets, untimed),
    then (2) one forward over the same t tokens without a cache (what generate(use_cache=False)
    does at that step), each timed, back to back. `layer_masks`: as in read_engine_cache."""
    import torch

    from models.decoder import decode_options

    opts = decode_options(options)
    device = model.embed.weight.device
    ids = [int(i) for i in ids]
    targets = replay_targets(records, max_points)
    if not targets:
        return
    masks = list(layer_masks) if layer_masks is not None else model.layer_masks(opts.mask)
    heads = model.config.n_heads
    cache = model.new_cache(max_len or len(ids), 1, options=opts)
    for record in targets:
        if time.perf_counter() > budget_end:
            return
        t = record.context
        with torch.inference_mode():
            if cache.pos < t - 1:                       # fill the gap since the last target
                model(torch.tensor([ids[cache.pos:t - 1]], device=device), cache=cache, options=opts)
            step = torch.tensor([[ids[t - 1]]], device=device)
            t0 = time.perf_counter()
            logits, ctx = model(step, cache=cache, options=opts, return_context=True)
            int(torch.argmax(logits[0, -1]))
            cached_latency = time.perf_counter() - t0
            cached_pairs = visible_pairs(masks, heads, [t - 1],
                                         [cache[i].slot_pos for i in range(len(masks))])
            cached_scores = ctx.score_entries
            x = torch.tensor([ids[:t]], dtype=torch.long, device=device)
            t0 = time.perf_counter()
            logits, ctx = model(x, options=opts, return_context=True)
            token = int(torch.argmax(logits[0, -1]))
            latency = time.perf_counter() - t0
        yield ReplayPoint(context=t, latency_s=latency, score_entries=ctx.score_entries,
                          visible_pairs=needed_scores(masks, heads, t, t),
                          cached_latency_s=cached_latency, cached_score_entries=cached_scores,
                          cached_visible_pairs=cached_pairs,
                          same_token=(token == record.token_id) if greedy else True)


# ----- C9: the scores of one cached step, layer by layer ------------------------------------
@dataclass(frozen=True)
class StepScores:
    """The scores one cached decode step at context t computed, per layer and in all."""
    context: int               # t: the step feeds token t - 1 to a cache holding t - 1 tokens
    per_layer: tuple           # per layer, all heads: n_heads x the keys the layer attended over
    total: int                 # the engine's own count for the step (ForwardContext.score_entries)


def scores_per_layer(model, ids: Sequence[int], contexts: Sequence[int], options,
                     max_len: int) -> list[StepScores]:
    """One cached decode step at each t of `contexts` (ascending), the cache filled with the
    tokens before it, under the run's options. The recording point "k" (the keys each layer's
    attention received, after the cache) gives the keys S per layer, so a layer's scores are
    n_heads x S (a one-row step scores every key it is handed on every path); the engine's
    total for the same step checks the split."""
    import torch

    from models.decoder import decode_options
    from models.forward import Recorder

    opts = decode_options(options)
    heads, device = model.config.n_heads, model.embed.weight.device
    ids = [int(i) for i in ids]
    cache = model.new_cache(max_len, 1, options=opts)
    counted = []
    for t in contexts:
        recorder = Recorder(["k"], hooks={"k": lambda keys, layer: keys.shape[2]})  # (B, Hkv, S, D)
        with torch.inference_mode():
            if cache.pos < t - 1:
                model(torch.tensor([ids[cache.pos:t - 1]], device=device), cache=cache, options=opts)
            _, ctx = model(torch.tensor([[ids[t - 1]]], device=device), cache=cache, options=opts,
                           recorder=recorder, return_context=True)
        keys = [recorder.get("k", layer) for layer in range(model.config.n_layers)]
        counted.append(StepScores(t, tuple(heads * s for s in keys), ctx.score_entries))
    return counted
