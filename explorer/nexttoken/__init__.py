"""What the model says next (issue 44), one module each:

- distribution: one forward of a prompt through our modules; the last position's next-token
  distribution, what temperature / top-k / top-p keep of it (the Generate tab's own
  `models.generate.sampling_probs`), its entropy, and seeded sampled continuations;
- lens: the logit lens, each block's recorded residual stream read through the model's own final
  norm and unembedding (`CausalLM.head`), whose last layer is the model's logits exactly;
- guesses: a typed guess matched to the tokenizer's tokens, and a class's guesses scored under
  the distribution;
- runs: the Next token tab's two runs as typed results (the distribution with the sampler's cut,
  seeded continuations; the lens with its last-layer check and agreement by depth), inputs
  checked; figures: their figures and summaries in either language; evidence: claims C21, C22.
"""
