"""Where and in what precision models run: CUDA with bf16 when available, else CPU with fp32
(this CPU has no fast bf16 matmul, so fp32 is its fastest path). EXPLORER_DEVICE and
EXPLORER_DTYPE override."""
from __future__ import annotations

import contextlib
import ctypes
import os
import sys
import threading

import torch

DTYPES = {"float32": torch.float32, "fp32": torch.float32, "bfloat16": torch.bfloat16,
          "bf16": torch.bfloat16, "float16": torch.float16, "fp16": torch.float16}


def default_device() -> torch.device:
    name = os.environ.get("EXPLORER_DEVICE")
    if name:
        return torch.device(name)
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def default_dtype(device: torch.device) -> torch.dtype:
    name = os.environ.get("EXPLORER_DTYPE")
    if name:
        if name not in DTYPES:
            raise ValueError(f"EXPLORER_DTYPE={name!r}; choose from {sorted(DTYPES)}")
        return DTYPES[name]
    return torch.bfloat16 if torch.device(device).type == "cuda" else torch.float32


def describe(device: torch.device, dtype: torch.dtype) -> str:
    device = torch.device(device)
    if device.type == "cuda":
        return f"{torch.cuda.get_device_name(device)} ({str(dtype).replace('torch.', '')})"
    return f"CPU, {torch.get_num_threads()} threads ({str(dtype).replace('torch.', '')})"


# glibc mallopt parameters (malloc.h)
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3
MMAP_THRESHOLD = 32 << 20    # glibc's upper limit for this parameter on 64-bit
TRIM_THRESHOLD = 1 << 30


def libc():
    """glibc through ctypes, or None (another libc, another OS)."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        lib = ctypes.CDLL("libc.so.6")
        lib.mallopt, lib.madvise  # noqa: B018 -- both must exist
    except (OSError, AttributeError):
        return None
    return lib


def tune_cpu_allocator() -> bool:
    """Keep freed activation memory in the process instead of returning it to the OS.

    PyTorch's CPU tensors come from plain malloc. glibc hands memory above its trim threshold
    back to the kernel (and serves blocks above its mmap threshold with fresh mmaps), both
    thresholds adapting to the largest block freed so far. A prefill frees tens of MB per
    layer (SmolLM2 at 2048 tokens: a 25 MB gate/up product, several 5-13 MB activations), so
    the next layer's allocations fault the same pages in again: ~380,000 page faults in one
    2048-token SmolLM2 prefill, ~1.5 GB zeroed by the kernel, measured at 20-30% of its time
    on a 2-core CPU (docs/BENCHMARKS.md). Fixing the thresholds (what the PyTorch CPU tuning guide
    gets from jemalloc/tcmalloc) cuts that to a few thousand. The cost: the process keeps up
    to TRIM_THRESHOLD of freed memory mapped for reuse.

    Process-wide, so entry points call it (app, CLI, benchmarks, tests), not the library on
    import. Returns False where glibc's mallopt is not available (other libcs, other OSes)."""
    lib = libc()
    if lib is None:
        return False
    mallopt = lib.mallopt
    mallopt.argtypes, mallopt.restype = (ctypes.c_int, ctypes.c_int), ctypes.c_int
    # mallopt returns 1 on success, 0 on error
    return bool(mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD)) and bool(mallopt(_M_TRIM_THRESHOLD, TRIM_THRESHOLD))


# torch keeps an intra-op thread count per OS thread, fixed at that thread's first torch call
# from a process-wide default, and torch.set_num_threads(n) sets both the calling thread's count
# and that default. A temporary change in one thread is therefore seen by every thread whose first
# torch call falls inside it (it keeps that count for good), and a thread that saved "the count
# before" during another's change restored the other's temporary value. So every change goes
# through one lock: the count outside every block (the baseline) is recorded once, each block
# leaves its thread at the count it found there (the baseline for an outermost block), which also
# puts the default back, and threads started once a change has happened set themselves to the
# baseline before their first torch call (_settle_new_thread).
_THREADS_LOCK = threading.Lock()
_threads = {"baseline": None, "holders": 0, "default": None, "hook": False}
_thread_local = threading.local()   # .counts: the count each open block of this thread found


def thread_baseline() -> int:
    """The process's intra-op thread count outside every intra_op_threads block: the calling
    thread's count when first asked (an entry point sets its count before any block opens)."""
    with _THREADS_LOCK:
        return _baseline_locked()


def set_thread_baseline(n: int) -> int:
    """Make n the process's intra-op thread count outside every block, in the calling thread and
    for every thread whose first torch call comes later (an entry point's or a test's choice);
    the previous baseline. RuntimeError while a block is open: its thread would put its own
    count back over it."""
    with _THREADS_LOCK:
        if _threads["holders"]:
            raise RuntimeError("the thread baseline cannot change while an intra_op_threads block is open")
        before = _baseline_locked()
        _threads["baseline"] = n
        _set_locked(n)
        return before


def _baseline_locked() -> int:
    if _threads["baseline"] is None:
        _threads["baseline"] = _threads["default"] = torch.get_num_threads()
    return _threads["baseline"]


def _set_locked(n: int) -> None:
    torch.set_num_threads(n)
    _threads["default"] = n


def settle_thread() -> None:
    """Put the calling thread at the baseline count (and the process default with it): what a
    thread started while a block is open must do before its first torch call, or it keeps the
    block's count for good."""
    with _THREADS_LOCK:
        baseline = _baseline_locked()
        if torch.get_num_threads() != baseline or _threads["default"] != baseline:
            _set_locked(baseline)


def _settle_new_thread(frame, event, arg) -> None:
    """threading.setprofile hook: runs once in each thread started after it is installed,
    before the thread's run(), then removes itself from that thread."""
    sys.setprofile(None)
    settle_thread()


def _install_new_thread_hook_locked() -> None:
    if _threads["hook"]:
        return
    _threads["hook"] = True
    if threading.getprofile() is None:   # another profiler's hook is left in place
        threading.setprofile(_settle_new_thread)


def _forget_in_child() -> None:
    """After a fork: the child (one thread) starts afresh. It sets its own count (a ZeroGPU
    call's child sets 1, explorer/web/zerogpu.py: OpenMP's pool does not survive a fork), so
    neither the parent's baseline nor its new-thread hook applies there, and the lock may have
    been held by a thread the child does not have."""
    global _THREADS_LOCK
    _THREADS_LOCK = threading.Lock()
    _threads.update(baseline=None, holders=0, default=None, hook=False)
    _thread_local.__dict__.pop("counts", None)
    if threading.getprofile() is _settle_new_thread:
        threading.setprofile(None)


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_in_child)


@contextlib.contextmanager
def intra_op_threads(n: int):
    """torch's intra-op threads set to n (0: unchanged) in this thread for the block, then put
    back to the count the block found (the baseline for an outermost block). Safe from several
    threads at once and nested (see above)."""
    if not n:
        yield
        return
    counts = _thread_local.__dict__.setdefault("counts", [])
    with _THREADS_LOCK:
        baseline = _baseline_locked()
        found = torch.get_num_threads() if counts else baseline
        counts.append(found)
        _threads["holders"] += 1
        if n != torch.get_num_threads():
            _install_new_thread_hook_locked()
            _set_locked(n)
    try:
        yield
    finally:
        with _THREADS_LOCK:
            counts.pop()
            _threads["holders"] -= 1
            last = _threads["holders"] == 0
            if torch.get_num_threads() != found or (last and _threads["default"] != baseline):
                _set_locked(found)
