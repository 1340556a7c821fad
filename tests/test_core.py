"""Foundation claims, proven by computation: masks, padding, permutation, position math, traced = fast path."""

import dataclasses
import math

import pytest
import torch

from viz_model import ModelConfig, TinyTransformer, masks, positional, rope

ENCODINGS = ["none", "sinusoidal", "learned", "rope"]


def make_model(pos="rope", **kw) -> TinyTransformer:
    torch.manual_seed(0)
    cfg = ModelConfig.preset("tiny", vocab_size=40, pos_encoding=pos, **kw)
    return TinyTransformer(cfg).eval()


def ids(B=2, T=12, seed=1):
    g = torch.Generator().manual_seed(seed)
    return torch.randint(5, 40, (B, T), generator=g)


# ---- config ---------------------------------------------------------------------------------

@pytest.mark.parametrize("bad, message", [
    (dict(d_model=30, n_heads=4), "divisible"),
    (dict(d_model=12, n_heads=4, pos_encoding="rope"), "even"),
    (dict(d_model=8192), "between"),     # above MAX_D_MODEL = 4096
    (dict(max_len=200_000), "between"),  # above MAX_LEN = 131_072
    (dict(pos_encoding="xpos"), "pos_encoding"),  # alibi is a method since #40
    (dict(pos_encoding="learned", rope_scaling={"type": "linear", "factor": 2}), "only applies"),
    (dict(rope_scaling={"type": "yarn", "factor": 4}), "original_max_position_embeddings"),
    (dict(rope_scaling={"type": "linear", "factor": 0.5}), ">= 1"),
])
def test_invalid_config_raises_a_clear_value_error(bad, message):
    with pytest.raises(ValueError, match=message):
        ModelConfig(**bad)


def test_presets_are_plain_dataclasses():
    cfg = ModelConfig.preset("classroom")
    assert dataclasses.replace(cfg, n_layers=3).n_layers == 3
    assert ModelConfig.from_dict(cfg.to_dict()) == cfg


# ---- masks ----------------------------------------------------------------------------------

def test_mask_gallery_shapes_and_semantics():
    T = 6
    assert masks.causal_mask(T).sum() == T * (T + 1) // 2
    assert masks.bidirectional_mask(T).all()
    sw = masks.sliding_window_mask(T, 2)
    assert sw[5].tolist() == [False, False, False, False, True, True]
    pl = masks.prefix_lm_mask(T, 3)
    assert pl[0, 2] and not pl[3, 4] and pl[4, 3]
    add = masks.to_additive(masks.causal_mask(3))
    assert add[0, 1] == float("-inf") and add[1, 0] == 0
    assert torch.equal(masks.from_additive(add), masks.causal_mask(3))
    assert masks.padding_mask(torch.tensor([[4, 5, 0, 0]]), 0).tolist() == [[True, True, False, False]]
    with pytest.raises(ValueError, match="square"):
        masks.custom_mask([[1, 0, 1]])


@pytest.mark.parametrize("pos", ENCODINGS)
def test_causal_probs_are_zero_above_diagonal_and_rows_sum_to_one(pos):
    out = make_model(pos)(ids(), trace=True)
    for layer in out.trace.layers:
        p = layer.probs  # (B, H, T, T)
        upper = torch.ones(p.shape[-2:], dtype=torch.bool).triu(1)
        assert p[..., upper].abs().max() == 0.0
        assert (p.sum(-1) - 1).abs().max() <= 1e-6


@pytest.mark.parametrize("pos", ENCODINGS)
def test_causal_row_matches_prefix_run(pos):
    model, x = make_model(pos), ids(B=1, T=12)
    full = model(x).logits[0]  # (T, V): one pass, T predictions
    for t in range(12):
        alone = model(x[:, : t + 1]).logits[0, -1]
        assert (full[t] - alone).abs().max() <= 1e-5


@pytest.mark.parametrize("pos", ENCODINGS)
def test_changing_ids_under_padding_leaves_real_positions_unchanged(pos):
    model = make_model(pos, mask="bidirectional")  # bidirectional: every real token could see the pads
    x = ids(B=1, T=10)
    real = torch.tensor([[True] * 7 + [False] * 3])
    a = model(x.masked_fill(~real, 0), key_padding_mask=real).logits
    b = model(x, key_padding_mask=real).logits  # different ids under the padding
    assert (a[real] - b[real]).abs().max() <= 1e-5
    assert (model(x).logits[real] - a[real]).abs().max() > 1e-3  # without the mask the pads do matter


def test_without_positions_or_mask_attention_is_permutation_equivariant():
    model, x = make_model("none", mask="bidirectional"), ids(B=1, T=9)
    perm = torch.randperm(9)
    assert (model(x).logits[0, perm] - model(x[:, perm]).logits[0]).abs().max() <= 1e-5


def test_a_causal_mask_alone_breaks_permutation_equivariance():
    model, x = make_model("none", mask="causal"), ids(B=1, T=9)
    perm = torch.randperm(9)
    assert (model(x).logits[0, perm] - model(x[:, perm]).logits[0]).abs().max() > 1e-3


def test_loss_ignores_pad_targets():
    model, x = make_model("rope"), ids(B=1, T=8)
    targets = x.roll(-1, 1)
    padded = targets.clone()
    padded[0, 5:] = model.config.pad_id
    logits = model(x).logits[0]
    expected = torch.nn.functional.cross_entropy(logits[:5], targets[0, :5])
    assert abs(model(x, targets=padded).loss.item() - expected.item()) <= 1e-6


# ---- traced vs fast path --------------------------------------------------------------------

@pytest.mark.parametrize("pos", ENCODINGS)
@pytest.mark.parametrize("norm", ["pre", "post"])
@pytest.mark.parametrize("causal", [True, False])
def test_traced_and_fast_path_give_the_same_logits(pos, norm, causal):
    model, x = make_model(pos, norm_position=norm, mask="causal" if causal else "bidirectional"), ids()
    fast, traced = model(x), model(x, trace=True)
    assert fast.trace is None
    assert (fast.logits - traced.logits).abs().max() <= 1e-5
    tr = traced.trace
    B, T = x.shape
    H, dk = model.config.n_heads, model.config.d_k
    assert len(tr.layers) == len(tr.residual) == model.config.n_layers
    layer = tr.layers[0]
    for name in ("q", "k", "v", "head_out"):
        assert getattr(layer, name).shape == (B, H, T, dk)
    assert layer.scores.shape == layer.probs.shape == (B, H, T, T)
    torch.testing.assert_close(layer.probs @ layer.v, layer.head_out)
    expected = torch.softmax(layer.scores + layer.mask, -1)
    torch.testing.assert_close(expected, layer.probs)
    assert tr.embeddings.shape == (B, T, model.config.d_model) and tr.positional.shape == (T, model.config.d_model)


def test_scores_are_scaled_qk_before_the_mask():
    layer = make_model("rope")(ids(), trace=True).trace.layers[1]
    torch.testing.assert_close(layer.scores, layer.q @ layer.k.transpose(-1, -2) / math.sqrt(layer.q.shape[-1]))


def test_rope_model_q_k_are_rotated_and_v_is_not():
    model, x = make_model("rope"), ids(B=1, T=6)
    tr = model(x, trace=True).trace
    plain = dataclasses.replace(model.config, pos_encoding="none")
    twin = TinyTransformer(plain).eval()
    twin.load_state_dict(model.state_dict())
    tr0 = twin(x, trace=True).trace
    l0, r0 = tr.layers[0], tr0.layers[0]
    torch.testing.assert_close(l0.v, r0.v)                  # V untouched
    torch.testing.assert_close(l0.q[..., 0, :], r0.q[..., 0, :])  # position 0: no rotation
    assert (l0.q[..., 3, :] - r0.q[..., 3, :]).abs().max() > 1e-4
    norms = l0.k.norm(dim=-1), r0.k.norm(dim=-1)            # a rotation keeps lengths
    torch.testing.assert_close(*norms)


def test_kv_cache_gives_the_same_logits_as_a_full_pass():
    model, x = make_model("rope"), ids(B=1, T=10)
    full = model(x).logits
    out = model(x[:, :6], use_cache=True)
    steps = [out.logits]
    for t in range(6, 10):
        out = model(x[:, t: t + 1], past=out.cache, use_cache=True)
        steps.append(out.logits)
    assert (torch.cat(steps, 1) - full).abs().max() <= 1e-5


def test_learned_positions_refuse_to_go_past_their_table():
    model = make_model("learned")
    with pytest.raises(ValueError, match="learned positions"):
        model(torch.full((1, model.config.max_len + 1), 5))


@pytest.mark.parametrize("pos", ["none", "sinusoidal", "rope"])
def test_non_learned_encodings_run_beyond_the_training_length(pos):
    model = make_model(pos)
    out = model(torch.full((1, 2 * model.config.max_len), 5), trace=True)
    assert torch.isfinite(out.logits).all()


# ---- sinusoidal -----------------------------------------------------------------------------

def test_sinusoidal_sin_on_even_columns_cos_on_odd():
    pe = positional.sinusoidal_encoding(3, 4, dtype=torch.float64)
    # Reference: shared/reference/rope_reference.py sinusoidal_pe(3, 4), omega = [1, 0.01]
    expected = torch.tensor([[0.0, 1.0, 0.0, 1.0],
                             [math.sin(1), math.cos(1), math.sin(0.01), math.cos(0.01)],
                             [math.sin(2), math.cos(2), math.sin(0.02), math.cos(0.02)]], dtype=torch.float64)
    torch.testing.assert_close(pe, expected)


@pytest.mark.parametrize("k", [1, 5, 37])
def test_sinusoidal_shift_matrix_maps_every_t_to_t_plus_k(k):
    d = 16
    P = positional.sinusoidal_encoding(200, d, dtype=torch.float64)
    M = positional.shift_matrix(d, k)
    assert (P[:-k] @ M.T - P[k:]).abs().max() <= 1e-10  # the same M_k for every t
    assert (M @ M.T - torch.eye(d, dtype=torch.float64)).abs().max() <= 1e-12  # a rotation
    assert positional.shift_error(d, k, [0, 3, 50, 150]) <= 1e-10


# ---- RoPE -----------------------------------------------------------------------------------

def test_lecture_worked_example_dk4():
    # Reference: rope_notes.md "Lecture check (c) is correct": d_k=4 -> omega=[1, 0.01]; t=2 -> [2, 0.02]
    theta, factor = rope.inv_freq(4)
    torch.testing.assert_close(theta, torch.tensor([1.0, 0.01], dtype=torch.float64))
    assert factor == 1.0
    torch.testing.assert_close(rope.rope_angles(torch.tensor([2]), theta)[0],
                               torch.tensor([2.0, 0.02], dtype=torch.float64))
    x = torch.tensor([[1.0, 0.0, 1.0, 0.0]], dtype=torch.float64)
    y = rope.apply_rope(x, [2], theta)[0]
    torch.testing.assert_close(y, torch.tensor([math.cos(2), math.sin(2), math.cos(0.02), math.sin(0.02)],
                                               dtype=torch.float64))


SCALINGS = [None, {"type": "linear", "factor": 4}, {"type": "ntk", "factor": 8},
            {"type": "dynamic", "factor": 2, "original_max_position_embeddings": 512},
            {"type": "yarn", "factor": 16, "original_max_position_embeddings": 4096},
            {"type": "llama3", "factor": 8, "original_max_position_embeddings": 8192}]


@pytest.mark.parametrize("scaling", SCALINGS)
def test_rope_scores_depend_only_on_the_offset(scaling):
    d = 64
    theta, _ = rope.inv_freq(d, 10000.0, scaling, seq_len=2048)
    g = torch.Generator().manual_seed(0)
    q, k = torch.randn(1, d, generator=g, dtype=torch.float64), torch.randn(1, d, generator=g, dtype=torch.float64)
    for t, s in [(0, 0), (3, 7), (100, 37), (5000, 5001), (12345, 2)]:
        lhs = rope.apply_rope(q, [t], theta)[0] @ rope.apply_rope(k, [s], theta)[0]
        rhs = q[0] @ rope.apply_rope(k, [s - t], theta)[0]
        assert abs(lhs - rhs) <= 1e-9 * (1 + abs(lhs))


def test_ntk_base_matches_reference_not_the_lecture_notes():
    # Reference: rope_notes.md (d): b' = 1e4 * 8^(128/126) = 82,684.6 (the lecture's ~500,000 is wrong)
    assert rope.ntk_base(128, 10000.0, 8.0) == pytest.approx(82684.6, abs=0.05)
    theta, _ = rope.inv_freq(128, 10000.0, {"type": "ntk", "factor": 8})
    base = rope.default_inv_freq(128)
    assert float(theta[0]) == pytest.approx(1.0) and float(theta[-1]) == pytest.approx(float(base[-1]) / 8, rel=1e-12)


def test_dynamic_ntk_matches_hf():
    # Reference: rope_notes.md: HF "dynamic" with factor 8 at sequence length 8L gives base' 607,779
    assert rope.dynamic_base(128, 10000.0, 8.0, 4096, 8 * 4096) == pytest.approx(607779, abs=1)
    # below the original length nothing changes
    assert rope.dynamic_base(128, 10000.0, 8.0, 4096, 100) == pytest.approx(10000.0)


def test_yarn_ramps_over_pair_index_and_scales_cos_sin():
    # Reference: rope_reference.py, YaRN d=128 b=1e4 L=4096 s=16: (low, high) = (20, 46), mscale 1.277259
    scaling = {"type": "yarn", "factor": 16, "original_max_position_embeddings": 4096}
    assert rope.yarn_range(128, 10000.0, rope.validate_scaling(scaling)) == (20, 46)
    theta, factor = rope.inv_freq(128, 10000.0, scaling)
    assert factor == pytest.approx(0.1 * math.log(16) + 1) == pytest.approx(1.277259, abs=1e-6)
    ratio = theta / rope.default_inv_freq(128)
    assert ratio[:21].eq(1).all() and torch.allclose(ratio[46:], torch.full((18,), 1 / 16, dtype=torch.float64))
    assert rope.yarn_mscale(8) == pytest.approx(1.2079, abs=1e-4)
    # the factor multiplies cos and sin, so logits grow by its square
    q, k = torch.randn(1, 128, dtype=torch.float64), torch.randn(1, 128, dtype=torch.float64)
    s1 = rope.apply_rope(q, [9], theta, factor)[0] @ rope.apply_rope(k, [4], theta, factor)[0]
    s0 = rope.apply_rope(q, [9], theta)[0] @ rope.apply_rope(k, [4], theta)[0]
    assert float(s1) == pytest.approx(factor**2 * float(s0), rel=1e-12)


def test_llama3_keeps_short_and_divides_long_wavelengths():
    # Reference: rope_notes.md: d=128, base 5e5: 29 pairs unchanged, 6 smoothed, 29 divided by 8
    scaling = {"type": "llama3", "factor": 8, "original_max_position_embeddings": 8192}
    theta, factor = rope.inv_freq(128, 500000.0, scaling)
    ratio = theta / rope.default_inv_freq(128, 500000.0)
    assert factor == 1.0
    assert int((ratio == 1).sum()) == 29 and int((ratio == 1 / 8).sum()) == 29
    assert int(((ratio > 1 / 8) & (ratio < 1)).sum()) == 6


def test_linear_interpolation_equals_rotating_position_over_s():
    theta = rope.default_inv_freq(64)
    lin, _ = rope.inv_freq(64, 10000.0, {"type": "linear", "factor": 4})
    x = torch.randn(17, 64, dtype=torch.float64)
    m = torch.arange(0, 51, 3)
    torch.testing.assert_close(rope.apply_rope(x, m / 4.0, theta), rope.apply_rope(x, m, lin))


def test_interleaved_and_half_conventions_differ_by_a_fixed_permutation():
    d = 64
    theta = rope.default_inv_freq(d)
    perm = rope.interleaved_to_half_perm(d)
    assert rope.interleaved_to_half_perm(8).tolist() == [0, 2, 4, 6, 1, 3, 5, 7]
    x, pos = torch.randn(10, d, dtype=torch.float64), torch.arange(10) * 7
    torch.testing.assert_close(rope.apply_rope(x[:, perm], pos, theta, convention="half"),
                               rope.apply_rope(x, pos, theta)[:, perm])
    assert (rope.apply_rope(x, pos, theta, convention="half") - rope.apply_rope(x, pos, theta)).abs().max() > 0.1


def test_unknown_or_incomplete_scaling_is_refused():
    with pytest.raises(ValueError, match="unknown RoPE scaling"):
        rope.inv_freq(64, scaling={"type": "xpos"})
    with pytest.raises(ValueError, match="does not take"):
        rope.inv_freq(64, scaling={"type": "linear", "factor": 2, "beta_fast": 3})


def test_scaled_rope_model_runs_and_changes_attention():
    base = make_model("rope")
    scaled_cfg = dataclasses.replace(base.config, rope_scaling={"type": "linear", "factor": 4})
    scaled = TinyTransformer(scaled_cfg).eval()
    scaled.load_state_dict(base.state_dict())
    x = ids(B=1, T=20)
    a = base(x, trace=True).trace.layers[0].probs
    b = scaled(x, trace=True).trace.layers[0].probs
    assert (a - b).abs().max() > 1e-4


def test_eval_mode_restores_the_models_own_mode_even_after_an_error():
    from viz_model.model import eval_mode

    model = TinyTransformer(ModelConfig(vocab_size=16, dropout=0.1)).train()
    with eval_mode(model):
        assert not model.training and not any(m.training for m in model.modules())
    assert model.training
    with pytest.raises(RuntimeError), eval_mode(model):
        raise RuntimeError("inside")
    assert model.training
    model.eval()
    with eval_mode(model, training=True):
        assert model.training
    assert not model.training


def test_trace_stack_and_allowed_are_the_layers_own_tensors():
    model = TinyTransformer(ModelConfig(vocab_size=16)).eval()
    trace = model(torch.randint(5, 16, (2, 6)), trace=True).trace
    probs = trace.stack("probs")
    assert probs.shape == (model.config.n_layers, 2, model.config.n_heads, 6, 6) and probs.device.type == "cpu"
    assert torch.equal(probs[1], trace.layers[1].probs.float())
    allowed = trace.allowed(0)
    assert allowed.shape == (2, model.config.n_heads, 6, 6)
    assert torch.equal(allowed[0, 0], torch.tril(torch.ones(6, 6, dtype=torch.bool)))  # causal
    partial = model(torch.randint(5, 16, (1, 6)), trace_layers=(1,)).trace
    with pytest.raises(ValueError):
        partial.stack("probs")
