"""Training figures: loss curves (train + held-out, overlaid runs), LR schedule, head roles over time."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go

from viz_model.figures.attention import attention_grid_dicts
from viz_model.figures.common import COLORWAY, SEQUENTIAL, axis, domain, escape, fast_figure, layout_dict, token_labels

PALETTE = tuple(COLORWAY[:6])  # overlaid runs: the colour-blind-safe colours, dark enough for lines


def downsample(x: Sequence[float], y: Sequence[float], max_points: int = 300) -> tuple[np.ndarray, np.ndarray]:
    """At most max_points (x, y): bucket means keep the curve's shape; live charts stay light."""
    x, y = np.asarray(x, float), np.asarray(y, float)
    if len(x) <= max_points:
        return x, y
    edges = np.linspace(0, len(x), max_points + 1).astype(int)
    return (np.array([x[a:b][-1] for a, b in zip(edges[:-1], edges[1:])]),
            np.array([y[a:b].mean() for a, b in zip(edges[:-1], edges[1:])]))


def _axis(title: str, **kw) -> dict:
    return axis(title, automargin=True, **kw)


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
    return fast_figure(data, layout_dict(title, height=360, xaxis=_axis("step", range=[0, total] if total else None),
                                         yaxis=_axis("cross-entropy loss (nats)", rangemode="tozero"),
                                         legend=dict(orientation="h", y=-0.2), uirevision="loss"))


def lr_curve(steps: Sequence[int], lrs: Sequence[float], *, total: int | None = None) -> go.Figure:
    x, y = downsample(steps, lrs)
    data = [dict(type="scatter", x=x.tolist(), y=y.tolist(), mode="lines", name="learning rate",
                 line=dict(color="#555"), hovertemplate="step %{x}<br>lr %{y:.2e}<extra></extra>")]
    return fast_figure(data, layout_dict("Learning rate (warm-up, cosine)", height=260, uirevision="lr",
                                         xaxis=_axis("step", range=[0, total] if total else None),
                                         yaxis=_axis("learning rate", exponentformat="e")))


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
    return fast_figure(data, layout_dict(
        f"'{escape(role)}' score per head", height=340, xaxis=_axis("step"),
        yaxis=_axis(f"{escape(role)} score (0–1)", range=[0, 1]),
        yaxis2=_axis("train loss", overlaying="y", side="right", rangemode="tozero", showgrid=False),
        legend=dict(orientation="h", y=-0.25), uirevision="roles"))


def attention_now(probs, tokens: Sequence[str], *, title: str | None = None,
                  q_tokens: Sequence[str] | None = None) -> go.Figure:
    """Light live version of attention_grid: (L, H, Tq, Tk) as L x H heatmaps on one 0..1 scale; q_tokens labels
    the rows when queries and keys differ (a translation's cross-attention)."""
    a = np.asarray(probs, float)
    L, H, Tq, Tk = a.shape
    labels = token_labels(tokens)
    rows = labels if q_tokens is None else token_labels(q_tokens)
    gap_x, gap_y = 0.02, 0.08
    w, hgt = (1 - gap_x * (H - 1)) / H, (1 - gap_y * (L - 1)) / L
    data, layout, notes = [], {}, []
    for la in range(L):
        for h in range(H):
            n = la * H + h + 1
            xa, ya = f"x{n if n > 1 else ''}", f"y{n if n > 1 else ''}"
            x0, y1 = h * (w + gap_x), 1 - la * (hgt + gap_y)
            hover = [[f"L{la} H{h}: '{rows[i]}' → '{labels[j]}': {a[la, h, i, j]:.3f}" for j in range(Tk)]
                     for i in range(Tq)]
            data.append(dict(type="heatmap", z=a[la, h].round(4).tolist(), zmin=0, zmax=1, colorscale=SEQUENTIAL,
                             showscale=n == 1, hovertext=hover, hoverinfo="text", name=f"L{la}H{h}", xaxis=xa,
                             yaxis=ya, colorbar=dict(thickness=10, title=dict(text="attention"))))
            # the tokens label the keys under the bottom row and the queries left of the first column (#43)
            layout[f"xaxis{n if n > 1 else ''}"] = dict(domain=domain(x0, x0 + w), anchor=ya, **_ticks(
                labels, la == L - 1), tickangle=-60)
            layout[f"yaxis{n if n > 1 else ''}"] = dict(domain=domain(y1 - hgt, y1), autorange="reversed", anchor=xa,
                                                        **_ticks(rows, h == 0))
            notes.append(dict(text=f"L{la}·H{h}", x=x0 + w / 2, y=y1, xref="paper", yref="paper", showarrow=False,
                              yanchor="bottom", font=dict(size=12)))
    fig = layout_dict(title, height=170 + 150 * L, top=80 if title else 30, annotations=notes, **layout)
    fig["margin"] = {**fig["margin"], "b": 60}  # room for the keys' labels under the bottom row
    return fast_figure(data, fig)


def _ticks(labels: Sequence[str], shown: bool) -> dict:
    """An axis of a small heatmap: its cells' tokens as tick labels where `shown`, none elsewhere."""
    if not shown:
        return dict(showticklabels=False)
    return dict(showticklabels=True, tickmode="array", tickvals=list(range(len(labels))), ticktext=list(labels),
                tickfont=dict(size=9))


def attention_player(snapshots: Sequence[np.ndarray], steps: Sequence[int], tokens: Sequence[str],
                     max_frames: int = 40, q_tokens: Sequence[str] | None = None) -> go.Figure:
    """Every head's probe attention at each snapshot step: a Plotly slider + play button scrub client-side.

    snapshots[s] is (L, H, Tq, Tk); frames are subsampled to at most max_frames (the last one is always kept);
    q_tokens labels the rows of a cross-attention (a translation's target tokens).
    """
    n = len(snapshots)
    if n == 0:
        raise ValueError("no attention snapshots yet: they arrive every few steps once training starts.")
    keep = sorted(set(np.linspace(0, n - 1, min(n, max_frames)).round().astype(int).tolist()))
    data, layout = attention_grid_dicts(snapshots[keep[-1]], tokens, q_tokens=q_tokens,
                                        title=f"Probe attention at step {steps[keep[-1]]}")
    L, H = snapshots[0].shape[:2]
    frames = [dict(name=str(steps[i]), layout=dict(title=dict(text=f"Probe attention at step {steps[i]}")),
                   data=[dict(type="heatmap", z=snapshots[i][la, h]) for la in range(L) for h in range(H)])
              for i in keep]
    slider_steps = [dict(method="animate", label=str(steps[i]),
                         args=[[str(steps[i])], dict(mode="immediate", frame=dict(duration=0, redraw=True))])
                    for i in keep]
    play = dict(label="▶ play", method="animate", args=[None, dict(frame=dict(duration=400, redraw=True),
                                                                   fromcurrent=False, transition=dict(duration=0))])
    pause = dict(label="❚❚", method="animate", args=[[None], dict(mode="immediate", frame=dict(duration=0))])
    layout.update(
        sliders=[dict(active=len(keep) - 1, steps=slider_steps, currentvalue=dict(prefix="step "), pad=dict(t=30))],
        updatemenus=[dict(type="buttons", direction="left", x=0, y=-0.02, xanchor="left", yanchor="top",
                          pad=dict(t=30, r=10), showactive=False, buttons=[play, pause])],
        height=(layout.get("height") or 300) + 90, margin={**layout["margin"], "b": 100})
    return fast_figure(data, layout, frames=frames)
