"""The numbers the Position pages show, against the reference (shared/reference/rope_reference.py printout and
rope_notes.md, copied here as literals). Identities already covered by tests/test_core.py are not repeated;
these tests go through viz_model.lessons.sinusoidal and .rope, the code the pages call."""

import math

import numpy as np
import pytest
import torch

from viz_model import rope
from viz_model.config import ModelConfig
from viz_model.lecture import ROPE_Q
from viz_model.lessons import rope as rl
from viz_model.lessons import sinusoidal as sl
from viz_model.model import TinyTransformer


# ---- sinusoidal ---------------------------------------------------------------------------------------
def test_page_table_matches_reference_d4_t3():
    # Reference printout: sinusoidal_pe(T=3, d=4), omega = [1, 0.01]
    expected = [[0.0, 1.0, 0.0, 1.0], [0.841471, 0.540302, 0.01, 0.99995], [0.909297, -0.416147, 0.019999, 0.9998]]
    np.testing.assert_allclose(sl.pe_numpy(3, 4, 10000.0), expected, atol=1e-6)


def test_wavelength_range_for_d512_is_2pi_to_60611():
    # Reference printout: wavelength range for d=512: 2pi*[1 .. 10000^(510/512)] = [6.2832 .. 60611.5]
    omega = 10000.0 ** (-np.arange(0, 512, 2) / 512)
    wl = rope.wavelengths(torch.tensor(omega)).numpy()
    assert wl[0] == pytest.approx(6.2832, abs=1e-4) and wl[-1] == pytest.approx(60611.5, abs=0.1)


@pytest.mark.parametrize("k", [1, 5, 37])
def test_shift_check_table_is_zero_for_every_t_with_one_matrix(k):
    table = sl.shift_check(64, k, [0, 1, 7, 300, 4000], 10000.0)
    assert list(table["t + k"]) == [t + k for t in (0, 1, 7, 300, 4000)]
    assert table.iloc[:, -1].max() <= 1e-9
    # a wrong k would fail the same check: the table is not trivially zero
    wrong = sl.pe_numpy(10, 64, 10000.0)
    assert np.abs(wrong[1] - wrong[0]).max() > 0.1


def test_dot_product_of_positions_depends_only_on_the_offset():
    pe = sl.pe_numpy(300, 32, 10000.0)
    a, b = sl.dot_by_offset(pe, 0), sl.dot_by_offset(pe, 57)
    np.testing.assert_allclose(a[: len(b)], b, atol=1e-10)
    assert a[0] == pytest.approx(16.0)  # d/2: every (sin, cos) pair has norm 1


def test_binary_bits_and_fastest_sin_sign_flip_like_a_counter():
    bits = sl.position_bits(8, 3)
    assert bits[5].tolist() == [1, 0, 1] and bits[6].tolist() == [0, 1, 1]
    signs = sl.sin_signs(sl.pe_numpy(8, 8, 10000.0), 4)
    assert signs[:, 0].tolist() == [1, 1, 1, 1, 0, 0, 0, 1]  # sin(p) changes sign at p = pi, 2 pi
    assert signs[:, 3].all()  # the slowest pair stays positive for 8 positions


def test_same_token_inputs_differ_by_exactly_the_position_difference():
    torch.manual_seed(0)
    model = TinyTransformer(ModelConfig.preset("tiny", pos_encoding="sinusoidal")).eval()
    vec = sl.input_vectors(model, 7, [0, 2])
    pe = sl.pe_numpy(3, 32, 10000.0)
    diff = vec["input at position 2"] - vec["input at position 0"]
    np.testing.assert_allclose(diff, pe[2] - pe[0], atol=1e-6)
    assert np.abs(vec["input at position 0"] - vec["token embedding"] - pe[0]).max() <= 1e-6


def test_decimate_keeps_tables_light_and_includes_both_ends():
    idx = sl.decimate(8192, 256)
    assert len(idx) <= 256 and idx[0] == 0 and idx[-1] == 8191
    assert sl.decimate(10, 256).tolist() == list(range(10))


def test_oversized_tables_are_refused_with_a_sentence():
    with pytest.raises(ValueError, match="8,192 positions"):
        sl.pe_numpy(8193, 64, 10000.0)
    with pytest.raises(ValueError, match="even dimension"):
        sl.pe_numpy(16, 2048, 10000.0)


# ---- RoPE worked example ------------------------------------------------------------------------------
def test_worked_example_matches_the_lecture_numbers():
    # Reference: rope_notes.md lecture check (c): d_k = 4 -> omega = [1, 0.01]; position 2 -> [2, 0.02];
    # printout: interleaved R_2[1,0,1,0] = [-0.416147 0.909297 0.9998 0.019999]
    ex = rl.worked_example(np.array(ROPE_Q))
    np.testing.assert_allclose(ex.omega, [1.0, 0.01])
    np.testing.assert_allclose(ex.angles[2], [2.0, 0.02])
    np.testing.assert_allclose(ex.rotated[0][2], [-0.416147, 0.909297, 0.9998, 0.019999], atol=1e-6)
    assert len(ex.heads) == 2 and ex.heads[1].shape == (3, 4)
    assert ex.core_error <= 1e-12
    np.testing.assert_allclose(ex.rotated[0][0], ROPE_Q[0][:4])  # position 0 is not rotated


def test_half_convention_reference_vector():
    # Reference printout: half R_2[1,1,0,0] = [-0.416147 0.9998 0.909297 0.019999]
    theta = rope.default_inv_freq(4)
    y = rope.apply_rope(torch.tensor([[1.0, 1.0, 0.0, 0.0]], dtype=torch.float64), [2], theta, convention="half")
    np.testing.assert_allclose(y[0].numpy(), [-0.416147, 0.9998, 0.909297, 0.019999], atol=1e-6)


@pytest.mark.parametrize("bad, message", [
    ([[1.0] * 8] * 2, "3 rows"), ([[float("nan")] * 8] * 3, "no empty cells"), ([[1e9] * 8] * 3, "between"),
    ([["x"] * 8] * 3, "must be a number")])
def test_edited_q_is_validated_with_a_sentence(bad, message):
    with pytest.raises(ValueError, match=message):
        rl.parse_matrix(bad, (3, 8))


# ---- RoPE scores --------------------------------------------------------------------------------------
def test_shifting_both_positions_keeps_pair_angle_and_score():
    q, k = rl.random_qk(32, seed=7)
    theta = rope.default_inv_freq(32)
    a, b = rl.pair_view(q, k, 3, 5, 0, theta), rl.pair_view(q, k, 803, 805, 0, theta)
    assert b["score"] == pytest.approx(a["score"], abs=1e-9)
    assert b["angle"] == pytest.approx(a["angle"], abs=1e-9)
    assert not np.allclose(a["q_rot"], b["q_rot"])  # the vectors did move


def test_score_near_equals_score_far_but_not_at_other_offsets():
    q, k = rl.random_qk(64, seed=3)
    theta = rope.default_inv_freq(64)
    near, far = rl.rope_score(q, k, 3, 4, theta), rl.rope_score(q, k, 500, 501, theta)
    assert near == pytest.approx(far, abs=1e-9)
    assert abs(rl.rope_score(q, k, 3, 40, theta) - near) > 1e-3


def test_scores_by_distance_start_at_the_plain_dot_product():
    q, k = rl.random_qk(16, seed=1)
    theta = rope.default_inv_freq(16)
    curve = rl.scores_by_distance(q, k, theta, 50)
    assert len(curve) == 51 and curve[0] == pytest.approx(float(q @ k))
    assert curve[17] == pytest.approx(rl.rope_score(q, k, 100, 117, theta), abs=1e-9)


def test_conventions_agree_after_the_permutation():
    res = rl.convention_check(8, 2, 9)
    assert res["perm"] == [0, 2, 4, 6, 1, 3, 5, 7]  # reference: perm for d=8
    assert res["interleaved"] == pytest.approx(res["half_permuted"], abs=1e-12) and res["vector_error"] <= 1e-12
    assert abs(res["interleaved"] - res["half_unpermuted"]) > 1e-3


# ---- context extension --------------------------------------------------------------------------------
def test_yarn_transition_ratios_match_the_reference():
    # Reference printout: YaRN d=128 b=1e4 L=4096 s=16, theta'/theta at pairs [0,20,25,30,35,40,45,46,63]
    table = rl.scaling_table(128, 10000.0, 4096, 16 * 4096)
    ratio, att = table["yarn"]
    np.testing.assert_allclose(ratio[[0, 20, 25, 30, 35, 40, 45, 46, 63]],
                               [1, 1, 0.819712, 0.639423, 0.459135, 0.278846, 0.098558, 0.0625, 0.0625], atol=1e-6)
    assert att == pytest.approx(1.277259, abs=1e-6) and att**2 == pytest.approx(1.6314, abs=1e-4)


def test_llama3_smoothed_ratios_match_the_reference():
    # Reference printout: Llama3.1 d=128 b=5e5 s=8: smoothed pairs 29..34
    ratio, _ = rl.scaling_table(128, 500000.0, 8192, 8 * 8192)["llama3"]
    np.testing.assert_allclose(ratio[29:35], [0.828168, 0.643743, 0.493507, 0.371122, 0.271425, 0.190211],
                               atol=1e-6)


def test_scaling_table_iterates_every_registry_entry():
    table = rl.scaling_table(64, 10000.0, 512, 2048)
    assert list(table) == list(rope.ROPE_INIT_FUNCTIONS)
    np.testing.assert_allclose(table["linear"][0], 0.25)
    np.testing.assert_allclose(table["none"][0], 1.0)


def test_readouts_show_the_corrected_ntk_base_and_yarn_numbers():
    # Reference: rope_notes.md (d): 82,684.6 not ~500,000; HF dynamic factor 8 at 8L: 607,779; mscale(8) 1.2079
    r = rl.readouts(128, 10000.0, 8.0, 4096, 8 * 4096)
    assert r["NTK-aware base′ = b·s^(d/(d−2))"] == "82,684.6"
    assert r["dynamic NTK base′ at L′ (HF)"] == "607,779"
    assert r["YaRN temperature √(1/t) = 0.1 ln s + 1"] == "1.2079"
    # Reference: base' = 500,000 would need s = 47.04
    assert (500000 / 10000) ** (126 / 128) == pytest.approx(47.04, abs=0.01)


def test_angle_coverage_flags_unseen_angles_only_without_interpolation():
    theta = rope.default_inv_freq(64).numpy()
    seen, needed = rl.angle_coverage(theta, theta, 512, 4096)
    assert (needed > seen + 1e-9).sum() > 0  # plain RoPE at 8x: slow pairs reach new angles
    seen, needed = rl.angle_coverage(theta, theta / 8, 512, 4096)
    assert (needed <= seen + 1e-9).all()  # linear interpolation stays inside what training saw
    assert needed.max() <= 2 * math.pi


@pytest.mark.parametrize("method", ["linear", "ntk", "dynamic", "yarn", "llama3"])
def test_a_factor_below_one_is_refused_with_a_sentence(method):
    with pytest.raises(ValueError, match="factor"):
        rl.scaling_for(method, 0.5, 512)


@pytest.mark.parametrize("method", list(rope.ROPE_INIT_FUNCTIONS))
def test_scaled_copy_keeps_weights_and_relative_scores(method):
    torch.manual_seed(0)
    model = TinyTransformer(ModelConfig.preset("tiny")).eval()
    copy = rl.scaled_copy(model, rope_scaling=rl.scaling_for(method, 4, model.config.max_len))
    assert all(torch.equal(a, b) for a, b in zip(model.state_dict().values(), copy.state_dict().values()))
    theta, att = rope.inv_freq(copy.config.d_k, 10000.0, copy.config.rope_scaling, seq_len=128)
    q, k = rl.random_qk(copy.config.d_k)
    assert rl.rope_score(q, k, 10, 30, theta, att) == pytest.approx(rl.rope_score(q, k, 110, 130, theta, att))


def test_switching_rope_off_keeps_v_and_unrotated_q():
    torch.manual_seed(0)
    model = TinyTransformer(ModelConfig.preset("tiny")).eval()
    on, off = rl.rope_on_off(model, list(range(5, 15)))
    assert torch.equal(on.layers[0].v, off.layers[0].v)
    rotated = rope.apply_rope(off.layers[0].q, torch.arange(10), rope.default_inv_freq(model.config.d_k))
    torch.testing.assert_close(rotated, on.layers[0].q)
    assert (on.layers[0].probs - off.layers[0].probs).abs().max() > 1e-4


def test_length_losses_run_every_method_and_learned_stops_at_its_table():
    torch.manual_seed(0)
    ids = [list(range(5, 40)) for _ in range(30)]
    rope_model = TinyTransformer(ModelConfig.preset("tiny", vocab_size=64)).eval().requires_grad_(False)
    table = rl.length_losses(rope_model, ids, [1, 2], total=256)
    assert set(table["method"]) == set(rope.ROPE_INIT_FUNCTIONS) and table["loss"].notna().all()
    assert table[table.multiple == 2]["loss"].nunique() > 1  # at 2x the scalings differ
    # factor 1: every scaling is plain RoPE, which is why the 1x pass is shared between methods
    x, y = rl.heldout_windows(ids, 32, 128)
    plain = float(rope_model(x, targets=y).loss)
    for method in rope.ROPE_INIT_FUNCTIONS:
        copy = rl.scaled_copy(rope_model, rope_scaling=rl.scaling_for(method, 1, 32))
        assert float(copy(x, targets=y).loss) == pytest.approx(plain, rel=1e-6)
    learned = TinyTransformer(ModelConfig.preset("tiny", vocab_size=64, pos_encoding="learned")).eval()
    lt = rl.length_losses(learned, ids, [1, 2], total=256)
    assert lt.loss.notna().tolist() == [True, False] and "learned table" in lt.note.iloc[1]


def test_mean_self_scores_equal_the_average_of_single_curves():
    vs = torch.randn(5, 16, dtype=torch.float64)
    theta = rope.default_inv_freq(16)
    single = np.mean([rl.scores_by_distance(v, v, theta, 40) for v in vs], axis=0)
    np.testing.assert_allclose(rl.mean_self_scores(vs, theta, 40), single, atol=1e-10)


def test_every_length_scores_the_same_held_out_tokens():
    ids = [list(range(10, 30)) for _ in range(20)]  # 400 tokens
    short, long = rl.heldout_windows(ids, 32, 256), rl.heldout_windows(ids, 128, 256)
    assert short[0].shape == (8, 32) and long[0].shape == (2, 128)
    assert torch.equal(short[0].flatten(), long[0].flatten()) and torch.equal(short[1].flatten(), long[1].flatten())
    assert torch.equal(long[0][:, 1:], long[1][:, :-1])  # targets are the next tokens
    assert rl.heldout_windows(ids, 32, 4096) is None  # not enough text: a message, not a crash
    assert rl.experiment_tokens(64, (1, 2, 4)) == 1024 and rl.experiment_tokens(512, (1, 2, 4)) == 2048
