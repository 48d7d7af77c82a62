"""The app's own prompts kept in the shared decode loop (Scheduler.keep_prompts,
explorer.generate.kept): a run whose prompt begins like one copies those positions from what
the loop computed itself, whoever else is in the loop, and decodes as it would have alone."""
from __future__ import annotations

from explorer.serving.prefixes import KEPT_MIN
from tests.unit.test_privacy import TEMPLATE, _tokens

KEPT = TEMPLATE + _tokens(14, 11)    # an app prompt: the template, then the app's own text


def _first(sched, ids, visitor, **kw):
    from models.generate import SamplingParams

    public = len(TEMPLATE) if ids[:len(TEMPLATE)] == TEMPLATE else 0
    steps = list(sched.generate(ids, SamplingParams(max_new_tokens=3), eos_ids=[], visitor=visitor,
                                public_prefix=public, **kw))
    return steps


def test_a_kept_prompt_is_copied_by_any_visitor_whoever_else_is_in_the_loop(tiny_llama):
    """B's prompt shares 30 tokens with a kept prompt: B copies those 30, marked as the app's,
    alone in the loop and while A's run holds all 34 of them and more (A's text gives B
    nothing beyond what the app's own prompt gives); the kept prompt is no run of the loop."""
    from explorer.serving import Scheduler, Visitor
    from models.generate import SamplingParams

    sched = Scheduler(tiny_llama, prefill_chunk=8)
    short = _tokens(10, 30)   # shorter than SHARE_MIN: kept all the same (Gemma's example is 14)
    sched.keep_prompts([KEPT, KEPT, short, TEMPLATE[:KEPT_MIN]])   # twice is once; too short: none
    probe = KEPT[:30] + _tokens(5, 12)
    b = Visitor("b", "10.0.0.2")
    alone = _first(sched, probe, b)
    assert (alone[0].shared_prefix, alone[0].shared_kept, alone[0].shared_own) == (30, True, False)
    assert alone[0].tokens_processed == len(probe) - 30
    assert sorted(run.prompt for run in sched._kept) == sorted([short, KEPT])
    assert not any(run.tokens for run in sched._kept)
    assert _first(sched, short + _tokens(5, 31), b)[0].shared_prefix == len(short)

    a = sched.generate(KEPT + _tokens(6, 13), SamplingParams(max_new_tokens=200), eos_ids=[],
                       visitor=Visitor("a", "10.0.0.1"), public_prefix=len(TEMPLATE))
    next(a)   # A's whole prompt (34 tokens like the kept one, then its own) is in the loop
    try:
        snapshot = sched.snapshot()
        assert len(snapshot.runs) == 1 and sched.load() == 1   # A alone: the kept prompt is no run
        longer = KEPT + _tokens(6, 13)[:3] + _tokens(4, 14)   # repeats A beyond the kept prompt
        with_a = _first(sched, longer, b)
        assert (with_a[0].shared_prefix, with_a[0].shared_kept) == (len(KEPT), True)
        assert [s.token_id for s in _first(sched, probe, b)] == [s.token_id for s in alone]
    finally:
        a.close()


def test_a_run_copying_a_kept_prompt_decodes_as_it_would_alone(tiny_llama):
    """The same prompt through a loop that keeps the app's prompt and one that keeps none:
    the same tokens, logits within fp32 rounding of the products."""
    from explorer.serving import Scheduler, Visitor

    probe = KEPT + _tokens(7, 15)
    plain = _first(Scheduler(tiny_llama, prefill_chunk=8), probe, Visitor("b"), keep_logits=True)
    sched = Scheduler(tiny_llama, prefill_chunk=8)
    sched.keep_prompts([KEPT])
    kept = _first(sched, probe, Visitor("b"), keep_logits=True)
    assert plain[0].shared_prefix == 0 and kept[0].shared_prefix == len(KEPT)
    assert [s.token_id for s in kept] == [s.token_id for s in plain]
    for x, y in zip(kept, plain):
        assert (x.logits - y.logits).abs().max().item() <= 1e-5


def test_a_kept_prompt_past_a_sliding_window_keeps_what_every_layer_holds_in_place():
    """Gemma-like layers with a 24-token window: a 40-token app prompt is kept to the 24
    positions a ring holds before it wraps, and a run beginning like it copies those."""
    from explorer.serving import Scheduler, Visitor
    from tests.helpers import ours_from_hf, tiny_hf

    model = ours_from_hf(tiny_hf("gemma3", sliding_window=24))
    sched = Scheduler(model, prefill_chunk=8)
    long_prompt = TEMPLATE + _tokens(20, 16)
    sched.keep_prompts([long_prompt])
    steps = _first(sched, long_prompt + _tokens(3, 17), Visitor("b"))
    cap = min(layer.capacity for layer in sched._kept[0].batch.cache.layers)
    assert cap < len(long_prompt) and sched._kept[0].prompt == long_prompt[:cap]
    assert (steps[0].shared_prefix, steps[0].shared_kept) == (cap, True)


def test_the_app_prompts_are_its_example_long_and_lesson_prompts_asked_once(monkeypatch):
    from explorer.generate import kept
    from explorer.generate.request import DEFAULT_PROMPT, long_prompt
    from explorer.lessons import LESSONS, generate_prompts

    texts = kept.app_prompts(generate_prompts())
    lesson = [s.settings["prompt"] for lesson in LESSONS.values() for s in lesson.steps
              if s.view.startswith("generate.") and "prompt" in s.settings]
    assert lesson and texts[:2] == (DEFAULT_PROMPT, long_prompt()) and set(lesson) <= set(texts)
    assert len(texts) == len(set(texts))

    class Loop:
        asked = []

        def keep_prompts(self, prompts):
            self.asked.append(prompts)

    class Tokenizer:   # no chat template: the plain text's ids
        def __call__(self, text):
            return {"input_ids": [ord(c) % 97 for c in text]}

    loop = Loop()
    kept.keep_app_prompts(loop, Tokenizer(), generate_prompts())
    kept.keep_app_prompts(loop, Tokenizer(), generate_prompts())
    # one id a character here: the long prompt is past a visitor's 1,024 tokens, so not kept
    assert len(Loop.asked) == 1 and len(Loop.asked[0]) == sum(len(t) <= 1024 for t in texts) == len(texts) - 1
    assert Loop.asked[0][0] == [ord(c) % 97 for c in DEFAULT_PROMPT]


def test_a_run_that_copied_a_kept_prompt_says_so_in_both_languages(tiny_llama):
    from explorer.generate import figures, request as req, session as sess
    from explorer.serving import Scheduler, Visitor
    from tests.helpers import DigitTokenizer

    loop = Scheduler(tiny_llama, prefill_chunk=8)
    loop.keep_prompts([KEPT])
    request = req.Request(prompt="x", max_new_tokens=3, compare_no_cache=False, check_full_forward=False)
    *_, last = sess.stream_generation(tiny_llama, DigitTokenizer(), KEPT + [5, 6, 7], request,
                                      scheduler=loop, eos_ids=[], visitor=Visitor(session="b"),
                                      public_prefix=len(TEMPLATE))
    assert last.records[0].shared_kept and last.records[0].shared_prefix == len(KEPT)
    en, zh = figures.summary(last, "en"), figures.summary(last, "zh")
    assert "The first 34 of your prompt's 37 tokens begin like one of the app's own prompts" in en
    assert "computed the other 3" in en and "chat template" not in en
    assert "其中前 34 个与本应用自带的某个提示词" in zh and "其余 3 个" in zh


def test_a_run_fed_beside_a_kept_prompt_was_served_alone(tiny_llama):
    """A kept prompt fed in the same forward as a visitor's prompt is no other visitor: the
    run's first step says it served one run, so its checks are not declined as busy."""
    from explorer.serving import Scheduler, Visitor
    from models.generate import SamplingParams

    sched = Scheduler(tiny_llama, prefill_chunk=8)
    probe = _tokens(32, 21)   # nothing in common with KEPT: fed beside it, 8 tokens a forward
    with sched._lock:         # both queued before the loop's first iteration
        sched.keep_prompts([KEPT])
        handle = sched.submit(probe, SamplingParams(max_new_tokens=2), eos_ids=[], visitor=Visitor("b"))
    first = handle.next(timeout=60)
    handle.stop()
    # the probe's 32 tokens went in 4 forwards of 8, each with 8 of the kept prompt's beside them
    assert sched.stats["prefill_forwards"] == 4 and sched.stats["prefill_tokens"] == 64
    assert first.batch_size == 1 and first.shared_prefix == 0


