"""Model configuration: one dataclass for every supported family, built from a Hugging Face
config.json through one explicit mapping (`config_from_hf`)."""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Optional

FULL = "full_attention"
SLIDING = "sliding_attention"

# HF `architectures[0]` -> our family. Anything else is refused: we never run remote code.
ARCHITECTURES = {
    "LlamaForCausalLM": "llama",
    "MistralForCausalLM": "llama",
    "Qwen2ForCausalLM": "llama",
    "Gemma3ForCausalLM": "gemma3",
    "MixtralForCausalLM": "mixtral",
    "Qwen2MoeForCausalLM": "qwen2_moe",
    "OlmoeForCausalLM": "olmoe",
    "GptOssForCausalLM": "gpt_oss",
}
# `model_type` fallback when `architectures` is absent.
MODEL_TYPES = {"llama": "llama", "mistral": "llama", "qwen2": "llama", "gemma3_text": "gemma3",
               "mixtral": "mixtral", "qwen2_moe": "qwen2_moe", "olmoe": "olmoe", "gpt_oss": "gpt_oss"}


class UnsupportedModelError(ValueError):
    """The checkpoint's architecture or a config option is one our modules do not implement."""


def kv_elements(n_kv_heads: float, head_dim: int) -> float:
    """Numbers a K/V cache holds per token and layer: a key and a value of head_dim for each KV
    head, 2 x n_kv_heads x head_dim. The query heads do not appear (C3). n_kv_heads may be a
    fraction: the GQA heads a cache of another layout (MLA's latent) would equal."""
    return 2 * n_kv_heads * head_dim


@dataclass
class ModelConfig:
    family: str                      # "llama" (Llama/Mistral/Qwen2), "gemma3", or an MoE family:
                                     # "mixtral", "qwen2_moe", "olmoe", "gpt_oss"
    vocab_size: int
    d_model: int                     # residual stream width
    n_layers: int
    n_heads: int                     # query heads
    n_kv_heads: int                  # key/value heads (== n_heads: MHA, 1: MQA, else GQA)
    d_ff: int                        # hidden width of the gated MLP
    head_dim: int = 0                # 0 -> d_model // n_heads
    rope_theta: float = 10000.0      # RoPE base of full-attention layers
    rope_local_theta: Optional[float] = None  # Gemma 3: base of sliding layers (None -> rope_theta)
    rope_scaling: Optional[dict] = None       # {"rope_type": "linear"|"llama3", ...} or None
    norm_eps: float = 1e-6
    max_position_embeddings: int = 2048
    tie_embeddings: bool = False
    qkv_bias: bool = False           # Qwen2 (and Llama attention_bias): biases on q/k/v
    o_bias: bool = False             # Llama attention_bias also biases o_proj; Qwen2 does not
    hidden_act: str = "silu"         # "silu" (SwiGLU) or "gelu_pytorch_tanh" (GeGLU)
    sliding_window: Optional[int] = None
    layer_types: list = field(default_factory=list)  # per layer: FULL or SLIDING
    query_pre_attn_scalar: Optional[float] = None     # Gemma: scale = this ** -0.5
    final_logit_softcapping: Optional[float] = None
    attn_logit_softcapping: Optional[float] = None
    bos_token_id: Optional[int] = None
    eos_token_ids: list = field(default_factory=list)
    architecture: str = ""
    # Mixture of experts (models/moe.py); n_experts == 0: a dense model
    n_experts: int = 0               # routed experts per MoE layer
    n_experts_per_tok: int = 0       # k: experts each token is sent to
    d_expert: int = 0                # hidden width of each routed expert
    router_scoring: str = "softmax"  # models.moe.MoEConfig.scoring: softmax | topk_softmax | sigmoid
    router_renormalize: bool = True  # the k picked weights divided by their sum
    router_bias: bool = False        # gpt-oss: the router's linear layer has a bias
    d_shared_expert: int = 0         # Qwen2-MoE: width of the shared expert beside the routed ones
    shared_expert_gate: bool = False  # Qwen2-MoE: sigmoid gate on the shared expert's output
    expert_bias: bool = False        # gpt-oss: biases on the experts' projections
    swiglu_limit: Optional[float] = None  # gpt-oss clamped SwiGLU in the experts
    swiglu_alpha: float = 1.702      # gpt-oss: gate * sigmoid(alpha * gate)
    dense_layers: list = field(default_factory=list)  # MoE models: layers with a dense d_ff MLP
    router_aux_loss_coef: float = 0.0  # training weight of the load-balancing loss (config.json)
    clip_qkv: Optional[float] = None  # OLMoE: q, k, v clamped to [-clip, clip]

    def __post_init__(self):
        if self.head_dim == 0:
            self.head_dim = self.d_model // self.n_heads
        if self.n_heads % self.n_kv_heads:
            raise UnsupportedModelError(
                f"n_heads={self.n_heads} is not a multiple of n_kv_heads={self.n_kv_heads}")
        if self.head_dim % 2:
            raise UnsupportedModelError(f"RoPE needs an even head_dim, got {self.head_dim}")
        if not self.layer_types:
            kind = SLIDING if self.sliding_window else FULL
            self.layer_types = [kind] * self.n_layers
        if len(self.layer_types) != self.n_layers:
            raise UnsupportedModelError(
                f"layer_types has {len(self.layer_types)} entries for {self.n_layers} layers")
        if SLIDING in self.layer_types and not self.sliding_window:
            raise UnsupportedModelError("sliding layers present but sliding_window is not set")

    def is_moe_layer(self, layer: int) -> bool:
        """Whether this layer's feed-forward is a mixture of experts (else a dense MLP)."""
        return self.n_experts > 0 and layer not in self.dense_layers

    @property
    def n_rep(self) -> int:
        """Query heads per KV head (the GQA group size)."""
        return self.n_heads // self.n_kv_heads

    @property
    def attn_scale(self) -> float:
        if self.query_pre_attn_scalar is not None:
            return self.query_pre_attn_scalar ** -0.5
        return 1.0 / math.sqrt(self.head_dim)

    def layer_window(self, layer: int) -> Optional[int]:
        return self.sliding_window if self.layer_types[layer] == SLIDING else None

    def layer_rope_theta(self, layer: int) -> float:
        if self.layer_types[layer] == SLIDING and self.rope_local_theta is not None:
            return self.rope_local_theta
        return self.rope_theta

    def kv_elements_per_token_layer(self, n_kv_heads: Optional[int] = None) -> int:
        """One layer's K and V for one token: kv_elements(kv heads, head_dim). n_kv_heads: the
        same shape with another number of KV heads (n_heads: its MHA twin)."""
        return kv_elements(self.n_kv_heads if n_kv_heads is None else n_kv_heads, self.head_dim)

    def kv_bytes_per_token(self, bytes_per_elem: int, n_kv_heads: Optional[int] = None) -> int:
        """2 (K and V) x layers x kv heads x head_dim x bytes. Query heads do not appear (C3).
        n_kv_heads: the same shape with another number of KV heads (n_heads: its MHA twin)."""
        return self.n_layers * self.kv_elements_per_token_layer(n_kv_heads) * bytes_per_elem

    def kv_layer_capacities(self) -> list:
        """Per layer, the tokens its cache holds at most: its sliding window, None (no cap) for
        a full-attention layer. A run that restricts the mask has its own: KVCache.capacities()."""
        return [self.layer_window(i) for i in range(self.n_layers)]

    def kv_layer_bytes(self, tokens: int, bytes_per_elem: int, capacity: Optional[int] = None) -> int:
        """One layer's K and V after `tokens` tokens: 2 x kv heads x head_dim x min(tokens,
        capacity) x bytes. capacity: the slots the layer keeps (window, or sinks + window);
        None for a full cache."""
        held = tokens if capacity is None else min(tokens, capacity)
        return self.kv_elements_per_token_layer() * held * bytes_per_elem

    def kv_bytes_per_layer(self, tokens: int, bytes_per_elem: int,
                           capacities: Optional[list] = None) -> list:
        """kv_layer_bytes of every layer, with one capacity per layer (None: full); by default
        each layer's own (kv_layer_capacities)."""
        caps = self.kv_layer_capacities() if capacities is None else list(capacities)
        if len(caps) != self.n_layers:
            raise ValueError(f"{len(caps)} capacities given for {self.n_layers} layers")
        return [self.kv_layer_bytes(tokens, bytes_per_elem, c) for c in caps]

    def kv_bytes(self, tokens: int, bytes_per_elem: int, capacities: Optional[list] = None) -> int:
        """The whole cache after `tokens` tokens: kv_bytes_per_layer summed. Without windows it
        is kv_bytes_per_token x tokens; windowed layers stop growing at their capacity (C9)."""
        return sum(self.kv_bytes_per_layer(tokens, bytes_per_elem, capacities))

    def n_params(self) -> int:
        d, f, v = self.d_model, self.d_ff, self.vocab_size
        q = self.n_heads * self.head_dim
        kv = self.n_kv_heads * self.head_dim
        attn = d * (q + 2 * kv) + q * d + (q + 2 * kv if self.qkv_bias else 0) + (d if self.o_bias else 0)
        mlp = 3 * d * f
        norms = (4 if self.family == "gemma3" else 2) * d
        qk_norm = 2 * self.head_dim if self.family == "gemma3" else 0
        per_layer = attn + mlp + norms + qk_norm
        return v * d * (1 if self.tie_embeddings else 2) + self.n_layers * per_layer + d


def _rope_params(hf: dict, layer_type: str) -> dict:
    """Return {"rope_theta", "rope_type", ...} for a layer type, from transformers 5
    `rope_parameters` (flat, or keyed by layer type) or the 4.x `rope_theta`/`rope_scaling`."""
    params = hf.get("rope_parameters")
    if isinstance(params, dict) and params:
        if layer_type in params and isinstance(params[layer_type], dict):
            return dict(params[layer_type])
        if "rope_theta" in params or "rope_type" in params:
            return dict(params)
    out = dict(hf.get("rope_scaling") or {})
    if "type" in out and "rope_type" not in out:
        out["rope_type"] = out.pop("type")
    theta = hf.get("rope_theta", 10000.0)
    if layer_type == SLIDING and hf.get("rope_local_base_freq") is not None:
        theta, out = hf["rope_local_base_freq"], {}
    out["rope_theta"] = theta
    return out


def _scaling_or_none(params: dict) -> Optional[dict]:
    kind = params.get("rope_type", "default")
    if kind in (None, "default"):
        return None
    if kind not in ("linear", "llama3"):
        raise UnsupportedModelError(f"RoPE scaling type {kind!r} is not implemented")
    return params


def config_from_hf(hf: dict[str, Any]) -> ModelConfig:
    """The one explicit mapping from a Hugging Face config.json dict to ModelConfig."""
    archs = hf.get("architectures") or []
    arch = archs[0] if archs else ""
    family = ARCHITECTURES.get(arch) or (MODEL_TYPES.get(hf.get("model_type", "")) if not arch else None)
    if family is None:
        raise UnsupportedModelError(
            f"unsupported architecture {arch or hf.get('model_type')!r}; supported: "
            + ", ".join(sorted(ARCHITECTURES)))
    model_type = hf.get("model_type", "")
    if hf.get("mlp_bias"):
        raise UnsupportedModelError("mlp_bias=True is not implemented")
    n_layers = hf["num_hidden_layers"]
    n_heads = hf["num_attention_heads"]
    sliding_window = hf.get("sliding_window")
    layer_types = list(hf.get("layer_types") or [])
    if family == "gemma3" and not layer_types:
        pattern = hf.get("sliding_window_pattern") or hf.get("_sliding_window_pattern") or 6
        layer_types = [FULL if (i + 1) % pattern == 0 else SLIDING for i in range(n_layers)]
    if model_type == "qwen2" and not hf.get("use_sliding_window", False):
        # Qwen2 ships a sliding_window value but only uses it when use_sliding_window is set.
        sliding_window, layer_types = None, [FULL] * n_layers
    if not layer_types:  # Llama / Mistral: one kind for every layer
        layer_types = [SLIDING if sliding_window else FULL] * n_layers
    if SLIDING not in layer_types:
        sliding_window = None
    full = _rope_params(hf, FULL)
    local = _rope_params(hf, SLIDING) if SLIDING in layer_types else full
    if family == "gemma3" and _scaling_or_none(local) is not None:
        raise UnsupportedModelError("RoPE scaling on Gemma 3 sliding layers is not implemented")
    moe = _moe_fields(hf, family, n_layers)
    eos = hf.get("eos_token_id")
    eos_ids = [eos] if isinstance(eos, int) else list(eos or [])
    gemma = family == "gemma3"
    return ModelConfig(
        family=family,
        architecture=arch or model_type,
        vocab_size=hf["vocab_size"],
        d_model=hf["hidden_size"],
        n_layers=n_layers,
        n_heads=n_heads,
        n_kv_heads=hf.get("num_key_value_heads") or n_heads,
        d_ff=hf["intermediate_size"],
        head_dim=hf.get("head_dim") or 0,
        rope_theta=float(full["rope_theta"]),
        rope_local_theta=float(local["rope_theta"]) if gemma else None,
        rope_scaling=_scaling_or_none(full),
        norm_eps=hf.get("rms_norm_eps", 1e-6),
        max_position_embeddings=hf.get("max_position_embeddings", 2048),
        tie_embeddings=hf.get("tie_word_embeddings", gemma),
        qkv_bias=model_type == "qwen2" or bool(hf.get("qkv_bias") or hf.get("attention_bias", False)),
        o_bias=model_type != "qwen2" and bool(hf.get("attention_bias", False)),
        hidden_act=hf.get("hidden_activation") or hf.get("hidden_act") or "silu",
        sliding_window=sliding_window,
        layer_types=layer_types,
        query_pre_attn_scalar=hf.get("query_pre_attn_scalar") if gemma else None,
        final_logit_softcapping=hf.get("final_logit_softcapping"),
        attn_logit_softcapping=hf.get("attn_logit_softcapping"),
        bos_token_id=hf.get("bos_token_id"),
        eos_token_ids=eos_ids,
        **moe,
    )


def _moe_fields(hf: dict[str, Any], family: str, n_layers: int) -> dict:
    """The MoE part of the mapping: config.json names -> ModelConfig fields (empty for dense
    families). Mixtral: num_local_experts, softmax top-k renormalised; Qwen2-MoE and OLMoE:
    num_experts, norm_topk_prob, moe_intermediate_size (Qwen2-MoE) with a gated shared expert
    and dense layers (mlp_only_layers, decoder_sparse_step); gpt-oss: num_local_experts, router
    bias, softmax over the top-k logits, expert biases, clamped SwiGLU."""
    if family not in ("mixtral", "qwen2_moe", "olmoe", "gpt_oss"):
        return {}
    n_experts = hf.get("num_local_experts") or hf.get("num_experts")
    out = dict(n_experts=n_experts, n_experts_per_tok=hf["num_experts_per_tok"],
               d_expert=hf.get("moe_intermediate_size") or hf["intermediate_size"],
               router_aux_loss_coef=float(hf.get("router_aux_loss_coef") or 0.0))
    if family == "mixtral":
        out.update(router_renormalize=True)
    elif family in ("qwen2_moe", "olmoe"):
        out.update(router_renormalize=bool(hf.get("norm_topk_prob", False)))
    if family == "qwen2_moe":
        step = hf.get("decoder_sparse_step") or 1
        only = set(hf.get("mlp_only_layers") or [])
        out.update(d_shared_expert=hf.get("shared_expert_intermediate_size") or 0,
                   shared_expert_gate=True,
                   dense_layers=[i for i in range(n_layers) if i in only or (i + 1) % step])
    if family == "olmoe":
        out.update(clip_qkv=hf.get("clip_qkv"))
    if family == "gpt_oss":
        out.update(router_scoring="topk_softmax", router_bias=True, expert_bias=True,
                   swiglu_limit=float(hf.get("swiglu_limit", 7.0)),
                   swiglu_alpha=float(hf.get("swiglu_alpha", 1.702)))
    return out
