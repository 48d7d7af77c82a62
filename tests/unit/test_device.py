"""models.device: device/dtype choice and the CPU allocator setting the entry points apply."""
from __future__ import annotations

import sys
import textwrap

import pytest
import torch

from models.device import DTYPES, default_dtype, tune_cpu_allocator
from tests.helpers import python_output

# In a fresh interpreter: malloc, touch and free a 20 MB block and print how far the heap's
# end (sbrk(0)) moved after the malloc and after the free. glibc by default serves a first
# block that large with its own mmap and unmaps it on free (its thresholds adapt upwards from
# 128 KB); tuned, it comes from the heap and stays there for the next allocation to reuse.
PROBE = textwrap.dedent("""
    import ctypes, sys
    from models.device import tune_cpu_allocator
    libc = ctypes.CDLL("libc.so.6")
    libc.sbrk.restype, libc.sbrk.argtypes = ctypes.c_void_p, [ctypes.c_ssize_t]
    libc.malloc.restype, libc.malloc.argtypes = ctypes.c_void_p, [ctypes.c_size_t]
    libc.free.argtypes = [ctypes.c_void_p]
    if sys.argv[1] == "tuned":
        assert tune_cpu_allocator()
    start = libc.sbrk(0)
    block = libc.malloc(20 << 20)
    ctypes.memset(block, 1, 20 << 20)
    after_malloc = libc.sbrk(0)
    libc.free(block)
    print(after_malloc - start, libc.sbrk(0) - start)
""")


def heap_growth(mode: str) -> list[int]:
    return [int(x) for x in python_output(PROBE, mode).split()]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc mallopt")
def test_tuned_allocator_keeps_freed_blocks_for_reuse():
    """What tune_cpu_allocator changes: a 20 MB block (a prefill activation's size) comes from
    the heap and stays mapped after free, instead of a fresh mmap each time whose pages the
    kernel must fault in and zero again."""
    default, tuned = heap_growth("default"), heap_growth("tuned")
    block = 20 << 20
    assert default[0] < block and default[1] < block, default   # mmapped, then unmapped
    assert tuned[0] >= block, tuned                              # from the heap
    assert tuned[1] >= block, tuned                              # and kept after free


def test_tune_is_repeatable():
    assert tune_cpu_allocator() is True
    assert tune_cpu_allocator() is True


def test_default_dtype_follows_device(monkeypatch):
    monkeypatch.delenv("EXPLORER_DTYPE", raising=False)
    assert default_dtype(torch.device("cpu")) == torch.float32
    assert default_dtype(torch.device("cuda")) == torch.bfloat16
    monkeypatch.setenv("EXPLORER_DTYPE", "bf16")
    assert default_dtype(torch.device("cpu")) == DTYPES["bf16"]
    monkeypatch.setenv("EXPLORER_DTYPE", "int3")
    with pytest.raises(ValueError, match="EXPLORER_DTYPE"):
        default_dtype(torch.device("cpu"))
