"""The Sinusoidal page's claims and views as lessons.sinusoidal computes them (#27: lessons compute, ui shows): each
claim holds on real numbers and fails where the property it states is broken."""

import numpy as np
import pytest
import torch

from viz_model.config import ModelConfig
from viz_model.figures import sinusoidal as figs
from viz_model.lessons import sinusoidal as sl
from viz_model.model import TinyTransformer
from viz_model.positional import shift_matrix


def model(pos_encoding: str) -> TinyTransformer:
    torch.manual_seed(0)
    return TinyTransformer(ModelConfig.preset("tiny", pos_encoding=pos_encoding)).eval()


def test_same_token_inputs_differ_by_p2_minus_p0_only_with_sinusoidal_positions():
    view = sl.same_token_view(model("sinusoidal"), 7)
    assert view.check.ok and view.check.claim.startswith("the two inputs differ by exactly P_2 − P_0")
    a, b = view.vectors["input at position 0"], view.vectors["input at position 2"]
    assert view.cosine == pytest.approx(float(a @ b / np.linalg.norm(a) / np.linalg.norm(b)))
    assert view.title == f"“the” at positions 0 and 2 (first {len(view.dims)} of 32 dims)"
    assert not sl.same_token_view(model("learned"), 7).check.ok  # a learned table is not the sinusoid


def test_shift_claim_holds_for_one_matrix_and_fails_for_the_wrong_k(monkeypatch):
    ts = sl.shift_positions(128, 3)
    assert ts == [0, 1, 2, 7, 50, 124] and sl.shift_positions(4, 3) == [0]
    check, matrix, title = sl.shift_view(64, 3, 10000.0, ts)
    claim = sl.shift_claim(check, 3, ts)
    assert claim.ok and claim.claim == "M_3·P_t = P_(t+3) for t ∈ [0, 1, 2, 7, 50, 124] with one matrix"
    assert matrix.shape == (8, 8) and title.endswith("(first 8 of 64 dimensions)")
    monkeypatch.setattr(sl, "shift_matrix", lambda d, k, base: shift_matrix(d, k + 1, base))
    assert not sl.shift_claim(sl.shift_check(64, 3, ts, 10000.0), 3, ts).ok


def test_dot_products_depend_only_on_the_offset_for_the_sinusoid_not_for_random_positions():
    a, b, check, largest = sl.offset_view(sl.pe_numpy(128, 64, 10000.0), 10)
    assert check.ok and len(b) == 118 and "(32 = d/2)" in largest
    random_table = np.random.default_rng(0).normal(size=(128, 64))
    assert not sl.offset_view(random_table, 10)[2].ok


def test_d4_view_binary_view_and_default_dims():
    small, rows, speeds = sl.d4_view(10000.0)
    np.testing.assert_array_equal(rows.to_numpy(), small[[0, 2, 5]].round(4))
    assert "ω = [1, 0.01]" in speeds
    bits, signs = sl.binary_view(sl.pe_numpy(16, 64, 10000.0))
    assert bits.shape == (16, 4) and signs.shape == (16, 8)
    assert sl.default_dims(64) == [0, 1, 2, 3, 32, 62] and sl.default_dims(4) == [0, 1, 2, 3]
    assert not sl.read_only_pe(8, 4, 10000.0).flags.writeable


def test_learned_view_compares_a_learned_table_with_the_sinusoid_of_its_size():
    m = model("learned")
    learned, sims = sl.learned_view(m)
    assert learned.shape == (m.config.max_len, m.config.d_model)
    assert list(sims) == ["learned positions", "sinusoidal positions"]
    assert all(np.allclose(np.diag(s), 1) for s in sims.values())
    assert f"rows 0..{len(learned) - 1}" in sl.learned_sentence("the shipped model", learned)
    gram = sl.gram(sl.pe_numpy(16, 8, 10000.0), np.arange(0, 16, 2))
    assert gram.shape == (8, 8) and np.allclose(np.diag(gram), 4)  # |P_p|² = d/2


def test_the_table_title_says_which_positions_it_shows():
    pe = sl.pe_numpy(8192, 64, 10000.0)
    fig = figs.table_heatmap(pe, sl.decimate(8192, 256), sl.decimate(64, 256))
    assert fig.layout.title.text == "The PE table: 8192 positions × 64 dimensions (about every 32nd position shown)"
    assert figs.table_heatmap(pe[:64], np.arange(64), np.arange(64)).layout.title.text.endswith("64 dimensions")
