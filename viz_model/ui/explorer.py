"""Streamlit glue for the Attention pages: sentence input, token chips, cached traces, head roles, pipeline."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
import pyarrow as pa
import streamlit as st

from viz_model.checkpoint import Checkpoint
from viz_model.figures.attention import attention_heatmap
from viz_model.figures.explorer import matrix_heatmap, query_bars, value_mix
from viz_model.ui import chart, share
from viz_model.ui.cache import cached, model_id
from viz_model.ui.widgets import check_line


def bind_view(cfg) -> None:
    """The Explorer's main settings live in the URL (a shared link reopens this exact view)."""
    share.bind("layer", "explorer_layer", int, choices=range(cfg.n_layers))
    share.bind("head", "explorer_head", int, choices=range(cfg.n_heads))
    share.bind("scale", "explorer_scale", bool)
    share.bind("temperature", "explorer_temp", float, lo=0.1, hi=5.0)
    share.bind("mask", "explorer_mask", choices=["causal", "bidirectional"])
    share.bind("average", "explorer_avg", bool)
    share.bind("step", "explorer_step", int, choices=range(8))


# -- cached traces ----------------------------------------------------------------------------------


# -- head roles -------------------------------------------------------------------------------------
def _role_text(entry) -> str:
    if isinstance(entry, str):
        return entry
    if isinstance(entry, dict):
        role, score = entry.get("role") or entry.get("name") or "", entry.get("score")
        return f"{role} {score:.2f}" if isinstance(score, (int, float)) else str(role)
    return ""


def head_roles(metadata: dict, n_layers: int, n_heads: int) -> list[list[str]] | None:
    """Measured role + score per head from checkpoint metadata "head_roles" (viz_model/heads.py), if present.

    Accepts a layers x heads nested list, a {"l.h": ...} mapping, or a list of {"layer", "head", "role", "score"}.
    """
    raw = (metadata or {}).get("head_roles")
    if not raw:
        return None
    grid = [["" for _ in range(n_heads)] for _ in range(n_layers)]
    try:
        if isinstance(raw, dict):
            for key, entry in raw.items():
                parts = [int(p) for p in str(key).replace("L", "").replace("H", ".").replace(",", ".").split(".") if p]
                grid[parts[0]][parts[1]] = _role_text(entry)
        elif raw and all(isinstance(r, dict) and "layer" in r for r in raw):
            for r in raw:
                grid[int(r["layer"])][int(r["head"])] = _role_text(r)
        else:
            for lyr, row in enumerate(raw[:n_layers]):
                for h, entry in enumerate(row[:n_heads]):
                    grid[lyr][h] = _role_text(entry)
    except (TypeError, ValueError, IndexError, KeyError, AttributeError):
        return None
    return grid if any(any(row) for row in grid) else None


def head_roles_table(ckpt: Checkpoint) -> pa.Table | None:
    """Every head's measured role, its score and the score of every role (heads.py's list of dicts), as an Arrow
    table built once per loaded model (st.dataframe converts a pandas frame again on every rerun)."""
    return _roles_table(model_id(ckpt), ckpt.metadata)


@st.cache_resource(max_entries=16, show_spinner=False)
def _roles_table(model_key: str, _metadata: dict) -> pa.Table | None:
    raw = (_metadata or {}).get("head_roles")
    if not isinstance(raw, list) or not all(isinstance(r, dict) and "layer" in r for r in raw):
        return None
    rows = [{"head": f"{r['layer']}.{r['head']}", "role": r.get("role", ""), "score": r.get("score"),
             **{k: v for k, v in (r.get("scores") or {}).items()}} for r in raw]
    return pa.Table.from_pandas(pd.DataFrame(rows), preserve_index=False)


# -- pipeline ---------------------------------------------------------------------------------------
@dataclass
class Step:
    title: str
    formula: str
    shape: str


def pipeline_steps(T: int, d_model: int, H: int, d_k: int) -> list[Step]:
    return [
        Step("1. X → Q, K, V", "Q = X·W_Q, K = X·W_K, V = X·W_V (RoPE rotates Q and K if used)",
             f"X ({T}×{d_model}) → Q, K, V ({T}×{d_k}) per head"),
        Step("2. Scores", "S = Q·Kᵀ / √d_k", f"({T}×{d_k})·({d_k}×{T}) → {T}×{T}"),
        Step("3. Mask", "M = 0 where allowed, −∞ where blocked", f"{T}×{T}"),
        Step("4. S + M", "blocked scores become −∞", f"{T}×{T}"),
        Step("5. Softmax", "A = softmax_row(S + M)", f"{T}×{T}, rows sum to 1"),
        Step("6. A·V", "head_out = A·V", f"({T}×{T})·({T}×{d_k}) → {T}×{d_k}"),
        Step("7. Concat", "[head_0 | … | head_H−1]", f"{H} × ({T}×{d_k}) → {T}×{d_model}"),
        Step("8. W_O", "attn_out = concat·W_O + b", f"({T}×{d_model})·({d_model}×{d_model}) → {T}×{d_model}"),
    ]


def pipeline_table(steps: list[Step], errors: list[float | None]) -> pa.Table:
    """The steps with their formula, shape and measured recomputation error (an all-string Arrow table)."""
    return pa.table({"step": [s.title for s in steps], "formula": [s.formula for s in steps],
                     "shape": [s.shape for s in steps],
                     "recomputed, max error": ["—" if e is None else f"{e:.1e}" for e in errors]})


def pipeline_step(i: int, data: dict, checks: dict[str, float], layer: int, head: int, tokens: list[str], prefix: str,
                key: str) -> None:
    """Draw pipeline step i (0-based) for one head, with its live check (checks: cached_checks of this layer);
    figures cached per exact input. key: input_key(...) of everything data and tokens were computed from."""
    key, c, allowed, s = (key, i, layer, head), checks, data["allowed"], data["scores"][layer, head]
    cfg_name = f"pipeline_step{i + 1}_L{layer}_H{head}"
    if i == 0:
        cols = st.columns(3)
        for col, name in zip(cols, ("q", "k", "v")):
            fig = cached(name, key, lambda n=name: matrix_heatmap(
                data[n][layer, head], tokens, title=n.upper(), value_name=n.upper(), row_title="token",
                col_title="d_k", show_values=False))
            chart.show(fig, key=f"{prefix}_step_{name}", name=cfg_name, container=col)
        check_line(c["qkv"] < 1e-4, f"Q, K, V recomputed from X and the weights match the trace "
                                    f"(max error {c['qkv']:.1e}).")
        return
    if i in (1, 2, 3):
        val = {1: s, 2: np.where(allowed, 0.0, -np.inf), 3: np.where(allowed, s, -np.inf)}[i]
        name = {1: "S", 2: "M", 3: "S + M"}[i]
        fig = cached("step", key, lambda: matrix_heatmap(
            val, tokens, tokens, col_tokens=True, allowed=allowed if i != 1 else None, value_name=name,
            col_title="key", title=f"{name}, layer {layer} head {head}"))
        chart.show(fig, key=f"{prefix}_step_mat", name=cfg_name)
        if i == 1:
            check_line(c["scores"] < 1e-4, f"S recomputed as Q·Kᵀ·{data['scale']:.4g} matches the trace "
                                           f"(max error {c['scores']:.1e}).")
        return
    if i == 4:
        fig = cached("step", key, lambda: attention_heatmap(
            data["probs"][layer, head], tokens, allowed=allowed, title=f"A, layer {layer} head {head}"))
        chart.show(fig, key=f"{prefix}_step_mat", name=cfg_name)
        check_line(c["row_sums"] < 1e-5, f"Rows sum to 1, max error {c['row_sums']:.0e}; blocked cells carry "
                                         f"weight {c['masked_weight']:.0e}.")
        return
    if i == 5:
        fig = cached("step", key, lambda: matrix_heatmap(
            data["head_out"][layer, head], tokens, value_name="A·V", row_title="query", col_title="d_k",
            title="head_out = A·V", show_values=False))
        chart.show(fig, key=f"{prefix}_step_mat", name=cfg_name)
        check_line(c["head_out"] < 1e-4, f"A·V recomputed from the trace equals head_out "
                                         f"(max error {c['head_out']:.1e}).")
        return
    if i == 6:
        concat = np.concatenate(list(data["head_out"][layer]), axis=-1)  # (T, H*d_k)
        d_k = data["head_out"].shape[-1]
        labels = [f"h{j // d_k}:{j % d_k}" for j in range(concat.shape[1])]
        fig = cached("step", key, lambda: matrix_heatmap(
            concat, tokens, labels, value_name="concat", row_title="query", col_title="head:feature",
            title="All heads side by side", show_values=False))
        chart.show(fig, key=f"{prefix}_step_mat", name=cfg_name)
        st.caption(f"Columns {head * d_k}–{(head + 1) * d_k - 1} are this head's output.")
        return
    fig = cached("step", key, lambda: matrix_heatmap(
        data["attn_out"][layer], tokens, value_name="attn_out", row_title="query", col_title="d_model",
        title="attn_out = concat·W_O + b", show_values=False))
    chart.show(fig, key=f"{prefix}_step_mat", name=cfg_name)
    check_line(c["attn_out"] < 1e-4, f"concat·W_O + b recomputed equals the layer's attention output "
                                     f"(max error {c['attn_out']:.1e}).")


def query_focus(data: dict, layer: int, head: int, tokens: list[str], prefix: str, key: str) -> None:
    """Pick a query token: its attention row as bars and the value vectors it mixes (this head); key as in
    pipeline_step."""
    labels = [f"{i} {t}" for i, t in enumerate(tokens)]
    qi = st.selectbox("Query token", range(len(tokens)), format_func=lambda i: labels[i],
                      index=len(tokens) - 1, key=f"{prefix}_query")
    probs = data["probs"][layer, head]
    key = (key, layer, head, qi)
    c1, c2 = st.columns(2)
    bars = cached("bars", key, lambda: query_bars(probs[qi], tokens, tokens[qi], allowed=data["allowed"][qi]))
    chart.show(bars, key=f"{prefix}_bars", name=f"query_{qi}", container=c1)
    chart.show(cached("mix", key, lambda: value_mix(probs[qi], data["v"][layer, head], tokens, tokens[qi])),
               key=f"{prefix}_mix", name=f"value_mix_{qi}", container=c2)
