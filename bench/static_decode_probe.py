"""How close to the bandwidth roofline can a decode step get on this machine? A probe, not the
engine: a lean, static-shape decode step for the Llama family (SmolLM2), written the way
gpt-fast writes one for the compiler, run eagerly and under torch.compile, next to our
engine's own step, all in one process with the bandwidth measured between them.

    PYTHONPATH=. .venv/bin/python -m bench.static_decode_probe [--rounds 3]

The lean step uses the loaded model's own tensors and RoPE tables (models.layers), a
fixed-capacity KV buffer written with index_copy_ and a mask over all slots, so every step has
the same shapes (no recompilation). Its logits are compared with the engine's, step by step."""
from __future__ import annotations

import argparse
import time

import torch
import torch.nn.functional as F

from bench.decode import measure_bandwidth

CAPACITY = 64   # KV slots: 16 tokens of context plus the steps timed, rewound each round


def lean_decode_step(model, capacity: int):
    """A function (token (1,1), pos 0-d tensor) -> logits (1,1,V) over preallocated K/V."""
    from models.layers import rope_cos_sin, rope_inv_freq, signed_sin

    cfg = model.config
    heads, kv_heads, d = cfg.n_heads, cfg.n_kv_heads, cfg.head_dim
    cos_t, sin_t = rope_cos_sin(torch.arange(capacity), rope_inv_freq(d, cfg.rope_theta, cfg.rope_scaling),
                                torch.float32)
    sin_t = signed_sin(sin_t)
    keys = [torch.zeros(1, kv_heads, capacity, d) for _ in range(cfg.n_layers)]
    values = [torch.zeros(1, kv_heads, capacity, d) for _ in range(cfg.n_layers)]
    slots = torch.arange(capacity)
    layers = [(b.attn_norm.weight, b.attn.wqkv.weight, b.attn.wo.weight, b.mlp_norm.weight,
               b.mlp.w_gate_up.weight, b.mlp.w_down.weight) for b in model.blocks]
    head = model.lm_head_weight()

    def step(token: torch.Tensor, pos: torch.Tensor) -> torch.Tensor:
        at = pos.view(1)
        x = F.embedding(token, model.embed.weight)                                  # (1, 1, d_model)
        cos, sin = cos_t.index_select(0, at), sin_t.index_select(0, at)            # (1, D)
        visible = (slots <= pos)[None, None, None]                                  # (1, 1, 1, C)
        for i, (attn_norm, wqkv, wo, mlp_norm, w_gate_up, w_down) in enumerate(layers):
            h = F.rms_norm(x, (x.shape[-1],), attn_norm, cfg.norm_eps)
            qkv = F.linear(h, wqkv).view(1, 1, -1, d).transpose(1, 2)               # (1, H+2Hkv, 1, D)
            q, k, v = qkv.split((heads, kv_heads, kv_heads), dim=1)
            q = q * cos + torch.roll(q, d // 2, -1) * sin
            k = k * cos + torch.roll(k, d // 2, -1) * sin
            keys[i].index_copy_(2, at, k)
            values[i].index_copy_(2, at, v)
            o = F.scaled_dot_product_attention(q, keys[i], values[i], attn_mask=visible,
                                               scale=cfg.attn_scale, enable_gqa=True)  # (1, H, 1, D)
            x = x + F.linear(o.transpose(1, 2).reshape(1, 1, -1), wo)
            h = F.rms_norm(x, (x.shape[-1],), mlp_norm, cfg.norm_eps)
            gate, up = F.linear(h, w_gate_up).split(cfg.d_ff, -1)
            x = x + F.linear(F.silu(gate) * up, w_down)
        return F.linear(F.rms_norm(x, (x.shape[-1],), model.norm.weight, cfg.norm_eps), head)

    return step


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--steps", type=int, default=30)
    args = parser.parse_args(argv)
    torch.set_num_threads(2)

    from explorer.checkpoints import prepare_embedded
    from models.forward import RunOptions
    from models.loading import load_model

    model = load_model(prepare_embedded("smollm2-135m-instruct"), device="cpu", dtype=torch.float32)
    opts = RunOptions(last_logits_only=True)
    weight_bytes = sum(p.numel() for p in model.parameters()) * 4
    step = lean_decode_step(model, CAPACITY)
    prompt = torch.tensor([[1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16]])
    with torch.inference_mode():
        cache = model.new_cache(CAPACITY)
        diff = max((step(prompt[:, i:i + 1], torch.tensor(i))[0, 0] -
                    model(prompt[:, i:i + 1], cache=cache, options=opts)[0, 0]).abs().max().item()
                   for i in range(16))
        print(f"lean step vs engine, 16 steps: max |Δ logit| = {diff:.1e}")
        t0 = time.perf_counter()
        compiled = torch.compile(step, fullgraph=True, dynamic=False)
        compiled(prompt[:, :1], torch.tensor(16))
        print(f"torch.compile of the lean step: {time.perf_counter() - t0:.1f} s (first call)")

        def timed(fn) -> float:
            start = time.perf_counter()
            for j in range(args.steps):
                fn(prompt[:, :1], torch.tensor(16 + j))
            return (time.perf_counter() - start) / args.steps * 1e3

        def engine(token, pos):
            model(token, positions=pos.view(1), cache=engine_cache, options=opts)

        for _ in range(args.rounds):
            engine_cache = model.new_cache(CAPACITY)
            model(prompt, cache=engine_cache, options=opts)
            bandwidth = measure_bandwidth(2)
            roofline = weight_bytes / (bandwidth * 1e9) * 1e3
            ours, lean, lean_compiled = timed(engine), timed(step), timed(compiled)
            print(f"bandwidth {bandwidth:.1f} GB/s, roofline {roofline:.1f} ms/token | engine {ours:.1f} ms "
                  f"({roofline / ours:.0%}) | lean step {lean:.1f} ms ({roofline / lean:.0%}) | "
                  f"lean step compiled {lean_compiled:.1f} ms ({roofline / lean_compiled:.0%})", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
