"""Pre-norm vs post-norm (claim C19).

Post-norm (the original Transformer) puts the norm after the residual add, x ← LN(x + f(x)): the
gradient reaching an early layer crosses every later norm. Pre-norm (GPT-2, Llama, Gemma) puts it
inside the branch, x ← x + f(LN(x)): the residual path is an unscaled identity from the loss to
every layer. Two experiments on the same small byte-level language model, differing only in
where the two LayerNorms of each block sit:

    run_init(depths=(6, 24, 48))   gradient norm of each block's parameters at initialisation,
                                   for both placements and every depth (seconds, live in the tab);
    run_training(...)              both placements trained from the same initial weights with
                                   Adam at a constant learning rate, no warmup, on the bytes of
                                   the shipped text (static/texts); cached in norm_training.json:

    .venv/bin/python -m explorer.architecture.norm_placement train   # writes norm_training.json

Both run on one CPU thread, seeded, so the cached curves can be checked by re-running their
first steps (tests/checkpoints/test_architecture.py).
"""
from __future__ import annotations

import argparse
import json
import math
import re
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Optional, Sequence

import numpy as np
import plotly.graph_objects as go
import torch
import torch.nn as nn
import torch.nn.functional as F

from explorer.architecture.seeding import draw_default_init
from explorer.inputs import InputError, check_text, shown, whole_number
from explorer.locales import Term, template, text
from explorer.plotting import Fig, colors
from explorer.texts import long_text
from models.attention import MaskSpec, attend

PLACEMENTS = ("post", "pre")
DEFAULT_DEPTHS = (6, 24, 48)
MAX_DEPTH = 64
MAX_DEPTHS = 4
MAX_DEPTHS_CHARS = 100
TRAINING_FILE = Path(__file__).with_name("norm_training.json")
VOCAB = 256                     # bytes


@dataclass(frozen=True)
class StackConfig:
    d_model: int = 64
    n_heads: int = 4
    d_ff: int = 256              # 4 x d_model, the original Transformer's ratio
    seq_len: int = 64
    batch: int = 16


class Block(nn.Module):
    """Self-attention and a ReLU MLP, each with a residual add and a LayerNorm: after the add
    (post) or at the branch's input (pre). Everything else is identical."""

    def __init__(self, config: StackConfig, placement: str):
        super().__init__()
        d = config.d_model
        self.placement, self.n_heads = placement, config.n_heads
        self.qkv = nn.Linear(d, 3 * d)
        self.out = nn.Linear(d, d)
        self.ff_in = nn.Linear(d, config.d_ff)
        self.ff_out = nn.Linear(config.d_ff, d)
        self.norm_attn, self.norm_mlp = nn.LayerNorm(d), nn.LayerNorm(d)

    def attention(self, x: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
        b, t, d = x.shape
        q, k, v = self.qkv(x).view(b, t, 3, self.n_heads, d // self.n_heads).permute(2, 0, 3, 1, 4)  # 3 x (B, H, T, Dh)
        out, _ = attend(q, k, v, positions, positions, MaskSpec(), (d // self.n_heads) ** -0.5, impl="sdpa")
        return self.out(out.transpose(1, 2).reshape(b, t, d))               # (B, T, d)

    def mlp(self, x: torch.Tensor) -> torch.Tensor:
        return self.ff_out(F.relu(self.ff_in(x)))

    def forward(self, x: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
        if self.placement == "post":
            x = self.norm_attn(x + self.attention(x, positions))
            return self.norm_mlp(x + self.mlp(x))
        x = x + self.attention(self.norm_attn(x), positions)
        return x + self.mlp(self.norm_mlp(x))


class Stack(nn.Module):
    """Byte embeddings + learned positions -> blocks -> (pre-norm only: a final LayerNorm, since
    its stream is never normed otherwise) -> tied output head."""

    def __init__(self, config: StackConfig, n_layers: int, placement: str, seed: int = 0):
        super().__init__()
        if placement not in PLACEMENTS:
            raise ValueError(f"placement must be one of {PLACEMENTS}, got {placement!r}")
        self.embed = nn.Embedding(VOCAB, config.d_model)
        self.pos = nn.Embedding(config.seq_len, config.d_model)
        self.blocks = nn.ModuleList(Block(config, placement) for _ in range(n_layers))
        self.final_norm = nn.LayerNorm(config.d_model) if placement == "pre" else nn.Identity()
        # every draw from a generator of this stack's own (explorer/architecture/seeding.py): the
        # constructors' draws first, so the weights are those torch.manual_seed(seed) gave
        generator = torch.Generator().manual_seed(seed)
        draw_default_init(self, generator)
        # the original Transformer's initialisation: Xavier-uniform matrices, zero biases,
        # embeddings N(0, 1/d) (scaled by sqrt(d) in forward, as the paper does)
        for module in self.modules():
            if isinstance(module, nn.Linear):
                nn.init.xavier_uniform_(module.weight, generator=generator)
                nn.init.zeros_(module.bias)
        nn.init.normal_(self.embed.weight, std=config.d_model ** -0.5, generator=generator)
        nn.init.normal_(self.pos.weight, std=config.d_model ** -0.5, generator=generator)
        self.scale = config.d_model ** 0.5

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        t = ids.shape[1]
        positions = torch.arange(t)
        x = (self.embed(ids) + self.pos(positions)) * self.scale            # (B, T, d)
        for block in self.blocks:
            x = block(x, positions)
        return F.linear(self.final_norm(x), self.embed.weight)              # (B, T, 256)


def text_bytes() -> torch.Tensor:
    """The shipped text as byte ids (about 18 k)."""
    return torch.tensor(list(long_text().encode("utf-8")), dtype=torch.long)


def split_bytes(data: torch.Tensor, held_out: float = 0.1) -> tuple[torch.Tensor, torch.Tensor]:
    """The first 90 % for training, the last 10 % held out (never seen in training)."""
    cut = int(len(data) * (1 - held_out))
    return data[:cut], data[cut:]


def batch_of(data: torch.Tensor, config: StackConfig, generator: torch.Generator):
    starts = torch.randint(0, len(data) - config.seq_len - 1, (config.batch,), generator=generator)
    window = torch.stack([data[s:s + config.seq_len + 1] for s in starts.tolist()])  # (B, T+1)
    return window[:, :-1], window[:, 1:]


def loss_of(model: Stack, ids: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    logits = model(ids)                                                     # (B, T, 256)
    return F.cross_entropy(logits.reshape(-1, VOCAB), targets.reshape(-1))


def block_grad_norms(model: Stack) -> np.ndarray:
    """(n_layers,): the L2 norm of the gradient of each block's parameters, all of them."""
    return np.array([math.sqrt(sum(float(p.grad.double().pow(2).sum()) for p in block.parameters()))
                     for block in model.blocks])


# ============================================================================ at initialisation

@dataclass(frozen=True)
class InitGradients:
    config: StackConfig
    depths: tuple[int, ...]
    seed: int
    grad_norms: dict            # (placement, depth) -> (depth,) gradient norm per block
    losses: dict                # (placement, depth) -> the loss at initialisation (≈ ln 256)

    def ratio(self, placement: str, depth: int) -> float:
        """Gradient norm of the last block over the first block's."""
        norms = self.grad_norms[(placement, depth)]
        return float(norms[-1] / norms[0])


def check_depths(depths) -> tuple[int, ...]:
    if isinstance(depths, (str, bytes)) or not isinstance(depths, Sequence) or not depths:
        raise InputError("arch.err.no_depths")
    if len(depths) > MAX_DEPTHS:
        raise InputError("arch.err.too_many_depths", limit=MAX_DEPTHS, n=len(depths))
    checked = tuple(dict.fromkeys(whole_number(d, Term("arch.name.depth"), 1, MAX_DEPTH) for d in depths))
    return tuple(sorted(checked))


def parse_depths(depths_text) -> tuple[int, ...]:
    """"6, 24, 48" -> (6, 24, 48); the text's length is checked before it is split."""
    check_text(depths_text, Term("arch.name.depths"), max_chars=MAX_DEPTHS_CHARS)
    items = [item for item in re.split(r"[,;\s]+", depths_text.strip()) if item]
    if len(items) > MAX_DEPTHS:
        raise InputError("arch.err.too_many_depths", limit=MAX_DEPTHS, n=len(items))
    depths = []
    for item in items:
        if not item.isdigit():
            raise InputError("arch.err.not_depth", item=shown(item))
        depths.append(int(item))
    return check_depths(depths)


def run_init(depths: Sequence[int] = DEFAULT_DEPTHS, seed: int = 0,
             config: StackConfig = StackConfig()) -> InitGradients:
    """One forward and backward per (placement, depth) on one batch of the text, at
    initialisation; both placements of a depth start from the same weights."""
    depths = check_depths(depths)
    seed = whole_number(seed, Term("arch.name.seed"), 0, 2**31 - 1)
    train, _ = split_bytes(text_bytes())
    ids, targets = batch_of(train, config, torch.Generator().manual_seed(seed))
    grad_norms, losses = {}, {}
    for depth in depths:
        for placement in PLACEMENTS:
            model = Stack(config, depth, placement, seed + depth)   # same initial weights for both
            loss = loss_of(model, ids, targets)
            loss.backward()
            grad_norms[(placement, depth)] = block_grad_norms(model)
            losses[(placement, depth)] = loss.item()
    return InitGradients(config, depths, seed, grad_norms, losses)


# ============================================================================ a short training run

@dataclass(frozen=True)
class Training:
    config: StackConfig
    n_layers: int
    lr: float
    steps: int
    seed: int
    eval_every: int
    train_loss: dict            # placement -> (steps,) training loss per step
    eval_steps: tuple[int, ...]
    eval_loss: dict             # placement -> (len(eval_steps),) held-out loss
    seconds: dict               # placement -> wall time of its run

    def final_eval(self, placement: str) -> float:
        return float(self.eval_loss[placement][-1])

    def as_json(self) -> dict:
        return {"config": asdict(self.config), "n_layers": self.n_layers, "lr": self.lr,
                "steps": self.steps, "seed": self.seed, "eval_every": self.eval_every,
                "train_loss": {k: [round(float(v), 6) for v in vals] for k, vals in self.train_loss.items()},
                "eval_steps": list(self.eval_steps),
                "eval_loss": {k: [round(float(v), 6) for v in vals] for k, vals in self.eval_loss.items()},
                "seconds": {k: round(v, 2) for k, v in self.seconds.items()}}

    @classmethod
    def from_json(cls, data: dict) -> "Training":
        return cls(config=StackConfig(**data["config"]), n_layers=data["n_layers"], lr=data["lr"],
                   steps=data["steps"], seed=data["seed"], eval_every=data["eval_every"],
                   train_loss={k: np.array(v) for k, v in data["train_loss"].items()},
                   eval_steps=tuple(data["eval_steps"]),
                   eval_loss={k: np.array(v) for k, v in data["eval_loss"].items()},
                   seconds=dict(data["seconds"]))


def held_out_loss(model: Stack, data: torch.Tensor, config: StackConfig) -> float:
    """Mean loss over every non-overlapping window of the held-out bytes."""
    n = (len(data) - 1) // config.seq_len
    ids = data[:n * config.seq_len].view(n, config.seq_len)
    targets = data[1:n * config.seq_len + 1].view(n, config.seq_len)
    with torch.no_grad():
        return float(loss_of(model, ids, targets))


def train_one(placement: str, n_layers: int, lr: float, steps: int, seed: int, eval_every: int,
              config: StackConfig):
    """Adam (β = 0.9, 0.98, as the original Transformer) at a constant rate from step 1: no
    warmup. Returns (train losses, held-out losses, seconds)."""
    train, held = split_bytes(text_bytes())
    model = Stack(config, n_layers, placement, seed)
    optimizer = torch.optim.Adam(model.parameters(), lr=lr, betas=(0.9, 0.98), eps=1e-9)
    generator = torch.Generator().manual_seed(seed)   # the same batches for both placements
    losses, evals = [], []
    start = time.perf_counter()
    for step in range(1, steps + 1):
        ids, targets = batch_of(train, config, generator)
        loss = loss_of(model, ids, targets)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
        if step % eval_every == 0:
            evals.append(held_out_loss(model, held, config))
    return np.array(losses), np.array(evals), time.perf_counter() - start


def run_training(n_layers: int = 12, lr: float = 1e-3, steps: int = 200, seed: int = 0,
                 eval_every: int = 20, config: StackConfig = StackConfig()) -> Training:
    train_loss, eval_loss, seconds = {}, {}, {}
    for placement in PLACEMENTS:
        train_loss[placement], eval_loss[placement], seconds[placement] = train_one(
            placement, n_layers, lr, steps, seed, eval_every, config)
    eval_steps = tuple(range(eval_every, steps + 1, eval_every))
    return Training(config, n_layers, lr, steps, seed, eval_every, train_loss, eval_steps, eval_loss, seconds)


def load_training(path: Path = TRAINING_FILE) -> Training:
    return Training.from_json(json.loads(Path(path).read_text(encoding="utf-8")))


def main(argv: Optional[Sequence[str]] = None) -> None:
    parser = argparse.ArgumentParser(description="Train pre-norm and post-norm stacks; write the curves.")
    parser.add_argument("command", choices=["train"])
    parser.add_argument("--layers", type=int, default=12)
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=TRAINING_FILE)
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    result = run_training(args.layers, args.lr, args.steps, args.seed)
    args.out.write_text(json.dumps(result.as_json(), indent=1) + "\n", encoding="utf-8")
    for placement in PLACEMENTS:
        print(f"{placement}-norm: final held-out loss {result.final_eval(placement):.3f} nats/byte, "
              f"{result.seconds[placement]:.1f} s")



# ============================================================================ figures and text

def unigram_loss() -> float:
    """Held-out loss (nats/byte) of predicting each byte by its training frequency alone (add-one
    smoothing): the level a model reaches that has learned nothing about context."""
    train, held = split_bytes(text_bytes())
    counts = torch.bincount(train, minlength=VOCAB).double() + 1.0
    log_p = (counts / counts.sum()).log()
    return float(-log_p[held].mean())


PLACEMENT_DASH = {"post": "solid", "pre": "dash"}


def init_figure(result: InitGradients, lang: str) -> go.Figure:
    """Gradient norm per block at initialisation: post-norm (left), pre-norm (right), one line per
    depth, the same log scale on both."""
    fig = Fig(panels=(text("arch.norm.fig.post", lang), text("arch.norm.fig.pre", lang)))
    hover = template("arch.norm.fig.init_hover", lang)
    for color, depth in zip(colors(len(result.depths)), result.depths):
        for placement, axes in (("post", {}), ("pre", {"xaxis": "x2", "yaxis": "y2"})):
            norms = result.grad_norms[(placement, depth)]
            layers = list(range(1, depth + 1))
            fig.add_scatter(x=layers, y=norms.tolist(), mode="lines+markers", marker=dict(size=4),
                            line=dict(color=color, width=2), name=text("arch.norm.fig.depth", lang, n=depth),
                            legendgroup=str(depth), showlegend=placement == "post", hoverinfo="text",
                            hovertext=[hover.format(placement=text(f"arch.norm.{placement}", lang), depth=depth,
                                                    layer=layer, norm=value)
                                       for layer, value in zip(layers, norms)], **axes)
    every = np.concatenate([v for v in result.grad_norms.values()])
    low, high = math.log10(every.min()) - 0.1, math.log10(every.max()) + 0.1
    for axis in (1, 2):
        fig.update_xaxes(axis, title_text=text("arch.norm.fig.layer_axis", lang))
        fig.update_yaxes(axis, type="log", range=[low, high], title_text=text("arch.norm.fig.grad_axis", lang))
    fig.update_layout(legend=dict(orientation="h", yanchor="top", y=-0.2))
    return fig.finish("", height=420, lang=lang)


def training_figure(result: Training, lang: str) -> go.Figure:
    """Training loss per step (thin) and held-out loss (markers) for both placements, and the
    byte-frequency level (dotted)."""
    fig = Fig()
    hover = template("arch.norm.fig.train_hover", lang)
    for color, placement in zip(colors(2), PLACEMENTS):
        name = text(f"arch.norm.{placement}", lang)
        steps = list(range(1, result.steps + 1))
        fig.add_scatter(x=steps, y=result.train_loss[placement].tolist(), mode="lines", opacity=0.45,
                        line=dict(color=color, width=1, dash=PLACEMENT_DASH[placement]),
                        name=text("arch.norm.fig.train", lang, placement=name), hoverinfo="text",
                        hovertext=[hover.format(placement=name, step=s, loss=v)
                                   for s, v in zip(steps, result.train_loss[placement])])
        fig.add_scatter(x=list(result.eval_steps), y=result.eval_loss[placement].tolist(), mode="lines+markers",
                        line=dict(color=color, width=3, dash=PLACEMENT_DASH[placement]),
                        name=text("arch.norm.fig.held", lang, placement=name), hoverinfo="text",
                        hovertext=[hover.format(placement=name, step=s, loss=v)
                                   for s, v in zip(result.eval_steps, result.eval_loss[placement])])
    level = unigram_loss()
    fig.add_scatter(x=[1, result.steps], y=[level, level], mode="lines", line=dict(color="black", dash="dot"),
                    name=text("arch.norm.fig.unigram", lang, loss=level), hoverinfo="skip")
    fig.update_xaxes(title_text=text("arch.norm.fig.step_axis", lang))
    fig.update_yaxes(title_text=text("arch.norm.fig.loss_axis", lang))
    return fig.finish("", height=420, lang=lang)


# C19's criterion at one depth: the last block's gradient over the first block's is at least
# POST_GROWTH_MIN for post-norm (the gradient shrinks on its way down through every norm) and at
# most PRE_GROWTH_MAX for pre-norm (the identity path carries it unscaled).
POST_GROWTH_MIN = 3.0
PRE_GROWTH_MAX = 1.5


def placement_separates(result: InitGradients, depth: int) -> bool:
    """C19 at `depth`: post-norm's last/first gradient ratio >= POST_GROWTH_MIN and pre-norm's
    <= PRE_GROWTH_MAX."""
    return bool(result.ratio("post", depth) >= POST_GROWTH_MIN and result.ratio("pre", depth) <= PRE_GROWTH_MAX)


def init_summary(result: InitGradients, lang: str) -> str:
    lines = []
    for depth in result.depths:
        verdict = "arch.norm.verdict.grows" if placement_separates(result, depth) else "arch.norm.verdict.level"
        lines.append(text("arch.norm.init.line", lang, depth=depth,
                          post=result.ratio("post", depth), pre=result.ratio("pre", depth),
                          post_first=float(result.grad_norms[("post", depth)][0]),
                          pre_first=float(result.grad_norms[("pre", depth)][0]))
                     + " " + text(verdict, lang, post_min=POST_GROWTH_MIN, pre_max=PRE_GROWTH_MAX))
    return "\n".join(lines)


def training_summary(result: Training, lang: str) -> str:
    return text("arch.norm.train.summary", lang, layers=result.n_layers, lr=result.lr, steps=result.steps,
                d=result.config.d_model, post=result.final_eval("post"), pre=result.final_eval("pre"),
                unigram=unigram_loss(), post_s=result.seconds["post"], pre_s=result.seconds["pre"])


if __name__ == "__main__":
    main()
