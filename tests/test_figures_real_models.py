"""#42 (item 6): a page of a large model's grid is one tiled heatmap (Chromium drew 48 subplots in 214 ms, one tiled
heatmap in 18 ms). Every tile holds its head's weights, masked cells are holes over grey, the gaps between tiles
are holes with nothing under them, the hover names layer, head, query and key, and each tile keeps its title."""

from __future__ import annotations

import base64
import json

import numpy as np

from viz_model.figures.real_models import attention_grid_page

TOKENS = ["the", "cat", "<b>sat</b>", "the", "mat"]
CAUSAL = np.tril(np.ones((5, 5), dtype=bool))


def _probs(seed: int = 0) -> np.ndarray:
    p = np.random.default_rng(seed).random((6, 4, 5, 5))      # (L, H, T, T)
    p = np.where(CAUSAL, p, 0.0)
    return p / p.sum(-1, keepdims=True)


def _array(v):
    """A typed array as plotly.js reads it ({dtype, bdata, shape}), or a plain list, as numpy."""
    if isinstance(v, dict):
        return np.frombuffer(base64.b64decode(v["bdata"]), dtype=v["dtype"]).reshape(
            [int(n) for n in str(v.get("shape", "-1")).split(",")])
    return np.asarray(v)


def _decoded(fig) -> dict:
    """The figure as the browser gets it (its JSON), the typed arrays read back."""
    out = json.loads(fig.to_json())
    for t in out["data"]:
        if "z" in t:
            t["z"] = _array(t["z"])
    return out


def _trace(fig_json: dict, name: str) -> dict:
    return next(t for t in fig_json["data"] if t["name"] == name)


def _tile(z: np.ndarray, fig_json: dict, i: int, j: int, t: int = 5) -> np.ndarray:
    """Tile (i, j)'s cells, found from the category labels (a tile's own labels start 'H{h} · 0 ')."""
    x, y = _trace(fig_json, "attention")["x"], _trace(fig_json, "attention")["y"]
    layer, head = fig_json["layout"]["meta"]["tiles"][i * 4 + j][1:].split("H")
    c0, r0 = x.index(f"H{head} · 0 the"), y.index(f"L{layer} · 0 the")
    return z[r0:r0 + t, c0:c0 + t]


def test_every_tile_holds_its_heads_weights_and_masked_cells_are_holes_over_grey():
    p = _probs()
    fig = _decoded(attention_grid_page(p, TOKENS, [4, 5], [0, 1, 2, 3], allowed=CAUSAL, title="Layers 4–5"))
    masked, heat, titles = fig["data"]
    assert (masked["name"], heat["name"], titles["name"]) == ("masked", "attention", "titles")
    z, grey = np.array(heat["z"], dtype=float), np.array(masked["z"], dtype=float)
    assert fig["layout"]["meta"]["tiles"] == [f"L{lyr}H{h}" for lyr in (4, 5) for h in range(4)]
    for i, lyr in enumerate((4, 5)):
        for j in range(4):
            tile = _tile(z, fig, i, j)
            np.testing.assert_allclose(np.where(CAUSAL, tile, 0.0), p[lyr, j], rtol=1e-5, atol=1e-6)
            assert np.isnan(tile[~CAUSAL]).all()                                 # masked: a hole...
            assert (_tile(grey, fig, i, j)[~CAUSAL] == 1).all()                 # ... over grey
    gaps = np.isnan(z) & np.isnan(grey)
    assert gaps.sum() == z.size - 8 * 25  # every cell outside the 8 tiles is a hole in both layers: no grey gaps
    assert len(set(heat["x"])) == len(heat["x"]) and len(set(heat["y"])) == len(heat["y"])  # categories distinct


def test_the_hover_names_the_layer_head_query_and_key_and_each_tile_keeps_its_title():
    fig = _decoded(attention_grid_page(_probs(1), TOKENS, [4, 5], [0, 1, 2, 3], roles=[["prev 0.91"] * 4] * 6,
                                       kv_group=2))
    heat = _trace(fig, "attention")
    assert [t["name"] for t in fig["data"]] == ["attention", "titles"]  # nothing masked: no grey layer
    assert heat["hovertemplate"] == "query '%{y}' → key '%{x}': %{z:.3f}<extra></extra>"
    assert "L5 · 2 &lt;b&gt;sat&lt;/b&gt;" in heat["y"] and "H3 · 4 mat" in heat["x"]  # escaped, never markup
    titles = _trace(fig, "titles")
    notes = list(titles["text"])
    assert notes[2] == "L4·H2<br><sub>prev</sub><br><sub>0.91 · K/V 1</sub>" and len(notes) == 8
    assert not fig["layout"].get("annotations")  # one text trace, not 8 annotations (Chromium lays those out slowly)
    # each title stands in the gap just above its tile, over the tile's middle column
    assert titles["x"][2] == "H2 · 2 &lt;b&gt;sat&lt;/b&gt;"
    assert titles["y"][5] == heat["y"][heat["y"].index("L5 · 0 the") - 1]
