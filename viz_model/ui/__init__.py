"""Streamlit glue shared by pages: cached loaders, session state, sidebar, errors."""
