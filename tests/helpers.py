"""Shared test helpers: tiny random transformers models and our twin of them."""
from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

import torch

from models.config import config_from_hf
from models.loading import load_state, model_from_config


ROOT = str(Path(__file__).resolve().parents[1])
# a prompt SmolLM2 answers at length (greedy: the 256 tokens the tab allows, in fp32, bf16 and
# gguf), for the runs a Stop or a cancel must catch while they decode: "Name a colour." ends
# after 19 tokens, which gguf decodes in a tenth of a second
LONG_PROMPT = "Count from 1 to 300, separated by commas."


def python_output(code: str, *args: str) -> str:
    """stdout of `code` run by a fresh interpreter in the repository, with it on the path:
    for what only a new process shows (allocator state, resident memory)."""
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True,
                          check=True, cwd=ROOT, env={**os.environ, "PYTHONPATH": ROOT}).stdout


def run_together(*targets, timeout: float = 120.0) -> None:
    """Start a thread for each callable at once and wait for all of them (visitors arriving
    together)."""
    threads = [threading.Thread(target=target) for target in targets]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=timeout)


def wait_for_texts(job, n: int, timeout: float = 120.0) -> None:
    """Wait until a streaming /generate job (gradio_client) has sent n different texts, i.e.
    it is decoding; fail if it has not within `timeout` seconds."""
    import time

    deadline = time.time() + timeout
    while time.time() < deadline and len({o[0] for o in job.outputs() if o[0]}) < n:
        time.sleep(0.1)
    assert len({o[0] for o in job.outputs() if o[0]}) >= n, "no tokens streamed"


def decoding_snapshot(index: int = 0):
    """A Session as transport.in_background sees a decoding run's snapshot, with no model
    behind it: phase "decode", not stopped, `index` to tell them apart."""
    from explorer.generate.session import Session

    class Snapshot(Session):
        def __init__(self):
            self.phase, self.stopped, self.index = "decode", None, index

        def snapshot(self):
            return self

    return Snapshot()


def stop_buttons(demo, event_fn) -> list:
    """The events of `demo` that stop the stoppable `event_fn` (explorer/web/stopping.py): the
    listeners wired to its Stops' on_stop."""
    stops = getattr(event_fn, "stops", None)
    return [block_fn for block_fn in demo.fns.values()
            if stops is not None and block_fn.fn == stops.on_stop]


def type_number(page, elem_id: str, value, tries: int = 3) -> None:
    """Type a number into a Number's or Slider's box (Enter, then blur) and wait until the box
    holds it. A section shown for the first time mounts its components, and on a loaded machine
    the mount can land after the typing and put the initial value back: then type again."""
    for attempt in range(tries):
        box = page.locator(f"#{elem_id} input[type=number]").first
        box.fill(str(value))
        box.press("Enter")
        box.blur()
        try:
            page.wait_for_function(
                f"() => document.querySelector('#{elem_id} input[type=number]').value === '{value}'",
                timeout=10_000)
            break
        except Exception:
            if attempt == tries - 1:
                raise
    page.wait_for_timeout(300)   # the component's value reaches Gradio's state


def switch_language(page, lang: str) -> None:
    """Press the page's language switch (#language-switch) for `lang`, as a visitor does."""
    from explorer.locales import LANGUAGES

    page.locator("#language-switch").get_by_text(LANGUAGES[lang], exact=True).click()


def start_run(page, button: str, status: str, tries: int = 10) -> None:
    """Press a run button until the page takes the press: its status line (`status`, a selector)
    leaves what it said before. Gradio drops a press while the page still counts the button's
    last event as running, and on a loaded machine it does so for a while after that event's
    last message is drawn; a press the page took shows at once, before the server answers. The
    status is read even where its section is hidden."""
    said = "(s) => document.querySelector(s).textContent"
    before = page.evaluate(said, status)
    for _ in range(tries):
        # a click dispatched in the page: the button may sit in a section not shown just now
        page.evaluate("(b) => document.querySelector(b).click()", button)
        try:
            page.wait_for_function("([s, b]) => document.querySelector(s).textContent !== b",
                                   arg=[status, before], timeout=10_000)
            return
        except Exception:   # playwright's TimeoutError: the press was dropped, press again
            continue
    raise AssertionError(f"{button} never started a run; {status} still says {before!r}")


def tiny_hf(kind: str, seed: int = 0, **overrides):
    """A tiny random-init transformers causal LM of the given family (fp32, eval)."""
    import transformers as tf
    common = dict(vocab_size=97, hidden_size=64, intermediate_size=96, num_hidden_layers=3,
                  num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256,
                  rms_norm_eps=1e-6)
    if kind == "llama":
        cfg = tf.LlamaConfig(**common, tie_word_embeddings=False)
        cls = tf.LlamaForCausalLM
    elif kind == "llama_tied":
        cfg = tf.LlamaConfig(**common, tie_word_embeddings=True)
        cls = tf.LlamaForCausalLM
    elif kind == "mistral":
        cfg = tf.MistralConfig(**common, sliding_window=7)
        cls = tf.MistralForCausalLM
    elif kind == "qwen2":
        cfg = tf.Qwen2Config(**common)
        cls = tf.Qwen2ForCausalLM
    elif kind == "gemma3":
        cfg = tf.Gemma3TextConfig(**{**common, "num_hidden_layers": 6, "num_key_value_heads": 1},
                                  head_dim=32, sliding_window=5, query_pre_attn_scalar=24,
                                  rope_parameters={"sliding_attention": {"rope_type": "default", "rope_theta": 10000.0},
                                                   "full_attention": {"rope_type": "default", "rope_theta": 1000000.0}})
        cls = tf.Gemma3ForCausalLM
    else:
        raise ValueError(kind)
    for k, v in overrides.items():
        setattr(cfg, k, v)
    cfg._attn_implementation = "eager"
    torch.manual_seed(seed)
    model = cls(cfg).eval()
    # random norms: zero/one init would hide a wrong (1 + w) or a missing norm
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "norm" in name or name.endswith("bias"):
                p.normal_(0.0, 0.3 if "norm" in name else 0.1)
                if "norm" in name and kind != "gemma3":
                    p.add_(1.0)
    return model


def ours_from_hf(hf_model):
    config = config_from_hf(hf_model.config.to_dict())
    with torch.device("meta"):
        model = model_from_config(config)
    load_state(model, {k: v.detach().clone() for k, v in hf_model.state_dict().items()})
    return model.eval().requires_grad_(False)


# --- decoders (engine.static.StaticDecoder, engine.fused.FusedDecoder) against the engine ---

N_PROMPT, N_TOTAL = 9, 30  # the windows (5, 7) and sinks+window (3 + 5) are all exceeded


def decode_options():
    """The run options every decoder must reproduce: each cache layout and a sink logit."""
    from models.attention import MaskSpec
    from models.forward import RunOptions
    return {"default": RunOptions(), "window 6": RunOptions(mask=MaskSpec(window=6)),
            "sinks 3 + window 5": RunOptions(mask=MaskSpec(window=5, sinks=3)),
            "sink logit": RunOptions(sink_logit=0.7)}


def decode_sequence(seed=4):
    return torch.randint(0, 97, (1, N_TOTAL), generator=torch.Generator().manual_seed(seed))


def decoder_logits(model, decoder, ids):
    """Eager prefill of N_PROMPT tokens, then one decoder step per remaining token; returns the
    logits of positions N_PROMPT-1 .. N_TOTAL-1 (each predicting the next token) and the cache."""
    with torch.inference_mode():
        cache = decoder.new_cache(N_TOTAL)
        rows = [model(ids[:, :N_PROMPT], cache=cache, options=decoder.options)[0, -1]]
        for i in range(N_PROMPT, N_TOTAL):
            rows.append(decoder.step(int(ids[0, i]), cache)[0, -1])
    return torch.stack(rows), cache


def batched_logits(decoder, ids, options) -> list:
    """Each sequence of `ids` ((1, N_TOTAL) each) prefilled through a BatchedDecoder's runs,
    then all stepped together one token at a time; per sequence the (N_TOTAL - N_PROMPT + 1, V)
    logits of positions N_PROMPT-1 .. N_TOTAL-1."""
    runs = [decoder.start(N_TOTAL, options) for _ in ids]
    rows = [[] for _ in ids]
    with torch.inference_mode():
        for run, seq, out in zip(runs, ids, rows):
            out.append(decoder.prefill(seq[0, :N_PROMPT].tolist(), run)[0, -1])
        for i in range(N_PROMPT, N_TOTAL):
            logits = decoder.step_many([int(s[0, i]) for s in ids], runs)
            for b, out in enumerate(rows):
                out.append(logits[b, -1])
    return [torch.stack(out) for out in rows]


def assert_cache_bookkeeping(cache):
    """The Python-side counts agree with what the buffers hold after N_TOTAL tokens."""
    assert cache.pos == N_TOTAL
    for layer in cache.layers:
        assert layer.length == min(N_TOTAL, layer.capacity)
        held = layer.positions().tolist()
        assert held == sorted(held) and held[-1] == N_TOTAL - 1 and len(held) == layer.length
        if layer.kind == "sinks+window":
            assert held[:3] == [0, 1, 2]


def measure(found, label: str) -> float:
    """The value of the measure labelled `label` in a claims-board Evidence, among the measures
    its verdict rests on or those of its consistency checks."""
    every = (*found.measures, *(m for check in found.consistency for m in check.measures))
    return next(m.value for m in every if m.label == label)


def check_evidence(found, claim: str, tab: str, section: str, model: str | None = None) -> None:
    """An Evidence's shape: its claim, the tab and section it links to, the model it ran on (when
    given), and its criterion and every measure's label formatting in both languages."""
    from explorer.claims.evidence import Evidence
    from explorer.locales import text

    assert isinstance(found, Evidence) and found.claim == claim
    assert found.tab == tab and found.section == section
    assert found.criterion == f"claims.{claim}.criterion"
    if model is not None:
        assert found.model == model
    for lang in ("en", "zh"):
        assert text(found.criterion, lang, **found.fields)
        assert all(text(m.label, lang) for m in found.measures)
        assert all(text(c.label, lang) and all(text(m.label, lang) for m in c.measures)
                   for c in found.consistency)


def open_generate_tab(page, app_url: str, load_timeout_ms: int = 180_000) -> None:
    """Open the app, wait until the default model is loaded (the first load may convert the
    checkpoint), and select the Generate tab."""
    import re

    page.goto(app_url)
    page.locator("#model-picker").wait_for()
    page.locator("#model-status").get_by_text(re.compile("is loaded|已加载")).wait_for(
        timeout=load_timeout_ms)
    page.locator("#explorer-tabs [role=tab]", has_text="Generate").click()
    page.locator("#gen-prompt textarea").wait_for()


def measured_default(loaded) -> str:
    """The precision a checkpoint's decode steps read with no EXPLORER_WEIGHTS, written out from
    the registry: the one measured for it where this CPU has its SIMD path (and, for gguf, the
    converted folder keeps the codes), else fp32."""
    from engine.quantized import available_weights, simd_paths
    own = loaded.spec.decode_weights
    usable = own in available_weights(loaded.model) and simd_paths()[own]
    return own if own == "fp32" or usable else "fp32"


class DigitTokenizer:
    """Just what stream_generation needs from a tokenizer: decode."""

    def decode(self, ids, skip_special_tokens=False):
        return " ".join(f"<{i}>" for i in ids)


def run(model, ids, **fields):
    """(snapshots, final session); the stream yields one mutable Session, so each yield is
    recorded as (phase, tokens so far, replay points so far)."""
    from explorer.generate import request as req, session as sess

    request = req.Request(prompt="x", **fields)
    snapshots, session = [], None
    for session in sess.stream_generation(model, DigitTokenizer(), ids, request):
        snapshots.append((session.phase, len(session.records), len(session.replay)))
    return snapshots, session


def run_coroutine(coroutine, timeout: float = 60.0):
    """asyncio.run(coroutine) on a thread of its own, its result or its exception: in the whole
    suite a Playwright session fixture may hold an event loop in this thread, where asyncio.run
    refuses to start another."""
    import asyncio
    from concurrent.futures import ThreadPoolExecutor

    pool = ThreadPoolExecutor(1)
    try:
        return pool.submit(asyncio.run, coroutine).result(timeout)
    finally:
        pool.shutdown(wait=False)


def middleware_client(middleware: list):
    """A test client of an app that answers "app: <path>" to any GET or POST, behind
    `middleware` (FastAPI's entries, as the app's own routes give them)."""
    from starlette.applications import Starlette
    from starlette.responses import PlainTextResponse
    from starlette.routing import Route
    from starlette.testclient import TestClient

    app = Starlette(routes=[Route("/{path:path}", lambda request: PlainTextResponse("app: " + request.url.path),
                                  methods=["GET", "POST"])],
                    middleware=middleware)
    return TestClient(app)


def call_route(route, method: str, path: str, query: str) -> list:
    """The ASGI messages `route` (one of the app's own middleware routes) sends for one request
    from 10.0.0.9, with no body."""
    sent: list = []

    async def send(message):
        sent.append(message)

    scope = {"type": "http", "method": method, "path": path, "root_path": "",
             "query_string": query.encode(), "headers": [], "client": ("10.0.0.9", 5000)}
    run_coroutine(route(scope, None, send), timeout=30)
    return sent
