"""The Generate & KV-cache tab's experiments, one module per thing they hold:

- request.py: the checks of a generation request (limits, Request, encode_prompt);
- session.py: one generation recorded step by step (Session, stream_generation: the run);
- checks.py: after a run, cached vs full-forward logits (C4), the engine's cache read back
  (allocated and used bytes, C3; the (T, S) mask over its real slots, C4) and the no-cache
  replay timed against a cached step of the same engine, with computed and needed scores (C1);
- figures.py: the run's charts, status line and summary in the visitor's language;
- tokens.py: the run's tokens as a strip, each with its step's five most likely tokens
  (models.generate.Alternatives) in a tooltip shown on hover and on keyboard focus;
- evidence.py: the claims board's evidence for C1, C3, C4 and C9, through the tab's own run;
- shapes.py: the calculator of published shapes (C3, C5, C6, C9), read from explorer/published.py;
- device_roof.py: this device's memory bandwidth and matmul FLOP rate, measured on demand and
  kept per (device, dtype, threads) with the time they were measured;
- step_cost.py: bytes read and FLOPs of one decode step of the loaded model, counted from its
  tensors and config (C2's model half);
- roofline.py: the decode roofline of the loaded model (C2): the step's cost against the
  measured roof, beside the engine's batched decode timed at B = 1 ... 16; C2's criteria and
  the board's evidence; roofline_figures.py draws and words it (bench/roofline.py: from a shell).

No Gradio here: explorer/ui/tabs/generate.py wires these into the tab.
"""
