"""The MoE tab, its figures and verdicts, in English."""

STRINGS: dict[str, str] = {
    # ---------------------------------------------------------------- MoE tab (explorer/ui/tabs/moe.py)
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
        'Computed from each model\'s published config.json values (explorer/published.py '
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
    'moe.err.too_few_tokens': 'The text is {n} {n:token/tokens} long; type at least two tokens.',
    'moe.err.not_moe': '{name} has no mixture-of-experts layer; pick an MoE model.',
    'moe.err.not_moe_layer': 'Layer {layer} is not an MoE layer of this model; MoE layers: {layers}.',
    'moe.err.no_corpus': (
        'The held-out files (Python 3.11\'s standard library sources, listed in '
        'explorer/moe/corpus_files.txt) are not on this machine.'),
    'moe.err.no_variants': 'The three trained routers are not installed in this app.',
    'moe.err.bias_flag': 'The selection-bias switch must be on or off.',
    # ------------------------------------- MoE figures: figures() of explorer/moe/{routing,balance,preferences,params,cost,whatif}.py
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
    # ---------------------------------------------------------------- verdicts (C14, C15)
    # each chosen by the criterion the claims board uses
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
}
