"""Stream a completion from an embedded checkpoint to stdout, run by our own modules.

    python -m explorer.cli "Explain the KV cache in one sentence."
    python -m explorer.cli --model gemma-3-270m --max-new-tokens 40 --temperature 0.8 --seed 1 "Once upon a time"
    python -m explorer.cli --stats ...     # per-token position, latency and KV-cache bytes on stderr
    python -m explorer.cli --compile ...   # decode through the torch.compile'd static step
                                           # (engine.static; ~30 s to compile the first time)
    python -m explorer.cli --fused ...     # decode through the fused C++ step (engine.fused)

The instruct model gets the prompt as a user turn of its chat template (use --raw to skip it);
the base model continues the text as is. Ctrl-C stops between two tokens."""
from __future__ import annotations

import argparse
import sys
import time

from explorer.checkpoints import DEFAULT_EMBEDDED, EMBEDDED, CheckpointError, prepare_embedded
from explorer.prompts import encode


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m explorer.cli", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("prompt")
    parser.add_argument("--model", default=DEFAULT_EMBEDDED, choices=sorted(EMBEDDED))
    parser.add_argument("--max-new-tokens", type=int, default=64)
    parser.add_argument("--temperature", type=float, default=0.0)
    parser.add_argument("--top-k", type=int, default=0)
    parser.add_argument("--top-p", type=float, default=1.0)
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--raw", action="store_true", help="no chat template")
    parser.add_argument("--stats", action="store_true", help="per-token telemetry on stderr")
    parser.add_argument("--compile", action="store_true",
                        help="decode with the static step compiled by torch.compile (needs a C++ compiler)")
    parser.add_argument("--autotune", action="store_true",
                        help="with --compile: also autotune the matrix kernels (slower to compile, faster)")
    parser.add_argument("--fused", action="store_true",
                        help="decode with the fused C++ step (engine.fused; CPU fp32, needs a C++ "
                             "compiler once): the fastest decode on a CPU")
    parser.add_argument("--weights", choices=["fp32", "bf16", "int8", "gguf"], default=None,
                        help="the fused step's weight precision (default: EXPLORER_WEIGHTS, else fp32); "
                             "bf16, int8 or gguf (the checkpoint's own GGUF codes) implies --fused")
    return parser


def main(argv=None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    if args.weights not in (None, "fp32"):   # the other precisions are the fused step's
        args.fused = True
    if args.fused and (args.compile or args.autotune):
        parser.error("--fused and --compile are two different decode steps: choose one")

    from transformers import AutoTokenizer

    from models.device import tune_cpu_allocator
    from models.generate import SamplingParams
    from models.loading import load_model
    tune_cpu_allocator()
    try:
        params = SamplingParams(max_new_tokens=args.max_new_tokens, temperature=args.temperature,
                                top_k=args.top_k, top_p=args.top_p, seed=args.seed)
        folder = prepare_embedded(args.model)
        tokenizer = AutoTokenizer.from_pretrained(folder)
        model = load_model(folder)
        # the prompt and the new tokens must fit the positions the model was trained for
        room = model.config.max_position_embeddings - params.max_new_tokens
        ids = encode(tokenizer, args.prompt, max(room, 1), chat=not args.raw)
        _stream(model, tokenizer, ids, params, _decoder(model, args), args)
    except (ValueError, CheckpointError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        sys.stdout.write("\n")
        return 130
    return 0


def _decoder(model, args):
    """The decode step the flags ask for: None (the eager engine), the compiled static step or
    the fused C++ step. ValueError when the machine cannot build it."""
    if args.compile or args.autotune:
        import shutil

        from engine.static import StaticDecoder
        if not (shutil.which("g++") or shutil.which("c++")):
            raise ValueError("--compile needs a C++ compiler (torch.compile writes C++ kernels on "
                             "the CPU): install g++, or run without --compile")
        decoder = StaticDecoder(model, autotune=args.autotune)
        print("[the first decode step compiles the static step: ~30 s the first time, "
              "up to ~80 s with --autotune]", file=sys.stderr)
        return decoder
    if args.fused:
        from engine.fused import FusedDecoder
        try:
            decoder = FusedDecoder(model, weights=args.weights)   # builds its kernel the first time
            if args.stats:
                from engine.quantized import path_label
                print(f"[decode weights: {path_label(decoder.weights)}]", file=sys.stderr)
            return decoder
        except RuntimeError as e:        # no compiler, or the build failed
            raise ValueError(str(e)) from e
    return None


def _stream(model, tokenizer, ids, params, decoder, args) -> None:
    """Write the continuation to stdout as it comes; with --stats, each token's position,
    latency and cache size, then the rates, on stderr."""
    from models.generate import generate

    out: list[int] = []
    decode_latencies: list[float] = []
    printed = ""
    start = time.perf_counter()
    for step in generate(model, ids, params, decoder=decoder):
        if step.finished == "eos":
            break
        out.append(step.token_id)
        if step.phase == "decode":
            decode_latencies.append(step.latency_s)
        # decode the whole continuation each time: multi-byte characters span tokens
        text = tokenizer.decode(out, skip_special_tokens=True)
        sys.stdout.write(text[len(printed):])
        sys.stdout.flush()
        printed = text
        if args.stats:
            print(f"[pos {step.position} {step.phase} {step.latency_s * 1000:.1f} ms "
                  f"cache {sum(step.cache_bytes) / 2**20:.2f} MiB]", file=sys.stderr)
    sys.stdout.write("\n")
    if args.stats and out:
        rate = len(out) / (time.perf_counter() - start)
        summary = f"{len(out)} tokens, {rate:.1f} tokens/s overall"
        if (args.compile or args.autotune) and decode_latencies:
            summary += f" (the first decode step, which compiles, took {decode_latencies[0]:.1f} s)"
            decode_latencies = decode_latencies[1:]  # the steady rate leaves the compile out
        if decode_latencies:
            summary += f"; decode {len(decode_latencies) / sum(decode_latencies):.1f} tokens/s"
        print(summary, file=sys.stderr)


if __name__ == "__main__":
    sys.exit(main())
