"""Chromium's drawing time for GPT-2 small's Explorer grid page (4 layers x 12 heads, T = 32), plotly.js alone.

The same cells in four forms, each drawn 7 times with Plotly.newPlot in headless Chromium (/usr/bin/chromium, the
plotly.js that ships with the plotly package, no server): the grid page as the app sends it (one heatmap per head
plus its masked underlay, 48 subplots), without the underlays, as one tiled heatmap (one trace, one axis), and one
T x T head map for scale. Prints a table: median ms per form.
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
import plotly.graph_objects as go
import plotly.io as pio

from viz_model.figures.attention import attention_heatmap
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
    bare = dict(grid, data=[t for t in grid["data"] if not t.get("name", "").endswith("masked")])
    gap = T + 2
    z = np.full((LAYERS * gap, HEADS * gap), np.nan, dtype=np.float32)
    for i in range(LAYERS):
        for h in range(HEADS):
            z[i * gap:i * gap + T, h * gap:h * gap + T] = np.where(allowed, p[i, h], np.nan)
    tiled = go.Figure(go.Heatmap(z=z[::-1], colorscale="Viridis", zmin=0, zmax=1, hoverongaps=False),
                      layout=dict(height=grid["layout"].get("height"), xaxis=dict(showticklabels=False),
                                  yaxis=dict(showticklabels=False)))
    head = sent(attention_heatmap(p[0, 0], toks, allowed=allowed, title="head"))
    return {f"grid page as sent ({len(grid['data'])} traces, {LAYERS * HEADS} subplots)": grid,
            f"without the masked underlays ({len(bare['data'])} traces)": bare,
            "one tiled heatmap (1 trace, 1 axis)": json.loads(pio.to_json(tiled)),
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
