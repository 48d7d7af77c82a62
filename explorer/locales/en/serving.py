"""The class as one batch (the Generate tab's section on the shared decode loop) and claim C20,
in English."""
STRINGS = {
    'serving.section': 'The class as one batch',
    'serving.intro': (
        "Every visitor's run on this server is decoded by **one loop**: each step feeds the next "
        "token of every decoding run through one forward, so the weights are read once for all "
        "of them (iteration-level batching). Runs join between two steps and leave when they "
        "finish. Below: the runs in the loop now (yours highlighted, the others anonymous: "
        "lengths and counts only), the width each run's cache has in the pooled store against "
        "what a paged layout of 16-token blocks would hold, and the step time against the "
        "number of runs in the step beside the roofline's prediction (claim C20). The view "
        "refreshes every 2 s while this section is open; start runs in the first "
        "section, from several pages or devices, to fill it."),
    'serving.refresh': 'Refresh now',
    'serving.you': 'you · {n}',
    'serving.run': 'run {n}',
    'serving.state.waiting': 'waiting',
    'serving.state.prefilling': 'prefilling',
    'serving.state.decoding': 'decoding',
    'serving.fig.rows': 'Runs in the loop: cache held vs row width in the pooled store',
    'serving.fig.used': 'held (tokens)',
    'serving.fig.used_own': 'held, your run',
    'serving.fig.allocated': 'pooled row width',
    'serving.fig.paged': 'paged: {block}-token blocks',
    'serving.fig.tokens': 'cache slots (tokens)',
    'serving.fig.hover': '%{{y}}: %{{x}} slots<extra>%{{fullData.name}}</extra>',
    'serving.fig.no_runs': 'No run is in the loop now: press Start in the Run section (or let the class do it).',
    'serving.fig.steps': 'Decode step time against the runs in the step',
    'serving.fig.measured': 'measured steps',
    'serving.fig.median': 'median per B',
    'serving.fig.predicted': "roofline's prediction (context {t})",
    'serving.fig.knee': 'knee B ≈ {b:.0f}',
    'serving.fig.runs_axis': 'runs in the step (B)',
    'serving.fig.ms_axis': 'step time (ms)',
    'serving.fig.step_hover': 'B = %{{x}}: %{{y:.1f}} ms<extra>%{{fullData.name}}</extra>',
    'serving.fig.no_steps': 'No decode step recorded yet.',
    'serving.summary': (
        '**{decoding} decoding**, {prefilling} prefilling, {waiting} waiting (at most {max_batch} '
        'in a step). Cache of these runs: **{used}** held, **{allocated}** allocated in the pooled '
        'store, **{paged}** in {block}-token blocks ({blocks} blocks). Prefix reuse saved '
        '**your runs {shared:,} prompt tokens** (copied, not computed again): a count of your '
        "own runs on this model, never of anyone else's."),
    'serving.summary.own': 'Your runs: row {rows} (highlighted).',
    'serving.summary.no_own': 'None of these runs is yours.',
    'serving.summary.hidden': '{n} more runs are not drawn.',
    'serving.summary.knee': (
        "The roofline ({model}, this device's measured roof, context {t}) predicts the step "
        "stays memory-bound up to B ≈ {knee:.0f}: below it a step of more runs costs little more "
        "than one, past it the step's time grows with B."),
    'serving.summary.no_knee': (
        "The roofline ({model}, this device's measured roof, context {t}) predicts the step "
        "stays memory-bound at every batch the loop takes."),
    'serving.summary.no_roof': "This device's roof is being measured: the prediction follows in a few seconds.",
    'serving.summary.steps': 'Measured: {rows}.',
    'serving.summary.step_row': 'B = {b}: {ms:.0f} ms ({tps:.0f} tok/s)',
    # claims board: C20 (explorer/generate/batch_evidence.py)
    'serving.c20.criterion': (
        'The loop\'s own steps on {weights} weights (a run alone on the fused step): at B = 2, '
        'and at B = 4 where it is at most a quarter of the roofline\'s knee, tokens/s ≥ {k:g} × B × '
        'the tokens/s of one run; the best tokens/s at B ≥ 4 ≥ {g:g} × that at B = 2 (or K/2 × '
        'where the roofline\'s knee K is under 3); and the measured knee (the end of the last doubling of B that '
        'gained at least √2 in tokens/s) within a factor {f:g} of the roofline\'s knee for these '
        'weights (where that knee lies past B = {last}, growth up to it ÷ {f:g})'),
    'serving.m.tokens_b1': 'tokens/s at B = 1',
    'serving.m.tokens_b2': 'tokens/s at B = 2',
    'serving.m.tokens_b4': 'tokens/s at B = 4',
    'serving.m.tokens_b8': 'tokens/s at B = 8',
    'serving.m.tokens_b16': 'tokens/s at B = 16',
    'serving.m.tokens_b32': 'tokens/s at B = 32',
    'serving.m.efficiency_b2': 'efficiency at B = 2',
    'serving.m.efficiency_b4': 'efficiency at B = 4',
    'serving.m.efficiency_b32': 'efficiency at B = 32',
    'serving.m.knee': "roofline's knee (B)",
    'serving.m.measured_knee': 'measured knee (B)',
    'serving.m.past_pair': 'best tokens/s at B ≥ 4 over B = 2',
}
