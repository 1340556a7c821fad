"""The floor for the classroom load bench: a bare Streamlit page with Plotly heatmaps and nothing else.

`?cells=N` sets each heatmap to N x N random values (2..1500) and `?charts=K` draws K of them (1..12), so the bench
can match both the bytes a page sends per rerun and the number of charts they come in (measured: one 72 KB chart
reran twice as fast as one 56 KB chart, 180 vs 74 reruns/s, so a page's three 24 KB charts are not matched by one
72 KB chart); the slider `bare_seed` changes the data on every rerun like a student moving a widget.
Run: streamlit run bench/bare_app.py   (bench/class_load.py starts it itself)
"""

import numpy as np
import plotly.graph_objects as go
import streamlit as st


def param(name: str, default: int, lo: int, hi: int) -> int:
    try:
        return min(max(int(st.query_params.get(name, str(default))), lo), hi)
    except ValueError:
        return default


n, k = param("cells", 12, 2, 1500), param("charts", 1, 1, 12)
st.title("Bare page")
seed = st.slider("seed", 0, 1000, 0, key="bare_seed")
for i in range(k):
    z = np.random.default_rng(seed * 16 + i).random((n, n))  # (n, n)
    fig = go.Figure(go.Heatmap(z=z, colorscale="Viridis"))
    fig.update_layout(title=f"{n} x {n} random values", height=420, margin=dict(l=40, r=10, t=40, b=40))
    st.plotly_chart(fig, key=f"bare_chart_{i}")
