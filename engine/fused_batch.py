"""The fused decode step for several runs at once: one C++ call feeds each of B runs its next token.

Why it exists. The fused step (engine.fused) decodes one run in one call. Two or more
runs decoding together took the pooled forward instead (engine.batched): every weight
read once for all of them, but through ~1,000 Python-dispatched operations per step, which on
this 2-core CPU cost more than the weights' read at small batches (SmolLM2 gguf, one thread:
~23 ms a step for two runs against ~8 ms for one run alone, so two runs together made fewer
tokens per second than one). `fused_decode_batch` (engine/kernels/fused_decode.cpp) is the
fused step with every product taken for all B inputs while its rows are in cache (qproduct's
several inputs per pass over a tile; fp32 rows a few at a time for every input) and every
per-run part (norms, RoPE, the K/V write, attention) done run by run, in one parallel region.

Each run keeps everything of its own, as in the solo step:
- its cache where it is: its own buffers, or its row of the pooled store (engine.pool;
  the kernel takes each layer's head stride, so nothing is copied in or out);
- its slots and positions from its KVCache (KVCache.append records them before the
  kernel writes its K/V rows), its RoPE rows at its own position with its own options' bases,
  its sink logits, and its layers' masks: each layer's MaskSpec evaluated here in Python over
  the run's slot positions (models.attention, the one place a mask kind is defined) and
  handed to the kernel as 0 / -inf per slot, as the solo step does;
- its telemetry: `scores` (n_heads x the slots its query saw, summed over the layers, as the
  solo step counts them), its cache bytes, its logits.
The products sum each run's rows in the same order as the solo step (quantized tiles: each
input's chains are independent of how many share the pass; fp32: matvec_rows over the same
groups of rows), so a run's logits are those it gets decoded alone on the fused step.

Measured (bench/fused_batch.py: one intra-op thread, rounds interleaving the sizes, best of
each; a shared 2-core machine under other load, so ratios rather than times): SmolLM2 gguf,
solo step 18.7 ms; B = 2, 4, 8, 16, 32: pooled 66, 81, 102, 142, 201 ms, fused batched 20,
35, 52, 101, 168 ms (3.3x, 2.3x, 2.0x, 1.4x, 1.2x faster; 1.8x, 2.1x, 2.9x, 2.9x, 3.6x the solo
step's tokens/s). On a quieter moment: solo 9.9 ms, B = 2 12.6 ms, B = 4 18.0 ms. Past a few
runs the step is bound by the products' arithmetic (gguf's two VNNI sums per weight and input),
not the weights' read, which is why the pooled step, on the same products, closes in.

    batch = FusedBatch()
    logits = batch.step(tokens, runs, decoders)   # (B, 1, V); decoders[i]: run i's FusedDecoder
"""
from __future__ import annotations

import ctypes
import weakref
from typing import Sequence

import torch

from models.forward import rope_kind
from models.kv_cache import KVCache
from models.layers import rope_cos_sin, signed_sin
from .fused import FusedDecoder
from .fused_kernel import _ptr, library as _library

KINDS = ("full", "sliding")   # FusedRunLayer.rope_kind: the index of the layer's RoPE table
_P = ctypes.POINTER(ctypes.c_float)
_I = ctypes.POINTER(ctypes.c_int64)


class _RunLayer(ctypes.Structure):
    """struct FusedRunLayer of fused_decode.cpp, field for field."""
    _fields_ = [("k_cache", _P), ("v_cache", _P), ("slot_pos", _I),
                ("head_stride", ctypes.c_int64), ("capacity", ctypes.c_int64), ("mask", _P),
                ("rope_kind", ctypes.c_int64)]


_RUNS = ctypes.POINTER(_RunLayer)


def _setup(lib) -> None:
    if getattr(lib, "_batch_ready", False):
        return
    lib.fused_decode_batch.argtypes = [ctypes.c_void_p, ctypes.c_int64] + [ctypes.c_void_p] * 8
    lib.fused_decode_batch.restype = ctypes.c_int
    lib._batch_ready = True


_ZERO, _NEG_INF = torch.zeros(()), torch.tensor(float("-inf"))   # a visible slot adds 0, a hidden -inf


class _Binding:
    """A run's layers as the kernel reads them (no copy: pointers into the cache's buffers,
    which may be a row of the pooled store), and its masks: one additive mask (capacity,) per
    group of layers whose slots hold the same positions (same MaskSpec, same capacity), filled
    before each step from the layer's MaskSpec over its slot positions, as the solo step does."""

    def __init__(self, key: tuple, layers, groups: list):
        self.key, self.layers = key, layers
        # each group's predicate built once: MaskSpec.predicate makes its closures at every
        # call, and this runs for every run at every step (27 -> 8 us a group on this CPU)
        self.groups = [(layer.mask.predicate(), layer, additive) for layer, additive in groups]

    def fill_masks(self, position: torch.Tensor) -> None:
        """Each group's mask for the query at `position` (1,), its slots already recording it:
        the layer's MaskSpec predicate over (that query, every slot's position), as
        MaskSpec.visible evaluates it for one query."""
        for visible_at, layer, additive in self.groups:
            torch.where(visible_at(position, layer.slot_pos), _ZERO, _NEG_INF, out=additive)  # (C,)


def _bind(cache: KVCache, config) -> tuple:
    """(the kernel's layers of this run, [(a LayerKV, its group's mask buffer)])."""
    layers = (_RunLayer * len(cache.layers))()
    groups: dict = {}
    for i, (layer, R) in enumerate(zip(cache.layers, layers)):
        k, v, slot_pos = layer.k, layer.v, layer.slot_pos
        d = config.head_dim
        if (k.device.type != "cpu" or k.dtype != torch.float32 or k.shape[0] != 1
                or k.stride()[2:] != (d, 1) or v.stride() != k.stride() or v.shape != k.shape
                or slot_pos.dtype != torch.int64 or not slot_pos.is_contiguous()):
            raise ValueError("the fused batched step needs float32 CPU caches of batch 1 whose "
                             "slots of each head are contiguous")
        R.k_cache, R.v_cache = _ptr(k), _ptr(v)
        R.slot_pos = _ptr(slot_pos, _I)
        R.head_stride, R.capacity = k.stride(1), layer.capacity
        group = (layer.mask, layer.window, layer.sinks, layer.capacity)
        if group not in groups:
            groups[group] = (layer, torch.empty(layer.capacity))
        R.mask = _ptr(groups[group][1])
        R.rope_kind = KINDS.index(rope_kind(config, i))
    return layers, list(groups.values())


def _key(cache: KVCache) -> tuple:
    """What changes when a cache's buffers move (LayerKV.move_to moves every layer together)."""
    first, last = cache.layers[0], cache.layers[-1]
    return (first.k.data_ptr(), first.k.stride(1), last.k.data_ptr(), last.v.data_ptr(),
            last.slot_pos.data_ptr())


class FusedBatch:
    """Decode steps of several runs of one model through fused_decode_batch (see the module
    doc). Holds, per cache, the kernel's view of its buffers (made again when they move:
    `forget`, or found moved at the next step)."""

    def __init__(self):
        self.lib = _library()
        _setup(self.lib)
        self._bound: "weakref.WeakKeyDictionary[KVCache, tuple]" = weakref.WeakKeyDictionary()

    def forget(self, cache: KVCache) -> None:
        """The cache's buffers moved (or are about to be freed): bind again before its next step."""
        self._bound.pop(cache, None)

    def _binding(self, cache: KVCache, config) -> _Binding:
        key = _key(cache)
        held = self._bound.get(cache)
        if held is None or held.key != key:
            held = _Binding(key, *_bind(cache, config))
            self._bound[cache] = held
        return held

    def step(self, tokens: Sequence[int], caches: Sequence[KVCache],
             decoders: Sequence[FusedDecoder]) -> tuple:
        """Feed tokens[i] to caches[i] at its own position, decoded with decoders[i]'s options
        (the fused decoders of one model, in one weight precision). Returns the logits (B, 1, V)
        and each run's query-key scores; every cache advances by one."""
        b = len(caches)
        if not b or len(tokens) != b or len(decoders) != b:
            raise ValueError(f"{len(tokens)} tokens, {b} caches, {len(decoders)} decoders")
        if len({id(c) for c in caches}) != b:
            raise ValueError("each run of a batch needs its own cache")
        first = decoders[0]
        model = first.model
        config = model.config
        if any(dec.model is not model or dec.weights != first.weights or dec.portable != first.portable
               for dec in decoders):
            raise ValueError("the runs of a fused batch decode one model in one precision")
        vocab = config.vocab_size
        for token in tokens:
            if not 0 <= int(token) < vocab:
                raise ValueError(f"token id {token} is outside the vocabulary (0..{vocab - 1})")
        n_layers = config.n_layers
        for cache in caches:
            if len(cache.layers) != n_layers:
                raise ValueError("this cache belongs to another model")
        bindings = [self._binding(c, config) for c in caches]
        runs = (_RUNS * b)(*(ctypes.cast(binding.layers, _RUNS) for binding in bindings))
        sinks = (_P * b)(*(_ptr(dec._sinks) for dec in decoders))
        logits = torch.empty(b, vocab)
        visible = torch.zeros(b, dtype=torch.int64)
        token_ids = torch.tensor([int(t) for t in tokens], dtype=torch.int64)

        def write(positions: list, slots: list) -> None:
            # every run's slots already record its new position (KVCache.append): the
            # kernel's masks see the keys it is about to write, as the engine's attention does
            pos = torch.tensor(positions, dtype=torch.int64)
            rope = torch.empty(len(KINDS), b, 2, config.head_dim)
            for k, kind in enumerate(KINDS):
                # each run's bases (its options'): runs sharing them in one call, rows computed
                # as rope_cos_sin computes them for the run alone
                by_bases: dict = {}
                for i, dec in enumerate(decoders):
                    by_bases.setdefault(id(dec._inv_freq[kind]), (dec._inv_freq[kind], []))[1].append(i)
                for inv, rows in by_bases.values():
                    cos, sin = rope_cos_sin(pos[rows], inv, torch.float32)                # (n, D)
                    if len(rows) == b:
                        rope[k, :, 0], rope[k, :, 1] = cos, signed_sin(sin)
                    else:
                        rope[k, rows, 0], rope[k, rows, 1] = cos, signed_sin(sin)
            for i, binding in enumerate(bindings):
                binding.fill_masks(pos[i:i + 1])
            slot_table = torch.tensor(slots, dtype=torch.int64)                           # (B, L)
            first._model.n_threads = torch.get_num_threads()
            status = self.lib.fused_decode_batch(
                ctypes.byref(first._model), b, token_ids.data_ptr(), pos.data_ptr(),
                slot_table.data_ptr(), runs, sinks, rope.data_ptr(), logits.data_ptr(), visible.data_ptr())
            if status != 0:
                raise RuntimeError("the fused batched kernel refused its arguments")   # checked above

        KVCache.append(list(caches), write)
        scores = [config.n_heads * int(n) for n in visible.tolist()]
        return logits.view(b, 1, vocab), scores
