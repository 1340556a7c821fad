"""Figure factories of the Position pages: trace types, shapes, labels and values (data, not pixels)."""

import math

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import pytest

from viz_model import rope
from viz_model.figures import rope as rfigs
from viz_model.figures import sinusoidal as figs
from viz_model.figures.common import CYCLIC, DIVERGING
from viz_model.lessons import rope as rl
from viz_model.lessons import sinusoidal as sl


def test_pe_curves_one_line_per_dimension_named_sin_or_cos():
    pe = sl.pe_numpy(50, 16, 10000.0)
    fig = figs.pe_curves(pe, [0, 1, 6])
    assert [t.type for t in fig.data] == ["scatter"] * 3
    assert [t.name for t in fig.data] == ["dim 0 (sin, pair 0)", "dim 1 (cos, pair 0)", "dim 6 (sin, pair 3)"]
    np.testing.assert_allclose(fig.data[1].y, pe[:, 1])
    assert fig.layout.xaxis.title.text == "position p"


def test_pe_slices_mark_the_lecture_positions_with_their_vectors():
    pe = sl.pe_numpy(8, 4, 10000.0)
    fig = figs.pe_slices(pe, [0, 2, 5])
    markers = [t for t in fig.data if t.name.startswith("slice")]
    assert [t.name for t in markers] == ["slice at p = 0", "slice at p = 2", "slice at p = 5"]
    np.testing.assert_allclose(markers[1].y, pe[2])
    assert len(fig.layout.shapes) == 3  # one vertical line per slice


def test_pe_heatmap_is_diverging_around_zero_with_true_indices():
    pe = sl.pe_numpy(1000, 64, 10000.0)
    pi, di = sl.decimate(1000, 100), sl.decimate(64, 32)
    fig = figs.pe_heatmap(pe, pi, di)
    h = fig.data[0]
    assert h.type == "heatmap" and h.zmid == 0 and h.z.shape == (len(pi), len(di))
    assert list(h.y) == list(pi) and h.y[-1] == 999
    # fast-built: the scale is kept by name; validated (as the browser gets it), it is the diverging scale's colours
    assert go.Figure(fig).data[0].colorscale == go.Heatmap(colorscale=DIVERGING).colorscale


def test_bits_vs_signs_two_binary_heatmaps():
    fig = figs.bits_vs_signs(sl.position_bits(16, 4), sl.sin_signs(sl.pe_numpy(16, 16, 10000.0), 8))
    assert [t.type for t in fig.data] == ["heatmap", "heatmap"]
    assert fig.data[0].z.shape == (16, 4) and fig.data[1].z.shape == (16, 8)
    assert fig.data[0].zmin == 0 and fig.data[0].zmax == 1


def test_matrix_heatmap_prints_values_of_small_matrices():
    from viz_model.positional import shift_matrix

    m = shift_matrix(8, 3).numpy()
    h = figs.matrix_heatmap(m, name="M_3").data[0]
    assert h.z.shape == (8, 8) and h.texttemplate == "%{text}"
    assert h.text[0][0] == str(round(math.cos(3), 2))


def test_shift_errors_bar_per_t_on_a_log_axis():
    fig = figs.shift_errors(sl.shift_check(16, 2, [0, 5, 9], 10000.0))
    assert fig.data[0].type == "bar" and list(fig.data[0].x) == ["0", "5", "9"]
    assert fig.layout.yaxis.type == "log"


def test_similarity_and_dot_curves_shapes():
    pe = sl.pe_numpy(40, 16, 10000.0)
    h = figs.similarity_heatmap(pe @ pe.T, sl.decimate(40, 20)).data[0]
    assert h.z.shape == (20, 20)
    fig = figs.dot_vs_offset({"t = 0": sl.dot_by_offset(pe, 0), "t = 5": sl.dot_by_offset(pe, 5)})
    assert [len(t.y) for t in fig.data] == [40, 35] and fig.layout.xaxis.title.text == "offset k"


def test_vector_rows_escape_labels():
    fig = figs.vector_rows({"<b>x</b>": np.ones(4), "y": np.zeros(4)})
    assert list(fig.layout.yaxis.ticktext) == ["&lt;b&gt;x&lt;/b&gt;", "y"]
    assert fig.data[0].z.shape == (2, 4)


def test_pair_arrows_start_at_origin_and_keep_a_square_aspect():
    fig = rfigs.pair_arrows({"q before rotation": [1, 0], "q at t = 2": [0, 1], "k at s = 3": [0.5, 0.5]})
    assert [t.x[0] for t in fig.data] == [0, 0, 0] and list(fig.data[2].x) == [0, 0.5]
    assert fig.layout.yaxis.scaleanchor == "x"
    assert fig.data[0].line.dash == "dot" and fig.data[1].line.color != fig.data[2].line.color


def test_angle_heatmap_uses_the_cyclic_scale_from_0_to_2pi():
    a = rl.angle_table(300, rope.default_inv_freq(16))
    fig = rfigs.angle_heatmap(a, sl.decimate(300, 50))
    h = fig.data[0]
    assert h.zmin == 0 and h.zmax == pytest.approx(2 * math.pi) and h.z.shape == (50, 8)
    assert go.Figure(fig).data[0].colorscale == go.Heatmap(colorscale=CYCLIC).colorscale  # 0 and 2π share a colour


def test_wavelength_bars_split_wrapping_pairs():
    wl = rope.wavelengths(rope.default_inv_freq(32)).numpy()
    fig = rfigs.wavelength_bars(wl, 512)
    wraps, never = fig.data
    assert wraps.name == "wraps inside the context" and (np.asarray(wraps.y) <= 512).all()
    assert len(wraps.x) + len(never.x) == 16 and fig.layout.yaxis.type == "log"


def test_frequency_ratios_one_line_per_method_chosen_is_bold():
    table = rl.scaling_table(64, 10000.0, 512, 4096)
    fig = rfigs.frequency_ratios({m: r for m, (r, _) in table.items()}, rope.ROPE_SCALING_LABELS, "yarn")
    assert len(fig.data) == len(rope.ROPE_INIT_FUNCTIONS)
    bold = [t for t in fig.data if t.line.width == 4]
    assert [t.name for t in bold] == ["YaRN"]


def test_angle_coverage_stacks_seen_and_unseen():
    theta = rope.default_inv_freq(16).numpy()
    seen, needed = rl.angle_coverage(theta, theta, 64, 512)
    fig = rfigs.angle_coverage(seen, needed)
    assert fig.layout.barmode == "stack" and len(fig.data) == 2
    np.testing.assert_allclose(np.asarray(fig.data[0].y) + np.asarray(fig.data[1].y), needed)


def test_scores_vs_distance_and_length_losses_labels():
    q, k = rl.random_qk(8)
    fig = rfigs.scores_vs_distance({"<i>h</i>": rl.scores_by_distance(q, k, rope.default_inv_freq(8), 10)})
    assert fig.data[0].name == "&lt;i&gt;h&lt;/i&gt;" and len(fig.data[0].y) == 11
    table = pd.DataFrame({"model": ["m"] * 4, "method": ["none", "none", "yarn", "yarn"],
                          "length": [64, 128, 64, 128], "loss": [2.0, 3.0, 2.0, float("nan")]})
    fig = rfigs.length_losses(table, rope.ROPE_SCALING_LABELS)
    assert [t.name for t in fig.data] == ["m", "m: YaRN"] and list(fig.data[1].x) == [64]
