"""Greedy decode speed of our MoE modules vs transformers on the same MoE checkpoint, side by
side in one process (same weights, dtype, threads and machine load), with the greedy tokens
compared.

    python -m bench.moe_decode --tiny                       # a random Mixtral (save_pretrained, temp dir)
    python -m bench.moe_decode --model explorer/moe/checkpoints/<name> --prompt 64 --new-tokens 64
    python -m bench.moe_decode --model <folder> --rounds 7 --threads 2 --out /tmp/moe.md

Any folder our loader reads (Mixtral, Qwen2-MoE, OLMoE, gpt-oss; config.json + safetensors)
works when transformers reads it too. A checkpoint of an architecture transformers has no class
for (the project's own explorer-moe models, explorer/moe/checkpoints/) runs on transformers'
side as its Mixtral twin: the same tensors in a MixtralForCausalLM built in memory (Llama
attention, softmax top-k renormalised, SwiGLU experts: the same computation), checked against
ours on the prompt's logits before timing. Mixtral has no selection bias: a model trained with
one is timed with it zeroed on both sides (the table says so; the work per token is the same).
The prompt is random token ids (seeded): the speed of a
decode step does not depend on which tokens they are, and a folder need not hold a tokenizer.
Each round decodes once with ours and once with transformers, alternating which goes first;
a side's tokens/s counts the decode steps only (after the prefill), and the table gives the
median over rounds and the ratio of medians. Absolute tokens/s drift with machine load: read
the ratio, measured in this one run."""
from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import torch

# our families whose checkpoints transformers reads with from_pretrained
TRANSFORMERS_FAMILIES = ("mixtral", "qwen2_moe", "olmoe", "gpt_oss")
TINY_MIXTRAL = dict(vocab_size=1024, hidden_size=256, intermediate_size=512, num_hidden_layers=4,
                    num_attention_heads=8, num_key_value_heads=2, max_position_embeddings=1024,
                    num_local_experts=8, num_experts_per_tok=2)


def save_tiny_mixtral(folder: Path, seed: int = 0) -> Path:
    """A random-init MixtralForCausalLM written with save_pretrained (the on-disk format)."""
    import transformers as tf
    torch.manual_seed(seed)
    tf.MixtralForCausalLM(tf.MixtralConfig(**TINY_MIXTRAL)).save_pretrained(folder)
    return folder


def mixtral_twin(model):
    """transformers' MixtralForCausalLM holding our model's tensors (in transformers' in-memory
    layout: experts fused as (E, 2F, d) gate_up_proj and (E, d, F) down_proj, as ours are).
    Only for our Llama-attention MoE blocks with a plain softmax, renormalised, SwiGLU MoE."""
    import transformers as tf

    from models.llama import LlamaAttention
    from models.moe import MoEFeedForward
    c = model.config
    for i, block in enumerate(model.blocks):
        mlp = getattr(block, "mlp", None)
        ok = isinstance(getattr(block, "attn", None), LlamaAttention) and isinstance(mlp, MoEFeedForward)
        m = mlp.cfg if ok else None
        if not ok or m.scoring != "softmax" or not m.renormalize or m.shared_width or m.expert_bias \
                or m.router_bias or m.swiglu_limit is not None or m.act != "silu" or c.qkv_bias or c.o_bias:
            raise SystemExit(f"block {i} of {c.architecture} has no Mixtral equivalent in transformers")
    hf = tf.MixtralForCausalLM(tf.MixtralConfig(
        vocab_size=c.vocab_size, hidden_size=c.d_model, intermediate_size=c.d_expert,
        num_hidden_layers=c.n_layers, num_attention_heads=c.n_heads, num_key_value_heads=c.n_kv_heads,
        head_dim=c.head_dim, max_position_embeddings=c.max_position_embeddings, rms_norm_eps=c.norm_eps,
        rope_parameters={"rope_type": "default", "rope_theta": c.rope_theta},
        sliding_window=c.sliding_window, tie_word_embeddings=c.tie_embeddings,
        num_local_experts=c.n_experts, num_experts_per_tok=c.n_experts_per_tok)).eval()
    state = {"model.embed_tokens.weight": model.embed.weight, "model.norm.weight": model.norm.weight,
             "lm_head.weight": model.lm_head_weight()}
    q_dim, kv_dim = c.n_heads * c.head_dim, c.n_kv_heads * c.head_dim
    for i, block in enumerate(model.blocks):
        hf_layer = f"model.layers.{i}"
        q, k, v = block.attn.wqkv.weight.split((q_dim, kv_dim, kv_dim))
        state.update({f"{hf_layer}.input_layernorm.weight": block.attn_norm.weight,
                      f"{hf_layer}.post_attention_layernorm.weight": block.mlp_norm.weight,
                      f"{hf_layer}.self_attn.q_proj.weight": q, f"{hf_layer}.self_attn.k_proj.weight": k,
                      f"{hf_layer}.self_attn.v_proj.weight": v,
                      f"{hf_layer}.self_attn.o_proj.weight": block.attn.wo.weight,
                      f"{hf_layer}.mlp.gate.weight": block.mlp.router.weight,
                      f"{hf_layer}.mlp.experts.gate_up_proj": block.mlp.experts.w_gate_up,
                      f"{hf_layer}.mlp.experts.down_proj": block.mlp.experts.w_down})
    hf.load_state_dict({k: v.detach().float().clone() for k, v in state.items()}, strict=True)
    return hf


def zero_selection_bias(model) -> bool:
    """Zero every router's selection bias; whether any was non-zero."""
    changed = False
    for block in model.blocks:
        bias = getattr(getattr(getattr(block, "mlp", None), "router", None), "selection_bias", None)
        if bias is not None:
            changed |= bool(bias.abs().sum() > 0)
            with torch.no_grad():
                bias.zero_()
    return changed


def decode_ours(model, prompt: torch.Tensor, new_tokens: int):
    """Prefill, then greedy decode through our KV cache: (tokens, decode seconds)."""
    from models.forward import RunOptions
    opts = RunOptions(last_logits_only=True)
    cache = model.new_cache(max_len=prompt.shape[1] + new_tokens)
    token = model(prompt, cache=cache, options=opts)[0, -1].argmax()
    tokens = [int(token)]
    t0 = time.perf_counter()
    for _ in range(new_tokens - 1):
        token = model(token.view(1, 1), cache=cache, options=opts)[0, -1].argmax()
        tokens.append(int(token))
    return tokens, time.perf_counter() - t0


def decode_transformers(model, prompt: torch.Tensor, new_tokens: int):
    """The same with transformers' model and its own cache."""
    out = model(prompt, use_cache=True, logits_to_keep=1)
    token = out.logits[0, -1].argmax()
    tokens = [int(token)]
    t0 = time.perf_counter()
    for _ in range(new_tokens - 1):
        out = model(token.view(1, 1), cache=out.cache, use_cache=True, logits_to_keep=1)
        token = out.logits[0, -1].argmax()
        tokens.append(int(token))
    return tokens, time.perf_counter() - t0


def run(folder: Path, prompt_len: int, new_tokens: int, rounds: int, threads: int, seed: int = 0,
        twin: bool = False) -> dict:
    from transformers import AutoModelForCausalLM

    from models.device import tune_cpu_allocator
    from models.loading import load_model
    tune_cpu_allocator()
    torch.set_num_threads(threads)
    ours = load_model(folder, device="cpu", dtype=torch.float32)
    if not ours.config.n_experts:
        raise SystemExit(f"{folder}: not an MoE checkpoint (no experts in its config)")
    prompt = torch.randint(0, ours.config.vocab_size, (1, prompt_len),
                           generator=torch.Generator().manual_seed(seed))
    twin = twin or ours.config.family not in TRANSFORMERS_FAMILIES
    bias_zeroed = False
    if twin:
        bias_zeroed = zero_selection_bias(ours)
        theirs = mixtral_twin(ours)
        with torch.inference_mode():
            gap = (theirs(prompt).logits - ours(prompt)).abs().max().item()
        if gap > 1e-3:
            raise SystemExit(f"the Mixtral twin disagrees with ours by {gap:.2e} on the prompt's logits")
    else:
        theirs = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32).eval()
    sides = {"ours": lambda: decode_ours(ours, prompt, new_tokens),
             "transformers": lambda: decode_transformers(theirs, prompt, new_tokens)}
    rates = {name: [] for name in sides}
    tokens = {}
    with torch.inference_mode():
        for fn in sides.values():   # warm-up: first-call allocations and lazy initialisation
            fn()
        for r in range(rounds):
            for name in (("ours", "transformers") if r % 2 == 0 else ("transformers", "ours")):
                toks, seconds = sides[name]()
                rates[name].append((new_tokens - 1) / seconds)
                tokens[name] = toks
    c = ours.config
    return {"folder": str(folder), "architecture": c.architecture, "layers": c.n_layers,
            "experts": f"{c.n_experts_per_tok} of {c.n_experts}", "threads": threads,
            "prompt": prompt_len, "new_tokens": new_tokens, "rounds": rounds,
            "ours_tok_s": statistics.median(rates["ours"]),
            "transformers_tok_s": statistics.median(rates["transformers"]),
            "ratio": statistics.median(rates["ours"]) / statistics.median(rates["transformers"]),
            "ratios_per_round": [a / b for a, b in zip(rates["ours"], rates["transformers"])],
            "same_tokens": tokens["ours"] == tokens["transformers"],
            "transformers_side": "Mixtral twin" + (", selection bias zeroed on both sides" if bias_zeroed else "")
            if twin else "from_pretrained"}


def table(result: dict) -> str:
    rows = [f"transformers side: {result['transformers_side']}; {result['threads']} threads, CPU fp32, "
            f"median of {result['rounds']} rounds", "",
            "| model | experts | prompt | new | ours tok/s | transformers tok/s | ratio (per round) | same greedy tokens |",
            "|---|---|---|---|---|---|---|---|",
            f"| {result['architecture']} ({result['layers']} layers) | {result['experts']} | {result['prompt']} "
            f"| {result['new_tokens']} | {result['ours_tok_s']:.1f} | {result['transformers_tok_s']:.1f} "
            f"| {result['ratio']:.2f}x ({', '.join(f'{r:.2f}' for r in result['ratios_per_round'])}) "
            f"| {'yes' if result['same_tokens'] else 'NO'} |"]
    return "\n".join(rows)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument("--model", type=Path, help="an MoE checkpoint folder (config.json + safetensors)")
    where.add_argument("--tiny", action="store_true", help="a random Mixtral saved to a temp folder")
    parser.add_argument("--prompt", type=int, default=32, help="prompt tokens (default 32)")
    parser.add_argument("--new-tokens", type=int, default=64, help="greedy tokens per decode (default 64)")
    parser.add_argument("--rounds", type=int, default=5, help="decodes per side (default 5)")
    parser.add_argument("--threads", type=int, default=torch.get_num_threads())
    parser.add_argument("--twin", action="store_true",
                        help="time transformers on the Mixtral twin even where from_pretrained works")
    parser.add_argument("--out", type=Path, help="also write the table here")
    args = parser.parse_args(argv)
    if args.new_tokens < 2 or args.prompt < 1 or args.rounds < 1:
        parser.error("--prompt >= 1, --new-tokens >= 2 and --rounds >= 1")
    with tempfile.TemporaryDirectory() as tmp:
        folder = save_tiny_mixtral(Path(tmp)) if args.tiny else args.model
        if not (folder / "config.json").is_file():
            parser.error(f"{folder}: no config.json")
        result = run(folder, args.prompt, args.new_tokens, args.rounds, args.threads, twin=args.twin)
    text = table(result)
    print(text)
    if args.out:
        args.out.write_text(text + "\n")
    return 0 if result["same_tokens"] else 1


if __name__ == "__main__":
    sys.exit(main())
