"""llama.cpp in bench.precision: the shipped GGUF decoded greedily through the bench's loader.

llama-cpp-py-sync is in requirements-lock-dev.txt (make setup-dev), so these tests need it and fail (never skip)
where it is missing. Its wheel binds four C23 functions of glibc 2.38; on an older glibc the
loader runs a relinked copy of its libraries, so the first test proves that path here too.
"""
import sys

import pytest

from bench import precision

MODEL = "smollm2-135m-instruct"


@pytest.fixture(scope="module")
def tokenizer():
    from transformers import AutoTokenizer

    from explorer.checkpoints import prepare_embedded
    return AutoTokenizer.from_pretrained(prepare_embedded(MODEL))


def test_the_shipped_gguf_decodes_greedy_tokens_from_the_bench_prompt(tokenizer):
    from bench.decode import prompt_ids
    run, note = precision.llama_cpp_runner(MODEL, threads=1)   # one thread: no barrier to
    if run is None:                                              # wait on under the shared load
        pytest.fail(f"llama-cpp-py-sync is pinned in requirements-lock-dev.txt, yet: {note}")
    assert "SmolLM2-135M-Instruct.Q4_1.gguf" in note and "llama.cpp b" in note and "AVX" in note
    ids = prompt_ids(tokenizer, 16)
    assert precision.vocabulary_warning(run, tokenizer, ids) is None   # same ids for the prompt
    tokens = []
    rate = precision.decode_llama_cpp(run, ids, 4, tokens)
    assert len(tokens) == 4 and all(0 <= t < run.n_vocab() == len(tokenizer) for t in tokens)
    assert rate > 0
    again = []
    precision.decode_llama_cpp(run, ids, 4, again)   # reset: the same prompt, the same greedy run
    assert again == tokens


def test_without_either_package_the_bench_says_why_llama_cpp_is_not_measured(monkeypatch):
    monkeypatch.setitem(sys.modules, "llama_cpp", None)           # import raises ImportError
    monkeypatch.setitem(sys.modules, "llama_cpp_py_sync", None)
    run, note = precision.llama_cpp_runner(MODEL, threads=2)
    assert run is None
    assert note.startswith("llama.cpp not measured") and "llama-cpp-py-sync" in note
    assert "llama_cpp:" in note and "llama_cpp_py_sync:" in note


def test_leading_agreement_counts_the_shared_prefix():
    assert precision.leading_agreement([5, 6, 7, 8], [5, 6, 9, 8]) == 2
    assert precision.leading_agreement([5, 6], [5, 6, 7]) == 2
    assert precision.leading_agreement([1], [2]) == 0
