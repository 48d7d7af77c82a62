"""Where and in what precision models run: CUDA with bf16 when available, else CPU with fp32
(this CPU has no fast bf16 matmul, so fp32 is its fastest path). EXPLORER_DEVICE and
EXPLORER_DTYPE override."""
from __future__ import annotations

import os

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
