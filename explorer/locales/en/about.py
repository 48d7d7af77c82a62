"""The About tab, in English."""

STRINGS: dict[str, str] = {
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
    'about.place.next_token': 'Next token tab',
    'about.place.architecture': 'Architecture tab',
    'about.c.C1': 'A KV cache turns per-step attention from O(t²) into O(t).',
    'about.c.C2': 'Small-batch decode is memory-bound; batching shares the weight read.',
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
    'about.c.C13': 'A larger RoPE base slows the rotations; a larger base alone, untrained, does not buy reach.',
    'about.c.C14': 'MoE: parameters scale with N experts, compute with the top k.',
    'about.c.C15': 'Routers overload a few experts; aux loss or bias terms rebalance.',
    'about.c.C16': 'FlashAttention is exact; it saves memory traffic, not arithmetic.',
    'about.c.C17': 'Online softmax: a running max and normalizer, block by block.',
    'about.c.C18': 'Llama vs the original Transformer: RMSNorm, RoPE, SwiGLU, GQA.',
    'about.c.C19': 'Post-norm puts a norm on every gradient path; pre-norm does not.',
    'about.c.C20': 'Decoding many requests together raises throughput nearly in proportion while the step stays memory-bound, until it becomes compute-bound.',
    'about.c.C21': "The logit lens's last layer is the model's own logits, exactly (our claim).",
    'about.c.C22': "The logit lens agrees more with the model's final prediction as depth grows (our claim).",
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
}
