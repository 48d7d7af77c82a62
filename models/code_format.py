"""Where and how a checkpoint folder keeps the integer codes of its weights (no torch here:
the checkpoint converter imports it before torch).

A checkpoint converted from a GGUF (explorer/checkpoints/gguf_codes.py writes it) keeps beside
its fp32 weights, per Hugging Face matrix NAME:
    NAME.codes    uint8 (rows, cols): code + 128, code an integer in [-128, 127]
    NAME.scales   fp32 (rows, cols / CODE_BLOCK)
    NAME.offsets  fp32 (rows, cols / CODE_BLOCK)
the weight being scale * code + offset of its block of CODE_BLOCK along the row. They are read
only when a decode step asks for them (models.loading.read_codes, precision gguf).
"""
CODES_FILE = "gguf_codes/codes.safetensors"
CODE_BLOCK = 16
CODE_SUFFIXES = (".codes", ".scales", ".offsets")
