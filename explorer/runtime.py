"""Loaded models, shared read-only by every visitor of one app process.

One `Runtime` per process (app.py creates it and hands it to the tabs). It loads an embedded
checkpoint the first time someone asks for it (converting the GGUF release into the cache folder
first if needed) and keeps it. Nothing here belongs to a visitor: per-visitor data (a KV cache,
a generation in progress) lives in gr.State in the tab that owns it, never on these objects.
The modules are shared, so callers must not modify them (no .train(), no weight edits, no
hooks left attached).

Loaded models share a memory budget (`memory_budget` bytes; EXPLORER_MODEL_MEMORY_GB, else half
of the memory of the device the models run on): before a model loads, its weights' bytes in the
runtime's dtype are counted from its safetensors headers; a model larger than the whole budget is
refused with a message saying so, and to make room the least recently used models are unloaded
(dropped here and their decode loops forgotten, so their memory goes once the runs still using
them end). Any visitor may pick any listed model; none of them can make the process hold them all.

A load that fails is remembered for `retry_after_s` (its message, not the model): a conversion
that fails after 20-60 s would otherwise be retried by every visitor who waits for it, one after
the other. Until the interval passes, callers (those waiting on the failed load included) get
the same ModelLoadError at once. Its message carries no file-system path; the log has the path.
"""
from __future__ import annotations

import collections
import functools
import logging
import os
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

import torch

from explorer.checkpoints.errors import without_paths
from explorer.inputs import shown

log = logging.getLogger(__name__)

Progress = Callable[[float, str], None]

# How long a failed load is answered from memory before the next request tries again.
RETRY_AFTER_S = 60.0
# The loaded models' budget in GB (decimal); unset: BUDGET_SHARE of the device's memory.
MEMORY_BUDGET_ENV = "EXPLORER_MODEL_MEMORY_GB"
BUDGET_SHARE = 0.5   # the rest: activations, KV caches, every visitor's state, the OS


class UnknownModelError(ValueError):
    """A model name that is not in the embedded registry (bad input, not a bug)."""


class ModelLoadError(ValueError):
    """A model could not be prepared or loaded. The message is shown to visitors as it is:
    it says why, without file-system paths."""


@dataclass(frozen=True)
class _Failure:
    message: str
    at: float  # time.monotonic() of the failure


@dataclass(frozen=True)
class LoadedModel:
    name: str                 # registry key, e.g. "smollm2-135m-instruct"
    spec: Any                 # the registry entry (title, description, notice, ...)
    folder: Path              # converted safetensors checkpoint folder
    model: torch.nn.Module    # our in-house module, eval mode; shared: never mutate
    tokenizer: Any            # transformers tokenizer loaded from `folder`
    config: Any               # models.config.ModelConfig
    device: torch.device
    dtype: torch.dtype
    load_seconds: float       # wall time of the first get(): conversion (if any) + loading


def _no_progress(fraction: float, message: str) -> None:
    pass


class Runtime:
    """Lazily loaded embedded models. Thread-safe: one lock per model name, so two visitors
    asking for the same model wait for one load, and different models load independently."""

    def __init__(
        self,
        device: torch.device | str | None = None,
        dtype: torch.dtype | None = None,
        *,
        registry: Mapping[str, Any] | None = None,
        prepare: Callable[..., Path] | None = None,
        load_model: Callable[..., torch.nn.Module] | None = None,
        load_tokenizer: Callable[[Path], Any] | None = None,
        retry_after_s: float = RETRY_AFTER_S,
        memory_budget: int | None = None,
        weights_bytes: Callable[[Path, torch.dtype], int] | None = None,
    ):
        # The defaults are imported here, not at module import, so tests can inject small fakes
        # and importing explorer.runtime stays cheap.
        if registry is None or prepare is None:
            from explorer import checkpoints
            # the embedded checkpoints, then those the operator lists in EXPLORER_EXTRA_MODELS
            registry = checkpoints.model_registry() if registry is None else registry
            if prepare is None:
                prepare = functools.partial(checkpoints.prepare_listed, registry=dict(registry))
        if load_model is None:
            from models.loading import load_model
        if load_tokenizer is None:
            load_tokenizer = _load_tokenizer
        if device is None or dtype is None:
            from models.device import default_device, default_dtype
            device = default_device() if device is None else device
            dtype = default_dtype(torch.device(device)) if dtype is None else dtype
        self.device = torch.device(device)
        self.dtype = dtype
        self._registry = dict(registry)
        self._prepare = prepare
        self._load_model = load_model
        self._load_tokenizer = load_tokenizer
        self._locks = {name: threading.Lock() for name in self._registry}
        self._loaded: dict[str, LoadedModel] = {}
        self.memory_budget = default_budget(self.device) if memory_budget is None else int(memory_budget)
        self._weights_bytes = weights_bytes or folder_weights_bytes
        self._budget_lock = threading.Lock()
        # loaded models' bytes, least recently used first; bytes held for loads under way
        self._used: collections.OrderedDict[str, int] = collections.OrderedDict()
        self._reserved: dict[str, int] = {}
        self.retry_after_s = retry_after_s
        self._failed: dict[str, _Failure] = {}  # the latest failed load per name, until retried
        # Latest progress of a load under way, per name, so that callers waiting for it see it.
        self._progress: dict[str, tuple[float, str]] = {}

    # ----- registry -------------------------------------------------------------------------
    def names(self) -> list[str]:
        """Model names in registry order: the embedded ones (the first is the default), then
        any from EXPLORER_EXTRA_MODELS."""
        return list(self._registry)

    @property
    def default_name(self) -> str:
        """The entry marked `default` in the registry, else the first one."""
        for name, spec in self._registry.items():
            if getattr(spec, "default", False):
                return name
        return self.names()[0]

    def spec(self, name: str) -> Any:
        return self._registry[self.check_name(name)]

    def check_name(self, name: Any) -> str:
        if not isinstance(name, str) or name not in self._registry:
            known = ", ".join(self._registry)
            # at most 40 characters of what was sent: an API client's 2 MB id is not echoed
            raise UnknownModelError(f"Unknown model {shown(name)}. Available models: {known}.")
        return name

    def is_loaded(self, name: str) -> bool:
        return name in self._loaded

    def loaded_bytes(self) -> dict[str, int]:
        """Bytes of each loaded model's parameters and buffers, least recently used first."""
        with self._budget_lock:
            return dict(self._used)

    @property
    def device_label(self) -> str:
        """e.g. "CPU, 2 threads (float32), decode weights int8 (AVX512_VNNI)", "NVIDIA H200
        (bfloat16)": on the CPU, the precision the decode steps read (EXPLORER_WEIGHTS, else
        fp32) and the product path this CPU takes for it (engine.quantized)."""
        return self.device_label_of(None)

    def device_label_of(self, loaded: Optional[LoadedModel]) -> str:
        """device_label for one loaded model: its decode steps' precision (the operator's, else
        the one measured for its checkpoint, engine.quantized.configured_weights)."""
        from models.device import describe

        label = describe(self.device, self.dtype)
        if torch.device(self.device).type == "cpu":
            label += f", decode weights {decode_weights_label(loaded.model if loaded else None)}"
        return label

    # ----- loading --------------------------------------------------------------------------
    def get(self, name: str, progress: Progress | None = None, *, evict: bool = True) -> LoadedModel:
        """The loaded model `name`, loading (and converting, the first time) if needed.
        `progress(fraction, message)` hears about slow steps, also while this call waits for a
        load that another thread started; it is not called when the model is already loaded.
        ModelLoadError (path-free message) when the load fails, or failed less than
        `retry_after_s` ago, or the model does not fit the memory budget (evict=False: beside
        the models loaded now; else once the least recently used ones are unloaded)."""
        name = self.check_name(name)
        loaded = self._loaded.get(name)
        if loaded is not None:
            self._touch(name)
            return loaded
        self._raise_recent_failure(name)
        if progress is None:  # not `or`: a gr.Progress with nothing tracked yet is falsy
            progress = _no_progress
        lock = self._locks[name]
        # Wait for a load in progress elsewhere, relaying its latest progress to this caller.
        while not lock.acquire(timeout=0.5):
            fraction, message = self._progress.get(name, (0.0, f"Waiting for {name}"))
            progress(fraction, message)
        try:
            loaded = self._loaded.get(name)  # someone else may have loaded it while we waited
            if loaded is not None:
                self._touch(name)
                return loaded
            self._raise_recent_failure(name)  # ... or failed to, while we waited
            try:
                return self._load(name, progress, evict)
            except ModelLoadError:   # over the budget: said plainly, not remembered as a failure
                raise
            except Exception as error:
                message = _visitor_message(error)
                log.error("loading %s failed: %s", name, error, exc_info=error)
                self._failed[name] = _Failure(message, time.monotonic())
                raise ModelLoadError(message) from None
        finally:
            self._progress.pop(name, None)
            lock.release()

    def preload(self, progress: Progress | None = None) -> list[str]:
        """Load every model of the registry now, in registry order; the names that loaded.
        For a host where models cannot be loaded on demand later (a ZeroGPU Space runs each
        forward in a forked process: a model loaded there is lost when the call ends). A model
        that fails is logged and skipped: a visitor asking for it gets the same error as
        before, and the other models still serve."""
        loaded = []
        names = self.names()
        for i, name in enumerate(names):
            def scaled(fraction: float, message: str, i: int = i) -> None:
                if progress is not None:
                    progress((i + max(0.0, min(1.0, float(fraction)))) / len(names), message)
            try:   # never unloading one preloaded before: those that do not fit are skipped
                self.get(name, progress=scaled, evict=False)
            except ModelLoadError as error:
                log.error("preload: %s is not loaded: %s", name, error)
                continue
            loaded.append(name)
        return loaded

    def _raise_recent_failure(self, name: str) -> None:
        failure = self._failed.get(name)
        if failure is None:
            return
        if time.monotonic() - failure.at < self.retry_after_s:
            raise ModelLoadError(failure.message)
        self._failed.pop(name, None)  # time to try again

    # ----- the memory budget ------------------------------------------------------------------
    def _touch(self, name: str) -> None:
        with self._budget_lock:
            if name in self._used:
                self._used.move_to_end(name)

    def _make_room(self, name: str, need: int, evict: bool) -> None:
        """Hold `need` bytes of the budget for `name`, unloading the least recently used models
        first (evict=True); ModelLoadError when they cannot be found."""
        gb = 1e9
        if need > self.memory_budget:
            raise ModelLoadError(
                f"{name} needs {need / gb:.1f} GB for its weights in {str(self.dtype).replace('torch.', '')}, "
                f"more than the {self.memory_budget / gb:.1f} GB this server keeps for loaded "
                f"models ({MEMORY_BUDGET_ENV}); pick a smaller model")
        with self._budget_lock:
            def in_use() -> int:
                return sum(self._used.values()) + sum(self._reserved.values())
            while evict and in_use() + need > self.memory_budget and self._used:
                self._unload_locked(next(iter(self._used)))
            if in_use() + need > self.memory_budget:
                raise ModelLoadError(
                    f"{name} ({need / gb:.1f} GB) does not fit beside the models "
                    f"{'being loaded' if evict else 'loaded'} now ({in_use() / gb:.1f} GB of "
                    f"{self.memory_budget / gb:.1f} GB); try again in a minute")
            self._reserved[name] = need

    def _estimate(self, name: str, folder: Path) -> int:
        """Bytes `name` will take, from its folder; 0 when the headers cannot be read (the
        loader then says what is wrong with the folder; a model that loads is counted after)."""
        try:
            return int(self._weights_bytes(folder, self.dtype))
        except Exception as error:
            log.warning("could not count the weights of %s before loading: %s", name, error)
            return 0

    def unload(self, name: str) -> bool:
        """Drop the loaded model `name` (True if it was loaded); see _unload_locked."""
        with self._budget_lock:
            if name not in self._used:
                return False
            self._unload_locked(name)
            return True

    def _unload_locked(self, name: str) -> None:
        """Forget `name` and its decode loops: its memory goes once no run holds it. A visitor
        asking for it again loads it again."""
        self._used.pop(name, None)
        loaded = self._loaded.pop(name, None)
        if loaded is None:
            return
        log.info("unloading %s (least recently used) to keep within the memory budget", name)
        from explorer.serving import registry
        registry.forget(loaded.model)

    def _load(self, name: str, caller_progress: Progress, evict: bool = True) -> LoadedModel:
        start = time.perf_counter()

        def progress(fraction: float, message: str) -> None:
            self._progress[name] = (fraction, message)
            caller_progress(fraction, message)

        def prepare_progress(fraction: float, message: str) -> None:
            progress(0.8 * max(0.0, min(1.0, float(fraction))), message)

        progress(0.0, f"Preparing {name}")
        folder = Path(self._prepare(name, progress=prepare_progress))
        self._make_room(name, self._estimate(name, folder), evict)
        try:
            progress(0.8, f"Loading {name} onto {self.device_label}")
            try:
                model = self._load_model(folder, device=self.device, dtype=self.dtype)
            except Exception:
                log.error("could not load %s from %s", name, folder)
                raise
            model.eval()
            # the precision its CPU decode steps read unless the operator chose one
            model.decode_weights = getattr(self._registry[name], "decode_weights", "fp32")
            progress(0.95, f"Loading the tokenizer of {name}")
            tokenizer = self._load_tokenizer(folder)
            loaded = LoadedModel(
                name=name, spec=self._registry[name], folder=folder, model=model,
                tokenizer=tokenizer, config=model.config, device=self.device, dtype=self.dtype,
                load_seconds=time.perf_counter() - start,
            )
            with self._budget_lock:
                self._used[name] = module_bytes(model)
                self._loaded[name] = loaded
        finally:
            with self._budget_lock:
                self._reserved.pop(name, None)
        progress(1.0, f"{name} ready")
        return loaded


def default_budget(device: torch.device) -> int:
    """Bytes the loaded models may take: EXPLORER_MODEL_MEMORY_GB, else BUDGET_SHARE of the
    GPU's memory (a CUDA device whose size torch can read) or of the machine's RAM."""
    configured = os.environ.get(MEMORY_BUDGET_ENV, "").strip()
    if configured:
        return int(float(configured) * 1e9)
    total = None
    if device.type == "cuda":
        try:
            total = torch.cuda.get_device_properties(device).total_memory
        except Exception as error:   # e.g. a ZeroGPU Space's main process, before any GPU call
            log.warning("no memory size for %s (%s): the budget is a share of the RAM", device, error)
    if total is None:
        import psutil
        total = psutil.virtual_memory().total
    return int(BUDGET_SHARE * total)


def folder_weights_bytes(folder: Path, dtype: torch.dtype) -> int:
    """Bytes of every tensor of a checkpoint folder's safetensors files once loaded in `dtype`,
    from their headers (no weight is read)."""
    from models.safetensors_files import safetensors_header, weight_files

    element = torch.empty((), dtype=dtype).element_size()
    count = 0
    for path in weight_files(folder):
        for key, entry in safetensors_header(path).items():
            if key != "__metadata__":
                count += functools.reduce(lambda a, b: a * b, entry["shape"], 1)
    return count * element


def module_bytes(model: torch.nn.Module) -> int:
    """Bytes of a module's parameters and buffers (a tied tensor counted once)."""
    tensors = {t.data_ptr(): t for t in (*model.parameters(), *model.buffers())}
    return sum(t.numel() * t.element_size() for t in tensors.values())


def _visitor_message(error: Exception) -> str:
    """What a visitor is told about a failed load: the error's own words for the errors that
    explain themselves (ValueError: CheckpointError, CheckpointLoadError, an unsupported
    architecture), the error's kind and words otherwise (an OSError such as a full disk);
    every file-system path cut to its last component."""
    text = str(error) if isinstance(error, ValueError) else f"{type(error).__name__}: {error}"
    return without_paths(text)


def _load_tokenizer(folder: Path) -> Any:
    from explorer.checkpoints.conversion import TRANSFORMERS_LOCK

    # one at a time, and never beside a GGUF conversion: transformers' lazy imports race
    with TRANSFORMERS_LOCK:
        from transformers import AutoTokenizer

        # Never trust_remote_code: the folder is ours, written by explorer.checkpoints.
        return AutoTokenizer.from_pretrained(str(folder), trust_remote_code=False)


def decode_weights_label(model=None) -> str:
    """The decode steps' weight precision (of `model`, else the operator's or fp32) and its
    product path, e.g. "int8 (AVX512_VNNI)"; fp32 when the kernel cannot be built here (the
    steps then stay in the engine's fp32)."""
    from engine import quantized

    weights = quantized.configured_weights(model)
    try:
        return quantized.path_label(weights)
    except (RuntimeError, OSError):   # no compiler: no fused or quantized step on this machine
        return "fp32"
