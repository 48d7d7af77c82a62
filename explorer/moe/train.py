"""Train the project's own small MoE language models, reproducibly:

    python -m explorer.moe.train                      # all variants -> explorer/moe/checkpoints/
    python -m explorer.moe.train --tiny --out /tmp/x  # the first steps of a tiny setting (seconds)

One corpus (Python's standard library sources, pinned in corpus_files.txt), one byte-level BPE,
one seed; the variants differ only in how the router is balanced:
  none   plain top-k routing, nothing pulls the load level;
  aux    + the auxiliary load-balancing loss  n_experts * sum_e f_e * P_e  (f_e: picks of
         expert e per token, summing to top_k; P_e: its mean router probability; Switch
         Transformer / Mixtral style, models.moe.MoEAux.switch_loss), coefficient `aux_coef`;
  bias   a per-expert selection bias added to the router probabilities for choosing experts
         only, nudged after every step by `bias_rate` * sign(mean load - load_e) (DeepSeek-V3's
         auxiliary-loss-free balancing; the weights applied stay the unbiased probabilities);
  dense  a dense model of the same active size (d_ff = top_k * d_expert), for the card.
Deterministic on the CPU: fixed seed, one thread, torch.use_deterministic_algorithms.
Each variant writes <out>/<name>/: config.json, model.safetensors (bf16), tokenizer.json,
tokenizer_config.json, MODEL_CARD.md and card.json (the figures the card states, which
tests/unit/test_moe_train.py measures again from the stored weights)."""
from __future__ import annotations

import argparse
import json
import math
import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Optional

import torch
import torch.nn.functional as F

from explorer.moe import corpus as corpus_mod
from explorer.moe.routing import load_stats
from explorer.checkpoints.shipped import CHECKPOINTS as DEFAULT_OUT, NAMES

VARIANTS = ("none", "aux", "bias", "dense")


@dataclass(frozen=True)
class Settings:
    vocab_size: int = 4096           # byte-level BPE size
    d_model: int = 192               # residual width
    n_layers: int = 4
    n_heads: int = 6                 # query heads (head_dim 32)
    n_kv_heads: int = 2              # GQA: 3 query heads per KV head
    n_experts: int = 8               # routed experts per layer (N)
    top_k: int = 2                   # experts per token (k); the dense baseline's d_ff = k * d_expert
    d_expert: int = 256              # hidden width of each expert's SwiGLU MLP
    seq_len: int = 256               # training window (tokens)
    batch: int = 8                   # windows per step
    steps: int = 256                 # optimizer steps (the same batches for every variant)
    lr: float = 3e-3                 # peak AdamW learning rate
    warmup: int = 32                 # linear warm-up steps, then cosine decay to lr / 10
    weight_decay: float = 0.1        # on matrices only
    aux_coef: float = 0.01           # "aux": weight of the switch loss (k when level)
    bias_rate: float = 1e-2          # "bias": selection-bias step per update (probability units)
    seed: int = 0                    # initial weights and batch order
    rope_theta: float = 10000.0
    eval_tokens: int = 65536         # held-out tokens of the card's loss and load figures (a prefix)
    check_tokens: int = 16384        # held-out tokens the test re-measures (a shorter prefix)

    @property
    def tokens_per_step(self) -> int:
        return self.seq_len * self.batch


TINY = Settings(vocab_size=512, d_model=32, n_layers=2, n_heads=2, n_kv_heads=1, n_experts=4,
                top_k=2, d_expert=32, seq_len=32, batch=4, steps=6, warmup=2, eval_tokens=4096,
                check_tokens=1024)


def model_config(settings: Settings, variant: str):
    from models.explorer_moe import ExplorerMoEConfig

    dense = variant == "dense"
    return ExplorerMoEConfig(
        family="explorer_moe", architecture="ExplorerMoeForCausalLM",
        vocab_size=settings.vocab_size, d_model=settings.d_model, n_layers=settings.n_layers,
        n_heads=settings.n_heads, n_kv_heads=settings.n_kv_heads,
        d_ff=settings.top_k * settings.d_expert, rope_theta=settings.rope_theta,
        norm_eps=1e-5, max_position_embeddings=4 * settings.seq_len, tie_embeddings=True,
        n_experts=0 if dense else settings.n_experts, n_experts_per_tok=0 if dense else settings.top_k,
        d_expert=0 if dense else settings.d_expert, router_scoring="softmax", router_renormalize=True,
        balancing="none" if dense else variant,
        aux_coef=settings.aux_coef if variant == "aux" else 0.0, eos_token_ids=[0])


def batches(ids: torch.Tensor, settings: Settings, generator: torch.Generator):
    """Random windows of seq_len + 1 tokens from the training stream."""
    span = settings.seq_len + 1
    while True:
        starts = torch.randint(0, ids.numel() - span, (settings.batch,), generator=generator)
        window = torch.stack([ids[s:s + span] for s in starts.tolist()])   # (B, T+1)
        yield window[:, :-1], window[:, 1:]


def lr_at(step: int, settings: Settings) -> float:
    """Linear warm-up, then cosine decay to a tenth."""
    if step < settings.warmup:
        return settings.lr * (step + 1) / settings.warmup
    progress = (step - settings.warmup) / max(1, settings.steps - settings.warmup)
    return settings.lr * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * progress)))


@torch.no_grad()
def evaluate(model, ids: torch.Tensor, seq_len: int, max_tokens: Optional[int] = None) -> dict:
    """Mean next-token loss (nats/token) over non-overlapping windows of the held-out stream,
    and each MoE layer's load over the same tokens."""
    if max_tokens is not None:
        ids = ids[:max_tokens + 1]
    n_windows = (ids.numel() - 1) // seq_len
    total, count = 0.0, 0
    counts: dict[int, torch.Tensor] = {}
    moe = model.config.n_experts > 0
    for w in range(n_windows):
        chunk = ids[w * seq_len:(w + 1) * seq_len + 1]
        logits, ctx = model(chunk[None, :-1], return_context=True)
        total += float(F.cross_entropy(logits[0].float(), chunk[1:], reduction="sum"))
        count += seq_len
        for layer, aux in ctx.moe_aux.items():
            counts[layer] = counts.get(layer, 0) + aux.load()
    out = {"loss": total / count, "tokens": count}
    if moe:
        out["layers"] = [dict(layer=i, counts=[int(x) for x in counts[i]], **load_stats(counts[i]))
                         for i in sorted(counts)]
    return out


def unigram_loss(train_ids: torch.Tensor, held_ids: torch.Tensor, vocab_size: int) -> float:
    """Held-out loss of the training stream's token frequencies (add-one smoothed): the floor
    a model that ignores context reaches."""
    freq = torch.bincount(train_ids, minlength=vocab_size).double() + 1
    logp = (freq / freq.sum()).log()
    return float(-logp[held_ids].mean())


def setup_determinism(seed: int, threads: int) -> None:
    torch.manual_seed(seed)
    torch.set_num_threads(threads)
    torch.use_deterministic_algorithms(True)


def train_variant(variant: str, settings: Settings, train_ids: torch.Tensor, held_ids: torch.Tensor,
                  log=print) -> tuple[torch.nn.Module, dict]:
    """Train one variant from the seed; returns the model (weights rounded to bf16, as stored)
    and its training log."""
    from models.explorer_moe import ExplorerMoEForCausalLM
    from models.moe import update_selection_bias

    config = model_config(settings, variant)
    model = ExplorerMoEForCausalLM(config)
    torch.manual_seed(settings.seed)
    for p in model.parameters():  # one init for every variant (GPT-2 style N(0, 0.02))
        if p.dim() >= 2:
            torch.nn.init.normal_(p, std=0.02)
    model.train()
    decay = [p for n, p in model.named_parameters() if p.requires_grad and p.dim() >= 2]
    no_decay = [p for n, p in model.named_parameters() if p.requires_grad and p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": settings.weight_decay},
                             {"params": no_decay, "weight_decay": 0.0}],
                            lr=settings.lr, betas=(0.9, 0.95), foreach=False)
    generator = torch.Generator().manual_seed(settings.seed)  # same batches for every variant
    stream = batches(train_ids, settings, generator)
    moe = config.n_experts > 0
    history, start = [], time.perf_counter()
    for step in range(settings.steps):
        x, y = next(stream)
        logits, ctx = model(x, return_context=True)
        lm = F.cross_entropy(logits.reshape(-1, logits.shape[-1]).float(), y.reshape(-1))
        loss, aux_value = lm, 0.0
        if moe:  # mean over layers of the switch loss (top_k when level); trained on by "aux" only
            aux_total = torch.stack([aux.switch_loss() for aux in ctx.moe_aux.values()]).mean()
            aux_value = float(aux_total.detach())
            if variant == "aux":
                loss = lm + settings.aux_coef * aux_total
        for group in opt.param_groups:
            group["lr"] = lr_at(step, settings)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        if variant == "bias":
            for layer, aux in ctx.moe_aux.items():
                update_selection_bias(model.blocks[layer].mlp.router, aux.load(), settings.bias_rate)
        if step % 25 == 0 or step == settings.steps - 1:
            history.append({"step": step, "loss": round(float(lm.detach()), 4), "aux": round(aux_value, 4)})
            log(f"[{variant}] step {step}/{settings.steps} loss {float(lm.detach()):.3f} aux {aux_value:.3f} "
                f"{time.perf_counter() - start:.0f}s")
    model.eval()
    with torch.no_grad():  # the card's figures are those of the weights as stored (bf16)
        for p in model.parameters():
            p.copy_(p.to(torch.bfloat16).float())
    return model, {"history": history, "train_seconds": round(time.perf_counter() - start, 1)}


def param_counts(model) -> dict:
    """Total parameters, and those one token uses (attention, norms, embeddings, the router, and
    top_k of the n_experts experts)."""
    config = model.config
    total = sum(p.numel() for p in model.parameters() if p.requires_grad)
    if not config.n_experts:
        return {"total": total, "active": total}
    per_expert = 3 * config.d_model * config.d_expert
    unused = config.n_layers * (config.n_experts - config.n_experts_per_tok) * per_expert
    return {"total": total, "active": total - unused}


def save_checkpoint(model, tokenizer, folder: Path) -> None:
    from safetensors.torch import save_file
    from models.explorer_moe import checkpoint_tensors, config_to_hf

    folder.mkdir(parents=True, exist_ok=True)
    tensors = {k: v.to(torch.bfloat16) for k, v in checkpoint_tensors(model).items()}
    save_file(tensors, str(folder / "model.safetensors"), metadata={"format": "pt"})
    (folder / "config.json").write_text(json.dumps(config_to_hf(model.config), indent=2) + "\n")
    tokenizer.save(str(folder / "tokenizer.json"))
    (folder / "tokenizer_config.json").write_text(json.dumps({
        "tokenizer_class": "PreTrainedTokenizerFast", "eos_token": corpus_mod.EOT,
        "model_max_length": model.config.max_position_embeddings}, indent=2) + "\n")


CHECK_FILE = "held_out_check.json"


def write_check_tokens(out: Path, held_ids: torch.Tensor, settings: Settings, digest: str) -> None:
    """The first check_tokens + 1 held-out token ids, beside the checkpoints: the tests measure
    the cards' check figures on them, whatever standard library the test machine has."""
    out.mkdir(parents=True, exist_ok=True)
    ids = [int(i) for i in held_ids[:settings.check_tokens + 1]]
    (out / CHECK_FILE).write_text(json.dumps({"corpus_sha256": digest, "seq_len": settings.seq_len,
                                              "ids": ids}) + "\n")


def run(variants, settings: Settings, out: Path, tiny: bool = False, threads: int = 1, log=print) -> dict:
    """Train `variants` and write their folders under `out`; returns {variant: card figures}."""
    setup_determinism(settings.seed, threads)
    files = corpus_mod.pinned_files()
    if tiny:
        files = files[:40]
    corpus = corpus_mod.load(files=files)
    tokenizer = corpus_mod.train_tokenizer(corpus.train, settings.vocab_size)
    train_ids = torch.tensor(corpus_mod.encode(tokenizer, corpus.train))
    held_ids = torch.tensor(corpus_mod.encode(tokenizer, corpus.held_out))
    log(f"corpus: {len(corpus.train_files)} train files ({train_ids.numel()} tokens), "
        f"{len(corpus.held_out_files)} held-out files ({held_ids.numel()} tokens)")
    # on the tokens the models are scored on: the targets of the first eval_tokens windows
    unigram = unigram_loss(train_ids, held_ids[1:settings.eval_tokens + 1], settings.vocab_size)
    write_check_tokens(out, held_ids, settings, corpus.digest)
    cards = {}
    for variant in variants:
        model, trained = train_variant(variant, settings, train_ids, held_ids, log=log)
        full = evaluate(model, held_ids, settings.seq_len, max_tokens=settings.eval_tokens)
        check = evaluate(model, held_ids, settings.seq_len, max_tokens=settings.check_tokens)
        card = {
            "name": NAMES[variant], "variant": variant, "settings": asdict(settings), "tiny": tiny,
            "corpus": {"source": "Python standard library sources (CPython 3.11)",
                       "licence": corpus_mod.LICENCE, "files_list": "explorer/moe/corpus_files.txt",
                       "train_files": len(corpus.train_files), "held_out_files": len(corpus.held_out_files),
                       "train_tokens": int(train_ids.numel()), "held_out_tokens": int(held_ids.numel()),
                       "sha256": corpus.digest},
            "tokenizer": f"byte-level BPE, {settings.vocab_size} tokens, trained on the training files",
            "steps": settings.steps, "tokens_seen": settings.steps * settings.tokens_per_step,
            "params": param_counts(model), "unigram_loss": round(unigram, 4),
            "held_out": {"loss": round(full["loss"], 4), "tokens": full["tokens"],
                         "layers": full.get("layers", [])},
            "check": {"tokens": check["tokens"], "loss": round(check["loss"], 4),
                      "layers": check.get("layers", [])},
            "torch": torch.__version__, **trained,
        }
        folder = out / NAMES[variant]
        save_checkpoint(model, tokenizer, folder)
        (folder / "card.json").write_text(json.dumps(card, indent=1) + "\n")
        cards[variant] = card
        write_cards(out)
        log(f"[{variant}] held-out loss {full['loss']:.3f} (unigram {unigram:.3f}); max/mean load per layer: "
            + ", ".join(f"{l['max_over_mean']:.2f}" for l in full.get("layers", [])))
    return cards


BALANCING_TEXT = {
    "none": "none: plain top-k routing, nothing keeps the load level",
    "aux": "auxiliary loss n_experts * sum_e f_e * P_e (f_e: picks per token, summing to top_k), "
           "coefficient {aux_coef}, mean over layers",
    "bias": "selection bias (auxiliary-loss-free, DeepSeek-V3 style), updated by "
            "{bias_rate} * sign(mean load - load) after every step",
    "dense": "dense model (no experts): d_ff = top_k * d_expert, the MoE models' active size",
}


def training_time(cards: dict) -> str:
    """How long the models whose cards are written together took, from their records."""
    seconds = sum(card["train_seconds"] for card in cards.values())
    return (f"the {len(cards)} models of this training run took {seconds / 3600:.1f} h in all "
            f"({seconds:,.0f} s recorded) on one CPU thread")


def card_markdown(card: dict, siblings: dict) -> str:
    s, c = card["settings"], card["corpus"]
    dense = siblings.get("dense")
    lines = [
        f"# {card['name']}", "",
        "A small mixture-of-experts language model trained by this project "
        "(`python -m explorer.moe.train`), for the explorer's MoE tab. Not a useful model of "
        "Python: a demonstration of routing and load balancing.", "",
        "| | |", "|---|---|",
        f"| balancing | {BALANCING_TEXT[card['variant']].format(**s)} |",
        f"| architecture | Llama-style decoder, {s['n_layers']} layers, d_model {s['d_model']}, "
        f"{s['n_heads']} query heads : {s['n_kv_heads']} KV heads, RoPE θ {s['rope_theta']:g}, tied embeddings |",
    ]
    if card["variant"] != "dense":
        lines.append(f"| experts | {s['n_experts']} per layer, top-{s['top_k']}, each a SwiGLU MLP of width "
                     f"{s['d_expert']}; weights of the picked experts renormalized to sum to 1 |")
    p = card["params"]
    lines += [
        f"| parameters | {p['total']:,} total, {p['active']:,} active per token |",
        f"| corpus | {c['source']}: {c['train_files']} training files ({c['train_tokens']:,} tokens), "
        f"{c['held_out_files']} held-out files ({c['held_out_tokens']:,} tokens); list pinned in "
        f"`{c['files_list']}`; sha256 {c['sha256'][:16]}… |",
        f"| corpus licence | {c['licence']} |",
        f"| tokenizer | {card['tokenizer']} (`tokenizer.json`) |",
        f"| training | {card['steps']} steps of {s['batch']} × {s['seq_len']} tokens = "
        f"{card['tokens_seen']:,} tokens seen; AdamW, lr {s['lr']:g}, seed {s['seed']}, CPU fp32, one thread, "
        f"{card['train_seconds']:.0f} s |",
        f"| budget | {card['tokens_seen'] / c['train_tokens']:.2f} passes over the training tokens; "
        f"{training_time(siblings)} |",
        "| storage | bf16 safetensors; every figure below is measured on the stored weights |",
        "", f"## Held-out loss (nats/token, the first {card['held_out']['tokens']:,} held-out tokens)", "",
        "| model | loss |", "|---|---|",
        f"| this model | {card['held_out']['loss']:.3f} |",
    ]
    if dense is not None and card["variant"] != "dense":
        lines.append(f"| dense model of the same active size ({dense['name']}) | {dense['held_out']['loss']:.3f} |")
    lines.append(f"| unigram frequencies of the training files | {card['unigram_loss']:.3f} |")
    if card["held_out"]["layers"]:
        lines += ["", f"## Expert load over the held-out files ({card['held_out']['tokens']:,} tokens)", "",
                  "Share of the top-k picks per expert; max/mean 1.0 and entropy ln E = "
                  f"{math.log(s['n_experts']):.3f} when perfectly level.", "",
                  "| layer | max/mean | CV | entropy | smallest share | shares |", "|---|---|---|---|---|---|"]
        for layer in card["held_out"]["layers"]:
            shares = " ".join(f"{100 * x:.1f}%" for x in layer["share"])
            lines.append(f"| {layer['layer']} | {layer['max_over_mean']:.2f} | {layer['cv']:.2f} | "
                         f"{layer['entropy']:.3f} | {100 * layer['min_share']:.1f}% | {shares} |")
    lines += ["", f"`card.json` holds these figures; `tests/unit/test_moe_train.py` measures the loss and "
              f"load of the first {card['check']['tokens']:,} held-out tokens again from the stored weights.", ""]
    return "\n".join(lines)


def write_cards(out: Path) -> None:
    cards = {}
    for variant, name in NAMES.items():
        path = out / name / "card.json"
        if path.is_file():
            cards[variant] = json.loads(path.read_text())
    for variant, card in cards.items():
        (out / card["name"] / "MODEL_CARD.md").write_text(card_markdown(card, cards))


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m explorer.moe.train", description=__doc__.split("\n")[0])
    parser.add_argument("--variants", nargs="+", choices=VARIANTS, default=list(VARIANTS))
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--tiny", action="store_true", help="a tiny model, the first steps only (seconds)")
    parser.add_argument("--steps", type=int, help="override the number of steps")
    parser.add_argument("--threads", type=int, default=1, help="torch threads (fixed: results depend on it)")
    args = parser.parse_args(argv)
    settings = TINY if args.tiny else Settings()
    if args.steps:
        settings = replace(settings, steps=args.steps)
    run(args.variants, settings, args.out, tiny=args.tiny, threads=args.threads)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
