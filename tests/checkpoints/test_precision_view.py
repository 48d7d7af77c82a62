"""The Generate tab's precision section (explorer/generate/precision.py, precision_figures.py,
explorer/ui/tabs/generate_precision.py): every precision of the fused step measured on the loaded
model, its bytes and roofline beside the measured speed, its price against fp32, and the rule
the served default follows. The page in Chromium: tests/browser/test_browser_precision.py."""
from __future__ import annotations

import math

import pytest
import torch

from explorer.generate import precision, precision_figures
from explorer.inputs import InputError


def row(weights, ratio, top1, **kw):
    fields = dict(weights=weights, path=weights, weight_bytes=100, kv_bytes=10, predicted=None,
                  measured=10.0 * ratio, ratio=ratio, top1=top1, max_dlogit=0.1, perplexity=10.0,
                  continuation="x")
    fields.update(kw)
    return precision.PrecisionRow(**fields)


def test_the_rule_picks_the_fastest_precision_close_enough_to_fp32():
    fp32 = row("fp32", 1.0, 1.0)
    assert precision.pick([fp32, row("bf16", 1.6, 0.995), row("int8", 2.0, 0.91)]) == "bf16"
    assert precision.pick([fp32, row("bf16", 1.6, 0.99), row("int8", 2.0, 0.999)]) == "int8"
    assert precision.pick([fp32, row("bf16", 1.6, 0.95), row("int8", 2.0, 0.91)]) == "fp32"
    # a precision slower than fp32 is never the pick, however exact
    assert precision.pick([fp32, row("bf16", 0.8, 1.0)]) == "fp32"


def test_quality_reads_agreement_delta_and_perplexity_off_the_logits():
    ids = [0, 1, 2, 1, 0]                               # position i predicts ids[i + 1]
    ref = torch.tensor([[0.0, 5.0, 0.0], [0.0, 0.0, 5.0], [0.0, 5.0, 0.0], [4.8, 5.0, 0.0]])
    other = ref.clone()
    other[2] = torch.tensor([5.0, 0.0, 0.0])            # a clear fp32 choice changed
    other[3] = torch.tensor([5.0, 4.8, 0.0])            # a near tie of fp32's (0.2 apart) swapped
    found = precision.quality({"fp32": ref, "int8": other}, ids)
    assert found["fp32"][:2] == (1.0, 0.0) and found["fp32"].flips == 0
    top1, dlogit, ppl, flips, near = found["int8"]
    assert top1 == pytest.approx(2 / 4) and dlogit == 5.0
    assert (flips, near) == (2, 1)
    nll = torch.nn.functional.cross_entropy(other, torch.tensor(ids[1:]))
    assert ppl == pytest.approx(math.exp(float(nll)))
    assert precision.near_ties(ref).tolist() == [False, False, False, True]


class CharTokenizer:
    """One id per character. `bos`: its bos_token_id; `adds`: whether it begins every text with
    it (Gemma's tokenizer does; SmolLM2's has a bos_token, <|im_start|>, and adds none)."""
    chat_template = None

    def __init__(self, bos=None, adds=False):
        self.bos_token_id, self.adds = bos, adds

    def chars(self, text):
        return [10 + ord(c) % 200 for c in text]

    def __call__(self, text):
        return {"input_ids": ([self.bos_token_id] if self.adds else []) + self.chars(text)}

    def decode(self, ids):
        return "x"


class Scored(Exception):
    """Raised by the spy once it has the ids a run scores: the rest is not needed."""


def scored_ids(monkeypatch, tokenizer, tokens=48) -> list:
    """The ids precision.run teacher-forces each precision over, for `tokenizer`."""
    from types import SimpleNamespace

    class Decoder:                       # any logits: the greedy timing is not under test
        def new_cache(self, n):
            return None

        def prefill(self, ids, cache):
            return torch.zeros(1, 1, 8)

        step = prefill

    seen = []

    def spy(decoder, ids, deadline=None):
        seen.append(list(ids))
        raise Scored

    monkeypatch.setattr(precision, "_decoders", lambda model: {"fp32": Decoder()})
    monkeypatch.setattr(precision, "teacher_forced", spy)
    loaded = SimpleNamespace(device=torch.device("cpu"), dtype=torch.float32, tokenizer=tokenizer,
                             model=None, spec=None, name="x")
    with pytest.raises(Scored):
        precision.run(loaded, new_tokens=1, quality_tokens=tokens, rounds=1)
    return seen[0]


def test_the_price_is_scored_after_the_models_bos(monkeypatch):
    """Issue 40: a model whose tokenizer begins every text with a BOS (Gemma 3: perplexity 93.6
    over the old window without it, about 25 with it) is scored after that BOS, then the
    evaluation passage from its start, every one of its `tokens` tokens scored; a tokenizer
    that begins a text with none (SmolLM2, though it names a bos_token) gets none prepended."""
    gemma, smol = CharTokenizer(bos=2, adds=True), CharTokenizer(bos=1, adds=False)
    ids, plain = scored_ids(monkeypatch, gemma), scored_ids(monkeypatch, smol)
    assert ids[0] == 2 and len(ids) == 49 and 2 not in ids[1:]
    assert 1 not in plain and len(plain) == 49
    from explorer.texts import passage

    text = passage(precision.SHOWN_TEXT)
    assert ids[1:] == gemma.chars(text)[:48] and plain == smol.chars(text)[:49]
    assert precision.text_bos(gemma) == 2 and precision.text_bos(smol) is None
    assert precision.text_bos(CharTokenizer()) is None
    # the passage is cut before the tokenizer sees it: the work stays bounded
    assert len(precision.evaluation_ids(gemma, precision.SHOWN_TEXT, 8)) == 9


def test_the_price_is_shown_on_another_text_than_the_default_was_chosen_on(monkeypatch):
    """Issue 40: the served default was chosen on one fixed text (bench/precision.py and
    bench/precision_parts.py score CHOICE_TEXT); the section shows the price on another
    (SHOWN_TEXT): no scored window of one lies within the other."""
    import inspect

    from bench import precision as bench, precision_parts

    for module in (bench, precision_parts):
        source = inspect.getsource(module)
        assert "long_text()).input_ids" not in source      # the window both scored before
        assert "evaluation_ids(" in source and "CHOICE_TEXT" in source
    from explorer.texts import passage

    assert precision.CHOICE_TEXT != precision.SHOWN_TEXT
    choice, shown = passage(precision.CHOICE_TEXT), passage(precision.SHOWN_TEXT)
    window = "".join(chr(i - 10) for i in scored_ids(monkeypatch, CharTokenizer(), tokens=256))
    assert shown.startswith(window) and window not in choice and window[-64:] not in choice


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_section_calls_its_text_a_fixed_evaluation_text(lang):
    """The text is the Python reference, likely in the models' pretraining data: never "held
    out" in the section's words, in either language."""
    from explorer.locales import CATALOG, template

    words = " ".join(template(key, lang) for key in CATALOG.keys() if key.startswith("precision."))
    assert "held-out" not in words and "held out" not in words and "留出" not in words
    assert ("fixed evaluation text" in words) if lang == "en" else ("固定评测文本" in words)


@pytest.fixture(scope="module")
def measured(runtime):
    from explorer.generate import device_roof

    loaded = runtime.get(runtime.default_name)
    roof = device_roof.measure(loaded.device, loaded.dtype)
    return loaded, roof, precision.run(loaded, roof=roof, new_tokens=8, quality_tokens=48, rounds=1)


@pytest.mark.slow
def test_every_precision_measured_on_the_real_model(measured):
    from engine import quantized

    loaded, roof, result = measured
    # gguf too: the converted checkpoint keeps the GGUF's codes
    assert [r.weights for r in result.rows] == ["fp32", "bf16", "int8", "gguf"]
    fp32, bf16, int8, gguf = result.rows
    # bytes follow the format: 4, 2 and 1.125 bytes a weight of the same matrices; gguf 1.125
    # (SmolLM2's Q8_0 head: a scale per 32) to 1.25 (its Q4_1 matrices: an offset per 32 too)
    n = quantized.linear_bytes(loaded.model, "fp32") / 4
    assert (fp32.weight_bytes, bf16.weight_bytes, int8.weight_bytes) == (4 * n, 2 * n, int(1.125 * n))
    assert 1.125 * n < gguf.weight_bytes < 1.25 * n
    assert fp32.kv_bytes == bf16.kv_bytes > 0
    for r in result.rows:
        assert r.predicted == pytest.approx(roof.bandwidth / r.bytes_per_token)
        assert r.measured > 0 and r.path == quantized.path_label(r.weights)
        assert r.continuation.strip()
    # fp32 against itself is exact; the others pay a measured, nonzero price
    assert (fp32.top1, fp32.max_dlogit, fp32.ratio) == (1.0, 0.0, 1.0)
    assert bf16.max_dlogit > 0 and int8.max_dlogit > 0
    assert int8.max_dlogit > bf16.max_dlogit            # fewer bits, a larger rounding
    assert 0.5 < int8.top1 <= 1 and 0.5 < bf16.top1 <= 1
    # the codes are the fp32 weights: only the input's 15-bit rounding is left
    assert gguf.top1 == 1.0 and 0 < gguf.max_dlogit < bf16.max_dlogit
    assert result.quality_tokens == 48 and result.serving == quantized.configured_weights(loaded.model)
    # SmolLM2's tokenizer begins a text with no BOS: its passage is scored as it reads one
    assert result.text == precision.SHOWN_TEXT and result.bos is False
    # every differing position is counted, and the near ties among them are a part of it
    assert 0 <= result.near_ties <= result.quality_tokens
    for r in result.rows:
        assert r.flips == round((1 - r.top1) * result.quality_tokens)
        assert 0 <= r.near_tie_flips <= min(r.flips, result.near_ties)
    # the KV cache's formats: bytes from the stored tensors (C3 with the element size, int8's
    # scales on top), fp32 exact against itself, the others a measured price
    config = loaded.model.config
    kv = {r.kv_format: r for r in result.kv_rows}
    assert list(kv) == ["fp32", "bf16", "int8"]
    assert kv["fp32"].bytes_per_token == config.kv_bytes_per_token(4)
    assert kv["bf16"].bytes_per_token == config.kv_bytes_per_token(2)
    assert kv["int8"].bytes_per_token == config.kv_bytes_per_token(1) + 2 * config.n_layers * config.n_kv_heads * 4
    assert (kv["fp32"].top1, kv["fp32"].max_dlogit) == (1.0, 0.0)
    assert 0 < kv["bf16"].max_dlogit < kv["int8"].max_dlogit


@pytest.mark.slow
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_figures_and_summary_show_the_measured_numbers(measured, lang):
    _, roof, result = measured
    speed, price = precision_figures.figures(result, lang)
    bars = [t for t in speed.data if t.type == "bar"]
    assert list(bars[0].y) == [r.measured for r in result.rows]
    assert list(bars[1].y) == pytest.approx([r.predicted for r in result.rows])
    assert list(price.data[0].y) == pytest.approx([100 * r.top1 for r in result.rows])
    summary = precision_figures.summary(result, lang)
    chosen = precision.pick(result.rows)
    assert f"**{chosen}**" in summary and result.model in summary
    for r in result.rows:
        assert f"{r.measured:.1f}" in summary and f"{r.perplexity:.2f}" in summary
    assert ("picks" in summary) if lang == "en" else ("选出" in summary)
    for r in result.kv_rows:
        assert f"| {r.kv_format} | {r.bytes_per_token / 1e3:.1f} kB |" in summary
    for r in result.rows:
        assert f"| {r.flips} ({r.near_tie_flips}) |" in summary
    assert f"{result.near_ties}" in summary and ("near ties" in summary if lang == "en" else "近似平局" in summary)
    # the passage scored, and the other one the served default was chosen on, are named
    assert f"“{precision.SHOWN_TEXT}”" in summary and f"“{precision.CHOICE_TEXT}”" in summary
    assert ("with no BOS token" in summary) if lang == "en" else ("没有 BOS 词元" in summary)


def test_the_section_refuses_while_visitors_decode(monkeypatch):
    from explorer.ui.tabs import generate_precision

    class Loop:
        def load(self):
            return 3

    class Loaded:
        model = object()

    monkeypatch.setattr(generate_precision, "load_or_error", lambda *a, **k: Loaded())
    monkeypatch.setattr(generate_precision, "scheduler_for", lambda model: Loop())
    called = []
    monkeypatch.setattr(precision, "run", lambda *a, **k: called.append(1))
    with pytest.raises(Exception) as raised:
        generate_precision.measure.__wrapped__(None, "smollm2-135m-instruct", "en")
    assert isinstance(raised.value, InputError) or "class" in str(raised.value)
    assert not called


@pytest.mark.slow
@pytest.mark.parametrize("weights", ["bf16", "int8", "gguf"])
def test_c4_compares_a_quantized_run_like_with_like(measured, weights):
    """A run decoded on bf16 / int8 / gguf weights (fp32 prefill, then the fused step's products)
    against one forward over its tokens with the same products: within that precision's
    tolerance; a cache of the wrong tokens is far outside it."""
    from explorer.generate.checks import C4_TOLERANCES, logit_differences
    from engine.fused import FusedDecoder
    from models.forward import RunOptions

    loaded = measured[0]
    model = loaded.model
    ids = loaded.tokenizer("The cache holds the keys and values of every token so far.")["input_ids"]
    decoder = FusedDecoder(model, RunOptions(last_logits_only=True), weights=weights)
    with torch.inference_mode():
        cache = decoder.new_cache(len(ids) + 8)
        logits = [decoder.prefill(ids, cache)[0, -1]]
        tokens = []
        for _ in range(5):
            tokens.append(int(logits[-1].argmax()))
            logits.append(decoder.step(tokens[-1], cache)[0, -1])
    everything = ids + tokens + [int(logits[-1].argmax())]
    like = logit_differences(model, everything, len(ids), logits, weights=weights)
    assert len(like) == 6 and max(like) <= C4_TOLERANCES[weights], like
    assert like[0] <= 1e-4                      # the prompt's last row: fp32 on both sides
    # the same logits against another text's forward: what a broken cache would give
    other = everything[:len(ids)] + [(t + 1) % model.config.vocab_size for t in everything[len(ids):]]
    broken = logit_differences(model, other, len(ids), logits, weights=weights)
    assert max(broken[1:]) > 2 * C4_TOLERANCES[weights], broken


def test_the_measurement_ends_itself_at_its_deadline(runtime):
    """It runs in the long runs' group, where Gradio's time_limit does not end a click event:
    its own deadline, checked between steps, does (the message in both languages)."""
    from explorer.attention import Deadline

    loaded = runtime.get(runtime.default_name)
    with pytest.raises(InputError) as info:
        precision.run(loaded, new_tokens=2, quality_tokens=8, rounds=1, deadline=Deadline(0))
    assert info.value.key == "precision.err.time_limit"
    assert "180 s" in InputError("precision.err.time_limit", s=180).message("en")
    assert "180 秒" in info.value.__class__("precision.err.time_limit", s=180).message("zh")

