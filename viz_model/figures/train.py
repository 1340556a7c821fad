"""Training figures: loss curves (train + held-out, overlaid runs), LR schedule, head roles over time."""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache

import numpy as np
import plotly.graph_objects as go
import plotly.io as pio

from viz_model.figures.common import FONT, SEQUENTIAL, escape, token_labels

PALETTE = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b")


def downsample(x: Sequence[float], y: Sequence[float], max_points: int = 300) -> tuple[np.ndarray, np.ndarray]:
    """At most max_points (x, y): bucket means keep the curve's shape; live charts stay light."""
    x, y = np.asarray(x, float), np.asarray(y, float)
    if len(x) <= max_points:
        return x, y
    edges = np.linspace(0, len(x), max_points + 1).astype(int)
    return (np.array([x[a:b][-1] for a, b in zip(edges[:-1], edges[1:])]),
            np.array([y[a:b].mean() for a, b in zip(edges[:-1], edges[1:])]))


@lru_cache(maxsize=1)
def _template() -> dict:
    return pio.templates["plotly_white"].to_plotly_json()


def _fig(data: list[dict], layout: dict, title: str | None, height: int) -> go.Figure:
    """A figure built from plain dicts without Plotly's validators: ~100x cheaper, which matters for charts
    redrawn every 2 s while a training thread needs the GIL. Same look as base_layout()."""
    layout = {"template": _template(), "font": FONT, "height": height,
              "margin": dict(l=10, r=10, t=50 if title else 20, b=10),
              "title": dict(text=title, x=0.01, xanchor="left") if title else None, **layout}
    return go.Figure(data=data, layout=layout, _validate=False)


def _axis(title: str, **kw) -> dict:
    return dict(title=dict(text=title), automargin=True, **kw)


def loss_curves(runs: dict[str, dict], *, title: str | None = None, total: int | None = None) -> go.Figure:
    """runs[label] = {"steps", "loss", "eval_steps", "heldout"}: solid train, dashed held-out, one colour each."""
    data = []
    for i, (label, r) in enumerate(runs.items()):
        c, name = PALETTE[i % len(PALETTE)], escape(label)
        x, y = downsample(r["steps"], r["loss"])
        data.append(dict(type="scatter", x=x.tolist(), y=y.tolist(), mode="lines", line=dict(color=c),
                         name=f"train · {name}" if len(runs) > 1 else "train",
                         hovertemplate="step %{x}<br>train loss %{y:.3f}<extra></extra>"))
        if len(r.get("eval_steps", [])):
            data.append(dict(type="scatter", x=list(r["eval_steps"]), y=list(r["heldout"]), mode="lines+markers",
                             name=f"held-out · {name}" if len(runs) > 1 else "held-out",
                             line=dict(color=c, dash="dash"), marker=dict(size=5),
                             hovertemplate="step %{x}<br>held-out loss %{y:.3f}<extra></extra>"))
    layout = dict(xaxis=_axis("step", range=[0, total] if total else None),
                  yaxis=_axis("cross-entropy loss (nats)", rangemode="tozero"),
                  legend=dict(orientation="h", y=-0.2), uirevision="loss")
    return _fig(data, layout, title, 360)


def lr_curve(steps: Sequence[int], lrs: Sequence[float], *, total: int | None = None) -> go.Figure:
    x, y = downsample(steps, lrs)
    data = [dict(type="scatter", x=x.tolist(), y=y.tolist(), mode="lines", name="learning rate",
                 line=dict(color="#555"), hovertemplate="step %{x}<br>lr %{y:.2e}<extra></extra>")]
    layout = dict(xaxis=_axis("step", range=[0, total] if total else None),
                  yaxis=_axis("learning rate", exponentformat="e"), uirevision="lr")
    return _fig(data, layout, "Learning rate (warm-up, cosine)", 260)


def role_timeline(steps: Sequence[int], scores: np.ndarray, role: str, loss_steps: Sequence[int],
                  loss: Sequence[float]) -> go.Figure:
    """scores (S, L, H) of one role at each snapshot step, one line per head; the loss on a second axis."""
    s = np.asarray(scores, float)
    _, L, H = s.shape
    data = [dict(type="scatter", x=list(steps), y=s[:, la, h].tolist(), mode="lines+markers", name=f"L{la}·H{h}",
                 hovertemplate=f"L{la} H{h}<br>step %{{x}}<br>{escape(role)} score %{{y:.2f}}<extra></extra>")
            for la in range(L) for h in range(H)]
    x, y = downsample(loss_steps, loss)
    data.append(dict(type="scatter", x=x.tolist(), y=y.tolist(), mode="lines", name="train loss", yaxis="y2",
                     line=dict(color="#999", dash="dot"), hovertemplate="step %{x}<br>loss %{y:.3f}<extra></extra>"))
    layout = dict(xaxis=_axis("step"), yaxis=_axis(f"{escape(role)} score (0–1)", range=[0, 1]),
                  yaxis2=_axis("train loss", overlaying="y", side="right", rangemode="tozero", showgrid=False),
                  legend=dict(orientation="h", y=-0.25), uirevision="roles")
    return _fig(data, layout, f"'{escape(role)}' score per head", 340)


def _span(a: float, b: float) -> list[float]:
    return [round(min(max(a, 0.0), 1.0), 6), round(min(max(b, 0.0), 1.0), 6)]  # float noise must not leave [0, 1]


def attention_now(probs, tokens: Sequence[str], *, title: str | None = None) -> go.Figure:
    """Light live version of attention_grid: (L, H, T, T) as L x H heatmaps on one 0..1 scale, no validators."""
    a = np.asarray(probs, float)
    L, H, T, _ = a.shape
    labels = token_labels(tokens)
    gap_x, gap_y = 0.02, 0.08
    w, hgt = (1 - gap_x * (H - 1)) / H, (1 - gap_y * (L - 1)) / L
    data, layout, notes = [], {}, []
    for la in range(L):
        for h in range(H):
            n = la * H + h + 1
            xa, ya = f"x{n if n > 1 else ''}", f"y{n if n > 1 else ''}"
            x0, y1 = h * (w + gap_x), 1 - la * (hgt + gap_y)
            hover = [[f"L{la} H{h}: '{labels[i]}' → '{labels[j]}': {a[la, h, i, j]:.3f}" for j in range(T)]
                     for i in range(T)]
            data.append(dict(type="heatmap", z=a[la, h].round(4).tolist(), zmin=0, zmax=1, colorscale=SEQUENTIAL,
                             showscale=n == 1, hovertext=hover, hoverinfo="text", name=f"L{la}H{h}", xaxis=xa,
                             yaxis=ya, colorbar=dict(thickness=10, title=dict(text="attention"))))
            layout[f"xaxis{n if n > 1 else ''}"] = dict(domain=_span(x0, x0 + w), showticklabels=False, anchor=ya)
            layout[f"yaxis{n if n > 1 else ''}"] = dict(domain=_span(y1 - hgt, y1), showticklabels=False,
                                                        autorange="reversed", anchor=xa)
            notes.append(dict(text=f"L{la}·H{h}", x=x0 + w / 2, y=y1, xref="paper", yref="paper", showarrow=False,
                              yanchor="bottom", font=dict(size=12)))
    layout.update(annotations=notes, margin=dict(l=10, r=10, t=80 if title else 30, b=10))
    return _fig(data, layout, title, 110 + 150 * L)


def attention_player(snapshots: Sequence[np.ndarray], steps: Sequence[int], tokens: Sequence[str],
                     max_frames: int = 40) -> go.Figure:
    """Every head's probe attention at each snapshot step: a Plotly slider + play button scrub client-side.

    snapshots[s] is (L, H, T, T); frames are subsampled to at most max_frames (the last one is always kept).
    """
    from viz_model.figures.attention import attention_grid

    n = len(snapshots)
    if n == 0:
        raise ValueError("no attention snapshots yet: they arrive every few steps once training starts.")
    keep = sorted(set(np.linspace(0, n - 1, min(n, max_frames)).round().astype(int).tolist()))
    fig = attention_grid(snapshots[keep[-1]], tokens, title=f"Probe attention at step {steps[keep[-1]]}")
    L, H = snapshots[0].shape[:2]
    fig.frames = [go.Frame(name=str(steps[i]), layout=dict(title_text=f"Probe attention at step {steps[i]}"),
                           data=[go.Heatmap(z=snapshots[i][la, h]) for la in range(L) for h in range(H)])
                  for i in keep]
    slider_steps = [dict(method="animate", label=str(steps[i]),
                         args=[[str(steps[i])], dict(mode="immediate", frame=dict(duration=0, redraw=True))])
                    for i in keep]
    fig.update_layout(
        sliders=[dict(active=len(keep) - 1, steps=slider_steps, currentvalue=dict(prefix="step "), pad=dict(t=30))],
        updatemenus=[dict(type="buttons", direction="left", x=0, y=-0.02, xanchor="left", yanchor="top",
                          pad=dict(t=30, r=10), showactive=False,
                          buttons=[dict(label="▶ play", method="animate",
                                        args=[None, dict(frame=dict(duration=400, redraw=True), fromcurrent=False,
                                                         transition=dict(duration=0))]),
                                   dict(label="❚❚", method="animate",
                                        args=[[None], dict(mode="immediate", frame=dict(duration=0))])])],
    )
    fig.update_layout(height=(fig.layout.height or 300) + 90, margin=dict(b=100))
    return fig
