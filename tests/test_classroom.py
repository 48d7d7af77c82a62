"""The classroom benchmark, short (bench/classroom.py): four visitors stream /generate at the
same moment through the in-process app; every run finishes with its own tokens (the greedy
tokens of the same prompt decoded alone by the engine) and the shared loop batched them. And
the GPU check (bench/gpu_check.py) skips with a clear message where there is no CUDA device."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from bench.classroom import default_prompt, run_level, run_raw_level, summarize

ROOT = Path(__file__).resolve().parents[1]
MODEL = "smollm2-135m-instruct"
PROMPTS = ["Name a colour.", "Count to five.", "What is a cat?", "Say hello in French."]
TOKENS = 12


def test_four_visitors_at_once_each_get_their_own_tokens(app_url, runtime):
    from explorer.generate.request import encode_prompt
    from explorer.serving import scheduler_for
    from models.generate import SamplingParams, generate

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
        alone = [s.token_id for s in generate(loaded.model, ids, SamplingParams(max_new_tokens=TOKENS))]
        assert stream.tokens == len(alone)
        assert stream.text == loaded.tokenizer.decode(alone, skip_special_tokens=True)
        assert stream.ttft is not None and stream.ttft > 0


def test_raw_clients_on_one_prompt_share_its_prefill(app_url, runtime):
    """Four raw clients (one POST and one event stream each, as the page, each its own
    session) on the default prompt: each gets the greedy text of that prompt decoded alone,
    and the loop fed the chat template's tokens once (the others copied them) and nothing of
    one visitor's text to another: every copy is the template exactly."""
    from explorer.generate.request import encode_prompt
    from explorer.prompts import template_prefix
    from explorer.serving import scheduler_for
    from models.generate import SamplingParams, generate

    loaded = runtime.get(MODEL)
    sched = scheduler_for(loaded.model)
    shared_before = sched.stats["shared_tokens"]
    streams, wall = run_raw_level(app_url, MODEL, 4, TOKENS, timeout_s=300)
    stats = summarize(4, streams, wall)
    assert stats["errors"] == 0 and stats["busy"] == 0, [s.error for s in streams]
    ids, _ = encode_prompt(loaded.tokenizer, default_prompt())
    alone = [s.token_id for s in generate(loaded.model, ids, SamplingParams(max_new_tokens=TOKENS))]
    for stream in streams:
        assert stream.tokens == len(alone) and stream.arrivals and stream.ttft > 0
        assert stream.text == loaded.tokenizer.decode(alone, skip_special_tokens=True)
    template = len(template_prefix(loaded.tokenizer))
    copied = sched.stats["shared_tokens"] - shared_before
    assert len(ids) > template >= 16 and copied >= template and copied % template == 0, copied


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
