"""The Next token tab's two runs as typed results (figures.py draws them, in either language).

- `distribution`: one forward of the prompt (distribution.predict), the model's top rows and
  what the sampler with the controls' temperature / top-k / top-p keeps of them
  (distribution.keep, the Generate tab's sampling_probs); `resample` applies other controls to
  the same logits without a forward; `with_samples` adds seeded continuations
  (models.generate.generate, the Generate tab's sampler).
- `lens`: the same forward read through the logit lens (lens.read): the layer x position chart,
  the rank and probability of each of the model's top tokens through depth, the agreement with
  the final prediction by depth, and the check that the lens's last layer is the model's own
  logits (`last_layer_exact`, claim C21; `agreement_rises`, claim C22).

Inputs are checked here (explorer/inputs.py) before any work; the prompt is bounded by
distribution.MAX_PROMPT_TOKENS through explorer.prompts.encode.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, replace
from typing import Any, Optional

import numpy as np
import torch

from explorer.inputs import InputError, finite_number, whole_number
from explorer.locales import Term
from explorer.nexttoken import distribution as dist
from explorer.nexttoken import lens as lens_
from explorer.prompts import CHARS_PER_TOKEN_BOUND, encode, token_text
from models.generate import SamplingParams

MAX_PROMPT_CHARS = dist.MAX_PROMPT_TOKENS * CHARS_PER_TOKEN_BOUND   # checked before tokenizing
TOP_ROWS = 10              # the model's most likely tokens drawn as bars (and the lens's choices)
MAX_TEMPERATURE = 2.0      # the Generate tab's (explorer/generate/request.py)
MAX_TOP_K = 200
MIN_TOP_P = 0.05
MAX_SEED = 2**31 - 1
# C22: the lens agrees more with the final prediction deep than shallow. Over the kept
# positions, the mean agreement of the last third of the layers before the last (the last one
# agrees by construction) must exceed that of the first third by at least this much. Measured
# on the claim's text: SmolLM2 0.02 -> 0.62, Gemma 3 0.00 -> 0.47; a lens whose layers carried
# no prediction (a random model, a shuffled residual) stays near 0 in both.
MIN_AGREEMENT_RISE = 0.25


def model_title(loaded: Any) -> str:
    return getattr(loaded.spec, "title", loaded.name)


def shown(tokenizer: Any, token: int) -> str:
    """A token as text (explorer.prompts.token_text: newlines and tabs visible); a token of
    spaces alone shows them as ␣, so that it is not an empty label."""
    value = token_text(tokenizer, token)
    return value if value.strip() else value.replace(" ", "␣")


def check_prompt(tokenizer: Any, prompt: Any) -> list[int]:
    """The prompt's ids (the tokenizer's BOS first where it adds one): text checked, then at most
    MAX_PROMPT_TOKENS tokens."""
    return encode(tokenizer, prompt, dist.MAX_PROMPT_TOKENS, name=Term("inputs.name.prompt"))


def _between(value: Any, key: str, low: float, high: float) -> float:
    number = finite_number(value, Term(key))
    if not low <= number <= high:
        raise InputError("inputs.between", name=Term(key), low=low, high=high, value=number)
    return number


def check_sampling(temperature: Any, top_k: Any, top_p: Any) -> SamplingParams:
    """The controls as SamplingParams, each checked against the sliders' bounds."""
    t = _between(temperature, "next.dist.temperature", 0.0, MAX_TEMPERATURE)
    k = whole_number(top_k, Term("next.dist.top_k"), 0, MAX_TOP_K)
    p = _between(top_p, "next.dist.top_p", MIN_TOP_P, 1.0)
    return dist.sampling(t, k, p)


@dataclass(frozen=True)
class Continuation:
    seed: int
    text: str                  # the continuation, decoded
    first: str                 # its first token, visible
    first_p: float             # the first token's probability under the sampler's distribution


@dataclass(frozen=True)
class Distribution:
    name: str                  # registry name
    title: str                 # model title
    device: str
    prediction: dist.Prediction
    rows: tuple[dist.Row, ...]          # the model's TOP_ROWS most likely, before and after the cut
    rest_model: float
    rest_kept: float
    labels: tuple[str, ...]             # the rows' tokens, visible
    model_entropy: float                # bits, the model's distribution (temperature 1, no cut)
    kept: dist.Kept
    top_text: str                       # the model's top token, visible
    samples: tuple[Continuation, ...] = ()
    sample_params: Optional[SamplingParams] = None
    sample_tokens: int = 0

    @property
    def kept_shown(self) -> int:
        """How many of the drawn rows the sampler keeps."""
        return sum(row.kept_p > 0 for row in self.rows)


def distribution(loaded: Any, prompt: Any, temperature: Any, top_k: Any, top_p: Any) -> Distribution:
    params = check_sampling(temperature, top_k, top_p)
    ids = check_prompt(loaded.tokenizer, prompt)
    prediction = dist.predict(loaded.model, ids)
    tokenizer = loaded.tokenizer
    top = torch.topk(prediction.logits, min(TOP_ROWS, prediction.logits.numel())).indices
    labels = tuple(shown(tokenizer, int(t)) for t in top)
    kept = dist.keep(prediction.logits, params)
    rows, rest_model, rest_kept = dist.top_rows(prediction, kept, TOP_ROWS)
    return Distribution(name=loaded.name, title=model_title(loaded), device=str(loaded.device),
                        prediction=prediction, rows=rows, rest_model=rest_model, rest_kept=rest_kept,
                        labels=labels, model_entropy=dist.entropy_bits(prediction.probs), kept=kept,
                        top_text=labels[0])


def resample(result: Distribution, temperature: Any, top_k: Any, top_p: Any) -> Distribution:
    """The same logits under other controls: no forward, only the sampler's cut again."""
    params = check_sampling(temperature, top_k, top_p)
    kept = dist.keep(result.prediction.logits, params)
    rows, _, rest_kept = dist.top_rows(result.prediction, kept, TOP_ROWS)
    return replace(result, kept=kept, rows=rows, rest_kept=rest_kept)


def check_samples(n: Any, seed: Any, n_new: Any) -> tuple[int, int, int]:
    return (whole_number(n, Term("next.dist.n"), 1, dist.MAX_SAMPLES),
            whole_number(seed, Term("next.dist.seed"), 0, MAX_SEED),
            whole_number(n_new, Term("next.dist.tokens"), 1, dist.MAX_SAMPLE_TOKENS))


def with_samples(loaded: Any, result: Distribution, n: int, seed: int, n_new: int) -> Distribution:
    """n continuations of the prompt drawn with the result's sampler, seeds seed, seed + 1, ..."""
    params = replace(result.kept.params, max_new_tokens=n_new)
    drawn = dist.samples(loaded.model, result.prediction, params, n, seed)
    tokenizer = loaded.tokenizer
    continuations = tuple(Continuation(s.seed, tokenizer.decode(list(s.tokens)), shown(tokenizer, s.tokens[0]),
                                       s.first_p) for s in drawn)
    return replace(result, samples=continuations, sample_params=params, sample_tokens=n_new)


# ----------------------------------------------------------------------------- the logit lens

@dataclass(frozen=True)
class Lens:
    name: str
    title: str
    device: str
    n_tokens: int
    n_layers: int
    positions: tuple[str, ...]          # the kept positions' labels "position: token"
    cells: tuple[tuple[str, ...], ...]  # (L + 1, P) the lens's top token at each layer, visible
    chart: lens_.LensChart
    ranks: lens_.Ranks                  # of the model's TOP_ROWS tokens, at the last position
    choices: tuple[str, ...]            # those tokens, visible
    chosen: int                         # index into ranks.tokens drawn (0: the model's top)
    agreement: np.ndarray               # (L + 1,) share of kept positions agreeing with the last layer
    max_difference: float               # max |lens at layer L - the model's logits|, last position
    bit_equal: bool                     # torch.equal of the two
    forward_seconds: float
    lens_seconds: float

    @property
    def lead(self) -> Optional[int]:
        return self.ranks.lead_layer(self.chosen)


def lens(loaded: Any, prompt: Any) -> Lens:
    ids = check_prompt(loaded.tokenizer, prompt)
    model, tokenizer = loaded.model, loaded.tokenizer
    prediction = dist.predict(model, ids)
    top = [int(t) for t in torch.topk(prediction.logits, min(TOP_ROWS, prediction.logits.numel())).indices]
    t0 = time.perf_counter()
    read = lens_.read(model, prediction, top)
    last = lens_.layer_logits(model, prediction, prediction.n_layers)
    seconds = time.perf_counter() - t0
    kept_ids = prediction.ids[prediction.lens_first:]
    names: dict[int, str] = {}

    def name(token: int) -> str:
        if token not in names:
            names[token] = shown(tokenizer, token)
        return names[token]

    positions = tuple(f"{prediction.lens_first + i}: {name(t)}" for i, t in enumerate(kept_ids))
    cells = tuple(tuple(name(int(t)) for t in row) for row in read.chart.top)
    return Lens(name=loaded.name, title=model_title(loaded), device=str(loaded.device), n_tokens=len(ids),
                n_layers=prediction.n_layers, positions=positions, cells=cells, chart=read.chart,
                ranks=read.ranks, choices=tuple(name(t) for t in top), chosen=0,
                agreement=lens_.agreement(read.chart, read.chart.top[-1]),
                max_difference=float((last - prediction.logits).abs().max()),
                bit_equal=bool(torch.equal(last, prediction.logits)),
                forward_seconds=prediction.seconds, lens_seconds=seconds)


def choose(result: Lens, index: Any) -> Lens:
    """The lens drawn for another of the model's top tokens (no forward)."""
    i = whole_number(index, Term("next.lens.token"), 0, len(result.ranks.tokens) - 1)
    return replace(result, chosen=i)


def last_layer_exact(result: Lens) -> bool:
    """C21: the lens's last layer is the model's logits, bit for bit."""
    return result.bit_equal and result.max_difference == 0.0


@dataclass(frozen=True)
class Thirds:
    first: float               # mean agreement over layers 0 .. third - 1
    last: float                # ... over layers L - third .. L - 1 (the last, L, agrees by construction)
    third: int


def thirds(agreement: np.ndarray) -> Thirds:
    n_layers = len(agreement) - 1
    third = max(1, n_layers // 3)
    return Thirds(float(np.mean(agreement[:third])), float(np.mean(agreement[n_layers - third:n_layers])), third)


def agreement_rises(result: Lens) -> bool:
    """C22: the last third's agreement exceeds the first third's by MIN_AGREEMENT_RISE."""
    split = thirds(result.agreement)
    return split.last - split.first >= MIN_AGREEMENT_RISE
