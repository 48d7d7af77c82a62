"""The Generate tab's precision section (explorer/generate/precision.py), in English."""
STRINGS = {
    'precision.section': 'Precision: bytes per weight',
    'precision.intro': (
        "Decoding one token reads every weight once (claim C2), so on this CPU a decode step "
        "takes about as long as reading its bytes. The same model can keep its matrices in "
        "**fp32** (4 bytes a weight), **bf16** (2 bytes: the upper half of the fp32), **int8** "
        "in blocks of 32 with one fp32 scale each (1.125 bytes), or **gguf**: the integer codes "
        "the checkpoint was published with, which are the fp32 weights exactly, since those fp32 "
        "weights were dequantized from them. The GGUF file packs those codes in 4 to 8 bits "
        "each, plus their scales: SmolLM2's layer matrices are Q4_1, 20 bytes per 32 weights (0.625 bytes "
        "a weight); Gemma 3's layer matrices mix Q4_K (0.5625), Q5_0 (0.6875), Q6_K (0.82) and Q8_0 (1.0625), "
        "0.68 on average; both files keep the embedding in Q8_0. This engine keeps each code in a "
        "byte of its own, with an fp32 scale per block of 32 (or 16) and in some formats an fp32 "
        "offset: 1.125 to 1.25 bytes a weight here. "
        "Press **Measure** to decode "
        "the Generate tab's default prompt greedily through our fused step in each precision "
        "(interleaved, so the machine's load hits all alike) and to score each against fp32 "
        "on a fixed evaluation text (a passage of the Python Language Reference, after the "
        "model's BOS token where it has one; not the passage the served default was chosen on): "
        "speed follows the bytes read, and each bit dropped has a measured price. About 20 s (SmolLM2) to 40 s (Gemma 3); nothing else of the model runs meanwhile."),
    'precision.measure': 'Measure',
    'precision.none': 'Press Measure to decode in every precision.',
    'precision.busy': (
        "Visitors' runs are decoding on this model right now: their steps and these would time "
        "each other. Measure again when the class's generations have finished."),
    'precision.err.device': 'The precision comparison runs on the CPU in float32 (this server runs another device or dtype).',
    'precision.err.model': 'This model has no fused decode step, so its precisions cannot be compared: {reason}',
    'precision.fig.speed': 'Decode speed against bytes read per token',
    'precision.fig.label': '{weights}<br>{mb:.0f} MB/token',
    'precision.fig.measured': 'measured tokens/s',
    'precision.fig.predicted': 'roofline: {gbs:.1f} GB/s ÷ bytes per token',
    'precision.fig.tps_axis': 'tokens/s (one stream)',
    'precision.fig.hover_tps': '%{{x}}: %{{y:.1f}} tokens/s<extra>%{{fullData.name}}</extra>',
    'precision.fig.price': 'The price: top-1 agreement with fp32 over {n} tokens of a fixed evaluation text',
    'precision.fig.top1': 'top-1 agreement with fp32',
    'precision.fig.top1_axis': 'top-1 agreement with fp32 (%)',
    'precision.fig.bar_text': '{top1:.1f}%<br>ppl {ppl:.2f}<br>max |Δlogit| {dlogit:.2f}',
    'precision.fig.hover_top1': '%{{x}}: %{{y:.1f}}% of positions pick fp32\'s token<extra></extra>',
    'precision.fig.bound': 'served default needs ≥ {pct:.0f}%',
    'precision.summary': (
        "**{model}**, {threads} threads: {new} tokens decoded greedily from a {prompt}-token "
        "prompt in each precision, {rounds} interleaved rounds (the ratio is the median over "
        "rounds of the rate over fp32's in the same round); the price scored over the first "
        "{held} tokens of a fixed evaluation text, the passage “{text}” of the Python Language "
        "Reference, {bos}, every position against fp32's logits."),
    'precision.summary.bos': "after the model's BOS token, as its tokenizer begins every text",
    'precision.summary.no_bos': "with no BOS token, as this model's tokenizer begins a text",
    'precision.table.head': (
        "| path | bytes read per token | roofline tokens/s | measured tokens/s | vs fp32 | "
        "top-1 agreement | positions unlike fp32 (near ties) | max \\|Δ logit\\| | perplexity |\n"
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|"),
    'precision.summary.ties': (
        "{near} of the {held} scored positions are **near ties**: fp32's two best logits lie within "
        "{tie} of each other there, so a small change of the logits can swap them. The count in "
        "brackets is how many of a precision's differing positions are near ties: where they all "
        "are, it picks another token only where fp32 itself barely preferred its own, and its "
        "perplexity barely moves."),
    'precision.summary.pick': (
        "For one stream, the rule for the served default, the fastest precision whose top-1 agreement with fp32 "
        "is at least {pct:.0f}%, picks **{pick}** here. This server's decode steps read "
        "**{serving}**: the operator's choice (`EXPLORER_WEIGHTS`), else the one this rule picked "
        "for this checkpoint with every claim passing, over 512 tokens of another fixed text, "
        "the passage “{choice}” (README): the price above is measured on a text the choice "
        "was not made on."),
    'precision.err.time_limit': (
        "The measurement reached its {s:.0f} s limit and stopped: the machine is busy. "
        "Try again in a while."),
    'precision.table.continuation': "| precision | greedy continuation of the prompt |\n|---|---|",
}
STRINGS['precision.kv.head'] = (
    "The KV cache's precision: the same {n} evaluation tokens through the engine's forward into a "
    "cache stored in each format (every query attends over the keys and values as stored; "
    "int8 with one fp32 scale per token and head), against the fp32 cache's logits. Bytes per "
    "token are read from the stored tensors (claim C3's formula with the element size).\n\n"
    "| KV cache | bytes per token | top-1 agreement | positions unlike fp32 (near ties) | "
    "max \\|Δ logit\\| | perplexity |\n|---|---:|---:|---:|---:|---:|")
