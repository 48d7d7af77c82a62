"""explorer/about/card.py: the model card's numbers come from the model, in both languages."""
from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch

from explorer.about import card as model_card
from tests.helpers import ours_from_hf, tiny_hf


@pytest.fixture(scope="module")
def loaded():
    model = ours_from_hf(tiny_hf("gemma3"))  # 6 layers: 5 sliding : 1 global
    spec = SimpleNamespace(title="Tiny Gemma", description="A tiny random model.", source_note="random",
                           licence="none", notice="")
    return SimpleNamespace(name="tiny", spec=spec, config=model.config, model=model,
                           dtype=torch.float32, device=torch.device("cpu"))


def test_card_numbers_are_read_from_the_model(loaded):
    card = model_card.run(loaded, "CPU")
    c = loaded.config
    assert card.kv_cache_bytes_per_token == 2 * c.n_layers * c.n_kv_heads * c.head_dim * 4
    assert card.parameters == sum(p.numel() for p in loaded.model.parameters())
    assert dict(card.layer_types) == {"sliding_attention": 5, "full_attention": 1}
    assert card.as_dict()["layer_types"] == {"sliding_attention": 5, "full_attention": 1}


def test_card_summary_in_both_languages(loaded):
    card = model_card.run(loaded, "CPU")
    en, zh = model_card.summary(card, "en"), model_card.summary(card, "zh")
    total = f"{card.kv_cache_bytes_per_token:,}"
    assert en.startswith("### Tiny Gemma") and total in en and total in zh
    assert "5 × sliding window of" in en and en != zh


def test_about_links_each_claim_to_its_tabs_and_points_to_the_board():
    from explorer.claims.registry import CLAIMS
    from explorer.ui.tabs import about

    built = {"generate": "generate.tab", "attention": "attention.tab", "rope": "rope.tab",
             "flash": "flash.tab", "architecture": "arch.tab", "moe": "moe.tab", "claims": "claims.tab",
             "next_token": "next.tab"}
    en, zh = about.draw_claims(built, "en"), about.draw_claims(built, "zh")
    assert "(planned)" not in en
    for entry in CLAIMS:
        row = next(line for line in en.splitlines() if line.startswith(f"| {entry.claim} |"))
        assert [f"(#open={place})" in row for place in entry.places] == [True] * len(entry.places)
    assert "| C11 | RoPE rotates dimension pairs; the score depends only on m − n. | [RoPE tab](#open=rope) |" in en
    assert "| C11 | RoPE 按位置旋转各维度对；注意力分数只取决于 m − n。 | [“RoPE 旋转位置编码”标签页](#open=rope) |" in zh
    # a tab that is not built is named as planned, without a link
    assert "| C14 | " in about.draw_claims({}, "en") and "(#open=" not in about.draw_claims({}, "en")
