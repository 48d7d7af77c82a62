"""The shared decode loop: one thread per loaded model decodes every visitor's run together,
and a worker thread streams each run to the web framework. No Gradio and no visitor text
here: a refusal is the neutral `Busy` (the loop is full) or `TooManyRuns` (one visitor's cap),
which a UI translates (explorer/ui/tabs/generate.py).

- scheduler.py: the loop (Scheduler; scheduler_for, the one loop of a model);
- limits.py: its limits (MAX_BATCH runs decoding, MAX_WAITING queued, MAX_RUNS_PER_SESSION
  and MAX_RUNS_PER_ADDRESS of one visitor's);
- prefixes.py: which prompt prefix a joining run may copy from another (prefix reuse);
- runs.py: a run inside the loop, the handle its consumer holds, who sent it (Visitor),
  SharedStep, Busy and TooManyRuns;
- thread_choice.py: the intra-op thread count of a batched step, chosen by measuring;
- registry.py: one loop per model, every loop stopped at interpreter exit, none inherited
  through a fork;
- priority.py: the sessions whose runs' checks wait for the loop instead of being declined (a
  live class's teacher pages, granted by the class's handlers; CHECKS_FIRST);
- workers.py: daemon worker threads that leave torch before the interpreter exits;
- transport.py: the worker thread and queue between a run and the web framework
  (in_background).

What a visitor sees of the loop (the class as one batch) and claim C20 are the Generate tab's
experiments, above this package: explorer/generate/batch_view.py, batch_figures.py,
batch_evidence.py. Nothing here imports an experiment, a lesson or a tab.

The public surface is what this module imports; the engine below it is
engine.batched (the pooled step) and models.generate (sampling, the finish rule,
building a Step).
"""
from explorer.serving.runs import Busy, RunHandle, SharedStep, TooManyRuns, Visitor
from explorer.serving.limits import MAX_BATCH, MAX_RUNS_PER_ADDRESS, MAX_RUNS_PER_SESSION, MAX_WAITING
from explorer.serving.scheduler import Scheduler, scheduler_for
from explorer.serving.thread_choice import ThreadChoice, batch_threads
from explorer.serving.transport import in_background
from explorer.serving.workers import start_worker

__all__ = ["Busy", "MAX_BATCH", "MAX_RUNS_PER_ADDRESS", "MAX_RUNS_PER_SESSION", "MAX_WAITING",
           "RunHandle", "Scheduler", "SharedStep", "ThreadChoice", "TooManyRuns", "Visitor",
           "batch_threads", "in_background", "scheduler_for", "start_worker"]
