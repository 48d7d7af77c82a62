"""The streaming CLI prints what the engine generates, and refuses bad parameters."""
import pytest
import torch
from transformers import AutoTokenizer

from explorer import cli
from explorer.checkpoints import prepare_embedded
from explorer.prompts import encode
from models.generate import SamplingParams, generate
from models.loading import load_model


def test_cli_streams_the_engine_greedy_completion(capsys):
    assert cli.main(["--max-new-tokens", "6", "Name a colour."]) == 0
    printed = capsys.readouterr().out
    folder = prepare_embedded("smollm2-135m-instruct")
    tok = AutoTokenizer.from_pretrained(folder)
    model = load_model(folder, device="cpu", dtype=torch.float32)
    ids = encode(tok, "Name a colour.", 4096, chat=True)
    assert tok.decode(ids).startswith("<|im_start|>")  # chat template applied
    out = []
    for s in generate(model, ids, SamplingParams(max_new_tokens=6)):
        if s.finished == "eos":
            break
        out.append(s.token_id)
    assert printed == tok.decode(out, skip_special_tokens=True) + "\n"
    assert printed.strip()


def test_cli_rejects_non_finite_temperature(capsys):
    assert cli.main(["--temperature", "nan", "hi"]) == 2
    assert "temperature must be a finite number" in capsys.readouterr().err


@pytest.mark.slow
def test_cli_compiled_decode_prints_the_same_completion(capsys):
    """--compile: the torch.compile'd static step on the real checkpoint, same greedy text."""
    args = ["--max-new-tokens", "12", "--raw", "The three primary colours are"]
    assert cli.main(args) == 0
    eager = capsys.readouterr().out
    assert cli.main(["--compile", "--stats", *args]) == 0
    captured = capsys.readouterr()
    assert captured.out == eager and eager.strip()
    assert "compiles the static step" in captured.err
    # the summary keeps the compile out of the steady decode rate, and says so
    assert "the first decode step, which compiles, took" in captured.err and "; decode " in captured.err


def test_cli_fused_decode_prints_the_same_completion(capsys):
    """--fused: the fused C++ step on the real checkpoint, same greedy text as the engine."""
    args = ["--max-new-tokens", "12", "--raw", "The three primary colours are"]
    assert cli.main(args) == 0
    eager = capsys.readouterr().out
    assert cli.main(["--fused", "--stats", *args]) == 0
    captured = capsys.readouterr()
    assert captured.out == eager and eager.strip()
    assert "; decode " in captured.err and "compiles" not in captured.err
