"""Attention Lab's model package: a small transformer whose attention you can see inside.

Core modules use torch only; `viz_model.figures` adds plotly, `viz_model.ui` adds streamlit.
"""

from __future__ import annotations

import os
from pathlib import Path

__version__ = "0.1.0"

ASSETS_DIR = Path(os.environ.get("ATTENTION_LAB_ASSETS", Path(__file__).resolve().parent.parent / "assets"))

from viz_model.config import ModelConfig  # noqa: E402
from viz_model.model import ModelOutput, TinyTransformer, Trace  # noqa: E402

__all__ = ["ASSETS_DIR", "ModelConfig", "ModelOutput", "TinyTransformer", "Trace", "__version__"]
