"""Every page shows the same numbers before and after (#27's quality bar): each page of app.py, opened with its
default settings on the classroom model, and each of its tabs, is compared with a record made from the code before
the refactor (commit dffc99b) in tests/data/pages_same_numbers.json. Two pages were re-recorded after a meant change,
named in the file's "rerecorded": RNN vs Transformer's linear-regime chart (its RNN's LM head now comes from its seed,
not from whatever ran before it on the server) and Normalization › The batch dimension's stated error (the loss terms
computed as the model's loss is).

What is recorded, per view (a page's default view and each of its tabs):
  - every Plotly chart (by key, else by its place on the page): layout title, axis titles and tick labels, annotation
    texts, and per trace its name and type and, for each array field (x, y, z, customdata, text, hovertext, values,
    labels, r, theta, base, header/cells of a table trace), a fingerprint: shape, NaN count, sum, sum of squares, min,
    max and 16 evenly spaced values for numbers; the strings themselves (64 or fewer) or their sha256 for text;
  - the text of every success and error box (the ✓/✗ claims) and every metric (label, value, delta);
  - the values of every st.table and st.dataframe (a fingerprint per numeric column, the strings of the others).
Numbers compare within rtol 1e-5 / atol 1e-6, strings exactly.

Not compared, because it differs from run to run or is not there without a click:
  - the two charts of wall-clock timings (EXCLUDED: Encoder–decoder › Encoder once, K/V reused; Generate › KV cache's
    time per token; two recordings of the same commit differed by up to 2x): only their title and trace names/types;
  - any box, metric or text table cell that states a time ("12 ms", "3.1 s", "took"): none does on the default views;
  - what runs only on a button, none of which is pressed: Cost's CPU/GPU measurements (timings and memory; its
    KV-cache chart and table are computed from shapes and are compared), every Train tab (a live training run), the
    RoPE length experiment, Normalization's "Residual connections" and "Pre- vs post-norm" (live training of 12-block
    stacks / four setups), Encoder › Why masked LM? (a link to Train).
Everything else was identical between two recordings of dffc99b (one script run, one pytest run per page).

The code before #27 (42b6523, recorded the same way in tests/data/pages_same_numbers_42b6523.json for reference; the
test does not read it; every page ran without an exception there, though the process aborted at exit, "terminate called
without an active exception": the RNN page's warm-up thread, fixed in d880121) against dffc99b. Identical views (15 of
53): the four Train tabs; Q, K and V › Minimal pairs and Held-out loss; Sinusoidal › Curves; RoPE › Angles, Context
extension, Length test; Encoder › Why masked LM?; Encoder–decoder › Encoder once, K/V reused; RNN vs Transformer › 1 and
3; Normalization › Four reasons, Residual connections, Pre- vs post-norm. Every other view differs only by changes that
commits between them meant:
  - heatmaps gained "· numbers" overlay traces (#29 b04ad26, readable_numbers: cell numbers black or white per cell);
    their data traces are unchanged: Start, Explorer (head map, step matrix), Masks panels, Sinusoidal (binary,
    M_k), RoPE "Where it acts";
  - ✓/✗ boxes now state their tolerance ("max error E, tolerance T"; #26/#27: 0b4ed95, ecc7ce7, ee7ca6b and the
    lessons' Check values): every page, with the same measured errors (except Encoder–decoder's, below);
  - Encoder and Encoder–decoder (fill-ins, attention grids, bank charts, alignment, next-word bars, held-out
    metrics and scores): the masked-LM encoder and both translators were retrained (#25 f3574be) and the held-out
    tables gained seen/unseen skeletons (#25); the bank charts read <bos> words <eos> (#26 5b8c549);
  - Q, K and V "Four variants": same scores (z); panel names, hover text and asymmetry text use one rounding and
    numbers are printed where they fit (#26 ee7ca6b); its Claims tab reworded, the held-out-loss claim gone from it
    (6 claims, was 7: the loss claim is now computed beside its numbers, ee7ca6b);
  - Generate tables: no end-token row unless written, Π column from Σ log p (#26 b8a715c);
  - RNN vs Transformer "2 · Gradient by distance": key ÷ d=1 column in .3g and the sentence from the numbers (#26
    e263a27);
  - Cost: the KV-cache chart and table list the English model (#24 477c621).

Regenerate (only when a change of numbers is intended):
    .venv/bin/python tests/test_pages_same_numbers.py [--out tests/data/pages_same_numbers.json] [page ...]
"""

from __future__ import annotations

import ast
import base64
import hashlib
import json
import math
import os
import re
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parent.parent
DATA = Path(__file__).resolve().parent / "data" / "pages_same_numbers.json"
RTOL, ATOL = 1e-5, 1e-6
SAMPLES = 16  # evenly spaced values kept of a numeric array
SHORT = 64  # a string array up to this long is kept whole, a longer one as its sha256
ARRAY_FIELDS = ("x", "y", "z", "customdata", "text", "hovertext", "values", "labels", "r", "theta", "base", "width")
# Strings that state a wall-clock time: a box, metric or table cell matching this is not compared.
TIMING = re.compile(r"\d\s*(ms|µs|us|s|sec|seconds?|min)\b|\btook\b|it/s|per second", re.I)
# Charts whose numbers are wall-clock measurements (they differed between two recordings of the same commit): only
# their titles and their traces' names and types are compared.
EXCLUDED = {
    "ed_timing_chart": "Encoder–decoder › Encoder once, K/V reused: milliseconds per decoding step, measured live",
    "generate_latency": "Generate › KV cache: time per new token with and without the cache, measured live",
}


def _pages(root: Path = ROOT) -> list[str]:
    tree = ast.parse((root / "app.py").read_text())
    node = next(n.value for n in tree.body if isinstance(n, ast.Assign) and getattr(n.targets[0], "id", "") == "PAGES")
    return [file for _, file, *_ in ast.literal_eval(node) if Path(root / file).exists()]


def _tab_keys(root: Path = ROOT) -> list[str]:
    return sorted({k for f in [*root.glob("app_pages/*.py"), *root.glob("viz_model/ui/*.py")]
                   for k in re.findall(r'tabs\((?:[^()]|\([^()]*\))*?key="(\w+_tab)"', f.read_text(), re.S)})


# -- fingerprints ----------------------------------------------------------------------------------------------------
def _num(x: float):
    """A float JSON can hold: NaN as None, ±inf as a string."""
    x = float(x)
    if math.isnan(x):
        return None
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    return x


def _decode(v):
    """A Plotly array ({"dtype", "bdata", "shape"} base64, or a list) as a numpy array (object dtype for text)."""
    if isinstance(v, dict) and "bdata" in v:
        flat = np.frombuffer(base64.b64decode(v["bdata"]), dtype=np.dtype(v["dtype"]))
        return flat.reshape([int(n) for n in str(v.get("shape", len(flat))).split(",")])
    if isinstance(v, dict):
        return None
    if isinstance(v, (list, tuple)) and any(isinstance(e, dict) for e in v):
        return np.asarray([_decode(e) if isinstance(e, dict) else e for e in v], dtype=object)
    v = v if isinstance(v, (list, tuple)) else [v]
    if _has_str(v):  # text (numbers written as text stay text: compared exactly)
        return np.asarray(v, dtype=object)
    try:
        return np.asarray(v, dtype=float)  # numbers, None -> NaN
    except (TypeError, ValueError):  # ragged rows
        return np.asarray(v, dtype=object)


def _has_str(v) -> bool:
    return isinstance(v, str) or (isinstance(v, (list, tuple)) and any(_has_str(e) for e in v))


def fingerprint(v):
    """Shape, NaN count, sum, sum of squares, min, max and evenly spaced samples of a numeric array; the strings of
    a text array (or their sha256 past SHORT)."""
    a = _decode(v)
    if a is None:
        return None
    if a.dtype == object:
        flat = None
        if a.ndim == 1 and not _has_str(a.tolist()):  # a ragged list of numeric rows
            try:
                flat = np.concatenate([np.asarray(r, dtype=float).ravel() for r in a])
            except (TypeError, ValueError):
                flat = None
        if flat is None:
            strings = [str(s) for s in a.ravel().tolist()]
            if len(strings) <= SHORT:
                return {"shape": list(a.shape), "str": strings}
            return {"shape": list(a.shape), "sha256": hashlib.sha256("\x1f".join(strings).encode()).hexdigest()}
        a = flat
    a = a.astype(float)
    flat = a.ravel()
    finite = flat[np.isfinite(flat)]
    some = bool(flat.size) and not np.isnan(flat).all()
    idx = np.unique(np.linspace(0, flat.size - 1, min(SAMPLES, flat.size)).round().astype(int)) if flat.size else []
    return {"shape": list(a.shape), "nan": int(np.isnan(flat).sum()),
            "sum": _num(finite.sum()), "sumsq": _num((finite ** 2).sum()),
            "min": _num(np.nanmin(flat)) if some else None, "max": _num(np.nanmax(flat)) if some else None,
            "samples": [_num(flat[i]) for i in idx]}


def chart_record(fig: dict) -> dict:
    """What a chart shows: its titles, tick labels and annotations, and its traces' arrays."""
    layout = fig.get("layout", {})
    out: dict = {}
    title = layout.get("title")
    out["title"] = title.get("text") if isinstance(title, dict) else title
    axes = {}
    for k, ax in sorted(layout.items()):
        if re.fullmatch(r"[xyz]axis\d*|coloraxis\d*", k) and isinstance(ax, dict):
            t = ax.get("title")
            entry = {"title": t.get("text") if isinstance(t, dict) else t}
            for f in ("tickvals", "ticktext", "range"):
                if f in ax and ax[f] is not None:
                    entry[f] = fingerprint(ax[f])
            axes[k] = entry
    out["axes"] = axes
    out["annotations"] = [a.get("text") for a in layout.get("annotations", []) or []]
    traces = []
    for t in fig.get("data", []):
        tr = {"name": t.get("name"), "type": t.get("type")}
        for f in ARRAY_FIELDS:
            if f in t and t[f] is not None:
                tr[f] = fingerprint(t[f])
        for part in ("header", "cells"):  # go.Table
            if isinstance(t.get(part), dict) and "values" in t[part]:
                tr[f"{part}.values"] = [fingerprint(col) for col in t[part]["values"]]
        traces.append(tr)
    out["traces"] = traces
    return out


def frame_record(df) -> dict:
    """A table's columns and index as text, and each column as a fingerprint (numbers) or its strings."""
    import pandas as pd

    cols = {}
    for c in df.columns:
        s = df[c]
        if pd.api.types.is_numeric_dtype(s) or pd.api.types.is_bool_dtype(s):
            cols[str(c)] = fingerprint(s.to_numpy(dtype=float).tolist())
            continue
        vals = [str(v) for v in s.tolist()]
        cols[str(c)] = "(timing: not compared)" if any(TIMING.search(v) for v in vals) else fingerprint(vals)
    return {"columns": [str(c) for c in df.columns], "index": fingerprint([str(i) for i in df.index]), "data": cols}


# -- the walk --------------------------------------------------------------------------------------------------------
def view_record(at) -> dict:
    """The key figures of the view AppTest has just run."""
    charts = {}
    for i, el in enumerate(at.get("plotly_chart")):
        fig = json.loads(el.proto.spec)
        key = getattr(el, "key", None) or f"#{i}"
        rec = chart_record(fig)
        if key in EXCLUDED:
            rec = {"title": rec["title"], "excluded": EXCLUDED[key],
                   "traces": [{"name": t["name"], "type": t["type"]} for t in rec["traces"]]}
        charts[key if key not in charts else f"{key}#{i}"] = rec
    boxes = [["success", b.value] for b in at.success] + [["error", b.value] for b in at.error]
    boxes = [[k, "(timing: not compared)" if TIMING.search(t) else t] for k, t in boxes]
    metrics = [[m.label, m.value, m.delta] for m in at.metric]
    metrics = [[lb, "(timing)", "(timing)"] if TIMING.search(f"{v} {d}") else [lb, v, d] for lb, v, d in metrics]
    tables = [frame_record(t.value) for t in [*at.table, *at.dataframe]]
    return {"charts": charts, "boxes": boxes, "metrics": metrics, "tables": tables}


def record_page(page_file: str, root: Path = ROOT) -> dict:
    """{view: record}: "page" for a page without tabs, else "tab:<label>" for each of its tabs (the first one the
    page opens on)."""
    import torch
    from streamlit.testing.v1 import AppTest

    torch.manual_seed(0)
    at = AppTest.from_file(str(root / "app.py"), default_timeout=300)
    at.run()
    if not page_file.endswith("start.py"):
        at.switch_page(page_file).run()
    assert not at.exception, (page_file, [e.value for e in at.exception])
    labels = [t.label for t in at.tabs]
    key = next((k for k in _tab_keys(root) if k in at.session_state and at.session_state[k] in labels), None)
    if not key:
        return {"page": view_record(at)}
    first = at.session_state[key]  # the page opens on this tab: its view is the page's default view
    out = {f"tab:{first}": view_record(at)}
    for label in [lb for lb in labels if lb != first]:
        torch.manual_seed(0)
        at.session_state[key] = label
        at.query_params[key] = label
        at.run()
        assert not at.exception, (page_file, label, [e.value for e in at.exception])
        out[f"tab:{label}"] = view_record(at)
    return out


def _setup_env() -> None:
    """As tests/conftest.py does for the suite: the classroom model, no downloaded models, one torch thread."""
    os.environ.setdefault("ATTENTION_LAB_DEFAULT_MODEL", "classroom")
    os.environ["ATTENTION_LAB_MODELS_HOME"] = str(ROOT / "test-artifacts" / "no-models-here")
    import torch

    torch.set_num_threads(1)


def record(pages: list[str] | None = None) -> dict:
    _setup_env()
    return {Path(p).stem: record_page(p) for p in (pages or _pages())}


# -- the test --------------------------------------------------------------------------------------------------------
def _diff(new, old, path: str) -> list[str]:
    """Where `new` differs from `old`: numbers within RTOL/ATOL, the rest exactly."""
    if isinstance(old, dict) and isinstance(new, dict):
        out = [f"{path}: {k!r} missing now" for k in old if k not in new]
        out += [f"{path}: {k!r} new now" for k in new if k not in old]
        for k in old:
            if k in new:
                out += _diff(new[k], old[k], f"{path}/{k}")
        return out
    if isinstance(old, list) and isinstance(new, list):
        if len(old) != len(new):
            return [f"{path}: length {len(new)}, recorded {len(old)}"]
        return [d for i, (a, b) in enumerate(zip(new, old)) for d in _diff(a, b, f"{path}[{i}]")]
    if isinstance(old, float | int) and not isinstance(old, bool) and isinstance(new, float | int):
        return [] if math.isclose(new, old, rel_tol=RTOL, abs_tol=ATOL) else [f"{path}: {new!r}, recorded {old!r}"]
    return [] if new == old else [f"{path}: {new!r}, recorded {old!r}"]


def _recorded() -> dict:
    return json.loads(DATA.read_text())


@pytest.mark.parametrize("page_file", _pages(), ids=lambda p: Path(p).stem)
def test_page_shows_the_recorded_numbers(page_file):
    stem = Path(page_file).stem
    before = _recorded()["pages"]
    assert stem in before, f"{stem}: not recorded (regenerate: .venv/bin/python {Path(__file__).relative_to(ROOT)})"
    now = record_page(page_file)
    diffs = _diff(now, before[stem], stem)
    assert not diffs, f"{len(diffs)} differences from the record (page/view/kind/chart/trace/field):\n" + \
        "\n".join(diffs[:40])


if __name__ == "__main__":
    import argparse
    import subprocess
    import time

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=DATA)
    ap.add_argument("pages", nargs="*", help="page files (app_pages/x.py); default: every page of app.py")
    args = ap.parse_args()
    t0 = time.perf_counter()
    pages = {}
    for p in args.pages or _pages():
        t = time.perf_counter()
        pages[Path(p).stem] = record([p])[Path(p).stem]
        print(f"{p}: {len(pages[Path(p).stem])} views, {time.perf_counter() - t:.1f} s", flush=True)
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout
    out = {"commit": commit.strip(), "excluded": EXCLUDED, "pages": pages}
    args.out.parent.mkdir(exist_ok=True)
    args.out.write_text(json.dumps(out, separators=(",", ":"), ensure_ascii=False) + "\n")
    print(f"wrote {args.out} ({args.out.stat().st_size:,} bytes) in {time.perf_counter() - t0:.0f} s")
