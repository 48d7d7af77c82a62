"""The Attention tab: masks, maps, GQA groups, sinks and the receptive field, in English."""

STRINGS: dict[str, str] = {
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
        '**{title}**: {n_heads} query heads, {n_kv} KV {n_kv:head/heads}, groups of {n_rep}. '
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
    'attention.redraw': 'Redraw for the selected model',
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
    'attention.fig.groups_title': '{title} {n_q} query heads share {n_kv} KV {n_kv:head/heads}',
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
}
