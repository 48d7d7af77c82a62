"""Checkpoint folder (Hugging Face layout, safetensors only) -> our modules, through each
family's explicit key map. A tensor the map does not name, or a name the map expects but the
checkpoint lacks, or a shape mismatch, raises before any model is returned."""
from __future__ import annotations

from pathlib import Path
from typing import Optional

import torch
from safetensors import safe_open

from . import explorer_moe, gemma3, gpt_oss, llama, mixtral, olmoe, qwen2_moe
from .code_format import CODE_BLOCK, CODE_SUFFIXES, CODES_FILE
from .config import ModelConfig, config_from_hf
from .device import default_device, default_dtype
from .forward import CausalLM
# The one check of a folder's files (pickle refused, safetensors headers against file sizes).
from .safetensors_files import CheckpointLoadError, check_folder, read_config_json

FAMILIES = {"llama": (llama.LlamaForCausalLM, llama.key_map),
            "gemma3": (gemma3.Gemma3ForCausalLM, gemma3.key_map),
            "mixtral": (mixtral.MixtralForCausalLM, mixtral.key_map),
            "qwen2_moe": (qwen2_moe.Qwen2MoeForCausalLM, qwen2_moe.key_map),
            "olmoe": (olmoe.OlmoeForCausalLM, olmoe.key_map),
            "gpt_oss": (gpt_oss.GptOssForCausalLM, gpt_oss.key_map),
            "explorer_moe": (explorer_moe.ExplorerMoEForCausalLM, explorer_moe.key_map)}
# Tensors some exporters write that carry no weights of the model.
IGNORED_SUFFIXES = ("rotary_emb.inv_freq",)


def config_of(hf: dict) -> ModelConfig:
    """config.json -> ModelConfig: the project's own MoE models (explorer/moe/checkpoints)
    through their family's mapping, every other architecture through config_from_hf."""
    if explorer_moe.ARCHITECTURE in (hf.get("architectures") or []):
        return explorer_moe.config_from_hf(hf)
    return config_from_hf(hf)


def read_config(folder: Path) -> ModelConfig:
    return config_of(read_config_json(folder))


def read_tensors(files: list[Path]) -> dict[str, torch.Tensor]:
    tensors = {}
    for path in files:
        try:
            with safe_open(str(path), framework="pt") as f:  # memory-mapped
                for name in f.keys():
                    tensors[name] = f.get_tensor(name)
        except Exception as e:  # safetensors raises its own error types for truncation/corruption
            raise CheckpointLoadError(f"{path.name}: unreadable or truncated safetensors file ({e})") from None
    return tensors


# A key map's value, for one of our parameters, is one of:
#   ["a", "b"]                    the checkpoint tensors concatenated on dim 0 (q, k, v -> wqkv)
#   [["e0.gate", "e0.up"], ...]   per expert: each inner list concatenated on dim 0, the results
#                                 stacked on a new dim 0 (per-expert tensors -> our (E, ...) one)
#   an object with names() and build(tensors)   one whose layout needs converting (gpt-oss's
#                                 fused, transposed experts: models.gpt_oss.Converted)
def source_names(sources) -> list[str]:
    """The checkpoint tensor names one key-map value reads."""
    if hasattr(sources, "build"):
        return list(sources.names())
    return [n for s in sources for n in ([s] if isinstance(s, str) else s)]


def source_value(sources, tensors: dict[str, torch.Tensor]) -> torch.Tensor:
    """The tensor one key-map value makes from the checkpoint's tensors."""
    if hasattr(sources, "build"):
        return sources.build(tensors)
    if not isinstance(sources[0], str):
        return torch.stack([source_value(group, tensors) for group in sources])
    parts = [tensors[s] for s in sources]
    return parts[0] if len(parts) == 1 else torch.cat(parts, dim=0)


def build_state_dict(model: CausalLM, tensors: dict[str, torch.Tensor], key_map: dict) -> dict:
    expected = {name: p.shape for name, p in model.named_parameters()}
    if set(key_map) != set(expected):
        raise CheckpointLoadError(f"key map and model disagree: {sorted(set(key_map) ^ set(expected))[:5]}")
    used, state = set(), {}
    for ours, sources in key_map.items():
        names = source_names(sources)
        missing = [s for s in names if s not in tensors]
        if missing:
            raise CheckpointLoadError(f"checkpoint lacks tensor {missing[0]!r} (needed for {ours})")
        try:
            value = source_value(sources, tensors)
        except RuntimeError as e:  # per-expert or concatenated parts of unequal shapes
            raise CheckpointLoadError(f"tensor {names[0]!r} and its companions do not combine into {ours}: {e}") from None
        if value.shape != expected[ours]:
            raise CheckpointLoadError(
                f"tensor {names[0]!r}: shape {tuple(value.shape)} does not fit {ours} {tuple(expected[ours])}")
        state[ours] = value
        used.update(names)
    unmapped = [n for n in tensors if n not in used and not n.endswith(IGNORED_SUFFIXES)]
    if unmapped:
        # A tied lm_head saved anyway is the same matrix as the embedding: accept only that.
        if unmapped == ["lm_head.weight"] and model.config.tie_embeddings and \
                torch.equal(tensors["lm_head.weight"], tensors["model.embed_tokens.weight"]):
            unmapped = []
    if unmapped:
        raise CheckpointLoadError(f"checkpoint has tensors our {model.config.family} modules do not "
                                  f"map: {unmapped[:5]}{' ...' if len(unmapped) > 5 else ''}")
    return state


def own_memory(model: CausalLM, mapped: dict[str, torch.Tensor]) -> None:
    """Copy every parameter and buffer that is still a view of the checkpoint's memory map
    into memory of its own, so that the map is closed once `mapped` is dropped. Views would
    keep the whole file mapped for the model's lifetime: pages of the tensors only read to
    build fused copies (q/k/v, gate/up; SmolLM2: 279 MB) stay counted in the process, and
    releasing them does not last, since a kernel with large page-cache folios maps a whole
    folio, neighbours included, on the next forward's touch of a used tensor; a file changed
    on disk under a live map can also kill the server (SIGBUS). The copies hold the model's
    bytes once. Tensors that share memory (a tied embedding) keep sharing one copy."""
    in_file = {t.data_ptr() for t in mapped.values()}
    copies: dict[int, torch.Tensor] = {}
    for tensor in [*model.parameters(), *model.buffers()]:
        ptr = tensor.data_ptr()
        if ptr in in_file:
            if ptr not in copies:
                copies[ptr] = tensor.data.clone()
            tensor.data = copies[ptr]


def model_from_config(config: ModelConfig) -> CausalLM:
    cls, _ = FAMILIES[config.family]
    return cls(config)


def load_state(model: CausalLM, tensors: dict[str, torch.Tensor]) -> None:
    _, key_map = FAMILIES[model.config.family]
    state = build_state_dict(model, tensors, key_map(model.config))
    model.load_state_dict(state, strict=True, assign=True)


def read_codes(model: CausalLM) -> dict:
    """{Linear (the model itself for its LM head): (codes uint8, scales, offsets)} of every
    matrix (models/code_format.py), from the codes file of the folder the model was loaded
    from, concatenated as the weights are (the key map). ValueError where the folder holds
    none, or where a matrix's codes do not give back its weights (to 1e-6 of its largest
    element: the fp32 checkpoint is these codes dequantized, so they agree to rounding)."""
    from .layers import Linear

    path = getattr(model, "codes_file", None)
    if path is None or not Path(path).is_file():
        raise ValueError("this checkpoint holds no GGUF codes "
                         "(a converted embedded checkpoint has them)")
    _, key_map = FAMILIES[model.config.family]
    keys = key_map(model.config)
    names = {module: name for name, module in model.named_modules()}
    wanted = [(m, keys[names[m] + ".weight"], m.weight) for m in model.modules() if isinstance(m, Linear)]
    head = "embed.weight" if model.config.tie_embeddings else "lm_head.weight"
    wanted.append((model, keys[head], model.lm_head_weight()))
    found = {}
    with safe_open(str(path), framework="pt") as f:
        present = set(f.keys())
        for module, sources, weight in wanted:
            parts = source_names(sources)
            missing = [p + s for p in parts for s in CODE_SUFFIXES if p + s not in present]
            if missing:
                raise ValueError(f"the GGUF codes lack {missing[0]}")
            codes, scales, offsets = (torch.cat([f.get_tensor(p + s) for p in parts])
                                      for s in CODE_SUFFIXES)
            _check_codes(codes, scales, offsets, weight.detach(), parts[0])
            found[module] = (codes, scales, offsets)
    return found


def _check_codes(codes, scales, offsets, weight: torch.Tensor, name: str) -> None:
    rows, cols = weight.shape
    if (codes.shape != (rows, cols) or scales.shape != (rows, cols // CODE_BLOCK)
            or offsets.shape != scales.shape):
        raise ValueError(f"the GGUF codes of {name} have the shape {tuple(codes.shape)}, not {rows, cols}")
    bound = 1e-6 * float(weight.abs().max())
    for r0 in range(0, rows, 8192):   # in row chunks: the LM head's 262k rows at once would be 0.7 GB
        c = codes[r0:r0 + 8192].to(torch.float32).sub_(128).reshape(-1, cols // CODE_BLOCK, CODE_BLOCK)
        w = (c * scales[r0:r0 + 8192, :, None] + offsets[r0:r0 + 8192, :, None]).reshape(-1, cols)
        if float((w - weight[r0:r0 + 8192].to(torch.float32)).abs().max()) > bound:
            raise ValueError(f"the GGUF codes of {name} do not give back its weights")


def load_model(folder, device: Optional[torch.device] = None,
               dtype: Optional[torch.dtype] = None) -> CausalLM:
    """Load a checkpoint folder (config.json + *.safetensors) into our modules, in eval mode.
    Where the folder keeps GGUF codes (CODES_FILE), the model notes the file (`codes_file`)."""
    hf_config, files = check_folder(folder)
    config = config_of(hf_config)
    device = torch.device(device) if device is not None else default_device()
    dtype = dtype or default_dtype(device)
    tensors = read_tensors(files)
    with torch.device("meta"):
        model = model_from_config(config)
    load_state(model, tensors)
    # to() copies only for another dtype or device; what it leaves a view of the file is
    # copied by own_memory, and the file's map closes with `tensors`.
    model = model.to(device=device, dtype=dtype)
    own_memory(model, tensors)
    del tensors
    model.eval()
    model.requires_grad_(False)
    codes = Path(folder) / CODES_FILE
    model.codes_file = codes if codes.is_file() else None
    return model
