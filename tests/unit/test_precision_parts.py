"""bench/precision_parts.py: the variants round what they say and nothing else, and the bench
runs end to end on a real checkpoint."""
import pytest
import torch
import torch.nn.functional as F

from bench import precision_parts as parts
from models.layers import Linear
from tests.helpers import ours_from_hf, tiny_hf


@pytest.fixture(scope="module")
def tiny():
    return ours_from_hf(tiny_hf("gemma3"))


def _bf16(t):
    return t.to(torch.bfloat16).float()


def test_only_the_named_kind_of_matrix_is_rounded(tiny):
    x = torch.randn(3, tiny.config.d_model, generator=torch.Generator().manual_seed(0))
    table = parts.emulated_table(tiny, round_weights=True, round_inputs=True, only="wo")
    names = {m: n for n, m in tiny.named_modules()}
    rounded = 0
    for module, product in table.items():
        if module is tiny:   # the LM head stays fp32 when one kind is singled out
            assert torch.equal(product(x, None), F.linear(x, tiny.lm_head_weight()))
            continue
        inp = torch.randn(3, module.weight.shape[1], generator=torch.Generator().manual_seed(1))
        if names[module].endswith("wo"):
            rounded += 1
            assert torch.equal(product(inp, None), F.linear(_bf16(inp), _bf16(module.weight)))
            assert not torch.equal(product(inp, None), F.linear(inp, module.weight))
        else:
            assert torch.equal(product(inp, None), F.linear(inp, module.weight))
    assert rounded == tiny.config.n_layers
    assert len(table) == sum(isinstance(m, Linear) for m in tiny.modules()) + 1


def test_weights_or_inputs_alone(tiny):
    table_w = parts.emulated_table(tiny, round_weights=True, round_inputs=False)
    table_x = parts.emulated_table(tiny, round_weights=False, round_inputs=True, head=False)
    module = next(m for m in tiny.modules() if isinstance(m, Linear))
    inp = torch.randn(2, module.weight.shape[1])
    assert torch.equal(table_w[module](inp, None), F.linear(inp, _bf16(module.weight)))
    assert torch.equal(table_x[module](inp, None), F.linear(_bf16(inp), module.weight))
    x = torch.randn(2, tiny.config.d_model)
    assert torch.equal(table_x[tiny](x, None), F.linear(x, tiny.lm_head_weight()))
    assert torch.equal(table_w[tiny](x, None), F.linear(x, _bf16(tiny.lm_head_weight())))


def test_measure_counts_flips_and_near_ties(tiny):
    from explorer.generate.precision import NEAR_TIE

    ids = torch.randint(0, 97, (40,), generator=torch.Generator().manual_seed(3)).tolist()
    found = parts.measure(tiny, ids)
    perplexity, near = found.pop("reference")
    assert 0 <= near <= len(ids) - 1 and perplexity > 1
    assert set(found) == {label for label, _ in parts.variants(tiny)}
    for price in found.values():
        assert price.top1 == pytest.approx(1 - price.flips / (len(ids) - 1))
        assert price.near_tie_flips <= min(price.flips, near) and price.max_dlogit > 0
    # the tiny model's logits are within ~1 of each other: most positions are near ties
    assert near > (len(ids) - 1) // 2 and NEAR_TIE == 0.5


