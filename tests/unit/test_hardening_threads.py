"""Issue 27 finding 6: torch's intra-op thread count is per OS thread, fixed at a thread's first
torch call from a process-wide default that torch.set_num_threads also sets. Threads changing
it at once through models.device.intra_op_threads (two decode loops, the board, the roofline)
must leave every thread, old or new, at the process's count: a new thread's first forward on
one core is the attack's effect. Each case runs in a fresh interpreter (the count and the
new-thread hook are process-wide)."""
from __future__ import annotations

import os
import subprocess
import sys

from tests.helpers import ROOT

BASELINE = 3   # differs from every count the blocks below set

SCRIPT = f"""
import random, threading, time, torch
torch.set_num_threads({BASELINE})
from models.device import intra_op_threads

def count_in_new_thread():
    seen = []
    thread = threading.Thread(target=lambda: seen.append(torch.get_num_threads()))
    thread.start(); thread.join()
    return seen[0]

# 1. a thread whose first torch call falls inside another's block, entering a block of its own
first_in, second_in, first_out = threading.Event(), threading.Event(), threading.Event()
def first():
    torch.get_num_threads()
    with intra_op_threads(1):
        first_in.set(); second_in.wait()
    first_out.set()
def second():
    first_in.wait()
    with intra_op_threads(2):
        second_in.set(); first_out.wait()
a, b = threading.Thread(target=first), threading.Thread(target=second)
a.start(); b.start(); a.join(); b.join()
print("after two overlapping blocks: new thread", count_in_new_thread(), "main", torch.get_num_threads())

# 2. a long-lived worker started while a block is open makes its first torch call inside it
holding, done = threading.Event(), threading.Event()
worker_counts = []
def holder():
    with intra_op_threads(1):
        holding.set(); done.wait()
def worker():
    holding.wait()
    worker_counts.append(torch.get_num_threads())
    done.set()
h = threading.Thread(target=holder); h.start(); holding.wait()
w = threading.Thread(target=worker); w.start(); w.join(); h.join()
print("worker started inside a block", worker_counts[0])

# 3. many threads entering and leaving at once, nested, with different counts
def busy(seed):
    rng = random.Random(seed)
    for _ in range(40):
        with intra_op_threads(rng.choice([1, 2, 4])):
            torch.ones(64, 64).sum()
            if rng.random() < 0.3:
                with intra_op_threads(rng.choice([1, 2])):
                    time.sleep(rng.random() / 2000)
                assert torch.get_num_threads() in (1, 2, 4)
            time.sleep(rng.random() / 1000)
    survivors.append(torch.get_num_threads())
survivors = []
threads = [threading.Thread(target=busy, args=(i,)) for i in range(8)]
for t in threads: t.start()
for t in threads: t.join()
print("after the crowd: new thread", count_in_new_thread(), "main", torch.get_num_threads(),
      "crowd", sorted(set(survivors)))
"""


def _run() -> list[str]:
    done = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, cwd=ROOT,
                          env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=180)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout.splitlines()


def test_threads_changing_the_count_together_leave_every_thread_at_the_baseline():
    overlapping, worker, crowd = _run()
    assert overlapping == f"after two overlapping blocks: new thread {BASELINE} main {BASELINE}"
    assert worker == f"worker started inside a block {BASELINE}"
    assert crowd == f"after the crowd: new thread {BASELINE} main {BASELINE} crowd [{BASELINE}]"


def test_a_block_sets_its_count_in_its_own_thread_and_nests():
    from models.device import intra_op_threads, thread_baseline
    import torch

    baseline = thread_baseline()
    other = 1 if baseline != 1 else 2
    with intra_op_threads(other):
        assert torch.get_num_threads() == other
        with intra_op_threads(baseline + 2):
            assert torch.get_num_threads() == baseline + 2
        assert torch.get_num_threads() == other      # the outer block's count again
        with intra_op_threads(0):                     # 0: unchanged
            assert torch.get_num_threads() == other
    assert torch.get_num_threads() == baseline


FORKED = f"""
import os, threading, torch
torch.set_num_threads({BASELINE})
from models.device import intra_op_threads
with intra_op_threads(2):                      # installs the new-thread hook in this process
    pass
pid = os.fork()
if pid == 0:                                   # as a ZeroGPU call's child: one thread, count 1
    torch.set_num_threads(1)
    with intra_op_threads(2):
        pass
    seen = []
    thread = threading.Thread(target=lambda: seen.append(torch.get_num_threads()))
    thread.start(); thread.join()
    print("child: main", torch.get_num_threads(), "new thread", seen[0], flush=True)
    os._exit(0)
os.waitpid(pid, 0)
"""


def test_a_forked_child_keeps_the_count_it_sets_itself():
    """A forked child's threads must not be put back to its parent's baseline: OpenMP's pool
    does not survive a fork, and a parallel region wider than the child's one thread hangs."""
    done = subprocess.run([sys.executable, "-c", FORKED], capture_output=True, text=True, cwd=ROOT,
                          env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "child: main 1 new thread 1"


def test_a_new_baseline_is_what_later_threads_and_blocks_return_to():
    """set_thread_baseline changes the process's count: threads started afterwards take it, a
    block ends on it, and the previous one comes back when it is set again."""
    import threading

    import pytest
    import torch

    from models.device import intra_op_threads, set_thread_baseline, thread_baseline

    seen = []

    def first_torch_call():
        seen.append(torch.get_num_threads())

    before = set_thread_baseline(1)
    try:
        assert thread_baseline() == 1 and torch.get_num_threads() == 1
        with intra_op_threads(2):
            pass
        worker = threading.Thread(target=first_torch_call)
        worker.start()
        worker.join()
        assert seen == [1] and torch.get_num_threads() == 1
        with intra_op_threads(2), pytest.raises(RuntimeError, match="block is open"):
            set_thread_baseline(3)
    finally:
        assert set_thread_baseline(before) == 1
    assert thread_baseline() == before and torch.get_num_threads() == before
