"""The Next token tab on tiny random models (tests/conftest.py): the logit lens's last layer is the
model's logits exactly, the batched lens reads what one row at a time reads, `keep` is the
Generate tab's sampling_probs, the figures and summaries read the result, the claims' criteria
fail on broken results, and the tab's handlers refuse bad inputs before any work."""
from __future__ import annotations

from dataclasses import replace
from types import SimpleNamespace

import gradio as gr
import numpy as np
import pytest
import torch

from explorer.inputs import InputError
from explorer.lessons import LESSONS, reading
from explorer.nexttoken import distribution as dist
from explorer.nexttoken import evidence, figures, lens, runs
from explorer.ui.tabs import next_token as tab
from models.generate import SamplingParams, sampling_probs
from tests.unit.test_a11y_alt import check_alternatives


class CharTokenizer:
    """One token per character (code mod the vocabulary), a BOS of 1 first."""

    def __init__(self, vocab: int):
        self.vocab = vocab

    def __call__(self, text, add_special_tokens=True):
        ids = [3 + ord(ch) % (self.vocab - 3) for ch in text]
        return {"input_ids": ([1] if add_special_tokens else []) + ids}

    def decode(self, ids, skip_special_tokens=False):
        return "".join(chr(96 + int(i) % 26) if int(i) > 2 else "" for i in ids)


def loaded_of(model, name="tiny"):
    return SimpleNamespace(name=name, spec=SimpleNamespace(title=f"Tiny {name}"), model=model,
                           tokenizer=CharTokenizer(model.config.vocab_size), device=torch.device("cpu"),
                           config=model.config)


class OneModel:
    """A Runtime with one model."""

    def __init__(self, loaded):
        self.loaded = loaded

    def get(self, name, progress=None):
        if name != self.loaded.name:
            from explorer.runtime import UnknownModelError
            raise UnknownModelError(f"Unknown model {name!r}.")
        return self.loaded


@pytest.fixture(scope="module", params=["llama", "gemma3"])
def both(request, tiny):
    """Each family (Gemma's head has the final softcap where its config has one)."""
    return loaded_of(tiny[request.param], request.param)


@pytest.fixture(scope="module")
def tiny_loaded(tiny):
    return loaded_of(tiny["llama"], "llama")


PROMPT = "the cat sat on the mat and then"


def test_the_lens_last_layer_is_the_logits_exactly(both):
    tiny_loaded = both
    prediction = dist.predict(tiny_loaded.model, tiny_loaded.tokenizer(PROMPT)["input_ids"])
    last = lens.layer_logits(tiny_loaded.model, prediction, prediction.n_layers)
    assert torch.equal(last, prediction.logits)
    result = runs.lens(tiny_loaded, PROMPT)
    assert result.bit_equal and result.max_difference == 0.0 and runs.last_layer_exact(result)
    assert evidence.c21_from(result).passed


def test_the_batched_lens_reads_what_one_row_at_a_time_reads(both):
    tiny_loaded = both
    prediction = dist.predict(tiny_loaded.model, tiny_loaded.tokenizer(PROMPT)["input_ids"])
    tokens = torch.topk(prediction.logits, 5).indices.tolist()
    read = lens.read(tiny_loaded.model, prediction, tokens)
    L, P = prediction.n_layers, prediction.resid.shape[1]
    assert read.chart.top.shape == (L + 1, P) and P == dist.LENS_POSITIONS
    for layer in range(L + 1):
        one = lens.layer_logits(tiny_loaded.model, prediction, layer)
        p = torch.softmax(one, dim=-1)
        assert read.ranks.top[layer] == int(one.argmax()) == read.chart.top[layer, -1]
        assert np.allclose(read.ranks.prob[layer], p[tokens].double().numpy(), atol=1e-6)
        assert list(read.ranks.rank[layer]) == [int((one > one[t]).sum()) for t in tokens]
        rows = tiny_loaded.model.head(prediction.resid[layer].unsqueeze(0))[0]
        assert list(read.chart.top[layer]) == rows.argmax(-1).tolist()
        assert np.allclose(read.chart.top_p[layer], torch.softmax(rows, -1).max(-1).values.double().numpy(),
                           atol=1e-6)
    # the final top token leads at the last layer at least
    assert read.ranks.lead_layer(0) is not None and read.ranks.rank[-1, 0] == 0


def test_blocks_of_layers_cover_every_layer_once(tiny_loaded, monkeypatch):
    prediction = dist.predict(tiny_loaded.model, tiny_loaded.tokenizer(PROMPT)["input_ids"])
    whole = lens.read(tiny_loaded.model, prediction, [5, 7])
    monkeypatch.setattr(lens, "CHUNK_ROWS", 1)        # one layer per call
    blocks = lens._layer_blocks(prediction)
    assert [list(b) for b in blocks] == [[i] for i in range(prediction.n_layers + 1)]
    apart = lens.read(tiny_loaded.model, prediction, [5, 7])
    assert np.array_equal(whole.chart.top, apart.chart.top) and np.array_equal(whole.ranks.rank, apart.ranks.rank)
    assert np.allclose(whole.chart.top_p, apart.chart.top_p, atol=1e-6)


@pytest.mark.parametrize("t, k, p", [(1.0, 0, 1.0), (0.7, 5, 0.9), (1.5, 0, 0.5), (0.3, 3, 1.0), (2.0, 200, 0.05)])
def test_keep_is_the_generate_tabs_sampler(tiny_loaded, t, k, p):
    logits = torch.randn(tiny_loaded.model.config.vocab_size, generator=torch.Generator().manual_seed(3))
    params = SamplingParams(temperature=t, top_k=k, top_p=p)
    kept = dist.keep(logits, params)
    assert torch.equal(kept.probs, sampling_probs(logits, params))
    assert kept.n_kept == int((kept.probs > 0).sum())
    if k:
        assert kept.n_kept <= k


def test_greedy_keeps_the_argmax_alone(tiny_loaded):
    result = runs.distribution(tiny_loaded, PROMPT, 0, 0, 1.0)
    assert result.kept.n_kept == 1 and result.kept.entropy_bits == 0.0
    assert result.rows[0].kept_p == 1.0 and all(row.kept_p == 0 for row in result.rows[1:])


def test_resample_recomputes_the_cut_on_the_same_logits(tiny_loaded):
    result = runs.distribution(tiny_loaded, PROMPT, 1.0, 0, 1.0)
    assert result.kept.n_kept == tiny_loaded.model.config.vocab_size
    assert abs(result.kept.entropy_bits - result.model_entropy) < 1e-9
    cut = runs.resample(result, 0.8, 4, 1.0)
    assert cut.prediction is result.prediction and cut.kept.n_kept == 4
    expected = sampling_probs(result.prediction.logits, SamplingParams(temperature=0.8, top_k=4))
    assert [row.kept_p for row in cut.rows] == [float(expected[row.token]) for row in cut.rows]
    assert [row.model_p for row in cut.rows] == [row.model_p for row in result.rows]
    assert abs(sum(row.kept_p for row in cut.rows) + cut.rest_kept - 1) < 1e-6


def test_samples_are_seeded_and_read_their_first_tokens_probability(tiny_loaded):
    result = runs.resample(runs.distribution(tiny_loaded, PROMPT, 1.0, 0, 1.0), 1.2, 0, 1.0)
    a = runs.with_samples(tiny_loaded, result, 2, 7, 2)
    b = runs.with_samples(tiny_loaded, result, 2, 7, 2)
    assert [s.text for s in a.samples] == [s.text for s in b.samples]
    assert [s.seed for s in a.samples] == [7, 8]
    for s in a.samples:
        assert 0 < s.first_p <= 1
    greedy = runs.with_samples(tiny_loaded, runs.resample(result, 0, 0, 1.0), 3, 7, 2)
    assert len(greedy.samples) == 1 and greedy.samples[0].first_p == 1.0


def test_figures_and_summaries_read_the_result_in_both_languages(tiny_loaded):
    result = runs.resample(runs.distribution(tiny_loaded, PROMPT, 1.0, 0, 1.0), 0.5, 3, 1.0)
    result = runs.with_samples(tiny_loaded, result, 2, 0, 1)
    for lang in ("en", "zh"):
        fig, summary, table, samples = figures.draw_distribution(result, lang)
        bars = fig.data
        assert list(bars[0].x) == [r.model_p for r in result.rows] + [result.rest_model]
        assert list(bars[1].x) == [r.kept_p for r in result.rows] + [result.rest_kept]
        assert f"{result.kept.n_kept}" in summary and f"{result.model_entropy:.2f}" in summary
        assert table.count("\n") == len(result.rows) + 2 and samples.count("\n") == 2
    assert "keeps **3 tokens**" in figures.distribution_summary(result, "en")
    assert "保留 **3 个词元**" in figures.distribution_summary(result, "zh")
    lensed = runs.lens(tiny_loaded, PROMPT)
    for lang in ("en", "zh"):
        heatmap, ranks, summary = figures.draw_lens(lensed, lang)
        assert np.array_equal(np.asarray(heatmap.data[0].z), lensed.chart.top_p)
        assert list(ranks.data[0].y) == (lensed.ranks.rank[:, 0] + 1).tolist()
        assert list(ranks.data[2].y) == lensed.agreement.tolist()
        assert "**0**" in summary                                  # the last-layer check
        assert check_alternatives((heatmap, ranks), lang, "next.lens") == 2
    for lang in ("en", "zh"):
        assert check_alternatives(figures.distribution_figures(result, lang), lang, "next.dist") == 1
    other = runs.choose(lensed, 3)
    assert other.chosen == 3 and figures.lens_ranks(other, "en").data[0].y[-1] == lensed.ranks.rank[-1, 3] + 1


def test_the_claims_criteria_fail_on_broken_results(tiny_loaded):
    result = runs.lens(tiny_loaded, PROMPT)
    off = replace(result, bit_equal=False, max_difference=2.0 ** -20)
    assert not runs.last_layer_exact(off) and not evidence.c21_from(off).passed
    n = result.n_layers + 1
    rising = replace(result, agreement=np.linspace(0, 1, n))
    flat = replace(result, agreement=np.r_[np.full(n - 1, 0.3), 1.0])
    falling = replace(result, agreement=np.r_[np.linspace(1, 0, n - 1), 1.0])
    assert runs.agreement_rises(rising) and evidence.c22_from(rising).passed
    assert not runs.agreement_rises(flat) and not runs.agreement_rises(falling)
    split = runs.thirds(np.array([0.0, 0.1, 0.2, 0.5, 0.6, 0.9, 1.0]))    # L = 6: thirds of 2
    assert (split.third, split.first, split.last) == (2, pytest.approx(0.05), pytest.approx(0.75))


def test_the_lessons_readers_take_the_numbers_from_the_run(tiny_loaded):
    steps = LESSONS["next-token"].steps
    first = runs.distribution(tiny_loaded, PROMPT, 1.0, 0, 1.0)
    assert reading(steps[0], first)["p"] == round(100 * first.rows[0].model_p, 2)
    assert reading(steps[1], first) is None                     # T = 1 is not the temperature step's run
    cold = runs.resample(first, 0.5, 0, 1.0)
    fields = reading(steps[1], cold)
    assert fields["kept_p"] == round(100 * cold.rows[0].kept_p, 2) and fields["t"] == 0.5
    lensed = runs.lens(tiny_loaded, PROMPT)
    fields = reading(steps[2], lensed)
    assert fields["answer"] == lensed.lead and fields["layers"] == lensed.n_layers and fields["exact"] == "✓"
    assert reading(steps[2], first) is None and reading(steps[0], lensed) is None


BAD_SAMPLING = [(float("nan"), 0, 1.0), (-0.1, 0, 1.0), (2.5, 0, 1.0), (1.0, -1, 1.0), (1.0, 2.5, 1.0),
                (1.0, 201, 1.0), (1.0, 0, 0.0), (1.0, 0, 1.5), ("hot", 0, 1.0), (1.0, 0, float("inf")), (None, 0, 1)]


@pytest.mark.parametrize("t, k, p", BAD_SAMPLING)
def test_the_handlers_refuse_bad_sampling_before_any_work(t, k, p):
    class NoModel:
        def get(self, *args, **kwargs):
            raise AssertionError("a refused request must not load a model")

    with pytest.raises(gr.Error):
        tab.distribution(NoModel(), "tiny", "en", PROMPT, t, k, p)
    with pytest.raises(InputError):
        runs.check_sampling(t, k, p)


def test_the_handlers_refuse_bad_prompts_tokens_and_states(tiny_loaded):
    runtime = OneModel(tiny_loaded)
    name = tiny_loaded.name
    for prompt in ("", "   ", None, 12, "x" * (runs.MAX_PROMPT_CHARS + 1), "ab" * (dist.MAX_PROMPT_TOKENS)):
        with pytest.raises(gr.Error):
            tab.distribution(runtime, name, "en", prompt, 1.0, 0, 1.0)
        with pytest.raises(gr.Error):
            tab.lens(runtime, name, "zh", prompt)
    with pytest.raises(gr.Error, match="Unknown model"):
        tab.lens(runtime, "nope", "en", PROMPT)
    result = tab.distribution(runtime, name, "en", PROMPT, 1.0, 0, 1.0).result
    for n, seed, n_new in ((0, 0, 4), (7, 0, 4), (2, -1, 4), (2, 2**31, 4), (2, 0, 0), (2, 0, 25), (2, 0.5, 4)):
        with pytest.raises(gr.Error):
            tab.sample(runtime, "en", result, n, seed, n_new)
    with pytest.raises(gr.Error, match="Run the model first"):
        tab.sample(runtime, "en", None, 2, 0, 4)
    with pytest.raises(gr.Error):
        tab.resample("en", result, float("nan"), 0, 1.0)
    assert all(isinstance(v, type(gr.skip())) for v in tab.resample("en", None, 1.0, 0, 1.0))
    lensed = tab.lens(runtime, name, "en", PROMPT).result
    for index in (-1, runs.TOP_ROWS, 1.5, "x", None):
        with pytest.raises(gr.Error):
            tab.choose("en", lensed, index)
    ranks, summary, chosen = tab.choose("zh", lensed, 2)
    assert chosen.chosen == 2 and "核对" in summary
