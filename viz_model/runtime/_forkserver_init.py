"""Imported only inside the training forkserver (its preload), never by the web server itself.

multiprocessing makes every child re-run the parent's main script first. Inside Streamlit that "main" is the app
script (Streamlit swaps `sys.modules["__main__"]` for each script run), so a child would execute app.py. Training
children need nothing from it: they get their target by module path. So the forkserver, and the children forked
from it, skip that step. It also imports what a child needs, once: torch, torch._dynamo (AdamW imports it when
constructed: 1.4 s here) and viz_model.
"""

import multiprocessing.spawn as _spawn

_spawn._fixup_main_from_path = lambda main_path: None
_spawn._fixup_main_from_name = lambda mod_name: None

import torch._dynamo  # noqa: E402, F401

import viz_model.lessons.train  # noqa: E402, F401
