"""The floor for bench/bench_pages.py: a bare Streamlit page drawing Plotly figures the size of the Explorer's.

No model, no hover text, no checks: the same charts (a layers x heads grid of T x T heatmaps, one large T x T
heatmap, one T x T pipeline step, two bar charts of T and one (T+1) x d_k heatmap) filled with random numbers.
Size comes from st.session_state: bare_T (default 16), bare_L (2), bare_H (4), bare_dk (32).
"""

import numpy as np
import plotly.graph_objects as go
import streamlit as st
from plotly.subplots import make_subplots

T = int(st.session_state.get("bare_T", 16))
L, H, d_k = (int(st.session_state.get(k, v)) for k, v in (("bare_L", 2), ("bare_H", 4), ("bare_dk", 32)))
st.title("Bare page")
head = st.selectbox("Head", range(H), key="bare_head")
rng = np.random.default_rng(head)

grid = make_subplots(rows=L, cols=H)
for i in range(L):
    for j in range(H):
        grid.add_trace(go.Heatmap(z=rng.random((T, T)), zmin=0, zmax=1, showscale=False), row=i + 1, col=j + 1)
st.plotly_chart(grid, key="bare_grid")
for name in ("big", "step"):
    st.plotly_chart(go.Figure(go.Heatmap(z=rng.random((T, T)))), key=f"bare_{name}")
c1, c2 = st.columns(2)
c1.plotly_chart(go.Figure(go.Bar(y=rng.random(T))), key="bare_bars")
c2.plotly_chart(go.Figure(go.Heatmap(z=rng.random((T + 1, d_k)))), key="bare_mix")
st.plotly_chart(go.Figure(go.Bar(y=rng.random(T))), key="bare_entropy")
