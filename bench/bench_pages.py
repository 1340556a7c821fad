"""Server-side cost of an Explorer rerun after a widget change, side by side with a bare page of the same charts.

For T = 16 and 64 tokens: AppTest of the real app on the Explorer page, then the time of `at.run()` after a widget
change, against bench/bare_page.py drawing the same number and size of Plotly charts with random data: switching
the head (to one already drawn, or a first view: trace cached, its figures built) and the knobs that re-run the model
(temperature, 1/sqrt(d_k) scaling, mask; a value not seen before, so nothing comes from a cache).

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


def open_explorer(T: int) -> tuple[AppTest, tuple[int, int]]:
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    at.run()
    at.switch_page("app_pages/explorer.py").run()
    at.text_input(key="explorer_text").set_value(sentence(T)).run()
    n_heads = len(at.selectbox(key="explorer_head").options)
    n_layers = len(at.selectbox(key="explorer_layer").options)
    assert json.loads(at.get_by_key("explorer_step_mat").proto.spec)["data"]  # the Pipeline tab is the open one
    return at, (n_layers, n_heads)


def open_bare(T: int, shape: tuple[int, int]) -> AppTest:
    at = AppTest.from_file(str(ROOT / "bench" / "bare_page.py"), default_timeout=60)
    for k, v in zip(("bare_T", "bare_L", "bare_H"), (T, *shape)):
        at.session_state[k] = v
    at.run()
    return at


def measure(T: int, repeats: int) -> dict[str, tuple[float, float]]:
    """{what: (median ms, median ratio)}, "bare": (median ms, 1). Each Explorer run is followed by a bare run and its
    ratio is taken against that run: a burst of load from another process then spoils one pair, not a whole column
    (on a quiet machine this equals median / median). Each round sets a temperature not seen before, so each knob
    change below re-runs the model and rebuilds every figure, and a first view of a head builds its figures (the
    trace is cached): nothing comes from a cache by accident."""
    ex, shape = open_explorer(T)
    bare = open_bare(T, shape)
    H = shape[1]
    runs: dict[str, list[tuple[float, float]]] = {k: [] for k in ("warm", "cold", "knob", "scale", "mask")}

    def pair(what: str, change, n: int) -> None:
        ms = timed(ex, change)
        runs[what].append((ms, timed(bare, lambda a: a.selectbox(key="bare_head").set_value(n % H))))

    head = lambda h: lambda a: a.selectbox(key="explorer_head").set_value(h % H)  # noqa: E731
    for i in range(1, repeats + 1):
        temp = round(1.0 + 0.1 * i, 1)  # 1.1, 1.2, ...: a new trace every round
        pair("knob", lambda a, v=temp: a.slider(key="explorer_temp").set_value(v), i)
        pair("cold", head(i + 1), i + 1)  # first view of this head at this temperature
        pair("warm", head(i), i)          # back to the head drawn by the knob change: all cached
        pair("scale", lambda a: a.toggle(key="explorer_scale").set_value(False), i + 1)
        timed(ex, lambda a: a.toggle(key="explorer_scale").set_value(True))
        pair("mask", lambda a: a.radio(key="explorer_mask").set_value("bidirectional"), i)
        timed(ex, lambda a: a.radio(key="explorer_mask").set_value("causal"))
    med = statistics.median
    out = {k: (med(e for e, _ in v), med(e / b for e, b in v)) for k, v in runs.items()}
    out["bare"] = (med(b for v in runs.values() for _, b in v), 1.0)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=9)
    parser.add_argument("--recompile", action="store_true",
                        help="AppTest's default: every run recompiles app.py and the page (a server compiles once)")
    args = parser.parse_args()
    if not args.recompile:
        share_script_cache()
    rows = [(T, measure(T, args.repeats)) for T in (16, 64)]
    print("\nExplorer rerun after a widget change: median ms, server side (AppTest); ratio: median of (this run / the")
    print("bare-page run right after it)")
    print("  head (warm): switch to a head already drawn, trace and figures cached")
    print("  head (first view): its figures are built (trace cached)")
    print("  temperature / scale / mask: a knob value not seen before: model re-run + every figure rebuilt")
    print("  scripts compiled " + ("on every run (AppTest default)" if args.recompile else "once, as on a server"))
    cols = [("head (warm)", "warm"), ("head (first view)", "cold"), ("temperature", "knob"), ("scale off", "scale"),
            ("mask", "mask")]
    print(f"{'T':>4} | {'bare page':>9} | " + " | ".join(f"{name:>{len(name)}} | {'ratio':>6}" for name, _ in cols))
    for T, r in rows:
        print(f"{T:>4} | {r['bare'][0]:>9.1f} | "
              + " | ".join(f"{r[k][0]:>{len(name)}.1f} | {r[k][1]:>5.2f}x" for name, k in cols))

if __name__ == "__main__":
    main()
