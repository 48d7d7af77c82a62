"""Where a precision's top-1 loss comes from: the weights' rounding or the inputs', and which
matrices, on a real checkpoint (issue 30: why Gemma 3's served default stays fp32).

    python -m bench.precision_parts                                 # Gemma 3, 512 tokens
    python -m bench.precision_parts --model smollm2-135m-instruct --tokens 256

One full forward of the engine over the text the served default is chosen on
(explorer.generate.precision.CHOICE_TEXT after the model's BOS where it has one, as
bench/precision.py scores it: precision.evaluation_ids) gives the fp32 reference logits; every variant is the same forward with some
products changed, through the engine's own hook for them (models.layers.weight_provider, the
table the decode steps use for their bf16 and int8 copies):

- bf16 emulated: F.linear on the weight and/or the product's input rounded to bf16 (and back),
  in all matrices, in all but the LM head, or in one kind of matrix only (by its name in the
  model: wqkv, wo, w_gate_up, w_down);
- the kernels: every matrix through engine.quantized.QuantWeight, bf16 (AVX512_BF16
  or the portable loop), int8 and gguf (the checkpoint's own GGUF codes, where its folder
  keeps them), the products the decode steps run.

Each line, scored as the Precision section scores (explorer.generate.precision.quality): top-1
agreement with the fp32 logits, how many positions differ and how many of those are near ties
(fp32's two best logits within NEAR_TIE: a perturbation of the size bf16 makes flips those
first), max |delta logit|, perplexity.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Callable, Optional

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

MATRIX_KINDS = ("wqkv", "wo", "w_gate_up", "w_down")


def _bf16(t):
    import torch
    return t.to(torch.bfloat16).to(torch.float32)


def emulated_table(model, round_weights: bool, round_inputs: bool, head: bool = True,
                   only: Optional[str] = None) -> dict:
    """{module: product} with the weight and/or the input rounded to bf16 in F.linear.
    head=False keeps the LM head fp32; only=<kind> rounds that kind of matrix alone (and keeps
    the head fp32)."""
    import torch.nn.functional as F

    from models.layers import Linear

    names = {module: name for name, module in model.named_modules()}
    matrices = [(m, m.weight) for m in model.modules() if isinstance(m, Linear)]
    table = {}
    for module, weight in matrices + [(model, model.lm_head_weight())]:
        is_head = module is model
        rounded = (head if is_head else (only is None or names[module].endswith(only)))
        if is_head and only is not None:
            rounded = False
        w = _bf16(weight) if rounded and round_weights else weight
        x_round = rounded and round_inputs

        def product(x, bias, w=w, x_round=x_round):
            return F.linear(_bf16(x) if x_round else x, w, bias)
        table[module] = product
    return table


def kernel_table(model, weights: str) -> dict:
    """{module: the decode steps' own product} for every matrix in `weights` (bf16, int8, gguf)."""
    from engine.quantized import weights_of
    return {module: (lambda x, bias, q=q: q(x, bias)) for module, q in weights_of(model, weights).table.items()}


def variants(model) -> list[tuple[str, Callable[[], dict]]]:
    out = [
        ("weights bf16, inputs fp32", lambda: emulated_table(model, True, False)),
        ("weights fp32, inputs bf16", lambda: emulated_table(model, False, True)),
        ("weights and inputs bf16", lambda: emulated_table(model, True, True)),
        ("weights and inputs bf16, LM head fp32", lambda: emulated_table(model, True, True, head=False)),
    ]
    out += [(f"weights and inputs bf16 in {kind} only", lambda kind=kind: emulated_table(model, True, True, only=kind))
            for kind in MATRIX_KINDS]
    from engine.quantized import available_weights
    out += [(f"kernel {w}", lambda w=w: kernel_table(model, w)) for w in available_weights(model)[1:]]
    return out


def measure(model, ids: list, only_first: Optional[int] = None) -> dict:
    """{"reference": (perplexity, near ties), variant: explorer.generate.precision.Price}, one
    forward each, scored by the Precision section's own measurement."""
    import torch

    from explorer.generate.precision import near_ties, quality
    from models.forward import RunOptions
    from models.layers import weight_provider

    batch = torch.tensor([ids[:-1]])

    def logits(table):
        with torch.no_grad(), weight_provider(table):
            return model(batch, options=RunOptions())[0].float()

    found = {"fp32": logits(None)}
    for label, make in variants(model)[:only_first]:
        found[label] = logits(make())
    scored = quality(found, ids)
    reference = scored.pop("fp32")
    return {"reference": (reference.perplexity, int(near_ties(found["fp32"]).sum())), **scored}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default="gemma-3-270m")
    parser.add_argument("--tokens", type=int, default=512, help="tokens of the choice text scored")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--first", type=int, default=None, help="only the first N variants (tests)")
    args = parser.parse_args(argv)

    import torch
    from transformers import AutoTokenizer

    from explorer.checkpoints import prepare_embedded
    from explorer.generate.precision import CHOICE_TEXT, NEAR_TIE, evaluation_ids
    from models.loading import load_model

    torch.set_num_threads(args.threads)
    folder = prepare_embedded(args.model)
    tokenizer = AutoTokenizer.from_pretrained(folder)
    model = load_model(folder, device="cpu", dtype=torch.float32)
    ids = evaluation_ids(tokenizer, CHOICE_TEXT, args.tokens)
    found = measure(model, ids, args.first)
    perplexity, near = found.pop("reference")
    print(f"{args.model}, {len(ids) - 1} tokens of \"{CHOICE_TEXT}\": fp32 perplexity {perplexity:.3f}; "
          f"{near} positions are near ties (two best logits within {NEAR_TIE})")
    for label, price in found.items():
        print(f"  {label:44s} top-1 {price.top1:.4f} ({price.flips} flips, {price.near_tie_flips} on "
              f"near ties)  max |dlogit| {price.max_dlogit:6.3f}  perplexity {price.perplexity:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
