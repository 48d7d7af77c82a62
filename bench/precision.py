"""Decode speed and quality of each weight precision of our fused step, side by side with
transformers and llama.cpp on the same checkpoint, measured interleaved in one process.

    python -m bench.precision                          # SmolLM2, 3 rounds, 16-token prompt, 128 new
    python -m bench.precision --models smollm2-135m-instruct gemma-3-270m --rounds 3
    python -m bench.precision --class-runs 30          # + the batched step's 30-run aggregate

Every round runs each implementation once (greedy, the same prompt), in a fixed order, so a
change of the machine's load hits all of them within the same minute; each implementation's
ratio to fp32 fused is taken round by round and the median of those ratios is reported (the
machine is shared: lone tokens/s drift, ratios measured side by side hold).

- ours-fp32 / ours-bf16 / ours-int8: eager prefill, then models.decoders.fused.FusedDecoder
  with that precision's weights (the path that ran, SIMD or portable, is printed);
- transformers: its own model, fp32, from the same converted checkpoint;
- llama.cpp: the llama-cpp-python package on the GGUF file the checkpoint package ships (the
  Q4 file we dequantize), when the package is installed; otherwise the bench says so.

Quality, per precision against the fp32 fused step, teacher-forced over a held-out text
(explorer.texts.long_text, which no weight was fitted on): top-1 agreement, max |logit
difference|, perplexity. The last line is

    PRECISION: bf16 <ratio> int8 <ratio> llama.cpp <ratio> class <ratio>

each a median ratio to fp32 fused in this run (class: the best precision's aggregate tokens/s
of --class-runs runs decoding together through the batched step, over fp32's; "-" when not
measured), for the first model.
"""
from __future__ import annotations

import argparse
import statistics
import time

PRECISIONS = ("fp32", "bf16", "int8")


def _llama_cpp(model_name: str, threads: int):
    """A llama.cpp model on the shipped GGUF, or the reason there is none."""
    try:
        import llama_cpp
    except ImportError as err:
        return None, f"llama-cpp-python is not installed here ({err}); see README (Precision)"
    import tempfile
    from pathlib import Path

    from explorer.checkpoints.registry import EMBEDDED
    path = EMBEDDED[model_name].locate_gguf(Path(tempfile.mkdtemp()))
    llm = llama_cpp.Llama(model_path=str(path), n_ctx=512, n_threads=threads, n_batch=512,
                          verbose=False)
    return llm, f"llama.cpp {llama_cpp.__version__} on {path.name}"


def _ours(model, opts, weights, portable=None):
    from models.decoders.fused import FusedDecoder
    return FusedDecoder(model, opts, weights=weights, portable=portable)


def decode_ours(decoder, ids, new_tokens):
    import torch
    with torch.inference_mode():
        cache = decoder.new_cache(len(ids) + new_tokens + 1)
        logits = decoder.prefill(ids, cache)[0, -1]
        t0 = time.perf_counter()
        for _ in range(new_tokens):
            logits = decoder.step(int(logits.argmax()), cache)[0, -1]
        return new_tokens / (time.perf_counter() - t0)


def decode_transformers(model, ids, new_tokens):
    import torch
    with torch.inference_mode():
        out = model(torch.tensor([ids]), use_cache=True, logits_to_keep=1)
        cache, token = out.past_key_values, int(out.logits[0, -1].argmax())
        t0 = time.perf_counter()
        for _ in range(new_tokens):
            out = model(torch.tensor([[token]]), past_key_values=cache, use_cache=True)
            cache, token = out.past_key_values, int(out.logits[0, -1].argmax())
        return new_tokens / (time.perf_counter() - t0)


def decode_llama_cpp(llm, ids, new_tokens):
    llm.reset()
    llm.eval(ids)
    t0 = time.perf_counter()
    for _ in range(new_tokens):
        token = llm.sample(temp=0.0)
        llm.eval([token])
    return new_tokens / (time.perf_counter() - t0)


def quality(model, opts, decoders, ids) -> dict:
    """Per precision vs fp32, teacher-forced over `ids`: top-1 agreement, max |Δ logit|, ppl."""
    import torch
    rows = {}
    with torch.inference_mode():
        for name, decoder in decoders.items():
            cache = decoder.new_cache(len(ids) + 1)
            out = [decoder.prefill(ids[:1], cache)[0, -1]]
            for token in ids[1:-1]:
                out.append(decoder.step(int(token), cache)[0, -1])
            rows[name] = torch.stack(out)                                     # predicts ids[1:]
    target = torch.tensor(ids[1:])
    ref = rows["fp32"]
    result = {}
    for name, logits in rows.items():
        nll = torch.nn.functional.cross_entropy(logits, target)
        result[name] = {"top1_agreement": (logits.argmax(-1) == ref.argmax(-1)).float().mean().item(),
                        "max_abs_dlogit": (logits - ref).abs().max().item(),
                        "perplexity": float(torch.exp(nll))}
    return result


def class_aggregate(model, weights, runs, steps, prompt) -> float:
    """Tokens/s of `runs` runs decoding together through the batched step (no HTTP server)."""
    import torch
    from models.decoders.batched import BatchedDecoder
    decoder = BatchedDecoder(model, solo=None, weights=weights)
    decoder.pack()
    members = [decoder.start(len(prompt) + steps + 1) for _ in range(runs)]
    with torch.inference_mode():
        tokens = [int(decoder.prefill(prompt, run)[0, -1].argmax()) for run in members]
        t0 = time.perf_counter()
        for _ in range(steps):
            logits = decoder.step_many(tokens, members)
            tokens = [int(t) for t in logits[:, -1].argmax(-1)]
        rate = runs * steps / (time.perf_counter() - t0)
    for run in members:
        decoder.release(run)
    return rate


def bench_model(name, args) -> dict:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from bench.decode import prompt_ids
    from explorer.checkpoints import prepare_embedded
    from explorer.texts import long_text
    from models.decoders import quantized
    from models.forward import RunOptions
    from models.loading import load_model

    torch.set_num_threads(args.threads)
    folder = prepare_embedded(name)
    tok = AutoTokenizer.from_pretrained(folder)
    ids = prompt_ids(tok, args.prompt)
    model = load_model(folder, device="cpu", dtype=torch.float32)
    opts = RunOptions(last_logits_only=True)
    decoders = {w: _ours(model, opts, w) for w in PRECISIONS}
    impls = {f"ours-{w}": (decode_ours, d) for w, d in decoders.items()}
    print(f"[{name}] paths: " + ", ".join(quantized.path_label(w) for w in PRECISIONS), flush=True)
    if args.portable:
        for w in ("bf16", "int8"):
            impls[f"ours-{w}-portable"] = (decode_ours, _ours(model, opts, w, portable=True))
    if not args.no_transformers:
        hf = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32).eval()
        impls["transformers"] = (decode_transformers, hf)
    llm, llama_note = _llama_cpp(name, args.threads)
    print(f"[{name}] {llama_note}", flush=True)
    if llm is not None:
        impls["llama.cpp"] = (decode_llama_cpp, llm)
    for fn, obj in impls.values():   # warm-up: kernels built, caches primed
        fn(obj, ids[:8], 4)
    rates = {k: [] for k in impls}
    for r in range(args.rounds):
        for key, (fn, obj) in impls.items():
            rates[key].append(fn(obj, ids, args.new_tokens))
        print(f"[{name}] round {r + 1}: " + ", ".join(f"{k} {v[-1]:.1f}" for k, v in rates.items()), flush=True)
    ratios = {k: statistics.median(a / b for a, b in zip(v, rates["ours-fp32"])) for k, v in rates.items()}
    held_out = tok(long_text()).input_ids[-args.quality_tokens - 1:]
    q = quality(model, opts, decoders, held_out)
    out = {"model": name, "rates": {k: statistics.median(v) for k, v in rates.items()},
           "ratios": ratios, "quality": q, "llama_note": llama_note,
           "paths": {w: quantized.path_label(w) for w in PRECISIONS}}
    if args.class_runs:
        agg = {}
        for w in PRECISIONS:   # interleaved too: fp32, bf16, int8, then again
            agg[w] = []
        for _ in range(args.class_rounds):
            for w in PRECISIONS:
                agg[w].append(class_aggregate(model, w, args.class_runs, args.class_steps, ids))
        out["class"] = {w: statistics.median(v) for w, v in agg.items()}
        out["class_ratios"] = {w: statistics.median(a / b for a, b in zip(v, agg["fp32"])) for w, v in agg.items()}
    return out


def report(res) -> str:
    lines = [f"## {res['model']}  (paths: {', '.join(res['paths'].values())}; {res['llama_note']})",
             "| implementation | tokens/s (median) | ratio to ours-fp32 (median of rounds) |",
             "|---|---:|---:|"]
    for k, v in res["rates"].items():
        lines.append(f"| {k} | {v:.1f} | {res['ratios'][k]:.2f} |")
    lines += ["", "| precision | top-1 agreement with fp32 | max abs dlogit | perplexity |", "|---|---:|---:|---:|"]
    for k, v in res["quality"].items():
        lines.append(f"| {k} | {v['top1_agreement']:.3f} | {v['max_abs_dlogit']:.3f} | {v['perplexity']:.2f} |")
    if "class" in res:
        lines += ["", "| precision | class aggregate tokens/s | ratio to fp32 |", "|---|---:|---:|"]
        for k, v in res["class"].items():
            lines.append(f"| {k} | {v:.1f} | {res['class_ratios'][k]:.2f} |")
    return "\n".join(lines)


def precision_line(res) -> str:
    r = res["ratios"]
    cls = "-"
    if "class_ratios" in res:
        cls = f"{max(res['class_ratios'][w] for w in ('bf16', 'int8')):.2f}"
    llama = f"{r['llama.cpp']:.2f}" if "llama.cpp" in r else "-"
    return f"PRECISION: bf16 {r['ours-bf16']:.2f} int8 {r['ours-int8']:.2f} llama.cpp {llama} class {cls}"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", nargs="+", default=["smollm2-135m-instruct"])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--prompt", type=int, default=16)
    parser.add_argument("--new-tokens", type=int, default=128)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--quality-tokens", type=int, default=256)
    parser.add_argument("--portable", action="store_true", help="also time the portable loops")
    parser.add_argument("--no-transformers", action="store_true")
    parser.add_argument("--class-runs", type=int, default=0, help="runs decoding together (0: skip)")
    parser.add_argument("--class-steps", type=int, default=32)
    parser.add_argument("--class-rounds", type=int, default=2)
    args = parser.parse_args(argv)
    results = []
    for name in args.models:
        res = bench_model(name, args)
        print(report(res), flush=True)
        results.append(res)
    print(precision_line(results[0]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
