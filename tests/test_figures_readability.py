"""Readability of the figures on a projector (issue #14's tour): labels that do not run into each other, numbers only
where they can be read, two-valued things drawn with two labelled colours, words instead of ambiguous numbers."""

import numpy as np
import pytest

from viz_model.figures.common import head_name, ordinal
from viz_model.figures.explorer import MASK_LEVELS, additive_mask_heatmap, matrix_heatmap
from viz_model.figures.generate import attention_rows
from viz_model.figures.masks import mask_panels, shows_text
from viz_model.figures.rope import frequency_ratios, power_of_two_ticks

TOKENS = ["<bos>", "the", "cat", "sat", "on", "the", "mat"]
T = len(TOKENS)
CAUSAL = np.tril(np.ones((T, T), dtype=bool))


@pytest.mark.parametrize("n_cols", [32, 128])
def test_wide_feature_axes_label_every_8th_column(n_cols):
    """Pipeline steps 1 (Q, K, V: T x d_k = 32) and 7 (the concat: T x 128): 32 or 128 labels side by side smear."""
    labels = [f"h{j // 32}:{j % 32}" for j in range(n_cols)]
    fig = matrix_heatmap(np.random.default_rng(0).normal(size=(T, n_cols)), TOKENS, labels, show_values=False)
    x = fig.layout.xaxis
    assert list(x.tickvals) == labels[::8] and list(x.ticktext) == labels[::8]
    assert len(x.ticktext) == n_cols // 8
    assert list(fig.data[-1].x) == labels  # every column still has its own name (the hover shows it)


def test_narrow_and_token_axes_keep_every_label():
    fig = matrix_heatmap(np.zeros((T, 16)), TOKENS, show_values=False)
    assert list(fig.layout.xaxis.ticktext) == [str(j) for j in range(16)]
    scores = matrix_heatmap(np.zeros((T, T)), TOKENS, TOKENS, col_tokens=True)
    assert len(scores.layout.xaxis.ticktext) == T  # keys are tokens: each one is labelled


def test_additive_mask_is_two_labelled_colours():
    """M holds only 0 and −∞: a continuous colour bar from −0 to 0 said nothing; two colours, two named ticks do."""
    fig = additive_mask_heatmap(CAUSAL, TOKENS, title="M")
    (heat,) = fig.data
    z = np.asarray(heat.z)
    assert set(np.unique(z)) == {0, 1} and (z == (~CAUSAL)).all()
    assert list(heat.colorbar.ticktext) == ["0 (allowed)", "−∞ (masked)"] == list(MASK_LEVELS)
    assert (heat.zmin, heat.zmax) == (0, 1) and list(heat.colorbar.tickvals) == [0.25, 0.75]
    colours = {c for _, c in heat.colorscale}
    assert len(colours) == 2  # exactly two colours: nothing in between
    assert heat.customdata[0][1] == "−∞ (masked)" and heat.customdata[1][0] == "0 (allowed)"  # in the hover
    assert heat.text[0][1] == "−∞" and heat.text[0][0] == "0"


def test_additive_mask_rejects_a_mask_of_the_wrong_size():
    with pytest.raises(ValueError, match="one row per token"):
        additive_mask_heatmap(CAUSAL[:3, :3], TOKENS)


def test_head_name_is_words_not_a_decimal():
    assert head_name(1, 3) == "layer 1 · head 3"
    assert "." not in head_name(10, 12)


@pytest.mark.parametrize("n, text", [(1, "1st"), (2, "2nd"), (3, "3rd"), (4, "4th"), (11, "11th"), (12, "12th"),
                                     (13, "13th"), (21, "21st"), (22, "22nd"), (32, "32nd"), (101, "101st"),
                                     (111, "111th"), (112, "112th"), (0, "0th")])
def test_ordinal(n, text):
    assert ordinal(n) == text


def _panel(fig, name):
    return next(t for t in fig.data if t.name == name)


def test_mask_panels_hide_numbers_too_small_to_read_and_keep_them_in_the_hover():
    """Panel 3 printed "−0.53" in cells about 37 px wide: Plotly shrank it to ~6 px. Hidden there, still hovered."""
    rng = np.random.default_rng(0)
    s = rng.normal(size=(T, T))
    p = np.where(CAUSAL, np.exp(s), 0)
    p /= p.sum(-1, keepdims=True)
    fig = mask_panels(CAUSAL, s, p, TOKENS)
    scores, probs = _panel(fig, "scores"), _panel(fig, "probs")
    assert scores.text is None and scores.texttemplate is None and probs.text is None
    assert f"{s[3, 1]:.2f}" in scores.hovertext[3][1] and "−∞" in scores.hovertext[1][3]
    assert f"{p[3, 1]:.3f}" in probs.hovertext[3][1]
    for name in ("mask", "additive"):  # one or two characters still fit
        assert _panel(fig, name).text is not None
    small = mask_panels(CAUSAL[:4, :4], s[:4, :4], p[:4, :4] / p[:4, :4].sum(-1, keepdims=True), TOKENS[:4])
    assert _panel(small, "scores").text is not None  # wide cells: the numbers are printed


def test_shows_text_needs_room_for_every_character():
    assert shows_text(5, 5) and not shows_text(6, 5) and shows_text(6, 4) and not shows_text(7, 4)
    assert shows_text(12, 1) and not shows_text(13, 1)


def test_frequency_ratio_axis_ticks_are_powers_of_two_written_as_fractions():
    """θ′/θ spans less than a decade or a few: Plotly's own log ticks printed a digit at every minor step."""
    s = 8.0
    ratios = {"none": np.ones(8), "linear": np.full(8, 1 / s), "ntk": s ** (-np.arange(8) / 7)}
    fig = frequency_ratios(ratios, {m: m for m in ratios}, "linear")
    y = fig.layout.yaxis
    assert y.type == "log" and y.tickmode == "array"
    assert list(y.tickvals) == [0.125, 0.25, 0.5, 1.0] and list(y.ticktext) == ["1/8", "1/4", "1/2", "1"]


def test_power_of_two_ticks_stay_few_and_keep_one():
    many = power_of_two_ticks([2.0 ** -20, 1.0])
    assert len(many["tickvals"]) <= 7 and many["tickvals"][-1] == 1.0 and many["ticktext"][-1] == "1"
    assert power_of_two_ticks([1.0, 1.0])["ticktext"] == ["1/2", "1", "2"]  # factor 1: a flat line still has ticks


def test_generate_attention_axes_make_room_for_their_titles():
    """The y-axis title of the Generate attention chart was cut off: the long "3 cat → sat" labels took the margin."""
    fig = attention_rows([np.array([1.0]), np.array([0.5, 0.5])], ["<bos>", "the", "cat"], [0, 1], ["the", "cat"],
                         n_prompt=1, title="t")
    assert fig.layout.yaxis.automargin is True and fig.layout.xaxis.automargin is True
    assert fig.layout.yaxis.title.text
    # written vertically beside the rows: it must fit the plot's height even with one row (a 300 px figure)
    assert len(fig.layout.yaxis.title.text) <= 20
