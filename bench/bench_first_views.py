"""The slow first views of #43 (item 8), measured: server time of the first view in a fresh server process and of a
second student's, then (--browser) the same views as a student waits for them in headless Chromium.

Server (AppTest of the real app, one new session per view, in this fresh process):
  Encoder–decoder   opening the page: its first open replays the translator's training batches (once per process)
  RoPE              opening the page on Pair rotation
  Presenter mode    switching it on on the Explorer (3 charts), then a rerun in presenter mode
Browser (one real server, one Chromium; each round in new tabs; time from the click to the chart drawn):
  RoPE: opening /rope (the Worked example), then, once the page has stopped changing, Pair rotation clicked: a tab's
  first Plotly chart loads Plotly's bundle unless the page drew a chart before; beside it the Angles tab, then Pair
  rotation again (bundle loaded)
  Presenter mode on and off on the Explorer: the script's run, then every chart redrawn at the new size; beside it a
  rerun that redraws every chart (a new sentence)
Run: .venv/bin/python bench/bench_first_views.py [--browser] [--rounds 3]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def server_views() -> list[tuple[str, float, float]]:
    """(view, first student ms, second student ms), AppTest, in this process (its caches empty at the start)."""
    from streamlit.testing.v1 import AppTest

    on = lambda at: at.toggle(key="presenter_mode").set_value(True)  # noqa: E731
    views = [("Encoder–decoder: open", "encoder_decoder", None, None),
             ("RoPE: open on Pair rotation", "rope", None, lambda at: at.session_state.__setitem__("rope_tab",
                                                                                              "Pair rotation")),
             ("Explorer: Presenter mode on", "explorer", None, on),
             ("Explorer in presenter mode: a rerun", "explorer", lambda at: on(at).run(), lambda at: None)]

    def session(page: str, setup, change) -> float:
        """A new student: the app opened, `page` opened (setup: then this), and the run after `change` timed (None:
        the page's opening run)."""
        at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=300)
        at.run()
        at.switch_page(f"app_pages/{page}.py")
        if change is not None:
            at.run()
            if setup is not None:
                setup(at)
            change(at)
        t0 = time.perf_counter()
        at.run()
        if at.exception:
            raise RuntimeError(at.exception[0].value)
        return (time.perf_counter() - t0) * 1000

    return [(name, session(page, setup, change), session(page, setup, change)) for name, page, setup, change in views]


def browser_views(rounds: int) -> dict[str, list[float]]:
    sys.path.insert(0, str(ROOT / "tests"))
    import conftest as C
    from playwright.sync_api import sync_playwright

    chart = '[data-testid="stPlotlyChart"] .js-plotly-plot'
    res: dict[str, list[float]] = {}

    def until(pg, what: str, act, done: str) -> None:
        t0 = time.perf_counter()
        act()
        pg.wait_for_function(done, timeout=120_000)
        C.wait_idle(pg)  # ends with a 300 ms pause, taken off
        t1 = time.perf_counter()
        pg.wait_for_function(done, timeout=120_000)  # still drawn, or drawn now (a chart sent at the end of the run)
        t2 = time.perf_counter()
        res.setdefault(what, []).append((t1 - 0.3 if t2 - t1 < 0.05 else t2) - t0)

    def drawn(key: str) -> str:
        return (f"() => {{ const p = document.querySelector('.st-key-{key} .js-plotly-plot'); "
                "return !!(p && p._fullLayout); }")

    def sized(test: str) -> str:  # every chart laid out with its font size passing `test` (18: presenter mode)
        return (f"() => [...document.querySelectorAll('{chart}')]"
                f".every(p => p._fullLayout && p._fullLayout.font.size {test})")

    toggle = lambda pg: pg.locator('[data-testid="stSidebar"] label').filter(has_text="Presenter").click()  # noqa: E731
    with C.streamlit_server("bench_first_views.log") as url, sync_playwright() as p:
        b = p.chromium.launch(executable_path=C.chromium_path(), headless=True, args=C.CHROMIUM_FLAGS)
        for path in ("rope", "explorer"):  # the server's caches filled (the server side is measured above)
            with C.browser_page(b, url) as pg:
                C.open_page(pg, path, wait_chart=path == "explorer")
        for _ in range(rounds):
            with C.browser_page(b, url) as pg:
                until(pg, "RoPE: open (the Worked example and any chart of it drawn)",
                      lambda: pg.goto(f"{url}/rope"), """() => !!document.querySelector('[data-testid="stApp"]') &&
                          [...document.querySelectorAll('[data-testid="stPlotlyChart"]')]
                          .every(e => { const p = e.querySelector('.js-plotly-plot'); return p && p._fullLayout; })""")
                C.settled(pg)  # the student reads the worked example: the page has stopped changing
                tab = lambda n: lambda: pg.get_by_role("tab", name=n).click()  # noqa: E731
                until(pg, "RoPE: open, click Pair rotation", tab("Pair rotation"), drawn("rope_pair_fig"))
                until(pg, "RoPE: then Angles", tab("Angles"), drawn("rope_angle_table"))
                until(pg, "RoPE: then Pair rotation again", tab("Pair rotation"), drawn("rope_pair_fig"))
            with C.browser_page(b, url) as pg:
                C.open_page(pg, "explorer")
                C.settled(pg)
                until(pg, "Explorer: Presenter mode on", lambda: toggle(pg), sized("=== 18"))
                C.settled(pg)
                until(pg, "Explorer: Presenter mode off", lambda: toggle(pg), sized("!== 18"))
                C.settled(pg)
                box = pg.locator(".st-key-explorer_text").locator("textarea, input").first
                box.fill(f"the cat sat on the mat at {time.time():.3f}")  # a new sentence: every chart is new
                pg.evaluate(f"() => document.querySelectorAll('{chart}').forEach(p => p._fullData.old = true)")
                until(pg, "Explorer: a new sentence (every chart redrawn)", lambda b=box: b.press("Enter"),
                      f"() => [...document.querySelectorAll('{chart}')].every(p => p._fullData && !p._fullData.old)")
        b.close()
    return res


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--browser", action="store_true")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    import torch

    torch.set_num_threads(int(os.environ.get("ATTENTION_LAB_TORCH_THREADS", "1")))  # app.py's default
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs (the machine is shared)\n")
    print("| server: view (AppTest) | first student ms | second student ms |\n|---|---|---|")
    for name, first, second in server_views():
        print(f"| {name} | {first:.0f} | {second:.0f} |")
    if args.browser:
        print(f"\n| browser: view (median of {args.rounds} rounds) | s | each round |\n|---|---|---|")
        for name, v in browser_views(args.rounds).items():
            print(f"| {name} | {statistics.median(v):.2f} | {', '.join(f'{x:.2f}' for x in v)} |")
    print(f"\nload average {os.getloadavg()[0]:.1f} at the end")


if __name__ == "__main__":
    main()
