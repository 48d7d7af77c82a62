"""A model's block read from its tensors (claim C18): a tensor inventory, {tensor name: shape},
sorted into components by the naming scheme of its architecture and read as a Block.

Where the inventory comes from:
- the loaded checkpoints: the safetensors headers of their folders (the tensors the weights
  hold, as stored), cross-checked against the parameters our modules hold;
- the original Transformer and GPT-2, which have no checkpoint here: their published configs
  (explorer/published.py) instantiated on the meta device (no memory), PyTorch's nn.Transformer layers
  for the first, transformers' GPT2LMHeadModel for the second.

From the inventory: which tensors exist (biases or none), the norms of a block and whether they
carry a bias (LayerNorm) or not (RMSNorm), their place (from the tensor's name in that
architecture's naming, NORM_PLACES), query and KV heads (from the projections' shapes), a
gate projection (gated MLP), position embeddings (a tensor) or none (sinusoidal or RoPE, from
the config), an encoder and cross-attention, tied embeddings (no separate output matrix), and
the parameters of each component, summed from the shapes.

    describe(checkpoint_entry(name, title, folder, model)) -> Block
"""
from __future__ import annotations

import dataclasses
import functools
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional, Sequence

import torch

from explorer.published import GPT2, ORIGINAL_TRANSFORMER
from models.safetensors_files import read_config_json, safetensors_header, weight_files

COMPONENTS = ("embedding", "position", "encoder", "attention", "cross_attention", "mlp", "norms", "lm_head")
# where a norm sits in the block, in the order a token meets them
PLACE_ORDER = ("pre_attn", "post_attn", "post_attn_add", "post_cross_add", "pre_mlp", "post_mlp",
               "post_mlp_add")


class InventoryError(ValueError):
    """An inventory that does not fit the architecture it claims (a tensor no component claims,
    a projection whose shape does not divide into heads)."""


@dataclass(frozen=True)
class Scheme:
    """How one architecture names its tensors: enough to sort every tensor into a component and
    to know where each norm sits (the name says it, not the tensor)."""
    key: str
    block: str                        # regex of a decoder block's prefix; group 1 = layer index
    norm_places: dict                 # norm stem inside a block -> place (PLACE_ORDER)
    attention: tuple                  # stems of self-attention tensors
    mlp: tuple                        # stems of MLP tensors
    gate: str = ""                    # stem of a gate projection (gated MLP) if the family has one
    qk_norms: tuple = ()              # per-head norms on q and k (counted with the norms)
    cross_attention: tuple = ()
    encoder: str = ""                 # prefix of encoder tensors
    embedding: tuple = ()
    position: tuple = ()
    final_norm: tuple = ()
    lm_head: tuple = ()
    # the query / key projections: (name, axis of the output dimension), or a fused q|k|v one
    q_proj: tuple = ()
    k_proj: tuple = ()
    fused_qkv: tuple = ()
    mlp_in: tuple = ()                # (name, axis) of the MLP's up projection: d_ff


LLAMA = Scheme(
    key="llama", block=r"^model\.layers\.(\d+)\.",
    # Llama's "post_attention_layernorm" is the norm *before* the MLP: pre-norm, despite its name
    norm_places={"input_layernorm": "pre_attn", "post_attention_layernorm": "pre_mlp"},
    attention=("self_attn.",), mlp=("mlp.",), gate="mlp.gate_proj.",
    embedding=("model.embed_tokens.",), final_norm=("model.norm.",), lm_head=("lm_head.",),
    q_proj=("self_attn.q_proj.weight", 0), k_proj=("self_attn.k_proj.weight", 0),
    mlp_in=("mlp.up_proj.weight", 0))

GEMMA3 = Scheme(
    key="gemma3", block=r"^model\.layers\.(\d+)\.",
    # Gemma 3 norms both sides of each sub-layer: the output is normed before the residual add
    norm_places={"input_layernorm": "pre_attn", "post_attention_layernorm": "post_attn",
                 "pre_feedforward_layernorm": "pre_mlp", "post_feedforward_layernorm": "post_mlp"},
    qk_norms=("self_attn.q_norm.", "self_attn.k_norm."),
    attention=("self_attn.",), mlp=("mlp.",), gate="mlp.gate_proj.",
    embedding=("model.embed_tokens.",), final_norm=("model.norm.",), lm_head=("lm_head.",),
    q_proj=("self_attn.q_proj.weight", 0), k_proj=("self_attn.k_proj.weight", 0),
    mlp_in=("mlp.up_proj.weight", 0))

GPT2_SCHEME = Scheme(
    key="gpt2", block=r"^transformer\.h\.(\d+)\.",
    norm_places={"ln_1": "pre_attn", "ln_2": "pre_mlp"},
    attention=("attn.",), cross_attention=("crossattention.", "ln_cross_attn."), mlp=("mlp.",),
    embedding=("transformer.wte.",), position=("transformer.wpe.",), final_norm=("transformer.ln_f.",),
    lm_head=("lm_head.",),
    # GPT-2's Conv1D stores weights as (in, out): q|k|v is (d, 3d)
    fused_qkv=("attn.c_attn.weight", 1), mlp_in=("mlp.c_fc.weight", 1))

ORIGINAL = Scheme(
    key="transformer", block=r"^decoder\.(\d+)\.",
    # nn.TransformerDecoderLayer with norm_first=False: LayerNorm(x + Sublayer(x)), the paper's §3.1
    norm_places={"norm1": "post_attn_add", "norm2": "post_cross_add", "norm3": "post_mlp_add"},
    attention=("self_attn.",), cross_attention=("multihead_attn.",), mlp=("linear1.", "linear2."),
    encoder="encoder.", embedding=("embed.",),
    fused_qkv=("self_attn.in_proj_weight", 0), mlp_in=("linear1.weight", 0))

# Our shipped MoE models (explorer/moe/checkpoints): Llama names, and in each block's MLP a router
# (mlp.gate) and the experts' stacked tensors, gate|up fused as (E, 2F, d) and down as (E, d, F);
# their dense baseline has a Llama MLP, so the scheme is chosen from the tensors.
EXPLORER_MOE = dataclasses.replace(
    LLAMA, key="explorer_moe", gate="mlp.experts.gate_up_proj", mlp_in=("mlp.experts.down_proj", 2))

# Tensors of what a Llama-style block leaves out, named as the common families name them
# (transformers' T5, BART, Whisper, GPT-2; PyTorch's nn.Transformer), whatever the scheme: an
# encoder, cross-attention inside a block, a learned position table. Each is sorted into its
# component, so that the C18 fact it contradicts fails instead of the read raising.
FOREIGN = (
    ("encoder", re.compile(r"(^|\.)encoder\.")),
    ("position", re.compile(r"(^|\.)(embed_positions|position_embeddings?|wpe|pos_embed\w*)\.")),
    ("cross_attention", re.compile(r"(^|\.)(cross_?attn|crossattention|encoder_attn|multihead_attn)\.")),
)
# RoPE's inverse frequencies, where a checkpoint stores them as a buffer (most do not): not
# parameters, kept apart as what the tensors say about RoPE.
ROTARY = re.compile(r"(^|\.)rotary_emb\.|(^|\.)inv_freq$")
ENCODER_LAYER = re.compile(r"(?:^|\.)encoder\.(?:layers?\.|block\.|h\.)?(\d+)\.")

SCHEMES = {"llama": LLAMA, "gemma3": GEMMA3, "gpt2": GPT2_SCHEME, "transformer": ORIGINAL,
           "explorer_moe": EXPLORER_MOE}
ARCHITECTURE_SCHEMES = {"LlamaForCausalLM": "llama", "MistralForCausalLM": "llama",
                        "Qwen2ForCausalLM": "llama", "Gemma3ForCausalLM": "gemma3",
                        "ExplorerMoeForCausalLM": "explorer_moe"}


@dataclass(frozen=True)
class ModelEntry:
    """One model to describe: its tensors and what only the config says."""
    key: str                          # "transformer", "gpt2", or a registry name
    title: str
    origin: str                       # "weights" (a loaded checkpoint) or "config" (instantiated)
    source: str                       # where the tensors came from, for the visitor
    scheme: str
    inventory: dict                   # tensor name -> shape tuple
    head_dim: int
    activation: str                   # config's name: relu, gelu_new, silu, gelu_pytorch_tanh
    position_scheme: str              # when no position tensor: "sinusoidal" or "rope" (the code's)
    rope_thetas: tuple = ()           # RoPE bases (Gemma: local, global)
    unit_offset_norm: bool = False    # Gemma's (1 + w) RMSNorm: a property of the code, not the tensor
    module_params: Optional[int] = None  # parameters our loaded module holds (None: none loaded)
    stated_millions: Optional[float] = None  # the size its authors state, where they do


@dataclass(frozen=True)
class Block:
    """What the tensors say about one model's block."""
    key: str
    title: str
    origin: str
    source: str
    n_layers: int
    encoder_layers: int
    d_model: int
    d_ff: int
    head_dim: int
    n_heads: int
    n_kv_heads: int
    norm_kind: str                    # "layernorm", "rmsnorm", "rmsnorm_unit"
    norm_places: tuple                # places of the block's norms, in the order a token meets them
    qk_norm: bool
    position: str                     # "learned", "sinusoidal", "rope"
    rope_thetas: tuple
    activation: str                   # "relu", "gelu", "swiglu", "geglu"
    gated: bool
    cross_attention: bool
    tied_embeddings: bool
    bias_tensors: tuple               # every tensor named *bias
    linear_biases: tuple              # those outside norms (projections)
    rotary_tensors: tuple = ()        # stored RoPE buffers (inv_freq), rarely in a checkpoint
    params: dict = field(default_factory=dict)   # component -> parameters
    total_params: int = 0
    module_params: Optional[int] = None
    n_tensors: int = 0
    stated_millions: Optional[float] = None

    @property
    def norms_per_block(self) -> int:
        return len(self.norm_places)

    @property
    def attention_kind(self) -> str:
        if self.n_kv_heads == self.n_heads:
            return "mha"
        return "mqa" if self.n_kv_heads == 1 else "gqa"

    @property
    def pre_norm(self) -> bool:
        return not any(place.endswith("_add") for place in self.norm_places)



# ============================================================================ inventories

def checkpoint_inventory(folder: Path) -> dict:
    """{tensor name: shape} from the safetensors headers of a checkpoint folder (no tensor read)."""
    inventory = {}
    for path in weight_files(Path(folder)):
        for name, info in safetensors_header(path).items():
            if name != "__metadata__":
                inventory[name] = tuple(int(d) for d in info["shape"])
    return inventory


def module_inventory(module: torch.nn.Module) -> dict:
    """{parameter name: shape}; a parameter shared under two names (tied) is listed once."""
    return {name: tuple(p.shape) for name, p in module.named_parameters()}


@functools.lru_cache(maxsize=1)  # read-only data, the same for every visitor
def original_transformer_entry() -> ModelEntry:
    """The base model of the paper as PyTorch's own layers (post-norm, ReLU, biases), built on the
    meta device: 6 encoder layers, 6 decoder layers, one shared embedding matrix."""
    c = ORIGINAL_TRANSFORMER["config"]
    d = c["d_model"]
    with torch.device("meta"):
        layer_args = dict(d_model=d, nhead=c["n_heads"], dim_feedforward=c["d_ff"], activation=c["activation"],
                          norm_first=False, batch_first=True)
        model = torch.nn.ModuleDict({
            "embed": torch.nn.Embedding(c["vocab_size"], d),   # shared: source, target, pre-softmax (§3.4)
            "encoder": torch.nn.ModuleList(torch.nn.TransformerEncoderLayer(**layer_args) for _ in range(c["n_layers"])),
            "decoder": torch.nn.ModuleList(torch.nn.TransformerDecoderLayer(**layer_args) for _ in range(c["n_layers"])),
        })
    return ModelEntry(key="transformer", title="Transformer (2017, base)", origin="config",
                      source=ORIGINAL_TRANSFORMER["source"], scheme="transformer",
                      inventory=module_inventory(model), head_dim=d // c["n_heads"], activation=c["activation"],
                      position_scheme=c["positions"],
                      stated_millions=ORIGINAL_TRANSFORMER["stated_params_millions"])


@functools.lru_cache(maxsize=1)
def gpt2_entry() -> ModelEntry:
    """GPT-2 small from its config.json, as transformers' GPT2LMHeadModel on the meta device."""
    from transformers import GPT2Config, GPT2LMHeadModel

    c = GPT2["config"]
    config = GPT2Config(**{k: v for k, v in c.items() if k != "model_type"})
    with torch.device("meta"):
        model = GPT2LMHeadModel(config)
    return ModelEntry(key="gpt2", title="GPT-2 (small)", origin="config", source=GPT2["source"], scheme="gpt2",
                      inventory=module_inventory(model), head_dim=c["n_embd"] // c["n_head"],
                      activation=c["activation_function"], position_scheme="learned")


def checkpoint_entry(key: str, title: str, folder: Path, module: Optional[torch.nn.Module] = None,
                     inventory: Optional[dict] = None) -> ModelEntry:
    """A loaded checkpoint: its config.json and its tensors as stored. `module`: our loaded
    module, whose parameter count is compared with the tensors'. `inventory` replaces the
    folder's tensors (a test feeding a doctored inventory)."""
    hf = read_config_json(Path(folder))
    arch = (hf.get("architectures") or [""])[0]
    if arch not in ARCHITECTURE_SCHEMES:
        raise InventoryError(f"no block description for architecture {arch!r}")
    scheme = ARCHITECTURE_SCHEMES[arch]
    inventory = dict(inventory) if inventory is not None else checkpoint_inventory(folder)
    if scheme == "explorer_moe" and not any(".mlp.experts." in name for name in inventory):
        scheme = "llama"   # the dense baseline
    head_dim = hf.get("head_dim") or hf["hidden_size"] // hf["num_attention_heads"]
    rope = hf.get("rope_parameters") or {}
    thetas = sorted({float(v["rope_theta"]) for v in rope.values() if isinstance(v, dict) and "rope_theta" in v}
                    or {float(rope.get("rope_theta", hf.get("rope_theta", 10000.0)))})
    activation = hf.get("hidden_act") or hf.get("hidden_activation") or "silu"
    return ModelEntry(key=key, title=title, origin="weights", source=f"{Path(folder).name}/*.safetensors",
                      scheme=scheme, inventory=inventory,
                      # every architecture of ARCHITECTURE_SCHEMES rotates q and k in its code
                      head_dim=int(head_dim), activation=activation, position_scheme="rope",
                      rope_thetas=tuple(thetas), unit_offset_norm=scheme == "gemma3",
                      module_params=None if module is None else sum(p.numel() for p in module.parameters()))


# ============================================================================ reading a block

def _numel(shape) -> int:
    return math.prod(shape) if shape else 1


def _starts(name: str, stems: Sequence[str]) -> bool:
    return any(name.startswith(stem) for stem in stems)


def component_of(name: str, scheme: Scheme) -> tuple[str, Optional[int], str]:
    """(component, layer index or None, name inside the block) of one tensor. A tensor the
    scheme does not name but FOREIGN recognises (an encoder, cross-attention, a position table)
    goes to that component; any other unknown tensor raises."""
    if (scheme.encoder and name.startswith(scheme.encoder)) or FOREIGN[0][1].search(name):
        return "encoder", None, name
    for component, stems in (("embedding", scheme.embedding), ("position", scheme.position),
                             ("norms", scheme.final_norm), ("lm_head", scheme.lm_head)):
        if _starts(name, stems):
            return component, None, name
    match = re.match(scheme.block, name)
    if match:
        layer, inner = int(match.group(1)), name[match.end():]
        if _starts(inner, tuple(stem + "." for stem in scheme.norm_places)) or _starts(inner, scheme.qk_norms):
            return "norms", layer, inner
        if _starts(inner, scheme.cross_attention):
            return "cross_attention", layer, inner
        if _starts(inner, scheme.attention):
            return "attention", layer, inner
        if _starts(inner, scheme.mlp):
            return "mlp", layer, inner
    for component, pattern in FOREIGN[1:]:
        if pattern.search(name):
            return component, (int(match.group(1)) if match else None), (name[match.end():] if match else name)
    raise InventoryError(f"tensor {name!r} belongs to no component of a {scheme.key} block")


def _rows(block0: dict, spec: tuple, what: str) -> int:
    name, axis = spec
    if name not in block0:
        raise InventoryError(f"the first block has no {name!r} ({what})")
    return int(block0[name][axis])


def describe(entry: ModelEntry) -> Block:
    """The block as the tensors show it."""
    scheme = SCHEMES[entry.scheme]
    params = dict.fromkeys(COMPONENTS, 0)
    layers: set[int] = set()
    block0: dict = {}
    rotary = tuple(name for name in entry.inventory if ROTARY.search(name))
    for name, shape in entry.inventory.items():
        if name in rotary:
            continue
        component, layer, inner = component_of(name, scheme)
        params[component] += _numel(shape)
        if layer is not None:
            layers.add(layer)
            if layer == 0:
                block0[inner] = shape
    if not block0:
        raise InventoryError(f"{entry.title}: no decoder block found among {len(entry.inventory)} tensors")
    embeddings = [shape for name, shape in entry.inventory.items() if _starts(name, scheme.embedding)]
    d_model = int(embeddings[0][1])
    # heads from the projections' shapes
    if scheme.fused_qkv:
        width = _rows(block0, scheme.fused_qkv, "fused q, k, v")
        q_width = d_model
        kv_width = (width - q_width) // 2
    else:
        q_width = _rows(block0, scheme.q_proj, "query projection")
        kv_width = _rows(block0, scheme.k_proj, "key projection")
    if q_width % entry.head_dim or kv_width % entry.head_dim:
        raise InventoryError(f"{entry.title}: projections of width {q_width}, {kv_width} do not divide into "
                             f"heads of {entry.head_dim}")
    n_heads, n_kv_heads = q_width // entry.head_dim, kv_width // entry.head_dim
    # norms of the block: which exist, where they sit, whether they have a bias (LayerNorm)
    stems = [stem for stem in scheme.norm_places if f"{stem}.weight" in block0]
    places = tuple(sorted((scheme.norm_places[stem] for stem in stems), key=PLACE_ORDER.index))
    layer_norm = any(f"{stem}.bias" in block0 for stem in stems)
    norm_kind = "layernorm" if layer_norm else ("rmsnorm_unit" if entry.unit_offset_norm else "rmsnorm")
    biases = tuple(name for name in entry.inventory if name.endswith("bias"))
    norm_biases = {name for name in biases if component_of(name, scheme)[0] == "norms"
                   or re.search(r"(^|\.)(norm\d*|ln_\w+|layernorm)\.bias$", name)}
    gated = bool(scheme.gate) and any(inner.startswith(scheme.gate) for inner in block0)
    act = entry.activation
    activation = ("swiglu" if act == "silu" else "geglu") if gated else ("relu" if act == "relu" else "gelu")
    has_position = params["position"] > 0
    has_head = params["lm_head"] > 0
    encoder_layers = len({int(m.group(1)) for name in entry.inventory if (m := ENCODER_LAYER.search(name))})
    if params["encoder"] and not encoder_layers:
        encoder_layers = 1   # encoder tensors without a layer index: at least one layer
    total = sum(params.values())
    return Block(
        key=entry.key, title=entry.title, origin=entry.origin, source=entry.source,
        n_layers=len(layers), encoder_layers=encoder_layers, d_model=d_model,
        d_ff=_rows(block0, scheme.mlp_in, "MLP input projection"), head_dim=entry.head_dim,
        n_heads=n_heads, n_kv_heads=n_kv_heads, norm_kind=norm_kind, norm_places=places,
        qk_norm=any(_starts(inner, scheme.qk_norms) for inner in block0) if scheme.qk_norms else False,
        position="learned" if has_position else entry.position_scheme, rope_thetas=entry.rope_thetas,
        activation=activation, gated=gated, cross_attention=params["cross_attention"] > 0,
        tied_embeddings=not has_head, bias_tensors=biases, rotary_tensors=rotary,
        linear_biases=tuple(name for name in biases if name not in norm_biases),
        params=params, total_params=total, module_params=entry.module_params, n_tensors=len(entry.inventory),
        stated_millions=entry.stated_millions)
