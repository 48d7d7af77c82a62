"""Input checks (explorer/inputs.py), shown by every tab, in English."""

STRINGS: dict[str, str] = {
    # ---------------------------------------------------------------- input checks (explorer/inputs.py)
    'inputs.not_number': '{name} must be a number, got {value}.',
    'inputs.not_finite': '{name} must be a finite number, got {value}.',
    'inputs.not_whole': '{name} must be a whole number, got {value}.',
    'inputs.between': '{name} must be between {low} and {high}, got {value}.',
    'inputs.at_least': '{name} must be at least {low}, got {value}.',
    'inputs.not_text': '{name} must be text.',
    'inputs.too_long': '{name} is {n:,} characters long; the limit here is {limit:,}. Shorten it.',
    'inputs.empty_text': '{name} is empty: type a sentence or two.',
    'inputs.too_many_tokens': '{name} is {n:,} tokens; the limit here is {limit:,}. Shorten it.',
    'inputs.no_tokens': '{name} gives no tokens: type a sentence or two.',
    'inputs.not_option': '{name} must be one of {options}, got {value}.',
    'inputs.name.text': 'The text',
    'inputs.name.prompt': 'The prompt',
    'inputs.name.choice': 'The choice',
    'inputs.name.number': 'The number',
    'inputs.internal': 'Something went wrong on the server; the request was not completed. Try again.',
}
