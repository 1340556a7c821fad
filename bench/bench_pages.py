"""Server-side cost of an Explorer rerun after a widget change, side by side with a bare page of the same charts.

For T = 16 and 64 tokens: AppTest of the real app on the Explorer page, warmed up (first run fills the trace cache),
then the time of `at.run()` after switching the head selector (the trace comes from st.cache_data, the figures are
rebuilt), against bench/bare_page.py drawing the same number and size of Plotly charts with random data.
Also shown: a knob change that re-runs the model (new temperature, trace not cached yet).

Compiled scripts: a Streamlit server compiles app.py and each page once (one ScriptCache per Runtime), but AppTest
makes a fresh ScriptCache on every run, so each measured rerun would also re-read, magic-transform and compile the
scripts (~5 ms for app.py + the Explorer page, ~1 ms for the bare page) — a cost no real rerun pays. By default both
pages here share one ScriptCache, as on a server; --recompile measures AppTest's per-run compile instead.
Run: .venv/bin/python bench/bench_pages.py [--repeats 7] [--recompile]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

from streamlit.testing.v1 import AppTest

ROOT = Path(__file__).resolve().parent.parent
WORDS = "the cat sat on the mat and she gave him the book because he asked for it".split()


def share_script_cache() -> None:
    """Compile each script once for the whole process, like a server (see the module docstring)."""
    from streamlit.runtime.scriptrunner.script_cache import ScriptCache
    from streamlit.testing.v1 import app_test, local_script_runner

    shared = ScriptCache()
    app_test.ScriptCache = local_script_runner.ScriptCache = lambda: shared


def sentence(T: int) -> str:
    return " ".join(WORDS[i % len(WORDS)] for i in range(T))


def timed(at: AppTest, change) -> float:
    change(at)
    t0 = time.perf_counter()
    at.run()
    ms = (time.perf_counter() - t0) * 1000
    if at.exception:
        raise RuntimeError(at.exception[0].value)
    return ms


def open_explorer(T: int) -> tuple[AppTest, tuple[int, int, int]]:
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    at.run()
    at.switch_page("app_pages/explorer.py").run()
    at.text_input(key="explorer_text").set_value(sentence(T)).run()
    n_heads = len(at.selectbox(key="explorer_head").options)
    n_layers = len(at.selectbox(key="explorer_layer").options)
    z = json.loads(at.get_by_key("explorer_mix").proto.spec)["data"][0]["z"]  # (T + 1, d_k) value mix
    d_k = int(str(z["shape"]).split(",")[1]) if isinstance(z, dict) else len(z[0])
    return at, (n_layers, n_heads, d_k)


def open_bare(T: int, shape: tuple[int, int, int]) -> AppTest:
    at = AppTest.from_file(str(ROOT / "bench" / "bare_page.py"), default_timeout=60)
    for k, v in zip(("bare_T", "bare_L", "bare_H", "bare_dk"), (T, *shape)):
        at.session_state[k] = v
    at.run()
    return at


def measure(T: int, repeats: int) -> dict[str, float]:
    """Interleaved, so load from other processes hits both pages alike."""
    ex, shape = open_explorer(T)
    bare = open_bare(T, shape)
    H = shape[1]
    cold = []
    for h in range(H):  # first view of each head: figures built (trace cached)
        cold.append(timed(ex, lambda a, h=h: a.selectbox(key="explorer_head").set_value((h + 1) % H)))
        timed(bare, lambda a, h=h: a.selectbox(key="bare_head").set_value((h + 1) % H))
    warm, floor, knob = [], [], []
    for i in range(1, repeats + 1):
        warm.append(timed(ex, lambda a, i=i: a.selectbox(key="explorer_head").set_value(i % H)))
        floor.append(timed(bare, lambda a, i=i: a.selectbox(key="bare_head").set_value(i % H)))
        knob.append(timed(ex, lambda a, i=i: a.slider(key="explorer_temp").set_value(round(1.0 + 0.1 * i, 1))))
        timed(ex, lambda a: a.slider(key="explorer_temp").set_value(1.0))
    med = statistics.median
    return {"warm": med(warm), "cold": med(cold), "knob": med(knob), "bare": med(floor)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=9)
    parser.add_argument("--recompile", action="store_true",
                        help="AppTest's default: every run recompiles app.py and the page (a server compiles once)")
    args = parser.parse_args()
    if not args.recompile:
        share_script_cache()
    rows = [(T, measure(T, args.repeats)) for T in (16, 64)]
    print("\nExplorer rerun after a widget change: median ms, server side (AppTest), interleaved with the bare page")
    print("  head (warm): switch head, trace and figures cached | head (first view): figures built once per input")
    print("  temperature: new knob value, model re-run + every figure rebuilt")
    print("  scripts compiled " + ("on every run (AppTest default)" if args.recompile else "once, as on a server"))
    print(f"{'T':>4} | {'bare page':>9} | {'head (warm)':>11} | {'ratio':>6} | {'head (first view)':>17} | "
          f"{'ratio':>6} | {'temperature':>11} | {'ratio':>6}")
    for T, r in rows:
        b = r["bare"]
        print(f"{T:>4} | {b:>9.1f} | {r['warm']:>11.1f} | {r['warm'] / b:>5.2f}x | {r['cold']:>17.1f} | "
              f"{r['cold'] / b:>5.2f}x | {r['knob']:>11.1f} | {r['knob'] / b:>5.2f}x")


if __name__ == "__main__":
    main()
