"""The floor for the classroom load bench: a bare Streamlit page with one Plotly heatmap and nothing else.

`?cells=N` sets the heatmap to N x N random values (2..1500), so the bench can match the bytes our pages send;
the slider `bare_seed` changes the data on every rerun like a student moving a widget.
Run: streamlit run bench/bare_app.py   (bench/classroom_load.py starts it itself)
"""

import numpy as np
import plotly.graph_objects as go
import streamlit as st

try:
    n = min(max(int(st.query_params.get("cells", "12")), 2), 1500)
except ValueError:
    n = 12
st.title("Bare page")
seed = st.slider("seed", 0, 1000, 0, key="bare_seed")
z = np.random.default_rng(seed).random((n, n))  # (n, n)
fig = go.Figure(go.Heatmap(z=z, colorscale="Viridis"))
fig.update_layout(title=f"{n} x {n} random values", height=420, margin=dict(l=40, r=10, t=40, b=40))
st.plotly_chart(fig, key="bare_chart")
