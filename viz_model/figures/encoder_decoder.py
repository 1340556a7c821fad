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


def _panel(name: str, p: np.ndarray, ok: np.ndarray, ql: list[str], kl: list[str], scale: bool) -> list:
    """One attention panel: a grey × layer under the blocked cells, the weights (holes where blocked) on top."""
    Tq, Tk = p.shape
    show = max(Tq, Tk) <= 10  # values printed in the cells while they are large enough to read
    hover = [[f"{name}<br>query {ql[i]} → key {kl[j]}: " + (f"{p[i, j]:.3f}" if ok[i, j] else "masked (−∞)")
              for j in range(Tk)] for i in range(Tq)]
    xs, ys = list(range(Tk)), list(range(Tq))
    out = []
    if not ok.all():
        out.append(masked_trace(ok, xs, ys, f"{name} mask", mark="×" if show else None, hovertext=hover,
                                hoverinfo="text", xgap=1, ygap=1))
    out.append(dict(type="heatmap", z=np.where(ok, p, np.nan).astype(np.float32), x=xs, y=ys, name=name, zmin=0,
                    zmax=1, colorscale=SEQUENTIAL, hovertext=hover, hoverinfo="text", hoverongaps=False,
                    text=np.where(ok, np.round(p, 2).astype(str), "") if show else None,
                    texttemplate="%{text}" if show else None, xgap=1, ygap=1, showscale=scale,
                    colorbar=dict(title=dict(text="attention", side="right"), thickness=12) if scale else None))
    return out


THREE_PARTS = ("encoder", "decoder", "cross")  # three_attentions' figures, in order (the page keys its charts so)
LABEL_CELLS_PER_CHAR = 0.55  # a row label's width, in cells of a panel, per character (panel_widths)


def _label_chars(tokens: Sequence[str]) -> int:
    return max(len(f"{i} {t}") for i, t in enumerate(tokens))  # the longest row label ("3 sat"), in characters


def three_attentions(panels: Sequence[tuple[str, object, object, Sequence[str], Sequence[str]]], *,
                     titles: Sequence[str | None] | None = None) -> list[go.Figure]:
    """The encoder's, the decoder's and the cross attention of one head, an attention_panel each (the page sets them
    side by side, in proportion to panel_widths: Streamlit's columns, which stack on a phone).

    panels: (name, probs (Tq, Tk), allowed (Tq, Tk) bool, query tokens, key tokens) each; `titles`: each figure's
    (its layer and head). The figures share one height, one space above and below the plot, and a panel is as tall
    as its queries: side by side every cell has the same size and T_tgt × T_src reads off the picture.
    """
    titles = list(titles or [None] * len(panels))
    rows = max(len(q) for _, _, _, q, _ in panels)
    lines = max(len(name.split(", ")) + bool(t) for (name, *_), t in zip(panels, titles))
    keys = max(_label_chars(k) for *_, k in panels)
    return [attention_panel(name, probs, allowed, q, k, title=t, rows=rows, title_lines=lines, key_chars=keys,
                            scale=c == len(panels) - 1)
            for c, ((name, probs, allowed, q, k), t) in enumerate(zip(panels, titles))]


def attention_panel(name: str, probs, allowed, q_tokens: Sequence[str], k_tokens: Sequence[str], *,
                    title: str | None = None, rows: int | None = None, title_lines: int | None = None,
                    key_chars: int | None = None, scale: bool = True) -> go.Figure:
    """One attention kind of one head: probs (Tq, Tk) with the blocked cells of `allowed` drawn (a grey × layer).
    `name` is written above the plot, a line per clause; `title` above it. Beside others: `rows` (the tallest panel's
    queries) sets the height, `title_lines` (the most lines of them, the title's too) the space above the plot and
    `key_chars` (the longest key label of them) the space below it, so that their cells are of one height."""
    p = to_numpy(probs).astype(float)
    ok = allowed_cells(allowed, p.shape)
    if p.shape != ok.shape or p.shape != (len(q_tokens), len(k_tokens)):
        raise ValueError(f"{name}: {p.shape[0]}×{p.shape[1]} weights for {len(q_tokens)} queries and "
                         f"{len(k_tokens)} keys.")
    ql, kl = token_labels(q_tokens), token_labels(k_tokens)
    rows = max(rows or 0, p.shape[0])
    head = escape(name).split(", ")  # a line per clause, above the plot: a narrow column cuts none
    top = 24 + 17 * max(title_lines or 0, len(head) + bool(title))
    # the name as a note on the plot's top edge (it grows upwards, line by line; a multi-line title pinned to the top
    # had its first line cut off), the layers and the head as the title above it
    note = dict(text=",<br>".join(head), x=0, y=1.0, xref="paper", yref="paper", xanchor="left", yanchor="bottom",
                showarrow=False, font=dict(size=13), align="left")
    layout = dict(xaxis=_ticks(kl, "key", side="bottom", tickangle=-50),
                  yaxis=_ticks(ql, "query", autorange="reversed", domain=domain(1 - p.shape[0] / rows, 1)))
    # below: the key labels (10 px text at -50°: about 5 px of height a character) and the axis title
    bottom = 45 + 5 * max(key_chars or 0, _label_chars(k_tokens))
    out = fast_figure(_panel(name, p, ok, ql, kl, scale=scale),
                      layout_dict(escape(title) if title else None, height=max(300, 160 + 30 * rows) + top,
                                  top=top, title_top=True, annotations=[note], **layout))
    out.layout.margin.b = bottom
    return out


def panel_widths(panels: Sequence[tuple[str, object, object, Sequence[str], Sequence[str]]]) -> list[float]:
    """The relative widths of three_attentions' figures side by side (st.columns' spec): each panel's key columns
    (at least MIN_COLS, so its title fits) and its row labels, the last one's colour bar too, in cells."""
    widths = [max(len(k), MIN_COLS) + LABEL_CELLS_PER_CHAR * _label_chars(q) + 1.5 for _, _, _, q, k in panels]
    widths[-1] += 3  # the colour bar
    return widths


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
