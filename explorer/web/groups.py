"""The concurrency groups of the app's queued events, by name. The tabs put their events in
them (`TabContext.model_event`, `long_event`, the Generate tab's own group); the web layer
bounds each group (admission, Gradio's per-group limits) and, on ZeroGPU, runs the events of
the model groups in GPU calls. How many of each run and wait: app.GROUPS."""
from __future__ import annotations

# All events that run a model share this concurrency group (limit 1): on a 2-core CPU two
# forward passes at once only make both slower, and on a GPU they would fight for memory.
MODEL_CONCURRENCY_ID = "model"
# Runs of minutes (StreamingLLM, the claims board, the RoPE sweep...): one at a time, in a group
# of their own beside the short forwards, with few allowed to wait (app.GROUPS).
LONG_CONCURRENCY_ID = "long"
# The Generate tab's streams, bounded by the shared decode loop itself (explorer/serving/).
GENERATE_CONCURRENCY_ID = "generate"
# Every queued event in none of the groups above: page loads, redraws, tables from a config.
CHEAP_CONCURRENCY_ID = "cheap"

# The groups whose events run a model (on ZeroGPU, each such event runs in a GPU call).
MODEL_GROUPS = (MODEL_CONCURRENCY_ID, LONG_CONCURRENCY_ID, GENERATE_CONCURRENCY_ID)
