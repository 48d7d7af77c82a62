"""The classroom benchmark, short (bench/classroom.py): four visitors stream /generate at the
same moment through the in-process app; every run finishes with its own tokens and the shared
loop batched them. Its own tokens: the greedy tokens of the same prompt decoded alone by the
loop's own step for a single run, in the loop's precision; in fp32 exactly those, in bf16,
int8 or gguf those up to a choice between tokens within that precision's rounding (see
assert_own_text). And the GPU check (bench/gpu_check.py) skips with a clear message where
there is no CUDA device."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import torch

from bench.classroom import default_prompt, run_level, run_raw_level, summarize

ROOT = Path(__file__).resolve().parents[2]
MODEL = "smollm2-135m-instruct"
PROMPTS = ["Name a colour.", "Count to five.", "What is a cat?", "Say hello in French."]
TOKENS = 12
# A run decoding in company reads the same weight copies as alone, but its activations are
# rounded to bf16 (or int8 digits) before each product, so the last-bit differences of the
# pooled attention's summation order grow to ~0.1-0.4 of a logit (SmolLM2, bf16, measured).
# Where alone's top two tokens are closer than that, the run may take the other one, and its
# text goes on from there: a near tie, never another visitor's text. NEAR bounds how close.
NEAR = 1.0
FLIPS = 2   # near ties a 12-token run may take the other side of


def assert_own_text(model, tokenizer, sched, ids: list, text: str, n_tokens: int) -> None:
    """`text` (n_tokens tokens) is what the loop's single-run step decodes alone from `ids`:
    exactly, where the loop reads fp32 weights; else up to FLIPS steps where it took another
    token within NEAR of alone's best, each followed by alone's greedy continuation of that
    choice."""
    from models.decoder import decode_options
    from models.generate import SamplingParams, generate

    solo = sched.decoder.fused_for(decode_options(None))
    assert solo is not None and solo.weights == sched.decoder.weights
    flips = 0 if solo.weights == "fp32" else FLIPS
    taken: list = []
    while True:
        params = SamplingParams(max_new_tokens=n_tokens - len(taken))
        steps = list(generate(model, ids + taken, params, decoder=solo, keep_logits=True))
        toks = [s.token_id for s in steps]
        decode = lambda extra: tokenizer.decode(taken + extra, skip_special_tokens=True)  # noqa: E731
        k = next((k for k in range(len(toks)) if not text.startswith(decode(toks[:k + 1]))), None)
        if k is None:
            assert (decode(toks), len(taken) + len(toks)) == (text, n_tokens)
            return
        logits = steps[k].logits.float()
        near = [int(c) for c in torch.nonzero(logits >= logits.max() - NEAR).flatten() if int(c) != toks[k]]
        other = [c for c in near if text.startswith(decode(toks[:k] + [c]))]
        assert other and flips > 0, (f"{text!r} leaves {decode(toks)!r}, decoded alone, at token {k} "
                                     f"where no other token is within {NEAR} of its best")
        flips -= 1
        taken += toks[:k] + other[:1]


def test_four_visitors_at_once_each_get_their_own_tokens(app_url, runtime):
    from explorer.generate.request import encode_prompt
    from explorer.serving import scheduler_for

    loaded = runtime.get(MODEL)
    sched = scheduler_for(loaded.model)
    before = sched.stats["max_batch"]
    sched.stats["max_batch"] = 0
    streams, wall = run_level(app_url, MODEL, len(PROMPTS), TOKENS, prompts=PROMPTS)
    stats = summarize(len(PROMPTS), streams, wall)
    assert stats["errors"] == 0 and stats["busy"] == 0, [s.error for s in streams]
    assert sched.stats["max_batch"] > 1, "the four runs were never decoded in one batch"
    sched.stats["max_batch"] = max(before, sched.stats["max_batch"])
    for stream in streams:
        ids, _ = encode_prompt(loaded.tokenizer, stream.prompt)
        assert_own_text(loaded.model, loaded.tokenizer, sched, ids, stream.text, stream.tokens)
        assert stream.ttft is not None and stream.ttft > 0


def test_raw_clients_on_one_prompt_share_its_prefill(app_url, runtime):
    """Four raw clients (one POST and one event stream each, as the page, each its own
    session) on the default prompt: each gets the greedy text of that prompt decoded alone,
    and the loop fed that prompt once itself (the app's own prompt, kept: explorer.generate.kept)
    and each run copied all of it but the last token, from the kept prompt, never from another
    visitor's run."""
    from explorer.generate.request import encode_prompt
    from explorer.serving import scheduler_for

    loaded = runtime.get(MODEL)
    sched = scheduler_for(loaded.model)
    shared_before = sched.stats["shared_tokens"]
    streams, wall = run_raw_level(app_url, MODEL, 4, TOKENS, timeout_s=300)
    stats = summarize(4, streams, wall)
    assert stats["errors"] == 0 and stats["busy"] == 0, [s.error for s in streams]
    ids, _ = encode_prompt(loaded.tokenizer, default_prompt())
    for stream in streams:
        assert stream.arrivals and stream.ttft > 0
        assert_own_text(loaded.model, loaded.tokenizer, sched, ids, stream.text, stream.tokens)
    assert ids in [run.prompt for run in sched._kept]   # fed by the loop itself
    copied = sched.stats["shared_tokens"] - shared_before
    assert copied == 4 * (len(ids) - 1), copied


def test_gpu_check_skips_without_cuda():
    import torch
    if torch.cuda.is_available():
        pytest.skip("a CUDA device is here: the check would run, not skip")
    result = subprocess.run([sys.executable, "-m", "bench.gpu_check"], cwd=ROOT, capture_output=True,
                            text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert "gpu_check: skipped: no CUDA device" in result.stdout


@pytest.mark.slow
def test_gpu_check_rehearses_every_step_on_the_cpu():
    """The GPU check's steps (parity of tiny and real models in fp32 and bf16, batched == alone,
    the batched decode's rates) run end to end with the CPU in the GPU's place, so that a session
    lent a GPU does not spend its minutes on a fault of the script."""
    result = subprocess.run([sys.executable, "-m", "bench.gpu_check", "--rehearse-on-cpu"], cwd=ROOT,
                            capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    summary = result.stdout.strip().splitlines()[-1]
    assert summary.startswith("gpu_check: PASS · CPU (rehearsal)") and "tabs skipped" in summary
    assert "batched == alone, 3 runs x 12 greedy tokens, cpu fp32: ok" in result.stdout
    assert "2 visitors: step" in result.stdout
