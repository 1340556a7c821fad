"""Figures for real checkpoints (GPT-2, Llama...): one page of a layers x heads grid too large to read at once."""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go

from viz_model.figures.attention import attention_grid_dicts
from viz_model.figures.common import fast_figure, to_numpy

_TRACE_NAME = re.compile(r"^L(\d+)H(\d+)( masked)?$")


def attention_grid_page(
    probs,                         # (L, H, T, T) attention of every layer and head of the model
    tokens: Sequence[str],
    layers: Sequence[int],         # the layers on this page (rows), e.g. [4, 5, 6, 7]
    heads: Sequence[int],          # the heads on this page (columns)
    *,
    roles: list[list[str]] | None = None,  # (L, H) subtitles of the whole model, e.g. "previous-token 0.93"
    kv_group: int = 1,             # query heads per K/V head (grouped-query attention); > 1 names each head's K/V
    title: str | None = None,
    allowed=None,                  # (T, T) bool: False cells were masked (grey)
) -> go.Figure:
    """attention_grid of some layers and heads, labelled with their indices in the whole model (L5·H2, and the
    K/V head it reads under grouped-query attention: query head h reads K/V head h // kv_group)."""
    layers, heads = [int(i) for i in layers], [int(h) for h in heads]
    a = to_numpy(probs)[np.ix_(layers, heads)]  # (len(layers), len(heads), T, T)
    subs = None
    if roles is not None or kv_group > 1:
        subs = [[" · ".join(x for x in ((roles[lyr][h] if roles else ""),
                                         (f"K/V {h // kv_group}" if kv_group > 1 else "")) if x)
                 for h in heads] for lyr in layers]
    data, layout = attention_grid_dicts(a, tokens, roles=subs, title=title, allowed=allowed)
    n = len(heads)
    for i, note in enumerate(layout.get("annotations", [])):  # "L0·H1..." -> the model's own indices
        li, hi = divmod(i, n)
        old = f"L{li}·H{hi}"
        note["text"] = f"L{layers[li]}·H{heads[hi]}" + note["text"][len(old):]
    for trace in data:
        m = _TRACE_NAME.match(trace.get("name", ""))
        if m is None:
            continue
        li, hi = int(m.group(1)), int(m.group(2))
        lyr, h = layers[li], heads[hi]
        trace["name"] = f"L{lyr}H{h}{m.group(3) or ''}"
        trace["hovertemplate"] = trace["hovertemplate"].replace(f"L{li} H{hi}: ", f"L{lyr} H{h}: ", 1)
    return fast_figure(data, layout)
