STRINGS = {
    "lesson.kv.title": "The KV cache",
    "lesson.kv.summary": "Why decoding keeps keys and values, what one token costs, and how a window caps it.",
    "lesson.kv.s1.look": "The model writes an answer one token at a time. Each new token attends to every earlier one, so their **keys and values are kept** instead of recomputed. Watch the **cache bars** grow by one token per step.",
    "lesson.kv.s1.said": "Your run ended with **{tokens} tokens** in context and a cache of **{kib:.1f} KiB**: **{per_token} bytes per token** = 2 (K and V) × {layers} layers × {kv_heads} KV heads × {head_dim} dims × {bytes} B. The measured bytes equal this formula at all {steps} steps and every layer: {formula}.",
    "lesson.kv.s2.look": "The cost of one token is fixed by the model's shape. Before the run, predict the cache at **{t} tokens**.",
    "lesson.kv.s2.ask": "How many KiB will the cache hold when {t} tokens are in context?",
    "lesson.kv.s2.said": "At {t} tokens your run's cache held **{answer:.1f} KiB**, read at that very step.",
    "lesson.kv.s2.said_computed": "Your run never held {t} tokens (it ended with {tokens}), so **{answer:.1f} KiB** is computed, not measured: its measured {per_token} B per token × {t}.",
    "lesson.kv.s2.why": "Why: every token adds {per_layer} B to each of the {layers} layers (2 × {kv_heads} × {head_dim} × {bytes} B: K and V of each KV head), {per_token} B over all {layers} layers, so the cache grows in a straight line: {t} × {per_token} B = {answer:.1f} KiB. The number of query heads does not appear: only KV heads are cached.",
    "lesson.kv.s3.look": "Now the same model with a **sliding window of 32**: each layer keeps only the last 32 tokens. Watch the cache bars stop growing.",
    "lesson.kv.s3.said": "With the window, your run reached **{t_run} tokens** but each windowed layer held **{held} tokens** in {cap} slots: **{kib:.1f} KiB** instead of the **{full_kib:.1f} KiB** a full cache would need ({saved:.0f}% saved). Every layer held exactly min(t, {cap}) at every step: {verdict}.",
}
