"""Sequential dependency: how many operations must wait for the one before (the graph depth), which no
number of cores can shorten: T steps for an RNN, a few layers for a transformer."""

from __future__ import annotations

from dataclasses import dataclass

from viz_model.lessons.recurrence.models import (
    D_MODEL,
    KINDS,
    LAYERS,
    RNN,
    RNN_LAYERS,
    TRANSFORMER,
    TRANSFORMER_LAYERS,
    name,
)


@dataclass
class GraphDepth:
    kind: str
    T: int
    n_layers: int
    depth: int      # operations on the longest chain, each waiting for the one before: RNN T + L − 1, transformer L
    formula: str


def graph_depth(kind: str, T: int, n_layers: int) -> GraphDepth:
    """An RNN's cell (layer l, step t) needs (l, t−1) and (l−1, t): its longest chain has T + L − 1 cells (T for
    one layer). A transformer layer computes all T positions at once from the layer below: L steps."""
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, got {kind!r}.")
    if T < 1 or n_layers < 1:
        raise ValueError("T and the number of layers must be at least 1.")
    if kind == TRANSFORMER:
        return GraphDepth(kind, T, n_layers, n_layers, "L")
    return GraphDepth(kind, T, n_layers, T + n_layers - 1, "T + L - 1")


def depth_lines(T: int) -> list[dict]:
    """The depth chart's lines: the RNN's and the transformer's steps at every power of two to 1,024 and at T."""
    Ts = sorted({2**i for i in range(11)} | {T})
    return [dict(name=f"{name(k)} ({graph_depth(k, 1, LAYERS[k]).formula}, L = {LAYERS[k]})", kind=k, T=Ts,
                 depth=[graph_depth(k, t, LAYERS[k]).depth for t in Ts]) for k in (RNN, TRANSFORMER)]


def depth_text(T: int) -> str:
    rnn, tr = graph_depth(RNN, T, RNN_LAYERS), graph_depth(TRANSFORMER, T, TRANSFORMER_LAYERS)
    return (f"The RNN's h_t = f(x_t, h_(t−1)) cannot start before h_(t−1) is done, even in training, where "
            f"every x_t is known: **{rnn.depth:,}** steps one after another for T = {T:,} (the LSTM alike). "
            f"The transformer computes all {T:,} positions of a layer at once from the layer below: "
            f"**{tr.depth}** steps, whatever T is.")


def work_text(T: int, d: int = D_MODEL) -> str:
    """O(n·d²) against O(n²·d), in words, with this T and the timed models' d."""
    rnn, attn = T * d * d, T * T * d
    more = "more" if attn > rnn else "fewer" if attn < rnn else "as many"
    return (f"**Work, not depth.** An RNN does **O(n·d²)**: one d×d matrix times a vector per step, n steps. "
            f"Attention does **O(n²·d)**: a d-long dot product for every pair of positions. With n = {T:,} and "
            f"d = {d}: n·d² = {rnn:,} and n²·d = {attn:,} multiply-adds, so attention does **{more}** "
            f"(n/d = {T / d:.3g}); they cross at n = d. The transformer's own projections and MLP are "
            "O(n·d²) too; the n² term is what attention adds, and all of it can run at once.")
