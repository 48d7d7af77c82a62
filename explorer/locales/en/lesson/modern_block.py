"""The modern-block lesson (explorer/lessons/modern_block.py), in English."""
STRINGS = {
    "lesson.block.title": "The modern block",
    "lesson.block.summary": "From the 2017 Transformer block to Llama's: four changes read from real tensors, and why pre-norm trains deep stacks.",
    "lesson.block.s1.look": "The diagram puts the **original Transformer** block and GPT-2's beside the blocks of the checkpoints this app runs, each read from its tensors. Look for the norm's place and kind, the position encoding, the MLP's gate, the KV heads and the biases.",
    "lesson.block.s1.said": "Of the {n} facts of a modern block (pre-norm, RMSNorm, RoPE, a gated MLP, fewer KV heads than query heads, no biases, no encoder, no cross-attention), **{original}** holds **{orig}** and **{gpt2_title}** holds {gpt2}. Read from the checkpoints' tensors: {models}. Every checkpoint holds all {n}: {verdict}.",
    "lesson.block.s2.look": "Why did the norm move? Stacks of the same blocks, post-norm and pre-norm, start from the same weights; one backward pass measures the **gradient norm of each block**. The chart shows it from the first block to the last.",
    "lesson.block.s2.said": "Gradient of the last block over the first, at initialisation: {rows}. C19 asks post-norm's ratio to reach {post_min}× and pre-norm's to stay at most {pre_max}×; at {depth} layers post-norm gives **{post:.2f}×** and pre-norm **{pre:.2f}×**: {verdict}. Post-norm passes every gradient through a norm at every layer; pre-norm leaves an unscaled identity path along the trunk.",
}
