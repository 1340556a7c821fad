"""Training figures: loss curves (train + held-out, overlaid runs), LR schedule, head roles over time."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from viz_model.figures.common import base_layout, escape

PALETTE = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b")


def downsample(x: Sequence[float], y: Sequence[float], max_points: int = 300) -> tuple[np.ndarray, np.ndarray]:
    """At most max_points (x, y): bucket means keep the curve's shape; live charts stay light."""
    x, y = np.asarray(x, float), np.asarray(y, float)
    if len(x) <= max_points:
        return x, y
    edges = np.linspace(0, len(x), max_points + 1).astype(int)
    return (np.array([x[a:b][-1] for a, b in zip(edges[:-1], edges[1:])]),
            np.array([y[a:b].mean() for a, b in zip(edges[:-1], edges[1:])]))


def loss_curves(runs: dict[str, dict], *, title: str | None = None, total: int | None = None) -> go.Figure:
    """runs[label] = {"steps", "loss", "eval_steps", "heldout"}: solid train, dashed held-out, one colour each."""
    fig = go.Figure()
    for i, (label, r) in enumerate(runs.items()):
        c, name = PALETTE[i % len(PALETTE)], escape(label)
        x, y = downsample(r["steps"], r["loss"])
        fig.add_trace(go.Scatter(x=x, y=y, mode="lines", name=f"train · {name}" if len(runs) > 1 else "train",
                                 line=dict(color=c), hovertemplate="step %{x}<br>train loss %{y:.3f}<extra></extra>"))
        if len(r.get("eval_steps", [])):
            fig.add_trace(go.Scatter(x=r["eval_steps"], y=r["heldout"], mode="lines+markers",
                                     name=f"held-out · {name}" if len(runs) > 1 else "held-out",
                                     line=dict(color=c, dash="dash"), marker=dict(size=5),
                                     hovertemplate="step %{x}<br>held-out loss %{y:.3f}<extra></extra>"))
    fig.update_xaxes(title_text="step", range=[0, total] if total else None)
    fig.update_yaxes(title_text="cross-entropy loss (nats)", rangemode="tozero")
    fig.update_layout(legend=dict(orientation="h", y=-0.2), uirevision="loss")
    return base_layout(fig, title, height=360)


def lr_curve(steps: Sequence[int], lrs: Sequence[float], *, total: int | None = None) -> go.Figure:
    x, y = downsample(steps, lrs)
    fig = go.Figure(go.Scatter(x=x, y=y, mode="lines", name="learning rate", line=dict(color="#555"),
                               hovertemplate="step %{x}<br>lr %{y:.2e}<extra></extra>"))
    fig.update_xaxes(title_text="step", range=[0, total] if total else None)
    fig.update_yaxes(title_text="learning rate", exponentformat="e")
    fig.update_layout(uirevision="lr")
    return base_layout(fig, "Learning-rate schedule (warm-up, then cosine)", height=260)


def role_timeline(steps: Sequence[int], scores: np.ndarray, role: str, loss_steps: Sequence[int],
                  loss: Sequence[float]) -> go.Figure:
    """scores (S, L, H) of one role at each snapshot step, one line per head; the loss on a second axis."""
    s = np.asarray(scores, float)
    fig = make_subplots(specs=[[{"secondary_y": True}]])
    _, L, H = s.shape
    for layer in range(L):
        for h in range(H):
            fig.add_trace(go.Scatter(x=list(steps), y=s[:, layer, h], mode="lines+markers", name=f"L{layer}·H{h}",
                                     hovertemplate=f"L{layer} H{h}<br>step %{{x}}<br>{escape(role)} score "
                                                   "%{y:.2f}<extra></extra>"), secondary_y=False)
    x, y = downsample(loss_steps, loss)
    fig.add_trace(go.Scatter(x=x, y=y, mode="lines", name="train loss", line=dict(color="#999", dash="dot"),
                             hovertemplate="step %{x}<br>loss %{y:.3f}<extra></extra>"), secondary_y=True)
    fig.update_yaxes(title_text=f"{escape(role)} score (0–1)", range=[0, 1], secondary_y=False)
    fig.update_yaxes(title_text="train loss", secondary_y=True, rangemode="tozero", showgrid=False)
    fig.update_xaxes(title_text="step")
    fig.update_layout(legend=dict(orientation="h", y=-0.25), uirevision="roles")
    return base_layout(fig, f"Per-head '{escape(role)}' score on the probe over training", height=340)


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
