"""The two real checkpoints, run by our modules, against transformers on the same converted
weights: logits over a 64-token prompt, 48 greedy tokens, and cached vs full forward with a
Gemma prompt longer than its 512-token window (the ring buffer wraps)."""
import pytest
import torch

from explorer.checkpoints import prepare_embedded
from engine.static import StaticDecoder
from engine.fused import FusedDecoder
from models.generate import SamplingParams, full_forward_logits, generate
from models.loading import load_model

# each a few to tens of seconds: loads both checkpoints, compiles, decodes 48 tokens
pytestmark = pytest.mark.slow

TEXT = ("The history of the transformer architecture begins with attention mechanisms in "
        "machine translation. Researchers found that letting every token look at every other "
        "token, weighted by learned similarity, captured long-range structure better than "
        "recurrence. Since then, models have grown larger, context windows longer, and a "
        "handful of ideas - rotary position embeddings, grouped-query attention, sliding "
        "windows, key-value caches - made them practical to run on modest hardware. ") * 12


@pytest.fixture(scope="module", params=["smollm2-135m-instruct", "gemma-3-270m"])
def real(request):
    from transformers import AutoModelForCausalLM, AutoTokenizer
    folder = prepare_embedded(request.param)
    ours = load_model(folder, device="cpu", dtype=torch.float32)
    theirs = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32, attn_implementation="eager").eval()
    tok = AutoTokenizer.from_pretrained(folder)
    yield request.param, ours, theirs, tok
    del ours, theirs


def test_logits_match_transformers(real):
    name, ours, theirs, tok = real
    ids = tok(TEXT, return_tensors="pt").input_ids[:, :64]
    assert ids.shape[1] == 64
    with torch.no_grad():
        ref = theirs(ids).logits
        out = ours(ids)
    assert (out - ref).abs().max().item() <= 1e-3


def test_48_greedy_tokens_identical(real):
    name, ours, theirs, tok = real
    ids = tok("The capital of France is a city where", return_tensors="pt").input_ids
    with torch.no_grad():
        ref = theirs.generate(ids, max_new_tokens=48, do_sample=False, min_new_tokens=48)[0, ids.shape[1]:]
    mine = [s.token_id for s in generate(ours, ids[0].tolist(), SamplingParams(max_new_tokens=48), eos_ids=[])]
    assert mine == ref.tolist()


def test_cached_decode_equals_full_forward_past_the_window(real):
    name, ours, theirs, tok = real
    ids = tok(TEXT, return_tensors="pt").input_ids[0].tolist()
    n_prompt = 540 if name == "gemma-3-270m" else 100  # Gemma: past its 512 window
    assert len(ids) >= n_prompt + 24
    steps = list(generate(ours, ids[:n_prompt], SamplingParams(max_new_tokens=24), eos_ids=[], keep_logits=True))
    seq = ids[:n_prompt] + [s.token_id for s in steps]
    full = full_forward_logits(ours, seq[:-1])
    cached = torch.stack([s.logits for s in steps])
    assert (cached - full[n_prompt - 1:]).abs().max().item() <= 1e-4
    # the fused C++ step, from the same eager prefill, through the same ring buffers
    fused = list(generate(ours, ids[:n_prompt], SamplingParams(max_new_tokens=24), eos_ids=[],
                          keep_logits=True, decoder=FusedDecoder(ours)))
    assert [s.token_id for s in fused] == [s.token_id for s in steps]
    assert [s.cache_lengths for s in fused] == [s.cache_lengths for s in steps]
    assert (torch.stack([s.logits for s in fused]) - full[n_prompt - 1:]).abs().max().item() <= 1e-4
    if name == "gemma-3-270m":
        lengths = steps[-1].cache_lengths
        types = ours.config.layer_types
        assert {l for l, t in zip(lengths, types) if t == "sliding_attention"} == {512}
        assert {l for l, t in zip(lengths, types) if t == "full_attention"} == {n_prompt + 23}


def test_compiled_decode_equals_the_eager_engine(real):
    """engine.static on the real checkpoint: the torch.compile'd static step gives the eager
    engine's greedy tokens, with logits within 1e-3 at every step."""
    name, ours, theirs, tok = real
    ids = tok(TEXT, return_tensors="pt").input_ids[0, :40].tolist()
    params = SamplingParams(max_new_tokens=16)
    eager = list(generate(ours, ids, params, eos_ids=[], keep_logits=True))
    compiled = list(generate(ours, ids, params, eos_ids=[], keep_logits=True, decoder=StaticDecoder(ours)))
    assert [s.token_id for s in compiled] == [s.token_id for s in eager]
    diff = max((a.logits - b.logits).abs().max().item() for a, b in zip(compiled, eager))
    assert diff <= 1e-3


def test_gemma_logits_match_transformers_past_the_window():
    """Gemma 3 over a 700-token prompt, past its 512-token window: our local layers run SDPA
    by row blocks (models.attention.RowBlocks), transformers' eager path scores the whole
    masked matrix; every position's logits agree."""
    from transformers import AutoModelForCausalLM, AutoTokenizer
    folder = prepare_embedded("gemma-3-270m")
    ours = load_model(folder, device="cpu", dtype=torch.float32)
    theirs = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32, attn_implementation="eager").eval()
    ids = AutoTokenizer.from_pretrained(folder)(TEXT, return_tensors="pt").input_ids[:, :700]
    assert ids.shape[1] == 700
    with torch.no_grad():
        ref = theirs(ids).logits
        logits, ctx = ours(ids, return_context=True)
    assert (logits - ref).abs().max().item() <= 1e-3
    # fewer scores than the full matrices: the local layers' blocks skip what the window hides
    cfg = ours.config
    n_local = sum(t == "sliding_attention" for t in cfg.layer_types)
    full = cfg.n_layers * cfg.n_heads * 700 * 700
    assert ctx.score_entries < full - n_local * cfg.n_heads * 700 * 700 // 5
