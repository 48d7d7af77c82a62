"""The serving engine: what makes the models of models/ decode fast, kept apart from them.

models/ is the textbook: one forward, one attention path, one cache write. The engine plugs
into it through the two seams models/ defines and never imports back:

- an attention backend chosen by name (models.forward.ATTENTION_BACKENDS): the batched
  decoder registers "per_run" (each row of a batch over its own cache) and "pooled" (every
  run's cache in one store, one attention call per layer);
- a weight provider (models.layers.weight_provider): who computes each Linear's product; the
  engine's providers hand it oneDNN-packed copies (packing) or bf16 / int8 / gguf copies
  (quantized).

Parity tests are the contract: every path here gives the tokens, and logits within the
bound each module states, of the eager forward of models/ (tests/unit/test_decoders.py,
test_fused.py, test_fused_batch.py, test_batched.py, test_precision.py, test_gguf_codes.py).

Modules, from the bottom up (each imports only those above it in this list, and models/):
    native        builds and checks the C++ kernels (kernels/*.cpp), loads them
    fused_kernel  the fused-decode library's ctypes structs and loader
    quantized     bf16 / int8 / gguf copies of the weights and their products
    packing       oneDNN-packed fp32 copies for batched products
    kv_quant      KV caches stored in bf16 or int8
    static        the static-shape decode step (torch.compile)
    fused         the whole decode step of one run as one C++ call
    fused_batch   the fused step for several runs at once (masks evaluated in Python, from
                  models.attention's predicates, and handed to the kernel per slot)
    prefix        a run started with another run's first n positions (prefix reuse)
    pool          the pooled K/V store of many runs
    pooled_step   one decode token of many runs, attention in one call per layer
    batched       BatchedDecoder: many runs decoding together (the classroom's loop)
"""
