"""The locale catalogue: plurals chosen from the count in English (none in Chinese), and the one
check that every language's texts pass at import."""
from __future__ import annotations

import pytest

from explorer.locales import Catalog, check_catalog, text
from explorer.masks import describe
from models.attention import MaskSpec


@pytest.mark.parametrize("n, en, zh", [
    (1, "1 sink + window 8", "1 个汇 + 窗口 8"),
    (2, "2 sinks + window 8", "2 个汇 + 窗口 8"),
    (5, "5 sinks + window 8", "5 个汇 + 窗口 8"),
])
def test_a_mask_names_its_sinks_in_the_number_the_count_needs(n, en, zh):
    mask = MaskSpec(window=8, sinks=n)
    assert describe(mask, "en") == en
    assert describe(mask, "zh") == zh


@pytest.mark.parametrize("n_kv, en, zh", [
    (0, "Gemma: 8 query heads share 0 KV heads", "Gemma: 8 个查询头共用 0 个 KV 头"),
    (1, "Gemma: 8 query heads share 1 KV head", "Gemma: 8 个查询头共用 1 个 KV 头"),
    (2, "Gemma: 8 query heads share 2 KV heads", "Gemma: 8 个查询头共用 2 个 KV 头"),
])
def test_english_plural_follows_the_count_and_chinese_has_none(n_kv, en, zh):
    fields = dict(title="Gemma:", n_q=8, n_kv=n_kv)
    assert text("attention.fig.groups_title", "en", **fields) == en
    assert text("attention.fig.groups_title", "zh-CN", **fields) == zh


@pytest.mark.parametrize("key, fields, one, two", [
    ("generate.roof.threads", {}, ", 1 intra-op thread", ", 2 intra-op threads"),
    ("moe.err.too_few_tokens", {}, "The text is 1 token long", "The text is 2 tokens long"),
    ("attention.gqa_summary", dict.fromkeys(("title", "n_heads", "n_rep", "q_shape", "k_shape", "v_shape",
                                              "layers", "head_dim", "tokens", "elem", "cache",
                                              "measured", "mha", "mqa"), 4),
     "4 query heads, 1 KV head,", "4 query heads, 2 KV heads,"),
])
def test_counted_nouns_are_singular_for_one_and_plural_otherwise(key, fields, one, two):
    count = "n_kv" if key == "attention.gqa_summary" else "n"
    assert one in text(key, "en", **fields, **{count: 1})
    assert two in text(key, "en", **fields, **{count: 2})
    assert "(s)" not in text(key, "en", **fields, **{count: 2})


@pytest.mark.parametrize("catalog, message", [
    ({"en": {"k": "{n} {n:head/heads/x}"}, "zh": {"k": "{n} 个头"}}, "plural"),
    ({"en": {"k": "{n} tokens"}, "zh": {"k": "{m} 个词元"}}, "formats"),
    ({"en": {"k": "A", "j": "B"}, "zh": {"k": "甲"}}, "missing"),
    ({"en": {"k": "A"}, "zh": {"k": "甲"}, "fr": {"k": "Á"}}, "unknown languages"),
    ({"en": {"k": "A"}, "zh": {"k": " "}}, "no text for zh"),
])
def test_the_catalogue_check_rejects_what_would_fail_in_front_of_a_visitor(catalog, message):
    with pytest.raises(ValueError, match=message):
        check_catalog(catalog, "test")


def test_an_added_source_formats_through_the_same_text_function():
    base = Catalog({"en": {"a.n": "{n} {n:token/tokens}"}, "zh": {"a.n": "{n} 个词元"}}, "a")
    catalog = base.extended("b", {"b.x": {"en": "{n:x/xs}", "zh": "叉"}})
    assert [catalog.text("a.n", "en", n=n) for n in (1, 2)] == ["1 token", "2 tokens"]
    assert catalog.text("b.x", "en", n=3) == "xs" and catalog.text("b.x", "zh", n=3) == "叉"
    assert not base.has("b.x")   # extending leaves the original as it was
