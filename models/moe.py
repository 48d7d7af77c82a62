"""Mixture-of-experts feed-forward: a top-k router and experts that run on the tokens routed to
them, in the variants real checkpoints use.

    y = sum over the k picked experts e of  w_e(x) * expert_e(x)   [+ shared expert(s)(x)]

Router variants (MoEConfig.scoring):
- "softmax": p = softmax(logits) over all experts, pick the k largest, weights = their p,
  renormalised to sum to 1 or not (Mixtral: always; Qwen2-MoE, OLMoE: norm_topk_prob).
- "topk_softmax": pick the k largest logits, weights = softmax over those k (gpt-oss). The same
  weights as "softmax" with renormalisation, computed in another order.
- "sigmoid": s = sigmoid(logits) per expert, independent of the others (DeepSeek-V3); weights =
  the picked s, renormalised or not, times routed_scale.
A selection bias (DeepSeek-V3's auxiliary-loss-free balancing) is added to the scores for the
choice of the k experts only: it changes which experts run, never the weights they get. It is
not trained by gradients; `update_selection_bias` nudges it toward equal load between batches.

Shared experts (Qwen2-MoE, DeepSeek) run on every token beside the routed ones, optionally
scaled by a sigmoid gate (Qwen2-MoE).

Auxiliary losses for training (MoEAux): the Switch/Mixtral load-balancing loss
E * sum_i f_i P_i (f_i: routed assignments per token to expert i, P_i: mean router probability),
and DeepSeek-V3's sequence-wise loss (the same product per sequence, f scaled to 1 at balance).

Grouped execution: the (token, slot) assignments are sorted by expert, each expert runs once on
the contiguous block of its tokens, and the weighted results are added back to their tokens.
No expert sees a token not routed to it (`Experts.every_expert` is the dense reference that runs
every expert on every token, for tests and cost comparisons). Autograd flows through all of it.

Standalone use:  y, aux = MoEFeedForward(cfg)(x)   x (B, T, d) -> y (B, T, d);  aux.loss
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Optional

import torch
import torch.nn as nn
import torch.nn.functional as F

from .layers import ACTIVATIONS, GatedMLP

SCORINGS = ("softmax", "topk_softmax", "sigmoid")
Record = Optional[Callable[[str, torch.Tensor], object]]  # record(point, value), or None


@dataclass(frozen=True)
class MoEConfig:
    d_model: int
    d_expert: int                    # hidden width of each routed expert's gated MLP
    n_experts: int                   # routed experts
    top_k: int                       # experts each token is sent to
    scoring: str = "softmax"         # "softmax" | "topk_softmax" | "sigmoid" (see module doc)
    renormalize: bool = True         # picked weights divided by their sum
    routed_scale: float = 1.0        # DeepSeek-V3 routed_scaling_factor on the routed weights
    router_bias: bool = False        # gpt-oss: the router's linear layer has a bias
    selection_bias: bool = False     # DeepSeek-V3: a bias used for choosing experts only
    n_shared: int = 0                # shared experts (run on every token), fused into one MLP
    d_shared: int = 0                # hidden width of that MLP; 0 -> n_shared * d_expert
    shared_gate: bool = False        # Qwen2-MoE: shared output scaled by sigmoid(x . w)
    act: str = "silu"                # expert activation (SwiGLU with "silu")
    expert_bias: bool = False        # gpt-oss: biases on the experts' projections
    swiglu_limit: Optional[float] = None  # gpt-oss clamped SwiGLU (gate <= limit, |up| <= limit)
    swiglu_alpha: float = 1.702      # gpt-oss: glu = gate * sigmoid(alpha * gate), out (up + 1) * glu
    aux_loss_coef: float = 0.0       # weight of the Switch/Mixtral load-balancing loss in aux.loss
    seq_aux_loss_coef: float = 0.0   # weight of DeepSeek-V3's sequence-wise loss in aux.loss

    def __post_init__(self):
        if self.scoring not in SCORINGS:
            raise ValueError(f"scoring {self.scoring!r} not in {SCORINGS}")
        if not 1 <= self.top_k <= self.n_experts:
            raise ValueError(f"top_k={self.top_k} must be between 1 and n_experts={self.n_experts}")
        if self.act not in ACTIVATIONS:
            raise ValueError(f"unsupported expert activation {self.act!r}")

    @property
    def shared_width(self) -> int:
        return self.d_shared or self.n_shared * self.d_expert


# --- the router -----------------------------------------------------------------------------


@dataclass
class Routing:
    """One routing decision for N tokens."""
    logits: torch.Tensor    # (N, E) router logits
    probs: torch.Tensor     # (N, E) fp32: softmax probabilities, or sigmoid scores
    picks: torch.Tensor     # (N, k) long: the chosen experts, best first
    weights: torch.Tensor   # (N, k) the weight of each chosen expert's output


class Router(nn.Module):
    def __init__(self, cfg: MoEConfig):
        super().__init__()
        self.cfg = cfg
        self.weight = nn.Parameter(torch.empty(cfg.n_experts, cfg.d_model))      # (E, d)
        nn.init.normal_(self.weight, std=cfg.d_model ** -0.5)
        self.bias = nn.Parameter(torch.zeros(cfg.n_experts)) if cfg.router_bias else None
        # A Parameter so that checkpoints carry it, but never trained by gradients: it moves
        # only through update_selection_bias (exclude it from the optimizer: requires_grad False).
        self.selection_bias = (nn.Parameter(torch.zeros(cfg.n_experts), requires_grad=False)
                               if cfg.selection_bias else None)

    def forward(self, x: torch.Tensor) -> Routing:
        """x (N, d) -> Routing."""
        cfg, k = self.cfg, self.cfg.top_k
        logits = F.linear(x, self.weight, self.bias)                            # (N, E)
        if cfg.scoring == "topk_softmax":
            choice = logits if self.selection_bias is None else logits + self.selection_bias
            picks = choice.topk(k, dim=-1).indices                              # (N, k)
            weights = torch.softmax(logits.gather(-1, picks), dim=-1)           # (N, k)
            return Routing(logits, torch.softmax(logits.float(), dim=-1), picks, weights)
        if cfg.scoring == "softmax":
            probs = torch.softmax(logits.float(), dim=-1)                       # (N, E) fp32
        else:
            probs = torch.sigmoid(logits.float())                               # (N, E) fp32
        if self.selection_bias is None:
            weights, picks = probs.topk(k, dim=-1)                              # (N, k) each
        else:
            # the bias decides which experts run; their weights come from the unbiased scores
            picks = (probs + self.selection_bias.float()).topk(k, dim=-1).indices
            weights = probs.gather(-1, picks)
        if cfg.renormalize:
            weights = weights / weights.sum(dim=-1, keepdim=True)
        if cfg.routed_scale != 1.0:
            weights = weights * cfg.routed_scale
        return Routing(logits, probs, picks, weights.to(x.dtype))


# --- the experts ----------------------------------------------------------------------------


class Experts(nn.Module):
    """E gated MLPs stored as 3-D tensors: expert e computes
    down_e(act(gate_e(x)) * up_e(x)), with w_gate_up[e] = [gate_e; up_e] (2F, d), w_down[e] (d, F)."""

    def __init__(self, cfg: MoEConfig):
        super().__init__()
        e, d, f = cfg.n_experts, cfg.d_model, cfg.d_expert
        self.cfg, self.d_expert, self.act = cfg, f, ACTIVATIONS[cfg.act]
        self.w_gate_up = nn.Parameter(torch.empty(e, 2 * f, d))                 # (E, 2F, d)
        self.w_down = nn.Parameter(torch.empty(e, d, f))                        # (E, d, F)
        nn.init.normal_(self.w_gate_up, std=d ** -0.5)
        nn.init.normal_(self.w_down, std=f ** -0.5)
        self.b_gate_up = nn.Parameter(torch.zeros(e, 2 * f)) if cfg.expert_bias else None  # (E, 2F)
        self.b_down = nn.Parameter(torch.zeros(e, d)) if cfg.expert_bias else None          # (E, d)

    def glu(self, h: torch.Tensor) -> torch.Tensor:
        """(n, 2F) gate and up projections -> (n, F) gated hidden activations."""
        gate, up = h.split(self.d_expert, dim=-1)
        limit = self.cfg.swiglu_limit
        if limit is None:
            return self.act(gate) * up
        # gpt-oss: clamp both halves, a sigmoid-weighted gate with slope alpha, and up + 1
        gate, up = gate.clamp(max=limit), up.clamp(min=-limit, max=limit)
        return (up + 1) * (gate * torch.sigmoid(gate * self.cfg.swiglu_alpha))

    def expert(self, e: int, x: torch.Tensor) -> torch.Tensor:
        """Expert e on its tokens x (n, d) -> (n, d)."""
        b_gu = None if self.b_gate_up is None else self.b_gate_up[e]
        b_dn = None if self.b_down is None else self.b_down[e]
        return F.linear(self.glu(F.linear(x, self.w_gate_up[e], b_gu)), self.w_down[e], b_dn)

    def forward(self, x: torch.Tensor, picks: torch.Tensor, weights: torch.Tensor) -> torch.Tensor:
        """Grouped: x (N, d), picks (N, k), weights (N, k) -> (N, d) = sum_j weights[:, j] *
        expert_{picks[:, j]}(x), each expert run once on the tokens routed to it."""
        n, k = picks.shape
        if n == 1:  # one decode token: its k experts in turn, no sorting
            out = None
            for j, e in sorted(enumerate(picks[0].tolist()), key=lambda je: je[1]):
                y = self.expert(e, x) * weights[:, j:j + 1].to(x.dtype)        # (1, d)
                out = y if out is None else out + y
            return out
        flat = picks.reshape(-1)                                 # (N*k,) expert of (token, slot)
        order = torch.argsort(flat, stable=True)                 # (N*k,) grouped by expert
        counts = torch.bincount(flat, minlength=self.cfg.n_experts).tolist()  # tokens per expert
        token = order // k                                       # (N*k,) token of each assignment
        xs = x[token]                                            # (N*k, d) tokens, grouped
        ys, start = [], 0
        for e, count in enumerate(counts):
            if count:
                ys.append(self.expert(e, xs[start:start + count]))   # (count, d)
                start += count
        ys = torch.cat(ys) * weights.reshape(-1)[order, None].to(x.dtype)   # (N*k, d)
        return x.new_zeros(n, x.shape[-1]).index_add(0, token, ys)           # (N, d)

    def every_expert(self, x: torch.Tensor, picks: torch.Tensor, weights: torch.Tensor) -> torch.Tensor:
        """The dense reference: every expert on every token (N, E, d), then the picked ones
        weighted and summed. E/k times the expert compute of `forward`, same result."""
        all_out = torch.stack([self.expert(e, x) for e in range(self.cfg.n_experts)], dim=1)
        picked = all_out.gather(1, picks[..., None].expand(-1, -1, x.shape[-1]))   # (N, k, d)
        return (picked * weights[..., None].to(x.dtype)).sum(dim=1)                 # (N, d)


# --- auxiliary losses -----------------------------------------------------------------------


@dataclass
class MoEAux:
    """What one MoE layer's forward reports besides its output, for training and analysis.
    Tensors keep their graph: the losses are differentiable through the router probabilities."""
    cfg: MoEConfig
    logits: torch.Tensor     # (B, T, E)
    probs: torch.Tensor      # (B, T, E) fp32 softmax probabilities or sigmoid scores
    picks: torch.Tensor      # (B, T, k)
    weights: torch.Tensor    # (B, T, k)

    def load(self) -> torch.Tensor:
        """(E,) assignments per expert (each token counts once for each of its k picks)."""
        return torch.bincount(self.picks.reshape(-1), minlength=self.cfg.n_experts)

    def _shares(self) -> torch.Tensor:
        """(B, T, E) per-token router distribution: probs, or sigmoid scores normalised to 1."""
        if self.cfg.scoring == "sigmoid":
            return self.probs / self.probs.sum(dim=-1, keepdim=True)
        return self.probs

    def switch_loss(self) -> torch.Tensor:
        """Switch/Mixtral load-balancing loss: E * sum_i f_i * P_i over all B*T tokens, with
        f_i = assignments to expert i per token (the k picks all count; sums to k) and P_i the
        mean router probability of expert i. k at perfect balance. Equals transformers'
        load_balancing_loss_func for one layer."""
        e = self.cfg.n_experts
        n_tokens = self.picks.shape[0] * self.picks.shape[1]
        f = self.load().to(torch.float32) / n_tokens                         # (E,)
        p = self._shares().reshape(-1, e).float().mean(dim=0)                 # (E,)
        return e * (f * p).sum()

    def sequence_loss(self) -> torch.Tensor:
        """DeepSeek-V3's sequence-wise balance loss: per sequence, sum_i f_i * P_i with
        f_i = E / (k T) * (tokens of the sequence routed to i) (1 at balance) and P_i the mean
        normalised score; averaged over the batch. 1 at perfect balance."""
        b, t, k = self.picks.shape
        e = self.cfg.n_experts
        counts = torch.zeros(b, e, device=self.picks.device).scatter_add_(
            1, self.picks.reshape(b, t * k), torch.ones(b, t * k, device=self.picks.device))  # (B, E)
        f = counts * (e / (k * t))                                            # (B, E)
        p = self._shares().float().mean(dim=1)                                # (B, E)
        return (f * p).sum(dim=-1).mean()

    @property
    def loss(self) -> torch.Tensor:
        """The weighted sum the config asks for (0 when both coefficients are 0)."""
        total = self.probs.new_zeros(())
        if self.cfg.aux_loss_coef:
            total = total + self.cfg.aux_loss_coef * self.switch_loss()
        if self.cfg.seq_aux_loss_coef:
            total = total + self.cfg.seq_aux_loss_coef * self.sequence_loss()
        return total


@torch.no_grad()
def update_selection_bias(router: Router, load: torch.Tensor, rate: float = 1e-3) -> None:
    """DeepSeek-V3's auxiliary-loss-free balancing step, between batches: raise the selection
    bias of under-loaded experts by `rate`, lower it for over-loaded ones
    (b_i += rate * sign(mean load - load_i)). load: (E,) assignments, e.g. MoEAux.load()."""
    if router.selection_bias is None:
        raise ValueError("this router has no selection bias (MoEConfig.selection_bias=False)")
    load = load.float()
    router.selection_bias.add_(rate * torch.sign(load.mean() - load))


# --- the feed-forward -----------------------------------------------------------------------


class MoEFeedForward(nn.Module):
    """Router + grouped routed experts [+ shared expert(s)]. forward(x (B, T, d)) -> (y (B, T, d),
    MoEAux). `record(point, value)` receives router_logits / router_probs (B, T, E) and
    expert_picks / expert_weights (B, T, k) when given (see recorder_for)."""

    def __init__(self, cfg: MoEConfig):
        super().__init__()
        self.cfg = cfg
        self.router = Router(cfg)
        self.experts = Experts(cfg)
        self.shared = GatedMLP(cfg.d_model, cfg.shared_width, cfg.act) if cfg.shared_width else None
        self.shared_gate = nn.Linear(cfg.d_model, 1, bias=False) if cfg.shared_gate else None

    def forward(self, x: torch.Tensor, record: Record = None):
        b, t, d = x.shape
        h = x.reshape(b * t, d)                                                  # (N, d)
        r = self.router(h)
        y = self.experts(h, r.picks, r.weights)                                  # (N, d)
        if self.shared is not None:
            shared = self.shared(h)                                              # (N, d)
            if self.shared_gate is not None:
                shared = torch.sigmoid(self.shared_gate(h)) * shared
            y = y + shared
        aux = MoEAux(self.cfg, r.logits.view(b, t, -1), r.probs.view(b, t, -1),
                     r.picks.view(b, t, -1), r.weights.view(b, t, -1))
        if record is not None:
            for point, value in (("router_logits", aux.logits), ("router_probs", aux.probs),
                                 ("expert_picks", aux.picks), ("expert_weights", aux.weights)):
                record(point, value)
        return y.view(b, t, d), aux


def recorder_for(ctx, layer: int) -> Record:
    """The `record` callable a family block passes to MoEFeedForward: saves through the
    forward's Recorder (models.forward.ForwardContext.record) at this layer; None without one,
    so that an unrecorded forward pays nothing."""
    if ctx.recorder is None:
        return None
    return lambda point, value: ctx.record(point, layer, value)


def moe_config(config) -> MoEConfig:
    """The MoEConfig of a checkpoint's MoE layers, from its models.config.ModelConfig."""
    return MoEConfig(d_model=config.d_model, d_expert=config.d_expert, n_experts=config.n_experts,
                     top_k=config.n_experts_per_tok, scoring=config.router_scoring,
                     renormalize=config.router_renormalize, router_bias=config.router_bias,
                     d_shared=config.d_shared_expert, shared_gate=config.shared_expert_gate,
                     act=config.hidden_act if config.hidden_act in ACTIVATIONS else "silu",
                     expert_bias=config.expert_bias, swiglu_limit=config.swiglu_limit,
                     swiglu_alpha=config.swiglu_alpha, aux_loss_coef=config.router_aux_loss_coef)
