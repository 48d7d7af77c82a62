"""The RoPE tab and its figures, in English."""

STRINGS: dict[str, str] = {
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
        '**Every changed base raised the perplexity** by at least {rise:.0%}, over the whole '
        'text and over its last quarter: all {n} of them, the lesser of the two from '
        '×{low:.3f} ({low_base}) to ×{high:.3f} ({high_base}) of the trained one.'),
    'rope.base.rise.not_all': (
        '**Not every changed base raised the perplexity by {rise:.0%} or more** over the whole '
        'text and over its last quarter: {n} of {total} did not (whole, last quarter): {items}.'),
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
}
