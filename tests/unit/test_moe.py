"""models.moe: the router variants, grouped experts, shared experts, auxiliary losses."""
import pytest
import torch

from models.moe import Experts, MoEConfig, MoEFeedForward, Router, update_selection_bias

D, F_, E, K = 16, 24, 6, 2


def cfg(**kw):
    return MoEConfig(**{"d_model": D, "d_expert": F_, "n_experts": E, "top_k": K, **kw})


def tokens(n=40, seed=0):
    return torch.randn(n, D, generator=torch.Generator().manual_seed(seed))


def randomized(module, seed=1):
    """Random values in every parameter (biases included, which start at zero)."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in module.parameters():
            p.copy_(torch.randn(p.shape, generator=g) * 0.5)
    return module


@pytest.mark.parametrize("scoring", ["softmax", "sigmoid"])
def test_renormalisation(scoring):
    torch.manual_seed(0)
    on = Router(cfg(scoring=scoring, renormalize=True))
    off = Router(cfg(scoring=scoring, renormalize=False))
    off.load_state_dict(on.state_dict())
    x = tokens()
    r_on, r_off = on(x), off(x)
    assert torch.equal(r_on.picks, r_off.picks)
    assert torch.allclose(r_on.weights.sum(-1), torch.ones(len(x)), atol=1e-6)
    # without renormalisation the weights are the scores of the picked experts themselves
    assert torch.allclose(r_off.weights, r_off.probs.gather(-1, r_off.picks))
    assert torch.allclose(r_on.weights, r_off.weights / r_off.weights.sum(-1, keepdim=True))
    if scoring == "softmax":
        assert torch.allclose(r_off.probs.sum(-1), torch.ones(len(x)), atol=1e-6)
        assert (r_off.weights.sum(-1) < 1 - 1e-3).all()  # k < E leaves probability behind
    # the picks are the top-k scores, best first
    assert torch.equal(r_off.picks, r_off.probs.topk(K, dim=-1).indices)


def test_topk_softmax_equals_softmax_renormalised():
    """gpt-oss's order (top-k of the logits, softmax over those k) gives Mixtral's weights."""
    torch.manual_seed(0)
    a, b = Router(cfg(scoring="topk_softmax")), Router(cfg(scoring="softmax", renormalize=True))
    b.load_state_dict(a.state_dict())
    x = tokens()
    ra, rb = a(x), b(x)
    assert torch.equal(ra.picks, rb.picks)
    assert torch.allclose(ra.weights, rb.weights, atol=1e-6)


def test_routed_scale_scales_weights_only():
    torch.manual_seed(0)
    a, b = Router(cfg(scoring="sigmoid")), Router(cfg(scoring="sigmoid", routed_scale=2.5))
    b.load_state_dict(a.state_dict())
    ra, rb = a(tokens()), b(tokens())
    assert torch.equal(ra.picks, rb.picks)
    assert torch.allclose(rb.weights, 2.5 * ra.weights)


@pytest.mark.parametrize("scoring", ["softmax", "sigmoid", "topk_softmax"])
def test_selection_bias_changes_picks_not_weights(scoring):
    torch.manual_seed(0)
    router = Router(cfg(scoring=scoring, selection_bias=True, renormalize=False))
    x = tokens(60)
    before = router(x)
    with torch.no_grad():
        router.selection_bias[3] = 100.0   # expert 3 now always chosen
    after = router(x)
    assert (after.picks == 3).any(-1).all()
    assert not torch.equal(before.picks, after.picks)
    # identical logits and probabilities: the bias is not part of the scores
    assert torch.equal(before.logits, after.logits) and torch.equal(before.probs, after.probs)
    # each weight is still the unbiased score of its expert
    if scoring == "topk_softmax":
        expected = torch.softmax(after.logits.gather(-1, after.picks), -1)
    else:
        expected = after.probs.gather(-1, after.picks)
    assert torch.allclose(after.weights, expected)
    # where the bias did not change the choice, the weights are bit-identical
    same = (before.picks == after.picks).all(-1)
    assert same.any()
    assert torch.equal(before.weights[same], after.weights[same])


def test_update_selection_bias_moves_toward_balance():
    router = Router(cfg(selection_bias=True))
    load = torch.tensor([10, 0, 5, 5, 5, 5])
    update_selection_bias(router, load, rate=0.1)
    assert router.selection_bias.tolist() == pytest.approx([-0.1, 0.1, 0, 0, 0, 0])  # mean load 5
    assert not router.selection_bias.requires_grad
    with pytest.raises(ValueError, match="no selection bias"):
        update_selection_bias(Router(cfg()), load)


@pytest.mark.parametrize("kind", ["silu", "gpt_oss"])
def test_grouped_experts_equal_every_expert_reference(kind):
    extra = dict(expert_bias=True, swiglu_limit=0.6) if kind == "gpt_oss" else {}
    torch.manual_seed(0)
    experts = randomized(Experts(cfg(**extra)))
    x = tokens(50)
    r = Router(cfg())(x)
    grouped = experts(x, r.picks, r.weights)
    dense = experts.every_expert(x, r.picks, r.weights)
    assert (grouped - dense).abs().max() <= 1e-5
    # one token (the decode path) agrees too
    assert (experts(x[:1], r.picks[:1], r.weights[:1]) - dense[:1]).abs().max() <= 1e-5


def test_grouped_experts_run_only_on_their_tokens():
    """Each expert receives exactly the tokens routed to it."""
    torch.manual_seed(0)
    experts = Experts(cfg())
    seen = {}
    original = experts.expert

    def spy(e, xs):
        seen[e] = seen.get(e, 0) + xs.shape[0]
        return original(e, xs)

    experts.expert = spy
    x = tokens(30)
    r = Router(cfg())(x)
    experts(x, r.picks, r.weights)
    counts = torch.bincount(r.picks.reshape(-1), minlength=E).tolist()
    assert seen == {e: c for e, c in enumerate(counts) if c}
    assert sum(seen.values()) == 30 * K


def test_grouped_experts_backward_matches_reference():
    torch.manual_seed(0)
    ff = MoEFeedForward(cfg())
    x = tokens(20).requires_grad_(True)
    r = ff.router(x)
    grads = []
    for fn in (ff.experts.forward, ff.experts.every_expert):
        ff.zero_grad()
        x.grad = None
        fn(x, r.picks, r.weights.detach()).pow(2).sum().backward(retain_graph=True)
        grads.append((x.grad.clone(), ff.experts.w_gate_up.grad.clone(), ff.experts.w_down.grad.clone()))
    for a, b in zip(*grads):
        assert (a - b).abs().max() <= 1e-5
    # the router learns through the weights
    ff.zero_grad()
    y, aux = ff(x[None])
    (y.pow(2).sum() + aux.switch_loss()).backward()
    assert ff.router.weight.grad.abs().sum() > 0


@pytest.mark.parametrize("gated", [False, True])
def test_shared_expert_always_runs(gated):
    torch.manual_seed(0)
    ff = randomized(MoEFeedForward(cfg(n_shared=1, d_shared=20, shared_gate=gated)))
    x = tokens(12)[None]                                                   # (1, 12, d)
    y, aux = ff(x)
    h = x[0]
    routed = ff.experts(h, aux.picks[0], aux.weights[0])
    shared = ff.shared(h)
    if gated:
        shared = torch.sigmoid(ff.shared_gate(h)) * shared
    assert (y[0] - (routed + shared)).abs().max() <= 1e-6
    # every token gets the shared expert's contribution, whatever its routing
    assert (shared.abs().sum(-1) > 0).all()
    # with the routed experts' outputs zeroed, what remains is the shared expert
    with torch.no_grad():
        ff.experts.w_down.zero_()
    y0, _ = ff(x)
    assert (y0[0] - shared).abs().max() <= 1e-6


def test_switch_loss_equals_transformers():
    from transformers.models.mixtral.modeling_mixtral import load_balancing_loss_func
    torch.manual_seed(0)
    ff = MoEFeedForward(cfg())
    x = torch.randn(3, 11, D)
    _, aux = ff(x)
    ref = load_balancing_loss_func((aux.logits.reshape(-1, E),), E, K)
    assert abs(aux.switch_loss().item() - ref.item()) <= 1e-6


def test_aux_losses_at_balance_and_imbalance():
    c = cfg(aux_loss_coef=0.01, seq_aux_loss_coef=0.001)
    # perfect balance: uniform probabilities, every expert picked equally often
    t = E * 2
    picks = torch.stack([torch.arange(t) % E, (torch.arange(t) + 1) % E], -1)[None]   # (1, T, k)
    from models.moe import MoEAux
    uniform = MoEAux(c, torch.zeros(1, t, E), torch.full((1, t, E), 1 / E), picks, torch.full((1, t, K), 0.5))
    assert uniform.switch_loss().item() == pytest.approx(K)
    assert uniform.sequence_loss().item() == pytest.approx(1.0)
    assert uniform.loss.item() == pytest.approx(0.01 * K + 0.001)
    # everything on experts 0 and 1 with the probability mass there: larger losses
    probs = torch.zeros(1, t, E)
    probs[..., :2] = 0.5
    skewed = MoEAux(c, probs, probs, torch.tensor([0, 1]).expand(1, t, K), torch.full((1, t, K), 0.5))
    assert skewed.switch_loss().item() == pytest.approx(E * (1 * 0.5 + 1 * 0.5))
    assert skewed.sequence_loss().item() == pytest.approx(E / K)
    assert skewed.load().tolist() == [t, t, 0, 0, 0, 0]


def test_sequence_loss_is_per_sequence():
    """Two sequences each using only its own half of the experts are imbalanced within each
    sequence, even though the batch as a whole is balanced."""
    c = cfg()
    t = 6
    from models.moe import MoEAux
    probs = torch.zeros(2, t, E)
    probs[0, :, :3], probs[1, :, 3:] = 1 / 3, 1 / 3
    picks = torch.stack([torch.tensor([[0, 1], [1, 2], [2, 0]] * 2), torch.tensor([[3, 4], [4, 5], [5, 3]] * 2)])
    aux = MoEAux(c, probs, probs, picks, torch.full((2, t, K), 0.5))
    assert aux.switch_loss().item() == pytest.approx(K)       # the batch is balanced
    assert aux.sequence_loss().item() == pytest.approx(2.0)   # each sequence uses half the experts


def test_standalone_interface_and_recording():
    torch.manual_seed(0)
    ff = MoEFeedForward(cfg(aux_loss_coef=0.01))
    x = torch.randn(2, 5, D)
    seen = {}
    y, aux = ff(x, record=lambda point, value: seen.__setitem__(point, value))
    assert y.shape == x.shape
    assert aux.loss.item() == pytest.approx(0.01 * aux.switch_loss().item())
    assert seen["router_logits"].shape == (2, 5, E) and seen["router_probs"].shape == (2, 5, E)
    assert seen["expert_picks"].shape == (2, 5, K) and seen["expert_weights"].shape == (2, 5, K)
    assert int(aux.load().sum()) == 2 * 5 * K


def test_config_is_checked():
    with pytest.raises(ValueError, match="top_k"):
        cfg(top_k=E + 1)
    with pytest.raises(ValueError, match="scoring"):
        cfg(scoring="relu")


def test_a_model_collects_each_moe_layers_aux_for_training():
    """ctx.moe_aux holds every MoE layer's MoEAux; its losses train the routers through the
    whole model (Mixtral family, built from a ModelConfig, random init)."""
    from models.config import ModelConfig
    from models.mixtral import MixtralForCausalLM
    torch.manual_seed(0)
    config = ModelConfig(family="mixtral", vocab_size=50, d_model=D, n_layers=2, n_heads=2, n_kv_heads=1,
                         d_ff=F_, n_experts=E, n_experts_per_tok=K, d_expert=F_, router_aux_loss_coef=0.02)
    model = MixtralForCausalLM(config)
    ids = torch.randint(0, 50, (2, 7))
    logits, ctx = model(ids, return_context=True)
    assert sorted(ctx.moe_aux) == [0, 1]
    aux = sum(a.loss for a in ctx.moe_aux.values())
    assert aux.item() == pytest.approx(0.02 * sum(a.switch_loss().item() for a in ctx.moe_aux.values()))
    loss = torch.nn.functional.cross_entropy(logits.reshape(-1, 50), ids.reshape(-1)) + aux
    loss.backward()
    for block in model.blocks:
        assert block.mlp.router.weight.grad.abs().sum() > 0
        assert block.mlp.experts.w_gate_up.grad.abs().sum() > 0
