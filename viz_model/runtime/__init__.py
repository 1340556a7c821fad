"""Server-side machinery without Streamlit: the training job registry, the training child process, run storage."""
