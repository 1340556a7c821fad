"""Ask the class (#28): the class's answers as a histogram, with the model's own answer marked once revealed."""

from __future__ import annotations

from collections.abc import Sequence

import plotly.graph_objects as go

from viz_model.figures.common import axis, escape, fast_figure, layout_dict

CLASS_COLOR, MODEL_COLOR = "#0072B2", "#D55E00"  # Okabe–Ito blue and vermilion


def answer_histogram(choices: Sequence[str], counts: Sequence[int], correct: Sequence[int] | None = None,
                     title: str | None = None) -> go.Figure:
    """One horizontal bar per choice (in the question's order, top to bottom) with its number of answers.
    `correct`: the choices the model picks, shown after the reveal (bars in vermilion, "← the model" beside them);
    None before the reveal."""
    if len(choices) != len(counts):
        raise ValueError(f"{len(counts)} counts for {len(choices)} choices.")
    labels = [escape(c) for c in choices]
    y = list(range(len(choices)))
    total = int(sum(counts))
    picked = set(correct or [])
    colors = [MODEL_COLOR if i in picked else CLASS_COLOR for i in y]
    text = [f"{n}" + (" ← the model" if i in picked else "") for i, n in enumerate(counts)]
    data = [dict(type="bar", orientation="h", x=[int(n) for n in counts], y=y, name="class answers",
                 marker=dict(color=colors), text=text, textposition="outside", cliponaxis=False,
                 customdata=labels, hovertemplate="%{customdata}: %{x} answers<extra></extra>")]
    height = 120 + 34 * len(choices)
    return fast_figure(data, layout_dict(
        title or f"{total} answer{'s' if total != 1 else ''}", height=height, showlegend=False,
        xaxis=axis("answers", rangemode="tozero", dtick=1 if max(counts, default=0) <= 10 else None),
        yaxis=axis(None, tickmode="array", tickvals=y, ticktext=labels, autorange="reversed")))
