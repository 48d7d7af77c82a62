"""The Next token tab on both real checkpoints: the logit lens's last layer is the model's own
logits bit for bit (C21), the lens's agreement with the final prediction rises through depth on
the claim's text (C22), the distribution is the Generate tab's, and the lesson's readings come
from the runs."""
from __future__ import annotations

import re

import pytest
import torch

from explorer.lessons import LESSONS, reading
from explorer.locales import LANGUAGES
from explorer.nexttoken import distribution as dist
from explorer.nexttoken import evidence, lens, runs
from explorer.ui.page import lessons as panel
from models.generate import SamplingParams, sampling_probs
from tests.helpers import check_evidence

MODELS = ("smollm2-135m-instruct", "gemma-3-270m")


@pytest.fixture(scope="module", params=MODELS)
def loaded(request, runtime):
    return runtime.get(request.param)


def test_the_lens_last_layer_is_the_models_logits_bit_for_bit(loaded):
    for prompt in (evidence.C21_PROMPT, evidence.c22_text(loaded.tokenizer)):
        prediction = dist.predict(loaded.model, runs.check_prompt(loaded.tokenizer, prompt))
        last = lens.layer_logits(loaded.model, prediction, prediction.n_layers)
        assert torch.equal(last, prediction.logits)
        # and the forward's logits are the model's own: a plain forward's last row
        with torch.inference_mode():
            ids = torch.tensor([prediction.ids])
            full = loaded.model(ids)[0, -1].float()
        assert torch.allclose(full, prediction.logits, atol=1e-4, rtol=0)


def test_c21_and_c22_hold_on_the_board(loaded):
    found = evidence.evidence_c21(loaded)
    check_evidence(found, "C21", "next_token", evidence.SECTION, loaded.name)
    assert found.passed and found.measures[0].value == 0.0
    found = evidence.evidence_c22(loaded)
    check_evidence(found, "C22", "next_token", evidence.SECTION, loaded.name)
    first, last = (m.value for m in found.measures)
    print(f"\n{loaded.name}: C22 agreement first third {first:.1f}%, last third {last:.1f}%")
    assert found.passed and last - first >= 100 * runs.MIN_AGREEMENT_RISE


def test_the_distribution_and_the_lens_on_the_default_prompt(loaded):
    result = runs.distribution(loaded, evidence.C21_PROMPT, 0.7, 20, 0.9)
    expected = sampling_probs(result.prediction.logits, SamplingParams(temperature=0.7, top_k=20, top_p=0.9))
    assert torch.equal(result.kept.probs, expected) and 1 <= result.kept.n_kept <= 20
    assert any(label.strip() == "Paris" for label in result.labels[:5])
    lensed = runs.lens(loaded, evidence.C21_PROMPT)
    assert lensed.chart.top[-1, -1] == int(result.prediction.logits.argmax()) == lensed.ranks.tokens[0]
    assert lensed.lead is not None and 0 <= lensed.lead <= lensed.n_layers
    steps = LESSONS["next-token"].steps
    assert reading(steps[0], result) is not None and reading(steps[1], result)["t"] == 0.7
    fields = reading(steps[2], runs.lens(loaded, steps[2].settings["prompt"]))
    print(f"\n{loaded.name}: '{fields['token']}' leads from layer {fields['answer']} of {fields['layers']}")
    assert fields["exact"] == "✓"
    # the quotes the browser's walk (in Chinese, tests/browser/test_browser_next_token.py) reads
    # on the page, in both languages from the same readings
    first = reading(steps[0], result)
    for lang in LANGUAGES:
        said = panel.said_text({"lesson": "next-token", "step": 0, "guess": None, "fields": first}, lang)
        assert re.search(r"\d+\.\d+%", said), said
        said = panel.said_text({"lesson": "next-token", "step": 2, "guess": 20, "fields": fields}, lang)
        assert re.search(r"(?:layer|第) \*{0,2}(\d+)", said) and "✓" in said and "20" in said, said
        assert bool(re.search(r"[\u4e00-\u9fff]", said)) == (lang == "zh"), said
