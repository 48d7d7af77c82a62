"""Four transformer blocks side by side, read from tensors (claim C18): the original Transformer
(2017), GPT-2, SmolLM2 (Llama architecture) and Gemma 3.

Everything a block is said to have is read from a tensor inventory, {tensor name: shape}:
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

    result = run([checkpoint_entry(name, title, folder, model), ...])   # + the two references
    figures(result, lang) -> (block diagrams, parameters per component); table(result, lang)
"""
from __future__ import annotations

import dataclasses
import functools
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional, Sequence

import pandas as pd
import plotly.graph_objects as go
import torch

from explorer.published import GPT2, ORIGINAL_TRANSFORMER
from explorer.locales import template, text
from explorer.plotting import Fig, colors
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
    position_scheme: str              # when no position tensor: "sinusoidal" or "rope"
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


@dataclass(frozen=True)
class Blocks:
    blocks: tuple                     # Block, in display order


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
                      head_dim=int(head_dim), activation=activation, position_scheme="rope",
                      rope_thetas=tuple(thetas), unit_offset_norm=scheme == "gemma3",
                      module_params=None if module is None else sum(p.numel() for p in module.parameters()))


# ============================================================================ reading a block

def _numel(shape) -> int:
    return math.prod(shape) if shape else 1


def _starts(name: str, stems: Sequence[str]) -> bool:
    return any(name.startswith(stem) for stem in stems)


def component_of(name: str, scheme: Scheme) -> tuple[str, Optional[int], str]:
    """(component, layer index or None, name inside the block) of one tensor."""
    if scheme.encoder and name.startswith(scheme.encoder):
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
    for name, shape in entry.inventory.items():
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
    encoder_layers = len({int(m.group(1)) for name in entry.inventory
                          if (m := re.match(rf"^{re.escape(scheme.encoder)}(\d+)\.", name))}) if scheme.encoder else 0
    total = sum(params.values())
    return Block(
        key=entry.key, title=entry.title, origin=entry.origin, source=entry.source,
        n_layers=len(layers), encoder_layers=encoder_layers, d_model=d_model,
        d_ff=_rows(block0, scheme.mlp_in, "MLP input projection"), head_dim=entry.head_dim,
        n_heads=n_heads, n_kv_heads=n_kv_heads, norm_kind=norm_kind, norm_places=places,
        qk_norm=any(_starts(inner, scheme.qk_norms) for inner in block0) if scheme.qk_norms else False,
        position="learned" if has_position else entry.position_scheme, rope_thetas=entry.rope_thetas,
        activation=activation, gated=gated, cross_attention=params["cross_attention"] > 0,
        tied_embeddings=not has_head, bias_tensors=biases,
        linear_biases=tuple(name for name in biases if name not in norm_biases),
        params=params, total_params=total, module_params=entry.module_params, n_tensors=len(entry.inventory),
        stated_millions=entry.stated_millions)


def run(entries: Sequence[ModelEntry]) -> Blocks:
    """The blocks of the two references, then of each entry given (the loaded checkpoints)."""
    return Blocks(tuple(describe(entry) for entry in (original_transformer_entry(), gpt2_entry(), *entries)))


# ============================================================================ the block, as stages

@dataclass(frozen=True)
class Stage:
    kind: str                         # "norm", "attn", "cross", "mlp", "add"
    label: str                        # shown in the box


def _norm_label(block: Block, lang: str) -> str:
    return text(f"arch.blocks.norm.{block.norm_kind}", lang)


def stages(block: Block, lang: str) -> list[Stage]:
    """The block from its input (first) to its output (last)."""
    attn = text(f"arch.blocks.attn.{block.attention_kind}", lang, q=block.n_heads, kv=block.n_kv_heads)
    if block.position == "rope":
        attn += " · RoPE"
    if block.qk_norm:
        attn += " · " + text("arch.blocks.qk_norm", lang)
    subs = [("attn", attn, "attn")]
    if block.cross_attention:
        subs.append(("cross", text("arch.blocks.cross", lang, q=block.n_heads), "cross"))
    subs.append(("mlp", text(f"arch.blocks.mlp.{block.activation}", lang, d_ff=block.d_ff), "mlp"))
    places = set(block.norm_places)
    norm = _norm_label(block, lang)
    out: list[Stage] = []
    for kind, label, place in subs:
        if f"pre_{place}" in places:
            out.append(Stage("norm", norm))
        out.append(Stage(kind, label))
        if f"post_{place}" in places:
            out.append(Stage("norm", norm))
        out.append(Stage("add", text("arch.blocks.add", lang)))
        if f"post_{place}_add" in places:
            out.append(Stage("norm", norm))
    return out


# ============================================================================ figures

STAGE_COLORS = {"norm": "#fde68a", "attn": "#bfdbfe", "cross": "#c4b5fd", "mlp": "#bbf7d0", "add": "#f3f4f6"}


def diagram(result: Blocks, lang: str) -> go.Figure:
    """One column per model: the block from input (bottom) to output (top), boxes from stages();
    under it the embedding and position, over it the final norm and output head."""
    fig = Fig()
    n = len(result.blocks)
    width, gap, box_h, step = 1.1, 0.28, 0.62, 0.8
    tallest = max(len(stages(block, lang)) for block in result.blocks)
    for column, block in enumerate(result.blocks):
        x0 = column * (width + gap)
        xc = x0 + width / 2
        items = stages(block, lang)
        # below the block: embedding (+ positions)
        bottom = [text("arch.blocks.embed", lang)]
        bottom.append(text(f"arch.blocks.pos.{block.position}", lang))
        y = 0.0
        for label in bottom:
            fig.add_shape(type="rect", x0=x0, x1=x0 + width, y0=y, y1=y + box_h, line=dict(color="#9ca3af"),
                          fillcolor="#ffffff")
            fig.add_annotation(x=xc, y=y + box_h / 2, text=label, showarrow=False, font=dict(size=11))
            y += step
        y += 0.3
        block_y0 = y
        # inside the block the boxes leave room on the right for the residual path
        right, bypass = x0 + width - 0.14, x0 + width - 0.05
        centre = (x0 + right) / 2
        branch_y, pending, previous = y, True, None
        for stage in items:
            if pending and not (previous == "add" and stage.kind == "norm" and not block.pre_norm):
                # the residual leaves the main path here: before a pre-norm, after a post-add norm
                branch_y, pending = y - (step - box_h) / 2, False
            inset = 0.24 if stage.kind == "add" else 0.0
            fig.add_shape(type="rect", x0=x0 + inset, x1=right - inset, y0=y, y1=y + box_h,
                          line=dict(color="#6b7280"), fillcolor=STAGE_COLORS[stage.kind])
            fig.add_annotation(x=centre, y=y + box_h / 2, text=stage.label, showarrow=False, font=dict(size=11))
            if stage.kind == "add":
                fig.add_shape(type="path", path=f"M {centre},{branch_y} H {bypass} V {y + box_h / 2} H {right - inset}",
                              line=dict(color="#374151", width=1.5))
                pending = True
            previous = stage.kind
            y += step
        block_y1 = y - step + box_h
        # the stack repeated n times: a bracket with the count
        label = text("arch.blocks.times", lang, n=block.n_layers)
        if block.encoder_layers:
            label = text("arch.blocks.times_encoder", lang, n=block.n_layers, enc=block.encoder_layers)
        fig.add_shape(type="rect", x0=x0 - 0.06, x1=x0 + width + 0.06, y0=block_y0 - 0.1, y1=block_y1 + 0.1,
                      line=dict(color="#374151", dash="dot"), fillcolor="rgba(0,0,0,0)")
        fig.add_annotation(x=xc, y=block_y1 + 0.1, text=label, showarrow=False, yanchor="bottom",
                           font=dict(size=11, color="#374151"))
        y = block_y1 + 0.55 + (tallest - len(items)) * step
        top = []
        if block.pre_norm:
            top.append(text("arch.blocks.final_norm", lang, norm=_norm_label(block, lang)))
        top.append(text("arch.blocks.head_tied" if block.tied_embeddings else "arch.blocks.head", lang))
        for label in top:
            fig.add_shape(type="rect", x0=x0, x1=x0 + width, y0=y, y1=y + box_h, line=dict(color="#9ca3af"),
                          fillcolor="#ffffff")
            fig.add_annotation(x=xc, y=y + box_h / 2, text=label, showarrow=False, font=dict(size=11))
            y += step
        origin = text(f"arch.blocks.origin.{block.origin}", lang)
        fig.add_annotation(x=xc, y=y + 0.1, text=f"<b>{block.title}</b><br>{origin}", showarrow=False,
                           yanchor="bottom", font=dict(size=12))
    top_y = 2 * 0.8 + 0.3 + tallest * 0.8 + 0.55 + 2 * 0.8 + 1.2
    fig.update_xaxes(visible=False, range=[-0.2, n * (width + gap) - gap + 0.2])
    fig.update_yaxes(visible=False, range=[-0.2, top_y])
    fig.add_scatter(x=[0], y=[0], mode="markers", marker=dict(opacity=0), hoverinfo="skip", showlegend=False)
    for kind in ("norm", "attn", "cross", "mlp", "add"):
        fig.add_scatter(x=[None], y=[None], mode="markers", name=text(f"arch.blocks.legend.{kind}", lang),
                        marker=dict(symbol="square", size=12, color=STAGE_COLORS[kind],
                                    line=dict(color="#6b7280", width=1)))
    return fig.finish("", height=720)


def params_figure(result: Blocks, lang: str) -> go.Figure:
    """Parameters per component, one stacked bar per model, in millions (summed from shapes)."""
    fig = Fig()
    titles = [block.title for block in result.blocks]
    hover = template("arch.blocks.fig.params_hover", lang)
    for color, component in zip(colors(len(COMPONENTS), "Cividis"), COMPONENTS):
        values = [block.params[component] for block in result.blocks]
        if not any(values):
            continue
        name = text(f"arch.blocks.comp.{component}", lang)
        fig.add_bar(y=titles, x=[v / 1e6 for v in values], name=name, orientation="h", marker=dict(color=color),
                    hoverinfo="text",
                    hovertext=[hover.format(model=t, component=name, n=v, share=100 * v / b.total_params)
                               for t, v, b in zip(titles, values, result.blocks)])
    fig.update_layout(barmode="stack")
    fig.update_xaxes(title_text=text("arch.blocks.fig.params_axis", lang))
    fig.update_yaxes(autorange="reversed")
    return fig.finish("", height=360)


def figures(result: Blocks, lang: str) -> tuple[go.Figure, go.Figure]:
    return diagram(result, lang), params_figure(result, lang)


def _yes(value: bool, lang: str) -> str:
    return text("arch.yes" if value else "arch.no", lang)


def table(result: Blocks, lang: str) -> pd.DataFrame:
    """One row per property, one column per model: every cell read from the tensors (or, where
    the table says so, the config)."""
    rows: dict[str, list] = {}

    def row(key: str, values: list) -> None:
        rows[text(key, lang)] = values

    blocks = result.blocks
    row("arch.row.layers", [text("arch.blocks.layers_enc", lang, n=b.n_layers, enc=b.encoder_layers)
                            if b.encoder_layers else str(b.n_layers) for b in blocks])
    row("arch.row.d_model", [str(b.d_model) for b in blocks])
    row("arch.row.norm", [_norm_label(b, lang) for b in blocks])
    row("arch.row.norm_place", [text("arch.place.pre" if b.pre_norm else "arch.place.post", lang)
                                + " · " + ", ".join(text(f"arch.place.{p}", lang) for p in b.norm_places)
                                for b in blocks])
    row("arch.row.norms_per_block", [str(b.norms_per_block) + (" + QK" if b.qk_norm else "") for b in blocks])
    row("arch.row.position", [text(f"arch.blocks.pos.{b.position}", lang)
                              + (" θ " + " / ".join(f"{t:,.0f}" for t in b.rope_thetas) if b.rope_thetas else "")
                              for b in blocks])
    row("arch.row.activation", [text(f"arch.blocks.act.{b.activation}", lang) for b in blocks])
    row("arch.row.heads", [text(f"arch.blocks.attn.{b.attention_kind}", lang, q=b.n_heads, kv=b.n_kv_heads)
                           + f" · d_head {b.head_dim}" for b in blocks])
    row("arch.row.encoder", [_yes(b.encoder_layers > 0, lang) for b in blocks])
    row("arch.row.cross", [_yes(b.cross_attention, lang) for b in blocks])
    row("arch.row.biases", [text("arch.blocks.biases", lang, n=len(b.linear_biases), norms=len(b.bias_tensors)
                                 - len(b.linear_biases)) if b.bias_tensors else text("arch.blocks.no_biases", lang)
                            for b in blocks])
    row("arch.row.tied", [_yes(b.tied_embeddings, lang) for b in blocks])
    row("arch.row.params", [f"{b.total_params:,}" + (" " + text("arch.blocks.stated", lang, n=b.stated_millions)
                                                     if b.stated_millions else "") for b in blocks])
    row("arch.row.module", [f"{b.module_params:,}" if b.module_params is not None else "—" for b in blocks])
    row("arch.row.source", [b.source for b in blocks])
    frame = pd.DataFrame(rows, index=[b.title for b in blocks]).T
    frame.insert(0, text("arch.col.property", lang), frame.index)
    return frame.reset_index(drop=True)


# C18's facts: what the claim says changed from the original Transformer to a Llama-style block,
# each read from the block's tensors. The claim's "ReLU/GELU -> SwiGLU" is the change from a plain
# MLP to a gated one (an elementwise gate times an up projection): SwiGLU gates with SiLU, Gemma 3's
# GeGLU with GELU, and both count; a plain ReLU or GELU MLP does not. GQA: fewer KV heads than
# query heads (MQA, one KV head, is its one-group case).
MODERN_FACTS = ("pre_norm", "rmsnorm", "rope", "gated_mlp", "gqa", "no_bias", "no_encoder", "no_cross")


def modern_facts(block: Block) -> dict[str, bool]:
    """{fact: holds} for MODERN_FACTS, in that order."""
    return {"pre_norm": block.pre_norm, "rmsnorm": block.norm_kind in ("rmsnorm", "rmsnorm_unit"),
            "rope": block.position == "rope", "gated_mlp": block.activation in ("swiglu", "geglu"),
            "gqa": block.n_kv_heads < block.n_heads, "no_bias": not block.bias_tensors,
            "no_encoder": block.encoder_layers == 0, "no_cross": not block.cross_attention}


def is_llama_style(block: Block) -> bool:
    """C18's criterion: every fact of MODERN_FACTS holds."""
    return all(modern_facts(block).values())


def facts_text(block: Block, lang: str) -> str:
    """The verdict on one block: all facts hold, or which do not."""
    facts = modern_facts(block)
    if all(facts.values()):
        return text("arch.blocks.verdict.all", lang, n=len(facts))
    missing = [text(f"arch.blocks.fact.{key}", lang) for key, holds in facts.items() if not holds]
    return text("arch.blocks.verdict.not", lang, held=sum(facts.values()), n=len(facts),
                missing=text("arch.blocks.fact.sep", lang).join(missing))


def summary(result: Blocks, lang: str) -> str:
    lines = []
    for block in result.blocks:
        if block.origin != "weights":
            continue
        biases = (text("arch.blocks.sum.no_bias", lang) if not block.bias_tensors
                  else text("arch.blocks.sum.bias", lang, n=len(block.bias_tensors),
                            first=block.bias_tensors[0]))
        match = ("" if block.module_params is None else
                 text("arch.blocks.sum.module", lang, n=block.module_params,
                      same=_yes(block.module_params == block.total_params, lang)))
        lines.append(text("arch.blocks.sum.line", lang, model=block.title, tensors=block.n_tensors,
                          total=block.total_params, biases=biases, norms=block.norms_per_block,
                          kind=_norm_label(block, lang), tied=_yes(block.tied_embeddings, lang),
                          q=block.n_heads, kv=block.n_kv_heads) + match + " " + facts_text(block, lang))
    return "\n\n".join(lines)
