"""The Generate & KV cache tab, its figures and the measured roofline (C2), in English."""

STRINGS: dict[str, str] = {
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
    'generate.tokens_note': (
        'Hover a token (or press Tab to reach the tokens, then ← → to move) to see the five '
        'most likely tokens at its step, with their probabilities.'),
    'generate.tok.step': 'Step {i} · position {pos}',
    'generate.tok.greedy': (
        'Greedy: the most likely token is taken. Probabilities: softmax of the logits '
        '(temperature 1, no cut).'),
    'generate.tok.sampled': 'Sampled from softmax(logits / {t:g}){cuts}.',
    'generate.tok.cut_k': ' over the {k} most likely tokens',
    'generate.tok.cut_p': ', cut to the smallest set holding {p:g} of the mass (top-p) and renormalised',
    'generate.tok.chosen': 'chosen',
    'generate.tok.outside': 'chosen (not in the top 5)',
    'generate.tok.none': 'No probabilities were kept for this step.',
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
    'generate.calc_run': 'Calculate',
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
    'generate.ev.path': (
        '**Which code made these tokens.** The first came from the prompt\'s forward through the '
        'modules of `models/` (fp32 weights, the code you can read). After it: {steps}. Those '
        'steps read the matrices as {weights}: **{bpw:.3f} bytes a weight** as this engine stores '
        'them. The tests hold their logits within {pct:.2g}% of the logits\' scale of the fp32 '
        'modules in `models/`; C4 below compares this run\'s cached logits with a full forward on '
        'the same weights.'),
    'generate.ev.path_fused': (
        '{n} {n:token/tokens} from the fused step (`engine/fused.py`: the whole step as '
        'one C++ call, your run alone in the loop)'),
    'generate.ev.path_batched': (
        '{n} {n:token/tokens} from the batched step with other runs (`engine/'
        'fused_batch.py`: one C++ call for every run in the loop; `batched.py`\'s forward where a '
        'run cannot take it)'),
    'generate.ev.path_none': 'no further token',
    'generate.ev.weights.fp32': 'the model\'s own fp32 tensors',
    'generate.ev.weights.bf16': 'bf16 copies (the upper half of each fp32 weight)',
    'generate.ev.weights.int8': 'int8 copies in blocks of 32 weights, an fp32 scale each',
    'generate.ev.weights.gguf': (
        'the GGUF file\'s own 4-bit codes with their block scales and offsets (a byte a code '
        'here; exactly the dequantized fp32 weights)'),
    'generate.ev.shared': (
        'Decoding was shared: up to {others} other visitors\' tokens went through the same forward '
        'as yours (one read of the weights for all of them, C2). Each step\'s latency is that shared '
        'step\'s; your tokens, positions and cache bytes are your run\'s own.'),
    'generate.ev.prefix': (
        'The first {n} of your prompt\'s {prompt} tokens are the chat template\'s, the same at the '
        'start of every visitor\'s prompt: their keys and values were copied from a run already in '
        'the loop, and this run computed the other {fed} (prefix reuse). Nothing of another '
        'visitor\'s own text is copied or counted. Your cache holds every token of your prompt all '
        'the same.'),
    'generate.ev.prefix_kept': (
        'The first {n} of your prompt\'s {prompt} tokens begin like one of the app\'s own prompts '
        '(this tab\'s example, a lesson\'s, the long prompt): the server computed their keys and '
        'values once, the same for every visitor, and keeps them, so they were copied and this run '
        'computed the other {fed} (prefix reuse). Nothing of another visitor\'s text is copied or '
        'counted. Your cache holds every token of your prompt all the same.'),
    'generate.ev.prefix_own': (
        'Your prompt\'s first {n} of {prompt} tokens had already been fed by another run of this '
        'page: the same tokens at the same positions give the same keys and values, so those were '
        'copied from its cache and this run computed only the last {fed} (prefix reuse). Your cache '
        'holds every token of your prompt all the same.'),
    'generate.ev.busy': (
        ' The no-cache replay (C1) and the full-forward check (C4) were declined: other visitors were '
        'generating, and these whole forwards would have stalled their streams. Run again when '
        'the server is quiet to see them.'),
    'generate.error.busy': (
        'The server is busy: {capacity} generations are running or waiting. Please try again in a '
        'minute.'),
    'generate.error.runs_session': (
        'This page already has {limit} generations running or waiting, the most one visitor may '
        'have at once. Wait for one to finish, or stop it, then start again.'),
    'generate.error.runs_address': (
        'Your network address already has {limit} generations running or waiting, the most one '
        'address may have at once: the other places are kept for other visitors. Wait for one to '
        'finish, then start again.'),
    'generate.status.rate': ' · {rate:.1f} tokens/s',
    'generate.status.chat': ' (chat template)',
    'generate.status.checking': (
        'Checking: cached logits against a full forward (C4), the cache read back (C3)…'),
    'generate.status.waiting': (
        'Checks wait for the class\'s runs: **{n}** ahead. The cached-vs-full check (C4) and the '
        'cache read back (C3, the mask) follow as soon as they are done.'),
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
    'generate.status.moved': '**Stopped**: the class moved on, after **{n}** new tokens.',
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
        "the live run's step took {live:.1f} ms. Scores computed, all layers (the engine's "
        "count of what its attention path computes: a row of S keys per head with the cache, "
        "the causal kernel's triangle or the whole t × S matrix without): {cs:,} with the cache, "
        '{us:,} without; needed under the mask (visible query-key pairs): {cn:,} and {un:,} '
        '({share:.0%} of what the no-cache path computed).'),
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
        ' From t = {t0} to {t1} the computed scores (counted) grow like t^{ec:.2f} with the cache '
        'and t^{eu:.2f} without, and the measured time ratio without / with the cache grows like '
        't^{er:.2f} (×{r0:.1f} → ×{r1:.1f}): C1 (count exponents within ±{slack} of 1 and 2, '
        'time-ratio exponent ≥ {min_r:g}, the step without a cache slower at the largest t) '
        '{verdict}.'),
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
    'generate.error.context': (
        "Prompt ({n} tokens) + max new tokens ({new}) exceeds the model's context of {context} "
        'tokens.'),
    'generate.name.max_new': 'Max new tokens',
    'generate.name.temperature': 'Temperature',
    'generate.name.top_k': 'Top-k',
    'generate.name.top_p': 'Top-p',
    'generate.name.seed': 'Seed',
    'generate.name.policy': 'Cache policy',
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
        'FLOPs / bytes, counted from the tensors the step reads: the matrices as the decode '
        'precision\'s copies hold them (gguf codes with their scales, int8 blocks, bf16, or '
        'the model\'s own fp32), the KV cache in its stored elements. **Measure this machine** '
        'measures the roof (memory bandwidth: the faster of a matrix-vector product and a sum '
        'over a matrix far larger than the caches; FLOP rate: the peak of the product the decode steps run, in their '
        'weight format; best of a few repeats, kept until the server restarts) and then times '
        'the steps the shared decode loop runs at $B$ = 1, 2, 4, 8, 16: a run alone on the fused '
        'step, several together in one batched step (B runs prefilled with $t$ tokens of the '
        'shipped text). '
        'The dotted line is the model: where its intensity puts it under the measured roof; '
        'the diamonds are the engine, measured.'),
    'generate.roof.context': 'Context t (tokens per sequence)',
    'generate.roof.refresh': 'Measure the device again (else the roof measured earlier in this server)',
    'generate.roof.refresh_kept': (
        'A new measurement was asked for and not taken: the roof kept in this server is '
        'every visitor\'s, and one is taken at most every {interval} minutes (the next in '
        '{n} {n:minute/minutes}); the numbers in this line are the kept roof\'s.'),
    'generate.roof.measure': 'Measure this machine',
    'generate.roof.stop': 'Stop',
    'generate.roof.none': 'Press **Measure this machine**: it takes a few seconds to a minute.',
    'generate.roof.name.context': 'Context t',
    'generate.roof.too_slow': 'The measurement took longer than {limit} s and was stopped: try a shorter context.',
    'generate.roof.busy': (
        'Other visitors are generating with this model right now: their steps would share the '
        'processor and spoil the timing. Try again when the Generate runs have finished.'),
    'generate.roof.threads': ', {n} intra-op {n:thread/threads}',
    'generate.roof.device': (
        '**This device, measured:** {device} ({dtype}{threads}): memory bandwidth '
        '**{bandwidth:.1f} GB/s**, peak of the product the decode steps run, {product}: '
        '**{flops:.1f} GFLOP/s**, ridge point **{ridge:.2f} FLOP/byte**; measured {when} in '
        '{seconds:.1f} s (a {mib} MiB matrix read by a matrix-vector product and by a sum, best of {mv} tries, and {rows} rows '
        'against a {n}×{n} weight in that format, best of {mm}).'),
    'generate.roof.sum.step': (
        'At B = {b} and t = {t}, one decode step reads {mb:,.1f} MB and does {gflop:.3f} GFLOP, '
        'counted from the tensors the step reads: its matrices in **{weights}** ({bpw:.3f} bytes '
        'a weight: {matrix_mb:,.1f} MB), the KV cache in {bytes}-byte elements. The step at B = 1 '
        'is {path}; from B = 2 on, {batched}.'),
    'generate.roof.sum.memory_bound': (
        'Its intensity (counted), {intensity:.2f} FLOP/byte, is {ratio:.1f}× below the measured '
        'ridge ({ridge:.2f}): by the count, a single sequence is **memory-bound**.'),
    'generate.roof.sum.compute_bound': (
        'Its intensity, {intensity:.2f} FLOP/byte, is at or above the measured ridge '
        '({ridge:.2f}): on this device even a single sequence is compute-bound.'),
    'generate.roof.sum.share': (
        'The engine\'s step took {ms:.1f} ms: {gbs:.1f} GB/s, {share:.0f}% of the measured '
        'bandwidth (C2 asks ≥ {least:.0%}), its FLOPs at {flop_share:.1f}% of the measured '
        'peak of its product: of the two roofs, the memory read accounts for far more of the step.'),
    'generate.roof.sum.share_low': (
        'The engine\'s step took {ms:.1f} ms: {gbs:.1f} GB/s, only {share:.0f}% of the measured '
        'bandwidth (C2 asks ≥ {least:.0%}): on this run something other than reading its bytes '
        'set the step\'s time (framework overhead, or other work on the machine).'),
    'generate.roof.sum.over_roof': (
        'The step at B = {b} ran at {share:.0f}% of the measured roof, which no step can '
        'really pass: the roof was measured while the machine was busier than during the steps. '
        'Tick "Measure the device again" and measure once more.'),
    'generate.roof.path.fused': 'the fused step (one C++ call per token)',
    'generate.roof.path.fused_batch': 'the fused batched step (one C++ call for every run)',
    'generate.roof.path.batched': 'the batched step (one forward of the engine for every run)',
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
    'generate.roof.sum.c2_holds': '**C2 holds on this run.**',
    'generate.roof.sum.c2_fails': '**C2 does NOT hold on this run.**',
    'generate.roof.fig.title': '{model}: decode roofline at t = {t}',
    'generate.roof.fig.rates_title': 'Tokens per second against the batch size',
    'generate.roof.fig.roof': 'roof of this device (measured)',
    'generate.roof.fig.model': 'the model at t = {t}, {weights} weights (what the roof allows)',
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
}
