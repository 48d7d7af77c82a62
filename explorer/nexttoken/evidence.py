"""The claims board's evidence for C21 and C22 (explorer/claims/evidence.py): our own claims about
the logit lens (not statements of the notes, like C20), measured on the loaded model by the Next
token tab's own run (runs.lens) and judged by the criterion functions its summary uses:

    C21  runs.last_layer_exact   the lens's last layer is the model's logits, bit for bit
    C22  runs.agreement_rises    the lens agrees more with the final prediction deep than shallow

C21 runs the tab's default prompt; C22 the first C22_TOKENS tokens of the long text (the Python
reference's "Execution model"), its last LENS_POSITIONS positions. `cN_from(result)` is a pure
function of the result, so a test can hand it a broken one (a lens whose last layer is off by
one ulp; a lens whose layers agree no more deep than shallow) and see it fail.
"""
from __future__ import annotations

from explorer.claims.evidence import Evidence, Measure
from explorer.nexttoken import runs
from explorer.nexttoken.distribution import LENS_POSITIONS
from explorer.texts import long_text

TAB = "next_token"
SECTION = "section-next-lens-section"        # ctx.section("next.lens.section")
C21_PROMPT = "The capital of France is"
C22_TOKENS = 64


def c22_text(tokenizer) -> str:
    """The first C22_TOKENS tokens of the long text, as text (decoded back from its ids, so the
    tab's encode gives those tokens)."""
    ids = tokenizer(long_text()[: 16 * C22_TOKENS], add_special_tokens=False)["input_ids"][:C22_TOKENS]
    return tokenizer.decode(ids)


def c21_from(result: runs.Lens) -> Evidence:
    return Evidence(
        claim="C21", passed=bool(runs.last_layer_exact(result)),
        measures=(Measure("next.m.diff", result.max_difference, "", 3),),
        criterion="claims.C21.criterion", tab=TAB, section=SECTION, fields={"prompt": C21_PROMPT},
        model=result.name)


def evidence_c21(loaded) -> Evidence:
    return c21_from(runs.lens(loaded, C21_PROMPT))


def c22_from(result: runs.Lens) -> Evidence:
    split = runs.thirds(result.agreement)
    return Evidence(
        claim="C22", passed=bool(runs.agreement_rises(result)),
        measures=(Measure("next.m.first", 100 * split.first, "%", 3),
                  Measure("next.m.last", 100 * split.last, "%", 3)),
        criterion="claims.C22.criterion", tab=TAB, section=SECTION,
        fields={"tokens": C22_TOKENS, "positions": LENS_POSITIONS, "rise": 100 * runs.MIN_AGREEMENT_RISE},
        model=result.name)


def evidence_c22(loaded) -> Evidence:
    return c22_from(runs.lens(loaded, c22_text(loaded.tokenizer)))
