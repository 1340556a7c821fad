"""Every chart's text alternative (figures.describe.summary) names what its own data holds: the largest cell with
its labels, each curve's first and last value, the largest and smallest bar; plain text, one bounded sentence."""

import re

import numpy as np
import plotly.graph_objects as go
import pytest
from test_figures_roundtrip import SAMPLES

from viz_model.figures.attention import attention_grid, attention_heatmap
from viz_model.figures.describe import LIMIT, number, summary
from viz_model.figures.explorer import matrix_heatmap, query_bars
from viz_model.figures.train import loss_curves
from viz_model.model_text import md_text

TOKENS = ["<bos>", "The", "animal", "<b>x</b>", "it", "a&b"]
T = len(TOKENS)
CAUSAL = np.tril(np.ones((T, T), dtype=bool))


def causal_probs(seed: int) -> np.ndarray:
    s = np.where(CAUSAL, np.random.default_rng(seed).normal(scale=2, size=(T, T)), -np.inf)
    e = np.exp(s - s.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def test_heatmap_summary_names_the_largest_chosen_weight_with_its_query_and_key():
    p = causal_probs(0)
    # row 0 may only read itself (weight 1, forced by the mask): the sentence reads the rows that had a choice
    choice = np.where(CAUSAL & (CAUSAL.sum(1, keepdims=True) > 1), p, -np.inf)
    r, c = np.unravel_index(np.argmax(choice), p.shape)
    words = summary(attention_heatmap(p, TOKENS, allowed=CAUSAL, title="Attention <b>L0</b><br>head 1"))
    assert words.startswith("Attention L0 head 1: the largest attention where the query has a choice is ")
    assert f"{p[r, c]:.2f}" in words and number(p[r, c]) in words
    assert f"query '{r} {TOKENS[r]}' and key '{c} {TOKENS[c]}'" in words
    assert f"(values {number(p[CAUSAL & (np.arange(T) > 0)[:, None]].min())} to" in words
    assert "&lt;" not in words and "&amp;" not in words and "<br>" not in words


def test_masked_cells_are_never_the_largest():
    """The masked scores hold the biggest numbers of the array; they are holes in the figure, not values."""
    s = np.random.default_rng(1).normal(size=(T, T))
    s[~CAUSAL] = 50.0
    r, c = np.unravel_index(np.argmax(np.where(CAUSAL, s, -np.inf)), s.shape)
    words = summary(matrix_heatmap(np.where(CAUSAL, s, -np.inf), TOKENS, TOKENS, col_tokens=True, allowed=CAUSAL,
                                   value_name="S + M", col_title="key"))
    assert "50" not in words
    assert f"is {number(s[r, c])}, at query token '{r} {TOKENS[r]}' and key '{c} {TOKENS[c]}'" in words
    assert f"(values {number(s[CAUSAL].min())} to {number(s[r, c])})" in words


def test_grid_summary_is_one_bounded_sentence_naming_the_strongest_panel():
    L = H = 12
    rng = np.random.default_rng(2)
    a = rng.uniform(size=(L, H, T, T)) * CAUSAL
    a /= a.sum(-1, keepdims=True)
    a[7, 3, 4, 2] = 0.0  # make one cell clearly the strongest: move row 4 of L7·H3 onto key 2
    a[7, 3, 4] = 0.0
    a[7, 3, 4, 2] = 1.0 - 1e-9
    a[7, 3, 4, 1] = 1e-9
    words = summary(attention_grid(a, TOKENS, allowed=CAUSAL, title="All 144 heads"))
    assert len(words) <= LIMIT and "\n" not in words
    assert words.startswith("All 144 heads: 144 panels; the largest value where the row has a choice is 1, ")
    assert "in layer 7 · head 3, at row '4 it' and column '2 animal'" in words


def test_thirty_curves_name_five_and_count_the_rest():
    steps = np.arange(50)
    runs = {f"run {i}": {"steps": steps, "loss": 3.0 - i * 0.05 - steps / 100} for i in range(30)}
    words = summary(loss_curves(runs, title="Loss"))
    assert len(words) <= LIMIT
    assert words.startswith("Loss: 30 curves over step 0 to 49: train · run 0 from 3 to 2.51; ")
    assert f"train · run 4 from {number(3.0 - 0.2)} to {number(3.0 - 0.2 - 0.49)}" in words
    assert "run 5 " not in words and words.endswith("; and 25 more.")


def test_bar_summary_names_the_largest_and_smallest_bar_by_its_token():
    w = causal_probs(3)[4]
    hi, lo = int(np.argmax(w)), int(np.argmin(w[:5]))  # key 5 is masked: drawn as 0, listed
    words = summary(query_bars(w, TOKENS, TOKENS[4], allowed=CAUSAL[4]))
    assert words.startswith("Where 'it' looks: bars; ")
    assert f"largest '{hi} {TOKENS[hi]}' {number(w[hi])}" in words
    assert "smallest '5 a&b' 0." in words or f"smallest '{lo} {TOKENS[lo]}'" in words  # the masked key reads 0


def test_an_empty_figure_says_so():
    assert summary(go.Figure(layout=dict(title=dict(text="Nothing <i>yet</i>")))) == "Nothing yet: no data."
    assert summary(go.Figure()) == "No data."


@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_every_figure_has_one_plain_bounded_sentence(name):
    words = summary(SAMPLES[name]())
    assert 10 < len(words) <= LIMIT and "\n" not in words, words
    assert words.endswith((".", "…")), words
    # Plotly markup is gone and no label is left escaped: a typed "<b>x</b>" or "<pad>" reads as typed (one sample
    # token is the literal text "&lt;", which must read as "&lt;", not "<")
    assert not re.search(r"&lt;\w|&gt;|&amp;|<br>|<sub>|<extra>", words), words
    assert "&lt;'" in words if name == "next_token.next_token_bars" else "&lt;" not in words


def test_long_sentences_are_cut_at_a_word_with_an_ellipsis():
    names = {f"a rather long run name number {i}": {"steps": [0, 1], "loss": [1.0, 0.5]} for i in range(6)}
    words = summary(loss_curves(names, title="A long title " * 6))
    assert len(words) <= LIMIT and words.endswith("…") and not words.endswith(" …")


def test_caption_markdown_shows_tokens_literally():
    from markdown_it import MarkdownIt

    typed = "'<b>x</b>' *a* `c` :red[d] $e$"
    assert MarkdownIt("commonmark").renderInline(md_text(typed)) == "'&lt;b&gt;x&lt;/b&gt;' *a* `c` :red[d] $e$"


def test_a_figure_rebuilt_from_another_figures_dict_exports_and_describes_its_matrix():
    """The Encoder's outlined head (fast_figure over attention_heatmap(...).to_dict()) keeps z as Plotly's encoded
    {'dtype', 'bdata', 'shape'}: the CSV export failed on it ("float() argument ... not 'dict'")."""
    from viz_model.figures.encoder import masked_attention_heatmap
    from viz_model.figures.export import figure_tables

    p = causal_probs(4) * 0 + 1 / T
    p[2, 3] = 0.5
    fig = masked_attention_heatmap(p, TOKENS, [3], title="L0 H0")
    assert isinstance(fig.data[0].z, dict)
    assert np.allclose(figure_tables(fig)["attention"].values, p.astype(np.float32))
    assert "is 0.50, at query '2 animal' and key '3 <b>x</b>'" in summary(fig)
