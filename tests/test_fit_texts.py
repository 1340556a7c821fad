"""A chart's long texts fit a phone (#42 item 4): Plotly never wraps a title, so figures.common.fit_texts breaks the
title, the panel titles and the axis titles between words ("<br>") to fit a 358 px chart, and ui.chart sends that to
the browser, leaving the (shared, cached) figure as it was."""

from __future__ import annotations

import copy
import html
import re

import plotly.graph_objects as go
import pytest
from test_figures_roundtrip import SAMPLES, assert_same

from viz_model.figures.common import (
    PHONE_CHART_PX,
    fast_figure,
    fit_texts,
    layout_dict,
    panel_row,
    shown_text,
    text_px,
    wrap_text,
)

LONG = "Head 0, pair 0 of each token: turned by t·ω₀ = t radians (dotted: before the turn)"
TITLE_PX, TITLE_SIZE = PHONE_CHART_PX - 8, 16  # the room wrap_text gets for a title, at the template's title size


def lines(text: str) -> list[str]:
    return re.split(r"<br\s*/?>", text)


def same_words(wrapped: str, text: str) -> bool:
    """Only spaces became line breaks: read "<br>" as a space and it is the text again."""
    return re.sub(r"<br\s*/?>", " ", wrapped) == re.sub(r"<br\s*/?>", " ", text)


def test_a_short_title_is_left_as_it_is():
    for text in ("Row sums, measured", "Layer 1 · head 2: attention weights", ""):
        assert wrap_text(text, TITLE_PX, TITLE_SIZE, bold=True) == text


def test_a_long_title_is_balanced_over_two_lines_that_fit_a_phone():
    wrapped = wrap_text(LONG, TITLE_PX, TITLE_SIZE, bold=True)
    first, second = lines(wrapped)
    assert same_words(wrapped, LONG)
    assert all(text_px(line, TITLE_SIZE, bold=True) <= TITLE_PX for line in (first, second))
    assert abs(len(first) - len(second)) <= 15  # balanced, not a full line and a stub
    assert text_px(LONG, TITLE_SIZE, bold=True) > TITLE_PX  # it did not fit as one line


def test_no_word_is_cut_and_a_line_ends_after_punctuation_where_it_can():
    for text, px in ((LONG, 200), ("encoder self: 7 × 7, padding only (both directions)", 70),
                     ("key (the prefix it reads) · dotted line = end of the prompt", 200)):
        wrapped = wrap_text(text, px, 12)
        assert same_words(wrapped, text)
        assert set(" ".join(lines(wrapped)).split()) == set(text.split())
    assert wrap_text("head 3 · m = 0.003906", 52, 12) == "head 3 ·<br>m =<br>0.003906"  # no line starts with "·"


def test_the_line_breaks_already_there_stay():
    text = "cross: 2 × 7,<br>queries from the decoder,<br>keys/values from the encoder"
    wrapped = wrap_text(text, 90, 12)
    assert wrapped.startswith("cross: 2 × 7,<br>") and "decoder,<br>keys/values" in wrapped
    assert same_words(wrapped, text) and wrapped.count("<br>") > text.count("<br>")
    assert wrap_text("one<br/>two three four five six seven", 1000, 12) == "one<br/>two three four five six seven"


def test_tags_and_entities_are_never_split():
    """A student's token arrives escaped ("&lt;b&gt;"); a <sub>…</sub> or <b>…</b> run is one word."""
    text = "the token &lt;b&gt;x&lt;/b&gt; and <sub>a sub line with spaces</sub> then <b>bold words</b> end"
    wrapped = wrap_text(text, 40, 12)
    assert same_words(wrapped, text)
    for line in lines(wrapped):
        assert line.count("<sub>") == line.count("</sub>") and line.count("<b>") == line.count("</b>")
        assert not re.search(r"&[a-z]*$|^[a-z]*;", line)  # no entity cut in two
    assert "&lt;b&gt;x&lt;/b&gt;" in wrapped and "<sub>a sub line with spaces</sub>" in wrapped
    assert shown_text("&lt;b&gt;") == "<b>" and text_px("&lt;b&gt;", 12) < text_px("&lt;b&gt;x", 12)


def test_wrapping_twice_is_wrapping_once():
    for text, px in ((LONG, TITLE_PX), (LONG, 60), ("a verylongunbreakableword b c", 30), ("x" * 90, 50)):
        once = wrap_text(text, px, 16)
        assert wrap_text(once, px, 16) == once


def _panels_figure(title: str = LONG) -> go.Figure:
    domains, notes = panel_row(["1. model: p(next | prefix)", "2. after greedy (renormalised)"], 0.04)
    data = [dict(type="bar", x=[0.5, 0.5], y=["a", "b"], orientation="h", xaxis=f"x{n}", yaxis="y")
            for n in ("", "2")]
    axes = dict(xaxis=dict(domain=domains[0], anchor="y", title=dict(text="probability")),
                xaxis2=dict(domain=domains[1], anchor="y", title=dict(text="probability")))
    return fast_figure(data, layout_dict(title, height=260, annotations=notes, **axes))


def test_a_figure_gets_its_title_and_panel_titles_wrapped_and_room_for_them():
    fig = _panels_figure()
    spec = fig.to_dict()
    kept = copy.deepcopy(spec)
    out = fit_texts(spec)
    assert spec == kept  # a new dict: the cached figure's own dict is every session's
    layout, before = out["layout"], spec["layout"]
    assert lines(layout["title"]["text"]) and same_words(layout["title"]["text"], LONG)
    assert [len(lines(a["text"])) for a in layout["annotations"]] == [2, 2]
    grown = layout["margin"]["t"] - before["margin"]["t"]
    assert grown == pytest.approx(2 * 1.3 * 16, abs=1)  # a title line and a panel-title line, 16 px type
    assert layout["height"] - before["height"] == grown  # the plot keeps its size
    # the title's first line stays where it was (the middle of the old top margin), drawn from the top down
    assert (layout["title"]["yref"], layout["title"]["yanchor"], layout["title"]["pad"]["t"]) == ("container", "top",
                                                                                                 25)
    assert layout["xaxis"]["title"]["text"] == "probability"  # short: as it was
    assert fit_texts(out) == out


def test_a_figure_whose_texts_fit_is_sent_as_it_is():
    fig = fast_figure([dict(type="scatter", x=[1, 2], y=[3, 4])],
                      layout_dict("Row sums, measured", xaxis=dict(title=dict(text="position"))))
    spec = fig.to_dict()
    assert fit_texts(spec)["layout"] == spec["layout"]


@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_every_figure_wrapped_passes_validation_and_wraps_once(name):
    spec = SAMPLES[name]().to_dict()
    out = fit_texts(spec)
    assert_same(out["layout"], go.Figure(out).to_dict()["layout"], f"{name}.layout")  # raises if invalid
    assert fit_texts(out) == out
    for before, after in zip(spec["layout"].get("annotations") or [], out["layout"].get("annotations") or []):
        assert same_words(after["text"], before["text"])


def test_the_chart_sends_the_wrapped_dict_and_leaves_the_figure_alone():
    from viz_model.ui.chart import _Serialized

    fig = _panels_figure()
    sent = _Serialized(fig).to_dict()
    assert "<br>" in sent["layout"]["title"]["text"]
    assert fig.layout.title.text == LONG and fig.layout.annotations[1].text == "2. after greedy (renormalised)"
    assert html.unescape(sent["layout"]["annotations"][1]["text"]) == "2. after greedy<br>(renormalised)"


def test_legends_and_bar_labels_that_took_a_phones_width_are_moved_or_broken():
    """Two charts a phone's screenshot showed squeezed (#42 item 4): RoPE's scores against distance kept its legend
    beside the plot (long curve names: a third of 358 px left for the plot), now below it; the translator's timing
    bars had one-line labels of about 230 px beside the bars, now two lines each, all of the hover text kept."""
    from viz_model.figures import encoder_decoder as efigs
    from viz_model.figures import rope as rfigs

    fig = rfigs.scores_vs_distance({"RoPE, base 10,000 (the trained frequencies)": [1.0, 0.5, 0.2]})
    assert fig.layout.legend.orientation == "h" and fig.layout.legend.y < 0
    bars = efigs.decode_timing_bars(8, 0.08, 0.4)
    labels, hover = list(bars.layout.yaxis.ticktext), list(bars.data[0].hovertext)
    assert list(bars.layout.yaxis.tickvals) == list(bars.data[0].y)  # the data keeps its plain names (describe)
    widest = max(text_px(line, 12) for label in labels for line in lines(label))
    assert widest < PHONE_CHART_PX / 2, (labels, widest)  # the bars keep at least half the chart
    assert [shown_text(label.replace("<br>", " ")) for label in labels] == [h.split(":")[0] for h in hover]
