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
  - the text of every success and error box (the ✓/✗ claims), every info and warning box (notes, and since #43 a
    method shown going wrong on purpose) and every metric (label, value, delta);
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

import base64
import json
import math
import os
import re
from pathlib import Path

import numpy as np
import pytest

from viz_model.pages import page_files

pytestmark = pytest.mark.float_sensitive  # run again under ATEN_CPU_CAPABILITY=default by `make test` (#38)

ROOT = Path(__file__).resolve().parent.parent
DATA = Path(__file__).resolve().parent / "data" / "pages_same_numbers.json"
# What the CPU decides, and what it does not (#38). float32 results differ between machines in the 5th-7th significant
# digit: another BLAS/ATen kernel (AVX-512, AVX2, no SIMD: ATEN_CPU_CAPABILITY) or thread count adds in another order,
# and a page that trains or decodes a little carries that a few steps further (Q, K and V's held-out loss chart moved
# in its 4th digit, 4e-5 relative). So a number is compared as a number, within RTOL of itself plus RTOL of the
# largest magnitude of its array (a weight of 1e-7 beside weights near 1 is noise at 1e-7, not a value of its own).
# 1e-3 is ten times the largest difference seen across those settings and ten times below a change in the 2nd
# significant digit, which must fail (test_the_comparison_still_catches_*).
RTOL = 1e-3
# A measured rounding residue ("max error 1e-07", "max |difference| 4.8e-06") is the page's own check at work: its
# ✓/✗ (compared exactly) says whether it is under the page's tolerance. Its digits are the kernel's, so it passes when
# the recorded and the new residue are both at most the largest tolerance the sentence states, and at most RESIDUE
# (float32 rounding after a model pass on logits up to ~20 in size stays near 1e-5) where it states none.
RESIDUE = 1e-4
# What a residue follows in a sentence ("max error", "|difference|", "‖S − Sᵀ‖/‖S‖ =", "at most", a LayerNorm's
# "output mean"), and what names a table column or row of residues ("recomputed, max error", "max |full − prefix|").
RESIDUE_WORDS = re.compile(r"(error|difference|distance|dependence|at most|relative|output mean|[|‖])\W*$", re.I)
RESIDUE_NAME = re.compile(r"error|difference|distance|\|", re.I)
STATED_TOLERANCE = re.compile(r"(?:tolerance|≤)\s*(\d+(?:\.\d+)?(?:e[-+]?\d+)?)", re.I)
# A number as a page prints it: optional minus (ASCII or U+2212), digits, decimals, exponent; not inside a word
# ("L1", "q0", "W_hh" keep their digits as text).
NUMBER = re.compile(r"(?<![\w.])([-−]?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?)(?![\w])")
ARRAY_FIELDS = ("x", "y", "z", "customdata", "text", "hovertext", "values", "labels", "r", "theta", "base", "width")
LINE_BREAK = re.compile(r"<br\s*/?>", re.I)  # a chart text's line break, read as the space it replaced
# Strings that state a wall-clock time: a box, metric or table cell matching this is not compared.
TIMING = re.compile(r"\d\s*(ms|µs|us|s|sec|seconds?|min)\b|\btook\b|it/s|per second", re.I)
# The server's thread setting (ATTENTION_LAB_TORCH_THREADS), which the model card shows: the suite also runs on 2.
THREADS = re.compile(r"\d+ threads?/request")
# Charts whose numbers are wall-clock measurements (they differed between two recordings of the same commit): only
# their titles and their traces' names and types are compared.
EXCLUDED = {
    "ed_timing_chart": "Encoder–decoder › Encoder once, K/V reused: milliseconds per decoding step, measured live",
    "generate_latency": "Generate › KV cache: time per new token with and without the cache, measured live",
}


def _pages() -> list[str]:
    return page_files()  # viz_model.pages, the table app.py draws


def _tab_keys(root: Path = ROOT) -> list[str]:
    return sorted({k for f in [*root.glob("app_pages/*.py"), *root.glob("viz_model/ui/*.py")]
                   for k in re.findall(r'tabs\((?:[^()]|\([^()]*\))*?key="(\w+_tab)"', f.read_text(), re.S)})


# -- fingerprints ----------------------------------------------------------------------------------------------------
def _num(x: float):
    """A float JSON can hold, to float32's 7 significant digits: NaN as None, ±inf as a string."""
    x = float(x)
    if math.isnan(x):
        return None
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    return float(f"{x:.7g}")


def _decode(v):
    """A Plotly array ({"dtype", "bdata", "shape"} base64, or a list) as a numpy array (object dtype for text)."""
    if isinstance(v, dict) and "bdata" in v:
        flat = np.frombuffer(base64.b64decode(v["bdata"]), dtype=np.dtype(v["dtype"]))
        return flat.reshape([int(n) for n in str(v.get("shape", len(flat))).split(",")])
    if isinstance(v, dict):
        return None
    if isinstance(v, np.ndarray):
        return v
    if isinstance(v, (list, tuple)) and any(isinstance(e, dict) for e in v):
        return np.asarray([_decode(e) if isinstance(e, dict) else e for e in v], dtype=object)
    v = v if isinstance(v, (list, tuple)) else [v]
    if _has_str(v):  # text (numbers written as text stay text: compared as text with numbers in it)
        return np.asarray(v, dtype=object)
    try:
        a = np.asarray(v)
        return a if a.dtype.kind in "iub" else np.asarray(v, dtype=float)  # integers stay integers; None -> NaN
    except (TypeError, ValueError):  # ragged rows
        return np.asarray(v, dtype=object)


def _has_str(v) -> bool:
    return isinstance(v, str) or (isinstance(v, (list, tuple)) and any(_has_str(e) for e in v))


def fingerprint(v):
    """What an array holds: for numbers its shape, NaN count, whether it holds integers (ids, counts: compared
    exactly) and every value to float32's 7 significant digits; for text, its shape and every string."""
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
            return {"shape": list(a.shape), "str": [str(s) for s in a.ravel().tolist()]}
        a = flat
    integer = a.dtype.kind in "iub"
    flat = a.astype(float).ravel()
    return {"shape": list(a.shape), "nan": int(np.isnan(flat).sum()), "int": integer,
            "values": [int(x) for x in flat] if integer else [_num(x) for x in flat]}


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
            integer = getattr(s.dtype, "kind", "f") in "iub" and not s.isna().any()
            cols[str(c)] = fingerprint(s.to_numpy(dtype=int if integer else float))
            continue
        vals = [THREADS.sub("N threads/request", str(v)) for v in s.tolist()]
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
    boxes = [[kind, b.value] for kind in ("success", "error", "info", "warning") for b in getattr(at, kind)]
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

    from viz_model.ui import cache

    # A measurement kept from a button another test pressed (cache.shared_results: Generate's KV-cache timing) would
    # show up here as a chart the record has not (measured: test_app_generate.py then this file): start without one.
    cache._built.clear()
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
    """As tests/conftest.py does for the suite: the classroom model, no downloaded models, its torch threads."""
    os.environ.setdefault("ATTENTION_LAB_DEFAULT_MODEL", "classroom")
    os.environ["ATTENTION_LAB_MODELS_HOME"] = str(ROOT / "test-artifacts" / "no-models-here")
    import torch

    torch.set_num_threads(int(os.environ.get("ATTENTION_LAB_TORCH_THREADS", "1")))  # as tests/conftest.py


def record(pages: list[str] | None = None) -> dict:
    _setup_env()
    return {Path(p).stem: record_page(p) for p in (pages or _pages())}


# -- the test --------------------------------------------------------------------------------------------------------
def _diff(new, old, path: str, context: str = "") -> list[str]:
    """Where `new` differs from `old`: numbers within RTOL (integers exactly), text exactly but for the numbers in it
    (_text_differs). `context` names a table's column, read by the residue rule (_table_diff)."""
    if isinstance(old, dict) and isinstance(new, dict):
        if "values" in old and "values" in new:
            return _array_diff(new, old, path)
        if set(old) == {"columns", "index", "data"} and set(new) == set(old):
            return _table_diff(new, old, path)
        out = [f"{path}: {k!r} missing now" for k in old if k not in new]
        out += [f"{path}: {k!r} new now" for k in new if k not in old]
        for k in old:
            if k in new:
                out += _diff(new[k], old[k], f"{path}/{k}", context)
        return out
    if isinstance(old, list) and isinstance(new, list):
        if len(old) != len(new):
            return [f"{path}: length {len(new)}, recorded {len(old)}"]
        return [d for i, (a, b) in enumerate(zip(new, old)) for d in _diff(a, b, f"{path}[{i}]", context)]
    if isinstance(old, str) and isinstance(new, str):
        return [f"{path}: {new!r}, recorded {old!r}"] if _text_differs(new, old, context) else []
    if isinstance(old, float | int) and not isinstance(old, bool) and isinstance(new, float | int):
        return [] if math.isclose(new, old, rel_tol=RTOL) else [f"{path}: {new!r}, recorded {old!r}"]
    return [] if new == old else [f"{path}: {new!r}, recorded {old!r}"]


def _table_diff(new: dict, old: dict, path: str) -> list[str]:
    """A table: its columns and row labels exactly; each cell as above, its column name and row label the context
    of the numbers in it (a row "causal: max |full − prefix|" holds residues)."""
    out = _diff(new["columns"], old["columns"], f"{path}/columns") + _diff(new["index"], old["index"], f"{path}/index")
    if out:
        return out
    rows = old["index"].get("str", [""] * int(np.prod(old["index"]["shape"])))
    for c in old["columns"]:
        a, b = new["data"].get(c), old["data"].get(c)
        if not (isinstance(a, dict) and isinstance(b, dict) and "str" in a and "str" in b):
            out += _diff(a, b, f"{path}/data/{c}", c)
        elif len(a["str"]) != len(b["str"]):
            out.append(f"{path}/data/{c}: {len(a['str'])} rows, recorded {len(b['str'])}")
        else:
            out += [f"{path}/data/{c}[{i}]: {x!r}, recorded {y!r}" for i, (x, y, r) in
                    enumerate(zip(a["str"], b["str"], rows)) if _text_differs(x, y, f"{c} {r}")]
    return out


def _array_diff(new: dict, old: dict, path: str) -> list[str]:
    """A numeric array: shape, NaN count and integer-ness exactly; integers exactly; floats within RTOL of
    themselves plus RTOL of the recorded array's largest magnitude; ±inf and NaN where they were."""
    for k in ("shape", "nan", "int"):
        if new.get(k) != old.get(k):
            return [f"{path}: {k} {new.get(k)!r}, recorded {old.get(k)!r}"]
    scale = _scale(old)  # once per array: per value it made the Sinusoidal page's check quadratic (60 s of 84)
    bad = [i for i, (a, b) in enumerate(zip(new["values"], old["values"])) if not _value_close(a, b, old, scale)]
    if not bad:
        return []
    i = max(bad, key=lambda j: _gap(new["values"][j], old["values"][j]))
    return [f"{path}: {len(bad)} of {len(old['values'])} values differ, the most at [{i}]: "
            f"{new['values'][i]!r}, recorded {old['values'][i]!r}"]


def _scale(old: dict) -> float:
    return max((abs(v) for v in old["values"] if isinstance(v, float | int)), default=0.0)


def _gap(a, b) -> float:
    return abs(a - b) if isinstance(a, float | int) and isinstance(b, float | int) else math.inf


def _value_close(a, b, old: dict, scale: float) -> bool:
    """a against the recorded b, in an array whose recorded largest magnitude is `scale`."""
    if old["int"] or not (isinstance(a, float | int) and isinstance(b, float | int)):
        return a == b  # integers, NaN (None) and ±inf exactly
    return abs(a - b) <= RTOL * (abs(b) + scale)


def _split_numbers(text: str) -> tuple[list[str], list[str]]:
    """'max error 1e-07 (tolerance 1e-05)' -> (['max error ', ' (tolerance ', ')'], ['1e-07', '1e-05'])."""
    parts = NUMBER.split(text)
    return parts[0::2], parts[1::2]


def _as_float(s: str) -> float:
    return float(s.replace("−", "-"))


def _printed_close(new: str, old: str, before: str, text: str, name: str = "") -> bool:
    """Two printed numbers: a residue (by the words `before` it, or the `name` of its table column and row) under its
    tolerance whatever its digits; an integer (a count, a position, an id) exactly; any other within RTOL or one
    unit of its last printed digit (noise can round either way)."""
    if new == old:
        return True
    x, y = _as_float(new), _as_float(old)
    if RESIDUE_WORDS.search(before) or RESIDUE_NAME.search(name):
        limit = max([RESIDUE, *(float(t) for t in STATED_TOLERANCE.findall(text))])
        if abs(x) <= limit and abs(y) <= limit:
            return True
    if not any(c in old + new for c in ".eE"):
        return False
    mantissa = old.lower().split("e")[0]
    exponent = int(old.lower().split("e")[1]) if "e" in old.lower() else 0
    unit = 10.0 ** (exponent - (len(mantissa.split(".")[1]) if "." in mantissa else 0))
    return abs(x - y) <= max(RTOL * abs(y), unit) * (1 + 1e-9)


def _text_differs(new: str, old: str, context: str = "") -> bool:
    """Text exactly, numbers as numbers: 'max error 1e-07' matches a recorded 'max error 2e-07', 'over 8 positions'
    does not match 'over 7 positions', and '✓' never matches '✗'. `context` names a table cell (column and row). A
    line break ("<br>") reads as a space: a chart's long titles are wrapped to fit a phone (#42, fit_texts)."""
    new, old = LINE_BREAK.sub(" ", new), LINE_BREAK.sub(" ", old)
    if new == old:
        return False
    (new_text, new_nums), (old_text, old_nums) = _split_numbers(new), _split_numbers(old)
    if new_text != old_text:
        return True
    return not all(_printed_close(a, b, old_text[i], old, context)
                   for i, (a, b) in enumerate(zip(new_nums, old_nums)))


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


# -- the comparison still fails where the meaning changed (#38) ------------------------------------------------------
@pytest.fixture(scope="module")
def start_now_and_before() -> tuple[dict, dict]:
    return record_page("app_pages/start.py")["page"], _recorded()["pages"]["start"]["page"]


def _attention_values(view: dict) -> list:
    return next(t for t in view["charts"]["start_heatmap"]["traces"] if t["name"] == "attention")["z"]["values"]


def test_the_comparison_passes_float32_noise_on_every_value(start_now_and_before):
    now, before = start_now_and_before
    assert _diff(now, before, "start") == []
    noisy = json.loads(json.dumps(now))
    z = _attention_values(noisy)
    z[:] = [v * (1 + 2e-5 * (-1) ** i) if isinstance(v, float) else v for i, v in enumerate(z)]  # 2e-5: > any seen
    assert _diff(noisy, before, "start") == []


def test_the_comparison_still_catches_an_attention_row_changed_in_its_second_digit(start_now_and_before):
    now, before = start_now_and_before
    changed = json.loads(json.dumps(now))
    z = _attention_values(changed)  # (T*T,) row-major, T = 7: the causal rows of the Start page's heatmap
    row = 5 * 7  # query 5 reads keys 0..5
    top = max(range(row, row + 6), key=lambda j: z[j])
    other = next(j for j in range(row, row + 6) if j != top)
    step = 10.0 ** (math.floor(math.log10(z[top])) - 1)  # one unit of its 2nd significant digit: 0.53 -> 0.54
    z[top], z[other] = z[top] + step, z[other] - step  # the row still sums to 1
    diffs = _diff(changed, before, "start")
    assert len(diffs) == 1 and "start_heatmap/traces[1]/z" in diffs[0], diffs


def test_the_comparison_still_catches_a_verdict_a_count_a_label_and_an_id(start_now_and_before):
    now, before = start_now_and_before
    flipped = json.loads(json.dumps(now))
    flipped["boxes"][0][1] = flipped["boxes"][0][1].replace("✓", "✗")
    assert _diff(flipped, before, "start")
    relabelled = json.loads(json.dumps(now))
    relabelled["charts"]["start_heatmap"]["traces"][1]["x"]["str"][2] = "2 dog"
    assert _diff(relabelled, before, "start")
    assert _text_differs("over 8 positions", "over 7 positions")
    assert _text_differs("(7, 8) tensor", "(7, 7) tensor")
    ids = {"shape": [3], "nan": 0, "int": True, "values": [5, 17, 290]}
    assert _array_diff({**ids, "values": [5, 17, 291]}, ids, "ids")
    assert _array_diff({**ids, "int": False}, ids, "ids")  # integers that turned into floats
    assert _array_diff({**ids, "shape": [1, 3]}, ids, "ids")


def test_a_measured_residue_passes_under_its_tolerance_whatever_its_digits():
    old = "✓ Rows sum to 1, max error 2e-07 (tolerance 1e-05). Grey cells are blocked by the mask."
    assert not _text_differs(old.replace("2e-07", "1e-07"), old)  # the AVX2 machine's digits (#38)
    assert not _text_differs(old.replace("2e-07", "9.6e-06"), old)  # still under the stated tolerance
    assert _text_differs(old.replace("2e-07", "2e-04"), old)  # over it: caught (and the page would say ✗)
    prefix = "✓ Causal: one pass gives the same logits (max |difference| 4.8e-06 over 7 positions)."
    assert not _text_differs(prefix.replace("4.8e-06", "7.2e-06"), prefix)  # no tolerance stated: RESIDUE
    assert _text_differs(prefix.replace("4.8e-06", "3.0e-04"), prefix)
    assert _text_differs(prefix.replace("7 positions", "6 positions"), prefix)
    # a table cell: its column and row name it a residue
    row = "causal: max |full − prefix|"
    assert not _text_differs("7.2e-06", "4.8e-06", f"0 {row}") and _text_differs("7.2e-06", "4.8e-06", "0 token")
    # a large "difference" is a value, not a residue: compared as a number
    big = "✗ Without the mask, one pass no longer equals the prefix runs: max |difference| 11.84."
    assert not _text_differs(big.replace("11.84", "11.85"), big) and _text_differs(big.replace("11.84", "11.90"), big)


def test_a_printed_number_passes_float32_noise_and_not_a_change():
    assert not _text_differs("cosine similarity 0.9731", "cosine similarity 0.9730")  # rounded the other way
    assert _text_differs("cosine similarity 0.9745", "cosine similarity 0.9730")
    assert not _text_differs("angle −146.0975°", "angle −146.0973°")  # within RTOL
    assert _text_differs("angle 146.0973°", "angle −146.0973°")  # the sign is meaning
    assert _text_differs("perplexity 56.5", "perplexity 55.5")
    assert _text_differs("64 steps", "63 steps") and _text_differs("100.0%", "99.0%")


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
    before = json.loads(DATA.read_text()) if DATA.exists() else {}
    pages = {**before.get("pages", {}), **pages}  # pages not named keep their record
    out = {"commit": commit.strip(), "excluded": EXCLUDED, "pages": pages, "rerecorded": before.get("rerecorded", {})}
    args.out.parent.mkdir(exist_ok=True)
    args.out.write_text(json.dumps(out, separators=(",", ":"), ensure_ascii=False) + "\n")
    print(f"wrote {args.out} ({args.out.stat().st_size:,} bytes) in {time.perf_counter() - t0:.0f} s")
