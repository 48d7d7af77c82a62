"""The Architecture tab's experiments (claims C6, C7, C18, C19):

- inventory.py       a model's block read from its tensor inventory (the loaded checkpoints'
                     own safetensors headers; the published configs instantiated without
                     memory);
- blocks.py          the original Transformer, GPT-2, SmolLM2 and Gemma 3 blocks side by side,
                     as read by inventory.py: diagrams, parameters, a table (C18);
- norm_placement.py  pre-norm vs post-norm stacks: gradient norm per layer at initialisation and
                     a short training run without warmup (C19);
- mla.py             the latent cache's size from DeepSeek-V3's config against MHA/GQA (C6), and
                     why a position-dependent rotation cannot live in one fixed projection (C7);
- evidence.py        the claims board's rows for C6, C7, C18, C19, read through the criteria the
                     summaries above use.

Each module is run(...) -> a frozen result, figures(result, lang), summary(result, lang).
"""
