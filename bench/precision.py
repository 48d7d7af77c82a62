"""Decode speed and quality of each weight precision of our fused step, side by side with
transformers and llama.cpp on the same checkpoint, measured interleaved in one process.

    python -m bench.precision                          # SmolLM2, 3 rounds, 16-token prompt, 128 new
    python -m bench.precision --models smollm2-135m-instruct gemma-3-270m --rounds 3
    python -m bench.precision --class-runs 30          # + the batched step's 30-run aggregate

Every round runs each implementation once (greedy, the same prompt), in a fixed order, so a
change of the machine's load hits all of them within the same minute; each implementation's
ratio to fp32 fused is taken round by round and the median of those ratios is reported (the
machine is shared: lone tokens/s drift, ratios measured side by side hold).

- ours-fp32 / ours-bf16 / ours-int8 / ours-gguf: eager prefill, then
  engine.fused.FusedDecoder with that precision's weights (the path that ran, SIMD or
  portable, is printed; gguf, the checkpoint's own GGUF codes, where the folder keeps them);
- transformers: its own model, fp32, from the same converted checkpoint;
- llama.cpp: on the GGUF file the checkpoint package ships (the Q4 file we dequantize), fed
  our tokenizer's prompt ids (a warning if the GGUF's vocabulary gives others), greedy, through
  llama-cpp-python when installed, else llama-cpp-py-sync (the prebuilt CPU build pinned in
  requirements-lock-dev.txt); its build and the CPU features it was compiled for are printed, and
  how many leading greedy tokens of round 1 equal ours-fp32's. Neither installed: it says so.

Quality, per precision against the fp32 fused step, teacher-forced over the text each
checkpoint's served default is chosen on (explorer.generate.precision.CHOICE_TEXT, the passage
"Execution model" of explorer.texts.long_text, after the model's BOS token where its tokenizer
begins a text with one: precision.evaluation_ids): top-1 agreement, max |logit difference|,
perplexity. The Generate tab's Precision section shows the price on another passage
(SHOWN_TEXT), not on this one. The last line is

    PRECISION: bf16 <ratio> int8 <ratio> gguf <ratio> llama.cpp <ratio> class <ratio>

each a median ratio to fp32 fused in this run (class: the best precision's aggregate tokens/s
of --class-runs runs decoding together through the batched step, over fp32's; "-" when not
measured), for the first model.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time

PY_SYNC = "llama-cpp-py-sync"
# C23 spellings of strtol & co. that the llama-cpp-py-sync wheel binds to glibc 2.38 (its
# manylinux2014 tag notwithstanding). They differ from the C99 functions only in also reading
# a 0b/0B binary prefix, which no llama.cpp path given a GGUF file relies on.
_C23_SHIM = r"""
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
long __isoc23_strtol(const char *s, char **e, int b) { return strtol(s, e, b); }
unsigned long __isoc23_strtoul(const char *s, char **e, int b) { return strtoul(s, e, b); }
unsigned long long __isoc23_strtoull(const char *s, char **e, int b) { return strtoull(s, e, b); }
int __isoc23_sscanf(const char *s, const char *f, ...) {
    va_list a; va_start(a, f); int r = vsscanf(s, f, a); va_end(a); return r; }
"""
_LIB_DIR = None   # the relinked copy of the wheel's libraries, kept for the process
_LOG = None


def _elf_sections(data) -> dict:
    import struct
    shoff, = struct.unpack_from("<Q", data, 0x28)
    entsize, count, names = struct.unpack_from("<HHH", data, 0x3A)
    rows = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * entsize) for i in range(count)]
    base = rows[names][4]
    return {bytes(data[base + r[0]:data.index(b"\0", base + r[0])]).decode(): r for r in rows}


def _drop_c23_versions(path) -> None:
    """Bind the __isoc23_* symbols unversioned and make the GLIBC_2.38 need weak, in place."""
    import struct
    data = bytearray(path.read_bytes())
    sec = _elf_sections(data)
    dynsym, dynstr, versym, verneed = (
        sec[k][4] for k in (".dynsym", ".dynstr", ".gnu.version", ".gnu.version_r"))

    def name(offset):
        start = dynstr + offset
        return bytes(data[start:data.index(b"\0", start)])
    for i in range(sec[".dynsym"][5] // 24):
        if name(struct.unpack_from("<I", data, dynsym + 24 * i)[0]).startswith(b"__isoc23_"):
            struct.pack_into("<H", data, versym + 2 * i, 1)          # VER_NDX_GLOBAL
    need = verneed
    while True:
        _, count, _, aux, step = struct.unpack_from("<HHIII", data, need)
        entry = need + aux
        for _ in range(count):
            _, flags, _, vname, nxt = struct.unpack_from("<IHHII", data, entry)
            if name(vname) == b"GLIBC_2.38":
                struct.pack_into("<H", data, entry + 4, flags | 2)   # VER_FLG_WEAK
            entry += nxt
        if not step:
            break
        need += step
    path.write_bytes(bytes(data))


def _relink_py_sync(package_dir) -> str:
    """Copies of the wheel's libraries loadable on glibc < 2.38; returns libllama's path."""
    global _LIB_DIR
    import ctypes
    import shutil
    import subprocess
    import tempfile
    from pathlib import Path
    if _LIB_DIR is None:
        _LIB_DIR = tempfile.TemporaryDirectory(prefix="llama-cpp-py-sync-")
        folder = Path(_LIB_DIR.name)
        for lib in Path(package_dir).glob("lib*.so*"):
            shutil.copyfile(lib, folder / lib.name)
            _drop_c23_versions(folder / lib.name)
        (folder / "c23.c").write_text(_C23_SHIM)
        subprocess.run([shutil.which("cc") or "gcc", "-O2", "-shared", "-fPIC", "-o",
                        str(folder / "c23.so"), str(folder / "c23.c")], check=True)
    folder = Path(_LIB_DIR.name)
    ctypes.CDLL(str(folder / "c23.so"), mode=ctypes.RTLD_GLOBAL)
    return str(folder / "libllama.so")


def _errors_only_log(ffi):
    """llama.cpp's log callback, printing errors only; created once and never freed, since
    llama.cpp keeps calling it until the process ends (a freed callback crashes it)."""
    global _LOG
    if _LOG is None:
        def errors_only(level, text, _data):
            if level == 4:   # GGML_LOG_LEVEL_ERROR
                sys.stderr.write(ffi.string(text).decode(errors="replace"))
        _LOG = ffi.callback("void(enum ggml_log_level, const char *, void *)", errors_only)
    return _LOG


class PySyncRunner:
    """llama-cpp-py-sync's context driven token by token: reset, eval ids, greedy next id."""

    def __init__(self, path, threads: int):
        import llama_cpp_py_sync
        from pathlib import Path

        from llama_cpp_py_sync import _cffi_bindings as bindings
        try:
            bindings.get_lib()
            self.relinked = False
        except RuntimeError as err:
            if "GLIBC_2.38" not in str(err):
                raise
            bundled = bindings._find_library()
            bindings._find_library = lambda: _relink_py_sync(Path(bundled).parent)
            bindings.get_lib()
            self.relinked = True
        self.lib, self.ffi = bindings.get_lib(), bindings.get_ffi()
        self.lib.llama_log_set(_errors_only_log(self.ffi), self.ffi.NULL)   # verbose=False logs
        self.llm = llama_cpp_py_sync.Llama(model_path=str(path), n_ctx=512, n_batch=512,
                                           n_threads=threads, verbose=False)
        self.ctx = self.llm._ctx
        self.lib.llama_set_embeddings(self.ctx, False)   # the package turns them on for audio
        self.sampler = self.lib.llama_sampler_init_greedy()
        lcp = llama_cpp_py_sync
        self.version = (f"{PY_SYNC} {lcp.__version__} (llama.cpp {lcp.__llama_cpp_tag__}, "
                        f"commit {lcp.__llama_cpp_commit__})")
        self.system_info = self.llm.print_system_info().strip()

    def reset(self):
        self.lib.llama_memory_clear(self.lib.llama_get_memory(self.ctx), True)

    def eval(self, ids):
        tokens = self.ffi.new("llama_token[]", list(ids))
        if self.lib.llama_decode(self.ctx, self.lib.llama_batch_get_one(tokens, len(ids))) != 0:
            raise RuntimeError("llama_decode failed")

    def greedy(self) -> int:
        return int(self.lib.llama_sampler_sample(self.sampler, self.ctx, -1))

    def tokenize(self, text: str, bos: bool) -> list[int]:
        return self.llm.tokenize(text, add_special=bos, parse_special=False)

    def n_vocab(self) -> int:
        return self.llm.n_vocab


class PythonRunner:
    """llama-cpp-python's Llama behind the same four calls."""

    def __init__(self, path, threads: int):
        import llama_cpp
        self.llm = llama_cpp.Llama(model_path=str(path), n_ctx=512, n_threads=threads,
                                   n_batch=512, verbose=False)
        self.version = f"llama-cpp-python {llama_cpp.__version__}"
        self.system_info = llama_cpp.llama_print_system_info().decode().strip()
        self.relinked = False

    def reset(self):
        self.llm.reset()

    def eval(self, ids):
        self.llm.eval(list(ids))

    def greedy(self) -> int:
        return int(self.llm.sample(temp=0.0))

    def tokenize(self, text: str, bos: bool) -> list[int]:
        return self.llm.tokenize(text.encode(), add_bos=bos, special=False)

    def n_vocab(self) -> int:
        return self.llm.n_vocab()


def _simd_gap(features: str) -> str:
    """A note when llama.cpp was built without AVX512 that this CPU has (our kernels use it)."""
    try:
        flags = open("/proc/cpuinfo").read().split()
    except OSError:
        return ""
    if "avx512f" in flags and "AVX512" not in features:
        return " (built without AVX512, which this CPU has and our kernels use)"
    return ""


def llama_cpp_runner(model_name: str, threads: int):
    """A llama.cpp runner on the GGUF file the checkpoint package ships and a note naming the
    package, llama.cpp build and CPU features; or None and why llama.cpp is not measured."""
    import importlib
    import tempfile
    from pathlib import Path

    from explorer.checkpoints.registry import EMBEDDED
    missing = []
    for module, runner in (("llama_cpp", PythonRunner), ("llama_cpp_py_sync", PySyncRunner)):
        try:
            importlib.import_module(module)
        except ImportError as err:
            missing.append(f"{module}: {err}")
            continue
        path = EMBEDDED[model_name].locate_gguf(Path(tempfile.mkdtemp()))
        run = runner(path, threads)
        relinked = "; libraries relinked for glibc < 2.38" if run.relinked else ""
        features = run.system_info.strip(" |")
        return run, (f"{run.version} on {path.name}, {threads} threads{relinked}; {features}"
                     f"{_simd_gap(features)}")
    return None, ("llama.cpp not measured: neither llama-cpp-python nor llama-cpp-py-sync is "
                  f"installed here ({'; '.join(missing)}); see docs/PRECISION.md")


def _ours(model, opts, weights, portable=None):
    from engine.fused import FusedDecoder
    return FusedDecoder(model, opts, weights=weights, portable=portable)


def decode_ours(decoder, ids, new_tokens, tokens=None):
    """Tokens/s of greedy decode steps (explorer/generate/precision.py's timing); the greedy
    tokens are appended to `tokens` when given."""
    import torch

    from explorer.generate.precision import greedy_rate
    with torch.inference_mode():
        rate, out = greedy_rate(decoder, ids, new_tokens)
    if tokens is not None:
        tokens.extend(out)
    return rate


def decode_transformers(model, ids, new_tokens, tokens=None):
    import torch
    with torch.inference_mode():
        out = model(torch.tensor([ids]), use_cache=True, logits_to_keep=1)
        cache, token = out.past_key_values, int(out.logits[0, -1].argmax())
        t0 = time.perf_counter()
        for _ in range(new_tokens):
            out = model(torch.tensor([[token]]), past_key_values=cache, use_cache=True)
            cache, token = out.past_key_values, int(out.logits[0, -1].argmax())
        return new_tokens / (time.perf_counter() - t0)


def decode_llama_cpp(run, ids, new_tokens, tokens=None):
    run.reset()
    run.eval(ids)
    out = [] if tokens is None else tokens
    t0 = time.perf_counter()
    for _ in range(new_tokens):
        out.append(run.greedy())
        run.eval(out[-1:])
    return new_tokens / (time.perf_counter() - t0)


def leading_agreement(a, b) -> int:
    """How many leading tokens two greedy continuations share."""
    n = 0
    for x, y in zip(a, b):
        if x != y:
            break
        n += 1
    return n


def vocabulary_warning(run, tokenizer, ids) -> str | None:
    """Why llama.cpp's vocabulary would not give the prompt's ids, or None when it does."""
    from explorer.texts import long_text
    bos = tokenizer.bos_token_id is not None and ids[0] == tokenizer.bos_token_id
    theirs = run.tokenize(long_text(), bos)
    n = min(len(ids), len(theirs))
    if theirs[:n] != ids[:n]:
        return f"the GGUF's tokenizer gives other prompt ids ({theirs[:n]} vs ours {ids[:n]})"
    if run.n_vocab() < tokenizer.vocab_size:
        return f"the GGUF's vocabulary has {run.n_vocab()} tokens, ours {tokenizer.vocab_size}"
    return None


def quality(model, opts, decoders, ids) -> dict:
    """Per precision vs fp32, teacher-forced over `ids`: top-1 agreement, max |Δ logit|, ppl,
    positions unlike fp32 and how many of them are near ties
    (explorer/generate/precision.py's measurement, which the Generate tab's section shows)."""
    import torch

    from explorer.generate.precision import quality as scored, teacher_forced
    with torch.inference_mode():
        found = scored({name: teacher_forced(d, ids) for name, d in decoders.items()}, ids)
    return {name: {"top1_agreement": p.top1, "max_abs_dlogit": p.max_dlogit, "perplexity": p.perplexity,
                   "flips": p.flips, "near_tie_flips": p.near_tie_flips} for name, p in found.items()}


def class_aggregate(model, weights, runs, steps, prompt) -> float:
    """Tokens/s of `runs` runs decoding together through the batched step (no HTTP server)."""
    import torch
    from engine.batched import BatchedDecoder
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
    from explorer.generate.precision import CHOICE_TEXT, evaluation_ids
    from engine import quantized
    from models.forward import RunOptions
    from models.loading import load_model

    torch.set_num_threads(args.threads)
    folder = prepare_embedded(name)
    tok = AutoTokenizer.from_pretrained(folder)
    ids = prompt_ids(tok, args.prompt)
    model = load_model(folder, device="cpu", dtype=torch.float32)
    opts = RunOptions(last_logits_only=True)
    precisions = quantized.available_weights(model)   # gguf where the checkpoint keeps its codes
    decoders = {w: _ours(model, opts, w) for w in precisions}
    impls = {f"ours-{w}": (decode_ours, d) for w, d in decoders.items()}
    print(f"[{name}] paths: " + ", ".join(quantized.path_label(w) for w in precisions), flush=True)
    if args.portable:
        for w in precisions[1:]:
            impls[f"ours-{w}-portable"] = (decode_ours, _ours(model, opts, w, portable=True))
    if not args.no_transformers:
        hf = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32).eval()
        impls["transformers"] = (decode_transformers, hf)
    run, llama_note = llama_cpp_runner(name, args.threads)
    print(f"[{name}] {llama_note}", flush=True)
    agreement = None
    if run is not None:
        impls["llama.cpp"] = (decode_llama_cpp, run)
        warning = vocabulary_warning(run, tok, ids)
        if warning:
            print(f"[{name}] WARNING: {warning}", flush=True)
            llama_note += f"; WARNING: {warning}"
    for fn, obj in impls.values():   # warm-up: kernels built, caches primed
        fn(obj, ids[:8], 4)
    rates = {k: [] for k in impls}
    for r in range(args.rounds):
        greedy = {k: [] for k in ("ours-fp32", "llama.cpp")} if r == 0 else {}
        for key, (fn, obj) in impls.items():
            rates[key].append(fn(obj, ids, args.new_tokens, greedy.get(key)))
        print(f"[{name}] round {r + 1}: " + ", ".join(f"{k} {v[-1]:.1f}" for k, v in rates.items()), flush=True)
        if r == 0 and run is not None:
            agreement = leading_agreement(greedy["ours-fp32"], greedy["llama.cpp"])
            print(f"[{name}] llama.cpp's greedy tokens equal ours-fp32's for the first "
                  f"{agreement} of {args.new_tokens}", flush=True)
    ratios = {k: statistics.median(a / b for a, b in zip(v, rates["ours-fp32"])) for k, v in rates.items()}
    scored = evaluation_ids(tok, CHOICE_TEXT, args.quality_tokens)
    q = quality(model, opts, decoders, scored)
    out = {"model": name, "rates": {k: statistics.median(v) for k, v in rates.items()},
           "ratios": ratios, "quality": q, "llama_note": llama_note,
           "llama_agreement": agreement, "new_tokens": args.new_tokens,
           "paths": {w: quantized.path_label(w) for w in precisions}}
    if args.class_runs:
        agg = {}
        for w in precisions:   # interleaved too: fp32, bf16, int8, gguf, then again
            agg[w] = []
        for _ in range(args.class_rounds):
            for w in precisions:
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
    if res.get("llama_agreement") is not None:
        lines.append(f"\nllama.cpp's greedy tokens (round 1) equal ours-fp32's for the first "
                     f"{res['llama_agreement']} of {res['new_tokens']} (its weights are the GGUF's "
                     "quantized blocks, ours their fp32 dequantization)")
    lines += ["", "| precision | top-1 agreement with fp32 | positions unlike fp32 (near ties) | "
              "max abs dlogit | perplexity |", "|---|---:|---:|---:|---:|"]
    for k, v in res["quality"].items():
        lines.append(f"| {k} | {v['top1_agreement']:.3f} | {v['flips']} ({v['near_tie_flips']}) | "
                     f"{v['max_abs_dlogit']:.3f} | {v['perplexity']:.2f} |")
    if "class" in res:
        lines += ["", "| precision | class aggregate tokens/s | ratio to fp32 |", "|---|---:|---:|"]
        for k, v in res["class"].items():
            lines.append(f"| {k} | {v:.1f} | {res['class_ratios'][k]:.2f} |")
    return "\n".join(lines)


def precision_line(res) -> str:
    r = res["ratios"]
    cls = "-"
    if "class_ratios" in res:
        cls = f"{max(v for w, v in res['class_ratios'].items() if w != 'fp32'):.2f}"
    llama = f"{r['llama.cpp']:.2f}" if "llama.cpp" in r else "-"
    gguf = f" gguf {r['ours-gguf']:.2f}" if "ours-gguf" in r else ""
    return (f"PRECISION: bf16 {r['ours-bf16']:.2f} int8 {r['ours-int8']:.2f}{gguf} llama.cpp {llama} "
            f"class {cls}")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", nargs="+", default=["smollm2-135m-instruct"])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--prompt", type=int, default=16)
    parser.add_argument("--new-tokens", type=int, default=128)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--quality-tokens", type=int, default=256,
                        help="tokens of the choice text scored (CHOICE_TEXT, after the BOS)")
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
