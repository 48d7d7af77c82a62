"""The precision-parts bench runs on a real checkpoint (its parts:
tests/unit/test_precision_parts.py)."""
import pytest

from bench import precision_parts as parts


@pytest.mark.slow
def test_the_bench_runs_on_a_real_checkpoint(capsys):
    assert parts.main(["--model", "smollm2-135m-instruct", "--tokens", "24", "--first", "2",
                       "--threads", "1"]) == 0
    out = capsys.readouterr().out
    assert "24 tokens of \"Execution model\"" in out
    assert "weights bf16, inputs fp32" in out and "weights fp32, inputs bf16" in out
