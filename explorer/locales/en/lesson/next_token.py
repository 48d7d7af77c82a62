"""The next-token lesson (explorer/lessons/next_token.py), in English."""
STRINGS = {
    # layer l of the lens is the residual stream after l blocks: the guess is a count of blocks
    "lesson.next.unit": "blocks",
    "lesson.next.title": "What the model says next",
    "lesson.next.summary": "The next-token distribution, what temperature does to it, and the layer where the answer forms.",
    "lesson.next.s1.look": "A language model does not write a word: it gives **every token of its vocabulary a probability**. Look at the bars: the most likely next tokens after the prompt, and all the others as one bar.",
    "lesson.next.s1.said": "{model} gives `{token}` a probability of **{p}%**, then `{second}` {p2}%; all tokens beyond the {rows} drawn share {rest}%. The entropy over its {vocab:,} tokens is **{bits:.2f} bits** (1 bit would be a fair coin between two tokens).",
    "lesson.next.s2.look": "A sampler divides the logits by a **temperature** before the softmax. Here T = {t}: below 1 the distribution sharpens. Compare the orange bars with the blue ones.",
    "lesson.next.s2.said": "At T = {t}, `{token}` rises from {p}% to **{kept_p}%** and `{second}` falls from {p2}% to {kept_p2}%; the entropy drops from {bits:.2f} to **{kept_bits:.2f} bits**. No token is cut ({n_kept:,} kept): temperature reshapes, top-k and top-p cut. Move the sliders yourself: the bars follow without a new forward.",
    "lesson.next.s3.look": "The **logit lens** reads each layer's residual stream through the model's own final norm and unembedding. On \"{prompt}\", the model's answer is its top token at the last layer. Before the run: predict from which layer on it stays the lens's top token.",
    "lesson.next.s3.ask": "After how many blocks does the final token become the lens's top token and stay it (layer ℓ = after ℓ blocks; 0 = already at the embeddings)?",
    "lesson.next.s3.said": "`{token}` takes the lead at **layer {answer} of {layers}** in {model}: rank {rank0} at layer 0, rank {rank_mid} at layer {mid}, then the top with p = {p}% at the output. The lens's last layer equals the model's logits exactly (max |difference| = {diff}) {exact}. Over the prompt's positions the lens agrees with the final prediction {first}% of the time in the first {third} layers and {last}% in the last {third}.",
    "lesson.next.s3.why": "Why: each block adds its update to the residual stream; read through the unembedding, the early layers still look like the input token (or noise), and the final answer only wins once the later blocks have written it. Here it rose from rank {rank0} to the top at layer {answer} of {layers}.",
}
