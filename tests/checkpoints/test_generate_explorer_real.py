"""The Generate explorer on the real checkpoints: their config rows, SmolLM2's stream against the
engine and the full forward, Gemma's local layers capped at 512 (the tiny models:
tests/unit/test_generate_explorer.py)."""
from __future__ import annotations

import json

import pytest
import torch

from explorer.generate import checks, request as req, session as sess, shapes
from tests.helpers import measured_default
from tests.unit.test_kv_calculator import shape


def test_loaded_model_rows_from_the_real_configs():
    from explorer.checkpoints import prepare_embedded
    from models.config import config_from_hf

    gemma = config_from_hf(json.loads((prepare_embedded("gemma-3-270m") / "config.json").read_text()))
    row = shapes.shape_from_config("Gemma 3 270M (loaded)", gemma)
    published = shape("Gemma 3 270M")
    assert (row.n_layers, row.n_kv_heads, row.head_dim, row.window, row.n_global) == \
        (published.n_layers, published.n_kv_heads, published.head_dim, published.window, published.n_global)
    assert row.bytes_at(2000, 4) == published.bytes_at(2000, 4)
    smol = config_from_hf(json.loads((prepare_embedded("smollm2-135m-instruct") / "config.json").read_text()))
    row = shapes.shape_from_config("SmolLM2", smol)
    assert row.window is None and row.bytes_per_token(4) == 2 * 30 * 3 * 64 * 4


# ----- the real checkpoints -----------------------------------------------------------------
@pytest.fixture(scope="module")
def runtime():
    from explorer.runtime import Runtime

    return Runtime(device="cpu", dtype=torch.float32)


@pytest.mark.parametrize("chosen", ["fp32", None])
def test_real_smollm2_stream_matches_engine_and_full_forward(runtime, monkeypatch, chosen):
    """The served stream against the engine: with fp32 chosen, the eager engine's own greedy
    tokens and C4 within the exact bound; with the served default (gguf for SmolLM2 where the
    CPU has AVX512_VNNI), the engine stepping with the same gguf products (like with like) and
    C4 within that precision's bound."""
    from explorer.serving import Scheduler
    from engine.quantized import WEIGHTS_ENV, weights_of
    from models.generate import SamplingParams, generate
    from models.layers import weight_provider

    if chosen:
        monkeypatch.setenv(WEIGHTS_ENV, chosen)
    else:
        monkeypatch.delenv(WEIGHTS_ENV, raising=False)
    loaded = runtime.get("smollm2-135m-instruct")
    ids, chat = req.encode_prompt(loaded.tokenizer, "Name a colour.")
    assert chat and loaded.tokenizer.decode(ids).endswith("<|im_start|>assistant\n")
    request = req.Request(prompt="Name a colour.", max_new_tokens=4, compare_no_cache=False)
    *_, session = sess.stream_generation(loaded.model, loaded.tokenizer, ids, request,
                                         scheduler=Scheduler(loaded.model))
    assert session.weights == (chosen or measured_default(loaded))
    table = weights_of(loaded.model, session.weights).table if session.weights != "fp32" else None
    with weight_provider(table):   # the engine's steps on the same products (fp32: its own)
        direct = [s.token_id for s in generate(loaded.model, ids, SamplingParams(max_new_tokens=4))]
    assert session.generated_ids == direct
    assert session.bytes_match_formula()
    assert session.records[-1].cache_bytes[0] == 2 * 3 * 64 * 4 * (len(ids) + 3)
    assert max(session.logit_diffs) <= checks.c4_tolerance(session.weights)
    if session.weights == "fp32":
        assert checks.c4_tolerance(session.weights) == checks.C4_TOLERANCE


def run_real(loaded, ids, request):
    *_, session = sess.stream_generation(loaded.model, loaded.tokenizer, ids, request)
    return None, session


@pytest.mark.slow
def test_real_gemma_local_layers_cap_at_512(runtime):
    """C9 on the checkpoint: a 520-token prompt, two tokens: 15 local layers hold 512, 3 global
    layers hold everything."""
    from explorer.texts import long_text

    loaded = runtime.get("gemma-3-270m")
    ids, chat = req.encode_prompt(loaded.tokenizer, long_text()[:4000])
    assert not chat and ids[0] == loaded.config.bos_token_id
    ids = ids[:520]
    request = req.Request(prompt="x", max_new_tokens=2, compare_no_cache=False,
                              check_full_forward=False)
    _, session = run_real(loaded, ids, request)
    last = session.records[-1]
    local = [i for i, lay in enumerate(session.layouts) if lay.kind == "window"]
    glob = [i for i, lay in enumerate(session.layouts) if lay.kind == "full"]
    assert len(local) == 15 and len(glob) == 3
    assert {last.cache_lengths[i] for i in local} == {512}
    assert {last.cache_lengths[i] for i in glob} == {521}
    assert session.bytes_match_formula()
    assert last.cache_bytes[glob[0]] == 2 * 1 * 256 * 4 * 521
    assert last.cache_bytes[local[0]] == 2 * 1 * 256 * 4 * 512
