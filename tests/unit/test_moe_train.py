"""The training command of the project's own MoE models (explorer/moe/train.py) and the
checkpoints it shipped (explorer/moe/checkpoints/): the first steps of a tiny setting run and
are deterministic; each shipped checkpoint loads through models.loading like any checkpoint and
reproduces its card's held-out loss and expert-load figures; the card shows the collapse of
the unbalanced router (C15)."""
from __future__ import annotations

import json
import pytest
import torch

from explorer.moe import corpus, train
from explorer.moe.routing import moe_layers
from explorer.checkpoints.shipped import DENSE_NAME, MOE_NAMES
from models.loading import load_model

SHIPPED = train.DEFAULT_OUT
NAMES = MOE_NAMES + (DENSE_NAME,)


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory):
    """The tiny run of three variants, with every selection-bias update it makes recorded
    (a few +-rate steps can sum back to zero, so the updates are checked, not only the end)."""
    import models.moe

    out = tmp_path_factory.mktemp("moe-tiny")
    logs, updates = [], []
    apply = models.moe.update_selection_bias

    def recorded(router, load, rate):
        before = router.selection_bias.detach().clone()
        apply(router, load, rate)
        updates.append((router.selection_bias.detach() - before, load.float(), rate))

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(models.moe, "update_selection_bias", recorded)
        cards = train.run(["none", "bias", "dense"], train.TINY, out, tiny=True, log=logs.append)
    return out, cards, logs, updates


def test_tiny_training_writes_loadable_checkpoints(tiny_run):
    out, cards, logs, updates = tiny_run
    assert any("step 0/" in line for line in logs)
    for variant, card in cards.items():
        folder = out / train.NAMES[variant]
        for name in ("config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json",
                     "MODEL_CARD.md", "card.json"):
            assert (folder / name).is_file(), name
        model = load_model(folder, device="cpu", dtype=torch.float32)
        trained = sum(p.numel() for n, p in model.named_parameters() if not n.endswith("selection_bias"))
        assert trained == card["params"]["total"]
        # a tiny model after 6 steps: about ln(512) = 6.24 nats, far from trained, not broken
        assert 4.0 < card["held_out"]["loss"] < 7.0
        assert card["steps"] == train.TINY.steps
        assert card["tokens_seen"] == train.TINY.steps * train.TINY.batch * train.TINY.seq_len
        if variant == "dense":
            assert moe_layers(model) == [] and card["held_out"]["layers"] == []
        else:
            assert moe_layers(model) == list(range(train.TINY.n_layers))
            for layer in card["held_out"]["layers"]:
                assert sum(layer["counts"]) == card["held_out"]["tokens"] * train.TINY.top_k
                assert layer["max_over_mean"] >= 1.0
    # the bias variant's selection bias is nudged after every step of every MoE layer, by
    # rate * sign(mean load - load): up for under-loaded experts, down for over-loaded ones
    assert len(updates) == train.TINY.steps * train.TINY.n_layers
    for change, load, rate in updates:
        assert torch.equal(change.sign(), (load.mean() - load).sign())
        assert torch.allclose(change.abs()[load != load.mean()], torch.tensor(rate))
    bias = load_model(out / train.NAMES["bias"], device="cpu", dtype=torch.float32)
    assert bias.blocks[0].mlp.router.selection_bias is not None
    none = load_model(out / train.NAMES["none"], device="cpu", dtype=torch.float32)
    assert none.blocks[0].mlp.router.selection_bias is None
    assert "PSF" in (out / train.NAMES["none"] / "MODEL_CARD.md").read_text()


def test_tiny_training_is_deterministic(tiny_run, tmp_path):
    out, cards, _, _ = tiny_run
    again = train.run(["bias"], train.TINY, tmp_path, tiny=True, log=lambda *_: None)
    name = train.NAMES["bias"]
    assert (tmp_path / name / "model.safetensors").read_bytes() == (out / name / "model.safetensors").read_bytes()
    assert again["bias"]["held_out"] == cards["bias"]["held_out"]


def test_corpus_list_is_pinned_and_split_by_file():
    files = corpus.pinned_files()
    assert len(files) == len(set(files)) > 500
    assert not any(f.startswith("encodings/") or "/test" in f or f.startswith("test") for f in files)
    train_files, held = corpus.split(files)
    assert set(train_files).isdisjoint(held) and len(train_files) + len(held) == len(files)
    assert len(held) == len(files) // corpus.HELD_OUT_EVERY + (len(files) % corpus.HELD_OUT_EVERY > corpus.HELD_OUT_EVERY // 2)


# ---------------------------------------------------------------------------- shipped checkpoints

def shipped_card(name: str) -> dict:
    path = SHIPPED / name / "card.json"
    if not path.is_file():
        pytest.fail(f"{path} is missing: run python -m explorer.moe.train")
    return json.loads(path.read_text())


def test_shipped_checkpoints_fit_the_budget():
    total = sum(p.stat().st_size for n in NAMES for p in (SHIPPED / n).iterdir())
    assert total <= 60e6, f"{total / 1e6:.1f} MB"


@pytest.mark.parametrize("name", NAMES)
def test_shipped_checkpoint_reproduces_its_card(name):
    """The card's check figures, measured again from the stored (bf16) weights loaded in fp32
    through models.loading, on the held-out token ids stored beside the checkpoints."""
    card = shipped_card(name)
    check = json.loads((SHIPPED / train.CHECK_FILE).read_text())
    ids = torch.tensor(check["ids"])
    assert ids.numel() == card["check"]["tokens"] + 1
    model = load_model(SHIPPED / name, device="cpu", dtype=torch.float32)
    measured = train.evaluate(model, ids, check["seq_len"])
    assert measured["tokens"] == card["check"]["tokens"]
    assert measured["loss"] == pytest.approx(card["check"]["loss"], abs=2e-3)
    for got, want in zip(measured.get("layers", []), card["check"]["layers"], strict=True):
        assert got["layer"] == want["layer"]
        assert got["max_over_mean"] == pytest.approx(want["max_over_mean"], abs=0.02)
        assert got["entropy"] == pytest.approx(want["entropy"], abs=0.01)
        # a pick may flip on another CPU's rounding, not more than a few in a thousand
        assert sum(abs(a - b) for a, b in zip(got["counts"], want["counts"])) <= 0.005 * sum(want["counts"])


def pinned_corpus_or_skip():
    """(this Python's standard-library corpus, the shipped tokenizer); the test is skipped where
    that corpus is not the one the cards record (sha256)."""
    from tokenizers import Tokenizer

    card = shipped_card(MOE_NAMES[0])
    try:
        local = corpus.load()
    except corpus.CorpusError:
        pytest.skip("no CPython 3.11 standard library here")
    if local.digest != card["corpus"]["sha256"]:
        pytest.skip("this Python's standard library sources differ from the training corpus")
    return local, Tokenizer.from_file(str(SHIPPED / MOE_NAMES[0] / "tokenizer.json"))


def test_check_tokens_are_the_local_corpus_when_it_matches():
    check = json.loads((SHIPPED / train.CHECK_FILE).read_text())
    local, tok = pinned_corpus_or_skip()
    ids = corpus.encode(tok, local.held_out)[:len(check["ids"])]
    assert ids == check["ids"]


def test_cards_show_the_collapse_without_balancing():
    """C15: without balancing every layer has an expert that is almost never used and the
    deepest layer's busiest expert takes several times its share; with the auxiliary loss or
    the selection bias every expert keeps a real share and the worst layer stays far lower."""
    cards = {name: shipped_card(name)["held_out"]["layers"] for name in MOE_NAMES}
    worst = {name: max(l["max_over_mean"] for l in layers) for name, layers in cards.items()}
    none, aux, bias = MOE_NAMES
    assert all(l["min_share"] < 0.001 for l in cards[none]), cards[none]
    assert worst[none] > 3.0 and worst[none] > 1.5 * max(worst[aux], worst[bias]), worst
    for name in (aux, bias):
        assert all(l["min_share"] > 0.04 for l in cards[name]), cards[name]
        assert worst[name] < 2.5, worst
    for name in MOE_NAMES:
        card = shipped_card(name)
        assert card["held_out"]["loss"] < card["unigram_loss"] - 1.0  # it learned something


@pytest.mark.parametrize("variant", ["bias", "dense"])
def test_family_runs_with_the_kv_cache(tiny_run, variant):
    """explorer-moe through the engine's KV cache: a prefill then one token at a time gives the
    full forward's logits, and the routing recorded token by token is the full forward's."""
    from models.forward import Recorder

    out, _, _, _ = tiny_run
    model = load_model(out / train.NAMES[variant], device="cpu", dtype=torch.float32)
    ids = torch.randint(0, train.TINY.vocab_size, (1, 24), generator=torch.Generator().manual_seed(1))
    full = model(ids)
    cache = model.new_cache(32)
    steps = [model(ids[:, :16], cache=cache)] + [model(ids[:, t:t + 1], cache=cache) for t in range(16, 24)]
    torch.testing.assert_close(torch.cat(steps, dim=1), full, atol=1e-5, rtol=1e-5)
    if variant != "dense":
        rec_full, rec_step = Recorder(["expert_picks"]), Recorder(["expert_picks"])
        model(ids, recorder=rec_full)
        model(ids[:, :1], recorder=rec_step)
        assert torch.equal(rec_full.get("expert_picks", 1)[:, :1], rec_step.get("expert_picks", 1))


def test_the_shipped_cards_state_the_training_time_their_records_hold():
    """A card's prose is derived from the records in card.json, never typed: the shipped
    MODEL_CARD.md files are exactly what card_markdown writes from them today, and the time
    they state is the sum of the four recorded training times."""
    from pathlib import Path

    folder = Path(train.__file__).parent / "checkpoints"
    cards = {variant: json.loads((folder / name / "card.json").read_text())
             for variant, name in train.NAMES.items()}
    assert train.training_time({"a": {"train_seconds": 3600.0}, "b": {"train_seconds": 1800.0}}) == (
        "the 2 models of this training run took 1.5 h in all (5,400 s recorded) on one CPU thread")
    total = sum(card["train_seconds"] for card in cards.values())
    for card in cards.values():
        shipped = (folder / card["name"] / "MODEL_CARD.md").read_text()
        assert shipped == train.card_markdown(card, cards)
        assert f"{total / 3600:.1f} h in all" in shipped


# ---------------------------------------------------------------------------- today's code, the shipped training
# train_variant records the training loss (and the switch loss) of the batch it steps on, rounded
# to 4 decimals, at steps 0, 25, 50, ... (card.json's "history"). Trained again from the seed on
# the same corpus with today's models.explorer_moe, the figures must come back: a change to the
# init, the attention, the norms or the router since the weights were made moves them. The
# tolerances: the rounding (±5e-5 each side) and fp32 sums done in another order by another
# CPU's kernels; trained here with 1 and with 2 threads, step 25 agreed to the 4th decimal. On
# an AMD EPYC host (2026-12-07) the switch loss at step 25 came back 2.4271 against the recorded
# 2.4257 (the training loss within 1e-3), on this commit and its parent alike: 2e-3 there.
STEP0_TOL = 2e-4
STEP25_TOL = 2e-3


@pytest.fixture(scope="module")
def shipped_training_ids():
    """The shipped models' training stream, encoded with their tokenizer; skipped where this
    Python's standard library is not the pinned corpus the cards record (sha256)."""
    local, tok = pinned_corpus_or_skip()
    ids = torch.tensor(corpus.encode(tok, local.train))
    assert ids.numel() == shipped_card(MOE_NAMES[0])["corpus"]["train_tokens"]
    return ids


def retrain(variant: str, ids: torch.Tensor, steps: int) -> list[dict]:
    """The first `steps` steps of the shipped setting (card.json's settings), from the seed, one
    thread, deterministic, as python -m explorer.moe.train runs them; their history. Steps 0-31
    are warm-up, whose learning rate does not depend on the number of steps."""
    from dataclasses import replace

    card = shipped_card(train.NAMES[variant])
    settings = train.Settings(**card["settings"])
    assert settings == train.Settings(), "the cards were trained with today's default settings"
    assert steps <= settings.warmup
    threads, deterministic = torch.get_num_threads(), torch.are_deterministic_algorithms_enabled()
    try:
        train.setup_determinism(settings.seed, 1)
        _, trained = train.train_variant(variant, replace(settings, steps=steps), ids, None, log=lambda *_: None)
    finally:
        torch.use_deterministic_algorithms(deterministic)
        torch.set_num_threads(threads)
    return trained["history"]


def assert_history(variant: str, got: list[dict], steps: dict[int, float]) -> None:
    want = {entry["step"]: entry for entry in shipped_card(train.NAMES[variant])["history"]}
    assert [entry["step"] for entry in got] == list(steps)
    for entry in got:
        tol = steps[entry["step"]]
        assert entry["loss"] == pytest.approx(want[entry["step"]]["loss"], abs=tol), (variant, entry)
        assert entry["aux"] == pytest.approx(want[entry["step"]]["aux"], abs=tol), (variant, entry)


@pytest.mark.slow   # ~4 s a variant: one step of the shipped setting on the whole corpus
@pytest.mark.parametrize("variant", train.VARIANTS)
def test_todays_code_gives_the_shipped_first_step(shipped_training_ids, variant):
    """Step 0 of each shipped model: the initial weights and routing on the first batch give the
    card's loss and switch loss (8.3457 and 2.1668 for the MoE models, 8.3429 for the dense)."""
    assert_history(variant, retrain(variant, shipped_training_ids, 1), {0: STEP0_TOL})


@pytest.mark.slow
@pytest.mark.parametrize("variant", train.VARIANTS)
def test_todays_code_reproduces_the_shipped_training(shipped_training_ids, variant):
    """26 steps of each shipped model (about 30 s each on one free core): step 25's loss and
    switch loss, after 25 AdamW updates (and, for "bias", 25 selection-bias updates), are the
    card's."""
    assert_history(variant, retrain(variant, shipped_training_ids, 26), {0: STEP0_TOL, 25: STEP25_TOL})
