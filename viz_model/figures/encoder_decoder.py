"""Encoder-decoder figures: the three attention kinds side by side with their masks, one cross-attention head
with the known word alignment on top, alignment accuracy per head, and decoding time with and without reuse."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import plotly.graph_objects as go

from viz_model.figures.common import (
    FONT,
    SEQUENTIAL,
    allowed_cells,
    domain,
    escape,
    fast_figure,
    layout_dict,
    masked_trace,
    to_numpy,
    token_labels,
)

ALIGNED, PEAK = "#E69F00", "#E45756"  # the known alignment, each row's argmax: apart under every colour vision
MIN_COLS = 4                          # the narrowest panel, in cells (its title must fit above it)
WORD_TICKS = FONT["size"]             # the alignment map's word labels: the page's text size, read on a projector


def _ticks(labels: list[str], title: str | None = None, size: int = 10, **extra) -> dict:
    return dict(tickmode="array", tickvals=list(range(len(labels))), ticktext=labels, tickfont=dict(size=size),
                showgrid=False, zeroline=False, **({"title": dict(text=title)} if title else {}), **extra)


def _panel(name: str, p: np.ndarray, ok: np.ndarray, ql: list[str], kl: list[str], ax: dict, scale: bool) -> list:
    """One attention panel: a grey × layer under the blocked cells, the weights (holes where blocked) on top."""
    Tq, Tk = p.shape
    show = max(Tq, Tk) <= 10  # values printed in the cells while they are large enough to read
    hover = [[f"{name}<br>query {ql[i]} → key {kl[j]}: " + (f"{p[i, j]:.3f}" if ok[i, j] else "masked (−∞)")
              for j in range(Tk)] for i in range(Tq)]
    xs, ys = list(range(Tk)), list(range(Tq))
    out = []
    if not ok.all():
        out.append(masked_trace(ok, xs, ys, f"{name} mask", mark="×" if show else None, hovertext=hover,
                                hoverinfo="text", xgap=1, ygap=1, **ax))
    out.append(dict(type="heatmap", z=np.where(ok, p, np.nan).astype(np.float32), x=xs, y=ys, name=name, zmin=0,
                    zmax=1, colorscale=SEQUENTIAL, hovertext=hover, hoverinfo="text", hoverongaps=False,
                    text=np.where(ok, np.round(p, 2).astype(str), "") if show else None,
                    texttemplate="%{text}" if show else None, xgap=1, ygap=1, showscale=scale,
                    colorbar=dict(title=dict(text="attention", side="right"), thickness=12) if scale else None, **ax))
    return out


def three_attentions(panels: Sequence[tuple[str, object, object, Sequence[str], Sequence[str]]], *,
                     title: str | None = None) -> go.Figure:
    """The encoder's, the decoder's and the cross attention of one head side by side, each with its mask drawn.

    panels: (title, probs (Tq, Tk), allowed (Tq, Tk) bool, query tokens, key tokens) each. Every cell has the same
    size: a panel is as wide as its keys and as tall as its queries, so T_tgt × T_src reads off the picture.
    """
    mats = []
    for name, probs, allowed, q_tokens, k_tokens in panels:
        p = to_numpy(probs).astype(float)
        ok = allowed_cells(allowed, p.shape)
        if p.shape != ok.shape or p.shape != (len(q_tokens), len(k_tokens)):
            raise ValueError(f"{name}: {p.shape[0]}×{p.shape[1]} weights for {len(q_tokens)} queries and "
                             f"{len(k_tokens)} keys.")
        mats.append((name, p, ok, token_labels(q_tokens), token_labels(k_tokens),
                     max(len(f"{i} {t}") for i, t in enumerate(q_tokens))))  # longest row label, in characters
    rows = max(m[1].shape[0] for m in mats)
    # Room for each panel's row labels on its left (about 0.006 of the width per character), and every panel at
    # least MIN_COLS cells wide so that its title fits; otherwise cells are square-ish and of one size.
    gaps = [0.0] + [min(0.25, 0.04 + 0.0065 * m[5]) for m in mats[1:]]
    units = [max(m[1].shape[1], MIN_COLS) for m in mats]
    width = (1 - sum(gaps)) / sum(units)
    data, layout, notes, x0 = [], {}, [], 0.0
    for c, ((name, p, ok, ql, kl, _), gap, u) in enumerate(zip(mats, gaps, units), start=1):
        n = "" if c == 1 else c
        x0 += gap
        x1, top = x0 + width * u, p.shape[0] / rows
        layout[f"xaxis{n}"] = _ticks(kl, "key", anchor=f"y{n}", domain=domain(x0, x1), side="bottom",
                                     tickangle=-50)
        layout[f"yaxis{n}"] = _ticks(ql, "query" if c == 1 else None, anchor=f"x{n}", domain=domain(1 - top, 1),
                                     autorange="reversed")
        notes.append(dict(text=escape(name).replace(", ", ",<br>"), x=(x0 + x1) / 2, y=1.0, xref="paper",
                          yref="paper", xanchor="center", yanchor="bottom", showarrow=False, font=dict(size=12)))
        data += _panel(name, p, ok, ql, kl, dict(xaxis=f"x{n}", yaxis=f"y{n}"), scale=c == len(mats))
        x0 = x1
    return fast_figure(data, layout_dict(title, height=max(360, 210 + 30 * rows), top=130 if title else 100,
                                         title_top=bool(title), annotations=notes, **layout))


def _markers(name: str, cells: list[tuple[int, int]], ql: list[str], kl: list[str], symbol: str, colour: str,
             size: int, what: str) -> dict:
    return dict(type="scatter", mode="markers", name=name, x=[j for _, j in cells], y=[i for i, _ in cells],
                marker=dict(symbol=symbol, size=size, color=colour, line=dict(width=3, color=colour)),
                hovertext=[f"{what}: target {ql[i]} ← source {kl[j]}" for i, j in cells], hoverinfo="text")


def alignment_map(cross, src_tokens: Sequence[str], tgt_tokens: Sequence[str], alignment: Sequence[int] | None, *,
                  title: str | None = None) -> go.Figure:
    """One head's cross-attention (T_tgt, T_src); □ = the known alignment (target word j translates source word
    alignment[j]), • = where the row's weight peaks. A • inside a □ is a row this head aligns correctly."""
    p = to_numpy(cross).astype(float)
    Tq, Tk = p.shape
    if (Tq, Tk) != (len(tgt_tokens), len(src_tokens)):
        raise ValueError(f"cross-attention is {Tq}×{Tk} for {len(tgt_tokens)} target and {len(src_tokens)} source "
                         "tokens.")
    ql, kl = token_labels(tgt_tokens), token_labels(src_tokens)
    hover = [[f"target {ql[i]} → source {kl[j]}: {p[i, j]:.3f}" for j in range(Tk)] for i in range(Tq)]
    data = [dict(type="heatmap", z=p.astype(np.float32), x=list(range(Tk)), y=list(range(Tq)), zmin=0, zmax=1,
                 colorscale=SEQUENTIAL, name="cross-attention", hovertext=hover, hoverinfo="text", xgap=1, ygap=1,
                 colorbar=dict(title=dict(text="attention", side="right"), thickness=12))]
    if alignment is not None:
        if len(alignment) > Tq or any(not 0 <= a < Tk for a in alignment):
            raise ValueError("the alignment names rows or source words the map does not have.")
        data.append(_markers("known alignment", list(enumerate(alignment)), ql, kl, "square-open", ALIGNED, 26,
                             "known alignment"))
    peaks = [(i, int(np.argmax(p[i]))) for i in range(Tq)]
    data.append(_markers("this head's peak", peaks, ql, kl, "circle", PEAK, 9, "peak of the row"))
    return fast_figure(data, layout_dict(
        title, height=max(360, 170 + 34 * Tq), top=130 if title else 100, title_top=bool(title),
        legend=dict(orientation="h", y=-0.05, yanchor="top"),
        # word labels at the text size, upright: with no tickangle set, Plotly turns them only where they would overlap
        xaxis=_ticks(kl, "source word (key, from the encoder)", WORD_TICKS, side="top"),
        yaxis=_ticks(ql, "target word (query, from the decoder)", WORD_TICKS, autorange="reversed")))


def head_accuracy(panels: Mapping[str, object], *, title: str | None = None,
                  guided: tuple[int, int] | None = None) -> go.Figure:
    """Alignment accuracy per head, one (L, H) heatmap per panel (e.g. this sentence, the held-out set); 0..1.
    `guided`: the (layer, head) training pulled toward the alignment, labelled so in every panel."""
    mats = {name: to_numpy(a).astype(float) for name, a in panels.items()}
    if not mats or any(m.ndim != 2 for m in mats.values()):
        raise ValueError("each panel is an (layers, heads) matrix of accuracies.")
    n = len(mats)
    data, layout, notes = [], {}, []
    w = (1 - 0.08 * (n - 1)) / n
    for c, (name, a) in enumerate(mats.items(), start=1):
        s = "" if c == 1 else c
        L, H = a.shape
        x0 = (c - 1) * (w + 0.08)
        layout[f"xaxis{s}"] = dict(anchor=f"y{s}", domain=domain(x0, x0 + w), tickmode="array",
                                   tickvals=list(range(H)), ticktext=[f"H{h}" for h in range(H)],
                                   title=dict(text="head"))
        layout[f"yaxis{s}"] = dict(anchor=f"x{s}", domain=[0.0, 1.0], tickmode="array", tickvals=list(range(L)),
                                   ticktext=[f"L{i}" for i in range(L)], autorange="reversed",
                                   **({"title": dict(text="decoder layer")} if c == 1 else {}))
        notes.append(dict(text=escape(name), x=x0 + w / 2, y=1.0, xref="paper", yref="paper", xanchor="center",
                          yanchor="bottom", showarrow=False, font=dict(size=12)))
        data.append(dict(type="heatmap", z=a, x=list(range(H)), y=list(range(L)), zmin=0, zmax=1,
                         colorscale=SEQUENTIAL, name=name,
                         text=[[f"{v:.0%}" + ("<br>guided" if (i, h) == guided else "") for h, v in enumerate(row)]
                               for i, row in enumerate(a)],
                         texttemplate="%{text}", xgap=2, ygap=2, showscale=c == n,
                         hovertext=[[f"{escape(name)}: layer {i}, head {h}: {a[i, h]:.1%} of target words peak on "
                                     "their aligned source word" + (" (this head was guided toward the alignment "
                                                                    "in training)" if (i, h) == guided else "")
                                     for h in range(H)] for i in range(L)],
                         hoverinfo="text", colorbar=dict(title=dict(text="accuracy", side="right"), thickness=12)
                         if c == n else None, xaxis=f"x{s}", yaxis=f"y{s}"))
    L = max(m.shape[0] for m in mats.values())
    return fast_figure(data, layout_dict(title, height=max(220, 140 + 48 * L), top=90 if title else 50,
                                         annotations=notes, **layout))


def decode_timing_bars(tokens: int, seconds_reuse: float, seconds_reencode: float, *,
                       title: str | None = None) -> go.Figure:
    """Milliseconds per decoded token: encoder once + caches, against re-encoding the source every step."""
    per = [1000 * seconds_reuse / max(tokens, 1), 1000 * seconds_reencode / max(tokens, 1)]
    names = ["encoder once, K/V reused + decoder cache", "source re-encoded every step, no cache"]
    labels = ["encoder once, K/V reused<br>+ decoder cache", "source re-encoded<br>every step, no cache"]  # a phone
    return fast_figure([dict(type="bar", x=per, y=names, orientation="h", name="ms per token",
                             marker=dict(color=["#4C78A8", "#E45756"]), text=[f"{v:.2f} ms" for v in per],
                             textposition="auto", hovertext=[f"{n}: {v:.3f} ms per token over {tokens} tokens"
                                                             for n, v in zip(names, per)], hoverinfo="text")],
                       layout_dict(title, height=220, xaxis=dict(title=dict(text="ms per target token"),
                                                                 rangemode="tozero"),
                                   yaxis=dict(autorange="reversed", tickvals=names, ticktext=labels)))
