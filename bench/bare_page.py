"""The floor for bench/bench_pages.py: a bare Streamlit page drawing Plotly figures the size of the Explorer's.

No model, no hover text, no checks: the charts the Explorer draws with its default tab (Pipeline) open — a layers x
heads grid of T x T heatmaps, one large T x T heatmap and one T x T pipeline step — filled with random numbers.
(The Query focus and row-sharpness tabs run only when opened.) Size comes from st.session_state: bare_T (default
16), bare_L (2), bare_H (4).
"""

import numpy as np
import plotly.graph_objects as go
import streamlit as st
from plotly.subplots import make_subplots

T = int(st.session_state.get("bare_T", 16))
L, H = (int(st.session_state.get(k, v)) for k, v in (("bare_L", 2), ("bare_H", 4)))
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
