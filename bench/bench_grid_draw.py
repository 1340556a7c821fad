"""Chromium's drawing time for GPT-2 small's Explorer grid page (4 layers x 12 heads, T = 32), plotly.js alone.

The same cells in four forms, each drawn 7 times with Plotly.newPlot in headless Chromium (/usr/bin/chromium, the
plotly.js that ships with the plotly package, no server): the grid page as the app sends it (since #42 item 6 one
tiled heatmap over its masked grey, a title per tile), the same heads as 48 subplots (the grid page before: one
heatmap per head plus its masked underlay), those without the underlays, and one T x T head map for scale. Prints a
table: median ms per form.
Run: .venv/bin/python bench/bench_grid_draw.py
"""

from __future__ import annotations

import asyncio
import json
import statistics
import tempfile
from pathlib import Path

import numpy as np
import plotly
import plotly.io as pio

from viz_model.figures.attention import attention_grid_dicts, attention_heatmap
from viz_model.figures.common import fast_figure
from viz_model.figures.real_models import attention_grid_page
from viz_model.ui.chart import _Serialized

T, LAYERS, HEADS = 32, 4, 12
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu"]


def forms() -> dict[str, dict]:
    rng = np.random.default_rng(0)
    allowed = np.tri(T, dtype=bool)
    p = rng.random((LAYERS, HEADS, T, T)).astype(np.float32) * allowed
    p /= p.sum(-1, keepdims=True)
    toks = [f"tok{i}" for i in range(T)]
    sent = lambda fig: json.loads(pio.to_json(_Serialized(fig).to_dict()))  # noqa: E731  what the page sends
    grid = sent(attention_grid_page(p, toks, list(range(LAYERS)), list(range(HEADS)), title="grid", allowed=allowed))
    subplots = sent(fast_figure(*attention_grid_dicts(p, toks, title="grid", allowed=allowed)))
    bare = dict(subplots, data=[t for t in subplots["data"] if not t.get("name", "").endswith("masked")])
    head = sent(attention_heatmap(p[0, 0], toks, allowed=allowed, title="head"))
    return {f"grid page as sent: one tiled heatmap ({len(grid['data'])} traces, 1 axis)": grid,
            f"the same heads as {LAYERS * HEADS} subplots ({len(subplots['data'])} traces: the page before)": subplots,
            f"{LAYERS * HEADS} subplots without the masked underlays ({len(bare['data'])} traces)": bare,
            "one T x T head map (for scale)": head}


async def main() -> None:
    from playwright.async_api import async_playwright

    js = Path(plotly.__file__).parent / "package_data" / "plotly.min.js"
    with tempfile.TemporaryDirectory() as tmp:
        page_file = Path(tmp) / "draw.html"
        page_file.write_text(f"<html><body><div id=g style='width:1300px'></div><script src='{js.as_uri()}'>"
                             "</script></body></html>")
        async with async_playwright() as pw:
            browser = await pw.chromium.launch(executable_path="/usr/bin/chromium", headless=True, args=FLAGS)
            page = await browser.new_page(viewport={"width": 1400, "height": 1000})
            await page.goto(page_file.as_uri())
            print("| form | JSON | draw ms (median of 7) |\n|---|---|---|")
            for name, fig in forms().items():
                times = [await page.evaluate("""async (f) => { const g = document.getElementById('g');
                    Plotly.purge(g); const t = performance.now(); await Plotly.newPlot(g, f.data, f.layout);
                    await new Promise(r => requestAnimationFrame(() => setTimeout(r, 0)));
                    return performance.now() - t; }""", fig) for _ in range(7)]
                print(f"| {name} | {len(json.dumps(fig)) // 1024} KB | {statistics.median(times):.0f} |")
            await browser.close()


if __name__ == "__main__":
    asyncio.run(main())
