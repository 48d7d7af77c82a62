"""Changing the base of the real model (claim C13): perplexity per position on the long text, one
forward per base, the model as trained always first. The NLL is computed from the final hidden
states, a bounded block of rows through the LM head at a time, so a forward never holds all
(T, V) logits (Gemma's V = 262,144 at 2,048 tokens would be 2 GB). `steps` yields between two
forwards, so whoever drives it can stop there, and a time limit ends it with the bases measured;
`perplexity_rises` is the criterion of the summary and of the claims board (C13)."""
from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass
from typing import Callable, Iterator, Optional, Sequence, Union

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import torch
import torch.nn.functional as F

from explorer.inputs import InputError, choice, whole_number
from explorer.locales import Term, text
from explorer.plotting import Fig, colors
from explorer.rope.capture import capped_ids
from explorer.rope.frequencies import MAX_BASES, base_label, check_base
from models.config import SLIDING
from models.forward import RunOptions

MIN_SWEEP_TOKENS = 128     # the tab's slider: 128 .. 2048 tokens
MAX_SWEEP_TOKENS = 2048
APPLY_TO = ("full", "sliding", "all")   # which layers a changed base applies to
LOGIT_BLOCK_BYTES = 64 * 2**20          # one (rows, V) fp32 block of logits at a time
N_BINS = 4                              # perplexity per quarter of the text
SMOOTHING = 64                          # the chart's trailing mean, tokens

# Sweep key of the unmodified model when no single base is "the trained one" (never a valid base).
UNMODIFIED = 0.0

# A changed base "raises the perplexity" when it is at least this much above the trained one's,
# over the whole text and over its last quarter (the farthest positions, where a slower
# rotation's longer reach would help if the base alone gave it). The forward is deterministic,
# so 1% is a real change, not noise. At 1,024 tokens a 10x base on every layer measured +17%
# (last quarter +19%) on SmolLM2 and x10.9 (x22.7) on Gemma 3; a visitor's smaller base, 10k
# on SmolLM2's full layers over 128 tokens, +13% (last quarter +3.5%).
PPL_RISE_MIN = 0.01

# progress(done, total, key): `done` of `total` forwards finished, the next one's sweep key
Progress = Callable[[int, int, float], None]


# ============================================================================ which layers, which base

def check_apply_to(config, apply_to) -> str:
    apply_to = choice(apply_to, Term("rope.name.apply"), APPLY_TO)
    if apply_to == "sliding" and SLIDING not in config.layer_types:
        raise InputError("rope.err.no_sliding")
    return apply_to


def base_options(config, base: float, apply_to: str) -> RunOptions:
    """RunOptions that change the RoPE base of the chosen layers and leave the rest as trained."""
    base = check_base(base)
    apply_to = check_apply_to(config, apply_to)
    has_sliding = SLIDING in config.layer_types
    if apply_to == "full":
        return RunOptions(rope_theta=base)
    if apply_to == "sliding":
        return RunOptions(rope_local_theta=base)
    return RunOptions(rope_theta=base, rope_local_theta=base if has_sliding else None)


def trained_base(config, apply_to: str) -> Optional[float]:
    """The base the chosen layers were trained with; None when they were trained with two
    (apply_to="all" on Gemma-3: 10k local, 1M global), where no single base reproduces them."""
    local = config.rope_local_theta or config.rope_theta
    if apply_to == "sliding":
        return float(local)
    if apply_to == "all" and SLIDING in config.layer_types and local != config.rope_theta:
        return None
    return float(config.rope_theta)


def trained_options(config, apply_to: str) -> RunOptions:
    trained = trained_base(config, apply_to)
    return RunOptions() if trained is None else base_options(config, trained, apply_to)


def trained_base_pair(config) -> tuple[float, float]:
    """(sliding-layer base, full-layer base) the model was trained with."""
    return float(config.rope_local_theta or config.rope_theta), float(config.rope_theta)


def trained_text(trained: Optional[float], pair: tuple[float, float], lang: str) -> str:
    """"100k (trained)", or both of Gemma's bases when no single one is the trained one."""
    if trained is None:
        return text("rope.fig.as_trained", lang, local=base_label(pair[0]), full=base_label(pair[1]))
    return text("rope.fig.trained", lang, base=base_label(trained))


def key_label(config, apply_to: str, key: float, lang: str) -> str:
    """A sweep key as shown: the trained label for the model as trained, else the base."""
    trained = trained_base(config, apply_to)
    reference = UNMODIFIED if trained is None else trained
    return trained_text(trained, trained_base_pair(config), lang) if key == reference else base_label(key)


# ============================================================================ NLL

def logit_rows(vocab_size: int) -> int:
    """Rows of logits per block so that one (rows, V) fp32 block fits LOGIT_BLOCK_BYTES."""
    return max(1, LOGIT_BLOCK_BYTES // (4 * vocab_size))


@torch.inference_mode()
def nll_per_position(model, ids: Sequence[int], options: Optional[RunOptions] = None) -> torch.Tensor:
    """Negative log-likelihood (nats) of token t+1 given tokens 0..t, for t = 0..T-2: (T-1,).
    One forward to the final hidden states (B, T, d); the LM head and cross-entropy then run on
    blocks of rows, so at most one (rows, V) block of logits exists at a time."""
    options = dataclasses.replace(options or RunOptions(), last_logits_only=False)
    x = torch.tensor([list(ids)], device=model.embed.weight.device)
    hidden = model(x, options=options, stop_at_layer=model.config.n_layers)[0, :-1]   # (T-1, d)
    targets = x[0, 1:]                                                                 # (T-1,)
    rows = logit_rows(model.config.vocab_size)
    out = []
    for start in range(0, len(targets), rows):
        logits = model.head(hidden[start:start + rows]).float()                         # (rows, V)
        out.append(F.cross_entropy(logits, targets[start:start + rows], reduction="none"))
    return torch.cat(out).cpu()


# ============================================================================ the experiment

@dataclass(frozen=True)
class Sweep:
    bases: tuple[float, ...]       # sweep keys: bases, or UNMODIFIED for the model as trained (first)
    trained: Optional[float]       # the trained base of the chosen layers (None: two bases)
    trained_pair: tuple[float, float]   # (sliding, full) trained bases: label the reference row
    apply_to: str
    nll: dict                      # key -> (T-1,) tensor of nats
    seconds: dict                  # key -> forward seconds
    n_tokens: int
    model_title: str = ""
    planned: tuple[float, ...] = ()      # every key asked for; more than `bases` when time ran out
    time_limit_s: Optional[float] = None
    context: Optional[int] = None        # the model's context (config.max_position_embeddings)

    @property
    def timed_out(self) -> bool:
        return len(self.planned) > len(self.bases)

    @property
    def reference(self) -> float:
        return UNMODIFIED if self.trained is None else self.trained

    def label(self, key: float, lang: str) -> str:
        return trained_text(self.trained, self.trained_pair, lang) if key == self.reference else base_label(key)

    def perplexity(self, key: float) -> float:
        return float(torch.exp(self.nll[key].mean()))

    def bin_edges(self) -> np.ndarray:
        return np.linspace(0, self.n_tokens - 1, N_BINS + 1).round().astype(int)

    def binned_perplexity(self, key: float) -> list[float]:
        """Perplexity over each quarter of the predicted positions."""
        edges, nll = self.bin_edges(), self.nll[key]
        return [float(torch.exp(nll[lo:hi].mean())) for lo, hi in zip(edges[:-1], edges[1:])]


@dataclass(frozen=True)
class SweepStep:
    """Progress between two forwards: `done` of `total` finished, `key` runs next."""
    done: int
    total: int
    key: float


def steps(model, tokenizer, text_in: str, bases: Sequence[float], apply_to: str = "full", n_tokens=1024,
          model_title: str = "", time_limit_s: Optional[float] = None) -> Iterator[Union[SweepStep, Sweep]]:
    """The sweep one forward at a time: a SweepStep before each forward, the Sweep last. The model
    as trained always comes first (the trained base, or both of Gemma's bases). Whoever drives
    it can stop between forwards by not asking for the next item (a closed generator runs no
    more forwards); past `time_limit_s` from the start no further forward begins, and the Sweep
    holds the bases measured so far (`timed_out`). Every input is checked before the first."""
    started = time.monotonic()
    config = model.config
    n_tokens = whole_number(n_tokens, Term("rope.name.tokens"), MIN_SWEEP_TOKENS, MAX_SWEEP_TOKENS)
    if isinstance(bases, str) or not bases:
        raise InputError("rope.err.no_bases")
    if len(bases) > MAX_BASES:
        raise InputError("rope.err.too_many_bases", limit=MAX_BASES, n=len(bases))
    bases = [check_base(b) for b in bases]
    for base in bases:
        base_options(config, base, apply_to)  # every input checked before the slow part
    trained = trained_base(config, apply_to)
    reference = UNMODIFIED if trained is None else trained
    keys = tuple(dict.fromkeys([reference] + bases))
    ids = capped_ids(tokenizer, text_in, n_tokens)
    if len(ids) < MIN_SWEEP_TOKENS:
        raise InputError("rope.err.few_tokens", n=len(ids), least=MIN_SWEEP_TOKENS)
    nll, seconds = {}, {}
    for index, key in enumerate(keys):
        # the model as trained always runs: every row is compared with it
        if index > 0 and time_limit_s is not None and time.monotonic() - started >= time_limit_s:
            break
        yield SweepStep(index, len(keys), key)
        options = trained_options(config, apply_to) if key == reference else base_options(config, key, apply_to)
        start = time.perf_counter()
        nll[key] = nll_per_position(model, ids, options)
        seconds[key] = time.perf_counter() - start
    yield Sweep(bases=tuple(nll), trained=trained, trained_pair=trained_base_pair(config), apply_to=apply_to,
                nll=nll, seconds=seconds, n_tokens=len(ids), model_title=model_title, planned=keys,
                time_limit_s=time_limit_s, context=config.max_position_embeddings)


def run(model, tokenizer, text_in: str, bases: Sequence[float], apply_to: str = "full",
        n_tokens=1024, progress: Optional[Progress] = None, model_title: str = "",
        time_limit_s: Optional[float] = None) -> Sweep:
    """One forward of the first `n_tokens` tokens of `text_in` per base, NLL per position for each
    (`steps` driven to the end; `progress(done, total, next key)` before each forward)."""
    for item in steps(model, tokenizer, text_in, bases, apply_to, n_tokens, model_title, time_limit_s):
        if isinstance(item, Sweep):
            if progress is not None:
                progress(len(item.bases), len(item.planned), item.bases[-1])
            return item
        if progress is not None:
            progress(item.done, item.total, item.key)
    raise AssertionError("steps() ends with its Sweep")


# ============================================================================ the criterion (C13, second half)

def perplexity_ratios(result: Sweep) -> dict:
    """Changed key -> its perplexity ÷ the model as trained."""
    trained = result.perplexity(result.reference)
    return {key: result.perplexity(key) / trained for key in result.bases if key != result.reference}


def far_ratios(result: Sweep) -> dict:
    """Changed key -> its perplexity over the last quarter of the text ÷ the model as trained's."""
    trained = result.binned_perplexity(result.reference)[-1]
    return {key: result.binned_perplexity(key)[-1] / trained
            for key in result.bases if key != result.reference}


def perplexity_rises(result: Sweep) -> bool:
    """C13: every changed base measured raises the perplexity by at least PPL_RISE_MIN over the
    whole text and over its last quarter (and at least one was measured)."""
    ratios, far = perplexity_ratios(result), far_ratios(result)
    return bool(ratios) and all(min(ratios[key], far[key]) >= 1.0 + PPL_RISE_MIN for key in ratios)


def moving_average(values: np.ndarray, window: int) -> np.ndarray:
    """Trailing mean over `window` values, shorter at the start."""
    window = max(1, min(window, len(values)))
    cumulative = np.cumsum(np.insert(values, 0, 0.0))
    index = np.arange(len(values))
    low = np.maximum(0, index - window + 1)
    return (cumulative[index + 1] - cumulative[low]) / (index + 1 - low)


def figures(result: Sweep, lang: str) -> tuple[go.Figure]:
    """NLL per position (trailing mean over SMOOTHING tokens), one line per base, the model as
    trained dashed black."""
    fig = Fig()
    ordered = sorted(result.bases)
    palette = dict(zip(ordered, colors(len(ordered))))
    for base in ordered:
        nll = result.nll[base].numpy()
        trained = base == result.reference
        name = text("rope.fig.base", lang, base=result.label(base, lang))
        fig.add_scatter(
            x=np.arange(1, len(nll) + 1), y=moving_average(nll, SMOOTHING), mode="lines", name=name,
            line=dict(color="black" if trained else palette[base], width=3 if trained else 2,
                      dash="dash" if trained else "solid"),
            hovertemplate=text("rope.fig.sweep_hover", lang, name=name, window=SMOOTHING) + "<extra></extra>")
    fig.update_xaxes(title_text=text("rope.fig.predicted_position", lang))
    fig.update_yaxes(title_text=text("rope.fig.nll_axis", lang, window=SMOOTHING), type="log")
    return (fig.finish("", height=420, lang=lang),)


def table(result: Sweep, lang: str) -> pd.DataFrame:
    """Per base: perplexity, perplexity per quarter of the text, mean NLL against the model as
    trained, seconds; headers in `lang`."""
    edges = result.bin_edges()
    reference = result.nll[result.reference].mean()
    rows = []
    for key in result.bases:
        row = {text("rope.col.base", lang): result.label(key, lang),
               text("rope.col.ppl", lang): round(result.perplexity(key), 4)}
        for (lo, hi), ppl in zip(zip(edges[:-1], edges[1:]), result.binned_perplexity(key)):
            row[text("rope.col.ppl_range", lang, lo=lo + 1, hi=hi)] = round(ppl, 4)
        row[text("rope.col.delta", lang)] = round(float(result.nll[key].mean() - reference), 4)
        row[text("rope.col.seconds", lang)] = round(result.seconds[key], 4)
        rows.append(row)
    return pd.DataFrame(rows)


def summary(result: Sweep, lang: str) -> str:
    """The trained base's perplexity, the lowest one in the sweep, whether every changed base
    raised it (the C13 criterion), whether any larger base did better in the last quarter of
    the text (where a longer reach would help), and a time limit that cut the sweep short."""
    ppl = {key: result.perplexity(key) for key in result.bases}
    last_quarter = {key: result.binned_perplexity(key)[-1] for key in result.bases}
    best = min(ppl, key=ppl.get)
    reference = result.reference
    larger = [b for b in result.bases if result.trained is not None and b > result.trained]
    if larger:
        items = ", ".join(f"{base_label(b)} → {ppl[b]:.2f}" for b in sorted(larger))
        better = [b for b in larger if last_quarter[b] < last_quarter[reference]]
        if better:
            gain = max(1 - last_quarter[b] / last_quarter[reference] for b in better)
            verdict = text("rope.base.some_better", lang, which=", ".join(base_label(b) for b in better),
                           gain=gain)
        else:
            closest = min(larger, key=lambda b: last_quarter[b])
            verdict = text("rope.base.none_better", lang, closest=base_label(closest),
                           ratio=last_quarter[closest] / last_quarter[reference])
        larger_text = text("rope.base.larger", lang, items=items, verdict=verdict)
    else:
        larger_text = text("rope.base.no_larger", lang)
    out = text("rope.base.result", lang, model=result.model_title,
               apply=text(f"rope.base.apply.{result.apply_to}", lang), tokens=result.n_tokens,
               trained=result.label(reference, lang), trained_ppl=ppl[reference],
               best=result.label(best, lang), best_ppl=ppl[best], larger=larger_text)
    ratios, far = perplexity_ratios(result), far_ratios(result)
    if ratios:
        least = {key: min(ratios[key], far[key]) for key in ratios}
        low, high = min(least, key=least.get), max(least, key=least.get)
        below = [key for key in ratios if least[key] < 1.0 + PPL_RISE_MIN]
        if perplexity_rises(result):
            rise = text("rope.base.rise.all", lang, n=len(ratios), rise=PPL_RISE_MIN, low=least[low],
                        low_base=base_label(low), high=least[high], high_base=base_label(high))
        else:
            rise = text("rope.base.rise.not_all", lang, n=len(below), total=len(ratios), rise=PPL_RISE_MIN,
                        items=", ".join(f"{base_label(key)} (×{ratios[key]:.3f}, ×{far[key]:.3f})"
                                        for key in below))
        out += "\n\n" + rise
    if result.timed_out:
        left = [base_label(key) for key in result.planned if key not in result.nll]
        out += "\n\n" + text("rope.base.timed_out", lang, limit=result.time_limit_s or 0.0,
                              done=len(result.bases), total=len(result.planned), left=", ".join(left))
    return out
