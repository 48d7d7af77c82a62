"""Input checks (explorer/inputs.py), shown by every tab, in Simplified Chinese (简体中文)."""

STRINGS: dict[str, str] = {
    # ---------------------------------------------------------------- input checks (explorer/inputs.py)
    'inputs.not_number': '{name}必须是数字，收到的是 {value}。',
    'inputs.not_finite': '{name}必须是有限的数字，收到的是 {value}。',
    'inputs.not_whole': '{name}必须是整数，收到的是 {value}。',
    'inputs.between': '{name}必须在 {low} 到 {high} 之间，收到的是 {value}。',
    'inputs.at_least': '{name}至少为 {low}，收到的是 {value}。',
    'inputs.not_text': '{name}必须是文本。',
    'inputs.too_long': '{name}有 {n:,} 个字符，这里的上限是 {limit:,}。请缩短。',
    'inputs.empty_text': '{name}为空：请输入一两句话。',
    'inputs.too_many_tokens': '{name}有 {n:,} 个 token，这里的上限是 {limit:,}。请缩短。',
    'inputs.no_tokens': '{name}切不出任何 token：请输入一两句话。',
    'inputs.not_option': '{name}必须是 {options} 之一，收到的是 {value}。',
    'inputs.name.text': '文本',
    'inputs.name.prompt': '提示词',
    'inputs.name.choice': '所选项',
    'inputs.name.number': '数值',
    'inputs.internal': '服务器出了点问题，请求没有完成。请再试一次。',
}
