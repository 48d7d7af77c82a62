"""Memory ceilings: the bounds that keep one request from taking the server's memory.

- Per-visitor state has a lifetime and the number of sessions a cap (app.py).
- The perplexity paths never hold all (T, V) logits: the RoPE sweep and the C4 check run the
  LM head on blocks of rows, StreamingLLM on chunks (Gemma's V = 262,144: 4 GB at 4,096 rows).
- An out-of-memory error in a forward pass (injected) answers a clear error, and the next
  request succeeds.
- HARDENING_FULL=1: the largest request each heavy handler allows, on the real checkpoints, in
  a fresh server process, with its peak RSS (docs/HARDENING.md records the last run); slow.
"""
from __future__ import annotations

import functools
import os
import time

import pytest
import torch

from tests.helpers import run_together

pytestmark = pytest.mark.timeout(600)


def test_visitor_state_has_a_lifetime_and_the_sessions_a_cap(full_app):
    import gradio as gr

    import app

    states = [b for b in full_app.blocks.values() if isinstance(b, gr.State)]
    assert len(states) >= 10
    assert all(s.time_to_live <= app.STATE_TTL_S for s in states)
    assert app.launch_options()["state_session_capacity"] == app.STATE_SESSIONS <= 1000


class HeadRows:
    """Records the rows of every LM-head call of a model (model.head: final norm + projection)."""

    def __init__(self, model):
        self.rows, self.model = [], model
        head = model.head

        def recorded(hidden, *args, **kwargs):
            out = head(hidden, *args, **kwargs)
            self.rows.append(out.reshape(-1, out.shape[-1]).shape[0])
            return out
        model.head = recorded

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        del self.model.head      # the class's method again


def test_rope_sweep_runs_the_head_on_blocks_of_rows(tiny, monkeypatch):
    from explorer.rope import sweep

    model = tiny["llama"]
    ids = list(range(3, 43))                                   # 40 tokens
    whole = sweep.nll_per_position(model, ids)
    vocab = model.config.vocab_size
    monkeypatch.setattr(sweep, "LOGIT_BLOCK_BYTES", 4 * vocab * 7)   # 7 rows per block
    with HeadRows(model) as head:
        blocked = sweep.nll_per_position(model, ids)
    assert max(head.rows) == 7 and sum(head.rows) == len(ids) - 1
    torch.testing.assert_close(blocked, whole, atol=1e-5, rtol=1e-5)
    # Gemma's vocabulary: a block is at most LOGIT_BLOCK_BYTES, never (T, V)
    assert sweep.logit_rows(262_144) * 262_144 * 4 <= 64 * 2**20


def test_c4_check_runs_the_head_only_on_the_generated_rows(tiny):
    from explorer.generate.checks import logit_differences

    model = tiny["llama"]
    prompt, generated = list(range(3, 63)), [5, 6, 7, 8]
    cached = [torch.zeros(model.config.vocab_size) for _ in generated]
    with HeadRows(model) as head:
        logit_differences(model, prompt + generated, len(prompt), cached)
    assert head.rows == [len(generated)]                       # not the 63 rows fed


def test_streaming_perplexity_holds_one_chunk_of_logits(tiny):
    from explorer.attention.streaming import streaming_nll

    model = tiny["llama"]
    ids = [3 + i % (model.config.vocab_size - 3) for i in range(100)]
    with HeadRows(model) as head:
        streaming_nll(model, ids, "window", window=16, sinks=0, chunk=32)
    assert max(head.rows) <= 32 and sum(head.rows) == 99


@pytest.mark.parametrize("error", [torch.OutOfMemoryError("CUDA out of memory. Tried to allocate "
                                                          "4.00 GiB (/root/.cache/x)"),
                                   MemoryError()])
def test_an_out_of_memory_forward_answers_an_error_and_the_next_request_succeeds(error, guarded):
    from gradio_client import Client

    from bench.fuzz import LEAK
    from explorer.serving import scheduler_for

    url, runtime, guard = guarded.url, guarded.runtime, guarded.guard
    client = Client(url, verbose=False)
    original = guard.hook
    failed = []

    def out_of_memory(module, args):
        if not failed:
            failed.append(True)
            raise error
        return original(module, args)

    job = dict(prompt="Name a colour.", n_new=3, compare_value=False, check_value=False,
               api_name="/generate")
    try:
        # a first run has the loop feed the app's kept prompts (explorer.generate.kept): their
        # forwards are in before the failing one, which then is this visitor's
        assert isinstance(client.predict(**job)[0], str)
        loop = scheduler_for(runtime.get(runtime.default_name).model)
        deadline = time.monotonic() + 120
        while loop.kept_pending() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not loop.kept_pending()
        guard.hook = out_of_memory
        with pytest.raises(Exception) as raised:
            client.predict(**job)
        message = str(raised.value)
        assert message and not LEAK.search(message) and "4.00 GiB" not in message
        assert failed
        text = client.predict(**job)[0]                         # the next request succeeds
        assert isinstance(text, str) and text.strip()
        failed.clear()
        with pytest.raises(Exception):
            client.predict(api_name="/attention_map")
        assert client.predict(api_name="/attention_map") is not None
    finally:
        client.close()


# The largest request each heavy handler allows, each in a fresh server process (`python
# app.py`, Gemma loaded), under the whole process's RSS bound (bench/ceilings.py, which also
# sends them all at once): the server with Gemma loaded is ~1.5 GB; the bound adds the request.
HEAVY = ["/attention_map", "/generate", "/rope_perplexity", "/streaming_ppl"]


@pytest.mark.skipif(os.environ.get("HARDENING_FULL") != "1", reason="slow: HARDENING_FULL=1")
@pytest.mark.server   # app.py in a process of its own
@pytest.mark.slow
@pytest.mark.parametrize("endpoint", HEAVY)
def test_the_largest_request_stays_under_the_bound(endpoint):
    from bench.ceilings import RSS_BOUND_MB, largest_requests, peak_during, served_gemma

    request = largest_requests()[endpoint]
    with served_gemma() as (client, url, pid):
        outputs, rss = peak_during(pid, lambda: client.predict(**request, api_name=endpoint))
    print(f"{endpoint}: server RSS before {rss['before']:.0f} MB, peak {rss['peak']:.0f} MB")
    assert outputs is not None
    assert rss["peak"] < RSS_BOUND_MB


def test_tokenizers_load_one_at_a_time(monkeypatch):
    """The warm-up thread and a visitor's first load of another model both load a tokenizer;
    transformers' lazy imports failed when two threads did so at once (bench/ceilings.py)."""
    import transformers

    from explorer import runtime

    inside, most = [0], [0]

    def from_pretrained(folder, **kwargs):
        inside[0] += 1
        most[0] = max(most[0], inside[0])
        time.sleep(0.2)
        inside[0] -= 1
        return folder

    monkeypatch.setattr(transformers.AutoTokenizer, "from_pretrained", from_pretrained)
    run_together(*(functools.partial(runtime._load_tokenizer, f"/x/{i}") for i in range(3)))
    assert most[0] == 1
