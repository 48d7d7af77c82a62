"""What each weight precision of the decode step costs and buys, measured on the loaded model
(issue 30, the Generate tab's "Precision" section; bench/precision.py for the benchmark).

Decoding one token reads every weight once (claim C2), so a step's time follows the bytes it
reads: fp32 is 4 bytes a weight, bf16 2, int8 in Q8_0's blocks 1.125, and the checkpoint's own
GGUF codes 1.125-1.5 where it has them (engine/quantized.py). For each precision, on
the loaded model and this device:

- bytes read per token: every matrix of the step as its copy holds it plus the KV
  cache it reads at the prompt's context, in its stored elements (explorer/generate/step_cost.py,
  the count the roofline and C2 use);
- the roofline's tokens/s: the device's measured bandwidth (explorer/generate/device_roof.py)
  over those bytes, the most that reading them allows;
- measured tokens/s: greedy decode of `new_tokens` from the Generate tab's default prompt
  through the fused step with that precision's weights, the precisions interleaved round by
  round (a change of the machine's load hits all alike); ratio = median over rounds of the
  rate over fp32's in the same round;
- the price: teacher-forced over a fixed evaluation text (`evaluation_ids`: the model's BOS
  where its tokenizer begins a text with one, then the first tokens of the passage SHOWN_TEXT
  of explorer.texts), against fp32's logits at every position: top-1 agreement, max |delta
  logit|, perplexity; and the greedy continuation of the prompt, side by side. The text is not
  held out (the Python reference is likely in the models' pretraining data), and it is not the
  passage the served default was chosen on (CHOICE_TEXT, bench/precision.py): the price shown
  is measured on another text than the choice. A position is a near tie
  when fp32's two best logits lie within NEAR_TIE of each other: there a small change of the
  logits swaps them, so each precision's disagreements are counted with how many fall on near
  ties (bf16's on Gemma 3 all do: bench/precision_parts.py).

And the KV cache's precision (engine/kv_quant.py: fp32, bf16, int8 with a scale per token and
head): the evaluation text through the engine's forward into a cache of each format, every query
attending over the keys and values as that cache stores them; bytes per token read from the
stored tensors (C3's formula with the element size, plus int8's scales) and the same price
against the fp32 cache's logits.

`pick(rows)` is the rule the served default follows: the fastest precision whose top-1
agreement with fp32 is at least AGREEMENT (fp32 always qualifies).

Why the BOS: Gemma 3 was trained on texts that begin with <bos>; scored without it, its fp32
perplexity over the window this section used to show was 93.6, with it about 25. SmolLM2's
tokenizer begins a plain text with no BOS (its bos_token, <|im_start|>, opens a chat turn), so
its texts are scored as it reads them, without one.
"""
from __future__ import annotations

import statistics
import time
from dataclasses import dataclass
from typing import Any, NamedTuple, Optional, Sequence

import torch

from explorer import texts
from explorer.attention import TimeLimitReached, check_deadline
from explorer.generate.step_cost import step_shape
from explorer.inputs import InputError

NEW_TOKENS = 32          # tokens timed per precision and round
QUALITY_TOKENS = 256     # evaluation tokens scored per precision (each mismatch 0.4%, under the 1% bar)
ROUNDS = 2
CONTINUATION = 24        # tokens of each precision's greedy continuation shown
AGREEMENT = 0.99         # the served default's bound on top-1 agreement with fp32
NEAR_TIE = 0.5           # fp32's two best logits within this: a near tie (about 1.6x in probability)
# Two passages of explorer.texts.long_text, by heading: the served default of each checkpoint
# was chosen on the first (bench/precision.py, explorer/checkpoints/registry.py), and this
# section shows each precision's price on the second, so that what it shows is not the text
# the choice was fitted to
CHOICE_TEXT = texts.EXECUTION_MODEL
SHOWN_TEXT = texts.IMPORT_STATEMENT


class Price(NamedTuple):
    """What a precision costs over the evaluation text, against fp32's logits."""
    top1: float                   # share of positions whose argmax is fp32's
    max_dlogit: float             # max |logit - fp32's| over every position and token
    perplexity: float             # over the evaluation text
    flips: int                    # positions whose argmax is another token than fp32's
    near_tie_flips: int           # of those, positions that are near ties for fp32


@dataclass(frozen=True)
class PrecisionRow:
    weights: str                  # "fp32" | "bf16" | "int8" | "gguf"
    path: str                     # the product path on this CPU, e.g. "int8 (AVX512_VNNI)"
    weight_bytes: int             # bytes of matrices one decode token reads
    kv_bytes: int                 # bytes of KV cache it reads at the prompt's context
    predicted: Optional[float]    # tokens/s the roofline allows (None: no roof measured)
    measured: float               # median tokens/s over the rounds
    ratio: float                  # median over rounds of measured / fp32's in the same round
    top1: float                   # top-1 agreement with fp32 over the evaluation text
    max_dlogit: float             # max |logit - fp32's| over those positions
    perplexity: float             # over the evaluation text
    continuation: str             # greedy continuation of the prompt
    flips: int = 0                # evaluation positions where its top-1 is not fp32's
    near_tie_flips: int = 0       # of those, near ties for fp32 (NEAR_TIE)

    @property
    def bytes_per_token(self) -> int:
        return self.weight_bytes + self.kv_bytes


@dataclass(frozen=True)
class KVRow:
    kv_format: str                # "fp32" | "bf16" | "int8"
    bytes_per_token: float        # of the stored cache tensors, every layer, per token held
    top1: float                   # against the fp32 cache's logits over the evaluation text
    max_dlogit: float
    perplexity: float
    flips: int = 0
    near_tie_flips: int = 0


@dataclass(frozen=True)
class PrecisionResult:
    model: str
    rows: tuple                   # PrecisionRow per precision, fp32 first
    prompt_tokens: int
    new_tokens: int
    quality_tokens: int
    rounds: int
    bandwidth: Optional[float]    # bytes/s of the device roof used for `predicted`
    serving: str                  # the precision the decode steps of this server read
    threads: int
    kv_rows: tuple = ()           # KVRow per KV cache format, fp32 first
    near_ties: int = 0            # evaluation positions where fp32's two best logits are within NEAR_TIE
    text: str = SHOWN_TEXT        # the passage scored (explorer.texts heading)
    bos: bool = False             # scored after the model's BOS token (evaluation_ids)


def pick(rows: Sequence[PrecisionRow], bound: float = AGREEMENT) -> str:
    """The fastest precision (by measured ratio) whose top-1 agreement is >= bound."""
    allowed = [r for r in rows if r.weights == "fp32" or r.top1 >= bound]
    return max(allowed, key=lambda r: r.ratio).weights


def text_bos(tokenizer) -> Optional[int]:
    """The BOS id `tokenizer` begins a plain text with (Gemma's <bos>), or None where it begins
    one with none (SmolLM2: its bos_token opens a chat turn, and a text goes in without it):
    explorer.prompts.encode's plain text, as the model reads one."""
    bos = getattr(tokenizer, "bos_token_id", None)
    if bos is None:
        return None
    first = tokenizer("a")["input_ids"][:1]
    return int(bos) if first == [bos] else None


def evaluation_ids(tokenizer, heading: str, tokens: int) -> list:
    """The ids a precision is scored over: the model's BOS where its tokenizer begins a text
    with one (text_bos), then the passage `heading` of explorer.texts from its start, `tokens`
    of its tokens scored (position i predicts ids[i + 1]: after a BOS every token of the
    window, else all but its first). At most `tokens` + 1 ids; the passage is cut to a bound
    in characters before the tokenizer sees it (explorer.prompts.CHARS_PER_TOKEN_BOUND)."""
    from explorer.prompts import CHARS_PER_TOKEN_BOUND

    text = texts.passage(heading)[:(tokens + 1) * CHARS_PER_TOKEN_BOUND]
    ids = [int(i) for i in tokenizer(text)["input_ids"]]
    bos = text_bos(tokenizer)
    if bos is None:
        return ids[:tokens + 1]
    if ids[:1] == [bos]:
        ids = ids[1:]
    return [bos] + ids[:tokens]


def _decoders(model) -> dict:
    from engine import quantized
    from engine.fused import FusedDecoder
    from models.forward import RunOptions

    options = RunOptions(last_logits_only=True)
    return {w: FusedDecoder(model, options, weights=w) for w in quantized.available_weights(model)}


def greedy_rate(decoder, ids: list, new_tokens: int) -> tuple[float, list]:
    """(tokens/s of the decode steps, the greedy tokens) from `ids`."""
    cache = decoder.new_cache(len(ids) + new_tokens + 1)
    logits = decoder.prefill(ids, cache)[0, -1]
    tokens = []
    start = time.perf_counter()
    for _ in range(new_tokens):
        tokens.append(int(logits.argmax()))
        logits = decoder.step(tokens[-1], cache)[0, -1]
    return new_tokens / (time.perf_counter() - start), tokens


def teacher_forced(decoder, ids: Sequence[int], deadline: Any = None) -> torch.Tensor:
    """(len(ids) - 1, V) logits: position i predicts ids[i + 1], each fed through the step.
    `deadline`: an explorer.attention.Deadline checked every 32 steps, or None."""
    cache = decoder.new_cache(len(ids) + 1)
    out = [decoder.prefill(list(ids[:1]), cache)[0, -1]]
    for i, token in enumerate(ids[1:-1]):
        if i % 32 == 31:
            check_deadline(deadline, i, len(ids) - 2)
        out.append(decoder.step(int(token), cache)[0, -1])
    return torch.stack(out)


def near_ties(reference: torch.Tensor) -> torch.Tensor:
    """(positions,) bool: fp32's two best logits within NEAR_TIE of each other."""
    best = reference.topk(2, dim=-1).values
    return (best[:, 0] - best[:, 1]) < NEAR_TIE


def quality(logits: dict, ids: Sequence[int]) -> dict:
    """{precision: Price} over `ids`, each against logits["fp32"]."""
    target = torch.tensor(list(ids[1:]))
    reference = logits["fp32"]
    near = near_ties(reference)
    found = {}
    for name, values in logits.items():
        nll = torch.nn.functional.cross_entropy(values, target)
        flips = values.argmax(-1) != reference.argmax(-1)
        found[name] = Price(1.0 - flips.float().mean().item(), (values - reference).abs().max().item(),
                            float(torch.exp(nll)), int(flips.sum()), int((flips & near).sum()))
    return found


def kv_quality(model, ids: Sequence[int]) -> tuple:
    """KVRow per KV format: `ids` through the engine's forward into a cache of that format."""
    from engine.kv_quant import KV_FORMATS, quant_cache
    from models.forward import RunOptions

    logits, held = {}, {}
    batch = torch.tensor([list(ids)])
    for kv_format in KV_FORMATS:
        cache = quant_cache(model.config, model.layer_masks(), len(ids) + 1, kv_format)
        logits[kv_format] = model(batch, cache=cache, options=RunOptions())[0, :-1].float()
        held[kv_format] = sum(cache.used_bytes()) / len(ids)
    scored = quality(logits, ids)
    return tuple(KVRow(f, held[f], *scored[f]) for f in KV_FORMATS)


def run(loaded, *, new_tokens: int = NEW_TOKENS, quality_tokens: int = QUALITY_TOKENS,
        rounds: int = ROUNDS, roof: Any = None, prompt: Optional[str] = None,
        deadline: Any = None) -> PrecisionResult:
    """Every precision on `loaded` (explorer.runtime.LoadedModel; see the module doc). `roof`: a
    device_roof.DeviceRoof for the prediction, or None (no prediction). `deadline`: an
    explorer.attention.Deadline checked between steps, or None."""
    from explorer.prompts import encode
    from engine import quantized

    if loaded.device.type != "cpu" or loaded.dtype != torch.float32:
        raise InputError("precision.err.device")
    ids = encode(loaded.tokenizer, prompt or _default_prompt(), 512, chat=True)
    try:
        decoders = _decoders(loaded.model)
    except ValueError as error:      # a family the fused kernel does not cover
        raise InputError("precision.err.model", reason=str(error)) from None
    # the measurement runs in the long runs' group and ends itself by `deadline` (Deadline.check
    # between steps), told in its own words rather than the attention experiments'
    try:
        with torch.inference_mode():
            for decoder in decoders.values():            # weights copied, kernel bound, caches warm
                greedy_rate(decoder, ids[:8], 2)
            rates = {w: [] for w in decoders}
            tokens = {}
            for _ in range(rounds):
                for w, decoder in decoders.items():
                    check_deadline(deadline, len(rates[w]), rounds)
                    rate, out = greedy_rate(decoder, ids, new_tokens)
                    rates[w].append(rate)
                    tokens.setdefault(w, out)
            evaluated = evaluation_ids(loaded.tokenizer, SHOWN_TEXT, quality_tokens)
            logits = {w: teacher_forced(d, evaluated, deadline) for w, d in decoders.items()}
            scored = quality(logits, evaluated)
            ties = int(near_ties(logits["fp32"]).sum())
            check_deadline(deadline, len(evaluated), len(evaluated))
            kv_rows = kv_quality(loaded.model, evaluated)
    except TimeLimitReached:
        raise InputError("precision.err.time_limit", s=deadline.seconds) from None
    bandwidth = getattr(roof, "bandwidth", None)
    rows = []
    for w in decoders:
        # the one account of a decode step (step_cost): the matrices as this precision's copies
        # hold them, the KV cache in its stored elements at the prompt's context
        shape = step_shape(loaded.model, w)
        weight_bytes = shape.matrix_bytes
        kv = shape.kv_bytes_per_slot * sum(shape.held(len(ids)))
        price = scored[w]
        rows.append(PrecisionRow(
            weights=w, path=quantized.path_label(w), weight_bytes=weight_bytes, kv_bytes=kv,
            predicted=bandwidth / (weight_bytes + kv) if bandwidth else None,
            measured=statistics.median(rates[w]),
            ratio=statistics.median(a / b for a, b in zip(rates[w], rates["fp32"])),
            top1=price.top1, max_dlogit=price.max_dlogit, perplexity=price.perplexity,
            continuation=loaded.tokenizer.decode(tokens[w][:CONTINUATION]),
            flips=price.flips, near_tie_flips=price.near_tie_flips))
    return PrecisionResult(model=getattr(loaded.spec, "title", loaded.name), rows=tuple(rows),
                           prompt_tokens=len(ids), new_tokens=new_tokens,
                           quality_tokens=len(evaluated) - 1, rounds=rounds, bandwidth=bandwidth,
                           serving=quantized.configured_weights(loaded.model), threads=torch.get_num_threads(),
                           kv_rows=kv_rows, near_ties=ties, text=SHOWN_TEXT,
                           bos=text_bos(loaded.tokenizer) is not None)


def _default_prompt() -> str:
    from explorer.generate.request import DEFAULT_PROMPT   # the Generate tab's own
    return DEFAULT_PROMPT
