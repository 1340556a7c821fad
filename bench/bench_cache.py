"""What a page pays per rerun for a traced pass it already computed: the old way (st.cache_data, which hands every
hit a fresh unpickled copy of the arrays) beside the one cached path of #27 (ui.cache.cached: the same read-only
arrays for everyone, widened to (L, ...) when only some layers were traced), measured side by side in one run.

Rows: the classroom model's full trace, and the English model's Explorer view of one layer of four, at T = 32.
The old path is the code before #27 (commit dffc99b's ui.cache.cached_trace: input_key, then an st.cache_data
function whose hit unpickles a copy, then the widening), re-declared here so both run in one process.

Run: .venv/bin/python bench/bench_cache.py [--reps 200]
"""

from __future__ import annotations

import argparse
import logging
import statistics
import time

import numpy as np
import streamlit as st
import torch

from viz_model import ASSETS_DIR
from viz_model.checkpoint import load_checkpoint
from viz_model.ui import cache

logging.getLogger("streamlit").setLevel(logging.ERROR)  # bare mode: no script run context, and that is fine here


def median_ms(fn, reps: int) -> float:
    for _ in range(5):
        fn()
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1000)
    return statistics.median(times)


@st.cache_data(max_entries=256, show_spinner=False)
def _old_trace(_model, key: str, _ids, _layers) -> dict:
    return cache._trace(_model, _ids, None, True, 1.0, _layers)


def old_cached_trace(model, model_key: str, ids: tuple[int, ...], layers=None) -> dict:
    """dffc99b's cached_trace (no mask, default knobs): st.cache_data hands each hit its own copy, widened in place."""
    layers = cache._layer_set(layers)
    data = _old_trace(model, cache.input_key(model_key, ids, None, True, 1.0, layers), ids, layers)
    kept_layers, n = data["layers"], data.pop("n_layers")
    if len(kept_layers) == n:
        return data
    for name in cache.PER_LAYER:
        kept = data[name]
        data[name] = np.full((n, *kept.shape[1:]), np.nan, dtype=kept.dtype)
        data[name][list(kept_layers)] = kept
    return data


def row(name: str, model, layers: tuple[int, ...] | None, reps: int) -> dict:
    ids = tuple(range(5, 37))  # T = 32
    data = cache.cached_trace(model, name, ids, layers=layers)  # computed once; what follows are cache hits
    old_cached_trace(model, name, ids, layers)
    old = median_ms(lambda: old_cached_trace(model, name, ids, layers), reps)
    new = median_ms(lambda: cache.cached_trace(model, name, ids, layers=layers), reps)
    mb = sum(v.nbytes for v in data.values() if hasattr(v, "nbytes")) / 2**20
    return {"view": name, "MB handed to the page": mb, "st.cache_data hit (ms)": old, "cached hit (ms)": new,
            "new / old": new / old}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=200)
    args = ap.parse_args()
    torch.set_num_threads(1)
    models = {k: load_checkpoint(ASSETS_DIR / "models" / f"{k}.safetensors").model.eval()
              for k in ("classroom", "english")}
    rows = [row("classroom, every layer", models["classroom"], None, args.reps),
            row("english, layer 1 of 4", models["english"], (1,), args.reps)]
    cols = list(rows[0])
    print(" | ".join(cols))
    for r in rows:
        print(" | ".join(f"{r[c]:.3f}" if isinstance(r[c], float) else str(r[c]) for c in cols))


if __name__ == "__main__":
    main()
