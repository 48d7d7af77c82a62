"""The Next token tab's API through gradio_client on the served tab: the distribution, the
sampler's cut applied to the stored logits, seeded continuations and the logit lens answer with
real numbers; hostile inputs (a huge prompt, NaN temperature, a negative top-k, a forged token
index) come back as clear errors, and the server keeps serving."""
from __future__ import annotations

import json
import re

import pytest

SMOL = "smollm2-135m-instruct"
GEMMA = "gemma-3-270m"
PROMPT = "The capital of France is"


@pytest.fixture(scope="module")
def next_client(serve):
    from gradio_client import Client

    with serve(("explorer.ui.tabs.next_token",)) as served:
        yield Client(served.url, verbose=False)


def figure(value) -> dict:
    plot = value["plot"] if isinstance(value, dict) and "plot" in value else value
    return json.loads(plot) if isinstance(plot, str) else plot


def kept_column(table: str) -> list[str]:
    return [line.split("|")[4].strip() for line in table.splitlines()[2:-1]]


def test_distribution_then_the_sampler_live_then_samples(next_client):
    plot, summary, table, samples = next_client.predict(SMOL, "en", PROMPT, 1.0, 0, 1.0,
                                                        api_name="/next_distribution")
    assert "` Paris`" in table and "float32, eager, no cache" in summary and samples == ""
    assert "keeps **49,152 tokens**" in summary
    assert len(figure(plot)["data"]) == 2
    # the controls: the same logits under the new cut, no forward (the client's session keeps the state)
    plot, summary, table = next_client.predict("en", 0.7, 3, 1.0, api_name="/next_resample_temperature")
    assert "keeps **3 tokens**" in summary
    kept = kept_column(table)
    assert sum(value != "cut" for value in kept) == 3 and kept[3:] == ["cut"] * 7
    assert abs(sum(float(v.rstrip("%")) for v in kept[:3]) - 100) < 0.02
    first = next_client.predict("en", 3, 11, 6, api_name="/next_sample")
    again = next_client.predict("zh", 3, 11, 6, api_name="/next_sample")
    assert first.count("\n- seed ") == 3 and "seed 11" in first and "seed 13" in first
    texts = [line.split("→", 1)[1] for line in first.splitlines()[1:]]
    assert texts == [line.split("→", 1)[1] for line in again.splitlines()[1:]]     # same seeds, same text


def test_lens_shows_the_last_layer_check(next_client):
    heatmap, ranks, summary, token = next_client.predict(GEMMA, "zh", PROMPT, api_name="/next_lens")
    assert "最大 |差| = **0** ✓" in summary
    z = figure(heatmap)["data"][0]
    assert z["type"] == "heatmap" and len(figure(ranks)["data"]) == 3
    ranks2, summary2 = next_client.predict("en", 2, api_name="/next_lens_token")
    assert "max |difference| = **0** ✓" in summary2


@pytest.mark.parametrize("args, match", [
    ((SMOL, "en", "x" * 100_000, 1.0, 0, 1.0), "characters long|limit"),
    ((SMOL, "en", "word " * 400, 1.0, 0, 1.0), "tokens; the limit here is 256"),
    ((SMOL, "en", "", 1.0, 0, 1.0), "empty"),
    # JSON has no NaN: a client sends it as text, refused by Gradio's type check or by ours
    ((SMOL, "en", PROMPT, "nan", 0, 1.0), ""),
    ((SMOL, "en", PROMPT, "inf", 0, 1.0), ""),
    ((SMOL, "en", PROMPT, 1.0, -1, 1.0), "between|least|-1"),
    ((SMOL, "en", PROMPT, 1.0, 0, 0.0), "between|0"),
    ((SMOL, "en", PROMPT, 1e9, 0, 1.0), "between|greater than maximum"),
    (("nope", "en", PROMPT, 1.0, 0, 1.0), "Unknown model|must be one of"),
])
def test_hostile_inputs_are_refused_in_plain_words(next_client, args, match):
    from gradio_client.exceptions import AppError

    with pytest.raises(AppError, match=match):
        next_client.predict(*args, api_name="/next_distribution")


def test_hostile_lens_and_sampler_inputs(next_client):
    from gradio_client.exceptions import AppError

    with pytest.raises(AppError, match="characters long|limit"):
        next_client.predict(SMOL, "en", "y" * 50_000, api_name="/next_lens")
    next_client.predict(SMOL, "en", PROMPT, api_name="/next_lens")
    for forged in (-1, 10, 2.5, "1; drop"):
        with pytest.raises(AppError):
            next_client.predict("en", forged, api_name="/next_lens_token")
    for n, seed, n_new in ((0, 0, 4), (99, 0, 4), (2, -5, 4), (2, 0, 10_000)):
        with pytest.raises(AppError):
            next_client.predict("en", n, seed, n_new, api_name="/next_sample")
    with pytest.raises(AppError):
        next_client.predict("en", "NaN", 0, 1.0, api_name="/next_resample_temperature")
    # still serving
    _, summary, _, _ = next_client.predict(SMOL, "en", PROMPT, 0, 0, 1.0, api_name="/next_distribution")
    assert re.search(r"keeps \*\*1 token\*\*", summary)
