"""Token-by-token generation as an iterator: each step yields the token with its telemetry
(absolute position, latency, attention scores computed, real KV-cache bytes per layer) and the
most likely tokens of the distribution it was drawn from, so a UI can stream text and charts
while decoding, and stop between any two steps."""
from __future__ import annotations

import dataclasses
import math
import time
from dataclasses import dataclass, field
from typing import Callable, Collection, Iterator, Optional, Sequence

import torch

from .decoder import Decoder, EagerDecoder, decode_options
from .forward import CausalLM, RunOptions
from .kv_cache import KVCache

MAX_NEW_TOKENS = 4096
TOP_ALTERNATIVES = 5      # most likely tokens a Step keeps of its step's distribution


@dataclass(frozen=True)
class SamplingParams:
    max_new_tokens: int = 64
    temperature: float = 0.0   # 0 -> greedy (argmax)
    top_k: int = 0             # 0 -> no top-k cut
    top_p: float = 1.0         # 1 -> no nucleus cut
    seed: Optional[int] = None

    def __post_init__(self):
        for name in ("temperature", "top_p"):
            value = getattr(self, name)
            if not isinstance(value, (int, float)) or not math.isfinite(value):
                raise ValueError(f"{name} must be a finite number, got {value!r}")
        if not isinstance(self.max_new_tokens, int) or not 1 <= self.max_new_tokens <= MAX_NEW_TOKENS:
            raise ValueError(f"max_new_tokens must be an integer in 1..{MAX_NEW_TOKENS}, got {self.max_new_tokens!r}")
        if not 0.0 <= self.temperature <= 100.0:
            raise ValueError(f"temperature must be in [0, 100], got {self.temperature}")
        if not isinstance(self.top_k, int) or self.top_k < 0:
            raise ValueError(f"top_k must be a non-negative integer, got {self.top_k!r}")
        if not 0.0 < self.top_p <= 1.0:
            raise ValueError(f"top_p must be in (0, 1], got {self.top_p}")

    @property
    def greedy(self) -> bool:
        return self.temperature == 0.0


@dataclass(frozen=True)
class Alternatives:
    """The most likely next tokens of one step, read from the distribution its token was drawn
    from (sampling_probs: temperature, top-k and top-p applied as the run samples; greedy: the
    softmax of the logits, whose argmax it takes). Only tokens of probability > 0 are kept, so
    a top-k or top-p cut can leave fewer than TOP_ALTERNATIVES."""
    ids: tuple            # token ids, most likely first
    probs: tuple          # their probabilities (floats), in the same order
    chosen_prob: float    # the probability of the token the step took, in or out of `ids`


@dataclass
class Step:
    index: int                 # 0 for the first generated token
    token_id: int
    position: int              # absolute position the token will occupy
    phase: str                 # "prefill" (first token: the prompt's forward) or "decode"
    latency_s: float           # wall time of this step's forward + sampling
    tokens_processed: int      # tokens fed to the model in this step (T of the forward)
    score_entries: int         # query-key scores computed this step, all layers and heads
    cache_bytes: list = field(default_factory=list)    # per layer, filled slots of K and V
    cache_lengths: list = field(default_factory=list)  # per layer, tokens held
    logits: Optional[torch.Tensor] = None              # (V,) fp32 on CPU, when keep_logits
    alternatives: Optional[Alternatives] = None        # top TOP_ALTERNATIVES of the step
    finished: Optional[str] = None                     # "eos" | "length" on the last step


def sampling_probs(logits: torch.Tensor, params: SamplingParams) -> torch.Tensor:
    """logits (V,) -> the (V,) fp32 distribution a token is drawn from: the logits divided by
    the temperature, cut to the top-k, softmaxed, cut to the top-p nucleus and renormalised.
    Greedy (temperature 0) draws nothing: its distribution is the softmax of the logits
    themselves (temperature 1, no cut), whose argmax it takes."""
    if params.greedy:
        return torch.softmax(logits.float(), dim=-1)
    logits = logits.float() / params.temperature
    if params.top_k:
        kth = torch.topk(logits, min(params.top_k, logits.numel())).values[-1]
        logits = logits.masked_fill(logits < kth, float("-inf"))
    probs = torch.softmax(logits, dim=-1)
    if params.top_p < 1.0:
        sorted_probs, order = torch.sort(probs, descending=True)
        # keep the smallest prefix whose mass reaches top_p (the first token always stays)
        drop = (sorted_probs.cumsum(-1) - sorted_probs) >= params.top_p
        sorted_probs[drop] = 0.0
        probs = torch.zeros_like(probs).scatter(0, order, sorted_probs)
        probs = probs / probs.sum()
    return probs


def _choose(logits: torch.Tensor, params: SamplingParams, generator: Optional[torch.Generator]):
    """(token id, its distribution or None): the argmax of the logits when greedy (the
    distribution is not needed to choose), else a draw from sampling_probs."""
    if params.greedy:
        return int(torch.argmax(logits)), None
    probs = sampling_probs(logits, params)
    return int(torch.multinomial(probs, 1, generator=generator)), probs


def sample_next(logits: torch.Tensor, params: SamplingParams,
                generator: Optional[torch.Generator]) -> int:
    """logits (V,) -> token id: greedy, or temperature / top-k / top-p sampling."""
    return _choose(logits, params, generator)[0]


def top_alternatives(logits: torch.Tensor, params: SamplingParams, token: int,
                     probs: Optional[torch.Tensor] = None, k: int = TOP_ALTERNATIVES) -> Alternatives:
    """The k most likely tokens (probability > 0) of the distribution `token` was chosen from,
    and the probability of `token`: a topk over the vocabulary, nothing of it kept. `probs`:
    that distribution when the step drew from it; a greedy step, which drew nothing, has it
    made here (sampling_probs: one softmax, cheaper here than a log-sum-exp under two threads,
    ~1 ms against ~1.2 ms for Gemma's 262,144 logits on one)."""
    probs = sampling_probs(logits, params) if probs is None else probs
    values, ids = torch.topk(probs, min(k, probs.numel()))
    keep = values > 0
    return Alternatives(ids=tuple(ids[keep].tolist()), probs=tuple(values[keep].tolist()),
                        chosen_prob=float(probs[token]))


def greedy_choices(logits: torch.Tensor, k: int = TOP_ALTERNATIVES) -> list:
    """For several greedy runs at once: logits (B, V) -> per row (token id, Alternatives), the
    argmax and the top_alternatives that one row at a time would give, in one call each over
    the batch. A shared decode step emits every run's token: one row at a time, Gemma 3's
    262,144 logits cost ~1.8 ms a run (~55 ms of a 30-run step that itself takes ~100 ms);
    together, on the step's two threads, ~27 ms."""
    last = logits.float().cpu()
    tokens = torch.argmax(last, dim=-1)                                             # (B,)
    probs = torch.softmax(last, dim=-1)                                             # (B, V)
    values, ids = torch.topk(probs, min(k, probs.shape[-1]), dim=-1)                # (B, k)
    chosen = probs.gather(1, tokens[:, None])[:, 0]                                 # (B,)
    out = []
    for token, row_values, row_ids, prob in zip(tokens.tolist(), values, ids, chosen.tolist()):
        keep = row_values > 0
        out.append((token, Alternatives(ids=tuple(row_ids[keep].tolist()),
                                        probs=tuple(row_values[keep].tolist()), chosen_prob=prob)))
    return out


def new_generator(params: SamplingParams) -> Optional[torch.Generator]:
    """The random source of one run: None when greedy; else seeded by params.seed, or by a
    fresh seed when none is given. The fresh seed is the run's own generator's (Generator.seed):
    torch.seed() would reseed the generator every thread shares, under another thread that
    seeded it to build weights."""
    if params.greedy:
        return None
    generator = torch.Generator()
    if params.seed is None:
        generator.seed()
    else:
        generator.manual_seed(params.seed)
    return generator


def finish_reason(token: int, index: int, params: SamplingParams, eos: Collection[int]) -> Optional[str]:
    """Why the run ends after its token number `index` (0-based): "eos" for an end token,
    "length" at max_new_tokens, else None."""
    if token in eos:
        return "eos"
    return "length" if index == params.max_new_tokens - 1 else None


def next_step(logits: torch.Tensor, params: SamplingParams, generator: Optional[torch.Generator],
              eos: Collection[int], *, index: int, n_prompt: int, phase: str, forward_s: float,
              tokens_processed: int, score_entries: int, cache: Optional[KVCache],
              keep_logits: bool, step_type: Optional[type] = None,
              choice: Optional[tuple] = None, **fields) -> Step:
    """The run's Step number `index`: its token sampled from `logits` (V,) of the last fed
    position, at absolute position n_prompt + index; latency_s is `forward_s` (the forward
    that made the logits) plus the sampling; the cache's bytes and lengths as they are now
    (none without a cache); `alternatives`, the top TOP_ALTERNATIVES of the distribution the
    token was drawn from (after the latency is read: a greedy step computes it only for them);
    `finished` by finish_reason. `step_type` (a Step subclass, Step by default) is built with
    `fields` as its own extra fields. `choice`: (token id, Alternatives) already made for a
    greedy run (greedy_choices, with the batch it decoded in; its time is in forward_s). One
    definition for a run decoded alone (generate) and one decoded in a shared batch
    (explorer.serving)."""
    t0 = time.perf_counter()
    last = logits.float().cpu()
    if choice is not None:
        if not params.greedy:
            raise ValueError("a choice made beforehand is a greedy run's")
        token, alternatives = choice
        latency = forward_s
    else:
        token, probs = _choose(last, params, generator)
        latency = forward_s + (time.perf_counter() - t0)
        alternatives = top_alternatives(last, params, token, probs)
    return (step_type or Step)(
        index=index, token_id=token, position=n_prompt + index, phase=phase, latency_s=latency,
        tokens_processed=tokens_processed, score_entries=score_entries,
        cache_bytes=cache.used_bytes() if cache is not None else [],
        cache_lengths=cache.lengths() if cache is not None else [],
        logits=last if keep_logits else None, alternatives=alternatives,
        finished=finish_reason(token, index, params, eos), **fields)


def check_prompt(model: CausalLM, n_prompt: int, max_new_tokens: int) -> None:
    if n_prompt == 0:
        raise ValueError("the prompt is empty: give the model at least one token")
    limit = model.config.max_position_embeddings
    if n_prompt + max_new_tokens > limit:
        raise ValueError(f"prompt ({n_prompt} tokens) + max_new_tokens ({max_new_tokens}) exceeds "
                         f"the model's context of {limit} tokens")


@torch.inference_mode()
def generate(model: CausalLM, prompt_ids: Sequence[int], params: SamplingParams = SamplingParams(), *,
             options: Optional[RunOptions] = None, use_cache: bool = True,
             eos_ids: Optional[Sequence[int]] = None, keep_logits: bool = False,
             should_stop: Optional[Callable[[], bool]] = None,
             decoder: Optional[Decoder] = None) -> Iterator[Step]:
    """Yield one Step per generated token. `should_stop` is polled between steps.
    The prompt goes through `decoder.prefill`, every later token through `decoder.step`
    (models.decoder: the engine's forward by default, EagerDecoder(model, options); or
    StaticDecoder, FusedDecoder, whose run options are then the decoder's). With
    use_cache=False (the eager engine only) every step prefills the whole sequence without a
    cache: the baseline of claim C1."""
    ids = [int(i) for i in prompt_ids]
    n_prompt = len(ids)
    check_prompt(model, len(ids), params.max_new_tokens)
    if decoder is None:
        decoder = EagerDecoder(model, options)
    else:
        if decoder.model is not model or not use_cache:
            raise ValueError("a decoder decodes with the KV cache of its own model")
        if options is not None and decode_options(options) != decoder.options:
            raise ValueError("pass the run options to the decoder, not to generate()")
    eos = set(model.config.eos_token_ids if eos_ids is None else eos_ids)
    generator = new_generator(params)
    cache = decoder.new_cache(len(ids) + params.max_new_tokens) if use_cache else None
    for index in range(params.max_new_tokens):
        if should_stop is not None and should_stop():
            return
        t0 = time.perf_counter()
        if index == 0 or cache is None:
            n_fed = len(ids)
            logits = decoder.prefill(ids, cache)   # the prompt; without a cache, everything
        else:
            n_fed = 1
            logits = decoder.step(ids[-1], cache)
        scores = decoder.scores_per_step(cache)
        step = next_step(logits[0, -1], params, generator, eos, index=index, n_prompt=n_prompt,
                         phase="prefill" if index == 0 else "decode",
                         forward_s=time.perf_counter() - t0, tokens_processed=n_fed,
                         score_entries=scores, cache=cache, keep_logits=keep_logits)
        ids.append(step.token_id)
        yield step
        if step.finished:
            return


def full_forward_logits(model: CausalLM, ids: Sequence[int], options: Optional[RunOptions] = None) -> torch.Tensor:
    """Logits (T, V) of one forward over the whole sequence, no cache: the reference that
    cached decoding must reproduce (claim C4)."""
    with torch.inference_mode():
        x = torch.tensor([list(ids)], dtype=torch.long, device=model.embed.weight.device)
        options = dataclasses.replace(options or RunOptions(), last_logits_only=False)
        return model(x, options=options)[0].float().cpu()
