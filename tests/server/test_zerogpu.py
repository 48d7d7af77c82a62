"""ZeroGPU (explorer/web/zerogpu.py): with SPACES_ZERO_GPU=true and a stand-in `spaces` whose
GPU() forks a process per call and pickles everything across (tests/fake_spaces), the app's
model events run in those calls and answer as they do off ZeroGPU: a Generate run to its end
and one forward-running endpoint of every other tab, compared with a second app, off ZeroGPU,
on the same loaded models. Off ZeroGPU nothing is wrapped; with the flag but no `spaces`,
a log line says so and the app serves as before."""
from __future__ import annotations

import base64
import contextlib
import inspect
import json
import logging
import os
import re
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import torch

from bench.serve import environment
from explorer.runtime import ModelLoadError, Runtime
from tests.helpers import LONG_PROMPT, wait_for_texts

FAKE_SPACES = Path(__file__).resolve().parents[1] / "fake_spaces"
CLAIMS_FAKE = "tests.claims_fakes:FAST_REGISTRY"   # a board that answers in a second
SMOL = "smollm2-135m-instruct"
PROMPT = "The cat sat on the mat. The dog"
GENERATE = dict(model=SMOL, lang="en", prompt="Name a colour.", max_new=8, temperature=0.0,
                top_k=0, top_p=1.0, seed=0, policy="full", window=64, sinks=4, compare=True,
                check=True)


@contextlib.contextmanager
def serving(serve, tabs=None, **env):
    """(demo, client) of the app built under `env`, served in-process until the block ends
    (serve: the conftest fixture)."""
    from gradio_client import Client

    with serve(tabs, env) as served:
        yield served.demo, Client(served.url, verbose=False)


@pytest.fixture(scope="module")
def fake_spaces():
    sys.path.insert(0, str(FAKE_SPACES))
    try:
        import spaces
        assert spaces.__file__.startswith(str(FAKE_SPACES))
        yield spaces
        spaces.kill_children()   # no call's process outlives the module (see the fake)
    finally:
        sys.path.remove(str(FAKE_SPACES))
        sys.modules.pop("spaces", None)


@pytest.fixture(scope="module")
def apps(runtime, fake_spaces, serve):
    """{"zerogpu": (demo, client), "off": (demo, client)}: the whole app twice, on one Runtime
    whose models are all loaded first (what app.main does on ZeroGPU). Both compute on one
    torch thread, as a GPU call does on the CPU (zerogpu's _after_fork): with two threads off
    ZeroGPU a sum in another order can land a value rounded for display on the other side of
    its last digit (the Flash tab's tile scores, to 4 decimals)."""
    from explorer.web import zerogpu
    from models.device import set_thread_baseline

    with environment(SPACES_ZERO_GPU="true"):
        assert zerogpu.preload_on_zerogpu(runtime)
    assert all(runtime.is_loaded(name) for name in runtime.names())
    with contextlib.ExitStack() as stack:
        # the process's count, not a block's: the handlers run in threads the servers start,
        # which take the baseline (models/device.py)
        stack.callback(set_thread_baseline, set_thread_baseline(1))
        yield {
            "zerogpu": stack.enter_context(serving(serve, SPACES_ZERO_GPU="true",
                                                   EXPLORER_CLAIMS_REGISTRY=CLAIMS_FAKE)),
            "off": stack.enter_context(serving(serve, SPACES_ZERO_GPU=None,
                                               EXPLORER_CLAIMS_REGISTRY=CLAIMS_FAKE)),
        }


def model_fns(demo):
    from explorer.web import zerogpu

    return {i: f.fn for i, f in demo.fns.items() if f.concurrency_id in zerogpu.gpu_groups()}


def gpu_calls(spaces, name):
    """The child pids of the GPU calls made so far to the function `name`."""
    return [pid for called, _, pid in spaces.calls if called == name]


# ----------------------------------------------------------------------------- without a server
def test_preload_loads_every_model_and_skips_one_that_fails(caplog):
    def load(folder, device=None, dtype=None):
        if folder.name == "broken":
            raise OSError("no such file")
        model = torch.nn.Linear(1, 1)
        model.config = {"name": folder.name}
        return model

    runtime = Runtime("cpu", torch.float32, registry={"a": object(), "broken": object(), "c": object()},
                      prepare=lambda name, progress=None: Path("/nowhere") / name, load_model=load,
                      load_tokenizer=lambda folder: "tok")
    seen = []
    with caplog.at_level(logging.ERROR, logger="explorer.runtime"):
        assert runtime.preload(progress=lambda f, m: seen.append(f)) == ["a", "c"]
    assert runtime.is_loaded("a") and runtime.is_loaded("c") and not runtime.is_loaded("broken")
    assert "preload: broken is not loaded" in caplog.text
    # one bar for the whole preload: each model's progress scaled into its third
    assert seen == sorted(seen) and seen[0] == 0.0 and seen[-1] == 1.0
    assert any(abs(f - 1 / 3) < 1e-9 for f in seen) and max(seen[:3]) <= 1 / 3
    with pytest.raises(ModelLoadError):   # a visitor asking for it gets the load's error
        runtime.get("broken")


def test_durations_follow_each_event_time_limit_within_bounds():
    from explorer.web import zerogpu

    assert zerogpu.gpu_duration(None) == zerogpu.DEFAULT_DURATION_S == 60
    assert zerogpu.gpu_duration(45) == 45
    assert zerogpu.gpu_duration(630) == zerogpu.MAX_DURATION_S


def test_a_forked_call_computes_after_the_parent_used_openmp():
    """GNU OpenMP's threads do not survive a fork: without zerogpu's _after_fork, a forked
    child's first parallel region after the parent ran one waits forever (a matmul here)."""
    import multiprocessing

    from explorer.web import zerogpu

    zerogpu._prepare_forked_calls()
    a = torch.randn(1000, 1000)
    a @ a   # the parent's OpenMP threads are up (on a machine with more than one core)
    fork = multiprocessing.get_context("fork")
    answers = fork.Queue()
    child = fork.Process(target=_matmul, args=(a, answers), daemon=True)
    child.start()
    child.join(timeout=30)
    hung = child.is_alive()
    if hung:
        child.kill()
    assert not hung and answers.get(timeout=5) == 1


def _matmul(a, answers):
    a @ a
    answers.put(torch.get_num_threads())


def test_a_gpu_call_closed_by_its_caller_ends_while_another_runs(fake_spaces):
    """What Stop relies on (explorer/web/stopping.py): closing a GPU call's generator ends its
    process at its next value, however much it would still send and whatever other call is
    open (each process forked for a call gets a copy of every pipe open in the caller)."""
    with environment(SPACES_ZERO_GPU="true"):
        endless = fake_spaces.GPU(duration=60)(_endless)
    first, second = endless(), endless()
    assert next(first) and next(second)
    first_pid, second_pid = gpu_calls(fake_spaces, "_endless")[-2:]
    first.close()
    assert _ends_within(first_pid, 10), "a closed call's process still runs"
    assert _alive(second_pid) and next(second)
    second.close()
    assert _ends_within(second_pid, 10), "a closed call's process still runs"


def _endless():
    while True:   # far more than a pipe's buffer holds, sent as fast as the caller reads
        yield "x" * 100_000


def _ends_within(pid: int, seconds: float) -> bool:
    deadline = time.time() + seconds
    while time.time() < deadline and _alive(pid):
        time.sleep(0.05)
    return not _alive(pid)


# ----------------------------------------------------------------------------- off ZeroGPU
def test_off_zerogpu_attach_gpu_changes_nothing(apps, fake_spaces):
    from explorer.web import zerogpu

    demo, _ = apps["off"]
    before = model_fns(demo)
    assert len(before) > 20 and not any(hasattr(fn, "zerogpu") for fn in before.values())
    with environment(SPACES_ZERO_GPU=None):   # `spaces` importable, the flag unset
        assert not zerogpu.on_zerogpu()
        assert zerogpu.attach_gpu(demo) == 0
        assert not zerogpu.preload_on_zerogpu(object())   # would fail if it touched the runtime
    after = model_fns(demo)
    assert all(after[i] is before[i] for i in before)


def test_the_flag_without_spaces_is_logged_and_the_app_serves_on_cpu(serve, caplog):
    from explorer.web import zerogpu

    with environment(SPACES_ZERO_GPU="true"), contextlib.ExitStack() as stack:
        stack.enter_context(pytest.MonkeyPatch.context()).setitem(sys.modules, "spaces", None)
        stack.enter_context(caplog.at_level(logging.WARNING, logger=zerogpu.__name__))
        assert not zerogpu.on_zerogpu()
        demo, client = stack.enter_context(serving(serve, ("explorer.ui.tabs.moe",)))
        assert "SPACES_ZERO_GPU is set but the `spaces` package cannot be imported" in caplog.text
        assert not any(hasattr(fn, "zerogpu") for fn in model_fns(demo).values())
        heat, summary = client.predict("explorer-moe-none", "Tokens go to experts.", 3, "en",
                                       api_name="/moe_route")
        assert "nats/token" in summary


# ----------------------------------------------------------------------------- on ZeroGPU
def test_every_model_event_is_wrapped_with_its_duration(apps, fake_spaces):
    from explorer.web import zerogpu

    demo, _ = apps["zerogpu"]
    functions = [f for f in demo.fns.values() if f.concurrency_id in zerogpu.gpu_groups()]
    assert len(functions) > 20
    for block_fn in functions:
        assert hasattr(block_fn.fn, "zerogpu"), block_fn.api_name   # spaces' mark
    generate = next(f for f in functions if f.api_name == "generate")
    assert inspect.isgeneratorfunction(generate.fn)   # Gradio streams what the handler yields
    # Gradio still finds the gr.Progress default through the wrapper (functools.wraps)
    attention_map = next(f for f in functions if f.api_name == "attention_map")
    assert attention_map.tracks_progress


def test_generate_runs_in_its_own_gpu_call_with_the_tokens_of_a_run_off_zerogpu(apps, fake_spaces,
                                                                                 runtime):
    from explorer.serving import registry

    _, client = apps["zerogpu"]
    model = runtime.get(SMOL).model

    def parent_steps() -> int:   # what this process's loop of the model (if any) has decoded
        loop = registry._SCHEDULERS.get(model)
        return -1 if loop is None else loop.stats["decode_steps"] + loop.stats["prefill_forwards"]

    before, parent_before = len(gpu_calls(fake_spaces, "run_generate")), parent_steps()
    final = client.predict(*GENERATE.values(), api_name="/generate")
    children = gpu_calls(fake_spaces, "run_generate")[before:]
    assert len(children) == 1 and children[0] != os.getpid()
    assert [d for n, d, _ in fake_spaces.calls if n == "run_generate"][-1] == 120
    # the decode loop lived in the child: this process's loop (another test may have made one
    # earlier in the session) computed nothing for this run
    assert parent_steps() == parent_before
    reference = apps["off"][1].predict(*GENERATE.values(), api_name="/generate")
    assert final[0] == reference[0] and len(final[0]) > 0


# one cheap forward-running endpoint of every tab: (api_name, arguments)
ENDPOINTS = [
    ("attention_map", (SMOL, "en", PROMPT, 2, "all", "causal", 8, 2, 1.0, "eager", 0)),
    ("rope_distance", (SMOL, "en", PROMPT, 16)),
    ("flash_run", (SMOL, "en", PROMPT, 64, 1, 2, "causal", 16, 2, 16, 16, -1)),
    ("architecture_norm_init", ("en", "6, 24")),
    ("moe_route", ("explorer-moe-none", "Tokens go to experts.", 3, "en")),
    ("claims_board", (SMOL, "en")),
]


@pytest.mark.parametrize("api_name,arguments", ENDPOINTS, ids=[e[0] for e in ENDPOINTS])
def test_each_tab_answers_on_zerogpu_as_off_it(apps, fake_spaces, api_name, arguments):
    calls = len(fake_spaces.calls)
    on = apps["zerogpu"][1].predict(*arguments, api_name="/" + api_name)
    made = fake_spaces.calls[calls:]
    assert len(made) == 1 and made[0][2] != os.getpid()   # one GPU call, in another process
    off = apps["off"][1].predict(*arguments, api_name="/" + api_name)
    assert_same(comparable(on), comparable(off))


def comparable(output):
    """An endpoint's answer without what differs between two runs of the same computation:
    durations and clock times in text and data, and how a chart's JSON spells its styling (a
    Plotly figure that crossed a process by pickling is rebuilt, e.g. "Viridis" written out as
    its colours); a chart's data (x, y, z, text, names) is kept, binary arrays decoded."""
    if isinstance(output, (tuple, list)):
        return [comparable(value) for value in output]
    if isinstance(output, dict) and output.get("type") == "plotly":
        figure = json.loads(output["plot"])
        keep = ("type", "name", "x", "y", "z", "text", "customdata")
        return [{k: comparable(trace[k]) for k in keep if k in trace} for trace in figure["data"]]
    if isinstance(output, dict) and "bdata" in output:   # Plotly's base64 typed array
        return np.frombuffer(base64.b64decode(output["bdata"]), dtype=output["dtype"]).tolist()
    if isinstance(output, dict):
        return {key: comparable(value) for key, value in output.items() if key != "seconds"}
    if isinstance(output, str):
        output = re.sub(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d", "<clock>", output)
        return re.sub(r"\b\d+(\.\d+)? (s|ms)\b", "<duration>", output)
    return output


NUMBER = re.compile(r"(\d+\.\d+(?:e[-+]\d+)?)")


def assert_same(on, off, where="answer"):
    """Equal, but for float rounding: the GPU call computes on one CPU thread (zerogpu's
    _after_fork), which sums in another order than the two threads off ZeroGPU. Floats within
    1e-4 (relative) or 1e-6; a decimal printed in text within 2 units of its last digit."""
    assert type(on) is type(off), f"{where}: {type(on).__name__} != {type(off).__name__}"
    if isinstance(on, (list, tuple)):
        assert len(on) == len(off), f"{where}: {len(on)} != {len(off)} items"
        for i, (a, b) in enumerate(zip(on, off)):
            assert_same(a, b, f"{where}[{i}]")
    elif isinstance(on, dict):
        assert on.keys() == off.keys(), where
        for key in on:
            assert_same(on[key], off[key], f"{where}[{key!r}]")
    elif isinstance(on, float):
        assert on == pytest.approx(off, rel=1e-4, abs=1e-6), where
    elif isinstance(on, str):
        a, b = NUMBER.split(on), NUMBER.split(off)
        assert len(a) == len(b) and a[::2] == b[::2], f"{where}: {on!r} != {off!r}"
        for x, y in zip(a[1::2], b[1::2]):
            mantissa, _, exponent = x.partition("e")
            unit = 10.0 ** (int(exponent or 0) - len(mantissa.split(".")[1]))
            assert abs(float(x) - float(y)) <= 2 * unit, f"{where}: {x} != {y} in {on!r}"
    else:
        assert on == off, where


def test_a_refused_input_reaches_the_visitor_as_it_does_off_zerogpu(apps, fake_spaces):
    """The handler's gr.Error is raised in the child and crosses back as gr.Error: the same
    words on the page, not ZeroGPU's generic "worker error"."""
    from gradio_client.exceptions import AppError

    messages = []
    for app_name in ("zerogpu", "off"):
        calls = len(fake_spaces.calls)
        with pytest.raises(AppError) as error:
            apps[app_name][1].predict(*{**GENERATE, "prompt": "word " * 1100}.values(),
                                      api_name="/generate")
        messages.append(str(error.value))
        assert len(fake_spaces.calls) - calls == (app_name == "zerogpu")
    assert messages[0] == messages[1] and "the limit here is 1,024" in messages[0]


def test_stop_frees_the_generate_group_for_the_next_run(apps, fake_spaces):
    """Stop (the client's cancel, what the page's Stop button sends) ends the visitor's stream
    and the next run is served at once. (The GPU call itself stops at its next value when
    Gradio closes the wrapper's generator: test_a_gpu_call_closed_by_its_caller_ends_...)"""
    _, client = apps["zerogpu"]
    job = client.submit(*{**GENERATE, "prompt": LONG_PROMPT, "max_new": 200, "compare": False, "check": False}.values(),
                        api_name="/generate")
    wait_for_texts(job, 2, timeout=60)
    job.cancel()
    cancelled_at = time.time()
    final = client.predict(*{**GENERATE, "max_new": 1, "compare": False, "check": False}.values(),
                           api_name="/generate")
    assert final[1].startswith("Done") and time.time() - cancelled_at < 60
    assert len([o for o in job.outputs() if o[0]]) < 100


def test_the_stop_button_ends_a_run_inside_a_gpu_call(apps, fake_spaces):
    """Stop's flag lives in the app's process, which the GPU call's process does not see: the
    stop wrapper stays outside the call (zerogpu.attach_gpu), drops the call's next message,
    closes it (its process ends) and answers with the last message it sent, marked stopped."""
    from gradio_client import Client

    demo, shared = apps["zerogpu"]
    # no call of an earlier test decodes beside this run on the CPU, however it ended
    fake_spaces.kill_children()
    client = Client(shared.src, verbose=False)   # a session of its own
    job = client.submit(*{**GENERATE, "prompt": LONG_PROMPT, "max_new": 200, "compare": False, "check": False}.values(),
                        api_name="/generate")
    wait_for_texts(job, 2, timeout=60)
    child = [pid for name, _, pid in fake_spaces.calls if name == "run_generate"][-1]
    client.predict(api_name="/stop")
    final = job.result(timeout=60)
    n = int(re.search(r"after (\d+) new tokens", final[1]).group(1))
    assert final[1] == f"**Stopped** after {n} new tokens." and 2 <= n < 200
    table = client.predict("en", api_name="/runs")
    assert dict(zip(table["headers"], table["data"][-1]))["new tokens"] == f"{n} (stopped)"
    assert _ends_within(child, 30), "the GPU call's process still runs after Stop"
    client.close()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with contextlib.suppress(OSError):   # a zombie not yet reaped by the fake's join thread
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().split(") ")[-1][0] != "Z"
    return True
