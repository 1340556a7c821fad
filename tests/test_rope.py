"""The RoPE page's claims and views as lessons.rope computes them (#27: lessons compute, ui shows): each claim holds
on real numbers and fails where the property it states is broken."""

from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
import torch

from viz_model import rope
from viz_model.config import ModelConfig
from viz_model.lessons import rope as rl
from viz_model.model import TinyTransformer


def absolute_rotation(monkeypatch):
    """Make every rotation also scale by the position: an encoding that is no longer relative."""
    real = rl.rotation.rotate_at
    monkeypatch.setattr(rl.rotation, "rotate_at", lambda x, p, f, a=1.0: real(x, p, f, a) * (1.0 + float(p)))


@pytest.fixture(scope="module")
def tiny():
    torch.manual_seed(0)
    return TinyTransformer(ModelConfig.preset("tiny")).eval()


def test_worked_claim_holds_and_fails_when_the_core_rotates_the_other_way(monkeypatch):
    ex = rl.worked_example(rl.parse_matrix(rl.q_frame().to_numpy(), (3, 8)))
    assert rl.worked_claim(ex).ok and rl.worked_claim(ex).error <= 1e-12
    real = rope.apply_rope
    monkeypatch.setattr(rope, "apply_rope", lambda x, p, f, *a, **k: real(x, -p, f, *a, **k))
    assert not rl.worked_claim(rl.worked_example(rl.parse_matrix(rl.q_frame().to_numpy(), (3, 8)))).ok


def test_worked_tables_show_each_head_and_head_0_rotated():
    frame = rl.q_frame()
    ex = rl.worked_example(frame.to_numpy())
    tables = rl.worked_tables(ex, frame.index)
    np.testing.assert_array_equal(tables["head 1"].to_numpy(), frame.to_numpy()[:, 4:8])
    np.testing.assert_allclose(tables["rotated"].to_numpy(), ex.rotated[0].round(6))
    assert list(tables["angles"].index) == ["0 I", "1 like", "2 cats"]
    assert "[1, 0.01]" in rl.omega_sentence(ex) and "(q6, q7)" in rl.head_columns(1)


def test_shifting_both_positions_is_checked_and_an_absolute_encoding_fails_it(monkeypatch):
    now, check = rl.pair_shift(32, 10000.0, 2, 3, 5, 400)
    assert check.ok and "shifting both positions by 400" in check.claim
    assert set(now["arrows"]) == {"q before rotation", "k before rotation", "q at t = 403", "k at s = 405"}
    assert rl.pair_scores(now)["score ⟨R_t q, R_s k⟩ (all pairs)"] == f"{now['score']:.6f}"
    absolute_rotation(monkeypatch)
    assert not rl.pair_shift(32, 10000.0, 2, 3, 5, 400)[1].ok


def test_near_and_far_scores_agree_only_for_a_relative_encoding(monkeypatch):
    scores, check = rl.near_far(32, 10000.0)
    assert check.ok and len(set(scores.values())) == 1  # the same six decimals
    absolute_rotation(monkeypatch)
    assert not rl.near_far(32, 10000.0)[1].ok


def test_wrap_and_coverage_sentences_count_from_the_numbers():
    wl = rope.wavelengths(rope.default_inv_freq(64, 10000.0)).numpy()
    assert rl.wrap_sentence(wl, 512).startswith(f"{int((wl <= 512).sum())} of 32 pairs")
    table = rl.scaling_table(64, 10000.0, 512, 4096)
    seen, needed, plain = rl.coverage_view(64, 10000.0, "none", *table["none"], 512, 4096)
    _, _, linear = rl.coverage_view(64, 10000.0, "linear", *table["linear"], 512, 4096)
    assert plain.startswith(f"With {rope.ROPE_SCALING_LABELS['none']}, {int((needed > seen + 1e-9).sum())} of 32")
    assert int((needed > seen + 1e-9).sum()) > 0 and ", 0 of 32 pairs" in linear  # interpolation stays in range


def test_a_target_shorter_than_training_is_refused_with_a_sentence():
    assert rl.short_target(512, 4096) is None
    assert "shorter than the training length L = 512" in rl.short_target(512, 256)


LLAMA3 = {"type": "llama3", "factor": 8.0, "original_max_position_embeddings": 16, "low_freq_factor": 1.0,
          "high_freq_factor": 4.0}


def test_the_panel_opens_on_a_models_own_settings_and_checks_its_frequencies():
    cfg = ModelConfig.preset("tiny", rope_base=500000.0, rope_scaling=LLAMA3)
    own = rl.model_extension(cfg)
    assert (own["d_k"], own["base"], own["L"], own["Lp"], own["method"]) == (cfg.d_k, 500000.0, 16, 128, "llama3")
    assert 500000.0 in rl.panel_choices(own)[1] and cfg.d_k in rl.panel_choices(own)[0]
    extra = {k: own.get(k, 1.0) for k in rl.SCALING_PARAMS}
    table = rl.scaling_table(cfg.d_k, 500000.0, 16, 128, extra)
    settings = {**own, **extra}
    check = rl.own_claim(cfg, settings, *table["llama3"])
    assert check.ok and check.claim.startswith("Llama 3.1 at s = L′/L = 8 gives this model's own")
    assert not rl.own_claim(cfg, settings, *table["linear"]).ok  # another method's frequencies are not its own
    assert rl.own_claim(cfg, {**settings, "L": 32}, *table["llama3"]) is None  # other settings: no claim
    assert "Llama 3.1 scaling from L = 16 to L′ = 128" in rl.own_settings_sentence(cfg)


def test_where_claims_hold_on_the_traces_and_fail_when_on_and_off_are_swapped(tiny):
    on, off = rl.rope_on_off(tiny, list(range(5, 15)))
    checks = rl.where_claims(tiny.config, on, off)
    assert [c.ok for c in checks] == [True, True]
    assert not rl.where_claims(tiny.config, off, on)[0].ok
    rows = rl.where_rows(tiny.config, on)
    assert rows.iloc[3]["shape"] == str(tuple(on.layers[0].q.shape))
    p_on, p_off, allowed, change = rl.head_on_off(on, off, 1, 0)
    assert change == pytest.approx(float((p_on - p_off).abs().max())) and change > 1e-4
    assert allowed.shape == p_on.shape == (10, 10) and allowed[9].all()  # the last row may read every position


def test_head_distance_curves_use_the_models_own_frequencies_and_stop_at_its_length(tiny):
    _, off = rl.rope_on_off(tiny, list(range(5, 15)))
    curves = rl.head_distance_curves(tiny.config, off)
    assert list(curves) == [f"head {h}" for h in range(tiny.config.n_heads)]
    assert len(curves["head 0"]) == tiny.config.max_len  # distances 0 .. max_len - 1
    q0, k0 = off.layers[0].q[0, 0], off.layers[0].k[0, 0]
    assert curves["head 0"][0] == pytest.approx(float(q0.double().mean(0) @ k0.double().mean(0)))


def test_conventions_claim_holds_after_the_permutation_and_fails_without_it():
    res = rl.convention_check(8, 2, 9)
    assert rl.convention_claim(res).ok
    assert not rl.convention_claim({**res, "half_permuted": res["half_unpermuted"]}).ok
    assert list(rl.convention_scores(res).values())[0] == f"{res['interleaved']:.6f}"
    assert rl.convention_pairs(8).loc["rotate-half", "pair 1"] == "(1, 5)"
    assert f"{abs(res['interleaved'] - res['half_unpermuted']):.3f}" in rl.wrong_convention_sentence(res)


def test_the_length_experiment_puts_the_rope_model_first_and_keeps_a_failed_model_as_a_note():
    assert rl.experiment_models(["enc-learned", "enc-rope"], "enc-rope") == (["enc-rope", "enc-learned"],
                                                                               ["enc-sinusoidal"])
    assert rl.experiment_models([], "") == ([], ["enc-sinusoidal", "enc-learned"])

    def cell(key, m):
        if key == "broken":
            raise ValueError("no such file")
        return pd.DataFrame([{"method": meth, "multiple": m, "length": 64 * m, "note": "",
                              "loss": float("nan") if (meth, m) == ("linear", 4) else 4.0 + m / 10 + i / 100}
                             for i, meth in enumerate(["none", "linear"])])

    seen = []
    table = rl.length_experiment(["enc-rope", "broken"], cell, lambda done, text: seen.append(done))
    assert seen[0] == 0 and seen[-1] == 1.0 and len(seen) == 2 * len(rl.LENGTH_MULTIPLES) + 1
    assert rl.length_notes(table) == ["broken: could not be run (no such file)"]
    wide = rl.length_table(table)
    linear = rope.ROPE_SCALING_LABELS["linear"]
    assert wide.loc[("enc-rope", linear), 128] == "4.210" and wide.loc[("enc-rope", linear), 256] == "—"


def test_the_live_views_follow_a_rope_model_and_fall_back_for_another():
    rope_cfg = ModelConfig.preset("tiny", rope_base=500000.0)
    d_k, base, note = rl.live_settings(rope_cfg)
    assert (d_k, base) == (rope_cfg.d_k, 500000.0)
    assert note == f"Pair and score views use d_k = {rope_cfg.d_k} and base 500,000 (the sidebar model's heads)."
    sinusoidal = ModelConfig.preset("tiny", pos_encoding="sinusoidal")
    assert rl.live_settings(sinusoidal)[:2] == (32, 10000.0)
    # the context-extension panel opens on the model's context when it uses RoPE, else 4,096; L′ eight times L
    assert rl.panel_defaults(rope_cfg) == {"d_k": 128, "base": 10000.0, "L": rope_cfg.max_len,
                                           "Lp": 8 * rope_cfg.max_len}
    assert rl.panel_defaults(sinusoidal)["L"] == 4096
    longest = rl.panel_defaults(SimpleNamespace(max_len=rl.L_MAX, pos_encoding="rope"))  # a 128k-context folder
    assert (longest["L"], longest["Lp"]) == (rl.L_MAX, rl.LP_MAX)
