"""The Architecture tab (C6, C7, C18, C19) and its verdicts, in English."""

STRINGS: dict[str, str] = {
    # ---------------------------------------------------------------- Architecture tab (C6, C7, C18, C19)
    'arch.tab': 'Architecture',
    'arch.intro': (
        '## From the 2017 Transformer to today\'s blocks\n'
        'Four blocks side by side, read from their tensors (and, for a norm\'s place and kind and RoPE, their architectures\' code); where to put the norm, measured on small '
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
        'layers; transformers\' GPT-2). Heads come from the projections\' shapes; no output matrix '
        'means tied embeddings; the parameters of each component are summed from the shapes. Three '
        'properties come from the architecture\'s code, which the tensors can only contradict: a '
        'norm\'s place (from its name in that architecture\'s naming), its kind (norms with a bias '
        'tensor are LayerNorm, weight-only ones RMSNorm in these architectures\' code) and RoPE (no '
        'position-embedding tensor).'),
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
        'a tiny MLA module of this app (`models/mla.py`) runs a random prompt with its latent '
        'cache, and the cache, up-projected, is compared with the keys and values computed without '
        'a cache. The module is a tiny DeepSeek-V3 config.json with random weights under '
        'DeepSeek-V3\'s tensor names, loaded through the same mapping as a real checkpoint; the '
        'test suite runs transformers\' DeepseekV3ForCausalLM on this config and these weights and '
        'finds the same logits and cache within 1e-5 (checked when the tests run, not on this page).'),
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
        '{tiny_rope}), {tokens} tokens: its cache tensors\' shapes and fill count give **{cache_bytes:,} bytes** '
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
    # ---------------------------------------------------------------- verdicts (C6, C7, C18, C19)
    # each chosen by the criterion the claims board uses
    'arch.mla.verdict.ok': (
        '**The latent cache reproduces the per-head K and V:** largest difference {error:.1e}, within '
        '{tol:.0e}; its tensors\' shapes and fill count give exactly the formula\'s {formula_bytes:,} bytes.'),
    'arch.mla.verdict.broken': (
        '**The up-projected cache does not reproduce the per-head K and V:** largest difference '
        '{error:.1e} (tolerance {tol:.0e}); its tensors\' shapes and fill count give {cache_bytes:,} bytes, the formula '
        '{formula_bytes:,}.'),
    'arch.fold.verdict.cannot': (
        "With {residual:.1f} % left (the criterion: at least {threshold:.0f} %, and within {tol:.0f} points "
        'of the {expected:.1f} % that the rotation angles give for pairs of equal weight), no fixed $W\'$ '
        'stands in for $R_m W$ over these positions: only pairs that barely turn could be folded, so MLA keeps the '
        'up-projection free of position and gives position its own small RoPE key.'),
    'arch.fold.verdict.can': (
        "Over these positions the best fixed $W'$ leaves only {residual:.1f} % (under the criterion's "
        '{threshold:.0f} %): the rotation turns too little here to show that it cannot be folded; '
        'more positions or a faster pair show the residual.'),
    'arch.fold.verdict.off': (
        "The best fixed $W'$ leaves {residual:.1f} %, more than {tol:.0f} points away from the "
        '{expected:.1f} % that the rotation angles give for pairs of equal weight: this $W$ puts '
        'unequal weight on its pairs (a wider $W$ evens them out), or the rotation is not the one '
        'the angles describe.'),
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
    'arch.blocks.verdict.sources': (
        'Decided by the tensors (which exist, their shapes): gated MLP, fewer KV than query heads, no '
        'bias, no encoder, no cross-attention: {read} of {n_read} hold. By the architecture\'s code, '
        'which the tensors can only contradict: pre-norm (each norm\'s place from its name), RMSNorm '
        '(norms with a weight and no bias), RoPE (no position-embedding tensor): {coded} of {n_coded} hold.'),
    'arch.blocks.fact.pre_norm': 'pre-norm',
    'arch.blocks.fact.rmsnorm': 'RMSNorm',
    'arch.blocks.fact.rope': 'RoPE',
    'arch.blocks.fact.gated_mlp': 'gated MLP (SwiGLU or GeGLU)',
    'arch.blocks.fact.gqa': 'fewer KV heads than query heads',
    'arch.blocks.fact.no_bias': 'no bias tensor',
    'arch.blocks.fact.no_encoder': 'no encoder',
    'arch.blocks.fact.no_cross': 'no cross-attention',
    'arch.blocks.fact.sep': ', ',
}
