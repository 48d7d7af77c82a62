"""Token alternatives: every Step carries the five most likely tokens of the distribution its
token was drawn from (models.generate.next_step), equal to an independent computation from the
step's own logits for greedy and for temperature / top-k / top-p sampling; the shared decode
loop gives the same ones as the run decoded alone; the Generate tab's token strip puts them,
with the chosen token marked, in each token's tooltip (explorer/generate/tokens.py)."""
from __future__ import annotations

import dataclasses
import html
import re
import threading

import numpy as np
import pytest
import torch

from explorer.generate import tokens
from explorer.generate.request import parse_request
from explorer.generate.session import stream_generation
from explorer.serving import Scheduler
from engine.fused import FusedDecoder
from models.generate import TOP_ALTERNATIVES, SamplingParams, generate

PARAMS = {
    "greedy": SamplingParams(max_new_tokens=8),
    "temperature": SamplingParams(max_new_tokens=8, temperature=0.7, seed=1),
    "top_k": SamplingParams(max_new_tokens=8, temperature=1.3, top_k=3, seed=2),
    "top_p": SamplingParams(max_new_tokens=8, temperature=1.0, top_p=0.08, seed=3),
    "all": SamplingParams(max_new_tokens=8, temperature=0.9, top_k=20, top_p=0.5, seed=4),
}
GAP = 1e-4   # probabilities closer than this may swap places under 1e-5 of logit noise


def reference(logits, params: SamplingParams) -> np.ndarray:
    """The distribution of one step, computed apart from the engine: float64 numpy, sorts
    instead of masks; greedy: the softmax of the logits (the distribution whose argmax it takes)."""
    z = logits.double().numpy()
    if not params.greedy:
        z = z / params.temperature
    keep = np.ones_like(z, dtype=bool)
    if params.top_k and not params.greedy:
        kth = np.sort(z)[::-1][min(params.top_k, z.size) - 1]
        keep = z >= kth
    p = np.where(keep, np.exp(z - z[keep].max()), 0.0)
    p /= p.sum()
    if params.top_p < 1.0 and not params.greedy:
        order = np.argsort(-p, kind="stable")
        before = np.concatenate([[0.0], np.cumsum(p[order])[:-1]])
        cut = np.zeros_like(p)
        cut[order[before < params.top_p]] = p[order[before < params.top_p]]
        p = cut / cut.sum()
    return p


def assert_same(alt, ids, probs, tol):
    """Same alternatives: probabilities equal within tol in order, and the same ids wherever a
    probability is more than GAP from its neighbours (a near tie may list either first)."""
    assert len(alt.ids) == len(ids) and len(alt.probs) == len(probs)
    assert np.allclose(alt.probs, probs, atol=tol, rtol=0), (alt.probs, probs)
    for i, (a, b) in enumerate(zip(alt.ids, ids)):
        near = [abs(probs[i] - probs[j]) < GAP for j in (i - 1, i + 1) if 0 <= j < len(probs)]
        assert a == b or any(near), (alt.ids, ids, probs)


def expected_top(p: np.ndarray):
    order = np.argsort(-p, kind="stable")[:TOP_ALTERNATIVES]
    order = [int(i) for i in order if p[i] > 0]
    return order, [float(p[i]) for i in order]


@pytest.mark.parametrize("name", list(PARAMS))
def test_each_step_carries_the_top_five_of_its_own_distribution(tiny, name):
    params = PARAMS[name]
    steps = list(generate(tiny["llama"], [5, 6, 7, 8], params, eos_ids=[], keep_logits=True))
    assert len(steps) == params.max_new_tokens
    outside = 0
    for step in steps:
        alt = step.alternatives
        p = reference(step.logits, params)
        ids, probs = expected_top(p)
        assert_same(alt, ids, probs, tol=1e-6)
        assert alt.chosen_prob == pytest.approx(p[step.token_id], abs=1e-6)
        assert alt.chosen_prob > 0 and sum(alt.probs) <= 1 + 1e-6
        assert list(alt.probs) == sorted(alt.probs, reverse=True)
        if params.greedy:
            assert step.token_id == alt.ids[0]   # the argmax is the most likely token
        outside += step.token_id not in alt.ids
    if name == "top_k":   # three survive the cut: the rest have probability 0 and are not listed
        assert all(len(s.alternatives.ids) == 3 for s in steps)
    if name == "temperature":   # 97 near-uniform tokens: a drawn token often falls outside
        assert outside > 0


def test_a_compiled_decoder_gives_the_same_alternatives(tiny):
    """The fused single-stream decoder builds its Steps in the same next_step."""
    model = tiny["llama"]
    params = PARAMS["all"]
    eager = list(generate(model, [5, 6, 7, 8], params, eos_ids=[], keep_logits=True))
    fused = list(generate(model, [5, 6, 7, 8], params, eos_ids=[], keep_logits=True,
                          decoder=FusedDecoder(model)))
    assert [s.token_id for s in fused] == [s.token_id for s in eager]
    for a, b in zip(fused, eager):
        assert_same(a.alternatives, b.alternatives.ids, b.alternatives.probs, tol=1e-5)


@pytest.mark.parametrize("kind", ["llama", "gemma3"])
def test_the_shared_loop_gives_each_run_the_alternatives_of_the_run_alone(tiny, kind):
    """Four runs decoded together in one batch (two greedy, whose tokens and alternatives the
    loop makes for the batch at once, and two samplers): each one's alternatives are those of
    the same run decoded alone, never a neighbour's."""
    model = tiny[kind]
    sched = Scheduler(model, prefill_chunk=4, prefill_tokens=8)
    runs = [([3, 1, 4, 1, 5], PARAMS["greedy"]), ([9, 2, 6], PARAMS["all"]),
            ([5, 3, 5, 8, 9, 7, 9], PARAMS["temperature"]), ([2, 7, 1, 8], PARAMS["greedy"])]
    out: dict = {}

    def collect(i, ids, params):
        out[i] = list(sched.generate(ids, params, eos_ids=[]))

    threads = [threading.Thread(target=collect, args=(i, *run)) for i, run in enumerate(runs)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert sched.stats["max_batch"] > 1, "the runs never shared a step"
    for i, (ids, params) in enumerate(runs):
        alone = list(generate(model, ids, params, eos_ids=[]))
        shared = out[i]
        assert [s.token_id for s in shared] == [s.token_id for s in alone]
        for a, b in zip(shared, alone):
            assert_same(a.alternatives, b.alternatives.ids, b.alternatives.probs, tol=1e-5)
            assert a.alternatives.chosen_prob == pytest.approx(b.alternatives.chosen_prob, abs=1e-5)


def test_greedy_choices_of_a_batch_are_each_rows_own():
    """greedy_choices over (B, V) gives each row what next_step gives that row alone: its
    argmax, and the top alternatives of its softmax (a row whose tail underflows to 0 keeps
    only the tokens of probability > 0)."""
    from models.generate import greedy_choices, next_step

    g = torch.Generator().manual_seed(0)
    logits = torch.randn(4, 300, generator=g) * 4
    logits[2, :] = -1e4
    logits[2, [5, 9]] = torch.tensor([40.0, 39.0])   # two tokens hold all the mass: three alternatives are 0
    choices = greedy_choices(logits)
    assert len(choices) == 4
    for row, (token, alternatives) in zip(logits, choices):
        alone = next_step(row, PARAMS["greedy"], None, [], index=0, n_prompt=1, phase="decode",
                          forward_s=0.0, tokens_processed=1, score_entries=0, cache=None,
                          keep_logits=False)
        assert token == alone.token_id
        assert_same(alternatives, alone.alternatives.ids, alone.alternatives.probs, tol=1e-6)
        assert alternatives.chosen_prob == pytest.approx(alone.alternatives.chosen_prob, abs=1e-6)
    assert choices[2][1].ids == (5, 9)
    with pytest.raises(ValueError, match="greedy"):
        next_step(logits[0], PARAMS["all"], None, [], index=0, n_prompt=1, phase="decode",
                  forward_s=0.0, tokens_processed=1, score_entries=0, cache=None,
                  keep_logits=False, choice=choices[0])


class Markup:
    """A tokenizer whose tokens are markup: the strip must show them as text."""

    def decode(self, ids, skip_special_tokens=False):
        return "".join(f"<b>{i}</b>&" if i % 3 else f"\n{i}" for i in ids)


def run_session(model, temperature=0.0, top_k=0, top_p=1.0, seed=0, n=6):
    request = parse_request("unused", n, temperature, top_k, top_p, seed, "full", 64, 4, False, False)
    sessions = list(stream_generation(model, Markup(), [5, 6, 7, 8], request, eos_ids=[],
                                      scheduler=Scheduler(model)))
    return sessions[-1]


def parse_strip(strip: str) -> list:
    """Per token: (piece text, [(id, p, chosen, outside, row text)], head, basis)."""
    found = []
    for m in re.finditer(r'<span class="gen-tok" tabindex="(-?\d)" data-index="(\d+)" '
                         r'aria-describedby="gen-tip-\2">(.*?)<span class="gen-tip" role="tooltip" '
                         r'id="gen-tip-\2"><span class="gen-tip-head">(.*?)</span>'
                         r'<span class="gen-basis">(.*?)</span>(.*?)</span></span>(?=<span class="gen-tok"|$)',
                         strip, re.S):
        rows = [(int(r[1]), float(r[2]), "gen-chosen" in r[0], "gen-outside" in r[0],
                 html.unescape(re.sub("<[^>]+>", " ", r[3])))
                for r in re.findall(r'<span class="(gen-alt[^"]*)" data-id="(\d+)" data-p="([^"]+)">(.*?)</span>'
                                    r'(?=<span class="gen-alt|$)', m.group(6), re.S)]
        found.append((html.unescape(m.group(3)), rows, html.unescape(m.group(4)),
                      html.unescape(m.group(5)), m.group(1)))
    return found


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_strip_shows_every_tokens_alternatives_with_the_chosen_one_marked(tiny, lang):
    session = run_session(tiny["llama"], temperature=0.9, top_k=20, top_p=0.5, seed=4)
    strip = tokens.strip_html(session, lang)
    parsed = parse_strip(strip)
    assert len(parsed) == len(session.records) == 6
    assert "<b>" not in strip   # the pieces are escaped: markup from the model is text
    basis = tokens.sampling_basis(session.request, lang)
    assert ("top-p" in basis and "0.5" in basis and "20" in basis and "0.9" in basis)
    for (piece, rows, head, shown_basis, tab), record in zip(parsed, session.records):
        assert piece == record.piece.replace("\n", "↵")
        assert shown_basis == basis and str(record.position) in head
        alt = record.alternatives
        listed = [r for r in rows if not r[3]]
        assert [r[0] for r in listed] == list(alt.ids)
        assert [r[1] for r in listed] == list(alt.probs)   # exactly the step's numbers
        chosen = [r for r in rows if r[2]]
        assert len(chosen) == 1 and chosen[0][0] == record.token_id
        assert chosen[0][1] == alt.chosen_prob
        assert chosen[0][3] == (record.token_id not in alt.ids)
        for token_id, p, _, _, row_text in rows:
            assert f"(id {token_id})" in row_text and tokens.percent(p) in row_text
    assert [t for *_, t in parsed] == ["0"] + ["-1"] * 5   # one tab stop; arrows move
    # the string only grows with the run: a streamed update is its new tail
    shorter = tokens.strip_html(dataclasses.replace(session, records=session.records[:3]), lang)
    assert strip.startswith(shorter)


def test_a_token_outside_the_top_five_is_listed_after_them_and_greedy_says_so(tiny):
    sampled = run_session(tiny["llama"], temperature=1.0, n=12, seed=7)
    outside = [r for r in sampled.records if r.token_id not in r.alternatives.ids]
    assert outside, "every drawn token was in the top 5: pick another seed"
    rows = parse_strip(tokens.token_html(outside[0], 1, "", "en"))[0][1]
    assert [r[2] for r in rows] == [False] * 5 + [True] and rows[-1][3]
    assert "not in the top 5" in rows[-1][4]
    greedy = run_session(tiny["llama"])
    assert all(r.token_id == r.alternatives.ids[0] for r in greedy.records)
    assert "Greedy" in tokens.sampling_basis(greedy.request, "en")
    assert "贪心" in tokens.sampling_basis(greedy.request, "zh")
    assert tokens.strip_html(None) == "" and tokens.percent(0.0000123) == "<0.01%"
