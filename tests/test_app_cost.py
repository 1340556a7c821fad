"""AppTest of the Cost page: nothing is measured on open; a click measures a tiny range and the charts hold the
measured series with their fitted slopes; the result is kept for the setting; the KV cache follows its widgets."""

import math
import re

import numpy as np
import pytest
import torch
from conftest import spec, texts

from viz_model.lessons import cost

TINY = (16, 64)  # T = 16, 32, 64: a sweep of a few seconds on a busy 2-core machine


def has_chart(at, key: str) -> bool:
    try:
        at.get_by_key(key)
    except KeyError:
        return False
    return True


def shown_slope(name: str) -> float | None:
    value = re.search(r"slope (\S+)$", name).group(1)
    return None if value == "n/a" else float(value)


def refit(Ts: list[int], ys: list[float]) -> float:
    """The page's rule, recomputed from the chart's own points: least squares of log y on log T over the upper
    half of the measured lengths."""
    lo = Ts[(len(Ts) - 1) // 2]
    pts = np.log([(t, y) for t, y in zip(Ts, ys) if t >= lo])  # (n, 2)
    return float(np.polyfit(pts[:, 0], pts[:, 1], 1)[0])


@pytest.fixture(scope="module")
def opened():
    from conftest import ROOT
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    at.run()
    return at.switch_page("app_pages/cost.py").run()


def test_page_opens_without_measuring(opened):
    at = opened
    assert not at.exception, texts(at.exception)
    assert not at.error, texts(at.error)
    assert at.button(key="cost_cpu_go").label == "Measure on this server's CPU"
    assert "Nothing is measured until you click" in " ".join(texts(at.caption))
    assert not has_chart(at, "cost_cpu_memory") and not has_chart(at, "cost_cpu_time")  # nothing before the click
    assert at.select_slider(key="cost_cpu_T").value == (64, 2048)  # the default range, up to 2,048 on a CPU
    gpu_text = " ".join(texts(at.info) + texts(at.markdown))
    if torch.cuda.is_available():
        assert torch.cuda.get_device_name(0) in gpu_text and at.button(key="cost_gpu_go")
    else:
        assert "No GPU on this server" in gpu_text


def test_kv_cache_is_linear_in_layers_and_T(opened):
    at = opened
    lines = {t["name"]: t for t in spec(at, "cost_kv_chart")["data"]}
    lecture = next(t for n, t in lines.items() if n.startswith("lecture-sized: 32 heads of d_k 128, 16-bit"))
    assert lecture["name"].endswith("· 32 layers")
    # 2 (K and V) x 32 layers x 32 heads x d_k 128 x 2 bytes = 512 KiB per token (the Llama-2-7B shape)
    assert lecture["y"][lecture["x"].index(32768)] == pytest.approx(2 * 32 * 32 * 128 * 32768 * 2 / 2**20)
    assert any("(sidebar)" in n for n in lines)  # the sidebar's model is there, merged with its shipped twin
    shipped = cost.shipped_kv_models()
    shapes = {(m.n_layers, m.n_heads, m.n_kv_heads, m.d_k, m.dtype_bytes) for m in shipped}
    table = at.table[0].value
    assert len(lines) == len(table) == len(shapes) + 2  # one row per distinct shape, plus the two lecture models
    names = [n for row in table.index for n in row.split("; ")]
    assert sorted(names) == sorted([m.name + (" (sidebar)" if m.name == "classroom" else "") for m in shipped]
                                   + [n for n in names if n.startswith("lecture-sized")])
    at.slider(key="cost_kv_layers").set_value(8).run()
    lines8 = {t["name"]: t for t in spec(at, "cost_kv_chart")["data"]}
    lecture8 = next(t for n, t in lines8.items() if n.startswith("lecture-sized: 32 heads of d_k 128, 16-bit"))
    assert lecture8["name"].endswith("· 8 layers")
    assert np.allclose(np.array(lecture8["y"]) * 4, lecture["y"])  # a quarter of the layers, a quarter the cache
    table = at.table[0].value
    assert (table["layers"] == 8).sum() == 2 and "T = 32,768" in table.columns


def test_a_click_measures_the_chosen_range_and_shows_each_slope(opened):
    at = opened
    at.select_slider(key="cost_cpu_T").set_range(*TINY).run()
    at.button(key="cost_cpu_go").click().run()
    assert not at.exception, texts(at.exception)
    memory = spec(at, "cost_cpu_memory")["data"]
    time_ = spec(at, "cost_cpu_time")["data"]
    measured = [t for t in memory if "computed" not in t["name"]]
    assert len(measured) == len(time_) == 4  # 2 paths x (forward, forward+backward)
    for t in measured + time_:
        assert t["x"] == [16, 32, 64] and all(y > 0 for y in t["y"]), t
        assert shown_slope(t["name"]) == pytest.approx(refit(t["x"], t["y"]), abs=0.006), t["name"]
        assert t["meta"]["slope"] == pytest.approx(refit(t["x"], t["y"]))
    computed = next(t for t in memory if "computed" in t["name"])
    assert computed["y"] == pytest.approx([4 * T * T * 4 / 2**20 for T in (16, 32, 64)])  # B·H·T²·4 bytes, H = 4
    assert shown_slope(computed["name"]) == pytest.approx(2.0)
    traced = next(t for t in measured if t["name"].startswith("T×T (traced), forward ·"))
    sdpa = next(t for t in measured if t["name"].startswith("SDPA, forward ·"))
    assert traced["y"][-1] > sdpa["y"][-1]  # the traced path keeps T×T matrices that SDPA never builds
    table = at.table[0].value
    assert list(table.index) == ["16", "32", "64"] and "T×T MB (computed)" in table.columns
    notes = " ".join(texts(at.caption))
    assert "Memory limit:" in notes and "Memory measured as:" in notes
    assert "the lecture" in " ".join(texts(at.markdown))
    assert at.button(key="cost_cpu_go").label == "Measure again"


def test_the_measured_result_is_kept_for_its_setting(opened):
    at = opened
    before = spec(at, "cost_cpu_time")["data"]
    at.run()  # a rerun without a click: the stored sweep, not a new one (timings would differ)
    assert spec(at, "cost_cpu_time")["data"] == before
    at.select_slider(key="cost_cpu_T").set_range(16, 32).run()  # another setting: not measured yet
    assert not has_chart(at, "cost_cpu_time") and at.button(key="cost_cpu_go").label.startswith("Measure on")
    at.select_slider(key="cost_cpu_T").set_range(*TINY).run()
    assert spec(at, "cost_cpu_time")["data"] == before


def test_points_past_the_time_budget_are_listed_with_their_reason(opened):
    at = opened
    at.select_slider(key="cost_cpu_T").set_range(16, 2048).run()
    at.checkbox(key="cost_cpu_backward").uncheck().run()
    at.number_input(key="cost_cpu_budget").set_value(1).run()
    at.button(key="cost_cpu_go").click().run()
    assert not at.exception, texts(at.exception)
    table = at.table[0].value
    skipped_cells = int((table == "skipped").to_numpy().sum()) // 2  # ms and MB of each skipped point
    listed = [line for m in texts(at.markdown) if m.startswith("**Skipped points**")
              for line in m.splitlines()[1:]]
    assert skipped_cells >= 1 and len(listed) == skipped_cells
    assert all(line.endswith("past the time budget") for line in listed)
    measured = [t for t in spec(at, "cost_cpu_time")["data"]]
    assert len(measured) == 2 and all(math.isfinite(y) for t in measured for y in t["y"])  # forward only
