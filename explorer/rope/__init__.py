"""RoPE, measured (claims C11, C12, C13): one module per experiment of the RoPE tab, each a pure
`run` returning a typed result, and `figures(result, lang)` / `summary(result, lang)` drawing it
in the visitor's language (explorer/ui/tabs/rope.py keeps the result in a gr.State).

    frequencies   θ_i = base^(−2i/d) per pair for several bases, full turns inside a context
    capture       the real model's q and k of one layer, before and after RoPE
    toeplitz      one real q and k at every (m, n): only n − m counts; only q rotated: it does not
    pair          one pair of the real q rotating, position by position
    distance      mean attention weight against distance, per layer
    sweep         perplexity of the real model with its RoPE base changed
    continuation  greedy continuation, trained base beside a changed one
    scaling       context-extension recipes (PI, NTK-aware, YaRN), frequencies only
    evidence      the claims board's C11, C12, C13, judged by the criteria the summaries use

A sentence that states a result is chosen by a criterion function of the result (e.g.
toeplitz.toeplitz_holds, sweep.perplexity_rises) and carries its number. Every rotation goes
through models.layers (rope_inv_freq, rope_cos_sin, apply_rope): the code the
model runs, never a second RoPE. Bad inputs raise explorer.inputs.InputError (locale keys) before
any real work.
"""
