"""One Decoder protocol (models.decoder): the engine's own forward, the static step and the
fused step all go through generate() the same way and give the same tokens; the family each
model class declares is the one its config names."""
import pytest
import torch

from engine.fused import FusedDecoder
from engine.static import StaticDecoder
from models.decoder import Decoder, EagerDecoder
from models.forward import RunOptions
from models.generate import SamplingParams, generate
from models.loading import FAMILIES
from tests.helpers import decode_options

OPTIONS = decode_options()
DECODERS = {"eager": EagerDecoder, "static": lambda m, o: StaticDecoder(m, o, compile=False),
            "fused": FusedDecoder}


@pytest.mark.parametrize("kind", ["llama", "mistral", "qwen2", "gemma3"])
@pytest.mark.parametrize("name", ["default", "sinks 3 + window 5"])
def test_every_decoder_gives_the_same_steps_through_generate(tiny, kind, name):
    """Greedy tokens, positions, phases, cache telemetry and logits (<= 1e-5) agree with
    generate()'s default, which is the eager decoder."""
    model, opts = tiny[kind], OPTIONS[name]
    params = SamplingParams(max_new_tokens=16)
    prompt = [3, 1, 4, 1, 5, 9, 2]
    reference = list(generate(model, prompt, params, options=opts, eos_ids=[], keep_logits=True))
    for label, make in DECODERS.items():
        decoder = make(model, opts)
        assert isinstance(decoder, Decoder), label
        steps = list(generate(model, prompt, params, eos_ids=[], keep_logits=True, decoder=decoder))
        assert [s.token_id for s in steps] == [s.token_id for s in reference], label
        for a, b in zip(steps, reference):
            assert (a.position, a.phase, a.tokens_processed) == (b.position, b.phase, b.tokens_processed)
            assert a.cache_lengths == b.cache_lengths and a.cache_bytes == b.cache_bytes, label
            assert (a.logits - b.logits).abs().max().item() <= 1e-5, label
        # the prompt goes through the engine's forward in every decoder: same scores counted
        assert steps[0].score_entries == reference[0].score_entries


def test_eager_decoder_is_generate_default_and_its_baseline(tiny):
    """Without a decoder generate() runs EagerDecoder; use_cache=False prefills the whole
    sequence at every step (the C1 baseline) and refuses a fast decoder."""
    model = tiny["qwen2"]
    params = SamplingParams(max_new_tokens=8)
    default = [(s.token_id, s.score_entries) for s in generate(model, [5, 6], params, eos_ids=[])]
    eager = [(s.token_id, s.score_entries)
             for s in generate(model, [5, 6], params, eos_ids=[], decoder=EagerDecoder(model))]
    assert default == eager
    uncached = list(generate(model, [5, 6], params, eos_ids=[], use_cache=False))
    assert [s.token_id for s in uncached] == [t for t, _ in default]
    assert [s.tokens_processed for s in uncached] == list(range(2, 10))
    assert all(s.cache_bytes == [] for s in uncached)
    with pytest.raises(ValueError, match="own model"):
        next(generate(model, [5, 6], params, use_cache=False, decoder=EagerDecoder(model)))
    with pytest.raises(ValueError, match="continues a KV cache"):
        EagerDecoder(model).step(5, None)


def test_a_decoder_prefills_and_steps_on_its_own(tiny):
    """The protocol without generate(): prefill then steps, each advancing the cache by one."""
    model = tiny["gemma3"]
    for make in DECODERS.values():
        decoder = make(model, RunOptions())
        with torch.inference_mode():
            cache = decoder.new_cache(12)
            logits = decoder.prefill([1, 2, 3], cache)
            assert logits.shape == (1, 1, model.config.vocab_size) and cache.pos == 3
            decoder.step(int(logits[0, -1].argmax()), cache)
            assert cache.pos == 4 and decoder.scores_per_step(cache) > 0


def test_every_family_class_declares_the_family_its_config_names():
    for family, (cls, _) in FAMILIES.items():
        assert cls.family == family, cls.__name__


def test_tiny_models_carry_their_family(tiny):
    for model in tiny.values():
        assert type(model).family == model.config.family
