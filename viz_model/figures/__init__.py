"""Plotly figure factories: pure functions, arrays/tensors in, go.Figure / DataFrame out. No streamlit."""
