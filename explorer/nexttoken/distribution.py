"""The next-token distribution of a prompt, on our own modules.

One forward of the prompt (no cache, fp32 eager: the textbook path of models/) gives the last
position's logits; the same forward records every block's residual stream at the last
LENS_POSITIONS positions (a Recorder hook keeps only those rows), which the logit lens reads
(explorer/nexttoken/lens.py) with no second forward.

What a sampler keeps of the distribution is `models.generate.sampling_probs`, the function the
Generate tab draws its tokens from: the logits over the temperature, cut to the top-k, softmaxed,
cut to the top-p nucleus and renormalised. Greedy (temperature 0) keeps the argmax alone.
Sampled continuations are `models.generate.generate` runs with seeds seed, seed + 1, ...: the
same seed gives the same continuation, on this page and in the Generate tab.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, replace
from typing import Sequence

import torch

from models.forward import CausalLM, Recorder, RunOptions
from models.generate import SamplingParams, generate, sampling_probs

LENS_POSITIONS = 12       # last positions whose residual streams are kept for the lens chart
MAX_PROMPT_TOKENS = 256   # a prompt's tokens (one forward, every block recorded at 12 rows)
MAX_SAMPLES = 6           # seeded continuations one request may draw
MAX_SAMPLE_TOKENS = 24    # tokens per continuation


@dataclass(frozen=True)
class Prediction:
    """One forward's next-token facts. `resid[l]` is the residual stream entering the final norm
    if the model stopped after l blocks: l = 0 the embeddings, l = L the last block's output
    (what the model's own head reads). Rows are the positions lens_first .. T-1."""
    ids: tuple[int, ...]          # the prompt's token ids
    logits: torch.Tensor          # (V,) fp32: the model's own logits at the last position
    resid: torch.Tensor           # (L + 1, P, d) fp32, P = min(T, LENS_POSITIONS)
    lens_first: int               # position of resid[:, 0]
    seconds: float                # the forward's wall time
    dtype: str                    # the forward's precision ("float32")

    @property
    def n_layers(self) -> int:
        return self.resid.shape[0] - 1

    @property
    def probs(self) -> torch.Tensor:
        """(V,) the model's distribution: the softmax of its logits (temperature 1, no cut)."""
        return torch.softmax(self.logits, dim=-1)


def _last_rows(value: torch.Tensor, layer: int) -> torch.Tensor:
    return value[0, -LENS_POSITIONS:].float()                    # (B, T, d) -> (P, d)


@torch.inference_mode()
def predict(model: CausalLM, ids: Sequence[int]) -> Prediction:
    """The forward of `ids` (checked by the caller: 1..MAX_PROMPT_TOKENS ids of the model's
    vocabulary). last_logits_only: the head reads the last row alone, (1, 1, d), the shape the
    lens's last layer reads it in, so the two are the same arithmetic."""
    ids = tuple(int(i) for i in ids)
    if not 1 <= len(ids) <= MAX_PROMPT_TOKENS:
        raise ValueError(f"a prompt of 1..{MAX_PROMPT_TOKENS} tokens, got {len(ids)}")
    recorder = Recorder(["embed", "resid"], hooks={"embed": _last_rows, "resid": _last_rows})
    x = torch.tensor([ids], dtype=torch.long, device=model.embed.weight.device)
    t0 = time.perf_counter()
    logits = model(x, options=RunOptions(last_logits_only=True), recorder=recorder)  # (1, 1, V)
    seconds = time.perf_counter() - t0
    rows = [recorder.get("embed", 0)] + [recorder.get("resid", i) for i in range(model.config.n_layers)]
    resid = torch.stack(rows)                                     # (L + 1, P, d)
    return Prediction(ids=ids, logits=logits[0, -1].float().cpu(), resid=resid,
                      lens_first=len(ids) - resid.shape[1], seconds=seconds,
                      dtype=str(model.embed.weight.dtype).removeprefix("torch."))


@dataclass(frozen=True)
class Kept:
    """What a sampler with `params` keeps of a distribution: `probs` (V,) renormalised over the
    kept tokens (0 elsewhere), how many it keeps, and the entropy of what it draws from."""
    params: SamplingParams
    probs: torch.Tensor
    n_kept: int
    entropy_bits: float


def sampling(temperature: float, top_k: int, top_p: float, seed=None, max_new: int = 1) -> SamplingParams:
    """The SamplingParams of the controls (its own checks: finite temperature in [0, 100],
    top_k >= 0, top_p in (0, 1])."""
    return SamplingParams(max_new_tokens=max_new, temperature=float(temperature), top_k=int(top_k),
                          top_p=float(top_p), seed=seed)


def keep(logits: torch.Tensor, params: SamplingParams) -> Kept:
    """The sampler's distribution: sampling_probs (the Generate tab's); greedy takes the argmax,
    so it keeps that one token with probability 1."""
    if params.greedy:
        probs = torch.zeros_like(logits, dtype=torch.float32)
        probs[int(torch.argmax(logits))] = 1.0
    else:
        probs = sampling_probs(logits, params)
    return Kept(params, probs, int((probs > 0).sum()), entropy_bits(probs))


def entropy_bits(probs: torch.Tensor) -> float:
    """H = -sum p log2 p over the tokens of probability > 0."""
    p = probs[probs > 0].double()
    return float(-(p * torch.log2(p)).sum()) + 0.0


@dataclass(frozen=True)
class Row:
    token: int
    model_p: float        # under the model's own distribution (temperature 1, no cut)
    kept_p: float         # under the sampler's (0: cut)


def top_rows(prediction: Prediction, kept: Kept, k: int) -> tuple[tuple[Row, ...], float, float]:
    """The k most likely tokens of the model, each with its probability before and after the
    sampler's cut, and the rest of the mass in both (what the figure draws as one bar)."""
    probs = prediction.probs
    values, order = torch.topk(probs, min(k, probs.numel()))
    rows = tuple(Row(int(t), float(p), float(kept.probs[t])) for t, p in zip(order, values))
    rest_model = max(0.0, 1.0 - float(values.double().sum()))
    rest_kept = max(0.0, 1.0 - sum(r.kept_p for r in rows))
    return rows, rest_model, rest_kept


@dataclass(frozen=True)
class Sample:
    seed: int
    tokens: tuple[int, ...]
    first_p: float        # probability of its first token under the sampler's distribution


@torch.inference_mode()
def samples(model: CausalLM, prediction: Prediction, params: SamplingParams, n: int,
            seed: int) -> tuple[Sample, ...]:
    """n continuations of the prompt, run i drawn with seed + i (greedy: one, every run would
    be the same). Each is models.generate's decode with the KV cache, as the Generate tab's."""
    if not 1 <= n <= MAX_SAMPLES or not 1 <= params.max_new_tokens <= MAX_SAMPLE_TOKENS:
        raise ValueError(f"1..{MAX_SAMPLES} samples of 1..{MAX_SAMPLE_TOKENS} tokens")
    kept = keep(prediction.logits, params)
    out = []
    for i in range(1 if params.greedy else n):
        run = replace(params, seed=seed + i)
        tokens = tuple(step.token_id for step in generate(model, prediction.ids, run))
        out.append(Sample(seed + i, tokens, float(kept.probs[tokens[0]])))
    return tuple(out)

