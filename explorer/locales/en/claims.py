"""The claims board: each claim's criterion and measured quantities, and the Claims tab, in English."""

STRINGS: dict[str, str] = {
    # ---------------------------------------------------------------- C1, C3, C4, C9: the Generate & KV cache tab
    'claims.m.c1_exp_uncached': 'growth exponent of computed scores, no cache (counted)',
    'claims.m.c1_exp_cached': 'growth exponent of computed scores, with the cache (counted)',
    'claims.m.c1_ratio_min': 'step time without / with the cache at the smallest t (measured)',
    'claims.m.c1_ratio': 'step time without / with the cache at the largest t (measured)',
    'claims.m.c1_ratio_exp': 'growth exponent of that time ratio (measured)',
    'claims.m.c1_t_min': 'smallest t replayed',
    'claims.m.c1_t_max': 'largest t replayed',
    'claims.m.c3_bytes_per_token': "used cache bytes per token (the cache tensors' shapes × filled slots)",
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
    'claims.m.c9_window_scores': 'scores of one step in a windowed layer (counted)',
    'claims.m.c9_full_scores': 'scores of one step in a full-cache layer at the largest t (counted)',
    'claims.C1.criterion': (
        "Counted (the engine's count of the scores each path computes, fixed by the shapes): "
        'they grow like t^a with a within ±{slack} of 2 without a cache and of 1 with one. '
        'Measured (wall time, one engine, the two steps back to back, best of {rounds} rounds): '
        'the step-time ratio without / with the cache grows like t^r with r ≥ {min_r:g}, and '
        'exceeds 1 at the largest t.'),
    'claims.C3.criterion': (
        'At every step, used cache bytes = 2 × H_kv × d_head × tokens held × b per layer; the '
        'allocated buffers = the formula at their slots; the calculator gives {per_token} MiB '
        'per token and {at_32k} GiB at 32K for Llama-2-7B in fp16.'),
    'claims.C4.criterion': 'Max |cached − full forward| logit difference ≤ {tol:g} at every generated position.',
    'claims.C9.criterion': (
        'Past the window (t > {cap}), every windowed layer holds exactly {cap} tokens in {cap} '
        'allocated slots at every step, while a full cache ({full}) holds all t tokens. '
        "Counted per layer for one cached step at t = {t_a} and {t_b} (the engine's count, split "
        'by the keys each layer received, adding up to its total): a windowed layer scores '
        '{heads} heads × {cap} keys at both, a full-cache layer {heads} × t, so n steps cost '
        'n·w per head in a windowed layer against about n²/2 in a full one.'),
    'claims.C9.full_global': 'the global layers',
    'claims.C9.full_run': 'a run of the same prompt with a full cache',
    # ---------------------------------------------------------------- C2: the measured roofline
    'claims.m.intensity_b1': 'intensity at B = 1 (counted)',
    'claims.m.ridge': 'measured ridge point',
    'claims.m.bandwidth': 'measured memory bandwidth',
    'claims.m.bandwidth_b1': 'bytes per step ÷ step time at B = 1 (measured)',
    'claims.m.bandwidth_share_b1': 'that, as a share of the measured bandwidth',
    'claims.m.peak_flops': 'measured matmul rate',
    'claims.m.tokens_b1': 'tokens/s at B = 1',
    'claims.m.tokens_b8': 'tokens/s at B = 8',
    'claims.m.batch_speedup': 'tokens/s at B = 8 over B = 1',
    'claims.m.knee_batch': 'knee (batch), measured',
    'claims.C2.criterion': (
        "The loop's own decode step, its matrices in {weights}. Memory-bound at B = 1: the "
        "step's intensity (FLOPs ÷ bytes, counted from the tensors it reads) below the measured "
        'ridge point (the peak of the product it runs), and the step moving its counted bytes '
        'at ≥ {share:.0%} of the measured bandwidth (bytes per step ÷ measured step time); and '
        'B = {b} gives ≥ {k:g}× the measured tokens/s of B = 1'),
    'claims.C2.under_roof': 'the step at B = 1 moved its counted bytes at no more than the measured bandwidth',
    # ---------------------------------------------------------------- C5, C8, C10: the Attention tab
    'claims.C5.criterion': (
        'The recorded k and v have the KV heads ({n_kv}), not the query heads ({n_q}); the '
        'filled cache holds 2·L·n_kv·d_head·{elem} B per token'),
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
    'claims.m.c5_mha': 'MHA variant, bytes per token (formula)',
    'claims.m.c5_gqa': 'GQA (this model), bytes per token',
    'claims.m.c5_mqa': 'MQA variant, bytes per token (formula)',
    'claims.k.c5_proportional': 'MHA / GQA / MQA bytes proportional to their KV heads (one formula)',
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
    # ---------------------------------------------------------------- C11-C13: the RoPE tab
    'claims.C11.criterion': (
        'In all {heads} heads of layer {layer}, one real q and k placed at {n}×{n} positions,'
        ' both rotated: largest diagonal spread ≤ {tol:g} of the largest score, the identity '
        "to ≤ {identity_tol:g}, and our RoPE reproduces the model's q, k to ≤ {repro_tol:.2g}"),
    'claims.C12.criterion': (
        'In all {heads} heads of layer {layer}, only q rotated: diagonal spread ≥ {min_rel:g}'
        ' of the largest score and ≥ {min_ratio:g}× the both-rotated spread'),
    'claims.C13.criterion': (
        'Base {low} → {high}: θ₀ unchanged and all {others} other pairs slower (from the '
        "formula); and the real model's perplexity, measured over {tokens} tokens of the "
        'shipped text with base {changed} on all layers and no training, ≥ {rise:.0%} above '
        'the trained base(s) over the whole text and over its last quarter (positions '
        '{far_from}–{far_to}, where a longer reach would help). Measured within the trained '
        'length ({trained_len:,} tokens): past it the forwards exceed the board\'s CPU time'),
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
    'claims.m.rope_ppl_far_ratio': 'changed ÷ trained perplexity, last quarter',
    # ---------------------------------------------------------------- Claims tab (explorer/claims/board.py, explorer/ui/tabs/claims.py)
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
    'claims.rerun_kept': (
        'Not run again: the board kept in this server is every visitor\'s, and it is measured '
        'again at most every {interval} minutes (the next in {n} {n:minute/minutes}). The '
        'board above is the kept one, with the time it was measured.'),
    'claims.stop': 'Stop',
    'claims.test_registry': '⚠ **Test board:** these verdicts come from a registry of test functions, not from the claims\' evidence on the model:',
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
    # ---------------------------------------------------------------- C6, C7, C14-C19: the Architecture, MoE and FlashAttention tabs
    # claims board: C6, C7, C14-C19 (explorer/{architecture,moe,flash}/evidence.py)
    'claims.m.mla_latent_heads': 'DeepSeek-V3 latent + RoPE key per token and layer',
    'claims.m.mla_gqa_heads': 'KV heads of a GQA cache of that size',
    'claims.m.mla_kv_error': 'max |up-projected cache − uncached K, V|',
    'claims.m.mla_cache_bytes': "tiny MLA cache, from its tensors' shapes and fill count",
    'claims.m.mla_formula_bytes': 'tiny MLA cache, formula',
    'claims.m.fold_residual': "residual of the best fixed W' over all positions",
    'claims.m.fold_expected': 'closed form from the rotation angles (pairs of equal weight)',
    'claims.m.fold_residual_one': "residual of W' for one position",
    'claims.m.fold_fast_pair': 'residual of the fastest pair',
    'claims.m.fold_slow_pair': 'residual of the slowest pair',
    'claims.m.arch_facts': 'facts of a Llama-style block that hold',
    'claims.m.arch_facts_tensors': 'of them decided by the tensors',
    'claims.m.arch_facts_code': "of them by the architecture's code",
    'claims.m.position_params': 'parameters in position-embedding tensors',
    'claims.m.bias_tensors': 'bias tensors',
    'claims.m.norms_per_block': 'norms per block',
    'claims.m.q_heads': 'query heads',
    'claims.m.kv_heads': 'KV heads',
    'claims.m.encoder_layers': 'encoder layers',
    'claims.m.post_ratio': 'post-norm: last block\'s gradient ÷ first\'s',
    'claims.m.pre_ratio': 'pre-norm: last block\'s gradient ÷ first\'s',
    'claims.m.moe_k': 'k (experts per token)',
    'claims.m.moe_off_k': 'tokens × layers not sent to exactly k experts',
    'claims.m.moe_totals': 'distinct parameter totals over k',
    'claims.consistency': 'Consistency checks (fixed by construction; the verdict does not rest on them):',
    'claims.k.moe_routes_to_k': 'every token routed to exactly k distinct experts (top-k picks k)',
    'claims.k.moe_same_total': 'one parameter total at every k (the same model)',
    'claims.k.flash_written': (
        'bytes written, tiled counted from the schedule (each output block once), naive the paper\'s '
        'formula: linear vs quadratic'),
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
    'claims.m.written_naive_exp': 'naive: exponent of n in bytes written (formula)',
    'claims.m.written_tiled_exp': 'tiled: exponent of n in bytes written (counted)',
    'claims.m.memory_naive_exp': 'naive: exponent of n in peak extra memory (measured)',
    'claims.m.memory_tiled_exp': 'tiled: exponent of n in peak extra memory (measured)',
    'claims.m.traffic_ratio': 'bytes moved at the largest n, naive (formula) ÷ tiled (counted)',
    'claims.m.row_blocks': 'key blocks of the row',
    'claims.m.row_rises': 'times the running max rose',
    'claims.m.row_max_diff': '|running max − full row max|',
    'claims.m.row_norm_diff': 'normalizer, relative difference',
    'claims.m.row_out_diff': 'max |row output − full softmax output|',
    'claims.C6.criterion': (
        'DeepSeek-V3\'s latent + RoPE key = {in_heads:g}·d_head = GQA with {gqa:g} KV heads (from its '
        'published config), and a tiny DeepSeek-V3-shaped module (loaded through the checkpoint mapping '
        'the tests check against transformers) gives back its uncached K and V from the up-projected '
        'latent cache within {tol:.0e}'),
    'claims.C7.criterion': (
        "The best fixed W' for R_m·W (random W, d_k = {d_k}) over {positions} positions leaves a "
        'residual ≥ {threshold:.0f} %, within {tol:.0f} points of the closed form from the rotation '
        'angles ({expected:.1f} %), while one position fits exactly'),
    'claims.C18.criterion': (
        'All {n} facts of a Llama-style block hold. Decided by the checkpoint\'s tensors (which exist, '
        'their shapes): a gated MLP (SwiGLU or GeGLU), fewer KV than query heads, no bias tensor, no '
        'encoder tensor, no cross-attention tensor. By the architecture\'s code, which the tensors can '
        'only contradict: pre-norm (each norm\'s place from its name), RMSNorm (weight-only norms), RoPE '
        '(no position-embedding tensor)'),
    'claims.C19.criterion': (
        'At initialisation, {depth} layers: last block\'s gradient ÷ first\'s ≥ {post_min:g} for '
        'post-norm and ≤ {pre_max:g} for pre-norm'),
    'claims.C14.criterion': (
        'The calculator, from each published config, rounds to Mixtral\'s {mixtral} B and '
        'DeepSeek-V3\'s {deepseek} B (total / active); time per token, measured, at k = {k1} ≥ '
        '{threshold:g}× that at k = {k0}'),
    'claims.C15.criterion': (
        'On {tokens} held-out tokens, the load CV (mean over layers) without balancing ≥ {margin:g}× '
        'that of the auxiliary-loss and of the bias router'),
    'claims.C16.criterion': (
        'On one head of the loaded model max |tiled − naive| ≤ {tol:.0e}; from n = {n0} to {n1} (random '
        'inputs: the memory does not depend on the values) the peak extra memory, measured, grows as n^e '
        'with e ≥ {quadratic:g} for naive and e ≤ {linear:g} for tiled'),
    'claims.C17.criterion': (
        'One row\'s running max rises at least once, and after its last block max, normalizer and '
        'output equal the full softmax\'s within {tol:.0e}'),
    # C21, C22: our claims on the logit lens (explorer/nexttoken/evidence.py)
    "claims.C21.criterion": (
        "Our claim: the logit lens's last layer is the model's own logits, bit for bit. Criterion: on "
        "\"{prompt}\" the lens read at the last layer equals the forward's logits at the last position "
        "exactly (torch.equal, max |difference| = 0)."
    ),
    "claims.C22.criterion": (
        "Our claim: the lens agrees more with the final prediction as depth grows. Criterion: on the first "
        "{tokens} tokens of the long text (its last {positions} positions), the mean agreement of the lens's "
        "top token with the final one over the last third of the layers before the output exceeds that "
        "of the first third by at least {rise:.0f} points."
    ),
}
