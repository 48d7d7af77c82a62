"""The next-token view, the logit lens and the class's guessing game (explorer/nexttoken), in English."""
STRINGS = {
    "next.err.guess": "A guess is one word of at most {limit} characters that the tokenizer can spell.",
    "next.tab": "Next token",
    "next.intro": (
        "A language model reads the prompt and answers with a **probability for every token of its "
        "vocabulary**: what comes next. This tab shows that distribution for the model picked at the top, "
        "what a sampler keeps of it, and how it forms through the layers (the **logit lens**)."
    ),
    "next.prompt": "Prompt",
    # distribution
    "next.dist.section": "Distribution",
    "next.dist.intro": (
        "One forward of the prompt gives the logits $z$ at the last position; the model's distribution is "
        "$p_i = e^{z_i} / \\sum_j e^{z_j}$ and its entropy $H = -\\sum_i p_i \\log_2 p_i$ bits. A sampler "
        "divides the logits by the **temperature** $T$ ($T \\to 0$: always the top token; $T > 1$: flatter), "
        "keeps the **top-k** most likely tokens (0: all), then the smallest set whose mass reaches **top-p**, "
        "and renormalises. Moving a control recomputes only that cut, on the same logits: the same code "
        "as the Generate tab's sampler."
    ),
    "next.dist.run": "Run the model",
    "next.dist.temperature": "Temperature",
    "next.dist.top_k": "Top-k (0: no cut)",
    "next.dist.top_p": "Top-p",
    "next.dist.n": "Continuations",
    "next.dist.seed": "Seed",
    "next.dist.tokens": "Tokens per continuation",
    "next.dist.sample": "Sample continuations",
    "next.dist.sample_note": (
        "Each continuation is drawn by the Generate tab's sampler (models.generate, with the KV cache) "
        "with the controls above, continuation i with seed + i: the same seed gives the same text."
    ),
    "next.dist.rest": "all other tokens",
    "next.dist.greedy": "greedy (T = 0)",
    "next.dist.sampler": "sampler (T = {t}, top-k {k}, top-p {p})",
    "next.dist.forward": (
        "The step that ran: one forward of **{tokens} tokens** through our own modules of {model} "
        "({dtype}, eager, no cache, on {device}) in {ms:.0f} ms; the bars are its last position's distribution."
    ),
    "next.dist.top": (
        "The model's most likely next token is {token} with **{p}**; the entropy of its distribution "
        "over all {vocab:,} tokens is **{bits:.2f} bits**."
    ),
    "next.dist.kept": (
        "The {sampler} keeps **{n:,} {n:token/tokens}** ({shown} of the {rows} drawn), renormalised; "
        "the entropy of what it draws from is **{bits:.2f} bits**."
    ),
    "next.dist.no_run": "Run the model first: the controls act on its last run.",
    "next.table.head": "| # | token | model | sampler |",
    "next.samples.head": "**{n} {n:continuation/continuations}** of {tokens} tokens, {sampler}:",
    "next.samples.line": "- seed {seed}: first token {first} (p = {p} under the sampler) → {text}",
    "next.fig.dist_title": "Next-token distribution of {model}",
    "next.fig.model": "model (T = 1, no cut)",
    "next.fig.cut": "cut",
    "next.fig.probability": "probability",
    "next.fig.bar_hover": "%{{y}}: %{{x:.2%}}<extra>%{{fullData.name}}</extra>",
    # logit lens
    "next.lens.section": "Logit lens",
    "next.lens.intro": (
        "The **logit lens** reads the residual stream after each block $\\ell$ through the model's own final "
        "norm and unembedding, as if the model stopped there: $\\mathrm{softmax}(W_U\\,\\mathrm{norm}(h_\\ell))$. "
        "Layer 0 is the embeddings, the last layer is exactly what the model's head reads. Each cell shows the "
        "lens's top token at that layer and position, coloured by its probability; below, the chosen token's "
        "rank and probability through depth, and where it takes the lead for good."
    ),
    "next.lens.run": "Run the lens",
    "next.lens.token": "Token followed through depth",
    "next.lens.forward": (
        "The step that ran: one forward of **{tokens} tokens** through our own modules of {model} "
        "(float32, eager, no cache, on {device}) in {ms:.0f} ms, every block's residual stream recorded at the "
        "last {positions} positions; the lens read them through the model's final norm and unembedding "
        "({layers} blocks + the embeddings) in {lens_ms:.0f} ms."
    ),
    "next.lens.check": (
        "Check: the lens's last layer against the model's own logits at the last position, "
        "max |difference| = **{diff}** {mark}"
    ),
    "next.lens.lead": (
        "{token} takes the lead at **layer {lead} of {layers}** and stays the lens's top token from there "
        "(rank {rank0} at layer 0, p = {p} at the last layer)."
    ),
    "next.lens.no_lead": "{token} is not the model's top token (rank {rank} at the last layer): it never takes the lead.",
    "next.lens.agreement": (
        "Agreement of the lens's top token with the model's final one over these positions: **{first:.0f}%** "
        "in the first {third} layers, **{last:.0f}%** in the last {third} before the output. "
        "Claim C22 asks this rise to be at least {rise:.0f} points on a stated text (the claims board)."
    ),
    "next.fig.lens_title": "Logit lens of {model}",
    "next.fig.lens_subtitle": "top token by layer and position",
    "next.fig.position": "position: token",
    "next.fig.layer": "layer (0 = embeddings)",
    "next.fig.cell_hover": "layer %{{y}}, %{{x}}<br>top: %{{customdata}} (%{{z:.1%}})<extra></extra>",
    "next.fig.ranks_title": "{token} through depth",
    "next.fig.rank_axis": "rank (1 = top)",
    "next.fig.rank": "rank",
    "next.fig.token_p": "probability of the token",
    "next.fig.agreement": "agreement with the final top token",
    "next.fig.rank_hover": "layer %{{x}}: rank %{{y}}<extra></extra>",
    "next.fig.p_hover": "layer %{{x}}: %{{y:.1%}}<extra>%{{fullData.name}}</extra>",
    "next.fig.lead": "lead from layer {layer}",
    "next.m.diff": "max |lens − logits|",
    "next.m.first": "agreement, first third",
    "next.m.last": "agreement, last third",
}
