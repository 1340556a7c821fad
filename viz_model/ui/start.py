"""Streamlit glue for the Start page: one head of the sentence's attention, as a fragment."""

from __future__ import annotations

import numpy as np
import streamlit as st
import torch

from viz_model.checkpoint import Checkpoint
from viz_model.figures.attention import attention_heatmap
from viz_model.ui import chart
from viz_model.ui.cache import cached, input_key, model_id
from viz_model.ui.errors import section
from viz_model.ui.widgets import ROW_SUM_TOL, layer_head, verdict


def attention_of(ckpt: Checkpoint, ids: tuple[int, ...], layer: int) -> tuple[np.ndarray, np.ndarray]:
    """(probs (H, T, T) of `layer`, allowed (T, T)) of one pass that traces only the layer on screen and stops there
    (no later block, no LM head: GPT-2 small's layer 0 at T = 32 in 6 ms instead of 85), shared by every student on
    the same sentence and layer (read-only arrays: nothing mutates them)."""
    def run():
        model = ckpt.model
        with torch.no_grad():
            out = model(torch.tensor([ids], device=model.device), trace_layers=(layer,), logits=False)
        lt = out.trace.layers[layer]
        allowed = torch.isfinite(lt.mask).expand(lt.probs.shape)[0, 0].cpu().numpy()
        return lt.probs[0].float().cpu().numpy(), allowed
    return cached("start_attention", (input_key(model_id(ckpt), ids), layer), run)


@section("the attention view")  # the Layer and Head pickers rerun only this part of the page
def attention_view(ckpt: Checkpoint, enc) -> None:
    """Layer and Head pickers, the head's attention weights, its measured role and the row-sum check."""
    cfg, meta = ckpt.model.config, ckpt.metadata
    layer, head = layer_head("start", cfg.n_layers, cfg.n_heads)
    probs, allowed = attention_of(ckpt, tuple(enc.ids), layer)
    key = (input_key(model_id(ckpt), tuple(enc.ids), tuple(enc.tokens)), layer, head)
    fig = cached("start_heatmap", key, lambda: attention_heatmap(
        probs[head], enc.tokens, allowed=allowed, title=f"Layer {layer} · head {head}: attention weights"))
    chart.show(fig, key="start_heatmap", name=f"attention_L{layer}_H{head}")
    role = next((r for r in meta.get("head_roles") or [] if (r["layer"], r["head"]) == (layer, head)), None)
    if role:
        st.caption(f"Measured role of this head on held-out text: **{role['role']}** (score {role['score']:.2f}).")
    err = float(np.abs(probs[head].sum(-1) - 1).max())
    note = "grey cells (×) are blocked by the causal mask" if cfg.causal else "this model attends in both directions"
    verdict(err, ROW_SUM_TOL, f"Every row sums to 1; {note}")
