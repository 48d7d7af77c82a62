"""The next-token view, the logit lens and the class's guessing game (explorer/nexttoken), in English."""
STRINGS = {
    "next.err.guess": "A guess is one word of at most {limit} characters that the tokenizer can spell.",
}
